package htmlreport

import (
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/lockbench/lockbench/checker"
	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/reports"
)

// saturatedHealth is the health of a harness starved of the CPU, stalled
// in three spans of the run: two at 300 ms, close enough to share a band
// on a chart, and one around set-nx-ex's overlap (600.2 ms).
func saturatedHealth() *history.Health {
	return &history.Health{
		Node: -1, CPUs: 2, Cores: 2, CPUWait: 0.94, Others: 8.3, StallMax: 682_000_000, StallP99: 117_000_000,
		SchedP99: 164_000, SchedMax: 201_000_000, GCPauseMax: 336_000_000, LagP99: 33_600_000,
		Starved: []history.Span{
			{From: 300_000_000, To: 360_000_000},
			{From: 362_000_000, To: 420_000_000},
			{From: 600_000_000, To: 601_000_000},
		},
	}
}

// chartOf returns the markup of the first chart of kind whose title
// starts with impl.
func chartOf(t *testing.T, page, kind, impl string) string {
	t.Helper()
	at := strings.Index(page, `<svg class="chart `+kind+`" viewBox="0 0 `)
	for at >= 0 {
		c := page[at:]
		c = c[:strings.Index(c, "</svg>")]
		if strings.Contains(c, `aria-label="`+impl+":") {
			return c
		}
		next := strings.Index(page[at+1:], `<svg class="chart `+kind+`"`)
		if next < 0 {
			break
		}
		at += 1 + next
	}
	t.Fatalf("no %s chart of %s", kind, impl)
	return ""
}

// markup is the page without its style sheet, whose rules name every
// class whether the page uses it or not.
func markup(page string) string {
	return regexp.MustCompile(`(?s)<style>.*?</style>`).ReplaceAllString(page, "")
}

