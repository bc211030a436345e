package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/cnibench/cnibench/internal/agentcmd"
	"github.com/cnibench/cnibench/internal/catalog"
	"github.com/cnibench/cnibench/internal/engine"
	"github.com/cnibench/cnibench/internal/kube"
	"github.com/cnibench/cnibench/internal/stats"
)

// pairEnd is one client/server pair of a sample: who runs the client, what it connects to,
// and whose counters are read.
type pairEnd struct {
	clientPod string
	target    string
	port      int
	statPods  []podContainer
}

// podContainer is a container whose counters a sample reads, in the run's namespace unless
// it names another (Envoy Gateway's proxies run in its controller's); gateway marks the
// gateway path's implementation, whose figures are reported apart.
type podContainer struct {
	pod, container string
	namespace      string
	gateway        bool
}

// rttLogFile is where a client that logs every round trip writes them, inside its container.
const rttLogFile = "/tmp/cnibench-rtt.csv"

// skewFlagFraction is the start skew, as a fraction of the sample's duration, beyond which a
// sample is flagged: its pairs overlapped for less than 95 % of the time.
const skewFlagFraction = 0.05

// clientArgv wraps a pair's client command in `cnibench agent run`, which waits at the
// barrier, times the start on the node and, for several pairs, logs every round trip.
func clientArgv(eng engine.Engine, ew engine.Workload, end pairEnd, pairs int, awake bool) []string {
	run := agentcmd.RunCmd{Barrier: true, Command: eng.ClientArgv(ew, end.target, end.port)}
	if k, _ := engine.LookupKind(ew.Kind); awake && k.RoundTrips {
		run.KeepAwake = pairs
	}
	if l, ok := eng.(engine.RTTLogger); ok && pairs > 1 {
		run.Command = l.WithRTTLog(run.Command, rttLogFile)
		run.RTTLog = rttLogFile
	}
	return run.Argv()
}

// readyWriter collects a client's stderr and signals once the client waits at the barrier.
type readyWriter struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	once  sync.Once
	ready chan struct{}
}

func newReadyWriter() *readyWriter { return &readyWriter{ready: make(chan struct{})} }

func (w *readyWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if strings.Contains(w.buf.String(), agentcmd.ReadyLine) {
		w.once.Do(func() { close(w.ready) })
	}
	return len(p), nil
}

func (w *readyWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return strings.TrimSpace(strings.ReplaceAll(w.buf.String(), agentcmd.ReadyLine, ""))
}

// pairRun is one client's exec.
type pairRun struct {
	stdout bytes.Buffer
	stderr *readyWriter
	stdin  *io.PipeWriter
	err    error
}

// releaseHooks run around the release of a sample's clients; either may be nil.
type releaseHooks struct {
	// before runs once every client waits at the barrier, right before the release; an
	// error releases them to end at once and fails the sample.
	before func() error
	// after runs right after the release, while the clients run; an error fails the sample.
	after func() error
}

// runPairs starts every pair's client, waits until all of them wait at the barrier, releases
// them together and collects their reports. One client that fails fails the sample.
func (r *run) runPairs(ctx context.Context, tg *target, argvs [][]string, ends []pairEnd, timeout time.Duration, hooks releaseHooks) ([]agentcmd.RunReport, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	runs := make([]*pairRun, len(ends))
	done := make(chan int, len(ends))
	for i, end := range ends {
		pr, pw := io.Pipe()
		runs[i] = &pairRun{stderr: newReadyWriter(), stdin: pw}
		go func(i int, pr *io.PipeReader) {
			p := runs[i]
			p.err = tg.client.ExecIO(ctx, tg.namespace, end.clientPod, kube.ClientContainer, argvs[i], pr, &p.stdout, p.stderr)
			pr.Close()
			done <- i
		}(i, pr)
	}
	release := func() {
		// One start time for all: delivering the release to a hundred clients takes a while,
		// and the first to start would take the CPU from the others' delivery.
		at := time.Now().Add(releaseLead(len(runs))).UnixNano()
		for _, p := range runs {
			_, _ = fmt.Fprintf(p.stdin, "go %d\n", at)
			p.stdin.Close()
		}
	}
	for i := range runs {
		for waiting := true; waiting; {
			select {
			case <-runs[i].stderr.ready:
				waiting = false
			case j := <-done:
				// A client that ended before the release failed to start: abandon the barrier.
				cancel()
				release()
				drain(done, len(runs)-1)
				if runs[j].err == nil {
					// A client waits for the release; its exec cannot end well before it.
					return nil, lostClient(tg.client, j, ends[j], "before the release")
				}
				return nil, pairError(j, ends[j], runs[j])
			case <-ctx.Done():
				release()
				drain(done, len(runs))
				return nil, fmt.Errorf("pair %d (%s): not at the barrier: %w", i, ends[i].clientPod, ctx.Err())
			}
		}
	}
	var hookErr error
	if hooks.before != nil {
		if hookErr = hooks.before(); hookErr != nil {
			cancel()
		}
	}
	release()
	if hooks.after != nil && hookErr == nil {
		if hookErr = hooks.after(); hookErr != nil {
			cancel()
		}
	}
	drain(done, len(runs))
	if hookErr != nil {
		return nil, hookErr
	}
	reports := make([]agentcmd.RunReport, len(runs))
	for i, p := range runs {
		if p.err != nil {
			return nil, pairError(i, ends[i], p)
		}
		if len(bytes.TrimSpace(p.stdout.Bytes())) == 0 {
			// The client always prints a report.
			return nil, lostClient(tg.client, i, ends[i], "without output")
		}
		if err := json.Unmarshal(p.stdout.Bytes(), &reports[i]); err != nil {
			return nil, fmt.Errorf("pair %d (%s): read the client's report %q: %w", i, ends[i].clientPod, excerpt(p.stdout.String()), err)
		}
	}
	return reports, nil
}

