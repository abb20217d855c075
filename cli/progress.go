package cli

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/lockbench/lockbench/workload"
)

// progress reports a long run while it goes: on a terminal a bar redrawn
// in place (buyers answered of all, arrived, sold/stock, sales per second,
// faults active, elapsed, ETA), fitted to the terminal's width so that a
// redraw never wraps onto a new line (see barStyles); in a CI log or a pipe a plain line
// every plainEvery, so that a log shows the run is alive without a
// carriage-return mess, and a short run prints none.
type progress struct {
	mu    sync.Mutex
	w     io.Writer
	tty   bool
	every time.Duration
	// cols is the terminal's width, asked again at each redraw (a window
	// can be resized); nil in tests, which set width by hand.
	cols func() int
	// clients is the buyers per run, for the ETA; timeout bounds each
	// run, and so the ETA; runs and run count the runs (implementations
	// times repetitions) and the current one.
	clients   int64
	timeout   time.Duration
	runs, run int
	// width is the length of the bar last drawn; next is when the next
	// plain line is due, in the current run's elapsed time.
	width int
	next  time.Duration
	// sale is when the sale reported on began; a snapshot of a later one
	// moves the report on to the next run.
	sale time.Time
}

// plainEvery is how often a plain progress line is written.
const plainEvery = 10 * time.Second

// barStyle is one way to draw the terminal's line: the bar's length (0:
// none), labels spelt out or abbreviated, and which of the fields that
// can go are kept.
type barStyle struct {
	bar                   int
	short                 bool
	arrived, rate, faults bool
}

// barStyles go from the fullest line (about 130 columns) to the tersest:
// the bar shrinks, then the labels are abbreviated, then the bar goes, and
// the sales rate, the faults and the arrivals last. Buyers answered,
// sold/stock, elapsed and the ETA stay in each: at 80 columns they all
// show. The first style that fits is drawn; only the last is ever cut.
var barStyles = []barStyle{
	{bar: 24, arrived: true, rate: true, faults: true},
	{bar: 12, arrived: true, rate: true, faults: true},
	{bar: 8, arrived: true, rate: true, faults: true},
	{bar: 12, short: true, arrived: true, rate: true, faults: true},
	{bar: 8, short: true, arrived: true, rate: true, faults: true},
	{short: true, arrived: true, rate: true, faults: true},
	{short: true, arrived: true, faults: true},
	{short: true, arrived: true},
	{short: true},
}

// newProgress reports on w, drawing a bar when w is a terminal; timeout
// is each run's bound (zero: none).
func newProgress(w io.Writer, clients, runs int, timeout time.Duration) *progress {
	p := &progress{w: w, every: plainEvery, clients: int64(clients), timeout: timeout, runs: runs, run: 1, next: plainEvery}
	if f, ok := w.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			p.tty = true
			p.cols = func() int { return columns(f) }
		}
	}
	return p
}

// update reports a snapshot of the running sale.
func (p *progress) update(s workload.Progress) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.sale.IsZero() && !s.Started.Equal(p.sale) {
		p.advance()
	}
	p.sale = s.Started
	if p.tty {
		cols := 0
		if p.cols != nil {
			// One column short of the edge: a line that fills it wraps
			// the cursor on some terminals.
			cols = max(p.cols()-1, 0)
		}
		line := p.barLine(s, cols)
		fmt.Fprintf(p.w, "\r%s", padRight(line, p.width))
		p.width = displayWidth(line)
		return
	}
	if s.Elapsed < p.next {
		return
	}
	for p.next <= s.Elapsed {
		p.next += p.every
	}
	fmt.Fprintln(p.w, p.plainLine(s))
}

// clear ends the report: it wipes the bar. A snapshot of another sale
// after it starts the next run's report.
func (p *progress) clear() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.wipe()
}

// advance moves on to the next run: the bar is wiped, the count moves.
func (p *progress) advance() {
	p.wipe()
	p.next = p.every
	p.run++
}

// wipe wipes the bar.
func (p *progress) wipe() {
	if p.tty && p.width > 0 {
		fmt.Fprintf(p.w, "\r%*s\r", p.width, "")
	}
	p.width = 0
}

// barLine is the terminal's line in the first of barStyles that fits in
// cols columns (0: any width), cut to cols when none does.
func (p *progress) barLine(s workload.Progress, cols int) string {
	var line string
	for _, st := range barStyles {
		if line = p.drawBar(s, st); cols <= 0 || displayWidth(line) <= cols {
			return line
		}
	}
	return truncate(line, cols)
}

