package grafana

import (
	"encoding/json"
	"io/fs"
	"os"
	"strings"
	"testing"

	"github.com/cnibench/cnibench/internal/catalog"
	"github.com/cnibench/cnibench/internal/testsupport/pgserver"
)

// TestMain runs the package's tests with a real PostgreSQL server (pgserver).
func TestMain(m *testing.M) { os.Exit(pgserver.Main(m, true)) }

// dashboard is the part of Grafana's dashboard JSON the tests read.
type dashboard struct {
	file          string
	UID           string     `json:"uid"`
	Title         string     `json:"title"`
	SchemaVersion int        `json:"schemaVersion"`
	Inputs        []input    `json:"__inputs"`
	Panels        []panel    `json:"panels"`
	Templating    templating `json:"templating"`
}

type input struct {
	Name     string `json:"name"`
	Type     string `json:"type"`
	PluginID string `json:"pluginId"`
}

type templating struct {
	List []variable `json:"list"`
}

type dsRef struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

// variable is a template variable. Query is a string for the PostgreSQL data source and for
// constants.
type variable struct {
	Name       string `json:"name"`
	Type       string `json:"type"`
	Datasource *dsRef `json:"datasource"`
	Query      string `json:"query"`
	Multi      bool   `json:"multi"`
	IncludeAll bool   `json:"includeAll"`
	AllValue   string `json:"allValue"`
}

type panel struct {
	ID         int      `json:"id"`
	Type       string   `json:"type"`
	Title      string   `json:"title"`
	Repeat     string   `json:"repeat"`
	Datasource *dsRef   `json:"datasource"`
	Targets    []target `json:"targets"`
	Panels     []panel  `json:"panels"` // a collapsed row's
}

type target struct {
	RefID      string `json:"refId"`
	Datasource *dsRef `json:"datasource"`
	Format     string `json:"format"`
	RawQuery   bool   `json:"rawQuery"`
	RawSQL     string `json:"rawSql"`
}

// loadDashboards reads every dashboard of the package.
func loadDashboards(t *testing.T) []dashboard {
	t.Helper()
	names, err := fs.Glob(Files, "*.json")
	if err != nil || len(names) == 0 {
		t.Fatalf("no dashboards embedded: %v", err)
	}
	var out []dashboard
	for _, name := range names {
		data, err := Files.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		var d dashboard
		if err := json.Unmarshal(data, &d); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		d.file = name
		out = append(out, d)
	}
	return out
}

// allPanels are the dashboard's panels, those inside rows included.
func (d dashboard) allPanels() []panel {
	var out []panel
	var walk func([]panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			out = append(out, p)
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	return out
}

func (d dashboard) variable(name string) (variable, bool) {
	for _, v := range d.Templating.List {
		if v.Name == name {
			return v, true
		}
	}
	return variable{}, false
}

// TestDashboardsShape: what an import needs of each dashboard. A current schema version; the
// data source an input named DS of the PostgreSQL plugin, which import asks for, and every
// panel, query and query variable on ${DS}; unique uids and panel ids; raw SQL in every query.
func TestDashboardsShape(t *testing.T) {
	uids := map[string]bool{}
	for _, d := range loadDashboards(t) {
		if d.UID == "" || uids[d.UID] || d.Title == "" {
			t.Errorf("%s: uid %q (or a title) missing or taken", d.file, d.UID)
		}
		uids[d.UID] = true
		if d.SchemaVersion < 39 {
			t.Errorf("%s: schemaVersion %d, want a current Grafana's (39 or later)", d.file, d.SchemaVersion)
		}
		if len(d.Inputs) != 1 || d.Inputs[0] != (input{Name: "DS", Type: "datasource", PluginID: pgPlugin}) {
			t.Errorf("%s: __inputs %+v, want the one data source input DS of %s", d.file, d.Inputs, pgPlugin)
		}
		ids := map[int]bool{}
		for _, p := range d.allPanels() {
			if ids[p.ID] || p.ID == 0 {
				t.Errorf("%s: panel id %d missing or taken", d.file, p.ID)
			}
			ids[p.ID] = true
			if !onDS(p.Datasource) || len(p.Targets) == 0 {
				t.Errorf("%s: panel %q: datasource %+v, %d queries", d.file, p.Title, p.Datasource, len(p.Targets))
			}
			for _, q := range p.Targets {
				if !onDS(q.Datasource) || !q.RawQuery || strings.TrimSpace(q.RawSQL) == "" || (q.Format != "table" && q.Format != "time_series") {
					t.Errorf("%s: panel %q query %s: %+v", d.file, p.Title, q.RefID, q)
				}
			}
		}
		for _, v := range d.Templating.List {
			switch v.Type {
			case "query":
				if !onDS(v.Datasource) || v.Query == "" {
					t.Errorf("%s: variable %s: datasource %+v, query %q", d.file, v.Name, v.Datasource, v.Query)
				}
			case "constant":
			default:
				t.Errorf("%s: variable %s of type %s, which the test does not interpolate", d.file, v.Name, v.Type)
			}
		}
	}
}

// pgPlugin is the id of Grafana's PostgreSQL data source plugin (since Grafana 10.2).
const pgPlugin = "grafana-postgresql-datasource"

func onDS(r *dsRef) bool { return r != nil && r.Type == pgPlugin && r.UID == "${DS}" }

// TestHeadlineConstant: the dashboards' list of headline metrics is the catalogue's: each one
// is a headline, and every headline metric of the catalogue's lists is in it.
func TestHeadlineConstant(t *testing.T) {
	var want []string
	for _, list := range [][]string{catalog.ProgressOrder(), catalog.Costs(), catalog.Setup(), catalog.Concurrency()} {
		for _, m := range list {
			if catalog.Headline(m) {
				want = append(want, m)
			}
		}
	}
	for _, d := range loadDashboards(t) {
		v, ok := d.variable("headline")
		if !ok {
			continue
		}
		got := map[string]bool{}
		for _, m := range strings.Split(v.Query, ",") {
			got[m] = true
			if !catalog.Headline(m) {
				t.Errorf("%s: %q is not a headline metric", d.file, m)
			}
		}
		for _, m := range want {
			if !got[m] {
				t.Errorf("%s: headline metric %s missing", d.file, m)
			}
		}
	}
}
