package kube

import (
	"reflect"
	"testing"
)

func TestStagesFollowTheLevels(t *testing.T) {
	spec := func(pairs int, levels ...int) FixtureSpec {
		return FixtureSpec{Servers: make([][]Server, pairs), Levels: levels}
	}
	up := func(s FixtureSpec, n int) FixtureSpec { s.Up = n; return s }
	for _, c := range []struct {
		spec FixtureSpec
		want []int
	}{
		{spec(1), []int{1}},
		{spec(99, 1, 10, 20, 40, 99), []int{1, 10, 20, 40, 99}},
		{spec(40, 40, 10, 1), []int{1, 10, 40}},
		{spec(10, 10), []int{10}},
		{spec(10, 5, 5, 10), []int{5, 10}},
		{up(spec(40, 1, 10, 20, 40), 1), []int{1}},
		{up(spec(40, 1, 10, 20, 40), 20), []int{1, 10, 20}},
		{up(spec(10, 1), 99), []int{1, 10}},
	} {
		if got := c.spec.stages(); !reflect.DeepEqual(got, c.want) {
			t.Errorf("levels %v of %d pairs: stages %v, want %v", c.spec.Levels, c.spec.Pairs(), got, c.want)
		}
	}
}

func TestPairsSpreadOverNodes(t *testing.T) {
	two := FixtureSpec{Placement: Placement{NodeA: "a", NodeB: "b"}}
	three := FixtureSpec{Placement: Placement{NodeA: "a", NodeB: "b", Nodes: []string{"a", "b", "c"}}}
	for pair := range 4 {
		if two.node(RoleClient, pair) != "a" || two.node(RoleServerB, pair) != "b" || two.node(RoleServerA, pair) != "a" {
			t.Errorf("two nodes, pair %d: clients and same-node servers on a, remote servers on b", pair)
		}
	}
	for pair, want := range [][2]string{{"a", "b"}, {"b", "c"}, {"c", "a"}, {"a", "b"}} {
		if c, s := three.node(RoleClient, pair), three.node(RoleServerB, pair); c != want[0] || s != want[1] || three.node(RoleServerA, pair) != c {
			t.Errorf("three nodes, pair %d: client %s server %s, want %v", pair, c, s, want)
		}
	}
}
