package htmlreport

import (
	"cmp"
	"fmt"
	"html"
	"html/template"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lockbench/lockbench/checker"
	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/reports"
)

// The charts are inline SVG drawn here, in Go: the report needs no chart
// library, renders the same in any browser and from file://, and its
// structure can be golden-tested. Every text that comes from a result
// goes through esc.

// Chart geometry, in SVG user units. The charts scale to their box, and
// the page lays them out so that their box is about as many CSS pixels
// wide as their viewBox (the grid gives each of an implementation's three
// charts a column from about 340 px on a phone to 520 px on a wide
// monitor; report.css): a unit reads as about a pixel, and text of
// fontSize units as text of about fontSize pixels, never below 9.
const (
	chartW       = 400 // an implementation's charts
	plotH        = 160 // their plots' height
	marginR      = 12
	padT         = 6  // above the legends and labels over a plot
	gapT         = 4  // between them and the plot
	tickB        = 22 // below a plot: its time or percentile ticks
	titleB       = 16 // and under those, an axis title
	timelineRows = 14 // lock holders drawn around one violation
	rowH         = 18
	timelineW    = 900 // the timeline is as wide as a wide figure
	overviewW    = 720
	barH         = 20 // a row of the overview
)

// Text sizes, in user units, that the layout reserves room for.
const (
	fontSize = 11
	lineH    = 15 // a row of text: the glyphs' box, 1.17 em, and a gap
	labelGap = 8  // between two labels on a row
	maxRows  = 3  // of fault labels over a plot; more are left to hover
)

// textWidth estimates the width of s drawn at fontSize in a sans-serif
// font, by classes of letters, erring wide: 2-5% wider than Chromium draws
// DejaVu Sans, the widest of the usual fallbacks. It keeps labels inside
// their chart and apart, which the browser test checks on real boxes.
func textWidth(s string, bold bool) float64 {
	var em float64
	for _, r := range s {
		switch {
		case strings.ContainsRune(" .,:;'!|", r):
			em += 0.34
		case strings.ContainsRune("ijlft()[]-/·", r):
			em += 0.40
		case r == 'r':
			em += 0.44
		case strings.ContainsRune("mw%#@MW", r):
			em += 1.0
		case r >= 'A' && r <= 'Z':
			em += 0.76
		case r >= '0' && r <= '9', r >= 'a' && r <= 'z', r == 'µ':
			em += 0.65
		default:
			em += 0.8
		}
	}
	if bold {
		em *= 1.1
	}
	return em * fontSize
}

// fit shortens s with an ellipsis until it is at most w wide.
func fit(s string, w float64, bold bool) string {
	if textWidth(s, bold) <= w {
		return s
	}
	rs := []rune(s)
	for len(rs) > 1 && textWidth(string(rs)+"…", bold) > w {
		rs = rs[:len(rs)-1]
	}
	return string(rs) + "…"
}

// palette colours series, nodes and sources; colour-blind safe (Okabe-Ito).
var palette = []string{"#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000"}

// colour returns the i-th colour of the palette, cycling.
func colour(i int) string { return palette[((i%len(palette))+len(palette))%len(palette)] }

// svg accumulates one chart's markup.
type svg struct{ strings.Builder }

// f appends formatted markup; text arguments must already be escaped.
func (b *svg) f(format string, args ...any) { fmt.Fprintf(&b.Builder, format, args...) }

// open starts a chart with its accessible title and a class naming its
// kind, which the browser test counts. Its text is fontSize units high,
// the size its layout leaves room for.
func (b *svg) open(kind, title string, w, h float64) {
	b.f(`<svg class="chart %s" viewBox="0 0 %s %s" font-size="%d" role="img" aria-label="%s" xmlns="http://www.w3.org/2000/svg"><title>%s</title>`,
		kind, num(w), num(h), fontSize, esc(title), esc(title))
}

// html closes the chart and returns it as markup for the template.
func (b *svg) html() template.HTML {
	b.WriteString("</svg>")
	// The markup is built from escaped text and numbers only.
	return template.HTML(b.String()) //nolint:gosec
}

// esc escapes text for SVG markup.
func esc(s string) string { return html.EscapeString(s) }

// num formats a coordinate with at most one decimal.
func num(x float64) string {
	return strconv.FormatFloat(math.Round(x*10)/10, 'f', -1, 64)
}

// tick is a mark on an axis: where, in the axis' units, and what it reads.
type tick struct {
	at    float64
	label string
}

// leftMargin is the room left of a plot for the labels of ticks, and for
// a rotated axis title when titled.
func leftMargin(ticks []tick, titled bool) float64 {
	w := 0.0
	for _, t := range ticks {
		w = max(w, textWidth(t.label, false))
	}
	if titled {
		w += 16
	}
	return math.Ceil(w + 10)
}

// yTicks draws a grid line at each of ticks and its label left of the
// plot, leaving out a label too near the last one drawn.
func yTicks(b *svg, ticks []tick, y func(float64) float64, left, right float64) {
	last := math.Inf(1)
	for _, t := range ticks {
		yy := y(t.at)
		b.f(`<line class="grid" x1="%s" y1="%s" x2="%s" y2="%s"/>`, num(left), num(yy), num(right), num(yy))
		if math.Abs(last-yy) < lineH {
			continue
		}
		b.f(`<text class="tick" x="%s" y="%s" text-anchor="end">%s</text>`, num(left-5), num(yy+4), esc(t.label))
		last = yy
	}
}

// yTitle draws a vertical axis' title, rotated, left of its tick labels.
func yTitle(b *svg, title string, middle float64) {
	b.f(`<text class="axis" x="12" y="%s" transform="rotate(-90 12 %s)" text-anchor="middle">%s</text>`, num(middle), num(middle), esc(title))
}

