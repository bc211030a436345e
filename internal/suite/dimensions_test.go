package suite

import (
	"encoding/json"
	"strings"
	"testing"
)

// Each dimension's entry reaches the fields of its name: the suite's and a target's list (by
// their YAML name), the command line's, and the expanded target's value.
func TestDimensionsReachTheirFields(t *testing.T) {
	for _, d := range dimensions() {
		var s Suite
		*d.suite(&s) = []string{"a"}
		var tg Target
		*d.target(&tg) = []string{"b"}
		sj, _ := json.Marshal(s)
		tj, _ := json.Marshal(tg)
		if !strings.Contains(string(sj), `"`+d.name+`":["a"]`) || !strings.Contains(string(tj), `"`+d.name+`":["b"]`) {
			t.Errorf("%s: the suite's list reaches %s, a target's %s", d.name, sj, tj)
		}
		if got := d.of(s, Target{}); len(got) != 1 || got[0] != "a" {
			t.Errorf("%s: a target without its own list takes the suite's: %v", d.name, got)
		}
		if got := d.of(s, tg); len(got) != 1 || got[0] != "b" {
			t.Errorf("%s: a target's own list replaces the suite's: %v", d.name, got)
		}
		var set Target
		d.set(&set, "v")
		if set.Runtime+set.Tuning+set.Family != "v" {
			t.Errorf("%s: the expanded target's value: %+v", d.name, set)
		}
	}
	o := Overrides{Runtimes: []string{"r"}, Tunings: []string{"t"}, Families: []string{"f"}}
	var got []string
	for _, d := range dimensions() {
		got = append(got, d.override(o)...)
	}
	if strings.Join(got, ",") != "r,t,f" {
		t.Errorf("the command line's lists in expansion order: %v", got)
	}
}
