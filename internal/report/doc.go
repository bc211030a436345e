// Package report renders what internal/analysis finds in a run's samples for people to read:
// a table and the verdict for the terminal, JSON or YAML for machines, Markdown, and an HTML
// report with SVG charts.
package report
