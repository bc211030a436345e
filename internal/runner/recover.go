package runner

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/cnibench/cnibench/internal/kube"
	"github.com/cnibench/cnibench/internal/record"
	"k8s.io/apimachinery/pkg/util/wait"
)

// sampleAttempts bounds the tries of one sample. The tools fail now and then for reasons of
// their own (iperf3 3.12's server sometimes resets its control connection after a test), and
// a cluster may lose a pod or its API server for a while; a sample that fails every time is
// stored as failed.
const sampleAttempts = 3

// sampleBackoff spaces a sample's attempts: a second before the second, two before the third.
var sampleBackoff = wait.Backoff{Duration: time.Second, Factor: 2, Steps: sampleAttempts}

// apiOutageWait bounds how long a run waits for an API server that stopped answering before
// it takes the target's control plane for lost: a restart or a network outage of a minute
// fits in it, and a cluster that is gone for good does not hold the run for long.
const apiOutageWait = 2 * time.Minute

// measureWithRetry runs a step and tries it again when it fails, after looking for what
// failed it outside the tool and mending that (recover). A sample that lost an attempt to
// such a cause is reported, by a status line and in the run's note, whether its next attempt
// measured it or not.
func (r *run) measureWithRetry(ctx context.Context, tg *target, st Step) record.Sample {
	var s record.Sample
	var causes []string
	attempt := 0
	_ = wait.ExponentialBackoffWithContext(ctx, sampleBackoff, func(ctx context.Context) (bool, error) {
		attempt++
		var err error
		if s, err = r.measure(ctx, tg, st); err == nil || ctx.Err() != nil {
			return true, nil
		}
		rec := r.recover(ctx, tg, s.Started, err)
		if rec.lost.any() {
			// Nothing is restarted under a run: a failure a lost component explains is final.
			tg.lost = rec.lost
			s.Error = rec.lost.explain(s.Error)
			return true, nil
		}
		if rec.cause != "" {
			causes = append(causes, rec.cause)
			s.Error = rec.cause + ": " + s.Error
		}
		if rec.final || attempt == sampleAttempts || ctx.Err() != nil {
			return true, nil
		}
		r.progress("sample %d (%s %s %s) failed, trying again: %s", st.Seq, s.Target, s.Path, s.Workload, s.Error)
		return false, nil
	})
	if len(causes) > 0 && ctx.Err() == nil {
		line := lostLine(s, causes, attempt)
		r.lostSamples = append(r.lostSamples, line)
		r.progress("%s", line)
	}
	return s
}

// lostLine says what a sample lost and what became of it: "1 sample of tcp-rr/64B cross-node
// on remote lost: pod cnibench-server-b-0 (server-b) deleted mid-sample, made again in 3.1s;
// retried".
func lostLine(s record.Sample, causes []string, attempts int) string {
	outcome := "retried"
	switch {
	case s.Error != "" && attempts > 1:
		outcome = "retried, and stored as failed"
	case s.Error != "":
		outcome = "stored as failed"
	}
	return fmt.Sprintf("1 sample of %s %s on %s lost: %s; %s", s.Cell().WorkloadLabel(), s.Path, s.Target, strings.Join(causes, "; "), outcome)
}

// recovery is what the run found, and did, after a failed attempt of a sample.
type recovery struct {
	// cause says what outside the tool failed the attempt and how the run mended it; "" when
	// it found nothing wrong with the cluster: the tool's own failure, tried again as it is.
	cause string
	lost  Loss // lasting: the sample is not tried again
	// final: what failed could not be mended (a gone pod could not be made again), so trying
	// the sample again would fail the same way.
	final bool
}

// recover looks outside the tool for what failed an attempt begun at began: it asks the
// provider what of the cluster is down for good, waits for an API server that stopped
// answering (up to apiOutageWait; then the control plane counts as lost), names a connection
// to it that broke, and makes the run's pods that were deleted, evicted or failed again.
func (r *run) recover(ctx context.Context, tg *target, began time.Time, err error) recovery {
	failed := time.Now()
	if l := tg.provider.Lost(ctx, tg.client, tg.nodes); l.any() {
		return recovery{lost: l}
	}
	var causes []string
	waited, aerr := tg.client.AwaitAPI(ctx, apiOutageWait)
	switch {
	case aerr != nil && ctx.Err() != nil:
		return recovery{}
	case aerr != nil:
		return recovery{lost: Loss{Down: []string{aerr.Error()}, ControlPlane: true}}
	case waited > 0:
		// The attempt's own error follows the cause in the sample's: not repeated here.
		causes = append(causes, fmt.Sprintf("the API server at %s stopped answering; it answered again %.0fs after the attempt failed",
			tg.client.Server, time.Since(failed).Seconds()))
	case kube.Unreachable(err):
		causes = append(causes, fmt.Sprintf("the connection to the API server at %s broke", tg.client.Server))
	default:
		// The attempt's own error may only say that it timed out, after an exec of it lost
		// its connection and the server came back.
		if how := tg.client.LostConnectionSince(began); how != "" {
			causes = append(causes, fmt.Sprintf("the connection to the API server at %s broke (%s)", tg.client.Server, how))
		}
	}
	c, mended := r.replaceGone(ctx, tg)
	if c != "" {
		causes = append(causes, c)
	}
	return recovery{cause: strings.Join(causes, "; "), final: !mended}
}

// replaceGone makes the target's pods that were deleted, evicted or failed again, as they
// were deployed, and says which and how long it took ("" when none was gone); mended is false
// when a gone pod could not be made again.
func (r *run) replaceGone(ctx context.Context, tg *target) (what string, mended bool) {
	if tg.fixture == nil {
		return "", true
	}
	gone, err := tg.client.Gone(ctx, tg.fixture)
	if err != nil {
		return fmt.Sprintf("the run's pods could not be checked (%v)", err), true
	}
	if len(gone) == 0 {
		return "", true
	}
	names := make([]string, len(gone))
	for i, g := range gone {
		names[i] = g.String()
	}
	what = strings.Join(names, ", ") + " mid-sample"
	took, err := tg.client.Replace(ctx, tg.fixture, gone)
	if err == nil && len(tg.profile.Offloads) > 0 {
		// A new pod's veth has the kernel's offloads, not the profile's.
		_, err = r.applyOffloads(ctx, tg, tg.profile)
	}
	if err != nil {
		return fmt.Sprintf("%s, and making it again failed: %v", what, err), false
	}
	return fmt.Sprintf("%s, made again in %.1fs", what, took.Seconds()), true
}

// brokenConnections says, a line per cluster, how often the run's connection to its API server
// broke: an outage that cost no sample (an exec of counters read again) is still one the user
// should know of, and one that cost samples is listed with them (lostLine).
func (r *run) brokenConnections() []string {
	var lines []string
	seen := map[*kube.Client]bool{}
	for _, tg := range r.targets {
		if tg.client == nil || seen[tg.client] {
			continue
		}
		seen[tg.client] = true
		if n, last := tg.client.LostConnections(); n == 1 {
			lines = append(lines, fmt.Sprintf("the connection to the API server at %s broke once during the run (%s)", tg.client.Server, last))
		} else if n > 1 {
			lines = append(lines, fmt.Sprintf("the connection to the API server at %s broke %d times during the run (the last: %s)", tg.client.Server, n, last))
		}
	}
	return lines
}
