// Package catalog is the one catalogue of every figure cnibench stores: its name, unit,
// direction, whether it is a headline, and how the values of concurrent pairs combine into a
// sample's figure. Engines, the runner, the report, compare and export all read it here.
package catalog

import (
	"math"
	"strings"
)

// Aggregation says how a metric of N concurrent client/server pairs becomes one figure.
type Aggregation int

// Aggregations.
const (
	// None: not a per-pair figure (costs, setup latencies, pair statistics themselves).
	None Aggregation = iota
	// Sum: the pairs' values add up (throughput, rates, counts).
	Sum
	// Mean: the pairs' values are averaged (jitter, loss, per-process CPU %).
	Mean
	// Merged: computed from the pairs' merged latency histograms, never averaged.
	Merged
)

// Spec is the metadata of one catalog.
type Spec struct {
	Name           string
	Unit           string
	Description    string
	HigherIsBetter bool
	// Headline metrics are in the terminal table, the ranking and the verdicts; the others
	// are in JSON, exports and the report's detail.
	Headline bool
	Pairs    Aggregation
}

// Names of the metrics.
const (
	Throughput      = "throughput_gbps"
	Retransmits     = "retransmits"
	Loss            = "loss_pct"
	RFC2544         = "rfc2544_gbps"
	Jitter          = "jitter_ms"
	PacketRate      = "packets_per_s"
	LatencyMean     = "latency_mean_us"
	LatencyP50      = "latency_p50_us"
	LatencyP90      = "latency_p90_us"
	LatencyP99      = "latency_p99_us"
	TransactionRate = "transactions_per_s"
	ConnectionRate  = "connections_per_s"
	Errors          = "errors"
	SenderCPU       = "sender_cpu_pct"
	ReceiverCPU     = "receiver_cpu_pct"

	// Costs of a sample, from the hosts' and the containers' counters.
	CPUPerGB       = "cpu_s_per_gb"
	PodCPUPerGB    = "pod_cpu_s_per_gb"
	CPUPer1kTx     = "cpu_s_per_1k_tx"
	PodCPUPer1kTx  = "pod_cpu_s_per_1k_tx"
	CPUPerPacket   = "cpu_us_per_pkt"
	NodeCPU        = "node_cpu_pct"
	NodeSteal      = "node_steal_pct"
	HostCPUSeconds = "host_cpu_seconds"
	PodCPUSeconds  = "pod_cpu_seconds"
	HostMemUsed    = "host_mem_used_mib"
	PodMemory      = "pod_mem_mib"

	// Compute workloads, run inside one pod (stress-ng, sysbench).
	CPUOps      = "cpu_ops_per_s"
	MemoryRead  = "memory_read_mbps"
	MemoryWrite = "memory_write_mbps"

	// Memory bandwidth as STREAM measures it (the stream workload).
	StreamCopy  = "stream_copy_mbps"
	StreamScale = "stream_scale_mbps"
	StreamAdd   = "stream_add_mbps"
	StreamTriad = "stream_triad_mbps"

	// Gateway API weighted split (k6 through an HTTPRoute).
	SplitAbsError = "split_abs_error_pp"
	SplitError    = "split_error_pp"
	SplitShare    = "split_share_pct"
	RequestRate   = "requests_per_s"
	HTTPErrors    = "http_error_pct"
	GatewayCPU    = "gateway_cpu_pct"
	GatewayMemory = "gateway_mem_mib"

	// Concurrency: how N pairs shared the path.
	Fairness  = "fairness_jain"
	StartSkew = "start_skew_ms"
)

// Per-pair distribution suffixes of a sample's rate metric: min, median and max over its pairs.
const (
	PairMin    = "_pair_min"
	PairMedian = "_pair_median"
	PairMax    = "_pair_max"
)

