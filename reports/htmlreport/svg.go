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

// Chart geometry, in SVG user units (the charts scale to their box).
const (
	chartW       = 560
	chartH       = 250
	marginL      = 58
	marginR      = 14
	marginT      = 26
	marginB      = 38
	timelineRows = 14 // lock holders drawn around one violation
	rowH         = 18
	labelW       = 132 // lane labels of the lock-holder timeline
	timelineW    = 900 // the timeline is as wide as a wide figure
)

// palette colours series, nodes and sources; colour-blind safe (Okabe-Ito).
var palette = []string{"#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000"}

// colour returns the i-th colour of the palette, cycling.
func colour(i int) string { return palette[((i%len(palette))+len(palette))%len(palette)] }

// svg accumulates one chart's markup.
type svg struct{ strings.Builder }

// f appends formatted markup; text arguments must already be escaped.
func (b *svg) f(format string, args ...any) { fmt.Fprintf(&b.Builder, format, args...) }

// open starts a chart with its accessible title and a class naming its
// kind, which the browser test counts.
func (b *svg) open(kind, title string, w, h float64) {
	b.f(`<svg class="chart %s" viewBox="0 0 %s %s" role="img" aria-label="%s" xmlns="http://www.w3.org/2000/svg"><title>%s</title>`,
		kind, num(w), num(h), esc(title), esc(title))
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
	var b svg
	b.open("spectrum", title, chartW, chartH)
	xmax, lo, hi := 2.0, math.Inf(1), math.Inf(-1)
	drawn := 0
	for _, s := range ss {
		for _, p := range s.points {
			if x := spectrumX(p.Percentile); !math.IsInf(x, 1) {
				xmax = max(xmax, math.Ceil(x-1e-9))
			}
			v := float64(max(p.ValueUS, 1))
			lo, hi = min(lo, v), max(hi, v)
		}
		if len(s.points) > 0 {
			drawn++
		}
	}
	if drawn == 0 {
		b.f(`<text class="empty" x="%d" y="%d" text-anchor="middle">no latency recorded</text>`, chartW/2, chartH/2)
		return b.html()
	}
	ylo, yhi := math.Floor(math.Log10(lo)), math.Ceil(math.Log10(hi))
	if yhi <= ylo {
		yhi = ylo + 1
	}
	pw, ph := float64(chartW-marginL-marginR), float64(chartH-marginT-marginB)
	px := func(p float64) float64 {
		x := min(spectrumX(p), xmax)
		return marginL + x/xmax*pw
	}
	py := func(us int64) float64 {
		return marginT + ph - (math.Log10(float64(max(us, 1)))-ylo)/(yhi-ylo)*ph
	}
	// Axes and grid: a line per decade of latency, a tick per nine of
	// percentile.
	for k := ylo; k <= yhi; k++ {
		y := marginT + ph - (k-ylo)/(yhi-ylo)*ph
		b.f(`<line class="grid" x1="%d" y1="%s" x2="%d" y2="%s"/>`, marginL, num(y), chartW-marginR, num(y))
		b.f(`<text class="tick" x="%d" y="%s" text-anchor="end">%s</text>`, marginL-4, num(y+4), decadeLabel(int(k)))
	}
	for k := 0.0; k <= xmax; k++ {
		x := marginL + k/xmax*pw
		b.f(`<line class="grid" x1="%s" y1="%d" x2="%s" y2="%s"/>`, num(x), marginT, num(x), num(marginT+ph))
		anchor := "middle"
		if k == xmax {
			anchor = "end" // the last tick stays inside the chart
		}
		b.f(`<text class="tick" x="%s" y="%s" text-anchor="%s">%s</text>`, num(x), num(marginT+ph+14), anchor, nines(int(k)))
	}
	b.f(`<text class="axis" x="%s" y="%d" text-anchor="middle">percentile</text>`, num(marginL+pw/2), chartH-4)
	for i, s := range ss {
		if len(s.points) == 0 {
			continue
		}
		var pts []string
		for _, p := range s.points {
			pts = append(pts, num(px(p.Percentile))+","+num(py(p.ValueUS)))
		}
		b.f(`<polyline class="line" fill="none" stroke="%s" stroke-width="2" points="%s"/>`, s.colour, strings.Join(pts, " "))
		for _, p := range s.points {
			b.f(`<circle cx="%s" cy="%s" r="2.5" fill="%s"><title>%s p%s: %s</title></circle>`,
				num(px(p.Percentile)), num(py(p.ValueUS)), s.colour, esc(s.name),
				strconv.FormatFloat(p.Percentile, 'f', -1, 64), reports.FormatMicros(p.ValueUS))
		}
		// The legend, top left, where a spectrum starts low.
		ly := marginT + 4 + float64(i)*16
		b.f(`<rect x="%d" y="%s" width="12" height="4" fill="%s"/><text class="legend" x="%d" y="%s">%s</text>`,
			marginL+8, num(ly), s.colour, marginL+24, num(ly+6), esc(s.name))
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

// timeAxis maps a span of the run onto the plot's width and draws its
// ticks; it returns the mapping.
func timeAxis(b *svg, s span, left, right, bottom float64) func(int64) float64 {
	if s.to <= s.from {
		s.to = s.from + 1
	}
	w := right - left
	x := func(t int64) float64 { return left + float64(t-s.from)/float64(s.to-s.from)*w }
	step := niceStep(float64(s.to-s.from) / 6)
	first := math.Ceil(float64(s.from)/step) * step
	for t := first; t <= float64(s.to)+1; t += step {
		xx := x(int64(t))
		b.f(`<line class="tickmark" x1="%s" y1="%s" x2="%s" y2="%s"/>`, num(xx), num(bottom), num(xx), num(bottom+4))
		b.f(`<text class="tick" x="%s" y="%s" text-anchor="middle">%s</text>`, num(xx), num(bottom+15), formatInstant(int64(t), step))
	}
	return x
}

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

// faultLabel names a fault and its target.
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
// performance graphs do, labelled at the top and described on hover.
func shadeFaults(b *svg, faults []history.Fault, s span, x func(int64) float64, top, bottom float64) {
	for i, f := range faults {
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
			num(x0), num(top), num(max(x1-x0, 1.5)), num(bottom-top), esc(desc),
			formatAt(f.Start), formatAt(faultEnd(f, s.to)))
		b.f(`<text class="faultlabel" x="%s" y="%s">%s</text>`, num(x0+2), num(top+10+float64(i%3)*11), esc(faultLabel(f)))
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
	}
	if a.hiMS <= 0 {
		a.lowMS, a.hiMS = 1, 10
	}
	a.lowMS = math.Pow(10, math.Floor(math.Log10(max(a.lowMS, 0.01))))
	a.hiMS = math.Pow(10, math.Ceil(math.Log10(max(a.hiMS, a.lowMS*10))))
	return a
}

// latencyChart draws the latency of the attempts arriving over the run,
// p50 and p99 per bucket on a log axis, with the fault windows shaded: the
// chart that shows what a fault does, and how long its effect lasts.
func latencyChart(title string, r *reports.Run, a axes) template.HTML {
	var b svg
	b.open("latency", title, chartW, chartH)
	if len(r.Sales.P99MS) == 0 || a.end <= 0 {
		b.f(`<text class="empty" x="%d" y="%d" text-anchor="middle">no latency recorded</text>`, chartW/2, chartH/2)
		return b.html()
	}
	pw, ph := float64(chartW-marginL-marginR), float64(chartH-marginT-marginB)
	bottom := marginT + ph
	lo, hi := math.Log10(a.lowMS), math.Log10(a.hiMS)
	y := func(ms float64) float64 { return bottom - (math.Log10(ms)-lo)/(hi-lo)*ph }
	for k := lo; k <= hi+1e-9; k++ {
		v := math.Pow(10, k)
		b.f(`<line class="grid" x1="%d" y1="%s" x2="%d" y2="%s"/>`, marginL, num(y(v)), chartW-marginR, num(y(v)))
		b.f(`<text class="tick" x="%d" y="%s" text-anchor="end">%s</text>`, marginL-4, num(y(v)+4), reports.FormatMicros(int64(v*1000)))
	}
	b.f(`<text class="axis" x="12" y="%s" transform="rotate(-90 12 %s)" text-anchor="middle">latency</text>`, num(marginT+ph/2), num(marginT+ph/2))
	x := timeAxis(&b, span{0, a.end}, marginL, marginL+pw, bottom)
	shadeFaults(&b, r.Faults, span{0, a.end}, x, marginT, bottom)
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
		b.f(`<path class="%s" d="%s"><title>%s latency of the attempts arriving in each %s</title></path>`, line.class, strings.TrimSpace(d.String()), line.name, reports.FormatMicros(width/1000))
	}
	return b.html()
}

