package suite

import (
	"fmt"
	"strings"
)

// dimension is a variant dimension: a list of settings every target is measured under side by
// side in one cluster (runtimes, tunings, families). The suite has a list, a target may have its
// own that replaces it, a flag replaces the suite's, and Expand makes one target per entry,
// named after it ("local.runsc"). Adding a dimension is an entry in dimensions, its fields
// (Suite's and Target's list, Target's value, Overrides' list) and its validator.
type dimension struct {
	// name is the YAML field of the suite's and a target's lists, and the one variant's noun in
	// messages ("runtime", "tuning", "family" in noun).
	name, noun string
	suite      func(*Suite) *[]string    // the suite's list
	target     func(*Target) *[]string   // a target's own list
	override   func(Overrides) []string  // the command line's list, replacing the suite's
	set        func(t *Target, v string) // puts one entry on its expanded target
	// suffix is the entry's part of an expanded target's name: the entry itself where nil.
	suffix func(v string) string
	// check validates one list's entries (names, each once), at field ("targets[0].tunings").
	check func(field string, list []string) []error
	// rules validates what depends on the rest of the suite (a target's CRI, its paths).
	rules func(s Suite) []error
}

// dimensions lists the variant dimensions in expansion order: a target's variants are named
// target.runtime.tuning.family.
func dimensions() []dimension {
	return []dimension{
		{name: "runtimes", noun: "runtime",
			suite:    func(s *Suite) *[]string { return &s.Runtimes },
			target:   func(t *Target) *[]string { return &t.Runtimes },
			override: func(o Overrides) []string { return o.Runtimes },
			set:      func(t *Target, v string) { t.Runtime = v },
			check:    checkRuntimeNames, rules: Suite.validateRuntimes},
		{name: "tunings", noun: "tuning",
			suite:    func(s *Suite) *[]string { return &s.Tunings },
			target:   func(t *Target) *[]string { return &t.Tunings },
			override: func(o Overrides) []string { return o.Tunings },
			set:      func(t *Target, v string) { t.Tuning = v },
			suffix:   tuningName, check: checkTunings, rules: Suite.validateTunings},
		{name: "families", noun: "family",
			suite:    func(s *Suite) *[]string { return &s.Families },
			target:   func(t *Target) *[]string { return &t.Families },
			override: func(o Overrides) []string { return o.Families },
			set:      func(t *Target, v string) { t.Family = v },
			check:    checkFamilies, rules: Suite.validateFamilies},
	}
}

// of is the dimension's list a target is measured under: its own, else the suite's.
func (d dimension) of(s Suite, t Target) []string {
	return ownOrSuite(*d.target(&t), *d.suite(&s))
}

// ownOrSuite is a target's own list of a dimension, else the suite's: a target's list
// replaces the suite's.
func ownOrSuite(own, suite []string) []string {
	if len(own) > 0 {
		return own
	}
	return suite
}

// expand makes one target of each of the dimension's entries for every target, its own list
// cleared: "local" under runc and runsc becomes "local.runc" and "local.runsc".
func (d dimension) expand(s Suite, targets []Target) []Target {
	var out []Target
	for _, t := range targets {
		for _, v := range orNone(d.of(s, t)) {
			one := t
			*d.target(&one) = nil
			if v != "" {
				suffix := v
				if d.suffix != nil {
					suffix = d.suffix(v)
				}
				one.Name += "." + suffix
				d.set(&one, v)
			}
			out = append(out, one)
		}
	}
	return out
}

// validate checks the dimension's lists, the suite's and each target's, then its rules.
func (d dimension) validate(s Suite) []error {
	errs := d.check(d.name, *d.suite(&s))
	for i, t := range s.Targets {
		errs = append(errs, d.check(fmt.Sprintf("targets[%d].%s", i, d.name), *d.target(&t))...)
	}
	return append(errs, d.rules(s)...)
}

// variants is how many targets a target expands into: the product of its dimensions' lists.
func (s Suite) variants(t Target) int {
	n := 1
	for _, d := range dimensions() {
		n *= len(orNone(d.of(s, t)))
	}
	return n
}

// dimensionWords lists the dimensions' nouns ("runtime, tuning and family") or their names
// ("runtimes, tunings or families"), for messages that speak of them all.
func dimensionWords(plural bool, last string) string {
	var words []string
	for _, d := range dimensions() {
		if plural {
			words = append(words, d.name)
		} else {
			words = append(words, d.noun)
		}
	}
	return strings.Join(words[:len(words)-1], ", ") + " " + last + " " + words[len(words)-1]
}

// orNone is list, or one empty entry for an empty list: one variant without the dimension.
func orNone(list []string) []string {
	if len(list) == 0 {
		return []string{""}
	}
	return list
}
