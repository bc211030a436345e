// Package yamlerr locates a YAML document's error that the YAML library reports without a
// line ("found unexpected end of stream", "unknown anchor 'x' referenced", a null map key),
// so that a refused file's error names where it went wrong.
package yamlerr

import (
	"bytes"
	"fmt"
	"strings"

	"sigs.k8s.io/yaml"
)

// Locate returns err with the line the document data first fails to parse at, or err itself
// when its text names a line already or the document parses.
func Locate(data []byte, err error) error {
	if err == nil || strings.Contains(err.Error(), "line ") {
		return err
	}
	if line := failingLine(data); line > 0 {
		return fmt.Errorf("line %d: %w", line, err)
	}
	return err
}

// failingLine is a line n such that the document's first n-1 lines convert to JSON and its
// first n do not, found by bisection (log2 of the lines parses, each bounded by the document's size);
// 0 when the whole document parses.
func failingLine(data []byte) int {
	lines := bytes.SplitAfter(data, []byte("\n"))
	// The conversion to JSON that the decoders of sigs.k8s.io/yaml start with is what failed.
	parses := func(n int) bool {
		_, err := yaml.YAMLToJSON(bytes.Join(lines[:n], nil))
		return err == nil
	}
	if parses(len(lines)) {
		return 0
	}
	lo, hi := 0, len(lines) // parses(lo), !parses(hi)
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		if parses(mid) {
			lo = mid
		} else {
			hi = mid
		}
	}
	return hi
}