// xTicks draws the labels of ticks under a plot whose bottom is at
// bottom: each centred on its tick, or moved to stay between lo and hi,
// and left out where it would come near the last one drawn.
func xTicks(b *svg, ticks []tick, x func(float64) float64, bottom, lo, hi float64) {
	end := math.Inf(-1)
	for _, t := range ticks {
		xx, w := x(t.at), textWidth(t.label, false)
		x0, at, anchor := xx-w/2, xx, "middle"
		switch {
		case x0 < lo:
			x0, at, anchor = lo, lo, "start"
		case xx+w/2 > hi:
			x0, at, anchor = hi-w, hi, "end"
		}
		if x0 < end+labelGap {
			continue
		}
		end = x0 + w
		b.f(`<text class="tick" x="%s" y="%s" text-anchor="%s">%s</text>`, num(at), num(bottom+15), anchor, esc(t.label))
	}
}

// timeScale maps instants of s onto left…right.
func timeScale(s span, left, right float64) func(int64) float64 {
	if s.to <= s.from {
		s.to = s.from + 1
	}
	return func(t int64) float64 { return left + float64(t-s.from)/float64(s.to-s.from)*(right-left) }
}

// timeTicks chooses the ticks of a time axis over s drawn w wide: six
// steps of a round length, or fewer when their labels would not stand
// apart.
func timeTicks(s span, w float64) []tick {
	d := float64(max(s.to-s.from, 1))
	for n := 6; ; n-- {
		step := niceStep(d / float64(n))
		var ts []tick
		widest := 0.0
		for t := math.Ceil(float64(s.from)/step) * step; t <= float64(s.to)+1; t += step {
			l := formatInstant(int64(t), step)
			ts = append(ts, tick{t, l})
			widest = max(widest, textWidth(l, false))
		}
		if n <= 2 || widest+labelGap <= step/d*w {
			return ts
		}
	}
}

// timeAxis draws the ticks of a time axis over s, mapped by x, under a
// plot whose bottom is at bottom; its labels stay left of hi.
func timeAxis(b *svg, s span, x func(int64) float64, bottom, hi float64) {
	left, right := x(s.from), x(s.to)
	ticks := timeTicks(s, right-left)
	for _, t := range ticks {
		xx := x(int64(t.at))
		b.f(`<line class="tickmark" x1="%s" y1="%s" x2="%s" y2="%s"/>`, num(xx), num(bottom), num(xx), num(bottom+4))
	}
	xTicks(b, ticks, func(v float64) float64 { return x(int64(v)) }, bottom, left, hi)
}

// legendItem is an entry of a chart's key: a swatch and a name. The
// swatch is coloured by fill, or by CSS through class; bar makes it a
// block rather than a line.
type legendItem struct {
	name, fill, class string
	bar               bool
	// hatch draws diagonal strokes over the swatch, as over the bands
	// it names (the harness starved).
	hatch bool
}

// legend is a chart's key, over the plot rather than on it: its entries
// left to right, on as many rows as they need.
type legend struct {
	items []legendItem
	xs    []float64
	row   []int
	rows  int
}

// newLegend lays items out from lo, wrapping before hi.
func newLegend(items []legendItem, lo, hi float64) legend {
	l := legend{items: items}
	x, row := lo, 0
	for i := range l.items {
		it := &l.items[i]
		it.name = fit(it.name, hi-lo-16, false)
		w := 16 + textWidth(it.name, false)
		if x > lo && x+w > hi {
			x, row = lo, row+1
		}
		l.xs, l.row = append(l.xs, x), append(l.row, row)
		x += w + 14
		l.rows = row + 1
	}
	return l
}

// draw writes the legend, its first row's top at top.
func (l legend) draw(b *svg, top float64) {
	for i, it := range l.items {
		y := top + float64(l.row[i])*lineH
		h := 4.0
		if it.bar {
			h = 9
		}
		attr := `fill="` + it.fill + `"`
		if it.class != "" {
			attr = `class="key ` + it.class + `"`
		}
		b.f(`<rect %s x="%s" y="%s" width="12" height="%s"/>`, attr, num(l.xs[i]), num(y+8-h/2), num(h))
		if it.hatch {
			b.f(`<path class="hatch" d="%s"/>`, hatch(l.xs[i], l.xs[i]+12, y+8-h/2, y+8+h/2))
		}
		b.f(`<text class="legend" x="%s" y="%s">%s</text>`, num(l.xs[i]+16), num(y+11.5), esc(it.name))
	}
}

// starvedKey is the legend's entry for the bands of the harness starved.
var starvedKey = legendItem{name: "harness starved", class: "starved", bar: true, hatch: true}

// band places the labels of marks on a time axis (faults, the first
// illegal segment, an overlap) in rows over the plot, each at its mark's
// x and on the lowest row where it keeps clear of the others, so that two
// labels never share a place; a label that finds no room on maxRows is
// left out, its mark keeping its description on hover.
type band struct {
	lo, hi float64
	max    int
	taken  [][][2]float64 // per row, the spans of its labels
	labels []bandLabel
}

// bandLabel is a label placed in a band.
type bandLabel struct {
	x           float64
	row         int
	text, class string
}

// add places text, drawn bold, from at (or left of it, to stay before hi).
func (bd *band) add(at float64, text, class string) {
	text = fit(text, bd.hi-bd.lo, true)
	w := textWidth(text, true)
	x := max(min(at, bd.hi-w), bd.lo)
	for r := 0; r < bd.max; r++ {
		if r == len(bd.taken) {
			bd.taken = append(bd.taken, nil)
		}
		free := true
		for _, sp := range bd.taken[r] {
			if x < sp[1]+labelGap && sp[0] < x+w+labelGap {
				free = false
				break
			}
		}
		if free {
			bd.taken[r] = append(bd.taken[r], [2]float64{x, x + w})
			bd.labels = append(bd.labels, bandLabel{x: x, row: r, text: text, class: class})
			return
		}
	}
}