// drawBar draws the line in style st: in full, watchdog [2/13]
// [#####.....] answered 10000/20000 (arrived 20000)  sold 2500/5000 …;
// abbreviated, watchdog [2/13] ans 10000/20000 arr 20000 sold 2500/5000 ….
// The bar is the buyers answered, for a run ends when the last buyer is,
// not when the stock is gone.
func (p *progress) drawBar(s workload.Progress, st barStyle) string {
	var b strings.Builder
	b.WriteString(s.Impl + p.runTag())
	if st.bar > 0 {
		filled := 0
		if p.clients > 0 {
			filled = int(min(s.Finished, p.clients) * int64(st.bar) / p.clients)
		}
		fmt.Fprintf(&b, " [%s%s]", strings.Repeat("#", filled), strings.Repeat(".", st.bar-filled))
	}
	sep, answered, arrived, rate := "  ", " answered %d/%d", " (arrived %d)", "%s sales/s"
	if st.short {
		sep, answered, arrived, rate = " ", " ans %d/%d", " arr %d", "%s/s"
	}
	fmt.Fprintf(&b, answered, s.Finished, p.clients)
	if st.arrived {
		fmt.Fprintf(&b, arrived, s.Arrived)
	}
	fmt.Fprintf(&b, "%ssold %d/%d", sep, s.Sold, s.Stock)
	if st.rate {
		fmt.Fprintf(&b, sep+rate, salesRate(s))
	}
	if st.faults {
		fmt.Fprintf(&b, "%sfaults %d", sep, s.Injected)
	}
	fmt.Fprintf(&b, "%s%s%sETA %s", sep, roundDur(s.Elapsed), sep, p.eta(s))
	return b.String()
}

// plainLine is a log's line, one self-contained sentence of key=value.
func (p *progress) plainLine(s workload.Progress) string {
	return fmt.Sprintf("progress: %s%s answered=%d/%d arrived=%d sold=%d/%d sales/s=%s faults=%d faults-now=%d elapsed=%s eta=%s",
		s.Impl, p.runTag(), s.Finished, p.clients, s.Arrived, s.Sold, s.Stock, salesRate(s), s.Injected, s.Faults, roundDur(s.Elapsed), strings.ReplaceAll(p.eta(s), " ", ""))
}

// runTag numbers the run when there are several.
func (p *progress) runTag() string {
	if p.runs <= 1 {
		return ""
	}
	return fmt.Sprintf(" [%d/%d]", p.run, p.runs)
}

// salesRate is the units sold per second since the run began.
func salesRate(s workload.Progress) string {
	if s.Elapsed <= 0 {
		return "0"
	}
	return fmt.Sprintf("%.0f", float64(s.Sold)/s.Elapsed.Seconds())
}

// eta estimates the time left in the current run from the pace at which
// buyers have been answered so far, never past the run's --timeout: a
// stalled run (a pause, a dead server) shows "<=" and the time until the
// timeout ends it, not an estimate of hours. "?" until a buyer is
// answered when there is no timeout.
func (p *progress) eta(s workload.Progress) string {
	left := time.Duration(-1)
	if p.timeout > 0 {
		left = max(p.timeout-s.Elapsed, 0)
	}
	if s.Finished <= 0 || p.clients <= 0 || s.Elapsed <= 0 {
		if left < 0 {
			return "?"
		}
		return "<= " + roundDur(left)
	}
	buyers := p.clients - s.Finished
	if buyers <= 0 {
		return "0s"
	}
	est := time.Duration(float64(s.Elapsed) * float64(buyers) / float64(s.Finished))
	if left >= 0 && est > left {
		return "<= " + roundDur(left)
	}
	return roundDur(est)
}

// roundDur writes d to a tenth of a second, or to the second past a minute.
func roundDur(d time.Duration) string {
	if d >= time.Minute {
		return d.Round(time.Second).String()
	}
	return d.Round(100 * time.Millisecond).String()
}

// warnLength says, before several sales run one after another, how long
// the whole may take: each sale lasts while its buyers arrive (over
// --ramp, or at --rate), then until the last is answered. For a lock that
// keeps up that is seconds more at the default size (lua took about 5 s
// in all, and atomic 2 s, on a 2-core machine with the embedded server); a
// slow lock under load (a spinning variant, getset, redlock on five
// embedded servers) runs until --timeout cuts it. The bounds are exact;
// between them it can only say what is typical.
func warnLength(w io.Writer, runs int, arrivals string, span, timeout time.Duration) {
	if runs < 2 {
		return
	}
	most := roundDur(time.Duration(runs) * timeout)
	length := "up to " + most
	if span = min(span, timeout); span > 0 {
		length = roundDur(time.Duration(runs)*span) + " to " + most
	}
	fmt.Fprintf(w, "lockbench: %d sales one after another, each while its buyers arrive (%s) and are answered, --timeout=%s at most: %s in all\n",
		runs, arrivals, roundDur(timeout), length)
}

// arrivals says how the buyers of a sale arrive, and over how long.
func (o *runOpts) arrivals() (string, time.Duration) {
	if o.rate.perSecond > 0 {
		span := o.rate.span(o.clients)
		return fmt.Sprintf("--rate=%s, %s", o.rate.text, roundDur(span)), span
	}
	return "--ramp=" + roundDur(o.ramp), o.ramp
}