// TestHTMLSaturation: a run whose harness was saturated has a box saying
// how, and for an inconclusive verdict what liveness found, all escaped;
// its verdict is amber wherever verdicts show; its charts over the run
// hatch the spans in which the harness was starved, keyed "harness
// starved" and described on hover; its health figures are in a table.
// A run without health shows none of it.
func TestHTMLSaturation(t *testing.T) {
	tests := []struct {
		name    string
		setup   func(r *reports.Result)
		want    []string
		absent  []string
		title   string
		starved int // starved bands on lua's sales chart, and on its latency chart
	}{
		{
			name:  "no health",
			setup: func(*reports.Result) {},
			absent: []string{`class="starved"`, `class="saturation`, `<table class="health">`, "harness starved",
				"inconclusive", `class="saturated"`},
			title: "FAIL · ",
		},
		{
			name: "inconclusive",
			setup: func(r *reports.Result) {
				r.Runs = r.Runs[:1]
				lua := &r.Runs[0]
				lua.Verdict = reports.Inconclusive
				lua.Liveness.Status = checker.Inconclusive
				lua.Health = saturatedHealth()
				lua.Saturation = []string{`the kernel kept lockbench waiting for a CPU 94% of the time <b>it</b> was ready to run (bound 50%)`}
				lua.Unjudged = []string{`3 buyers "stuck" <waiting> for the lock & sent away`}
			},
			want: []string{
				`<p class="headline inconclusive">inconclusive: lua was inconclusive, the harness saturated · `,
				`<td class="verdict inconclusive" data-v="inconclusive">inconclusive</td>`,
				`<td class="status inconclusive" data-v="inconclusive">inconclusive</td>`,
				`<div class="findings inconclusive">`,
				`<a href="#r1-lua-1-saturation">how</a>`,
				`<section class="impl inconclusive" id="r1-lua-1">`,
				`<span class="badge inconclusive">inconclusive</span>`,
				`<div class="saturation inconclusive" id="r1-lua-1-saturation" role="note">`,
				`Inconclusive: the harness was saturated`,
				`94% of the time &lt;b&gt;it&lt;/b&gt; was ready`,
				`<li class="unjudged">3 buyers &#34;stuck&#34; &lt;waiting&gt; for the lock &amp; sent away</li>`,
				`<g class="row inconclusive">`, `<text class="lane inconclusive"`,
				"inconclusive ones in amber",
				`<table class="health">`, `<tr class="over"><th scope="row">other processes&#39; tasks ready to run</th><td class="num">8.3 on 2 cores</td><td>2 (a core each)</td></tr>`, `<th scope="row">CPU wait</th><td class="num">94%</td>`,
				`<th scope="row">longest stall</th><td class="num">682ms</td>`,
				`<th scope="row">scheduler latency p99</th><td class="num">164µs</td>`,
				`<th scope="row">GC pause, longest</th><td class="num">336ms</td>`,
				`<th scope="row">arrival lag p99</th><td class="num">33.6ms</td>`,
				"119ms in 3 spans, the longest 60.0ms",
				"Hatched grey: 3 spans in which lockbench itself stood still for 50ms or more at once (harness starved)",
			},
			absent: []string{"<b>it", "<waiting>", `class="verdict fail"`, `class="verdict pass"`},
			title:  "inconclusive · ",
			// The spans at 300 ms share a band; the one at 600 ms is apart.
			starved: 2,
		},
		{
			name: "saturated but live",
			setup: func(r *reports.Result) {
				r.Runs[0].Health = saturatedHealth()
				r.Runs[0].Saturation = []string{"the kernel kept lockbench waiting for a CPU 94% of the time"}
			},
			want: []string{
				`<div class="saturation" id="r1-lua-1-saturation" role="note">`,
				"Liveness held all the same",
				`<td class="verdict pass" data-v="pass">pass</td>`,
				`<div class="findings pass">`,
				"the harness was saturated: its performance figures are the harness's, not the lock's",
			},
			absent:  []string{`class="unjudged"`, "saturation inconclusive", "inconclusive ones in amber"},
			title:   "FAIL · ",
			starved: 2,
		},
		{
			name: "healthy",
			setup: func(r *reports.Result) {
				r.Runs[0].Health = &history.Health{Node: -1, CPUWait: -1, Others: -1, StallMax: 4_000_000}
			},
			want:    []string{`<table class="health">`, `<th scope="row">CPU wait</th><td class="num">not measured</td>`},
			absent:  []string{`class="starved"`, `class="saturation`, "harness starved", `<tr class="over">`},
			title:   "FAIL · ",
			starved: 0,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := fixtureSource(t)
			tt.setup(src.Result)
			src.Histories = src.Histories[:len(src.Result.Runs)]
			page := string(render(t, Options{}, src))
			body := markup(page)
			for _, w := range tt.want {
				if !strings.Contains(body, w) {
					t.Errorf("the page lacks %s", w)
				}
			}
			for _, a := range tt.absent {
				if strings.Contains(body, a) {
					t.Errorf("the page has %s", a)
				}
			}
			if !strings.Contains(page, "<title>"+tt.title) {
				t.Errorf("the page's title does not start %q", tt.title)
			}
			for _, kind := range []string{"sales", "latency"} {
				c := chartOf(t, page, kind, "lua")
				if n := strings.Count(c, `<g class="starved">`); n != tt.starved {
					t.Errorf("lua's %s chart has %d starved bands, want %d", kind, n, tt.starved)
				}
				keyed := strings.Contains(c, `<rect class="key starved"`) && strings.Contains(c, `<text class="legend"`) && strings.Contains(c, ">harness starved</text>")
				if keyed != (tt.starved > 0) {
					t.Errorf("lua's %s chart keys the harness starved: %v, want %v", kind, keyed, tt.starved > 0)
				}
				if tt.starved > 0 && !strings.Contains(c, "<title>harness starved in 2 spans 300ms–420ms, the longest 60.0ms") {
					t.Errorf("lua's %s chart does not describe the band of two spans on hover", kind)
				}
			}
			outline(t, []byte(page)) // still parses
		})
	}
}

// TestTimelineStarved: the lock-holder timeline hatches a span in which
// the harness was starved within its window, keyed, and leaves out one
// outside it.
func TestTimelineStarved(t *testing.T) {
	src := fixtureSource(t)
	src.Result.Runs[1].Health = saturatedHealth()
	page := string(render(t, Options{}, src))
	tl := chartOf(t, page, "timeline", "set-nx-ex")
	if n := strings.Count(tl, `<g class="starved">`); n != 1 {
		t.Errorf("the timeline has %d starved bands, want the one in its window", n)
	}
	if !strings.Contains(tl, "<title>harness starved 600ms–601ms (1.00ms)") || !strings.Contains(tl, ">harness starved</text>") {
		t.Errorf("the timeline's starved band is not described or keyed:\n%s", tl)
	}
}