// rows is how many rows the band takes.
func (bd *band) rows() int { return len(bd.taken) }

// draw writes the labels, the band's first row right over bottom.
func (bd *band) draw(b *svg, bottom float64) {
	for _, l := range bd.labels {
		b.f(`<text class="%s" x="%s" y="%s">%s</text>`, l.class, num(l.x), num(bottom-float64(l.row+1)*lineH+11.5), esc(l.text))
	}
}

// emptyChart is a chart of kind with nothing to draw but a message.
func emptyChart(kind, title, msg string) template.HTML {
	var b svg
	h := float64(padT + plotH + tickB)
	b.open(kind, title, chartW, h)
	b.f(`<text class="empty" x="%d" y="%s" text-anchor="middle">%s</text>`, chartW/2, num(h/2), esc(msg))
	return b.html()
}

// series is one line of a latency spectrum chart.
type series struct {
	name   string
	colour string
	points []reports.Point
}

// spectrumX maps a percentile to HdrHistogram's log axis,
// log10(1/(1-p/100)): 90% is 1, 99% is 2, 99.9% is 3. The 100th
// percentile has no place on it; callers draw it at the axis' end.
func spectrumX(p float64) float64 {
	if p >= 100 {
		return math.Inf(1)
	}
	return math.Log10(1 / (1 - p/100))
}

// spectrumChart draws latency percentile spectra on log-log axes, as
// HdrHistogram's plotter does: the tail is as legible as the median.
func spectrumChart(title string, ss []series) template.HTML {
	xmax, lo, hi := 2.0, math.Inf(1), math.Inf(-1)
	var items []legendItem
	for _, s := range ss {
		for _, p := range s.points {
			if x := spectrumX(p.Percentile); !math.IsInf(x, 1) {
				xmax = max(xmax, math.Ceil(x-1e-9))
			}
			v := float64(max(p.ValueUS, 1))
			lo, hi = min(lo, v), max(hi, v)
		}
		if len(s.points) > 0 {
			items = append(items, legendItem{name: s.name, fill: s.colour})
		}
	}
	if len(items) == 0 {
		return emptyChart("spectrum", title, "no latency recorded")
	}
	ylo, yhi := math.Floor(math.Log10(lo)), math.Ceil(math.Log10(hi))
	if yhi <= ylo {
		yhi = ylo + 1
	}
	var yt []tick
	for k := ylo; k <= yhi; k++ {
		yt = append(yt, tick{k, decadeLabel(int(k))})
	}
	left, right := leftMargin(yt, false), float64(chartW-marginR)
	lg := newLegend(items, left, chartW-4)
	top := float64(padT + lg.rows*lineH + gapT)
	bottom := top + plotH
	var b svg
	b.open("spectrum", title, chartW, bottom+tickB+titleB)
	lg.draw(&b, padT)
	pw := right - left
	px := func(k float64) float64 { return left + min(k, xmax)/xmax*pw }
	py := func(k float64) float64 { return bottom - (k-ylo)/(yhi-ylo)*plotH }
	// Axes and grid: a line per decade of latency, a tick per nine of
	// percentile.
	yTicks(&b, yt, py, left, right)
	var xt []tick
	for k := 0.0; k <= xmax; k++ {
		b.f(`<line class="grid" x1="%s" y1="%s" x2="%s" y2="%s"/>`, num(px(k)), num(top), num(px(k)), num(bottom))
		xt = append(xt, tick{k, nines(int(k))})
	}
	xTicks(&b, xt, px, bottom, left, chartW-2)
	b.f(`<text class="axis" x="%s" y="%s" text-anchor="middle">percentile</text>`, num(left+pw/2), num(bottom+tickB+titleB-5))
	for _, s := range ss {
		if len(s.points) == 0 {
			continue
		}
		var pts []string
		for _, p := range s.points {
			pts = append(pts, num(px(spectrumX(p.Percentile)))+","+num(py(math.Log10(float64(max(p.ValueUS, 1))))))
		}
		b.f(`<polyline class="line" fill="none" stroke="%s" stroke-width="2" points="%s"/>`, s.colour, strings.Join(pts, " "))
		for _, p := range s.points {
			b.f(`<circle cx="%s" cy="%s" r="2.5" fill="%s"><title>%s p%s: %s</title></circle>`,
				num(px(spectrumX(p.Percentile))), num(py(math.Log10(float64(max(p.ValueUS, 1))))), s.colour, esc(s.name),
				strconv.FormatFloat(p.Percentile, 'f', -1, 64), reports.FormatMicros(p.ValueUS))
		}
	}
	return b.html()
}

// decadeLabel names 10^k microseconds.
func decadeLabel(k int) string {
	switch {
	case k < 3:
		return strconv.Itoa(int(math.Pow10(k))) + "µs"
	case k < 6:
		return strconv.Itoa(int(math.Pow10(k-3))) + "ms"
	}
	return strconv.Itoa(int(math.Pow10(k-6))) + "s"
}

// nines names the percentile k decades along the spectrum axis: 0%, 90%,
// 99%, 99.9%, …
func nines(k int) string {
	switch k {
	case 0:
		return "0%"
	case 1:
		return "90%"
	}
	return strings.TrimSuffix("99."+strings.Repeat("9", k-2), ".") + "%"
}

