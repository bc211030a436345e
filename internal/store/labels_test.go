package store

import (
	"context"
	"maps"
	"testing"
	"time"
)

// TestRunLabels: a run's labels are stored with it, read back by Run and Runs (and only the
// run's own), and go with the run when it is deleted.
func TestRunLabels(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		d := openTest(t, b)
		labelled := testRun("labelled", t0())
		labelled.Labels = map[string]string{"branch": "feature/x", "commit": "0123abc", "empty": ""}
		if err := d.CreateRun(ctx, labelled); err != nil {
			t.Fatal(err)
		}
		if err := d.CreateRun(ctx, testRun("plain", t0().Add(time.Minute))); err != nil {
			t.Fatal(err)
		}
		got, err := d.Run(ctx, "lab")
		if err != nil {
			t.Fatal(err)
		}
		if !maps.Equal(got.Labels, labelled.Labels) {
			t.Errorf("Run: labels %v, want %v", got.Labels, labelled.Labels)
		}
		runs, err := d.Runs(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range runs {
			want := map[string]string(nil)
			if r.ID == "labelled" {
				want = labelled.Labels
			}
			if !maps.Equal(r.Labels, want) {
				t.Errorf("Runs: %s has labels %v, want %v", r.ID, r.Labels, want)
			}
		}
		bad := testRun("bad", t0())
		bad.Labels = map[string]string{"k": "a\x00b"}
		if err := d.CreateRun(ctx, bad); err == nil {
			t.Error("a label with a NUL byte was stored")
		}
		if _, err := d.Run(ctx, "bad"); err == nil {
			t.Error("a refused run was stored without its labels")
		}
		if err := d.DeleteRun(ctx, "labelled"); err != nil {
			t.Fatal(err)
		}
		var n int
		if err := d.queryRow(ctx, d.db, `SELECT COUNT(*) FROM run_labels`).Scan(&n); err != nil || n != 0 {
			t.Errorf("after delete: %d labels left (%v)", n, err)
		}
	})
}
