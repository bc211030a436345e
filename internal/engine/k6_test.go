package engine

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestSplitWorkloadIDAndValidation(t *testing.T) {
	w := Workload{Kind: GatewaySplit, Weight: 40, VUs: 100, Duration: 10 * time.Second}
	if err := w.Validate(); err != nil {
		t.Fatal(err)
	}
	if w.ID() != "gateway-split/40%x100vu" {
		t.Errorf("ID = %q", w.ID())
	}
	back, err := ParseID(w.ID())
	if err != nil || back.Weight != 40 || back.VUs != 100 || back.Kind != GatewaySplit {
		t.Errorf("ParseID = %+v, %v", back, err)
	}
	for _, c := range []struct {
		w    Workload
		want string
	}{
		{Workload{Kind: GatewaySplit, Weight: 0, VUs: 1, Duration: time.Second}, "weight: expected 1-99"},
		{Workload{Kind: GatewaySplit, Weight: 40, VUs: 0, Duration: time.Second}, "vus: expected 1-5000"},
		{Workload{Kind: GatewaySplit, Weight: 40, VUs: 1, MessageSize: 64, Duration: time.Second}, "expected only weight and vus"},
	} {
		if err := c.w.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Validate(%+v) = %v, want %q", c.w, err, c.want)
		}
	}
	if _, err := ParseID("gateway-split/40x100"); err == nil {
		t.Error("ParseID of a malformed split ID: want an error")
	}
}

func TestK6ArgvAndParse(t *testing.T) {
	w := Workload{Kind: GatewaySplit, Weight: 40, VUs: 10, Duration: 5 * time.Second}
	e, err := For(w)
	if err != nil || e.Name() != NameK6 {
		t.Fatalf("For = %v, %v", e, err)
	}
	argv := e.ClientArgv(w, "10.0.0.5", 8000)
	for _, want := range [][]string{{"--url", "http://10.0.0.5:8000/"}, {"--host", "w40.split.cnibench.test"}, {"--vus", "10"}, {"--duration", "5s"}, {"--first", SplitFirstBackend}} {
		i := slices.Index(argv, want[0])
		if i < 0 || argv[i+1] != want[1] {
			t.Errorf("argv %v lacks %v", argv, want)
		}
	}
	out := `{"first":"cnibench-backend-a-0","weight_pct":40,"requests":1000,"errors":10,"requests_per_s":200,
	"latency":{"n":990,"mean_ms":1.5,"p50_ms":1.2,"p90_ms":2,"p99_ms":4,"max_ms":9},"share":0.41,
	"accuracy":{"n":2,"mean":0.01,"ci95_low":null,"ci95_high":null,"mean_abs":0.02},"windows":[],"backends":{}}`
	m, err := e.Parse(w, []byte(out))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]float64{"split_error_pp": 1, "split_abs_error_pp": 2, "split_share_pct": 41, "requests_per_s": 200,
		"http_error_pct": 1, "latency_p50_us": 1200, "latency_p99_us": 4000} {
		if math.Abs(m[k]-v) > 1e-9 {
			t.Errorf("%s = %v, want %v", k, m[k], v)
		}
	}
	if _, err := e.Parse(w, []byte(`{"requests":0}`)); err == nil {
		t.Error("a split with no request: want an error")
	}
}
