package cli

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockbench/lockbench/internal/browsertest"
)

var screenshot = flag.Bool("screenshot", false, "rewrite docs/report.png, the README's picture of a report, from the browser test")

// screenshotPath is the README's picture, relative to this package.
const screenshotPath = "../docs/report.png"

// rendered is what the browser test reads of a rendered report.
type rendered struct {
	Title     string   `json:"title"`
	Impls     []string `json:"impls"`
	Verdicts  []string `json:"verdicts"`
	Sections  []string `json:"sections"`
	Spectra   []int    `json:"spectra"`
	Sales     []int    `json:"sales"`
	Timelines []int    `json:"timelines"`
	// Drawn counts charts whose box has a size and at least one mark.
	Drawn     int      `json:"drawn"`
	Charts    int      `json:"charts"`
	Porcupine []string `json:"porcupine"`
	Visible   int      `json:"visible"`
	Lanes     int      `json:"lanes"`
	Sorted    []string `json:"sorted"`
	Compare   int      `json:"compare"`
}

// inspect is the script that reads a report: what the verdict table
// lists, which charts each implementation's section has, and what the
// page's own script does when the "failing only" box and a column head
// are clicked.
const inspect = `(() => {
  const all = (sel, root) => Array.from((root || document).querySelectorAll(sel));
  const text = e => e.textContent.trim();
  const table = document.querySelector("section.result table.verdicts");
  const r = {
    title: document.title,
    impls: all("tbody th a", table).map(text),
    verdicts: all("tbody td.verdict", table).map(text),
    sections: all("section.result section.impl h3").map(h => h.firstChild.textContent.trim()),
    spectra: all("section.result section.impl").map(s => all("svg.chart.spectrum", s).length),
    sales: all("section.result section.impl").map(s => all("svg.chart.sales", s).length),
    timelines: all("section.result section.impl").map(s => all("svg.chart.timeline", s).length),
    charts: all("svg.chart").length,
    drawn: all("svg.chart").filter(s => { const b = s.getBoundingClientRect(); return b.width > 100 && b.height > 50 && s.querySelector("rect, polyline, line"); }).length,
    porcupine: all("a.porcupine").map(a => a.getAttribute("href")),
    compare: all("table.compare tbody tr").length,
  };
  const box = document.getElementById("failing-only");
  if (box) {
    box.click();
    r.visible = all("tbody tr", table).filter(tr => tr.offsetParent !== null).length;
    r.lanes = all("svg.chart.overview g.row").filter(g => g.getClientRects().length > 0).length;
    box.click();
  }
  const head = all("thead th", table).find(th => text(th) === "p99");
  if (head) {
    head.click(); head.click(); // descending
    r.sorted = all("tbody th a", table).map(text);
  }
  return r;
})()`

