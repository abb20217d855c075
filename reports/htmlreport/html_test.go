package htmlreport

import (
	"bytes"
	"cmp"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/lockbench/lockbench/checker"
	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/internal/golden"
	"github.com/lockbench/lockbench/reports"
)

// fixtureSource is the fixture result with its histories, set-nx-ex's
// porcupine view named as --out names it.
func fixtureSource(t *testing.T) *Source {
	t.Helper()
	res := fixtureResult(t)
	res.Runs[1].Visualization = "set-nx-ex.porcupine.html"
	src := NewSource("fixture", "testdata", res)
	for i, impl := range fixtureOrder {
		src.Histories[i] = loadHistory(t, impl)
	}
	return src
}

// render writes the HTML report of the sources.
func render(t *testing.T, opts Options, sources ...*Source) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := Write(&b, opts, sources...); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// outline reduces an HTML report to its structure: sections, headings,
// table rows, links, notes, and each chart as the count of its marks. The
// golden files hold outlines rather than whole pages so that a change of
// style does not churn them, while a lost chart, row or link does.
func outline(t *testing.T, page []byte) string {
	t.Helper()
	// The script is not markup; it is checked in a browser.
	page = regexp.MustCompile(`(?s)<script>.*?</script>`).ReplaceAll(page, []byte("<script></script>"))
	dec := xml.NewDecoder(bytes.NewReader(page))
	dec.Strict = false
	dec.AutoClose = xml.HTMLAutoClose
	dec.Entity = xml.HTMLEntity
	var (
		out   strings.Builder
		depth int
		stack []string
		text  *strings.Builder // collecting the text of the element on top
		texts []string         // tags whose text is collected
		marks map[string]int   // marks of the chart being read
		cells []string
	)
	attr := func(se xml.StartElement, name string) string {
		for _, a := range se.Attr {
			if a.Name.Local == name {
				return a.Value
			}
		}
		return ""
	}
	line := func(s string) { fmt.Fprintf(&out, "%s%s\n", strings.Repeat("  ", depth), s) }
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("the report does not parse: %v", err)
		}
		switch tk := tok.(type) {
		case xml.StartElement:
			tag := tk.Name.Local
			stack = append(stack, tag)
			class := attr(tk, "class")
			switch {
			case marks != nil:
				k := tag
				if class != "" {
					k += "." + strings.ReplaceAll(class, " ", ".")
				}
				marks[k]++
			case tag == "svg":
				marks = map[string]int{}
				line("svg." + strings.ReplaceAll(class, " ", ".") + " " + attr(tk, "aria-label"))
			case tag == "section" || tag == "details":
				line(tag + "#" + attr(tk, "id") + " ." + class)
				depth++
			case tag == "a":
				line("a ." + class + " href=" + attr(tk, "href"))
			case tag == "table":
				line("table ." + class)
			case tag == "tr":
				cells = []string{}
			case slices.Contains([]string{"h1", "h2", "h3", "li", "p", "figcaption", "td", "th", "dt", "dd", "title"}, tag):
				text = &strings.Builder{}
				texts = append(texts, tag)
			}
		case xml.CharData:
			if text != nil {
				text.Write(tk)
			}
		case xml.EndElement:
			tag := tk.Name.Local
			stack = stack[:len(stack)-1]
			switch {
			case tag == "svg":
				var ks []string
				for k, n := range marks {
					ks = append(ks, fmt.Sprintf("%s×%d", k, n))
				}
				slices.Sort(ks)
				line("  marks: " + strings.Join(ks, " "))
				marks = nil
			case marks != nil:
			case tag == "section" || tag == "details":
				depth--
			case tag == "tr":
				line("  | " + strings.Join(cells, " | "))
				cells = nil
			case text != nil && len(texts) > 0 && texts[len(texts)-1] == tag:
				s := strings.Join(strings.Fields(text.String()), " ")
				texts = texts[:len(texts)-1]
				if tag == "td" || tag == "th" {
					if cells != nil {
						cells = append(cells, s)
					}
				} else if tag != "title" || len(stack) > 0 && stack[len(stack)-1] == "head" {
					line(tag + ": " + s)
				}
				text = nil
			}
		}
	}
	return out.String()
}