// span is a stretch of a run drawn on a time axis, in ns since its start.
type span struct{ from, to int64 }

// niceStep rounds x up to 1, 2 or 5 times a power of ten.
func niceStep(x float64) float64 {
	if x <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(x)))
	for _, f := range []float64{1, 2, 5, 10} {
		if f*p >= x {
			return f * p
		}
	}
	return 10 * p
}

// formatInstant writes an axis tick at ns in the unit its axis' step
// calls for: seconds from 100 ms steps up, milliseconds from 100 µs.
func formatInstant(ns int64, step float64) string {
	switch {
	case step >= 1e8:
		return strconv.FormatFloat(float64(ns)/1e9, 'f', -1, 64) + "s"
	case step >= 1e5:
		return strconv.FormatFloat(float64(ns)/1e6, 'f', -1, 64) + "ms"
	case step >= 1e2:
		return strconv.FormatFloat(float64(ns)/1e3, 'f', -1, 64) + "µs"
	}
	return strconv.FormatInt(ns, 10) + "ns"
}

// formatAt writes an instant of the run for a person, to the microsecond:
// "600.2ms", "1.3008s", "850µs".
func formatAt(ns int64) string {
	us := float64((ns + 500) / 1000)
	switch {
	case us >= 1e6:
		return strconv.FormatFloat(us/1e6, 'f', -1, 64) + "s"
	case us >= 1e3:
		return strconv.FormatFloat(us/1e3, 'f', -1, 64) + "ms"
	}
	return strconv.FormatFloat(us, 'f', -1, 64) + "µs"
}

// faultLabel names a fault and what it struck.
func faultLabel(f history.Fault) string {
	s := f.Name
	if f.Node >= 0 {
		s += " node " + strconv.Itoa(f.Node)
	}
	if f.Client >= 0 {
		s += " client " + strconv.Itoa(int(f.Client))
	}
	return s
}

// faultEnd is when f ended; a permanent fault lasts to the run's end.
func faultEnd(f history.Fault, end int64) int64 {
	if f.End == 0 {
		return end
	}
	return f.End
}

// shadeFaults shades each fault window over the plot, as Jepsen's
// performance graphs do, described on hover; labelFaults names them over
// the plot.
func shadeFaults(b *svg, faults []history.Fault, s span, x func(int64) float64, top, bottom float64) {
	for _, f := range faults {
		from, to := max(f.Start, s.from), min(faultEnd(f, s.to), s.to)
		if to < from {
			continue
		}
		x0, x1 := x(from), x(to)
		desc := faultLabel(f)
		if f.Params != "" {
			desc += " (" + f.Params + ")"
		}
		b.f(`<rect class="fault" x="%s" y="%s" width="%s" height="%s"><title>fault: %s, %s–%s</title></rect>`,
			num(x0), num(top), num(max(x1-x0, minStarvedW)), num(bottom-top), esc(desc),
			formatAt(f.Start), formatAt(faultEnd(f, s.to)))
	}
}

// starved returns the spans of r's run in which the harness stood still
// (history.Health.Starved); nil when its health was not measured.
func starved(r *reports.Run) []history.Span {
	if r.Health == nil {
		return nil
	}
	return r.Health.Starved
}

// minStarvedW is the least width, in user units, a band of the harness
// starved is drawn: a stall of 50 ms in a run of a minute is a tenth of
// a unit wide, and would not show.
const minStarvedW = 3.0

// starvedBand is one band drawn over a plot where the harness was
// starved: one span, or several whose bands would touch.
type starvedBand struct {
	x0, x1   float64
	from, to int64 // the first span's start and the last's end, ns
	n        int
	longest  int64
}

// starvedBands lays the spans of ss that show in s out as bands on x: each
// at least minStarvedW wide (widened about its middle, kept within the
// axis), and those that would touch or overlap merged into one.
func starvedBands(ss []history.Span, s span, x func(int64) float64) []starvedBand {
	ss = slices.Clone(ss)
	slices.SortFunc(ss, func(a, b history.Span) int { return cmp.Compare(a.From, b.From) })
	lo, hi := x(s.from), x(s.to)
	var out []starvedBand
	for _, sp := range ss {
		from, to := max(sp.From, s.from), min(sp.To, s.to)
		if to < from {
			continue
		}
		x0, x1 := x(from), x(to)
		if w := min(minStarvedW, hi-lo); x1-x0 < w {
			mid := (x0 + x1) / 2
			x0 = min(max(mid-w/2, lo), hi-w)
			x1 = x0 + w
		}
		if n := len(out); n > 0 && x0 <= out[n-1].x1+1 {
			last := &out[n-1]
			last.x1, last.to = max(last.x1, x1), max(last.to, sp.To)
			last.n++
			last.longest = max(last.longest, sp.To-sp.From)
			continue
		}
		out = append(out, starvedBand{x0: x0, x1: x1, from: sp.From, to: sp.To, n: 1, longest: sp.To - sp.From})
	}
	return out
}

// shadeStarved draws the bands of the harness starved (starvedBands)
// from top to bottom, hatched grey so that they read apart from the
// faults' red, each described on hover.
func shadeStarved(b *svg, bands []starvedBand, top, bottom float64) {
	for _, bd := range bands {
		desc := fmt.Sprintf("harness starved %s–%s (%s): lockbench stood still, so the lock's figures here are the harness's",
			formatAt(bd.from), formatAt(bd.to), reports.FormatMicros((bd.longest+500)/1000))
		if bd.n > 1 {
			desc = fmt.Sprintf("harness starved in %d spans %s–%s, the longest %s: lockbench stood still, so the lock's figures here are the harness's",
				bd.n, formatAt(bd.from), formatAt(bd.to), reports.FormatMicros((bd.longest+500)/1000))
		}
		b.f(`<g class="starved"><title>%s</title><rect class="starved" x="%s" y="%s" width="%s" height="%s"/><path class="hatch" d="%s"/></g>`,
			esc(desc), num(bd.x0), num(top), num(bd.x1-bd.x0), num(bottom-top), hatch(bd.x0, bd.x1, top, bottom))
	}
}

