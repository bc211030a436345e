package report

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"github.com/cnibench/cnibench/internal/testsupport"
	"image"
	"image/png"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/cnibench/cnibench/internal/analysis"
	"github.com/cnibench/cnibench/internal/engine"
	"github.com/cnibench/cnibench/internal/record"
	"github.com/cnibench/cnibench/internal/suite"
)

// synthWorkloads are the workloads of the synthetic documents, one of each kind.
func synthWorkloads() []string {
	return []string{"tcp-stream/1", "udp-stream/1300B@500M", "tcp-rr/64B", "tcp-crr/64B"}
}

// synthChartsPerWorkload is how many charts WriteHTML draws for each synthetic workload:
// one per headline metric, the three latency percentiles sharing one chart.
func synthChartsPerWorkload() map[string]int {
	return map[string]int{
		"tcp-stream/1":          4, // throughput, retransmits, cpu_s_per_gb, node_cpu_pct
		"udp-stream/1300B@500M": 6, // throughput, packets/s, loss, jitter, cpu_s_per_gb, node_cpu_pct
		"tcp-rr/64B":            5, // transactions/s, mean latency, percentiles, cpu_s_per_1k_tx, node_cpu_pct
		"tcp-crr/64B":           5, // connections/s, mean latency, percentiles, cpu_s_per_1k_tx, node_cpu_pct
	}
}

// synthMetrics returns plausible metrics and resource figures of one sample; speed scales
// rates up and latencies down so that paths differ visibly.
func synthMetrics(workload string, speed float64, rng *rand.Rand) (metrics, resources map[string]float64) {
	noise := func(v float64) float64 { return v * (1 + 0.08*(rng.Float64()-0.5)) }
	kind := strings.SplitN(workload, "/", 2)[0]
	cpu := noise(22 / speed)
	switch kind {
	case engine.TCPStream:
		metrics = map[string]float64{engine.MetricThroughput: noise(14 * speed), engine.MetricRetransmits: noise(800 / speed),
			engine.MetricSenderCPU: noise(60), engine.MetricReceiverCPU: noise(70)}
		resources = map[string]float64{"cpu_s_per_gb": noise(0.4 / speed), "node_cpu_pct": cpu, "host_cpu_seconds": noise(9)}
	case engine.UDPStream:
		metrics = map[string]float64{engine.MetricThroughput: noise(0.49 * speed), engine.MetricPacketRate: noise(47000 * speed),
			engine.MetricLoss: noise(2 / speed), engine.MetricJitter: noise(0.01 / speed), engine.MetricSenderCPU: noise(30), engine.MetricReceiverCPU: noise(20)}
		resources = map[string]float64{"cpu_s_per_gb": noise(0.9 / speed), "node_cpu_pct": cpu}
	default:
		lat := 40 / speed
		rate := engine.MetricTransactionRate
		if kind == engine.TCPCRR {
			lat, rate = 160/speed, engine.MetricConnectionRate
		}
		metrics = map[string]float64{rate: noise(1e6 / lat), engine.MetricLatencyMean: noise(lat * 1.1), engine.MetricLatencyP50: noise(lat),
			engine.MetricLatencyP90: noise(lat * 1.6), engine.MetricLatencyP99: noise(lat * 3)}
		resources = map[string]float64{"cpu_s_per_1k_tx": noise(0.02 / speed), "node_cpu_pct": cpu}
	}
	return metrics, resources
}