// TestStarvedBands lays out bands on a minute's axis 376 units wide: a
// stall of 50 ms is drawn minStarvedW wide, within the axis at its ends;
// spans that would touch share a band; a span outside the axis is left
// out.
func TestStarvedBands(t *testing.T) {
	const sec = int64(1e9)
	s := span{0, 60 * sec}
	x := timeScale(s, 12, 388)
	tests := []struct {
		name  string
		spans []history.Span
		want  []int // spans per band
	}{
		{"one short stall", []history.Span{{From: 30 * sec, To: 30*sec + 5e7}}, []int{1}},
		{"at the start and at the end", []history.Span{{From: 0, To: 5e7}, {From: 60*sec - 5e7, To: 60 * sec}}, []int{1, 1}},
		{"close together, out of order", []history.Span{{From: 10*sec + 1e8, To: 10*sec + 15e7}, {From: 10 * sec, To: 10*sec + 5e7}, {From: 20 * sec, To: 21 * sec}}, []int{2, 1}},
		{"outside the axis", []history.Span{{From: 61 * sec, To: 62 * sec}}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bands := starvedBands(tt.spans, s, x)
			var got []int
			for _, b := range bands {
				got = append(got, b.n)
				if w := b.x1 - b.x0; w < minStarvedW-1e-9 {
					t.Errorf("band %v is %.2f wide, want %v at least", b, w, minStarvedW)
				}
				if b.x0 < 12-1e-9 || b.x1 > 388+1e-9 {
					t.Errorf("band %v runs outside the axis 12–388", b)
				}
			}
			if len(got) != len(tt.want) {
				t.Fatalf("bands of %v spans, want %v", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("bands of %v spans, want %v", got, tt.want)
				}
			}
		})
	}
}

// TestHatch: the strokes of a band stay within it.
func TestHatch(t *testing.T) {
	for _, r := range [][4]float64{{10, 13, 20, 180}, {100, 200, 0, 50}, {7.3, 7.8, 0, 10}} {
		d := hatch(r[0], r[1], r[2], r[3])
		for _, m := range regexp.MustCompile(`[ML]([0-9.-]+) ([0-9.-]+)`).FindAllStringSubmatch(d, -1) {
			px, err1 := strconv.ParseFloat(m[1], 64)
			py, err2 := strconv.ParseFloat(m[2], 64)
			if err1 != nil || err2 != nil {
				t.Fatalf("hatch %q: %v %v", d, err1, err2)
			}
			if px < r[0]-0.1 || px > r[1]+0.1 || py < r[2]-0.1 || py > r[3]+0.1 {
				t.Errorf("hatch of %v draws at %v,%v, outside", r, px, py)
			}
		}
	}
}

// TestComparisonInconclusive: an inconclusive run is amber in the
// comparison, its changes uncoloured, with a note saying why.
func TestComparisonInconclusive(t *testing.T) {
	a, b := fixtureResult(t), fixtureResult(t)
	b.Runs[0].Verdict = reports.Inconclusive
	b.Runs[0].Latency.Purchase.P99 /= 2
	c := newComparison([]*Source{{Result: a}, {Result: b}}, []string{"before", "after"})
	cell := c.Rows[0].Cells[1]
	if cell.Class != classInconclusive || cell.P99.Class != "failed" {
		t.Errorf("lua after: class %q, p99 %q; want inconclusive, uncoloured", cell.Class, cell.P99.Class)
	}
	if len(c.Notes) != 1 || !strings.Contains(c.Notes[0], "inconclusive") {
		t.Errorf("notes %q, want one on the inconclusive run", c.Notes)
	}
	page := markup(string(render(t, Options{}, NewSource("before", "testdata", a), NewSource("after", "testdata", b))))
	if !strings.Contains(page, `<td class="verdict inconclusive">inconclusive</td>`) {
		t.Errorf("the comparison does not show the inconclusive verdict in amber")
	}
}

// TestMatrixInconclusive: a matrix cell whose run was inconclusive shows
// its verdict in amber.
func TestMatrixInconclusive(t *testing.T) {
	res := fixtureMatrix(t)
	res.Matrix[0].Run.Verdict = reports.Inconclusive
	page := markup(string(render(t, Options{}, NewSource("matrix", "testdata", res))))
	if !strings.Contains(page, `<td class="verdict inconclusive" data-v="inconclusive">inconclusive</td>`) {
		t.Errorf("the truth table does not show the inconclusive verdict in amber")
	}
}
