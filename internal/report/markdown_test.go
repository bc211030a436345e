package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/cnibench/cnibench/internal/suite"
)

// mdCells splits a Markdown table line into its cells, honouring \| escapes.
func mdCells(line string) []string {
	line = strings.TrimSpace(line)
	line = strings.TrimPrefix(strings.TrimSuffix(line, "|"), "|")
	var cells []string
	var cur strings.Builder
	for i := 0; i < len(line); i++ {
		switch {
		case line[i] == '\\' && i+1 < len(line):
			cur.WriteByte(line[i])
			cur.WriteByte(line[i+1])
			i++
		case line[i] == '|':
			cells = append(cells, strings.TrimSpace(cur.String()))
			cur.Reset()
		default:
			cur.WriteByte(line[i])
		}
	}
	return append(cells, strings.TrimSpace(cur.String()))
}

// mdTables returns the tables of a Markdown text as rows of cells, the header first and
// the separator line left out; it fails if the separator is missing.
func mdTables(t *testing.T, text string) [][][]string {
	t.Helper()
	var tables [][][]string
	var cur [][]string
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		if !strings.HasPrefix(l, "|") {
			if cur != nil {
				tables = append(tables, cur)
				cur = nil
			}
			continue
		}
		if cur == nil && (i+1 >= len(lines) || !strings.HasPrefix(lines[i+1], "|---")) {
			t.Fatalf("table header %q is not followed by a separator", l)
		}
		if strings.HasPrefix(l, "|---") {
			if got, want := strings.Count(l, "---"), len(cur[0]); got != want {
				t.Fatalf("separator %q has %d columns, header %d", l, got, want)
			}
			continue
		}
		cur = append(cur, mdCells(l))
	}
	return tables
}

func writeMD(t *testing.T, docs ...Document) string {
	t.Helper()
	var b bytes.Buffer
	if err := WriteMarkdown(&b, docs); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestWriteMarkdownTables(t *testing.T) {
	paths := []string{suite.HostNetwork, suite.SameNode, suite.CrossNode}
	d := synthDocument("20260314-092653-ab12", []string{"flannel", "pipe|name"}, paths, 5, 21)
	text := writeMD(t, d)
	tables := mdTables(t, text)
	// runs, environment, then per workload the headline table and the other metrics (the
	// request/response workloads have no non-headline metric).
	wantCols := []int{8, 3, 11, 11, 11, 11, 11, 11}
	if len(tables) != len(wantCols) {
		t.Fatalf("%d tables, want %d:\n%s", len(tables), len(wantCols), text)
	}
	for i, tab := range tables {
		for j, row := range tab {
			if len(row) != wantCols[i] {
				t.Errorf("table %d row %d has %d cells, want %d: %q", i, j, len(row), wantCols[i], row)
			}
		}
	}
	if got := tables[1][0]; got[2] != `pipe\|name` {
		t.Errorf("environment header %q: target name with a pipe not escaped", got)
	}
	// Every headline figure of every cell: 2 targets x 3 paths x 4 metrics for tcp-stream/1.
	if got := len(tables[2]) - 1; got != 2*3*4 {
		t.Errorf("tcp-stream/1 table has %d rows, want 24", got)
	}
	for _, s := range []string{
		"## tcp-stream/1", "## udp-stream/1300B@500M", "## tcp-rr/64B", "## tcp-crr/64B", "## Environment",
		"Higher is better (↑): throughput_gbps.", "Lower is better (↓): retransmits, cpu_s_per_gb, node_cpu_pct.",
		"| flannel | host-network | throughput_gbps ↑ | Gbit/s | 5 |", "| baseline |", "× |", "(+1 failed)",
		"```yaml\npaths: [host-network, same-node]", "<details><summary>Other metrics</summary>",
		"latency_p99_us ↓",
	} {
		if !strings.Contains(text, s) {
			t.Errorf("Markdown lacks %q", s)
		}
	}
}

func TestWriteMarkdownEscapes(t *testing.T) {
	d := synthDocument("r1", []string{"<script>alert(1)</script>"}, []string{suite.HostNetwork}, 2, 22)
	d.Run.Note = "line one\nline | two"
	text := writeMD(t, d)
	if strings.Contains(text, "<script") {
		t.Error("target name reached the Markdown as raw HTML")
	}
	if !strings.Contains(text, "&lt;script&gt;alert(1)&lt;/script&gt;") || !strings.Contains(text, `line one line \| two`) {
		t.Errorf("escaped target name or note missing:\n%s", text)
	}
	for _, tab := range mdTables(t, text) {
		for _, row := range tab[1:] {
			if len(row) != len(tab[0]) {
				t.Errorf("row %q does not match header %q", row, tab[0])
			}
		}
	}
}

func TestWriteMarkdownSeveralRuns(t *testing.T) {
	a := synthDocument("run-a", []string{"kind"}, []string{suite.HostNetwork}, 2, 23)
	b := synthDocument("run-b", []string{"kind"}, []string{suite.HostNetwork}, 2, 24)
	text := writeMD(t, a, b)
	for _, s := range []string{"| run-a/kind | host-network | throughput_gbps ↑ |", "| run-b/kind | host-network | throughput_gbps ↑ |",
		"| Key | run-a/kind | run-b/kind |", "# cnibench report: run-a, run-b"} {
		if !strings.Contains(text, s) {
			t.Errorf("Markdown lacks %q", s)
		}
	}
}
