package mdtext

import "testing"

func TestEscapeKeepsTextLiteral(t *testing.T) {
	for in, want := range map[string]string{
		"bridge":              "bridge",
		"a|b":                 `a\|b`,
		"<script>":            "&lt;script&gt;",
		"R&D":                 "R&amp;D",
		`C:\x`:                `C:\\x`,
		"two\nlines\r\nthree": "two lines three",
		`\|`:                  `\\\|`,
	} {
		if got := Escape(in); got != want {
			t.Errorf("Escape(%q) = %q, want %q", in, got, want)
		}
	}
}
