package htmlreport

import (
	"cmp"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lockbench/lockbench/checker"
	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/internal/words"
	"github.com/lockbench/lockbench/reports"
)

// The report's page, style and script, embedded so that the HTML file is
// one self-contained document: nothing is fetched, and it opens from
// file:// as it does from a CI system's artifact store.
//
//go:embed assets/report.html.tmpl assets/report.css assets/report.js
var assets embed.FS

// pageTemplate renders the report.
var pageTemplate = template.Must(template.New("report.html.tmpl").Funcs(template.FuncMap{
	"micros": reports.FormatMicros,
	"ratio":  func(x float64) string { return reports.FormatRatio(x, 1) },
	"commas": func(n int64) string { return words.Commas(n) },
	"inc":    func(i int) int { return i + 1 },
	"word":   verdictWord,
}).ParseFS(assets, "assets/report.html.tmpl"))

// ErrNoSource is returned by Write and WriteFile when given no result to
// report.
var ErrNoSource = errors.New("htmlreport: no result to report")

// maxTimelines is how many lock overlaps of one run get a timeline.
const maxTimelines = 3

// Source is one result.json and the histories saved beside it: what a
// report is drawn from.
type Source struct {
	// Label names the source in a comparison (its directory's name).
	Label string
	// Dir is the directory of result.json; the paths recorded in a Run
	// (History, Visualization) are relative to it.
	Dir string
	// Result is the result read.
	Result *reports.Result
	// Histories holds the history of each run of Result, by index; an
	// entry is nil when the history was not saved or could not be read,
	// and the charts that need it are left out with a note.
	Histories []*history.History
	// Missing says, by run index, why a history is nil ("" when present).
	Missing []string
}

// LoadSource reads the result at path (a result.json, or a directory
// holding one) and every history it names. A history that is missing or
// unreadable is noted in Missing, not an error: the report is drawn
// without the charts that need it. A porcupine view that is missing is
// dropped from its run, so that the report links nothing that is not there.
//
// Only files beside the result are read or linked: a run naming a path
// that leaves the result's directory (../, an absolute path) has it
// noted in Missing and left unread, and only regular files are read (a
// FIFO or a device is never opened for long; see history.OpenRegular).
func LoadSource(path string) (*Source, error) {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		path = filepath.Join(path, "result.json")
	}
	res, err := reports.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return HeldSource(filepath.Dir(path), res, nil), nil
}

// HeldSource is the source of res, a result held in memory whose files
// are in dir: the histories it names are taken from held (by the name
// each run recorded, Run.History) when there, so that a run drawing its
// own report never reads back what it holds, and read from dir as
// LoadSource does otherwise.
func HeldSource(dir string, res *reports.Result, held map[string]*history.History) *Source {
	label := filepath.Base(dir)
	if abs, err := filepath.Abs(dir); err == nil && (label == "." || label == "/") {
		label = filepath.Base(abs)
	}
	src := NewSource(label, dir, res)
	for i, r := range res.Runs {
		// A view that was not kept with the result is not linked.
		if v := r.Visualization; v != "" {
			if !filepath.IsLocal(filepath.FromSlash(v)) {
				res.Runs[i].Visualization = ""
			} else if _, err := os.Stat(filepath.Join(dir, filepath.FromSlash(v))); err != nil {
				res.Runs[i].Visualization = ""
			}
		}
		if h := held[r.History]; h != nil {
			src.Histories[i] = h
			continue
		}
		src.Histories[i], src.Missing[i] = readBeside(dir, r.History)
	}
	return src
}

// readBeside reads the history name, recorded by a run of the result in
// dir, or says why not.
func readBeside(dir, name string) (*history.History, string) {
	if name == "" {
		return nil, "its history was not saved (run with --out to keep it)"
	}
	if !filepath.IsLocal(filepath.FromSlash(name)) {
		return nil, fmt.Sprintf("its history %q is not beside the result, and was not read", name)
	}
	h, err := history.Key(nil).ReadFileIn(dir, filepath.FromSlash(name))
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil, fmt.Sprintf("its history %s was not found", name)
	case err != nil:
		return nil, fmt.Sprintf("its history could not be read: %v", err)
	}
	return h, ""
}

