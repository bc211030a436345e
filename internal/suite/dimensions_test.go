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
		if !strings.Contains(string(sj), `"`+d.field+`":["a"]`) || !strings.Contains(string(tj), `"`+d.field+`":["b"]`) {
			t.Errorf("%s: the suite's list reaches %s, a target's %s", d.field, sj, tj)
		}
		if got := d.of(s, Target{}); len(got) != 1 || got[0] != "a" {
			t.Errorf("%s: a target without its own list takes the suite's: %v", d.field, got)
		}
		if got := d.of(s, tg); len(got) != 1 || got[0] != "b" {
			t.Errorf("%s: a target's own list replaces the suite's: %v", d.field, got)
		}
		var one Target
		*d.value(&one) = "v"
		if one.Runtime+one.Tuning+one.Family != "v" || strings.Join(one.VariantNames(), ",") != "v" {
			t.Errorf("%s: the expanded target's value: %+v", d.field, one)
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

// An expanded target names its variants in the order its name has them.
func TestVariantNames(t *testing.T) {
	s := Default()
	s.Runtimes, s.Tunings, s.Families = []string{"runc"}, []string{"throughput"}, []string{"ipv6"}
	for _, tg := range s.Expand().Targets {
		if got := strings.Join(append([]string{"local"}, tg.VariantNames()...), "."); got != tg.Name {
			t.Errorf("%s: variant names %s", tg.Name, got)
		}
	}
	if got := s.Targets[0].VariantNames(); len(got) != 0 {
		t.Errorf("a target as written: %v", got)
	}
}
