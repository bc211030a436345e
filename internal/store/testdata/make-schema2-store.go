//go:build ignore

// make-schema2-store writes schema2.db and schema2.json (see README.md): runs stored by the
// first released cnibench, commit 0c42ef5, whose store had schema version 2, through that
// version's own store API. It builds only in a checkout of that commit.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/cnibench/cnibench/internal/store"
)

// stored is what the generator wrote, for the test to compare with what it reads back.
type stored struct {
	Run     store.Run
	Targets []store.Target
	Samples []store.Sample
}

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: go run make-schema2-store.go OUT.db OUT.json")
		os.Exit(2)
	}
	ctx := context.Background()
	db, err := store.Open(ctx, os.Args[1])
	if err != nil {
		fail(err)
	}
	begin := time.Date(2026, 11, 21, 9, 30, 0, 123456789, time.UTC)
	runs := []stored{
		run("20261121-093000-a1b2", begin, store.StatusComplete, "", []string{"bridge", "cilium-vxlan"}, 3),
		run("20261121-100500-c3d4", begin.Add(35*time.Minute), store.StatusPartial, "interrupted", []string{"bridge"}, 2),
		run("20261121-103000-e5f6", begin.Add(time.Hour), store.StatusFailed, "target bridge: no nodes Ready", []string{"bridge"}, 0),
		run("20261121-110000-0718", begin.Add(90*time.Minute), store.StatusRunning, "", []string{"bridge"}, 1),
	}
	for _, r := range runs {
		if err := write(ctx, db, r); err != nil {
			fail(err)
		}
	}
	if err := db.Close(); err != nil {
		fail(err)
	}
	out, err := json.MarshalIndent(runs, "", "  ")
	if err != nil {
		fail(err)
	}
	if err := os.WriteFile(os.Args[2], append(out, '\n'), 0o644); err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, err)
	os.Exit(1)
}

// run is a run of the default suite of that time: a warm-up round and then rounds of every
// target, path and workload, one sample of the last round failed where there are rounds.
func run(id string, started time.Time, status, note string, targets []string, rounds int) stored {
	r := stored{Run: store.Run{ID: id, Started: started, Status: status, Note: note, Seed: started.Unix() % 1000,
		Version: "v0.1.0", Suite: "targets:\n" + list(targets) + "repetitions: " + fmt.Sprint(rounds) + "\n"}}
	if status != store.StatusRunning {
		r.Run.Finished = started.Add(time.Duration(rounds+1) * 4 * time.Minute)
	}
	for i, name := range targets {
		r.Targets = append(r.Targets, store.Target{RunID: id, Name: name, Fingerprint: map[string]string{
			"kubernetes": "v1.31.2", "kernel": "6.1.0-27-amd64", "cni": strings.Split(name, "-")[0],
			"pod_mtu": fmt.Sprint(1500 - 50*i), "kube_proxy": "iptables"}})
	}
	seq := 0
	at := started.Add(30 * time.Second)
	for round := 0; round <= rounds && rounds > 0; round++ {
		for _, target := range targets {
			for _, path := range []string{"pod-pod-same-node", "pod-pod-cross-node"} {
				for _, workload := range []string{"tcp-stream/1", "tcp-rr/1"} {
					s := sample(id, seq, round, target, path, workload, at)
					if round == rounds && seq%5 == 3 {
						s.Metrics, s.Resources, s.Raw = nil, nil, ""
						s.Error = "iperf3: error - unable to connect to server: Connection refused"
					}
					r.Samples = append(r.Samples, s)
					seq++
					at = at.Add(11*time.Second + time.Duration(seq)*time.Millisecond)
				}
			}
		}
	}
	return r
}

func list(names []string) string {
	var b strings.Builder
	for _, n := range names {
		b.WriteString("  - name: " + n + "\n")
	}
	return b.String()
}

// sample is one measurement as that version's engines reported it.
func sample(run string, seq, round int, target, path, workload string, at time.Time) store.Sample {
	s := store.Sample{RunID: run, Seq: seq, Round: round, Warmup: round == 0, Target: target, Path: path,
		Workload: workload, Started: at, Duration: 10*time.Second + time.Duration(seq)*time.Microsecond}
	x := float64(seq%7) / 10
	if strings.HasPrefix(workload, "tcp-stream") {
		s.Metrics = map[string]float64{"throughput_gbps": 9.5 + x, "retransmits": float64(seq % 3)}
		s.Raw = fmt.Sprintf(`{"start":{"version":"iperf 3.12"},"end":{"sum_received":{"bits_per_second":%g}}}`, (9.5+x)*1e9)
	} else {
		s.Metrics = map[string]float64{"rtt_p50_us": 31 + x, "rtt_p99_us": 58 + x, "transactions_per_s": 30000 - 100*x}
		s.Raw = fmt.Sprintf("sockperf: Summary: Latency is %.3f usec\nsockperf: ---> <MAX> observation = %.3f\n", 31+x, 58+x)
	}
	s.Resources = map[string]float64{"node_cpu_pct": 20 + 10*x, "cpu_seconds": 4 + x, "cpu_s_per_gb": 0.33 - x/10}
	return s
}

func write(ctx context.Context, db *store.DB, r stored) error {
	created := r.Run
	created.Status, created.Finished, created.Note = store.StatusRunning, time.Time{}, ""
	if err := db.CreateRun(ctx, created); err != nil {
		return err
	}
	for _, t := range r.Targets {
		if err := db.AddTarget(ctx, t); err != nil {
			return err
		}
	}
	for _, s := range r.Samples {
		if err := db.AddSample(ctx, s); err != nil {
			return err
		}
	}
	if r.Run.Status == store.StatusRunning {
		return nil // killed: that version could not tell
	}
	return db.FinishRun(ctx, r.Run.ID, r.Run.Status, r.Run.Finished, r.Run.Note)
}