// releaseLead is how far ahead of the release the clients' common start time lies: long
// enough to deliver the release to every client over its exec stream.
func releaseLead(clients int) time.Duration {
	if clients == 1 {
		return 0
	}
	return 100*time.Millisecond + time.Duration(clients)*5*time.Millisecond
}

func drain(done <-chan int, n int) {
	for range n {
		<-done
	}
}

// lostClient notes and says that pair i's client exec ended (when) with no exit status: its
// connection to the API server dropped, which client-go reports as a success.
func lostClient(c *kube.Client, i int, end pairEnd, when string) error {
	c.NoteLostConnection(fmt.Sprintf("an exec in %s/%s ended %s and without exit status", end.clientPod, kube.ClientContainer, when))
	return fmt.Errorf("pair %d (%s): the client's exec ended %s and without exit status (its connection dropped)", i, end.clientPod, when)
}

func pairError(i int, end pairEnd, p *pairRun) error {
	return fmt.Errorf("pair %d (%s): %v: %s", i, end.clientPod, p.err, excerpt(p.stderr.String()))
}

func excerpt(s string) string {
	if len(s) > 300 {
		return s[:300] + "..."
	}
	return s
}

// pairFigures is what the pairs of one sample measured.
type pairFigures struct {
	metrics engine.Metrics
	skew    time.Duration
	raw     string
}

// combine parses every pair's output and combines them into the sample's metrics: the
// catalogue says which figures add up and which are averaged; latency percentiles come from
// the merged histograms of every pair's round trips, never from averaging percentiles.
func combine(eng engine.Engine, ew engine.Workload, reports []agentcmd.RunReport) (pairFigures, error) {
	per := make([]engine.Metrics, len(reports))
	merged := stats.NewHist()
	haveHist := true
	first, last := reports[0].StartNS, reports[0].StartNS
	for i, rep := range reports {
		m, err := eng.Parse(ew, []byte(rep.Stdout))
		if err != nil {
			if rep.ExitCode != 0 {
				return pairFigures{}, fmt.Errorf("pair %d: %s exited %d: %w: %s", i, eng.Name(), rep.ExitCode, err, excerpt(rep.Stderr))
			}
			return pairFigures{}, fmt.Errorf("pair %d: parse %s output: %w", i, eng.Name(), err)
		}
		per[i] = m
		h := rep.Histogram
		if hs, ok := eng.(engine.HistogramSource); ok && h == nil {
			if h, err = hs.Histogram([]byte(rep.Stdout)); err != nil {
				return pairFigures{}, fmt.Errorf("pair %d: %w", i, err)
			}
		}
		if h == nil {
			haveHist = false
		} else {
			merged.Merge(h)
		}
		first, last = min(first, rep.StartNS), max(last, rep.StartNS)
	}
	fig := pairFigures{skew: time.Duration(last - first)}
	if len(reports) == 1 {
		fig.metrics, fig.raw = per[0], reports[0].Stdout
		return fig, nil
	}
	if !haveHist {
		merged = nil
	}
	fig.metrics = aggregate(ew.Kind, per, merged)
	fig.metrics[catalog.StartSkew] = float64(fig.skew) / float64(time.Millisecond)
	raw, err := json.Marshal(rawPairs(reports))
	if err != nil {
		return pairFigures{}, fmt.Errorf("keep the pairs' output: %w", err)
	}
	fig.raw = string(raw)
	return fig, nil
}

// rawPairs keeps each pair's tool output and timing; the histograms are summarised in the
// metrics and would multiply the stored size.
func rawPairs(reports []agentcmd.RunReport) []agentcmd.RunReport {
	out := make([]agentcmd.RunReport, len(reports))
	for i, rep := range reports {
		rep.Histogram = nil
		out[i] = rep
	}
	return out
}

// aggregate combines N pairs' metrics into the sample's: sums, means, merged percentiles, the
// spread of the pairs' rates and Jain's fairness index over them.
func aggregate(kind string, per []engine.Metrics, merged *stats.Hist) engine.Metrics {
	values := map[string][]float64{}
	for _, m := range per {
		for name, v := range m {
			values[name] = append(values[name], v)
		}
	}
	out := engine.Metrics{}
	for name, xs := range values {
		spec, _ := catalog.Lookup(name)
		switch spec.Pairs {
		case catalog.Sum:
			var sum float64
			for _, x := range xs {
				sum += x
			}
			out[name] = sum
		case catalog.Merged:
			// Filled from the histogram below; without one there is no honest figure.
		default:
			out[name] = stats.Summarize(xs).Mean
		}
	}
	if merged != nil && merged.Count() > 0 {
		out[catalog.LatencyMean] = merged.Mean()
		out[catalog.LatencyP50] = merged.Quantile(50)
		out[catalog.LatencyP90] = merged.Quantile(90)
		out[catalog.LatencyP99] = merged.Quantile(99)
	}
	rate := engine.RateMetric(kind)
	if xs := values[rate]; len(xs) == len(per) {
		sorted := slices.Clone(xs)
		slices.Sort(sorted)
		out[rate+catalog.PairMin] = sorted[0]
		out[rate+catalog.PairMedian] = stats.Summarize(sorted).Median
		out[rate+catalog.PairMax] = sorted[len(sorted)-1]
		if j := stats.Jain(xs); j == j {
			out[catalog.Fairness] = j
		}
	}
	return out
}