// synthDocument builds the Document of a run as the results command would, through
// Summarize: reps measured samples per cell plus one warm-up, and one failed sample.
func synthDocument(runID string, targets, paths []string, reps int, seed uint64) Document {
	rng := rand.New(rand.NewPCG(seed, 7))
	speedOf := map[string]float64{suite.HostNetwork: 1, suite.SameNode: 1.25, suite.CrossNode: 0.7, suite.PodToService: 0.6, suite.Localhost: 1.8}
	start := time.Date(2026, 3, 14, 9, 26, 53, 0, time.UTC)
	d := Document{Run: record.Run{ID: runID, Started: start, Finished: start.Add(47 * time.Minute), Status: record.StatusComplete,
		Suite: "paths: [host-network, same-node]\nrepetitions: 5\n# a <b>comment</b>\n", Seed: 42, Version: "v0.1.0-test"}}
	var samples []record.Sample
	seq := 0
	for ti, t := range targets {
		d.Targets = append(d.Targets, record.Target{RunID: runID, Name: t, Fingerprint: map[string]string{
			"cluster": t, "kubernetes_version": "v1.34.2", "cni": []string{"flannel", "cilium", "bridge"}[ti%3],
			"kube_proxy_mode": "iptables", "node_a_kernel": "6.1.0-28-amd64", "pod_mtu": fmt.Sprint(1450 + 50*(ti%2)),
			"offload_gro": "on", "cpu_model": "AMD EPYC 7B13",
		}})
		for _, p := range paths {
			speed, ok := speedOf[p]
			if !ok {
				speed = 0.9
			}
			speed *= 1 - 0.15*float64(ti)
			for _, w := range synthWorkloads() {
				for round := 0; round <= reps; round++ {
					m, r := synthMetrics(w, speed, rng)
					seq++
					samples = append(samples, record.Sample{RunID: runID, Seq: seq, Round: round, Warmup: round == 0,
						Target: t, Path: p, Workload: w, Metrics: m, Resources: r})
				}
			}
		}
	}
	samples = append(samples, record.Sample{RunID: runID, Seq: seq + 1, Round: 1, Target: targets[0], Path: paths[len(paths)-1],
		Workload: "tcp-stream/1", Error: "iperf3: connection refused"})
	d.Rows, d.Verdict, d.Rounds = analysis.Summarize(samples), analysis.Verdict(samples), analysis.Rounds(samples)
	return d
}

// svgFragments returns every <svg>...</svg> element of a page.
func svgFragments(page string) []string {
	return regexp.MustCompile(`(?s)<svg .*?</svg>`).FindAllString(page, -1)
}

// checkXML fails unless s is well-formed XML.
func checkXML(t *testing.T, what, s string) {
	t.Helper()
	dec := xml.NewDecoder(strings.NewReader(s))
	for {
		_, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			t.Fatalf("%s is not well-formed XML: %v\n%s", what, err, s)
		}
	}
}

// checkTagsBalanced is a small HTML tokenizer check: every non-void element that is opened
// is closed, in order. Text never holds a raw "<" (the template escapes it), so a regexp
// finds every tag.
func checkTagsBalanced(t *testing.T, page string) {
	t.Helper()
	void := map[string]bool{"meta": true, "br": true, "img": true, "input": true, "link": true, "hr": true, "!doctype": true}
	var stack []string
	for _, m := range regexp.MustCompile(`<(/?)([!a-zA-Z][a-zA-Z0-9]*)[^>]*?(/?)>`).FindAllStringSubmatch(page, -1) {
		name := strings.ToLower(m[2])
		switch {
		case void[name] || m[3] == "/":
		case m[1] == "":
			stack = append(stack, name)
		case len(stack) == 0 || stack[len(stack)-1] != name:
			t.Fatalf("</%s> closes %v", name, stack)
		default:
			stack = stack[:len(stack)-1]
		}
	}
	if len(stack) > 0 {
		t.Fatalf("unclosed elements: %v", stack)
	}
}

