package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"github.com/cnibench/cnibench/internal/testsupport"
	"html"
	"image"
	"image/draw"
	"image/png"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/cnibench/cnibench/internal/suite"
)

// measureScript records the layout of the page's plots into the page, for --dump-dom to read:
// each plot's box and its figure's, and how wide the page is against the window.
const measureScript = `<script>
(function () {
  var charts = [];
  document.querySelectorAll("svg.rounds, svg.forest").forEach(function (s) {
    var r = s.getBoundingClientRect(), f = s.closest("figure").getBoundingClientRect();
    charts.push({kind: s.classList.contains("rounds") ? "rounds" : "forest", left: r.left, top: r.top, width: r.width, height: r.height,
      figLeft: f.left, figTop: f.top, figRight: f.right, figBottom: f.bottom});
  });
  var pre = document.createElement("pre");
  pre.id = "measure";
  pre.textContent = JSON.stringify({scrollWidth: document.documentElement.scrollWidth, clientWidth: document.documentElement.clientWidth, charts: charts});
  document.body.appendChild(pre);
})();
</script>`

// plotBox is a plot's box in the page, and its figure's, in CSS pixels.
type plotBox struct {
	Kind                                 string
	Left, Top, Width, Height             float64
	FigLeft, FigTop, FigRight, FigBottom float64
}

// subImager is what the decoded screenshot's image types have, to look at one figure.
type subImager interface {
	SubImage(r image.Rectangle) image.Image
}

// pageLayout is what measureScript records.
type pageLayout struct {
	ScrollWidth, ClientWidth float64
	Charts                   []plotBox
}

// TestPlotsInBrowser opens the report of the default suite's real run in a real browser 800
// px wide and checks from the page's layout that every rounds chart and forest plot has a
// size and stays inside its figure and the window, with nothing scrolling sideways, and from a
// screenshot that they were painted: the forest's points and the rounds' marks in their
// colours.
func TestPlotsInBrowser(t *testing.T) {
	bin := testsupport.Chromium(t)
	dir := t.TempDir()
	page := writeHTML(t, aaDocument(t))
	// The report forbids scripts; this copy of it lets one measure it.
	probe := strings.Replace(page, "style-src 'unsafe-inline'", "style-src 'unsafe-inline'; script-src 'unsafe-inline'", 1)
	probe = strings.Replace(probe, "</body>", measureScript+"</body>", 1)
	file := filepath.Join(dir, "report.html")
	if err := os.WriteFile(file, []byte(probe), 0o644); err != nil {
		t.Fatal(err)
	}
	dom := string(runChromium(t, bin, "--window-size=800,1000", "--dump-dom", "file://"+file))
	m := regexp.MustCompile(`(?s)<pre id="measure">(.*?)</pre>`).FindStringSubmatch(dom)
	if m == nil {
		t.Fatalf("the page recorded no layout:\n%s", dom[:min(len(dom), 2000)])
	}
	var l pageLayout
	if err := json.Unmarshal([]byte(html.UnescapeString(m[1])), &l); err != nil {
		t.Fatalf("layout %q: %v", m[1], err)
	}
	t.Logf("page %v px wide in a %v px window; %d plots", l.ScrollWidth, l.ClientWidth, len(l.Charts))
	if l.ClientWidth != 800 || l.ScrollWidth > l.ClientWidth {
		t.Errorf("the page is %v px wide in a %v px window, want 800 and no sideways scrolling", l.ScrollWidth, l.ClientWidth)
	}
	if len(l.Charts) != 22 {
		t.Errorf("%d plots laid out, want 22 (20 rounds charts, 2 forest plots)", len(l.Charts))
	}
	for i, c := range l.Charts {
		if !(c.Width > 300 && c.Height > 100) || c.Left < c.FigLeft || c.Left+c.Width > c.FigRight+0.5 || c.FigRight > l.ClientWidth {
			t.Errorf("plot %d (%s): %+v: empty, or outside its figure or the window", i, c.Kind, c)
		}
	}
	checkPlotsPainted(t, bin, file, l)
}

// firstPlots are the first forest plot and the first rounds chart of a layout.
func firstPlots(t *testing.T, l pageLayout) (forest, rounds plotBox) {
	t.Helper()
	var haveF, haveR bool
	for _, c := range l.Charts {
		switch {
		case c.Kind == "forest" && !haveF:
			forest, haveF = c, true
		case c.Kind == "rounds" && !haveR:
			rounds, haveR = c, true
		}
	}
	if !haveF || !haveR {
		t.Fatalf("no forest plot or no rounds chart in %+v", l.Charts)
	}
	return forest, rounds
}

// checkPlotsPainted screenshots the page down to the first rounds chart and counts the
// pixels of the forest's not-significant grey in the first forest plot (an A/A run: nothing
// differs) and of the host-network blue in the first rounds chart (tcp-stream/1 on
// host-network). CNIBENCH_PLOTS_SCREENSHOT names a PNG file to keep both figures in.
func checkPlotsPainted(t *testing.T, bin, file string, l pageLayout) {
	t.Helper()
	forest, rounds := firstPlots(t, l)
	shot := filepath.Join(t.TempDir(), "plots.png")
	height := int(max(forest.FigBottom, rounds.FigBottom)) + 20
	runChromium(t, bin, fmt.Sprintf("--window-size=800,%d", height), "--screenshot="+shot, "file://"+file)
	data, err := os.ReadFile(shot)
	if err != nil {
		t.Fatalf("no screenshot: %v", err)
	}
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("decode screenshot: %v", err)
	}
	figure := func(c plotBox) image.Rectangle {
		return image.Rect(int(c.FigLeft), int(c.FigTop), int(c.FigRight), int(c.FigBottom)).Intersect(img.Bounds())
	}
	sub := func(r image.Rectangle) image.Image { return img.(subImager).SubImage(r) }
	if _, px := barRuns(sub(figure(forest)), nsColour, 1, 3); px < 200 {
		t.Errorf("the forest plot has %d pixels of its grey, want its points and intervals painted", px)
	}
	if _, px := barRuns(sub(figure(rounds)), knownPathColours()[suite.HostNetwork], 1, 3); px < 300 {
		t.Errorf("the first rounds chart has %d pixels of the host-network colour, want its marks painted", px)
	}
	keep := os.Getenv("CNIBENCH_PLOTS_SCREENSHOT")
	if keep == "" {
		return
	}
	a, b := figure(forest), figure(rounds)
	out := image.NewRGBA(image.Rect(0, 0, max(a.Dx(), b.Dx())+16, a.Dy()+b.Dy()+24))
	draw.Draw(out, out.Bounds(), image.White, image.Point{}, draw.Src)
	draw.Draw(out, image.Rect(8, 8, 8+a.Dx(), 8+a.Dy()), img, a.Min, draw.Src)
	draw.Draw(out, image.Rect(8, 16+a.Dy(), 8+b.Dx(), 16+a.Dy()+b.Dy()), img, b.Min, draw.Src)
	var buf bytes.Buffer
	if err := (&png.Encoder{CompressionLevel: png.BestCompression}).Encode(&buf, out); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keep, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}
