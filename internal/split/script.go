// Package split measures a Gateway API weighted split (an HTTPRoute sending Weight % of the
// requests to one backend and the rest to others) with a k6 load test, and turns k6's CSV
// output into figures: request rate, errors, latency percentiles and, per time window, how
// far the share of the weighted backend strayed from its weight.
//
// Each backend pod answers with its own name, so the test tags every response with the pod
// that served it; nothing else in the path needs instrumenting, whichever Gateway
// implementation or CNI carries the traffic. Script writes the k6 test, Argv and Env run it
// writing a CSV, and Summarize reads that CSV back in one streaming pass, so a long test at
// thousands of VUs (hundreds of MB of CSV) needs no more memory than a short one.
//
// The package only writes the script and argv and reads the CSV: running k6 (in a pod, or
// locally in tests) is the caller's job, as in package engine.
package split

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"time"
)

// Names shared by the script and the summary: they are the contract between the two.
const (
	// CounterName is the k6 Counter the script increments once per response, tagged with
	// the backend that answered. Summarize counts requests, errors and shares from it alone.
	CounterName = "cnb_backend"
	// BackendTag is the Counter's tag holding the answering pod's name.
	BackendTag = "backend"
	// ErrorBackend is BackendTag's value for a response no backend can be credited with:
	// a status other than 200, a transport error, or a body that is not a pod name. A pod
	// actually named "error" would be indistinguishable from failures, so do not name one so.
	ErrorBackend = "error"
	// durationMetric is k6's built-in per-request latency (ms, connect to last byte).
	durationMetric = "http_req_duration"
)

// Limits and defaults of a test, enforced by ScriptOptions.Validate.
const (
	// MaxVUs bounds the virtual users of one k6 process: far beyond it one process is
	// limited by its own CPU and the test measures k6 rather than the path.
	MaxVUs = 20000
	// MaxDuration is the longest test; Summarize's window table is sized by it.
	MaxDuration = 24 * time.Hour
	// DefaultTimeout is the per-request timeout when ScriptOptions.Timeout is zero. k6's own
	// default (60 s) would let one stuck request delay the end of a short sample by a
	// minute; 10 s is still far above any latency a working path shows.
	DefaultTimeout = 10 * time.Second
)

// ScriptOptions is one sample of a split test.
type ScriptOptions struct {
	// URL is the absolute http(s) URL every request GETs: the Gateway's address
	// (http://10.96.0.50:8000/), or a pod IP when measuring without a Gateway.
	URL string
	// Host, if not empty, is sent as the Host header, for an HTTPRoute matching on
	// hostnames while URL names the Gateway by IP.
	Host string
	// VUs is the number of virtual users, each looping on one request at a time.
	VUs int
	// Duration is how long the VUs loop, in whole seconds (1 s to MaxDuration).
	Duration time.Duration
	// Timeout is the per-request timeout (0: DefaultTimeout). It is also the graceful stop:
	// requests in flight when Duration ends are waited for so their responses are counted,
	// so k6 may run up to Duration + Timeout.
	Timeout time.Duration
	// NoConnectionReuse opens a new connection per request. Leave it false for an L7
	// (Envoy-like) Gateway, which picks a backend per request. Set it when the split is made
	// per connection (an L4 load balancer, a Service): with kept-alive connections each VU
	// would stick to one backend for the whole test, the windows' shares would all be alike
	// and their confidence interval far too narrow.
	NoConnectionReuse bool
}