// Setup latencies, measured once per run on the pods and objects it creates.
const (
	PodRunningP50  = "pod_running_p50_ms"
	PodRunningP90  = "pod_running_p90_ms"
	PodRunningP99  = "pod_running_p99_ms"
	PodReadyP50    = "pod_ready_p50_ms"
	PodReadyP90    = "pod_ready_p90_ms"
	PodReadyP99    = "pod_ready_p99_ms"
	PodCount       = "pods"
	PodWorkingSet  = "pod_working_set_mib"
	NetReady       = "network_ready_ms"
	ServiceReady   = "service_ready_ms"
	PolicyEnforced = "netpol_enforced_ms"
)

func specs() []Spec {
	return []Spec{
		{Throughput, "Gbit/s", "Goodput measured by the receiver (payload bits per second, all streams; summed over pairs).", true, true, Sum},
		{Retransmits, "segments", "TCP segments retransmitted by the sender over the sample (all streams and pairs).", false, true, Sum},
		{Loss, "%", "UDP datagrams lost in transit: lost / sent * 100 (mean over pairs).", false, true, Mean},
		{RFC2544, "Gbit/s", "RFC 2544 throughput: the highest offered UDP rate whose loss stayed within the search's threshold, found by binary search in trials that share the sample's duration (summed over pairs).", true, true, Sum},
		{Jitter, "ms", "UDP inter-arrival jitter measured by the receiver (RFC 3550 smoothed; mean over pairs).", false, true, Mean},
		{PacketRate, "pkt/s", "UDP datagrams received per second (summed over pairs).", true, true, Sum},
		{LatencyMean, "µs", "Mean round-trip time of one request/response (connect included for tcp-crr).", false, true, Merged},
		{LatencyP50, "µs", "Median round-trip time of one request/response, over every pair's transactions.", false, true, Merged},
		{LatencyP90, "µs", "90th percentile round-trip time, over every pair's transactions.", false, true, Merged},
		{LatencyP99, "µs", "99th percentile round-trip time, over every pair's transactions.", false, true, Merged},
		{TransactionRate, "trans/s", "Request/response exchanges per second (summed over pairs).", true, true, Sum},
		{ConnectionRate, "conn/s", "Connect, request/response, close cycles per second (summed over pairs).", true, true, Sum},
		{Errors, "errors", "Failed connects, reads or writes of the in-house request/response client.", false, true, Sum},
		{CPUOps, "ops/s", "stress-ng cpu stressor (matrixprod) bogo operations per wall-clock second, all threads (summed over pairs).", true, true, Sum},
		{MemoryRead, "MB/s", "sysbench memory, sequential reads through a buffer beyond the cache: bytes read per wall-clock second, all threads (summed over pairs).", true, true, Sum},
		{MemoryWrite, "MB/s", "sysbench memory, sequential writes: bytes written per wall-clock second, all threads (summed over pairs).", true, true, Sum},
		{StreamCopy, "MB/s", "STREAM copy (a = b): the best rate of its iterations, 16 bytes counted per element as STREAM counts them, decimal MB/s, all threads of one pod (mean over pairs: pods sharing the CPUs take turns, and each one's best iteration ran while it had them, so their rates do not add up).", true, true, Mean},
		{StreamScale, "MB/s", "STREAM scale (a = q*b): the best rate of its iterations, 16 bytes per element, decimal MB/s, one pod (mean over pairs).", true, true, Mean},
		{StreamAdd, "MB/s", "STREAM add (a = b + c): the best rate of its iterations, 24 bytes per element, decimal MB/s, one pod (mean over pairs).", true, false, Mean},
		{StreamTriad, "MB/s", "STREAM triad (a = b + q*c): the best rate of its iterations, 24 bytes per element, decimal MB/s, one pod (mean over pairs).", true, false, Mean},
		{SplitAbsError, "pp", "Split accuracy: mean over 5-second windows of |share of the first backend - its weight|, in percentage points.", false, true, Mean},
		{SplitError, "pp", "Signed split error: mean over 5-second windows of (share of the first backend - its weight), in percentage points; negative: it got less than its weight.", false, false, Mean},
		{SplitShare, "%", "Share of the answered requests the first backend served over the sample.", false, false, Mean},
		{RequestRate, "req/s", "HTTP requests answered per second through the gateway (k6; summed over pairs).", true, true, Sum},
		{HTTPErrors, "%", "Requests that failed or were not answered 200 with a backend's name, in % of all.", false, true, Mean},
		{GatewayCPU, "%", "CPU of the Gateway API implementation's container during the sample, in % of one core.", false, true, None},
		{GatewayMemory, "MiB", "Memory of the Gateway API implementation's container at the end of the sample (cgroup usage).", false, true, None},
		{SenderCPU, "%", "CPU time (user+system) of the sending iperf3 process, in % of one core (mean over pairs).", false, false, Mean},
		{ReceiverCPU, "%", "CPU time (user+system) of the receiving iperf3 process, in % of one core (mean over pairs).", false, false, Mean},

		{CPUPerGB, "CPU-s/GB", "Host CPU time per gigabyte received.", false, true, None},
		{PodCPUPerGB, "CPU-s/GB", "Client+server container CPU per gigabyte.", false, false, None},
		{CPUPer1kTx, "CPU-s/1k", "Host CPU time per thousand transactions.", false, true, None},
		{PodCPUPer1kTx, "CPU-s/1k", "Client+server container CPU per thousand transactions.", false, false, None},
		{CPUPerPacket, "CPU-µs/pkt", "Host CPU time per packet through the clients' network interfaces (received and sent; a GSO or GRO segment counts once, as the interface saw it).", false, true, None},
		{NodeCPU, "%", "Busy CPU of the hosts involved, steal time excluded.", false, true, None},
		{NodeSteal, "%", "CPU time the hypervisor gave to other guests while the sample ran (steal): the neighbours' load, not this sample's cost.", false, false, None},
		{HostCPUSeconds, "CPU-s", "Host CPU time during the sample.", false, false, None},
		{PodCPUSeconds, "CPU-s", "Client+server container CPU time.", false, false, None},
		{HostMemUsed, "MiB", "Host memory in use.", false, false, None},
		{PodMemory, "MiB", "Memory charged to a measured pod's containers, mean over the sample's pods: the cost of density.", false, false, None},

		{Fairness, "index", "Jain's fairness index of the pairs' rates: 1 when all pairs got the same, 1/N when one got everything.", true, true, None},
		{StartSkew, "ms", "Spread of the pairs' start times after the barrier released them.", false, false, None},

		{PodRunningP50, "ms", "Pod creation to Running, median over the pods the run created (watch event times).", false, true, None},
		{PodRunningP90, "ms", "Pod creation to Running, 90th percentile.", false, false, None},
		{PodRunningP99, "ms", "Pod creation to Running, 99th percentile.", false, true, None},
		{PodReadyP50, "ms", "Pod creation to Ready, median over the pods the run created.", false, true, None},
		{PodReadyP90, "ms", "Pod creation to Ready, 90th percentile.", false, false, None},
		{PodReadyP99, "ms", "Pod creation to Ready, 99th percentile.", false, true, None},
		{PodCount, "pods", "Pods the figure is computed over.", true, false, None},
		{PodWorkingSet, "MiB", "Memory working set of each of the run's pods, idle after startup (their servers, and the shell that makes an idle client leave at SIGTERM, included), as its node's kubelet reports it from the pod's cgroup (a sandbox's own memory included), mean over the pods.", false, true, None},
		{NetReady, "ms", "A new pod's first connection attempt, made as its container starts, to its first successful connection to a server pod.", false, true, None},
		{ServiceReady, "ms", "A Service's endpoint Ready to the first successful connection through its ClusterIP.", false, true, None},
		{PolicyEnforced, "ms", "A NetworkPolicy's create to the first probe it drops (50 ms resolution).", false, true, None},
	}
}