// NewSource wraps a result held in memory, with no histories.
func NewSource(label, dir string, r *reports.Result) *Source {
	return &Source{Label: label, Dir: dir, Result: r, Histories: make([]*history.History, len(r.Runs)), Missing: make([]string, len(r.Runs))}
}

// Options tune Write. The zero value is ready to use.
type Options struct {
	// Title heads the page; default "lockbench report".
	Title string
	// OutDir is the directory the HTML file is written to: links to files
	// kept beside a result (porcupine's visualization, the history) are
	// made relative to it. Empty leaves them relative to each result's
	// directory, right for a report written next to its result.json.
	OutDir string
}

// Write writes one self-contained HTML report of the sources: for one
// source, its verdicts and per implementation the latency spectrum, the
// sales over time with faults shaded, and a lock-holder timeline around
// each violation; for several, a side-by-side comparison with deltas
// against the first, then each source's own report, folded.
func Write(w io.Writer, opts Options, sources ...*Source) error {
	if len(sources) == 0 {
		return ErrNoSource
	}
	p := page{Title: opts.Title}
	if p.Title == "" {
		p.Title = "lockbench report"
	}
	css, err := assets.ReadFile("assets/report.css")
	if err != nil {
		return err
	}
	js, err := assets.ReadFile("assets/report.js")
	if err != nil {
		return err
	}
	p.CSS = template.CSS(css) //nolint:gosec // our own embedded file
	p.JS = template.JS(js)    //nolint:gosec // our own embedded file
	labels := uniqueLabels(sources)
	if len(sources) > 1 {
		p.Compare = newComparison(sources, labels)
	}
	failed, inconclusive := 0, 0
	for i, src := range sources {
		sec := newSection(src, labels[i], fmt.Sprintf("r%d", i+1), len(sources) > 1, opts.OutDir)
		switch sec.Class {
		case classFail:
			failed++
		case classInconclusive:
			inconclusive++
		}
		p.Sections = append(p.Sections, sec)
	}
	// The browser tab leads with the verdict too.
	switch {
	case len(sources) == 1:
		p.Title = verdictWord(p.Sections[0].Class) + " · " + p.Title
	case failed > 0:
		p.Title = fmt.Sprintf("FAIL (%d of %d results) · %s", failed, len(sources), p.Title)
	case inconclusive > 0:
		p.Title = fmt.Sprintf("inconclusive (%d of %d results) · %s", inconclusive, len(sources), p.Title)
	default:
		p.Title = "pass · " + p.Title
	}
	return pageTemplate.Execute(w, p)
}

