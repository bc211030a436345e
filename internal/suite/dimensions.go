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
	// field is the YAML field of the suite's and a target's lists, noun one entry's in
	// messages ("runtime", "tuning", "family").
	field, noun string
	suite       func(*Suite) *[]string   // the suite's list
	target      func(*Target) *[]string  // a target's own list
	override    func(Overrides) []string // the command line's list, replacing the suite's
	value       func(*Target) *string    // the expanded target's one entry
	// nameOf is an entry's part of an expanded target's name, where not the entry itself.
	nameOf func(v string) string
	// check validates one list's entries (names, each once), at field ("targets[0].tunings").
	check func(field string, list []string) []error
	// rules validates what depends on the rest of the suite (a target's CRI, its paths).
	rules func(s Suite) []error
}

// dimensions lists the variant dimensions in expansion order: a target's variants are named
// target.runtime.tuning.family.
func dimensions() []dimension {
	return []dimension{
		{field: "runtimes", noun: "runtime",
			suite:    func(s *Suite) *[]string { return &s.Runtimes },
			target:   func(t *Target) *[]string { return &t.Runtimes },
			override: func(o Overrides) []string { return o.Runtimes },
			value:    func(t *Target) *string { return &t.Runtime },
			check:    checkRuntimeNames, rules: Suite.validateRuntimes},
		{field: "tunings", noun: "tuning",
			suite:    func(s *Suite) *[]string { return &s.Tunings },
			target:   func(t *Target) *[]string { return &t.Tunings },
			override: func(o Overrides) []string { return o.Tunings },
			value:    func(t *Target) *string { return &t.Tuning },
			nameOf:   tuningName, check: checkTunings, rules: Suite.validateTunings},
		{field: "families", noun: "family",
			suite:    func(s *Suite) *[]string { return &s.Families },
			target:   func(t *Target) *[]string { return &t.Families },
			override: func(o Overrides) []string { return o.Families },
			value:    func(t *Target) *string { return &t.Family },
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
				one.Name += "." + d.name(v)
				*d.value(&one) = v
			}
			out = append(out, one)
		}
	}
	return out
}

// validate checks the dimension's lists, the suite's and each target's, then its rules.
func (d dimension) validate(s Suite) []error {
	errs := d.check(d.field, *d.suite(&s))
	for i, t := range s.Targets {
		errs = append(errs, d.check(fmt.Sprintf("targets[%d].%s", i, d.field), *d.target(&t))...)
	}
	return append(errs, d.rules(s)...)
}

// name is an entry's part of an expanded target's name: a tuning file's profile name, else
// the entry.
func (d dimension) name(v string) string {
	if d.nameOf != nil {
		return d.nameOf(v)
	}
	return v
}

// VariantNames lists what the target's variant of each dimension adds to its name, in order
// ("runsc", "throughput", "ipv6"): none for a target that Expand did not make.
func (t Target) VariantNames() []string {
	var out []string
	for _, d := range dimensions() {
		if v := *d.value(&t); v != "" {
			out = append(out, d.name(v))
		}
	}
	return out
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
			words = append(words, d.field)
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