// Lookup returns a metric's metadata. Pair distribution metrics (NAME_pair_min ...) take the
// unit and direction of NAME.
func Lookup(name string) (Spec, bool) {
	for _, s := range specs() {
		if s.Name == name {
			return s, true
		}
	}
	for _, suffix := range []string{PairMin, PairMedian, PairMax} {
		if base, ok := strings.CutSuffix(name, suffix); ok {
			if s, ok := Lookup(base); ok {
				what := map[string]string{PairMin: "lowest", PairMedian: "median", PairMax: "highest"}[suffix]
				return Spec{Name: name, Unit: s.Unit, Description: "The " + what + " pair's " + base + ".", HigherIsBetter: s.HigherIsBetter}, true
			}
		}
	}
	return Spec{}, false
}

// Bounds is the range a metric's values can take, which its confidence interval must respect:
// every figure cnibench measures is a non-negative quantity, shares of a whole stay within
// it, and a metric it does not know may be anything.
func Bounds(name string) (lo, hi float64) {
	switch name {
	case Loss, NodeCPU, NodeSteal, HTTPErrors, SplitShare:
		return 0, 100
	case Fairness:
		return 0, 1
	case SplitError:
		// Signed: a backend can get less than its weight. |error| is at most 100 points.
		return -100, 100
	case SplitAbsError:
		return 0, 100
	}
	if _, ok := Lookup(name); ok {
		return 0, math.Inf(1)
	}
	return math.Inf(-1), math.Inf(1)
}

