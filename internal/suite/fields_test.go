package suite

import (
	"strings"
	"testing"
)

// TestValuesReadAsTheDecoderDoes: a value that a type reads itself is checked as the decoder
// reads it (YAML 1.1), and refused at its line and path.
func TestValuesReadAsTheDecoderDoes(t *testing.T) {
	for in, want := range map[string]string{
		"warmup: no\n":                                "",
		"precision: off\n":                            "",
		"warmup: 'no'\n":                              "line 1: warmup: expected a duration such as 2s, or off",
		"repetitions: 3\nduration: soon\n":            "line 2: duration: expected a duration such as 5s",
		"reference:\n  durations: {tcp-stream: 1y}\n": "line 2: reference.durations.tcp-stream: expected a duration",
		"0\n":                      "line 1: expected the suite's fields",
		"paths: [same-node]\n\x01": "line 2: byte 19: expected text, got control character U+0001",
	} {
		_, err := Parse([]byte(in))
		switch {
		case want == "" && err != nil:
			t.Errorf("%q: %v", in, err)
		case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
			t.Errorf("%q: error %v, want it to contain %q", in, err, want)
		}
	}
}