func writeHTML(t *testing.T, docs ...Document) string {
	t.Helper()
	var b bytes.Buffer
	if err := WriteHTML(&b, docs); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestWriteHTMLStructure(t *testing.T) {
	paths := []string{suite.HostNetwork, suite.SameNode, suite.CrossNode}
	page := writeHTML(t, synthDocument("20260314-092653-ab12", []string{"flannel", "cilium"}, paths, 5, 1))
	checkTagsBalanced(t, page)
	// The verdict comes first, above the environment.
	v, env := strings.Index(page, `<h2 id="verdict">`), strings.Index(page, `<h2 id="environment">`)
	if v < 0 || v > env || !strings.Contains(page[v:env], "tcp-stream/1") || !strings.Contains(page[v:env], "flannel") {
		t.Errorf("no verdict above the environment (at %d, environment at %d)", v, env)
	}

	svgs := svgFragments(page)
	want := 0
	for _, n := range synthChartsPerWorkload() {
		want += n
	}
	// Beside the bar charts: a rounds chart per cell, and the verdict's two forest plots
	// (ratios, and loss on the difference scale).
	want += len(paths)*len(synthWorkloads()) + 2
	if len(svgs) != want || strings.Count(page, "<svg") != want {
		t.Fatalf("got %d <svg> (%d complete), want one per chart: %d", strings.Count(page, "<svg"), len(svgs), want)
	}
	for i, s := range svgs {
		checkXML(t, fmt.Sprintf("chart %d", i), s)
	}
	for _, w := range synthWorkloads() {
		sec := page[strings.Index(page, `<section id="w-`+anchor(w)+`"`):]
		sec = sec[:strings.Index(sec, "</section>")]
		if got := strings.Count(sec, "<svg"); got != synthChartsPerWorkload()[w]+len(paths) {
			t.Errorf("%s: %d charts, want %d and a rounds chart per path", w, got, synthChartsPerWorkload()[w])
		}
	}
	for _, s := range []string{
		"20260314-092653-ab12", "complete", "2026-03-14 09:26:53Z", "<td>42</td>", "47m0s", // header
		"<details><summary>Suite of run", "# a &lt;b&gt;comment&lt;/b&gt;", // suite YAML, escaped
		"<th>offload_gro</th>", "<th>cpu_model</th>", `class="differs"`, // every fingerprint key, differences marked
		"<b>Higher is better</b>", "<code>throughput_gbps</code>", "<b>Lower is better</b>", "<code>cpu_s_per_gb</code>",
		"latency percentiles", "×host", "baseline", "(+1 failed)", ">p99 ", " host<", // ×host labels on bars
		"Other metrics of tcp-stream/1", "sender_cpu_pct",
	} {
		if !strings.Contains(page, s) {
			t.Errorf("page lacks %q", s)
		}
	}
	// One target per run: labels are plain target names.
	if strings.Contains(page, "20260314-092653-ab12/flannel") {
		t.Error("single-run report labels targets RUN/TARGET")
	}
}

// TestWriteHTMLOffline checks that the page can make no request: the only URL is the SVG
// namespace, which browsers never fetch.
func TestWriteHTMLOffline(t *testing.T) {
	page := writeHTML(t, synthDocument("r1", []string{"a"}, suite.AllPaths(), 3, 2))
	rest := strings.ReplaceAll(page, `xmlns="http://www.w3.org/2000/svg"`, "")
	for _, s := range []string{"http://", "https://", "//cdn", "src=", "url(", "@import", "@font-face", "<link", "<script", "<img"} {
		if strings.Contains(rest, s) {
			i := strings.Index(rest, s)
			t.Errorf("page contains %q: ...%s...", s, rest[max(0, i-80):min(len(rest), i+80)])
		}
	}
	if !strings.Contains(page, `content="default-src 'none'; style-src 'unsafe-inline'"`) {
		t.Error("no Content-Security-Policy forbidding fetches")
	}
}

func TestWriteHTMLEscapes(t *testing.T) {
	evil := `<script>alert("x")</script>`
	d := synthDocument("r1", []string{evil, "b&b"}, []string{suite.HostNetwork, suite.SameNode}, 3, 3)
	d.Targets[0].Fingerprint["<img src=x>"] = "</td><script>"
	d.Run.Note = "<b>note</b>"
	page := writeHTML(t, d)
	if strings.Contains(page, "<script") || strings.Contains(page, "<img") || strings.Contains(page, "<b>note") {
		t.Fatal("target name, fingerprint or note reached the page unescaped")
	}
	if !strings.Contains(page, "&lt;script&gt;") {
		t.Error("escaped target name missing")
	}
	checkTagsBalanced(t, page)
	for i, s := range svgFragments(page) {
		checkXML(t, fmt.Sprintf("chart %d", i), s)
		if !strings.Contains(s, "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;") || !strings.Contains(s, "b&amp;b") {
			t.Errorf("chart %d lacks the escaped target names", i)
		}
	}
}

func TestWriteHTMLSeveralRuns(t *testing.T) {
	paths := []string{suite.HostNetwork, suite.CrossNode}
	a := synthDocument("20260101-000000-aaaa", []string{"kind"}, paths, 3, 4)
	b := synthDocument("20260102-000000-bbbb", []string{"kind"}, paths, 3, 5)
	page := writeHTML(t, a, b)
	for _, s := range []string{"20260101-000000-aaaa/kind", "20260102-000000-bbbb/kind"} {
		if !strings.Contains(page, "<th>"+s+"</th>") || !strings.Contains(page, ">"+s+"</text>") {
			t.Errorf("target %s missing from environment table or chart group headings", s)
		}
	}
	// Same target name in two runs: two separate rows per path, never pooled.
	if got := strings.Count(page, "<tr><td>20260101-000000-aaaa/kind</td><td>cross-node</td><td>throughput_gbps ↑</td>"); got != 2 {
		t.Errorf("run a's cross-node throughput appears in %d tables, want 2 (tcp-stream, udp-stream)", got)
	}
}

func TestWriteHTMLSingleSampleHasNoWhisker(t *testing.T) {
	d := synthDocument("r1", []string{"a"}, []string{suite.HostNetwork, suite.SameNode}, 1, 6)
	for _, s := range svgFragments(writeHTML(t, d)) {
		if strings.Contains(s, "NaN") {
			t.Fatalf("NaN in chart:\n%s", s)
		}
		if got := strings.Count(s, "<path "); got != 1 { // the legend's whisker only
			t.Fatalf("n=1 chart has %d whisker paths, want only the legend's", got)
		}
	}
}

func TestWriteHTMLNoRuns(t *testing.T) {
	if err := WriteHTML(io.Discard, nil); err == nil {
		t.Fatal("no error for an empty report")
	}
}

// runChromium runs headless chromium on a file with the flags that keep it off the network.
func runChromium(t *testing.T, bin string, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	base := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-extensions",
		"--hide-scrollbars", "--force-device-scale-factor=1", "--force-color-profile=srgb",
		"--user-data-dir=" + t.TempDir()}
	cmd := exec.CommandContext(ctx, bin, append(base, args...)...)
	cmd.WaitDelay = 10 * time.Second // chromium's helpers may hold the pipes after it exits
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %v: %v\n%s", args, err, stderr.String())
	}
	return stdout.Bytes()
}