// hatchStep is the distance, in user units, between the strokes of a
// hatched band.
const hatchStep = 5.0

// hatch returns the path of diagonal strokes, hatchStep apart, across the
// rectangle x0…x1 by top…bottom, each cut at its edges.
func hatch(x0, x1, top, bottom float64) string {
	h := bottom - top
	var d strings.Builder
	// A stroke rises from (c, bottom) to (c+h, top); the part of it
	// within x0…x1 is drawn.
	// The strokes start on multiples of hatchStep, so that two bands of
	// one chart are hatched alike.
	for c := math.Floor((x0-h)/hatchStep) * hatchStep; c < x1; c += hatchStep {
		s0, s1 := max(0, x0-c), min(h, x1-c)
		if s1-s0 < 0.5 {
			continue
		}
		fmt.Fprintf(&d, "M%s %sL%s %s", num(c+s0), num(bottom-s0), num(c+s1), num(bottom-s1))
	}
	return d.String()
}

// labelFaults names each fault that shows in s in the band bd, at the
// left edge of its window.
func labelFaults(bd *band, faults []history.Fault, s span, x func(int64) float64) {
	for _, f := range faults {
		from, to := max(f.Start, s.from), min(faultEnd(f, s.to), s.to)
		if to >= from {
			bd.add(x(from)+2, faultLabel(f), "faultlabel")
		}
	}
}

// axes are the extents the charts of one report share, so that the runs
// of several implementations read on the same scales: the longest run,
// and the lowest and highest latency of any bucket.
type axes struct {
	end         int64   // ns
	lowMS, hiMS float64 // latency range, ms
}

// sharedAxes returns the axes of runs.
func sharedAxes(runs []reports.Run) axes {
	a := axes{lowMS: math.Inf(1)}
	for i := range runs {
		r := &runs[i]
		a.end = max(a.end, int64(math.Round(r.DurationMS*1e6)), int64(len(r.Sales.Sold))*r.Sales.BucketMS*1e6)
		for b := range r.Sales.P99MS {
			if v := r.Sales.P50MS[b]; v > 0 {
				a.lowMS = min(a.lowMS, v)
			}
			a.hiMS = max(a.hiMS, r.Sales.P99MS[b])
		}
		for _, c := range r.Sales.Scatter {
			a.lowMS, a.hiMS = min(a.lowMS, c[1]), max(a.hiMS, c[1])
		}
	}
	if a.hiMS <= 0 {
		a.lowMS, a.hiMS = 1, 10
	}
	a.lowMS = math.Pow(10, math.Floor(math.Log10(max(a.lowMS, 0.01))))
	a.hiMS = math.Pow(10, math.Ceil(math.Log10(max(a.hiMS, a.lowMS*10))))
	return a
}

// latencyChart draws the latency of every attempt at the instant it was
// answered, as k6's and Jepsen's latency plots do: a binned scatter of
// all of them (darker where more fell), the p50 and p99 of each bucket
// over it, on a log axis, with the fault windows shaded. It is the chart
// that shows what a fault did while it lasted, and how long its effect
// lasted after.
func latencyChart(title string, r *reports.Run, a axes) template.HTML {
	if len(r.Sales.P99MS) == 0 || a.end <= 0 {
		return emptyChart("latency", title, "no latency recorded")
	}
	lo, hi := math.Log10(a.lowMS), math.Log10(a.hiMS)
	var yt []tick
	for k := lo; k <= hi+1e-9; k++ {
		v := math.Pow(10, k)
		yt = append(yt, tick{v, reports.FormatMicros(int64(v * 1000))})
	}
	left, right := leftMargin(yt, true), float64(chartW-marginR)
	s := span{0, a.end}
	x := timeScale(s, left, right)
	keys := []legendItem{{name: "p50", class: "p50"}, {name: "p99", class: "p99"}}
	if len(r.Sales.Scatter) > 0 {
		keys = append(keys, legendItem{name: "attempts", class: "dot", bar: true})
	}
	bands := starvedBands(starved(r), s, x)
	if len(bands) > 0 {
		keys = append(keys, starvedKey)
	}
	lg := newLegend(keys, left, chartW-4)
	faults := band{lo: left, hi: chartW - 4, max: maxRows}
	labelFaults(&faults, r.Faults, s, x)
	top := float64(padT + (lg.rows+faults.rows())*lineH + gapT)
	bottom := top + plotH
	var b svg
	b.open("latency", title, chartW, bottom+tickB)
	lg.draw(&b, padT)
	faults.draw(&b, top-gapT)
	y := func(ms float64) float64 { return bottom - (math.Log10(ms)-lo)/(hi-lo)*plotH }
	yTicks(&b, yt, y, left, right)
	yTitle(&b, "latency", top+plotH/2)
	timeAxis(&b, s, x, bottom, chartW-2)
	shadeFaults(&b, r.Faults, s, x, top, bottom)
	shadeStarved(&b, bands, top, bottom)
	scatter(&b, r.Sales.Scatter, x, func(ms float64) float64 { return y(min(max(ms, a.lowMS), a.hiMS)) })
	width := r.Sales.BucketMS * 1e6
	for _, line := range []struct {
		name, class string
		vs          []float64
	}{{"p50", "p50", r.Sales.P50MS}, {"p99", "p99", r.Sales.P99MS}} {
		var d strings.Builder
		pen := "M"
		for i, v := range line.vs {
			if v <= 0 {
				pen = "M"
				continue
			}
			fmt.Fprintf(&d, "%s%s %s ", pen, num(x(int64(i)*width+width/2)), num(y(min(max(v, a.lowMS), a.hiMS))))
			pen = "L"
		}
		b.f(`<path class="%s" d="%s"><title>%s latency of the attempts answered in each %s</title></path>`, line.class, strings.TrimSpace(d.String()), line.name, reports.FormatMicros(width/1000))
	}
	return b.html()
}