// salesChart draws units sold per second over the run (on the report's
// shared time axis a), with the fault
// windows shaded, the first illegal segment outlined and each named lock
// overlap marked on the time axis.
func salesChart(title string, r *reports.Run, a axes) template.HTML {
	var b svg
	b.open("sales", title, chartW, chartH)
	bucket := max(r.Sales.BucketMS, 1)
	end := int64(math.Round(r.DurationMS * 1e6))
	end = max(end, int64(len(r.Sales.Sold))*bucket*1e6, a.end)
	if end <= 0 {
		b.f(`<text class="empty" x="%d" y="%d" text-anchor="middle">no sales recorded</text>`, chartW/2, chartH/2)
		return b.html()
	}
	pw, ph := float64(chartW-marginL-marginR), float64(chartH-marginT-marginB)
	bottom := marginT + ph
	var peak float64
	for _, n := range r.Sales.Sold {
		peak = max(peak, float64(n)*1000/float64(bucket))
	}
	ymax := niceStep(max(peak, 1) / 4)
	ymax = math.Ceil(max(peak, 1)/ymax) * ymax
	y := func(v float64) float64 { return bottom - v/ymax*ph }
	for v := 0.0; v <= ymax+1e-9; v += ymax / 4 {
		b.f(`<line class="grid" x1="%d" y1="%s" x2="%d" y2="%s"/>`, marginL, num(y(v)), chartW-marginR, num(y(v)))
		b.f(`<text class="tick" x="%d" y="%s" text-anchor="end">%s</text>`, marginL-4, num(y(v)+4), strconv.FormatFloat(v, 'f', -1, 64))
	}
	b.f(`<text class="axis" x="12" y="%s" transform="rotate(-90 12 %s)" text-anchor="middle">sales/s</text>`, num(marginT+ph/2), num(marginT+ph/2))
	x := timeAxis(&b, span{0, end}, marginL, marginL+pw, bottom)
	shadeFaults(&b, r.Faults, span{0, end}, x, marginT, bottom)
	if w := r.FirstIllegal; w != nil {
		x0, x1 := x(w.From), x(w.To)
		b.f(`<rect class="illegal" x="%s" y="%d" width="%s" height="%s"><title>first illegal segment %s–%s</title></rect>`,
			num(x0), marginT, num(max(x1-x0, 2)), num(ph), formatAt(w.From), formatAt(w.To))
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
	if w := r.FirstIllegal; w != nil {
		// The label sits inside the segment's right edge, or right of its
		// left edge when the segment starts too near the axis; over the bars.
		x0, x1 := x(w.From), x(w.To)
		if lx := min(x1, marginL+pw) - 2; lx-marginL > 70 {
			b.f(`<text class="illegallabel" x="%s" y="%s" text-anchor="end">first illegal</text>`, num(lx), num(marginT+10))
		} else {
			b.f(`<text class="illegallabel" x="%s" y="%s">first illegal</text>`, num(x0+3), num(marginT+10))
		}
	}
	for _, p := range r.Lock.Pairs {
		xx := x(p.B.From)
		b.f(`<path class="overlapmark" d="M%s %s l-4 7 h8 z"><title>lock overlap: client %d entered at %s while client %d held the lock</title></path>`,
			num(xx), num(bottom), p.B.Client, formatAt(p.B.From), p.A.Client)
	}
	b.f(`<line class="axisline" x1="%d" y1="%s" x2="%d" y2="%s"/>`, marginL, num(bottom), chartW-marginR, num(bottom))
	return b.html()
}

// holder is one critical section drawn on a lock-holder timeline.
type holder struct {
	index        int
	client       int32
	attempt      int16
	node         int16
	from, to     int64
	read, write  int64 // instants of the stock read and the write, 0 if none
	inA, inB     bool  // the pair's first or second section
	lost, failed bool  // its release found the lock gone; its write did not land
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
// shaded as on the sales chart, and each holder's stock read and write
// ticked. h may be nil: then only the pair is drawn.
func timelineChart(title string, p checker.Overlap, h *history.History, faults []history.Fault) (template.HTML, int) {
	s := overlapSpan(p)
	hs, left := pairHolders(p), 0
	if h != nil {
		hs, left = holdersAround(h, p, s)
	}
	top := float64(marginT)
	height := top + float64(len(hs))*rowH + 30
	var b svg
	b.open("timeline", title, timelineW, height)
	bottom := top + float64(len(hs))*rowH
	x := timeAxis(&b, s, labelW, timelineW-marginR, bottom)
	shadeFaults(&b, faults, s, x, top-14, bottom)
	ov0, ov1 := x(p.B.From), x(min(p.A.To, p.B.To))
	b.f(`<rect class="overlap" x="%s" y="%s" width="%s" height="%s"><title>overlap: both held the lock for %s</title></rect>`,
		num(ov0), num(top-4), num(max(ov1-ov0, 2)), num(bottom-top+4), reports.FormatMicros((p.Duration+500)/1000))
	b.f(`<text class="overlaplabel" x="%s" y="%s">overlap %s</text>`, num(ov0+3), num(top-6), reports.FormatMicros((p.Duration+500)/1000))
	for i, hd := range hs {
		yy := top + float64(i)*rowH
		cls := "hold"
		if hd.inA || hd.inB {
			cls += " pair"
		}
		label := fmt.Sprintf("client %d", hd.client)
		if hd.attempt > 0 {
			label += fmt.Sprintf("#%d", hd.attempt)
		}
		label += fmt.Sprintf(" · node %d", hd.node)
		b.f(`<text class="lane" x="%d" y="%s" text-anchor="end">%s</text>`, labelW-6, num(yy+12), esc(label))
		x0, x1 := x(max(hd.from, s.from)), x(min(hd.to, s.to))
		desc := fmt.Sprintf("%s held the lock %s–%s", label, formatAt(hd.from), formatAt(hd.to))
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
	const barH = 20
	height := float64(marginT + len(runs)*barH + 30)
	var b svg
	b.open("overview", "purchase latency p50 and p99 by implementation", chartW+160, height)
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, r := range runs {
		if r.Latency.Purchase.Count == 0 {
			continue
		}
		lo = min(lo, float64(max(r.Latency.Purchase.P50, 1)))
		hi = max(hi, float64(max(r.Latency.Purchase.P99, 1)))
	}
	if math.IsInf(lo, 1) {
		b.f(`<text class="empty" x="%d" y="%s" text-anchor="middle">no latency recorded</text>`, chartW/2, num(height/2))
		return b.html()
	}
	ylo, yhi := math.Floor(math.Log10(lo)), math.Ceil(math.Log10(hi))
	if yhi <= ylo {
		yhi = ylo + 1
	}
	left, right := 140.0, float64(chartW+160-marginR-70)
	x := func(us int64) float64 {
		return left + (math.Log10(float64(max(us, 1)))-ylo)/(yhi-ylo)*(right-left)
	}
	bottom := float64(marginT + len(runs)*barH)
	for k := ylo; k <= yhi; k++ {
		xx := left + (k-ylo)/(yhi-ylo)*(right-left)
		b.f(`<line class="grid" x1="%s" y1="%d" x2="%s" y2="%s"/>`, num(xx), marginT, num(xx), num(bottom))
		b.f(`<text class="tick" x="%s" y="%s" text-anchor="middle">%s</text>`, num(xx), num(bottom+15), decadeLabel(int(k)))
	}
	b.f(`<rect x="%s" y="6" width="12" height="8" class="p99"/><text class="legend" x="%s" y="14">p99</text>`, num(left), num(left+16))
	b.f(`<rect x="%s" y="6" width="12" height="8" class="p50"/><text class="legend" x="%s" y="14">p50</text>`, num(left+50), num(left+66))
	for i, r := range runs {
		yy := float64(marginT + i*barH)
		cls := "pass"
		if r.Verdict != reports.Pass {
			cls = "fail"
		}
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
		b.f(`<text class="value" x="%s" y="%s">%s / %s</text></g>`, num(x(s.P99)+4), num(yy+14), reports.FormatMicros(s.P50), reports.FormatMicros(s.P99))
	}
	return b.html()
}
