// Package grafana holds cnibench's Grafana dashboards over a PostgreSQL results store: runs
// (the stored runs, filtered by a label), run (one run's samples and headline figures with
// their 95 % intervals) and history (each headline metric's run means over the runs). They are
// JSON files in Grafana's dashboard schema, imported as they are (README, docs/results.md);
// the package embeds them for its test, which runs every panel's SQL against a real store.
package grafana

import "embed"

// Files are the dashboards' JSON files, by file name (runs.json, run.json, history.json).
//
//go:embed *.json
var Files embed.FS