// TestReportInBrowser runs a small sale with --out, opens its report.html
// in headless Chromium from file:// and checks the rendered page: the
// verdict table, one chart of each kind per implementation, a lock-holder
// timeline for the implementation that broke mutual exclusion, the links
// to porcupine's views, the page's script, no console error and no request
// beyond the page itself. Then the same for `lockbench report` comparing
// two results. With -screenshot it rewrites the README's picture.
func TestReportInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a sale and a browser")
	}
	b := browsertest.Start(t)
	dir := filepath.Join(t.TempDir(), "run1")
	impls := []string{"none", "local", "lua", "watchdog", "atomic"}
	// 20 workers a node: with 200, the unguarded sale is a 1,000-way race
	// whose porcupine view (a verbose search, without the checker's
	// linear-time proof) sometimes outlasts the check's timeout, and the
	// view is then rightly left out.
	code, _, errOut := lockbench(t, "--impl="+strings.Join(impls, ","), "--clients=1000", "--stock=250", "--ramp=200ms", "--workers=20", "--out="+dir, "--seed=5")
	if code != exitFail {
		t.Fatalf("exit %d, want %d (none and local oversell): %s", code, exitFail, errOut)
	}
	if !strings.Contains(errOut, "report: "+filepath.Join(dir, "report.html")) {
		t.Errorf("the run does not say where the report is:\n%s", errOut)
	}

	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	p := open(ctx, t, b, filepath.Join(dir, "report.html"))
	if *screenshot {
		var png bytes.Buffer
		if err := p.Screenshot(ctx, &png, 1500); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(screenshotPath), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(screenshotPath, png.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s (%d bytes)", screenshotPath, png.Len())
	}
	var got rendered
	if err := p.Eval(ctx, inspect, &got); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(got.Title, "FAIL · ") {
		t.Errorf("the page's title %q does not lead with the verdict", got.Title)
	}
	if !slices.Equal(got.Impls, impls) || !slices.Equal(got.Sections, impls) {
		t.Errorf("verdict table lists %q, sections %q; want %q", got.Impls, got.Sections, impls)
	}
	if want := []string{"fail", "fail", "pass", "pass", "pass"}; !slices.Equal(got.Verdicts, want) {
		t.Errorf("verdicts %q, want %q", got.Verdicts, want)
	}
	for i, impl := range impls {
		if i >= len(got.Spectra) || got.Spectra[i] != 1 || got.Sales[i] != 1 {
			t.Errorf("%s: spectrum and sales charts %v, %v; want one of each", impl, got.Spectra, got.Sales)
		}
	}
	if want := []int{0, 3, 0, 0, 0}; !slices.Equal(got.Timelines, want) {
		t.Errorf("lock timelines per implementation %v, want %v (local's first three overlaps)", got.Timelines, want)
	}
	if got.Drawn != got.Charts || got.Charts < 2*len(impls)+1 {
		t.Errorf("%d charts, %d of them drawn with a size and marks", got.Charts, got.Drawn)
	}
	if want := []string{"none.porcupine.html", "local.porcupine.html"}; !slices.Equal(got.Porcupine, want) {
		t.Errorf("porcupine links %q, want %q", got.Porcupine, want)
	}
	if got.Visible != 2 || got.Lanes != 2 {
		t.Errorf("\"failing only\" leaves %d rows and %d latency lanes visible, want 2 of each", got.Visible, got.Lanes)
	}
	if len(got.Sorted) != len(impls) || got.Sorted[0] != "lua" && got.Sorted[0] != "watchdog" {
		t.Errorf("sorted by p99 descending: %q, want a lock-waiting implementation first", got.Sorted)
	}
	// porcupine's own view opens from file:// too, fetching nothing.
	open(ctx, t, b, filepath.Join(dir, "local.porcupine.html"))

	// The comparison: the saved run against a copy with lua twice as slow.
	cmp := filepath.Join(t.TempDir(), "compare.html")
	code, out, errOut := lockbench(t, "report", dir, dir, "-o", cmp)
	if code != exitPass || !strings.Contains(out, "wrote "+cmp) {
		t.Fatalf("report: exit %d: %s%s", code, out, errOut)
	}
	p = open(ctx, t, b, cmp)
	if err := p.Eval(ctx, inspect, &got); err != nil {
		t.Fatal(err)
	}
	if want := "FAIL (2 of 2 results) · lockbench comparison"; got.Compare != len(impls) || got.Title != want {
		t.Errorf("comparison lists %d implementations under %q, want %d under %q", got.Compare, got.Title, len(impls), want)
	}
}

// open loads path in a new tab and fails the test on any console error,
// exception or failed load, or on a request for anything but a local file.
func open(ctx context.Context, t *testing.T, b *browsertest.Browser, path string) *browsertest.Page {
	t.Helper()
	abs, err := filepath.Abs(path)
	if err != nil {
		t.Fatal(err)
	}
	p, err := b.Open(ctx, "file://"+abs, browsertest.Viewport{Width: 1280, Height: 900})
	if err != nil {
		t.Fatal(err)
	}
	// Give late log entries (a failed load after the load event) a moment.
	time.Sleep(200 * time.Millisecond)
	if errs := p.Errors(); len(errs) > 0 {
		t.Errorf("%s: the page reported errors:\n%s", filepath.Base(path), strings.Join(errs, "\n"))
	}
	for _, u := range p.Requests() {
		if !strings.HasPrefix(u, "file://") && !strings.HasPrefix(u, "data:") {
			t.Errorf("%s: the page requested %s", filepath.Base(path), u)
		}
	}
	return p
}
