package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/cnibench/cnibench/internal/record"
	"github.com/cnibench/cnibench/internal/suite"
)

// TestWriteHTMLWithLinks: with HTMLOptions, every chart of a workload links to the samples of
// each cell it draws and the page has the server's links above its title; without them (the
// report file) it has no link of either kind.
func TestWriteHTMLWithLinks(t *testing.T) {
	doc := synthDocument("r1", []string{"flannel", "cilium"}, []string{suite.SameNode, suite.CrossNode}, 3, 3)
	var b bytes.Buffer
	o := HTMLOptions{Nav: []Link{{Name: "all runs", URL: "/"}},
		Samples: func(run string, c record.Cell) string {
			return "/s/" + run + "/" + c.Target + "/" + c.Path + "/" + c.Workload
		}}
	if err := WriteHTMLWith(&b, []Document{doc}, o); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	checkTagsBalanced(t, page)
	if !strings.Contains(page, `<nav class="site"><a href="/">all runs</a>`) {
		t.Error("no server links above the title")
	}
	charts := 0
	for _, n := range synthChartsPerWorkload() {
		charts += n
	}
	if got := strings.Count(page, `<p class="links">samples: `); got != charts {
		t.Errorf("%d charts link to samples, want every one of %d", got, charts)
	}
	for _, want := range []string{`<a href="/s/r1/cilium/cross-node/tcp-rr/64B">cilium · cross-node</a>`, `<a href="/s/r1/flannel/same-node/tcp-stream/1">flannel · same-node</a>`} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %s", want)
		}
	}
	plain := writeHTML(t, doc)
	if strings.Contains(plain, `class="links"`) || strings.Contains(plain, `<nav class="site">`) {
		t.Error("the report file has the server's links")
	}
}
