package grafana

import (
	"context"
	"database/sql"
	"fmt"
	"github.com/cnibench/cnibench/internal/testsupport/aarun"
	"math"
	"strconv"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver, as Grafana's data source speaks to PostgreSQL

	"github.com/cnibench/cnibench/internal/record"
	"github.com/cnibench/cnibench/internal/store"
	"github.com/cnibench/cnibench/internal/testsupport/pgserver"
	"github.com/cnibench/cnibench/internal/testsupport/seedstore"
)

// testStore is a PostgreSQL results store holding the real run and synthetic ones, opened both
// as cnibench opens it (db) and as Grafana's data source does (conn).
type testStore struct {
	db   *store.DB
	conn *sql.DB
	aa   string // the real run's id
}

// wide is a time range holding every run of the test store.
var wide = timeRange{time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)}

// june is a time range holding the synthetic runs of 5 to 11 June only.
var june = timeRange{time.Date(2026, 6, 5, 0, 0, 0, 0, time.UTC), time.Date(2026, 6, 11, 0, 0, 0, 0, time.UTC)}

// seeded are the synthetic runs: labelled on two branches, one failed, one without labels;
// their cells hold a loss whose t-interval goes below 0 and a CPU share whose interval goes
// above 100 (both clipped by cnibench), a metric that is always 0, a metric that is not a
// headline, warm-up samples (seedstore's, a thousand times the values) and failed samples.
func seeded() []seedstore.Run {
	day := func(d int) time.Time { return time.Date(2026, 6, d, 3, 4, 5, 678901234, time.UTC) }
	targets := []record.Target{{Name: "kind-a", Fingerprint: map[string]string{"cni": "bridge"}}, {Name: "kind-b"}}
	cells := func(shift float64) []seedstore.Cell {
		return []seedstore.Cell{
			{Target: "kind-a", Path: "same-node", Workload: "tcp-stream/1",
				Metrics:   map[string][]float64{"throughput_gbps": {9.1 + shift, 9.3 + shift, 9.2 + shift}, "retransmits": {0, 0, 0}},
				Resources: map[string][]float64{"node_cpu_pct": {99, 100, 97}, "host_mem_used_mib": {3000, 3001, 3003}}},
			{Target: "kind-b", Path: "same-node", Workload: "tcp-stream/1",
				Metrics: map[string][]float64{"throughput_gbps": {8 + shift, 8.4 + shift, 8.2 + shift}}, Failed: 1},
			{Target: "kind-a", Path: "cross-node", Workload: "udp-stream/500M",
				Metrics: map[string][]float64{"loss_pct": {0, 0, 0.6}, "jitter_ms": {0.01, 0.02, 0.015}}},
			{Target: "kind-a", Path: "same-node", Workload: "tcp-rr/64B",
				Metrics: map[string][]float64{"transactions_per_s": {50000 + 1000*shift, 51000, 49500}, "latency_p50_us": {19, 20, 21}}},
		}
	}
	return []seedstore.Run{
		{ID: "s1-main", Started: day(1), Targets: targets, Cells: cells(0), Labels: map[string]string{"branch": "main", "commit": "a1"}},
		{ID: "s2-main", Started: day(8), Targets: targets, Cells: cells(0.5), Labels: map[string]string{"branch": "main", "commit": "a2"}},
		{ID: "s3-dev", Started: day(10), Targets: targets, Cells: cells(-1), Labels: map[string]string{"branch": "dev", "note": "o'clock"}},
		{ID: "s4-main-failed", Started: day(12), Status: record.StatusFailed, Targets: targets, Cells: cells(3),
			Labels: map[string]string{"branch": "main", "commit": "a4"}},
		{ID: "s5-unlabelled", Started: day(15), Targets: targets, Cells: cells(1)},
	}
}

// newFixture fills a fresh database of the test server.
func newFixture(t *testing.T) *testStore {
	t.Helper()
	ctx := context.Background()
	url := pgserver.NewDatabase(t)
	db, err := store.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	for _, r := range seeded() {
		if err := seedstore.Add(ctx, db, r); err != nil {
			t.Fatal(err)
		}
	}
	aa := aarun.Store(t, db).Run.ID
	conn, err := sql.Open("pgx", url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return &testStore{db: db, conn: conn, aa: aa}
}

// row is one row of a query's result by column name: string, int64, float64, time.Time or nil.
type row map[string]any

// query runs interpolated SQL as Grafana's data source would and reads every row.
func (f *testStore) query(ctx context.Context, q string) ([]row, []string, error) {
	rows, err := f.conn.QueryContext(ctx, q)
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, nil, err
	}
	var out []row
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, nil, err
		}
		r := row{}
		for i, c := range cols {
			if b, ok := vals[i].([]byte); ok {
				vals[i] = string(b)
			}
			r[c] = vals[i]
		}
		out = append(out, r)
	}
	return out, cols, rows.Err()
}

// str is a column's text ("" for NULL).
func (r row) str(col string) string {
	switch v := r[col].(type) {
	case nil:
		return ""
	case string:
		return v
	default:
		return fmt.Sprint(v)
	}
}

// num is a column's number (NaN for NULL): PostgreSQL's numeric arrives as text.
func (r row) num(col string) float64 {
	switch v := r[col].(type) {
	case int64:
		return float64(v)
	case float64:
		return v
	case string:
		x, err := strconv.ParseFloat(v, 64)
		if err == nil {
			return x
		}
	}
	return math.NaN()
}

// when is a column's time (zero for NULL).
func (r row) when(col string) time.Time {
	t, _ := r[col].(time.Time)
	return t
}

// near says whether a figure the database computed is cnibench's: within 1e-9 of its size,
// NULL where cnibench has no finite value.
func near(got, want float64) bool {
	if math.IsNaN(want) || math.IsInf(want, 0) {
		return math.IsNaN(got)
	}
	return math.Abs(got-want) <= 1e-9*math.Max(1, math.Abs(want))
}

// sameInstant says whether a timestamp PostgreSQL read from the store (to the microsecond) is
// the time cnibench stored (to the nanosecond).
func sameInstant(got, want time.Time) bool {
	d := got.Sub(want)
	return d <= time.Microsecond && d >= -time.Microsecond
}
