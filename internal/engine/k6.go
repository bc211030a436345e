package engine

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/cnibench/cnibench/internal/agentcmd"
	"github.com/cnibench/cnibench/internal/catalog"
	"github.com/cnibench/cnibench/internal/split"
)

// GatewaySplit is HTTP load from k6 through a Gateway API HTTPRoute that splits requests by
// weight between two backends answering with their pod names: the split's accuracy per
// 5-second window, the request rate and latency.
const GatewaySplit = "gateway-split"

// NameK6 is the k6 engine's name.
const NameK6 = "k6"

// Gateway-split limits.
const (
	// MaxVUs bounds a split's virtual users.
	MaxVUs = 5000
	// SplitFirstBackend is the pod name of the backend that gets the route's weight; the
	// run deploys it under this name.
	SplitFirstBackend = "cnibench-backend-a-0"
)

// SplitHost is the host name of the HTTPRoute of a weight: one route per weight on one
// Gateway, selected by the requests' Host header.
func SplitHost(weight int) string { return fmt.Sprintf("w%d.split.cnibench.test", weight) }

// validateSplit checks a gateway-split workload.
func (w Workload) validateSplit() error {
	if w.Weight < 1 || w.Weight > 99 {
		return fmt.Errorf("weight: expected 1-99 (percent to the first backend), got %d", w.Weight)
	}
	if w.VUs < 1 || w.VUs > MaxVUs {
		return fmt.Errorf("vus: expected 1-%d virtual users, got %d", MaxVUs, w.VUs)
	}
	if w.Streams > 1 || w.MessageSize != 0 || w.Rate != "" || w.Threads != 0 {
		return fmt.Errorf("%s: expected only weight and vus, got streams %d, size %d, rate %q, threads %d",
			GatewaySplit, w.Streams, w.MessageSize, w.Rate, w.Threads)
	}
	return nil
}

// splitID is the ID of a gateway-split workload: "gateway-split/40%x100vu".
func (w Workload) splitID() string { return fmt.Sprintf("%s/%d%%x%dvu", GatewaySplit, w.Weight, w.VUs) }

// parseSplitID reverses splitID's parameters.
func parseSplitID(params string) (Workload, error) {
	weight, vus, ok := strings.Cut(params, "%x")
	n, err := strconv.Atoi(strings.TrimSuffix(vus, "vu"))
	wt, err2 := strconv.Atoi(weight)
	if !ok || !strings.HasSuffix(vus, "vu") || err != nil || err2 != nil {
		return Workload{}, fmt.Errorf("expected %s/WEIGHT%%xVUSvu, e.g. %q", GatewaySplit, "gateway-split/40%x100vu")
	}
	return Workload{Kind: GatewaySplit, Weight: wt, VUs: n}, nil
}

// k6 drives the split's load from the client pod: `cnibench agent split` writes the k6
// script, runs k6 and prints the summary of its CSV output.
type k6 struct{}

func (k6) Name() string { return NameK6 }

func (k6) Supports(w Workload) bool { return w.Kind == GatewaySplit }

// ServerArgv implements Engine: the split's servers are the backends behind the Gateway,
// which the run deploys with it, not a server container of its own.
func (k6) ServerArgv(Workload, int) []string { return nil }

// ClientArgv implements Engine; target and port are the Gateway's address and listener.
func (k6) ClientArgv(w Workload, target string, port int) []string {
	url := "http://" + joinHostPort(target, port) + "/"
	return agentcmd.SplitCmd{URL: url, Host: SplitHost(w.Weight), First: SplitFirstBackend, Weight: w.Weight,
		VUs: w.VUs, Duration: w.Duration}.Argv()
}

// Parse implements Engine: the summary `cnibench agent split` prints.
func (k6) Parse(_ Workload, stdout []byte) (Metrics, error) {
	var s split.Summary
	if err := json.Unmarshal(stdout, &s); err != nil {
		return nil, fmt.Errorf("parse split summary: %w", jsonPlace(err))
	}
	if s.Requests == 0 {
		return nil, &ToolError{Engine: NameK6, Message: "no request was answered"}
	}
	m := Metrics{catalog.HTTPErrors: 100 * float64(s.Errors) / float64(s.Requests)}
	// A figure the test could not have (no window, no answered request) travels as NaN and
	// is left out rather than stored as a number.
	put := func(name string, v split.Float, scale float64) {
		if x := float64(v) * scale; !math.IsNaN(x) && !math.IsInf(x, 0) {
			m[name] = x
		}
	}
	put(catalog.RequestRate, s.Rate, 1)
	put(catalog.SplitShare, s.Share, 100)
	put(catalog.SplitError, s.Accuracy.Mean, 100)
	put(catalog.SplitAbsError, s.Accuracy.MeanAbs, 100)
	put(MetricLatencyP50, s.Latency.P50, 1000)
	put(MetricLatencyP90, s.Latency.P90, 1000)
	put(MetricLatencyP99, s.Latency.P99, 1000)
	put(MetricLatencyMean, s.Latency.Mean, 1000)
	return m, nil
}

// joinHostPort is net.JoinHostPort for a target that may be an IPv6 literal.
func joinHostPort(host string, port int) string {
	if strings.Contains(host, ":") {
		return "[" + host + "]:" + strconv.Itoa(port)
	}
	return host + ":" + strconv.Itoa(port)
}