func TestHTMLGolden(t *testing.T) {
	other := fixtureResult(t)
	other.Runs[0].Latency.Purchase.P99 *= 2
	other.Runs[0].SalesPerSec /= 2
	other.Runs = other.Runs[:2] // no atomic in the second result
	tests := []struct {
		name    string
		sources []*Source
	}{
		{"report", []*Source{fixtureSource(t)}},
		{"compare", []*Source{fixtureSource(t), NewSource("other", "testdata", other)}},
		{"matrix", []*Source{NewSource("matrix", "testdata", fixtureMatrix(t))}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			page := render(t, Options{}, tt.sources...)
			golden.Check(t, tt.name+".outline.golden", []byte(outline(t, page)))
			if again := render(t, Options{}, tt.sources...); !bytes.Equal(page, again) {
				t.Errorf("two renderings of the same sources differ")
			}
		})
	}
}

// TestHTMLCharts checks what each implementation's part shows: one
// spectrum and one sales chart each, a lock-holder timeline for the
// overlap with every lock holder in its window, the fault shaded, the
// first illegal segment marked, the porcupine link.
func TestHTMLCharts(t *testing.T) {
	page := string(render(t, Options{}, fixtureSource(t)))
	count := func(s string) int { return strings.Count(page, s) }
	if n := count(`<svg class="chart spectrum"`); n != 3 {
		t.Errorf("%d spectrum charts, want one per implementation (3)", n)
	}
	if n := count(`<svg class="chart sales"`); n != 3 {
		t.Errorf("%d sales charts, want 3", n)
	}
	if n := count(`<svg class="chart timeline"`); n != 1 {
		t.Errorf("%d timelines, want 1 (set-nx-ex's overlap)", n)
	}
	if n := count(`<svg class="chart overview"`); n != 1 {
		t.Errorf("%d overview charts, want 1", n)
	}
	// The timeline of set-nx-ex, zoomed to its 210 µs overlap (a
	// millisecond either side): the pair alone, the other two critical
	// sections being far from it.
	tl := page[strings.Index(page, `<svg class="chart timeline"`):]
	tl = tl[:strings.Index(tl, "</svg>")]
	if n := strings.Count(tl, `class="hold`); n != 2 {
		t.Errorf("timeline draws %d holders, want the pair (2) in its zoomed window", n)
	}
	if !strings.Contains(page, "Zoomed to 599.2ms–601.41ms") {
		t.Errorf("the timeline's caption does not give its zoomed window")
	}
	if n := strings.Count(tl, `class="hold pair"`); n != 2 {
		t.Errorf("timeline marks %d sections as the pair, want 2", n)
	}
	for _, want := range []string{`class="overlap"`, `class="fault"`, "overlap 210µs", "pause-holder node 0"} {
		if !strings.Contains(tl, want) {
			t.Errorf("timeline lacks %s", want)
		}
	}
	for _, want := range []string{
		`class="illegal"`, "first illegal segment 100ms–1.3008s",
		`<a class="porcupine" href="set-nx-ex.porcupine.html">`,
		"No lock: there is no critical section to draw.",
		`class="overlapmark"`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("report lacks %s", want)
		}
	}
}

// TestHTMLSelfContained checks that the page loads nothing: no external
// script, style, image or font, and a policy that forbids the browser to
// fetch any.
func TestHTMLSelfContained(t *testing.T) {
	page := string(render(t, Options{}, fixtureSource(t)))
	if !strings.Contains(page, `content="default-src 'none';`) {
		t.Errorf("no content security policy forbidding fetches")
	}
	for _, re := range []string{`(?i)<(script|img|iframe|link|source|embed)[^>]*\s(src|href)=`, `(?i)@import`, `(?i)url\(`} {
		if m := regexp.MustCompile(re).FindString(page); m != "" {
			t.Errorf("the page fetches something: %s", m)
		}
	}
	for _, m := range regexp.MustCompile(`https?://[^"'\s<]+`).FindAllString(page, -1) {
		if m != "http://www.w3.org/2000/svg" {
			t.Errorf("the page names a network address: %s", m)
		}
	}
}

func TestHTMLEscapes(t *testing.T) {
	src := fixtureSource(t)
	src.Result.Runs[1].Impl = `<script>alert(1)</script>`
	src.Result.Runs[1].Faults[0].Name = `"><b>fault`
	src.Result.Runs[1].Reasons = []string{"<i>oversold</i>"} // a new slice: the fixture's is shared
	page := string(render(t, Options{Title: "a <title>"}, src))
	for _, bad := range []string{"<script>alert", "<b>fault", "<i>oversold", "a <title>"} {
		if strings.Contains(page, bad) {
			t.Errorf("%q reached the page unescaped", bad)
		}
	}
	outline(t, []byte(page)) // still parses
}