// scatter draws the binned scatter of a run's latencies
// (reports.Series.Scatter): one small square a cell, its opacity growing
// with the logarithm of the attempts in it, so that a lone slow attempt
// shows and a crowd reads darker.
func scatter(b *svg, cells [][3]float64, x func(int64) float64, y func(float64) float64) {
	if len(cells) == 0 {
		return
	}
	most := 1.0
	for _, c := range cells {
		most = max(most, c[2])
	}
	b.f(`<g class="dots">`)
	for _, c := range cells {
		opacity := 0.35 + 0.65*math.Log1p(c[2]-1)/math.Log1p(max(most-1, 1))
		b.f(`<rect x="%s" y="%s" width="2.5" height="2.5" fill-opacity="%s"/>`,
			num(x(int64(c[0]*1e6))-1.25), num(y(c[1])-1.25), strconv.FormatFloat(opacity, 'f', 2, 64))
	}
	b.f(`<title>each attempt at the instant it was answered (%d cells)</title></g>`, len(cells))
}

// salesChart draws units sold per second over the run (on the report's
// shared time axis a), with the fault windows shaded, the first illegal
// segment outlined and each named lock overlap marked on the time axis.
// The labels of the faults and of the first illegal segment sit over the
// plot, the segment's on a row of its own.
func salesChart(title string, r *reports.Run, a axes) template.HTML {
	bucket := max(r.Sales.BucketMS, 1)
	end := int64(math.Round(r.DurationMS * 1e6))
	end = max(end, int64(len(r.Sales.Sold))*bucket*1e6, a.end)
	if end <= 0 {
		return emptyChart("sales", title, "no sales recorded")
	}
	var peak float64
	for _, n := range r.Sales.Sold {
		peak = max(peak, float64(n)*1000/float64(bucket))
	}
	ymax := niceStep(max(peak, 1) / 4)
	ymax = math.Ceil(max(peak, 1)/ymax) * ymax
	var yt []tick
	for v := 0.0; v <= ymax+1e-9; v += ymax / 4 {
		yt = append(yt, tick{v, strconv.FormatFloat(v, 'f', -1, 64)})
	}
	left, right := leftMargin(yt, true), float64(chartW-marginR)
	s := span{0, end}
	x := timeScale(s, left, right)
	illegal := band{lo: left, hi: chartW - 4, max: 1}
	if w := r.FirstIllegal; w != nil {
		illegal.add(x(w.From)+2, "first illegal", "illegallabel")
	}
	faults := band{lo: left, hi: chartW - 4, max: maxRows}
	labelFaults(&faults, r.Faults, s, x)
	// The key is for the harness starved alone: without it, the chart is
	// keyed by its caption.
	var lg legend
	bands := starvedBands(starved(r), s, x)
	if len(bands) > 0 {
		lg = newLegend([]legendItem{starvedKey}, left, chartW-4)
	}
	top := float64(padT + (lg.rows+illegal.rows()+faults.rows())*lineH + gapT)
	bottom := top + plotH
	var b svg
	b.open("sales", title, chartW, bottom+tickB)
	lg.draw(&b, padT)
	illegal.draw(&b, top-gapT-float64(faults.rows()*lineH))
	faults.draw(&b, top-gapT)
	y := func(v float64) float64 { return bottom - v/ymax*plotH }
	yTicks(&b, yt, y, left, right)
	yTitle(&b, "sales/s", top+plotH/2)
	timeAxis(&b, s, x, bottom, chartW-2)
	shadeFaults(&b, r.Faults, s, x, top, bottom)
	shadeStarved(&b, bands, top, bottom)
	if w := r.FirstIllegal; w != nil {
		x0, x1 := x(w.From), x(w.To)
		b.f(`<rect class="illegal" x="%s" y="%s" width="%s" height="%s"><title>first illegal segment %s–%s</title></rect>`,
			num(x0), num(top), num(max(x1-x0, 2)), num(plotH), formatAt(w.From), formatAt(w.To))
	}
	for i, n := range r.Sales.Sold {
		if n == 0 {
			continue
		}
		t0 := int64(i) * bucket * 1e6
		v := float64(n) * 1000 / float64(bucket)
		x0, x1 := x(t0), x(t0+bucket*1e6)
		b.f(`<rect class="bar" x="%s" y="%s" width="%s" height="%s"><title>%s–%s: %d sold</title></rect>`,
			num(x0), num(y(v)), num(max(x1-x0-0.5, 0.8)), num(bottom-y(v)),
			formatAt(t0), formatAt(t0+bucket*1e6), n)
	}
	for _, p := range r.Lock.Pairs {
		xx := x(p.B.From)
		b.f(`<path class="overlapmark" d="M%s %s l-4 7 h8 z"><title>lock overlap: client %d entered at %s while client %d held the lock</title></path>`,
			num(xx), num(bottom), p.B.Client, formatAt(p.B.From), p.A.Client)
	}
	b.f(`<line class="axisline" x1="%s" y1="%s" x2="%s" y2="%s"/>`, num(left), num(bottom), num(right), num(bottom))
	return b.html()
}

