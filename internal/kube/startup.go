package kube

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
)

// Latencies summarises how long a set of pods took from their create to a state, in ms.
type Latencies struct {
	N             int
	P50, P90, P99 float64
}

// PodLatencies are a set of pods' times from create to Running and to Ready (ClusterLoader2's
// pod startup latency, timed here by the watch events' arrival rather than by the API's
// one-second timestamps).
type PodLatencies struct {
	Running, Ready Latencies
}

// Stage is one level of a deploy: the pods that brought the run to Pairs pairs, created at once.
type Stage struct {
	Pairs    int           // pairs up after this stage
	NewPairs int           // pairs this stage created
	Took     time.Duration // from the first create to the last pod Ready
	Pods     PodLatencies
}

// podTimes is what the tracker knows of one pod.
type podTimes struct {
	created, running, ready time.Time
	last                    *corev1.Pod
}

// podTracker watches a run's pods and notes when each was seen Running and Ready.
type podTracker struct {
	mu      sync.Mutex
	pods    map[string]*podTimes
	changed chan struct{} // closed and replaced on every event
	cancel  context.CancelFunc
	done    chan struct{}
	err     error
}

// trackPods starts a watch on the pods matching selector. The watch resumes from its last
// resource version when the API server closes it.
func (c *Client) trackPods(ctx context.Context, ns, selector string) (*podTracker, error) {
	list, err := c.CS.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return nil, fmt.Errorf("list pods (%s): %w", selector, err)
	}
	wctx, cancel := context.WithCancel(ctx)
	rw, err := watchtools.NewRetryWatcherWithContext(wctx, list.ResourceVersion, &cache.ListWatch{
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.LabelSelector = selector
			return c.CS.CoreV1().Pods(ns).Watch(ctx, o)
		},
	})
	if err != nil {
		cancel()
		return nil, fmt.Errorf("watch pods (%s): %w", selector, err)
	}
	t := &podTracker{pods: map[string]*podTimes{}, changed: make(chan struct{}), cancel: cancel, done: make(chan struct{})}
	go t.run(rw)
	return t, nil
}

func (t *podTracker) run(rw *watchtools.RetryWatcher) {
	defer close(t.done)
	defer rw.Stop()
	for ev := range rw.ResultChan() {
		now := time.Now()
		if ev.Type == watch.Error {
			t.mu.Lock()
			t.err = fmt.Errorf("pod watch: %v", ev.Object)
			t.mu.Unlock()
			continue
		}
		p, ok := ev.Object.(*corev1.Pod)
		if !ok {
			continue
		}
		t.mu.Lock()
		pt := t.entry(p.Name)
		pt.last = p
		if pt.running.IsZero() && p.Status.Phase == corev1.PodRunning {
			pt.running = now
		}
		if pt.ready.IsZero() && podReady(p) {
			pt.ready = now
			if pt.running.IsZero() {
				pt.running = now
			}
		}
		close(t.changed)
		t.changed = make(chan struct{})
		t.mu.Unlock()
	}
}

func (t *podTracker) entry(name string) *podTimes {
	pt := t.pods[name]
	if pt == nil {
		pt = &podTimes{}
		t.pods[name] = pt
	}
	return pt
}

func (t *podTracker) stop() {
	t.cancel()
	<-t.done
}

// created notes when a pod's create was sent.
func (t *podTracker) created(name string, at time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.entry(name).created = at
}

// pod returns the last state seen of a pod.
func (t *podTracker) pod(name string) *corev1.Pod {
	t.mu.Lock()
	defer t.mu.Unlock()
	if pt := t.pods[name]; pt != nil {
		return pt.last
	}
	return nil
}

// waitReady waits until every named pod is Ready, failing early on errors that will not heal.
func (t *podTracker) waitReady(ctx context.Context, names []string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		t.mu.Lock()
		var waiting []string
		var stuckErr error
		for _, n := range names {
			pt := t.pods[n]
			if pt == nil || pt.ready.IsZero() {
				waiting = append(waiting, n)
			}
			if pt != nil && pt.last != nil {
				if why := stuck(pt.last); why != "" && stuckErr == nil {
					stuckErr = fmt.Errorf("pod %s on %s cannot start: %s", n, pt.last.Spec.NodeName, why)
				}
			}
		}
		changed, werr := t.changed, t.err
		t.mu.Unlock()
		switch {
		case len(waiting) == 0:
			return nil
		case stuckErr != nil:
			return stuckErr
		}
		select {
		case <-changed:
		case <-ctx.Done():
			if werr != nil {
				return fmt.Errorf("%d of %d pods not ready: %w", len(waiting), len(names), werr)
			}
			return fmt.Errorf("%d of %d pods not ready after %s, e.g. %s: %s", len(waiting), len(names), timeout,
				waiting[0], describe(t.pod(waiting[0])))
		}
	}
}

// latencies summarises the named pods' create-to-Running and create-to-Ready times.
func (t *podTracker) latencies(names []string) PodLatencies {
	t.mu.Lock()
	defer t.mu.Unlock()
	var running, ready []float64
	for _, n := range names {
		pt := t.pods[n]
		if pt == nil || pt.created.IsZero() {
			continue
		}
		if !pt.running.IsZero() {
			running = append(running, ms(pt.running.Sub(pt.created)))
		}
		if !pt.ready.IsZero() {
			ready = append(ready, ms(pt.ready.Sub(pt.created)))
		}
	}
	return PodLatencies{Running: summarizeMS(running), Ready: summarizeMS(ready)}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// summarizeMS gives nearest-rank percentiles, as ClusterLoader2 reports them.
func summarizeMS(xs []float64) Latencies {
	if len(xs) == 0 {
		return Latencies{P50: math.NaN(), P90: math.NaN(), P99: math.NaN()}
	}
	s := slices.Clone(xs)
	sort.Float64s(s)
	at := func(p float64) float64 {
		rank := int(math.Ceil(p / 100 * float64(len(s))))
		return s[min(max(rank, 1), len(s))-1]
	}
	return Latencies{N: len(s), P50: at(50), P90: at(90), P99: at(99)}
}

// String is the latencies in a progress line.
func (l PodLatencies) String() string {
	if l.Ready.N == 0 {
		return "no pods"
	}
	return strings.Join([]string{
		fmt.Sprintf("%d pods", l.Ready.N),
		fmt.Sprintf("Running p50 %.0f ms p99 %.0f ms", l.Running.P50, l.Running.P99),
		fmt.Sprintf("Ready p50 %.0f ms p99 %.0f ms", l.Ready.P50, l.Ready.P99),
	}, ", ")
}