// barRuns counts horizontal runs of at least minLen pixels of colour (within tol on each
// channel). Legend swatches are 11 px wide, so long runs can only come from bars.
func barRuns(img image.Image, colour string, minLen int, tol int) (runs, pixels int) {
	var want [3]int
	fmt.Sscanf(colour, "#%02x%02x%02x", &want[0], &want[1], &want[2])
	near := func(a uint32, b int) bool { d := int(a>>8) - b; return d <= tol && d >= -tol }
	bounds := img.Bounds()
	for y := bounds.Min.Y; y < bounds.Max.Y; y++ {
		n := 0
		for x := bounds.Min.X; x <= bounds.Max.X; x++ {
			match := false
			if x < bounds.Max.X {
				r, g, b, _ := img.At(x, y).RGBA()
				match = near(r, want[0]) && near(g, want[1]) && near(b, want[2])
			}
			if match {
				n++
				pixels++
				continue
			}
			if n >= minLen {
				runs++
			}
			n = 0
		}
	}
	return runs, pixels
}

// TestHTMLInBrowser opens a report in a real browser, offline, and checks from the
// screenshot that the bars of every path were painted, and from the DOM that the charts
// are SVG elements, not text.
func TestHTMLInBrowser(t *testing.T) {
	bin := testsupport.Chromium(t)
	dir := t.TempDir()
	paths := []string{suite.HostNetwork, suite.SameNode, suite.CrossNode, suite.PodToService, suite.Localhost}
	d := synthDocument("20260314-092653-ab12", []string{"kind-flannel", "kind-cilium", "kind-bridge"}, paths, 5, 8)
	file := filepath.Join(dir, "report.html")
	f, err := os.Create(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteHTML(f, []Document{d}); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	shot := filepath.Join(dir, "report.png")
	runChromium(t, bin, "--window-size=1280,4800", "--screenshot="+shot, "file://"+file)
	data, err := os.ReadFile(shot)
	if err != nil {
		t.Fatalf("no screenshot: %v", err)
	}
	if keep := os.Getenv("CNIBENCH_REPORT_SCREENSHOT"); keep != "" { // to look at it
		if err := os.WriteFile(keep, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("decode screenshot: %v", err)
	}
	if b := img.Bounds(); b.Dx() != 1280 || b.Dy() != 4800 {
		t.Fatalf("screenshot is %v, want 1280x4800", b)
	}
	colours := newPathColours(paths)
	for _, p := range paths {
		// The first workload's four charts are on screen: 3 targets x 16 px rows per bar each.
		runs, pixels := barRuns(img, colours.of(p), 30, 3)
		t.Logf("%s %s: %d bar rows, %d pixels", p, colours.of(p), runs, pixels)
		if runs < 4*3*12 || pixels < 8000 {
			t.Errorf("path %s: only %d pixel rows of bars (%d pixels) of colour %s in the screenshot", p, runs, pixels, colours.of(p))
		}
	}

	dom := string(runChromium(t, bin, "--dump-dom", "file://"+file))
	want := 0
	for _, n := range synthChartsPerWorkload() {
		want += n
	}
	// And the plots: a rounds chart per cell, the verdict's ratios and loss differences.
	if got, plots := strings.Count(dom, "<svg "), len(paths)*len(synthWorkloads())+2; got != want+plots {
		t.Errorf("DOM has %d <svg> elements, want %d bar charts and %d plots", got, want, plots)
	}
	if got := strings.Count(dom, "<rect "); got < want*len(paths)*3 {
		t.Errorf("DOM has %d <rect> elements, want at least a bar per chart, path and target (%d)", got, want*len(paths)*3)
	}
}
