package analysis

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/cnibench/cnibench/internal/catalog"
	"github.com/cnibench/cnibench/internal/stats"
)

// TestRankingFalseVerdicts ranks identical targets (lognormal noise, CV 10 %, 10 samples each)
// many times: the best is picked after the fact, so without adjustment some other target is
// called "worse" by chance in 10 % of rankings of three and 30 % of six (6.6 % of six with
// Holm over the k-1 comparisons with the best). Holm over every pair must keep it at or below
// 5 % (measured: 0.030 of three, 0.020 of six).
func TestRankingFalseVerdicts(t *testing.T) {
	const reps, n, cv = 1000, 10, 0.10
	sigma := math.Sqrt(math.Log1p(cv * cv))
	r := rand.New(rand.NewPCG(17, 19))
	for _, k := range []int{3, 6} {
		wrong := 0
		for range reps {
			byName := map[string][]stats.Obs{}
			for i := range k {
				xs := make([]stats.Obs, n)
				for j := range xs {
					xs[j] = stats.Obs{Block: fmt.Sprint(j), Value: 10 * math.Exp(sigma*r.NormFloat64())}
				}
				byName[fmt.Sprintf("t%d", i)] = xs
			}
			for _, e := range rankEntries(catalog.Throughput, byName, true, "", "best") {
				if e.Verdict == "worse" || e.Verdict == "better" {
					wrong++
					break
				}
			}
		}
		rate := float64(wrong) / reps
		t.Logf("%d identical targets, n=%d, CV %.0f %%: a false verdict in %.3f of rankings", k, n, cv*100, rate)
		if rate > 0.05 {
			t.Errorf("%d identical targets: a false verdict in %.3f of rankings, want at most 0.05", k, rate)
		}
	}
}