// TestHTMLWithoutHistories draws what the result alone allows: the
// charts of figures, and of the overlap the pair only, with a note.
func TestHTMLWithoutHistories(t *testing.T) {
	res := fixtureResult(t)
	src := NewSource("bare", "testdata", res)
	src.Missing[1] = "its history histories/set-nx-ex.jsonl was not found"
	page := string(render(t, Options{}, src))
	tl := page[strings.Index(page, `<svg class="chart timeline"`):]
	tl = tl[:strings.Index(tl, "</svg>")]
	if n := strings.Count(tl, `class="hold`); n != 2 {
		t.Errorf("timeline draws %d holders without a history, want the pair (2)", n)
	}
	if !strings.Contains(page, "Only the overlapping pair is drawn: its history histories/set-nx-ex.jsonl was not found.") {
		t.Errorf("no note on the missing history")
	}
	if strings.Contains(page, `class="history"`) {
		t.Errorf("links a history that is not there")
	}
}

func TestWriteNoSource(t *testing.T) {
	if err := Write(io.Discard, Options{}); !errors.Is(err, ErrNoSource) {
		t.Errorf("no source: err = %v, want %v", err, ErrNoSource)
	}
}

func TestLoadSource(t *testing.T) {
	dir := t.TempDir()
	res := fixtureResult(t)
	for i, impl := range fixtureOrder {
		res.Runs[i].History = impl + ".history.jsonl"
	}
	res.Runs[2].History = "gone.history.jsonl"
	res.Runs[0].Visualization = "gone.porcupine.html"
	res.Runs[1].Visualization = "kept.porcupine.html"
	if err := os.WriteFile(filepath.Join(dir, "kept.porcupine.html"), []byte("<html></html>"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, impl := range fixtureOrder[:2] {
		if err := history.WriteFile(filepath.Join(dir, impl+".history.jsonl"), loadHistory(t, impl)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "set-nx-ex.history.jsonl"), []byte("not json\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := reports.WriteFile(filepath.Join(dir, "result.json"), res); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{dir, filepath.Join(dir, "result.json")} {
		src, err := LoadSource(path)
		if err != nil {
			t.Fatal(err)
		}
		if src.Label != filepath.Base(dir) || src.Dir != dir {
			t.Errorf("label %q, dir %q; want %q, %q", src.Label, src.Dir, filepath.Base(dir), dir)
		}
		if src.Histories[0] == nil || len(src.Histories[0].Ops) != 6 || src.Missing[0] != "" {
			t.Errorf("lua's history not loaded: %q", src.Missing[0])
		}
		if src.Histories[1] != nil || !strings.Contains(src.Missing[1], "could not be read") {
			t.Errorf("a corrupt history: missing = %q", src.Missing[1])
		}
		if v0, v1 := src.Result.Runs[0].Visualization, src.Result.Runs[1].Visualization; v0 != "" || v1 != "kept.porcupine.html" {
			t.Errorf("visualizations %q, %q; want the missing one dropped, the kept one kept", v0, v1)
		}
		if src.Histories[2] != nil || src.Missing[2] != "its history gone.history.jsonl was not found" {
			t.Errorf("an absent history: missing = %q", src.Missing[2])
		}
	}
	if _, err := LoadSource(filepath.Join(dir, "nothing")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a missing result: err = %v", err)
	}
}

func TestLink(t *testing.T) {
	tests := []struct {
		dir, rel, out, want string
	}{
		{"run1", "lua.porcupine.html", "", "lua.porcupine.html"},
		{"run1", "lua.porcupine.html", "run1", "lua.porcupine.html"},
		{"run1", "lua.porcupine.html", ".", "run1/lua.porcupine.html"},
		{"a/run1", "sub/x.html", "b", "../a/run1/sub/x.html"},
	}
	for _, tt := range tests {
		if got := link(tt.dir, tt.rel, tt.out); got != tt.want {
			t.Errorf("link(%q, %q, %q) = %q, want %q", tt.dir, tt.rel, tt.out, got, tt.want)
		}
	}
}

func TestFormatAt(t *testing.T) {
	tests := []struct {
		ns   int64
		want string
	}{
		{850_000, "850µs"},
		{600_200_000, "600.2ms"},
		{1_300_800_000, "1.3008s"},
		{100_110_000, "100.11ms"},
		{499, "0µs"},
	}
	for _, tt := range tests {
		if got := formatAt(tt.ns); got != tt.want {
			t.Errorf("formatAt(%d) = %q, want %q", tt.ns, got, tt.want)
		}
	}
}

func TestSpectrumAxis(t *testing.T) {
	tests := []struct {
		k    int
		want string
	}{{0, "0%"}, {1, "90%"}, {2, "99%"}, {3, "99.9%"}, {5, "99.999%"}}
	for _, tt := range tests {
		if got := nines(tt.k); got != tt.want {
			t.Errorf("nines(%d) = %q, want %q", tt.k, got, tt.want)
		}
	}
	if got := spectrumX(99.9); got < 2.999 || got > 3.001 {
		t.Errorf("spectrumX(99.9) = %v, want 3", got)
	}
	for k, want := range map[int]string{0: "1µs", 2: "100µs", 3: "1ms", 5: "100ms", 6: "1s", 7: "10s"} {
		if got := decadeLabel(k); got != want {
			t.Errorf("decadeLabel(%d) = %q, want %q", k, got, want)
		}
	}
}

func TestDelta(t *testing.T) {
	tests := []struct {
		ref, x       float64
		higherBetter bool
		text, class  string
	}{
		{100, 150, false, "+50.0%", "worse"},
		{100, 50, false, "-50.0%", "better"},
		{100, 150, true, "+50.0%", "better"},
		{100, 101, true, "+1.0%", "same"},
		{0, 5, true, "", ""},
	}
	for _, tt := range tests {
		text, class := delta(tt.ref, tt.x, tt.higherBetter)
		if text != tt.text || class != tt.class {
			t.Errorf("delta(%v, %v, %v) = %q, %q, want %q, %q", tt.ref, tt.x, tt.higherBetter, text, class, tt.text, tt.class)
		}
	}
}

// fixtureMatrix is a `lockbench matrix` result over the fixture's runs:
// lua stays safe under no fault, set-nx-ex shows the overlap and oversell
// its cell expects, and atomic's cell differs (a deadlock expected of a
// sale with no lock, to have one cell that misses).
func fixtureMatrix(t *testing.T) *reports.Result {
	res := fixtureResult(t)
	cells := []struct{ fault, expected, measured string }{
		{"", "safe", "safe"},
		{"pause-holder", "overlap, oversell", "overlap, oversell"},
		{"expire", "deadlock", "safe"},
	}
	for i, c := range cells {
		r := res.Runs[i]
		if c.fault != "" && len(r.Faults) == 0 {
			// The cell's fault struck, or it would measure "fault never
			// fired".
			r.Faults = []history.Fault{{Name: c.fault, Node: 0, Client: -1, Start: 200_000_000, End: 400_000_000}}
		}
		name := r.Impl + "/" + cmp.Or(c.fault, "none")
		res.Matrix = append(res.Matrix, reports.MatrixCell{
			Cell: name, Impl: r.Impl, Fault: c.fault, Nodes: 2,
			Expected: c.expected, Measured: c.measured, Match: c.expected == c.measured, Run: r,
		})
	}
	res.Matrix[1].Why = "a <measured> departure from the catalog"
	res.Runs = nil
	return res
}

// TestHTMLMatrix: a matrix result is drawn as its truth table, one row a
// cell, the cell that differs marked, and no empty verdict table.
func TestHTMLMatrix(t *testing.T) {
	page := string(render(t, Options{}, NewSource("matrix", "testdata", fixtureMatrix(t))))
	for _, want := range []string{
		"<h3>Truth table</h3>",
		"3 cells, 2 as expected, 1 differs.",
		`<tr class="row fail">` + "\n" + `<th scope="row" data-v="atomic/expire"><a href="#r1-cell-atomic_expire-3">atomic/expire</a></th>`,
		"&lt;measured&gt; departure",
		`<div class="reason">1 lock overlap:`,
		// A failure the truth table expects is no alarm.
		`<td class="verdict expected" data-v="fail, as expected">fail, as expected</td>`,
		// Each cell links to its own charts, folded below.
		`<a href="#r1-cell-set-nx-ex_pause-holder-2">L&#43;D</a>`,
		`<details class="cellrun" id="r1-cell-set-nx-ex_pause-holder-2"><summary>set-nx-ex/pause-holder <span class="badge pass">pass</span></summary>`,
		`aria-label="set-nx-ex/pause-holder: latency over the run"`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("report lacks %s", want)
		}
	}
	if n := strings.Count(page, `<tr class="row `); n != 3 {
		t.Errorf("%d rows, want one per cell (3)", n)
	}
	if n := strings.Count(page, `<details class="cellrun"`); n != 3 {
		t.Errorf("%d cells' charts, want one per cell (3)", n)
	}
	for _, absent := range []string{"<h3>Verdicts</h3>", `<svg class="chart overview"`} {
		if strings.Contains(page, absent) {
			t.Errorf("a matrix result's report has %s, drawn from no runs", absent)
		}
	}
}

// TestDistinctOverlaps: the timelines drawn are of different holders
// first, then of the rest, in the result's order.
func TestDistinctOverlaps(t *testing.T) {
	pair := func(a, b int) checker.Overlap {
		return checker.Overlap{A: checker.OpRef{Index: a}, B: checker.OpRef{Index: b}}
	}
	tests := []struct {
		name  string
		pairs []checker.Overlap
		n     int
		want  []int
	}{
		{"one paused holder overlapped by each successor", []checker.Overlap{pair(1, 2), pair(1, 3), pair(1, 4), pair(5, 6)}, 2, []int{0, 3}},
		{"all distinct", []checker.Overlap{pair(1, 2), pair(3, 4), pair(5, 6)}, 2, []int{0, 1}},
		{"too few distinct: the rest fill in", []checker.Overlap{pair(1, 2), pair(1, 3), pair(1, 4)}, 3, []int{0, 1, 2}},
		{"fewer than n", []checker.Overlap{pair(1, 2)}, 3, []int{0}},
	}
	for _, tt := range tests {
		if got := distinctOverlaps(tt.pairs, tt.n); !slices.Equal(got, tt.want) {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
}

// TestHTMLBlindSpot: a run whose nodes' clocks had an error says what it
// hides, under the run's heading; a run on one clock says nothing.
func TestHTMLBlindSpot(t *testing.T) {
	tests := []struct {
		name string
		eps  int64
		want int // blind-spot lines on the page
	}{
		{"one clock", 0, 0},
		{"nodes' clocks", 1_200_000, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := fixtureSource(t)
			src.Result.Runs[1].ClockError = tt.eps
			page := string(render(t, Options{}, src))
			if n := strings.Count(page, `<p class="blindspot">clock error ±1.20ms: overlaps shorter than 2.40ms cannot be seen`); n != tt.want {
				t.Errorf("%d blind-spot lines, want %d", n, tt.want)
			}
			if n := strings.Count(page, "blindspot"); n != tt.want {
				t.Errorf("%d mentions of a blind spot, want %d", n, tt.want)
			}
		})
	}
}

// TestHTMLMatrixInconclusiveAndIncomplete: an inconclusive cell is drawn
// as such (neither as expected nor differing), and a matrix that did not
// run every cell says so in its headline and summary.
func TestHTMLMatrixInconclusiveAndIncomplete(t *testing.T) {
	r := fixtureMatrix(t)
	for i := range r.Matrix {
		if !r.Matrix[i].Match {
			r.Matrix[i].Inconclusive, r.Matrix[i].Measured = true, reports.InconclusiveMeasured
		}
	}
	r.Incomplete = "interrupted after 3 of 9 cells"
	page := string(render(t, Options{}, NewSource("matrix", "testdata", r)))
	for _, want := range []string{
		"inconclusive: INCOMPLETE (interrupted after 3 of 9 cells): 3 cells, 2 as expected, 0 differ, 1 inconclusive (harness saturated)",
		`<tr class="row inconclusive">`,
		`<td class="inconclusive"`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("report lacks %s", want)
		}
	}
	if strings.Contains(page, `<tr class="row fail">`) {
		t.Error("an inconclusive cell is drawn as differing")
	}
}

// TestHTMLPipeline: a run whose buyers' commands shared round trips says
// so in its header; one without says nothing of it.
func TestHTMLPipeline(t *testing.T) {
	src := fixtureSource(t)
	if page := string(render(t, Options{}, src)); strings.Contains(page, "a round trip") {
		t.Errorf("a run without a pipeline mentions one")
	}
	src.Result.Config.Pipeline = 64
	if page := string(render(t, Options{}, src)); !strings.Contains(page, "up to 64 buyers&#39; commands a round trip") {
		t.Errorf("a pipelined run's header does not say so")
	}
}