// holder is one critical section drawn on a lock-holder timeline.
type holder struct {
	index       int
	client      int32
	attempt     int16
	node        int16
	from, to    int64
	read, write int64 // instants of the stock read and the write, 0 if none
	inA, inB    bool  // the pair's first or second section
	lost        bool  // its release found the lock gone
}

// holdersAround returns the critical sections of h that intersect s,
// the pair's two always among them, at most timelineRows in all: the pair
// and those nearest to the overlap. It also returns how many were left out.
func holdersAround(h *history.History, p checker.Overlap, s span) ([]holder, int) {
	var all []holder
	for i := range h.Ops {
		op := &h.Ops[i]
		if !op.Holds() {
			continue
		}
		to := op.HoldEnd(h.Header.Duration)
		if op.Acquired > s.to || to < s.from {
			continue
		}
		hd := holder{
			index: i, client: op.Client, attempt: op.Attempt, node: op.Node, from: op.Acquired, to: to,
			read: op.ReadReturn, write: op.WriteCall, lost: op.Lost,
			inA: i == p.A.Index, inB: i == p.B.Index,
		}
		all = append(all, hd)
	}
	near := func(hd holder) int64 {
		if hd.inA || hd.inB {
			return -1
		}
		d := hd.from - p.B.From
		return max(d, -d)
	}
	slices.SortStableFunc(all, func(a, b holder) int { return cmp.Compare(near(a), near(b)) })
	left := 0
	if len(all) > timelineRows {
		left = len(all) - timelineRows
		all = all[:timelineRows]
	}
	slices.SortStableFunc(all, func(a, b holder) int { return cmp.Or(cmp.Compare(a.from, b.from), cmp.Compare(a.index, b.index)) })
	return all, left
}

// pairHolders is the pair alone, when no history is at hand.
func pairHolders(p checker.Overlap) []holder {
	return []holder{
		{index: p.A.Index, client: p.A.Client, attempt: p.A.Attempt, node: p.A.Node, from: p.A.From, to: p.A.To, inA: true},
		{index: p.B.Index, client: p.B.Client, attempt: p.B.Attempt, node: p.B.Node, from: p.B.From, to: p.B.To, inB: true},
	}
}

// overlapSpan is the stretch of the run a timeline of p shows: zoomed to
// the overlap, with three times its length on either side (a millisecond
// at least) for what led to it and what followed, so that an overlap of
// 91 µs is as readable as one of 10 ms, whatever the pause around it.
// Sections longer than the window run off its edges.
func overlapSpan(p checker.Overlap) span {
	from, to := p.B.From, min(p.A.To, p.B.To)
	pad := max(3*(to-from), int64(time.Millisecond))
	return span{max(from-pad, 0), to + pad}
}

// distinctOverlaps picks up to n of pairs to draw, those of holders not
// drawn yet first: the first overlaps of a run are often one paused
// holder overlapped by each of its successors in turn, and a second
// timeline of the same holder shows nothing new.
func distinctOverlaps(pairs []checker.Overlap, n int) []int {
	var out []int
	seen := map[int]bool{}
	for pass := 0; pass < 2 && len(out) < n; pass++ {
		for i, p := range pairs {
			if len(out) == n {
				break
			}
			fresh := !seen[p.A.Index] && !seen[p.B.Index]
			if slices.Contains(out, i) || pass == 0 && !fresh {
				continue
			}
			out = append(out, i)
			seen[p.A.Index], seen[p.B.Index] = true, true
		}
	}
	slices.Sort(out)
	return out
}

// timelineChart draws who held the lock when around one violation: a lane
// per critical section, coloured by node, the overlap shaded red, faults
// shaded as on the sales chart, the spans in which the harness was starved
// hatched, and each holder's stock read and write ticked. h may be nil:
// then only the pair is drawn.
func timelineChart(title string, p checker.Overlap, h *history.History, faults []history.Fault, starvedSpans []history.Span) (template.HTML, int) {
	s := overlapSpan(p)
	hs, left := pairHolders(p), 0
	if h != nil {
		hs, left = holdersAround(h, p, s)
	}
	labels := make([]string, len(hs))
	lw := 60.0 // the lane labels' column
	for i, hd := range hs {
		labels[i] = fmt.Sprintf("client %d", hd.client)
		if hd.attempt > 0 {
			labels[i] += fmt.Sprintf("#%d", hd.attempt)
		}
		labels[i] += fmt.Sprintf(" · node %d", hd.node)
		lw = max(lw, math.Ceil(textWidth(labels[i], false)+12))
	}
	x := timeScale(s, lw, timelineW-marginR)
	ov0, ov1 := x(p.B.From), x(min(p.A.To, p.B.To))
	overlap := band{lo: lw, hi: timelineW - 4, max: 1}
	overlap.add(ov0+3, "overlap "+reports.FormatMicros((p.Duration+500)/1000), "overlaplabel")
	fb := band{lo: lw, hi: timelineW - 4, max: maxRows}
	labelFaults(&fb, faults, s, x)
	var lg legend
	bands := starvedBands(starvedSpans, s, x)
	if len(bands) > 0 {
		lg = newLegend([]legendItem{starvedKey}, lw, timelineW-4)
	}
	top := float64(padT + (lg.rows+fb.rows()+overlap.rows())*lineH + gapT)
	bottom := top + float64(len(hs))*rowH
	var b svg
	b.open("timeline", title, timelineW, bottom+tickB)
	lg.draw(&b, padT)
	fb.draw(&b, top-gapT-float64(overlap.rows()*lineH))
	overlap.draw(&b, top-gapT)
	timeAxis(&b, s, x, bottom, timelineW-2)
	shadeFaults(&b, faults, s, x, top-gapT, bottom)
	shadeStarved(&b, bands, top-gapT, bottom)
	b.f(`<rect class="overlap" x="%s" y="%s" width="%s" height="%s"><title>overlap: both held the lock for %s</title></rect>`,
		num(ov0), num(top-gapT), num(max(ov1-ov0, 2)), num(bottom-top+gapT), reports.FormatMicros((p.Duration+500)/1000))
	for i, hd := range hs {
		yy := top + float64(i)*rowH
		cls := "hold"
		if hd.inA || hd.inB {
			cls += " pair"
		}
		b.f(`<text class="lane" x="%s" y="%s" text-anchor="end">%s</text>`, num(lw-6), num(yy+13), esc(labels[i]))
		x0, x1 := x(max(hd.from, s.from)), x(min(hd.to, s.to))
		desc := fmt.Sprintf("%s held the lock %s–%s", labels[i], formatAt(hd.from), formatAt(hd.to))
		if hd.lost {
			desc += "; its release found the lock gone"
		}
		b.f(`<rect class="%s" x="%s" y="%s" width="%s" height="%d" fill="%s"><title>%s</title></rect>`,
			cls, num(x0), num(yy+3), num(max(x1-x0, 2)), rowH-6, colour(int(hd.node)), esc(desc))
		for _, m := range []struct {
			at   int64
			kind string
		}{{hd.read, "read"}, {hd.write, "write"}} {
			if m.at > 0 && m.at >= s.from && m.at <= s.to {
				b.f(`<line class="%s" x1="%s" y1="%s" x2="%s" y2="%s"><title>%s at %s</title></line>`,
					m.kind, num(x(m.at)), num(yy+1), num(x(m.at)), num(yy+rowH-1), m.kind, formatAt(m.at))
			}
		}
	}
	return b.html(), left
}