// Costs lists the cost figures shown after each workload's own metrics, in display order.
func Costs() []string {
	return []string{CPUPerGB, CPUPer1kTx, CPUPerPacket, NodeCPU, NodeSteal, PodCPUPerGB, PodCPUPer1kTx, HostCPUSeconds, PodCPUSeconds, HostMemUsed, PodMemory}
}

// Concurrency lists the figures of a sample with several pairs, in display order.
func Concurrency() []string { return []string{Fairness, StartSkew} }

// Setup lists the setup latencies in display order.
func Setup() []string {
	return []string{PodRunningP50, PodRunningP90, PodRunningP99, PodReadyP50, PodReadyP90, PodReadyP99, PodCount,
		PodWorkingSet, NetReady, ServiceReady, PolicyEnforced}
}

// Headline reports whether a metric belongs in the terminal table, rankings and verdicts.
func Headline(name string) bool {
	s, ok := Lookup(name)
	return ok && s.Headline
}

// Points reports whether a metric is compared on the difference scale, in its own unit
// (percentage points for loss), rather than as a ratio: a percentage of a whole that is often
// 0, where a ratio does not exist (0 against 0.4 %) or says nothing (0.01 % against 0.1 % is
// x10 and no practical difference).
func Points(name string) bool { return name == Loss }

// VerdictMetric is the figure a verdict and a comparison's headline family are about among the
// metrics a cell has (keys of byName): the first of prefer, a workload kind's own verdict
// metrics (engine.Kind.VerdictMetrics), that it has, else Primary.
func VerdictMetric[V any](prefer []string, byName map[string]V) string {
	for _, m := range prefer {
		if _, has := byName[m]; has {
			return m
		}
	}
	return Primary(byName)
}

// Primary is the one figure of a sample or cell among the metrics it has (keys of byName):
// the first of ProgressOrder, "" when it has none of them. Progress lines, verdicts and
// precision targets are about it.
func Primary[V any](byName map[string]V) string {
	for _, m := range ProgressOrder() {
		if _, ok := byName[m]; ok {
			return m
		}
	}
	return ""
}

// ProgressOrder is the order in which a progress line looks for a sample's one figure.
func ProgressOrder() []string {
	return []string{RFC2544, Throughput, ConnectionRate, SplitAbsError, LatencyP50, CPUOps, MemoryRead, StreamCopy, PodReadyP50, ServiceReady, PolicyEnforced}
}
