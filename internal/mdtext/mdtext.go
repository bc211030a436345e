// Package mdtext keeps text literal in Markdown: the one escaper of the report's and
// compare's Markdown, so that a name prints the same in both and never as markup.
package mdtext

import "strings"

// Escape keeps text literal inside a table cell or a heading: a pipe would end the cell, <
// would start raw HTML (a target called <script> must print as such), & an entity, a
// backslash an escape of its own, and a line break would end the row.
func Escape(s string) string {
	return strings.NewReplacer(
		`\`, `\\`, "|", `\|`, "<", "&lt;", ">", "&gt;", "&", "&amp;", "\r\n", " ", "\n", " ", "\r", " ",
	).Replace(s)
}