// WriteFile writes the report to path, links made relative to the
// file's directory.
func WriteFile(path string, opts Options, sources ...*Source) error {
	opts.OutDir = filepath.Dir(path)
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := Write(f, opts, sources...); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// uniqueLabels returns the sources' labels, numbered where two coincide.
func uniqueLabels(sources []*Source) []string {
	seen := map[string]int{}
	for _, s := range sources {
		seen[s.Label]++
	}
	out := make([]string, len(sources))
	n := map[string]int{}
	for i, s := range sources {
		out[i] = s.Label
		if seen[s.Label] > 1 {
			n[s.Label]++
			out[i] = fmt.Sprintf("%s (%d)", s.Label, n[s.Label])
		}
	}
	return out
}

// page is the template's data.
type page struct {
	Title    string
	CSS      template.CSS
	JS       template.JS
	Compare  *comparison
	Sections []section
}

// section is one result's report.
type section struct {
	ID, Label string
	Folded    bool
	// Headline leads the section: the verdict, what failed, the workload
	// and the faults; Class (verdictClass) colours it.
	Headline string
	Class    string
	// Inconclusive is true when a run's verdict is inconclusive: the
	// overview's caption then says what its amber means.
	Inconclusive bool
	Header       []keyValue
	Command      string
	Verdicts     []verdictRow
	Overview     template.HTML
	Impls        []implView
	Notes        []string
	Matrix       *matrixView
}

// matrixView is the truth table of a `lockbench matrix` result.
type matrixView struct {
	Summary string
	Rows    []matrixRow
	// Faults and Grid lay the cells out as implementations by faults;
	// empty for a matrix of one row or one column.
	Faults []string
	Grid   []gridRowView
}

// gridRowView is one implementation across the faults.
type gridRowView struct {
	Impl  string
	Cells []gridCellView
}

// gridCellView is one cell of the grid: its mark, whether it is as
// expected, and what it expected and measured (empty Mark: no such cell).
type gridCellView struct {
	Mark, Title         string
	Match, Inconclusive bool
	// ID is the cell's own charts' section, which the cell links to.
	ID string
}

// matrixRow is one cell of the truth table.
type matrixRow struct {
	// ID is the cell's own charts' section, which the row links to.
	ID                                     string
	Cell, Expected, Measured, Verdict, Why string
	// Sweep says what each value of a sweep showed; empty without one.
	Sweep string
	Nodes int
	// Match and Inconclusive: the cell measured what it expects, or
	// could not be judged (its harness saturated).
	Match, Inconclusive bool
	// Class is the run's verdict as a CSS class (verdictClass).
	Class   string
	Reasons []string
}

// cellID is the HTML id of the section of a matrix's cell i, in the
// section with the given id.
func cellID(section string, c reports.MatrixCell, i int) string {
	return section + "-cell-" + slug(c.Cell, i)
}

// newMatrixView builds the truth table of cells, each linked to its own
// charts' section (cellID) in the section id; nil without cells.
func newMatrixView(id string, cells []reports.MatrixCell, incomplete string) *matrixView {
	if len(cells) == 0 {
		return nil
	}
	ids := map[string]string{}
	for i, c := range cells {
		ids[c.Cell] = cellID(id, c, i)
	}
	v := &matrixView{Summary: reports.IncompleteSummary(cells, incomplete) + "."}
	if g := reports.NewGrid(cells); len(g.Rows) > 1 && len(g.Faults) > 1 {
		v.Faults = g.Faults
		for _, r := range g.Rows {
			row := gridRowView{Impl: r.Impl}
			for _, c := range r.Cells {
				if c == nil {
					row.Cells = append(row.Cells, gridCellView{})
					continue
				}
				row.Cells = append(row.Cells, gridCellView{
					Mark: c.Mark(), Match: c.Match, Inconclusive: !c.Match && c.Inconclusive,
					Title: fmt.Sprintf("%s: expected %s, measured %s", c.Cell, c.Expected, c.Measured),
					ID:    ids[c.Cell],
				})
			}
			v.Grid = append(v.Grid, row)
		}
	}
	for _, c := range cells {
		verdict, class := c.Run.Verdict, verdictClass(c.Run.Verdict)
		if c.Match && class == classFail {
			// A failure the truth table expects is the cell passing:
			// it reads so, not as a red FAIL in a green report.
			verdict, class = c.Run.Verdict+", as expected", classExpected
		}
		v.Rows = append(v.Rows, matrixRow{
			ID: ids[c.Cell], Cell: c.Cell, Expected: c.Expected, Measured: c.Measured, Verdict: verdict, Why: c.Why,
			Nodes: c.Nodes, Match: c.Match, Class: class, Reasons: c.Run.Reasons, Sweep: c.Sweep.Summary(),
			Inconclusive: !c.Match && c.Inconclusive,
		})
	}
	return v
}

// cellViews are the charts of each cell of a matrix, folded, on axes the
// cells share: what each cell's run did over time, linked from the truth
// table. The matrix report reads no cell's history (there may be a
// hundred), so a cell's overlaps are drawn as their pairs alone.
func cellViews(src *Source, id string, cells []reports.MatrixCell, outDir string) []implView {
	runs := make([]reports.Run, len(cells))
	for i := range cells {
		runs[i] = cells[i].Run
		runs[i].Impl = cells[i].Cell
	}
	ax := sharedAxes(runs)
	out := make([]implView, len(cells))
	for i := range cells {
		out[i] = newImplView(src, &runs[i], nil, "the matrix report does not read the cells' histories", cellID(id, cells[i], i), outDir, ax)
		out[i].Folded = true
		if cells[i].Match {
			out[i].Class = classPass // its verdict is the one the truth table expects
		}
	}
	return out
}

// keyValue is one line of a section's header.
type keyValue struct{ Key, Value string }

// verdictRow is one row of the verdict table.
type verdictRow struct {
	ID, Impl, Verdict                       string
	Class                                   string // verdictClass of Verdict
	Lock, Data, Liveness, Linearizability   status
	Sold, Oversold, Overlaps                string
	P50, P99, Sales, Cmds                   string
	SoldV, OversoldV, OverlapsV, P50V, P99V int64
	SalesV, CmdsV                           float64
	Reasons, Notes                          []string
	Repetitions                             int
	HasLockSafety                           bool
	// Saturated is true when the harness was saturated: the findings
	// point to the run's saturation box.
	Saturated bool
}

// status is a check's status with the CSS class that colours it.
type status struct{ Text, Class string }

// newStatus pairs s with its class.
func newStatus(s checker.Status) status {
	class := map[checker.Status]string{
		checker.OK: "ok", checker.NotApplicable: "na", checker.Unknown: "unknown",
		checker.Illegal: "bad", checker.Violated: "bad", checker.Inconclusive: classInconclusive,
	}[s]
	if s == "" {
		return status{Text: "-", Class: "na"}
	}
	return status{Text: string(s), Class: class}
}

// implView is one implementation's part of a section.
type implView struct {
	ID, Impl string
	// Folded is true for a matrix cell's section, shown closed.
	Folded        bool
	Backend       string // the servers the run used, with their versions
	BlindSpot     string // what the nodes' clock error hides, when there was one
	Class         string // verdictClass of the run's verdict
	Saturation    *saturationView
	Health        []healthRow
	HealthNote    string
	StarvedNote   string // what the hatched bands on the charts over the run are
	Spectrum      template.HTML
	Sales         template.HTML
	Latency       template.HTML
	Recovery      []string // how long each fault's effect on the p99 lasted
	Timelines     []timelineView
	TimelineNote  string
	Visualization string
	History       string
	FirstIllegal  string
	Repetitions   []reports.Repetition
}

// timelineView is one lock-holder timeline.
type timelineView struct {
	Caption string
	Chart   template.HTML
	Note    string
}

// newSection builds the report of one source.
func newSection(src *Source, label, id string, folded bool, outDir string) section {
	r := src.Result
	s := section{ID: id, Label: label, Folded: folded, Command: r.Command}
	c := r.Config
	s.Header = []keyValue{{"version", r.Version}}
	if !r.Started.IsZero() {
		s.Header = append(s.Header, keyValue{"started", r.Started.UTC().Format(time.RFC3339)})
	}
	if c.Backend != "" {
		s.Header = append(s.Header, keyValue{"backend", c.Backend})
	}
	if c.Clients > 0 {
		arrive := fmt.Sprintf("over %v", time.Duration(c.Ramp))
		if c.Rate > 0 {
			arrive = "at " + reports.RateString(c.Rate)
		}
		s.Header = append(s.Header,
			keyValue{"workload", fmt.Sprintf("%s buyers %s on %d nodes, stock %s, %d workers per node",
				words.Commas(int64(c.Clients)), arrive, c.Nodes, words.Commas(c.Stock), c.Workers)})
	}
	if len(c.Faults) > 0 {
		s.Header = append(s.Header, keyValue{"faults", strings.Join(c.Faults, ", ")})
	}
	if c.Pipeline > 0 {
		s.Header = append(s.Header, keyValue{"pipeline", fmt.Sprintf("up to %d buyers' commands a round trip", c.Pipeline)})
	}
	if n := c.Extra["repeat"]; n != "" {
		s.Header = append(s.Header, keyValue{"repeat", n + " repetitions per implementation; figures are medians"})
	}
	s.Headline, s.Class = headline(r)
	s.Matrix = newMatrixView(id, r.Matrix, r.Incomplete)
	s.Impls = append(s.Impls, cellViews(src, id, r.Matrix, outDir)...)
	s.Overview = overviewChart(r.Runs)
	ax := sharedAxes(r.Runs)
	for i := range r.Runs {
		run := &r.Runs[i]
		iid := id + "-" + slug(run.Impl, i)
		s.Verdicts = append(s.Verdicts, newVerdictRow(run, iid))
		s.Inconclusive = s.Inconclusive || run.Verdict == reports.Inconclusive
		var h *history.History
		var missing string
		if i < len(src.Histories) {
			h, missing = src.Histories[i], src.Missing[i]
		}
		s.Impls = append(s.Impls, newImplView(src, run, h, missing, iid, outDir, ax))
	}
	return s
}

// slug makes an HTML id of an implementation's name.
func slug(name string, i int) string {
	var b strings.Builder
	for _, r := range strings.ToLower(name) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	return b.String() + "-" + strconv.Itoa(i+1)
}

// newVerdictRow builds the verdict table's row of run.
func newVerdictRow(r *reports.Run, id string) verdictRow {
	p := r.Latency.Purchase
	return verdictRow{
		ID: id, Impl: r.Impl, Verdict: r.Verdict, Class: verdictClass(r.Verdict), Saturated: len(r.Saturation) > 0,
		Lock: newStatus(r.Lock.Status), Data: newStatus(r.Data.Status),
		Liveness: newStatus(r.Liveness.Status), Linearizability: newStatus(r.Linearizability.Status),
		Sold:     fmt.Sprintf("%s/%s", words.Commas(r.Sold), words.Commas(r.Stock)),
		Oversold: words.Commas(r.Oversold), Overlaps: strconv.Itoa(r.Lock.Overlaps),
		P50: reports.FormatLatency(p, p.P50), P99: reports.FormatLatency(p, p.P99),
		Sales: reports.FormatRatio(r.SalesPerSec, r.Sold), Cmds: reports.FormatCommands(r, r.CommandsPerSale, r.Sold),
		SoldV: r.Sold, OversoldV: r.Oversold, OverlapsV: int64(r.Lock.Overlaps),
		P50V: p.P50, P99V: p.P99, SalesV: r.SalesPerSec, CmdsV: r.CommandsPerSale,
		Reasons: r.Reasons, Notes: r.Notes, Repetitions: len(r.Repetitions),
		HasLockSafety: r.Lock.Status != checker.NotApplicable,
	}
}

// newImplView builds one implementation's charts.
func newImplView(src *Source, r *reports.Run, h *history.History, missing, id, outDir string, ax axes) implView {
	v := implView{ID: id, Impl: r.Impl, Backend: r.Backend, Class: verdictClass(r.Verdict), Repetitions: r.Repetitions}
	if v.Saturation = newSaturationView(r); v.Saturation != nil {
		v.Saturation.ID = id + "-saturation"
	}
	v.Health, v.HealthNote = healthRows(r.Health)
	if n := len(starved(r)); n > 0 {
		v.StarvedNote = fmt.Sprintf("Hatched grey: %s in which lockbench itself stood still for %v or more at once (harness starved); what the run did there is the harness's slowness, not the lock's.",
			words.Count(int64(n), "span"), history.StarvedAt)
	}
	if r.ClockError > 0 {
		v.BlindSpot = reports.BlindSpot(r.ClockError) + " (every call was judged that much earlier, every return that much later)."
	}
	ss := []series{{name: "purchase", colour: colour(0), points: r.Latency.Purchase.Spectrum}}
	if a := r.Latency.Acquire; a != nil {
		ss = append(ss, series{name: "lock acquire", colour: colour(1), points: a.Spectrum})
	}
	v.Spectrum = spectrumChart(r.Impl+": latency by percentile", ss)
	v.Sales = salesChart(r.Impl+": units sold per second", r, ax)
	v.Latency = latencyChart(r.Impl+": latency over the run", r, ax)
	v.Recovery = recoverySentences(reports.Recoveries(r))
	if r.Visualization != "" {
		v.Visualization = link(src.Dir, r.Visualization, outDir)
	}
	if r.History != "" && h != nil {
		v.History = link(src.Dir, r.History, outDir)
	}
	if w := r.FirstIllegal; w != nil {
		v.FirstIllegal = formatAt(w.From) + "–" + formatAt(w.To)
	}
	switch {
	case r.Lock.Status == checker.NotApplicable:
		v.TimelineNote = "No lock: there is no critical section to draw."
	case len(r.Lock.Pairs) == 0 && r.Lock.Overlaps == 0:
		v.TimelineNote = "No lock overlap: no timeline to draw."
	case len(r.Lock.Pairs) == 0:
		v.TimelineNote = fmt.Sprintf("%d lock overlaps, none named in the result.", r.Lock.Overlaps)
	default:
		for _, i := range distinctOverlaps(r.Lock.Pairs, maxTimelines) {
			p := r.Lock.Pairs[i]
			chart, left := timelineChart(fmt.Sprintf("%s: who held the lock around overlap %d", r.Impl, i+1), p, h, r.Faults, starved(r))
			s := overlapSpan(p)
			tv := timelineView{
				Caption: fmt.Sprintf("Overlap %d: client %d entered at %s while client %d held the lock since %s; both held it for %s. Cause: %s. Zoomed to %s–%s.",
					i+1, p.B.Client, formatAt(p.B.From), p.A.Client, formatAt(p.A.From), reports.FormatMicros((p.Duration+500)/1000), p.Explain(), formatAt(s.from), formatAt(s.to)),
				Chart: chart,
			}
			if left > 0 {
				tv.Note = fmt.Sprintf("%d more holders in this window are not drawn.", left)
			}
			v.Timelines = append(v.Timelines, tv)
		}
		if h == nil {
			v.TimelineNote = "Only the overlapping pair is drawn: " + missing + "."
		}
		if n := r.Lock.Overlaps; n > len(v.Timelines) {
			v.TimelineNote = strings.TrimSpace(v.TimelineNote + fmt.Sprintf(" %d of %d overlaps drawn.", len(v.Timelines), n))
		}
	}
	return v
}

// link returns the href of rel (relative to dir) for a page written to
// outDir: relative to outDir when it can be, otherwise a file URL.
func link(dir, rel, outDir string) string {
	if outDir == "" {
		return filepath.ToSlash(rel)
	}
	target := filepath.Join(dir, filepath.FromSlash(rel))
	absT, err1 := filepath.Abs(target)
	absO, err2 := filepath.Abs(outDir)
	if err1 == nil && err2 == nil {
		if r, err := filepath.Rel(absO, absT); err == nil {
			return filepath.ToSlash(r)
		}
		return "file://" + filepath.ToSlash(absT)
	}
	return filepath.ToSlash(target)
}

// The CSS classes of the three verdicts (verdictClass): green, red and
// amber on the page.
const (
	classPass         = "pass"
	classFail         = "fail"
	classInconclusive = "inconclusive"
	// classExpected is a matrix cell's failure that the truth table
	// expects: no alarm.
	classExpected = "expected"
)

// verdictClass is the CSS class of a run's verdict: pass, inconclusive,
// or fail for any other (a verdict this build does not know is no pass).
func verdictClass(verdict string) string {
	switch verdict {
	case reports.Pass:
		return classPass
	case reports.Inconclusive, reports.Interrupted:
		return classInconclusive
	}
	return classFail
}

// verdictWord is a verdict's class as the page shows it: a failure in
// capitals, to catch the eye.
func verdictWord(class string) string {
	switch class {
	case classPass:
		return "pass"
	case classInconclusive:
		return "inconclusive"
	}
	return "FAIL"
}

// saturationView is the box of a run whose harness was saturated: how,
// and, when its verdict is inconclusive, the liveness findings set aside.
type saturationView struct {
	ID           string // the box's HTML id, which the findings link to
	Inconclusive bool
	Sentences    []string
	Unjudged     []string
	Advice       string
}

// newSaturationView builds r's saturation box; nil when its harness was
// not saturated.
func newSaturationView(r *reports.Run) *saturationView {
	if len(r.Saturation) == 0 {
		return nil
	}
	return &saturationView{
		Inconclusive: r.Verdict == reports.Inconclusive,
		Sentences:    r.Saturation, Unjudged: r.Unjudged, Advice: checker.Advice,
	}
}

// healthRow is one figure of a run's health table: what, how much, the
// bound beyond which the harness counts as saturated ("" where it depends
// on more than the figure), and whether it is beyond.
type healthRow struct {
	Name, Value, Bound string
	Over               bool
}

// healthRows are the health figures of h, and a note on whose they are;
// none when h is nil.
func healthRows(h *history.Health) ([]healthRow, string) {
	if h == nil {
		return nil, ""
	}
	dur := func(ns int64) string { return reports.FormatMicros((ns + 500) / 1000) }
	limit := checker.OthersLimit(h)
	others := healthRow{Name: "other processes' tasks ready to run", Value: "not measured", Bound: fmt.Sprintf("%.0f (a core each)", limit)}
	if h.Others >= 0 {
		others.Value = fmt.Sprintf("%.1f on %d cores", h.Others, max(h.Cores, h.CPUs, 1))
		others.Over = h.Others >= limit
	}
	wait := healthRow{Name: "CPU wait", Value: "not measured"}
	if h.CPUWait >= 0 {
		wait.Value = fmt.Sprintf("%.0f%%", h.CPUWait*100)
	}
	rows := []healthRow{
		others,
		wait,
		{Name: "longest stall", Value: dur(h.StallMax), Bound: "⅓ of the lease"},
		{Name: "scheduler latency p99", Value: dur(h.SchedP99)},
		{Name: "GC pause, longest", Value: dur(h.GCPauseMax)},
		{Name: "arrival lag p99", Value: dur(h.LagP99), Bound: reports.FormatMicros(checker.LagBound.Microseconds()), Over: h.LagP99 >= int64(checker.LagBound)},
	}
	if h.ServerPingMax > 0 {
		rows = append(rows, healthRow{Name: "embedded server ping, longest", Value: dur(h.ServerPingMax),
			Bound: reports.FormatMicros(checker.PingBound.Microseconds()), Over: h.ServerPingMax >= int64(checker.PingBound)})
	}
	if h.ServerClockStepMax > 0 {
		rows = append(rows, healthRow{Name: "embedded server clock step, longest", Value: dur(h.ServerClockStepMax), Bound: "⅓ of the lease"})
	}
	if n := len(h.Starved); n > 0 {
		var longest, total int64
		for _, s := range h.Starved {
			longest, total = max(longest, s.To-s.From), total+s.To-s.From
		}
		rows = append(rows, healthRow{Name: "starved", Value: fmt.Sprintf("%s in %s, the longest %s", dur(total), words.Count(int64(n), "span"), dur(longest)), Over: true})
	}
	note := ""
	if n := len(h.Nodes); n > 0 {
		note = fmt.Sprintf("The worst of lockbench's process and its %s.", words.Count(int64(n), "node process"))
	}
	return rows, note
}

// headline says in one line what a result found: the verdict, how many
// implementations (or matrix cells) failed and which, which were
// inconclusive, the workload and the faults. It returns the verdict's
// class too: fail when any implementation failed, inconclusive when none
// did but one was inconclusive, otherwise pass.
func headline(r *reports.Result) (string, string) {
	var parts []string
	class, word := classPass, ""
	if len(r.Matrix) > 0 {
		d := reports.Differing(r.Matrix)
		switch {
		case d > 0:
			class = classFail
		case r.Incomplete != "" || reports.InconclusiveCells(r.Matrix) > 0:
			// Nothing differs, but not every cell was judged: the
			// summary says which cells are missing or inconclusive.
			class = classInconclusive
		}
		parts = append(parts, reports.IncompleteSummary(r.Matrix, r.Incomplete))
	} else {
		var failed, inconclusive, interrupted []string
		for _, run := range r.Runs {
			switch {
			case run.Verdict == reports.Interrupted:
				interrupted = append(interrupted, run.Impl)
			case verdictClass(run.Verdict) == classFail:
				failed = append(failed, run.Impl)
			case verdictClass(run.Verdict) == classInconclusive:
				inconclusive = append(inconclusive, run.Impl)
			}
		}
		n := int64(len(r.Runs))
		switch {
		case len(failed) > 0:
			class = classFail
			parts = append(parts, fmt.Sprintf("%d of %s failed: %s", len(failed), words.Count(n, "implementation"), strings.Join(failed, ", ")))
		case len(inconclusive) == 0 && len(interrupted) == 0 && len(r.NotRun) == 0:
			parts = append(parts, fmt.Sprintf("%s passed", words.Plural(n, "the implementation", fmt.Sprintf("all %d implementations", n))))
		default:
			class = classInconclusive
		}
		if len(interrupted) > 0 || len(r.NotRun) > 0 {
			if class != classFail {
				word = "interrupted"
			}
			if len(interrupted) > 0 {
				parts = append(parts, strings.Join(interrupted, ", ")+" cut short before its end")
			}
			if len(r.NotRun) > 0 {
				parts = append(parts, "never ran: "+strings.Join(r.NotRun, ", "))
			}
		}
		switch {
		case len(inconclusive) > 0 && n == 1:
			parts = append(parts, inconclusive[0]+" was inconclusive, the harness saturated")
		case len(inconclusive) > 0:
			parts = append(parts, fmt.Sprintf("%d of %s inconclusive, the harness saturated: %s", len(inconclusive), words.Count(n, "implementation"), strings.Join(inconclusive, ", ")))
		}
	}
	c := r.Config
	if c.Clients > 0 {
		parts = append(parts, fmt.Sprintf("%s buyers, stock %s, %s", words.Commas(int64(c.Clients)), words.Commas(c.Stock), words.Count(c.Nodes, "node")))
	}
	faults := "no fault"
	if len(c.Faults) > 0 {
		faults = "faults: " + strings.Join(c.Faults, ", ")
	}
	if len(r.Matrix) == 0 {
		parts = append(parts, faults)
	}
	return cmp.Or(word, verdictWord(class)) + ": " + strings.Join(parts, " · "), class
}

// recoverySentences says how long each fault's effect on the p99 lasted:
// one sentence a fault window, or, for a fault that struck several times,
// one sentence for all its windows (the median and the longest), so that a
// fault that fired a hundred times does not fill the caption.
func recoverySentences(recs []reports.Recovery) []string {
	var order []string
	byFault := map[string][]reports.Recovery{}
	for _, rec := range recs {
		if _, ok := byFault[rec.Fault]; !ok {
			order = append(order, rec.Fault)
		}
		byFault[rec.Fault] = append(byFault[rec.Fault], rec)
	}
	micros := func(d time.Duration) string { return reports.FormatMicros(int64(d / time.Microsecond)) }
	var out []string
	for _, f := range order {
		rs := byFault[f]
		var back []time.Duration
		unseen := 0
		for _, rec := range rs {
			switch {
			case rec.Unseen:
				unseen++
			case !rec.Never:
				back = append(back, rec.After)
			}
		}
		if unseen == len(rs) {
			out = append(out, fmt.Sprintf("No attempt was answered after %s: the sale was over, so its effect cannot be seen.", f))
			continue
		}
		seen := len(rs) - unseen // the windows with attempts answered after them
		never := seen - len(back)
		switch {
		case seen == 1 && never == 1:
			out = append(out, fmt.Sprintf("After %s the p99 did not come back within twice its level before the faults.", f))
		case seen == 1:
			out = append(out, fmt.Sprintf("After %s the p99 was back within twice its level before the faults %s after the fault ended.", f, micros(back[0])))
		case len(back) == 0:
			out = append(out, fmt.Sprintf("After none of the %d %s windows did the p99 come back within twice its level before the faults.", seen, f))
		default:
			slices.Sort(back)
			s := fmt.Sprintf("After the %d %s windows the p99 was back within twice its level before the faults %s after a window ended at the median, %s at the longest", seen, f, micros(back[len(back)/2]), micros(back[len(back)-1]))
			if never > 0 {
				s += fmt.Sprintf("; after %d it never was", never)
			}
			out = append(out, s+".")
		}
	}
	return out
}