// overviewChart draws every implementation's purchase p50 and p99 as bars
// on one log axis, failures in red: fifteen implementations read at a
// glance.
func overviewChart(runs []reports.Run) template.HTML {
	const title = "purchase latency p50 and p99 by implementation"
	lo, hi := math.Inf(1), math.Inf(-1)
	laneW, valueW := 0.0, 0.0 // the widest name and figures
	values := make([]string, len(runs))
	for i, r := range runs {
		laneW = max(laneW, textWidth(r.Impl, r.Verdict != reports.Pass))
		s := r.Latency.Purchase
		if s.Count == 0 {
			continue
		}
		values[i] = reports.FormatMicros(s.P50) + " / " + reports.FormatMicros(s.P99)
		valueW = max(valueW, textWidth(values[i], false))
		lo = min(lo, float64(max(s.P50, 1)))
		hi = max(hi, float64(max(s.P99, 1)))
	}
	if math.IsInf(lo, 1) {
		return emptyChart("overview", title, "no latency recorded")
	}
	ylo, yhi := math.Floor(math.Log10(lo)), math.Ceil(math.Log10(hi))
	if yhi <= ylo {
		yhi = ylo + 1
	}
	left := math.Ceil(max(laneW, textWidth("no latency", false)) + 12)
	right := math.Floor(overviewW - marginR - valueW - 6)
	x := func(us int64) float64 {
		return left + (math.Log10(float64(max(us, 1)))-ylo)/(yhi-ylo)*(right-left)
	}
	lg := newLegend([]legendItem{{name: "p99", class: "p99", bar: true}, {name: "p50", class: "p50", bar: true}}, left, overviewW-4)
	top := float64(padT + lg.rows*lineH + gapT)
	bottom := top + float64(len(runs)*barH)
	var b svg
	b.open("overview", title, overviewW, bottom+tickB)
	lg.draw(&b, padT)
	var xt []tick
	for k := ylo; k <= yhi; k++ {
		xx := left + (k-ylo)/(yhi-ylo)*(right-left)
		b.f(`<line class="grid" x1="%s" y1="%s" x2="%s" y2="%s"/>`, num(xx), num(top), num(xx), num(bottom))
		xt = append(xt, tick{k, decadeLabel(int(k))})
	}
	xTicks(&b, xt, func(k float64) float64 { return left + (k-ylo)/(yhi-ylo)*(right-left) }, bottom, 2, overviewW-2)
	for i, r := range runs {
		yy := top + float64(i*barH)
		cls := verdictClass(r.Verdict)
		// A lane is a row of its verdict: "failing only" hides it.
		b.f(`<g class="row %s">`, cls)
		b.f(`<text class="lane %s" x="%s" y="%s" text-anchor="end">%s</text>`, cls, num(left-6), num(yy+14), esc(r.Impl))
		s := r.Latency.Purchase
		if s.Count == 0 {
			b.f(`<text class="tick" x="%s" y="%s">no latency</text></g>`, num(left+4), num(yy+14))
			continue
		}
		b.f(`<rect class="p99 %s" x="%s" y="%s" width="%s" height="%d"><title>%s p99 %s</title></rect>`,
			cls, num(left), num(yy+3), num(max(x(s.P99)-left, 1)), barH-6, esc(r.Impl), reports.FormatMicros(s.P99))
		b.f(`<rect class="p50 %s" x="%s" y="%s" width="%s" height="%d"><title>%s p50 %s</title></rect>`,
			cls, num(left), num(yy+7), num(max(x(s.P50)-left, 1)), barH-14, esc(r.Impl), reports.FormatMicros(s.P50))
		b.f(`<text class="value" x="%s" y="%s">%s</text></g>`, num(x(s.P99)+4), num(yy+14), values[i])
	}
	return b.html()
}
