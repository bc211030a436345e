// Package fuzzcheck holds the properties every fuzz target of a parser of outside input
// checks beyond "no panic": that one input is dealt with in bounded time, that an error names
// the field, line or byte offset it refused, and that what a parser accepts is a number a
// store can keep. It is test support: nothing in the cnibench binary uses it.
package fuzzcheck

import (
	"encoding/json"
	"errors"
	"math"
	"regexp"
	"strings"
	"testing"
	"time"
)

// Bound is how long one input may take: far above any parser's cost for the inputs the fuzzer
// makes (a few kilobytes), so that only a loop or a blow-up reaches it.
const Bound = 10 * time.Second

// Within runs f and fails t when it does not return within Bound: a parser that loops on some
// input would otherwise stall the fuzzer without a report. A panic in f still crashes the
// process, which the fuzzer records as a crasher.
func Within(t testing.TB, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	timer := time.NewTimer(Bound)
	defer timer.Stop()
	select {
	case <-done:
	case <-timer.C:
		t.Fatalf("%s: still running after %s", what, Bound)
	}
}

// Names fails t unless err's text contains one of names: the field, line or setting the
// parser refused, as its error is documented to say.
func Names(t testing.TB, err error, names ...string) {
	t.Helper()
	text := err.Error()
	for _, n := range names {
		if strings.Contains(text, n) {
			return
		}
	}
	t.Fatalf("error %q names none of %q", text, names)
}

// jsonPlace is how a JSON error names where it failed: its byte offset.
var jsonPlace = regexp.MustCompile(`at byte \d+`)

// NamesJSONPlace fails t when err comes from decoding JSON and does not say the byte offset it
// failed at (encoding/json's errors do not by themselves; a type error names a field, but not
// which of a list's elements).
func NamesJSONPlace(t testing.TB, err error) {
	t.Helper()
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	if (errors.As(err, &syntax) || errors.As(err, &typ)) && !jsonPlace.MatchString(err.Error()) {
		t.Fatalf("JSON error %q names neither a byte offset nor a field", err)
	}
}

// Finite fails t when a figure a parser accepted is NaN or infinite: JSON (the export, the
// dashboards) cannot carry one, and a mean over it is meaningless.
func Finite(t testing.TB, what string, figures map[string]float64) {
	t.Helper()
	for k, v := range figures {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			t.Fatalf("%s: %s = %v, expected a finite number", what, k, v)
		}
	}
}