// Validate returns nil if Script can build a test from o.
func (o ScriptOptions) Validate() error {
	u, err := url.Parse(o.URL)
	if err != nil {
		return fmt.Errorf("split URL: %w", err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("split URL: expected an absolute http:// or https:// URL, got %q", o.URL)
	}
	// The host is written into the script as a JavaScript string and sent as a header: a
	// control character would either break the script or be refused by k6 at run time.
	if strings.ContainsFunc(o.Host, func(r rune) bool { return r < ' ' || r == 0x7f }) {
		return fmt.Errorf("split host: expected a host name, got %q", o.Host)
	}
	if o.VUs < 1 || o.VUs > MaxVUs {
		return fmt.Errorf("split VUs: expected 1 to %d, got %d", MaxVUs, o.VUs)
	}
	if o.Duration < time.Second || o.Duration > MaxDuration || o.Duration%time.Second != 0 {
		return fmt.Errorf("split duration: expected whole seconds from 1s to %s, got %s", MaxDuration, o.Duration)
	}
	if o.Timeout < 0 || (o.Timeout != 0 && o.Timeout%time.Millisecond != 0) {
		return fmt.Errorf("split timeout: expected whole milliseconds >= 0, got %s", o.Timeout)
	}
	return nil
}

// Script returns the k6 test of one sample (a JavaScript module for `k6 run`). It assumes o
// is valid (see ScriptOptions.Validate) and never fails.
//
// Every response increments CounterName by 1, tagged BackendTag=<the body, trimmed>, or
// ErrorBackend for a status other than 200, an empty body or one that is not a pod name
// (which also keeps the tag free of the '&' and '=' that k6's CSV uses to join tags). The
// script imports nothing but k6's own modules, follows no redirect and sets no cloud option,
// so o.URL is the only address it reaches; Argv and Env turn off k6's usage report.
func Script(o ScriptOptions) string {
	timeout := o.Timeout
	if timeout == 0 {
		timeout = DefaultTimeout
	}
	headers := "{}"
	if o.Host != "" {
		headers = fmt.Sprintf("{ Host: %s }", jsString(o.Host))
	}
	var b strings.Builder
	fmt.Fprintf(&b, `// cnibench split test: GET %[1]s with %[2]d VUs for %[3]ds; written by internal/split.
import http from 'k6/http';
import { Counter } from 'k6/metrics';

export const options = {
  scenarios: {
    split: {
      executor: 'constant-vus',
      vus: %[2]d,
      duration: '%[3]ds',
      // In-flight requests finish (within the request timeout) so they are counted.
      gracefulStop: '%[4]dms',
    },
  },
  // The body is the answering pod's name: it must be read.
  discardResponseBodies: false,
  // Every response is one row per metric in the CSV: 'status' alone lets the summary keep
  // failed requests out of the latency percentiles, and no other tag is written.
  systemTags: ['status'],
  summaryTrendStats: ['avg', 'p(50)', 'p(90)', 'p(99)', 'max'],
  // A redirect would send the test somewhere else: count it as an error instead.
  maxRedirects: 0,
  noConnectionReuse: %[5]t,
};

const url = %[6]s;
const params = { headers: %[7]s, timeout: '%[4]dms', responseType: 'text', redirects: 0 };
// A pod name (a DNS name); anything else cannot be credited to a backend.
const podName = /^[A-Za-z0-9][A-Za-z0-9.-]{0,252}$/;
const backends = new Counter(%[8]s);

export default function () {
  const res = http.get(url, params);
  let backend = %[9]s;
  if (res.status === 200 && typeof res.body === 'string') {
    const name = res.body.trim();
    if (podName.test(name)) {
      backend = name;
    }
  }
  backends.add(1, { %[10]s: backend });
}
`, o.URL, o.VUs, int(o.Duration/time.Second), timeout.Milliseconds(), o.NoConnectionReuse,
		jsString(o.URL), headers, jsString(CounterName), jsString(ErrorBackend), BackendTag)
	return b.String()
}

// jsString quotes s as a JavaScript string literal. JSON's string syntax is a subset of
// JavaScript's, and encoding/json escapes U+2028/U+2029, the two characters where they differ.
func jsString(s string) string {
	out, _ := json.Marshal(s) // a string always marshals
	return string(out)
}

// CSVTimeFormat is the time format Argv asks of k6's CSV output: milliseconds since the
// epoch. k6's default, whole seconds, cannot place a response in a 5-second window to better
// than 20 %; Summarize refuses such a file.
const CSVTimeFormat = "unix_milli"

// Argv is the command running the test in scriptPath (written from Script) with k6, writing
// every metric sample to csvPath as CSV with millisecond timestamps (gzip-compressed when
// csvPath ends in ".gz"; Summarize reads both). Run it with Env added to the environment.
// csvPath must not contain ',' or '=', which k6's --out csv argument uses as separators.
//
// The flags, as in k6 v1.8.1:
//   - --out csv=fileName=F,timeFormat=unix_milli: the only output, where Summarize reads.
//   - --no-usage-report: k6 would otherwise POST a usage report to stats.grafana.org at the end.
//   - --address= : no REST API server; k6 would otherwise listen on localhost:6565, which two
//     tests sharing a network namespace (host-network pods) would compete for.
//   - --summary-mode=disabled and --no-thresholds: with neither, k6 does not aggregate
//     samples in memory at all, so its memory stays flat however long the test runs.
//   - --quiet, --no-color: no progress bars or colour escapes in a pod's log.
func Argv(scriptPath, csvPath string) []string {
	return []string{
		"k6", "run",
		"--out", "csv=fileName=" + csvPath + ",timeFormat=" + CSVTimeFormat,
		"--no-usage-report",
		"--address=",
		"--summary-mode=disabled",
		"--no-thresholds",
		"--quiet", "--no-color",
		scriptPath,
	}
}

// Env is the environment Argv needs beyond the usual (PATH, HOME) variables, as NAME=value.
// K6_NO_USAGE_REPORT repeats --no-usage-report so that a wrapper dropping the flag still
// reports nothing, and K6_AUTO_EXTENSION_RESOLUTION=false stops k6 from contacting Grafana's
// build service when a script imports an extension (the split script imports none).
func Env() []string {
	return []string{
		"K6_NO_USAGE_REPORT=true",
		"K6_AUTO_EXTENSION_RESOLUTION=false",
	}
}
