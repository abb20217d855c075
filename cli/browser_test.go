package cli

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/internal/browsertest"
	"github.com/lockbench/lockbench/reports"
)

var screenshot = flag.Bool("screenshot", false, "rewrite docs/report.png, the README's picture of a report, from the browser test")

// screenshotPath is the README's picture, relative to this package.
const screenshotPath = "../docs/report.png"

// overTimePath is the README's picture of the latency over time under a
// fault, relative to this package.
const overTimePath = "../docs/latency-over-time.png"

// overTimeShot runs lua on an open model (buyers arriving at 100 a second
// for half a minute, whatever the lock does) with two pauses of its
// holder, and writes the latency-over-time chart to overTimePath: what
// each pause did to every buyer's latency while it lasted, and after.
func overTimeShot(ctx context.Context, t *testing.T, b *browsertest.Browser) {
	dir := filepath.Join(t.TempDir(), "overtime")
	code, _, errOut := lockbench(t, "--impl=lua", "--rate=100/s", "--clients=3000", "--stock=3000", "--faults=pause-holder:count=2:every=10s", "--out="+dir, "--seed=1")
	if code != exitFail && code != exitPass && code != exitInconclusive {
		t.Fatalf("lua under pause-holder: exit %d: %s", code, errOut)
	}
	p := open(ctx, t, b, filepath.Join(dir, "report.html"))
	var png bytes.Buffer
	if err := p.ScreenshotOf(ctx, &png, "svg.chart.latency"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(overTimePath, png.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s (%d bytes)", overTimePath, png.Len())
}

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
    compare: all("table.compare tbody th[scope=rowgroup]").length,
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

// widths are the window widths a report is read at: a phone, a tablet
// (two columns of charts), a laptop, and the desktop range up to a wide
// monitor (three).
var widths = []int{390, 800, 1280, 1400, 1920}

// layout is what the browser test measures of a report's charts at one
// window width.
type layout struct {
	Width  int `json:"width"`
	Scroll int `json:"scroll"`
	Charts int `json:"charts"`
	Texts  int `json:"texts"`
	// Small, Outside and Overlaps name the texts that are too small to
	// read, fall outside their chart, or overlap another text of it.
	Small    []string `json:"small"`
	Outside  []string `json:"outside"`
	Overlaps []string `json:"overlaps"`
}

// measure is the script that reads the layout of every chart on the page:
// each text's height on screen (its font size times the chart's scale,
// at least 9 px), that its box lies inside its chart's and overlaps no
// other text of the chart (legends are texts of their chart too), and
// how wide the page is (a phone must not scroll it sideways; a wide table
// or chart scrolls in its own box).
const measure = `(() => {
  const shown = e => e.getClientRects().length > 0;
  const name = t => JSON.stringify(t.textContent.trim().slice(0, 40));
  const charts = Array.from(document.querySelectorAll("svg.chart")).filter(shown);
  const small = [], outside = [], overlaps = [];
  let texts = 0;
  for (const svg of charts) {
    const chart = svg.getAttribute("aria-label");
    const box = svg.getBoundingClientRect();
    const ts = Array.from(svg.querySelectorAll("text")).filter(t => shown(t) && t.textContent.trim() !== "");
    const rs = ts.map(t => t.getBoundingClientRect());
    ts.forEach((t, i) => {
      texts++;
      const m = t.getScreenCTM();
      const px = parseFloat(getComputedStyle(t).fontSize) * Math.hypot(m.a, m.b);
      if (px < 9) {
        small.push(chart + ": " + name(t) + " is " + px.toFixed(1) + " px high");
      }
      const r = rs[i];
      if (r.left < box.left - 1 || r.top < box.top - 1 || r.right > box.right + 1 || r.bottom > box.bottom + 1) {
        outside.push(chart + ": " + name(t));
      }
      for (let j = 0; j < i; j++) {
        const q = rs[j];
        if (Math.min(r.right, q.right) - Math.max(r.left, q.left) > 1 && Math.min(r.bottom, q.bottom) - Math.max(r.top, q.top) > 1) {
          overlaps.push(chart + ": " + name(t) + " on " + name(ts[j]));
        }
      }
    });
  }
  return {width: window.innerWidth, scroll: document.documentElement.scrollWidth, charts: charts.length, texts, small, outside, overlaps};
})()`

// checkWidths opens the page at path, called name, at each of widths and
// fails the test where its charts cannot be read: text too small, outside
// its chart or on another, or a page wider than the window. A screenshot
// of each width that fails goes to the test's artifact directory (kept
// with go test -artifacts).
func checkWidths(ctx context.Context, t *testing.T, b *browsertest.Browser, name, path string) {
	t.Helper()
	for _, w := range widths {
		p := openAt(ctx, t, b, path, browsertest.Viewport{Width: w, Height: 900})
		var got layout
		if err := p.Eval(ctx, measure, &got); err != nil {
			t.Fatal(err)
		}
		at := fmt.Sprintf("%s at %d px", name, w)
		bad := false
		if got.Width != w || got.Charts == 0 || got.Texts == 0 {
			t.Errorf("%s: measured a %d px window, %d charts, %d texts", at, got.Width, got.Charts, got.Texts)
			bad = true
		}
		if got.Scroll > w+1 {
			t.Errorf("%s: the page is %d px wide and scrolls sideways", at, got.Scroll)
			bad = true
		}
		for _, c := range []struct {
			what string
			got  []string
		}{{"too small to read", got.Small}, {"outside their chart", got.Outside}, {"overlapping another text", got.Overlaps}} {
			if n := len(c.got); n > 0 {
				t.Errorf("%s: %d of %d texts %s, as\n%s", at, n, got.Texts, c.what, strings.Join(c.got[:min(n, 6)], "\n"))
				bad = true
			}
		}
		if bad {
			shot := filepath.Join(t.ArtifactDir(), fmt.Sprintf("%s-%d.png", strings.ReplaceAll(name, " ", "-"), w))
			var png bytes.Buffer
			if err := p.Screenshot(ctx, &png, 0); err == nil && os.WriteFile(shot, png.Bytes(), 0o644) == nil {
				t.Logf("%s: screenshot %s", at, shot)
			}
		}
		if err := p.Close(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// TestReportInBrowser runs a small sale with --out, opens its report.html
// in headless Chromium from file:// and checks the rendered page: the
// verdict table, one chart of each kind per implementation, a lock-holder
// timeline for the implementation that broke mutual exclusion, the links
// to porcupine's views, the page's script, no console error and no request
// beyond the page itself. Then the same for `lockbench report` comparing
// two results. Then it reads the report, the comparison and the report of
// a run with faults at a phone's width, a tablet's and a desktop's, up to
// 1920 px: every chart's text readable, inside its chart and clear of the
// others, and no page wider than its window. With -screenshot it rewrites
// the README's picture.
func TestReportInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs a sale and a browser")
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
		overTimeShot(ctx, t, b)
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

	// Read at a phone's width and across the desktop's: this run's report,
	// the comparison, and a run with faults, whose labels share the sales
	// chart with the first illegal segment's (a latency fault from the
	// start, where the unguarded sale goes wrong, and a cut link later).
	faulted := filepath.Join(t.TempDir(), "run2")
	code, _, errOut = lockbench(t, "--impl=none,local", "--clients=300", "--stock=100", "--ramp=300ms", "--workers=20", "--out="+faulted, "--seed=5",
		"--faults=latency:delay=2ms:jitter=1ms:for=150ms,cut-link:for=60ms")
	if code != exitFail {
		t.Fatalf("faulted run: exit %d, want %d: %s", code, exitFail, errOut)
	}
	ctx, cancel = context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	p = open(ctx, t, b, filepath.Join(faulted, "report.html"))
	var labels struct {
		Faults  int `json:"faults"`
		Illegal int `json:"illegal"`
	}
	if err := p.Eval(ctx, `({faults: document.querySelectorAll("svg.chart.sales text.faultlabel").length, illegal: document.querySelectorAll("svg.chart.sales text.illegallabel").length})`, &labels); err != nil {
		t.Fatal(err)
	}
	if labels.Faults < 2 || labels.Illegal < 1 {
		t.Errorf("the faulted run's sales charts have %d fault labels and %d first illegal labels, want 2 and 1 at least", labels.Faults, labels.Illegal)
	}
	checkWidths(ctx, t, b, "report", filepath.Join(dir, "report.html"))
	checkWidths(ctx, t, b, "comparison", cmp)
	checkWidths(ctx, t, b, "faulted report", filepath.Join(faulted, "report.html"))
	checkWidths(ctx, t, b, "saturated report", saturatedReport(ctx, t, b, faulted))
}

// saturatedReport writes the report of the faulted run as if its harness
// had been saturated (local inconclusive, none live on a starved harness,
// both starved in spans of the run), checks that the page shows it, and
// returns the page's path, for checkWidths to read at every width.
func saturatedReport(ctx context.Context, t *testing.T, b *browsertest.Browser, faulted string) string {
	t.Helper()
	res, err := reports.ReadFile(filepath.Join(faulted, "result.json"))
	if err != nil {
		t.Fatal(err)
	}
	for i := range res.Runs {
		r := &res.Runs[i]
		r.Health = &history.Health{Node: -1, CPUs: 2, CPUWait: 0.94, StallMax: 682e6, SchedP99: 164e3, GCPauseMax: 336e6, LagP99: 33e6,
			Starved: []history.Span{{From: 50e6, To: 110e6}, {From: 112e6, To: 170e6}, {From: 250e6, To: 251e6}}}
		r.Saturation = []string{"the kernel kept lockbench waiting for a CPU 94% of the time it was ready to run (bound 50%): the machine is busier than its 2 cores"}
	}
	res.Runs[1].Verdict, res.Runs[1].Reasons = reports.Inconclusive, nil
	res.Runs[1].Unjudged = []string{"3 buyers were sent away after waiting 30s for the lock"}
	path := filepath.Join(faulted, "saturated.json")
	if err := reports.WriteFile(path, res); err != nil {
		t.Fatal(err)
	}
	page := filepath.Join(faulted, "saturated.html")
	if code, out, errOut := lockbench(t, "report", path, "-o", page); code != exitPass {
		t.Fatalf("report: exit %d: %s%s", code, out, errOut)
	}
	p := open(ctx, t, b, page)
	var got struct {
		Verdicts []string `json:"verdicts"`
		Boxes    int      `json:"boxes"`
		Health   int      `json:"health"`
		Bands    int      `json:"bands"`
		Keys     int      `json:"keys"`
	}
	if err := p.Eval(ctx, `(() => {
  const all = sel => Array.from(document.querySelectorAll(sel));
  return {
    verdicts: all("table.verdicts tbody td.verdict").map(e => e.textContent.trim()),
    boxes: all("section.impl div.saturation").filter(e => e.offsetParent !== null).length,
    health: all("section.impl table.health").length,
    bands: all("svg.chart.sales g.starved, svg.chart.latency g.starved").filter(g => g.getBoundingClientRect().width >= 1).length,
    keys: all("svg.chart text.legend").filter(e => e.textContent === "harness starved").length,
  };
})()`, &got); err != nil {
		t.Fatal(err)
	}
	if want := []string{"fail", "inconclusive"}; !slices.Equal(got.Verdicts, want) {
		t.Errorf("saturated report: verdicts %q, want %q", got.Verdicts, want)
	}
	if got.Boxes != 2 || got.Health != 2 || got.Bands < 4 || got.Keys < 4 {
		t.Errorf("saturated report: %d saturation boxes, %d health tables, %d starved bands drawn, %d keyed; want 2, 2, 4 and 4 at least", got.Boxes, got.Health, got.Bands, got.Keys)
	}
	if err := p.Close(ctx); err != nil {
		t.Fatal(err)
	}
	return page
}

// open loads path in a new tab and fails the test on any console error,
// exception or failed load, or on a request for anything but a local file.
func open(ctx context.Context, t *testing.T, b *browsertest.Browser, path string) *browsertest.Page {
	t.Helper()
	return openAt(ctx, t, b, path, browsertest.Viewport{Width: 1280, Height: 900})
}

// openAt is open in a window of the size vp.
func openAt(ctx context.Context, t *testing.T, b *browsertest.Browser, path string, vp browsertest.Viewport) *browsertest.Page {
	t.Helper()
	abs, err := filepath.Abs(path)
	if err != nil {
		t.Fatal(err)
	}
	p, err := b.Open(ctx, "file://"+abs, vp)
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
