package store

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// PostgreSQL TEXT holds valid UTF-8 without NUL bytes; SQLite TEXT holds any bytes. So that
// both backends accept and return the same values, text that PostgreSQL could not hold is
// dealt with before either sees it:
//   - ids, names, paths, workloads, the suite and the version are refused (checkText): they
//     identify things and are looked up again, so a silently altered one would be a
//     different one;
//   - messages (a run's Note, a sample's Error) are cleaned (cleanText): they are often
//     built from a failing tool's output, and losing the sample or the run's final status
//     over a stray byte in its message would be worse than a replacement character;
//   - raw tool output is stored byte for byte (a BYTEA column in PostgreSQL, see
//     postgresDialect), because it is the evidence a sample can be re-parsed from;
//   - fingerprints are JSON, which encoding/json already makes valid UTF-8 (invalid bytes
//     become U+FFFD, NUL becomes \u0000), identically for both backends.

// storable tells whether PostgreSQL TEXT can hold s.
func storable(s string) bool { return utf8.ValidString(s) && !strings.ContainsRune(s, 0) }

// checkText refuses s, the value of field, unless it is storable.
func checkText(field, s string) error {
	if !storable(s) {
		return fmt.Errorf("%s %q: contains a NUL byte or invalid UTF-8", field, s)
	}
	return nil
}

// cleanText replaces each NUL byte and each invalid UTF-8 sequence of s with U+FFFD, the
// replacement character, so that the change is visible.
func cleanText(s string) string {
	if storable(s) {
		return s
	}
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "\uFFFD")
}
