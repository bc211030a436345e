package split

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func validScript() ScriptOptions {
	return ScriptOptions{URL: "http://10.96.0.50:8000/", Host: "split.example", VUs: 100, Duration: 30 * time.Second}
}

func TestScriptContent(t *testing.T) {
	s := Script(validScript())
	for _, want := range []string{
		"executor: 'constant-vus'",
		"vus: 100,",
		"duration: '30s',",
		"gracefulStop: '10000ms',",
		"discardResponseBodies: false,",
		"systemTags: ['status'],",
		"summaryTrendStats:",
		"maxRedirects: 0,",
		"noConnectionReuse: false,",
		`const url = "http://10.96.0.50:8000/";`,
		`headers: { Host: "split.example" }`,
		"timeout: '10000ms'",
		`new Counter("cnb_backend")`,
		`let backend = "error";`,
		"res.status === 200",
		"backends.add(1, { backend: backend });",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("script lacks %q:\n%s", want, s)
		}
	}
	// Nothing but o.URL: no remote import, no cloud option, no threshold.
	for _, bad := range []string{"https://", "cloud", "thresholds", "import http from 'http"} {
		if strings.Contains(s, bad) {
			t.Errorf("script contains %q", bad)
		}
	}
}

func TestScriptOptionsVary(t *testing.T) {
	o := validScript()
	o.Host = ""
	o.Timeout = 2500 * time.Millisecond
	o.NoConnectionReuse = true
	o.Duration = 2 * time.Minute
	s := Script(o)
	for _, want := range []string{"headers: {}", "timeout: '2500ms'", "gracefulStop: '2500ms'", "noConnectionReuse: true,", "duration: '120s',"} {
		if !strings.Contains(s, want) {
			t.Errorf("script lacks %q:\n%s", want, s)
		}
	}
}

func TestScriptQuotesStrings(t *testing.T) {
	o := validScript()
	o.URL = `http://10.0.0.1/a"b'c\d`
	o.Host = `evil"}); import x from 'y`
	s := Script(o)
	if !strings.Contains(s, `const url = "http://10.0.0.1/a\"b'c\\d";`) || !strings.Contains(s, `{ Host: "evil\"}); import x from 'y" }`) {
		t.Errorf("strings not quoted:\n%s", s)
	}
}

func TestScriptOptionsValidate(t *testing.T) {
	if err := validScript().Validate(); err != nil {
		t.Fatalf("valid options: %v", err)
	}
	for name, mutate := range map[string]func(*ScriptOptions){
		"relative URL":     func(o *ScriptOptions) { o.URL = "/path" },
		"ftp URL":          func(o *ScriptOptions) { o.URL = "ftp://10.0.0.1/" },
		"no host":          func(o *ScriptOptions) { o.URL = "http:///x" },
		"control in host":  func(o *ScriptOptions) { o.Host = "a\nb" },
		"no VUs":           func(o *ScriptOptions) { o.VUs = 0 },
		"too many VUs":     func(o *ScriptOptions) { o.VUs = MaxVUs + 1 },
		"sub-second":       func(o *ScriptOptions) { o.Duration = 1500 * time.Millisecond },
		"zero duration":    func(o *ScriptOptions) { o.Duration = 0 },
		"too long":         func(o *ScriptOptions) { o.Duration = MaxDuration + time.Second },
		"negative timeout": func(o *ScriptOptions) { o.Timeout = -time.Second },
		"sub-ms timeout":   func(o *ScriptOptions) { o.Timeout = time.Microsecond },
	} {
		o := validScript()
		mutate(&o)
		if o.Validate() == nil {
			t.Errorf("%s: accepted %+v", name, o)
		}
	}
}

func TestArgv(t *testing.T) {
	got := Argv("/tmp/s.js", "/tmp/out.csv")
	want := []string{"k6", "run", "--out", "csv=fileName=/tmp/out.csv,timeFormat=unix_milli", "--no-usage-report", "--address=",
		"--summary-mode=disabled", "--no-thresholds", "--quiet", "--no-color", "/tmp/s.js"}
	if !slices.Equal(got, want) {
		t.Errorf("Argv:\n got %q\nwant %q", got, want)
	}
	if env := Env(); !slices.Contains(env, "K6_NO_USAGE_REPORT=true") || !slices.Contains(env, "K6_AUTO_EXTENSION_RESOLUTION=false") {
		t.Errorf("Env: got %q", env)
	}
}
