//go:build e2e

package e2e

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cnibench/cnibench/internal/catalog"
	"github.com/cnibench/cnibench/internal/record"
	"github.com/cnibench/cnibench/internal/store"
)

// searchSuite is a rate search on the host-network path alone (a suite without a client pod).
const searchSuite = `
paths: [host-network]
workloads: [{kind: udp-stream, size: 1300, rate: 2G, maxLoss: 1}]
repetitions: 2
duration: 4s
warmup: off
`

// runSearch checks a rate search's samples: at most 4 trials of a second each, the first at
// the bound, a found rate within it whose best trial lost at most the threshold, and every
// trial in the raw output.
func runSearch(ctx context.Context, t *testing.T, dir string) {
	results := filepath.Join(dir, "search.db")
	doc := runSuite(ctx, t, searchSuite, filepath.Join(dir, "search.yaml"), results)
	if doc.Run.Status != "complete" {
		t.Errorf("run status %q", doc.Run.Status)
	}
	db, err := store.Open(ctx, results)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	samples, err := db.Samples(ctx, doc.Run.ID)
	if err != nil {
		t.Fatal(err)
	}
	measured := 0
	for _, s := range samples {
		if s.Path == record.SetupPath {
			continue
		}
		measured++
		found, ok := s.Metrics[catalog.RFC2544]
		trials := strings.Count(s.Raw, "# trial ")
		t.Logf("sample %d: %s %.3g Gbit/s after %d trials", s.Seq, s.Workload, found, trials)
		if s.Error != "" || !ok || found < 0 || found > 2 || s.Workload != "udp-stream/1300B@2G/search1%" {
			t.Errorf("sample %d: %s error %q, rfc2544 %v (%v)", s.Seq, s.Workload, s.Error, found, ok)
		}
		if trials < 1 || trials > 4 || !strings.HasPrefix(s.Raw, "# trial 1: 2Gbit/s offered a pair") {
			t.Errorf("sample %d: %d trials, raw starts %q", s.Seq, trials, s.Raw[:min(len(s.Raw), 60)])
		}
		if found > 0 && s.Metrics[catalog.Loss] > 1 {
			t.Errorf("sample %d: found %.3g Gbit/s, its trial lost %.3g %%", s.Seq, found, s.Metrics[catalog.Loss])
		}
	}
	if measured != 2 {
		t.Errorf("%d measured samples, want 2", measured)
	}
}
