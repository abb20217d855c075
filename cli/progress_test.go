package cli

import (
	"bytes"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockbench/lockbench/workload"
)

func snapshot(elapsed time.Duration, sold, finished int64) workload.Progress {
	return workload.Progress{Impl: "watchdog", Started: time.Unix(1, 0), Elapsed: elapsed, Sold: sold, Stock: 5000, Arrived: 20000, Finished: finished, Faults: 1, Injected: 5}
}

func TestProgressBar(t *testing.T) {
	var b bytes.Buffer
	p := newProgress(&b, 20000, 3, 0)
	p.tty = true
	p.update(snapshot(2*time.Second, 2500, 10000))
	want := "\rwatchdog [1/3] [############............] answered 10000/20000 (arrived 20000)  sold 2500/5000  1250 sales/s  faults 5  2s  ETA 2s"
	if got := b.String(); got != want {
		t.Errorf("bar:\ngot  %q\nwant %q", got, want)
	}
	b.Reset()
	// The stock is gone but buyers are still being answered: the bar
	// follows the buyers, so it is not full yet.
	p.update(snapshot(3*time.Second, 5000, 15000))
	if got := b.String(); !strings.HasPrefix(got, "\rwatchdog [1/3] [##################......] answered 15000/20000") || !strings.HasSuffix(got, "ETA 1s") {
		t.Errorf("redrawn bar = %q", got)
	}
	b.Reset()
	p.clear()
	if got := b.String(); !strings.HasPrefix(got, "\r") || strings.TrimSpace(got) != "" {
		t.Errorf("clear wrote %q, want the line blanked", got)
	}
	b.Reset()
	// A snapshot of another sale is the next run.
	next := snapshot(100*time.Millisecond, 0, 0)
	next.Started = time.Unix(2, 0)
	p.update(next)
	if got := b.String(); !strings.Contains(got, "watchdog [2/3]") || !strings.HasSuffix(got, "ETA ?") {
		t.Errorf("second run's bar = %q, want run 2 of 3 and no ETA yet", got)
	}
}

// TestProgressFitsTheTerminal checks that a redraw never writes past the
// terminal's last column, so that it never wraps onto a new line, and
// that a shorter line blanks what the longer one left.
func TestProgressFitsTheTerminal(t *testing.T) {
	for _, cols := range []int{20, 40, 80} {
		var b bytes.Buffer
		p := newProgress(&b, 20000, 1, time.Minute)
		p.tty, p.cols = true, func() int { return cols }
		p.update(snapshot(2*time.Second, 2500, 10000))
		p.update(snapshot(3*time.Second, 2600, 11000))
		for _, draw := range strings.Split(b.String(), "\r")[1:] {
			if w := displayWidth(draw); w >= cols {
				t.Errorf("%d columns: a redraw of %d columns: %q", cols, w, draw)
			}
		}
		if strings.Contains(b.String(), "\n") {
			t.Errorf("%d columns: a redraw wrote a new line", cols)
		}
	}
}

// TestProgressDegrades checks that a narrower terminal loses the bar, the
// long labels and the minor fields before anything is cut: at 80 columns
// the buyers answered and arrived, sold/stock, the elapsed time and the
// ETA all show; no line is wider than the terminal.
func TestProgressDegrades(t *testing.T) {
	s := snapshot(83*time.Second, 2500, 10000)
	tests := []struct {
		cols int
		want []string
	}{
		{60, nil},
		{80, []string{"10000/20000", "arr 20000", "sold 2500/5000", "1m23s", "ETA 1m23s"}},
		{120, []string{"answered 10000/20000 (arrived 20000)", "sold 2500/5000", "30 sales/s", "faults 5", "1m23s", "ETA 1m23s"}},
		{200, []string{"[############............] answered 10000/20000 (arrived 20000)  sold 2500/5000  30 sales/s  faults 5  1m23s  ETA 1m23s"}},
	}
	for _, tt := range tests {
		t.Run(strconv.Itoa(tt.cols), func(t *testing.T) {
			var b bytes.Buffer
			p := newProgress(&b, 20000, 3, 10*time.Minute)
			p.tty, p.cols = true, func() int { return tt.cols }
			p.update(s)
			line := strings.TrimPrefix(b.String(), "\r")
			if w := displayWidth(line); w >= tt.cols {
				t.Errorf("%d columns wide: %q", w, line)
			}
			for _, w := range tt.want {
				if !strings.Contains(line, w) {
					t.Errorf("%q lacks %q", line, w)
				}
			}
			if tt.cols >= 80 && strings.HasSuffix(line, "…") {
				t.Errorf("cut: %q", line)
			}
			t.Logf("%q", line)
		})
	}
}

// TestProgressETA checks the ETA: from the pace of answered buyers, and
// never past the run's --timeout (a stalled run would otherwise read
// hours).
func TestProgressETA(t *testing.T) {
	tests := []struct {
		name     string
		timeout  time.Duration
		elapsed  time.Duration
		finished int64
		want     string
	}{
		{"pace", time.Minute, 2 * time.Second, 10000, "2s"},
		{"stalled, capped by the timeout", 20 * time.Second, 5 * time.Second, 10, "<= 15s"},
		{"nobody answered yet", 20 * time.Second, 5 * time.Second, 0, "<= 15s"},
		{"nobody answered, no timeout", 0, 5 * time.Second, 0, "?"},
		{"past the timeout", 20 * time.Second, 25 * time.Second, 10, "<= 0s"},
		{"all answered", time.Minute, 5 * time.Second, 20000, "0s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newProgress(&bytes.Buffer{}, 20000, 1, tt.timeout)
			if got := p.eta(snapshot(tt.elapsed, 0, tt.finished)); got != tt.want {
				t.Errorf("eta = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestProgressPlain checks a log's lines: none for a short run, then one
// per period whatever the snapshot rate, each complete on its own line.
func TestProgressPlain(t *testing.T) {
	var b bytes.Buffer
	p := newProgress(&b, 20000, 1, 0)
	if p.tty {
		t.Fatal("a buffer taken for a terminal")
	}
	for ms := 250; ms < 9_000; ms += 250 {
		p.update(snapshot(time.Duration(ms)*time.Millisecond, 100, 100))
	}
	if b.Len() != 0 {
		t.Fatalf("a run shorter than %v printed %q", plainEvery, b.String())
	}
	for ms := 9_000; ms <= 31_000; ms += 250 {
		p.update(snapshot(time.Duration(ms)*time.Millisecond, 4000, 16000))
	}
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d lines over 31s, want 3 (at 10, 20, 30s):\n%s", len(lines), b.String())
	}
	if want := "progress: watchdog answered=16000/20000 arrived=20000 sold=4000/5000 sales/s=400 faults=5 faults-now=1 elapsed=10s eta=2.5s"; lines[0] != want {
		t.Errorf("line:\ngot  %q\nwant %q", lines[0], want)
	}
	if strings.Contains(b.String(), "\r") {
		t.Errorf("a log line holds a carriage return")
	}
	p.clear()
	b.Reset()
	p.update(snapshot(5*time.Second, 1, 1))
	if b.Len() != 0 {
		t.Errorf("the next run printed at 5s: %q", b.String())
	}
}

func TestWarnLength(t *testing.T) {
	var b bytes.Buffer
	warnLength(&b, 1, "--ramp=1s", time.Second, time.Minute)
	if b.Len() != 0 {
		t.Errorf("one sale warned: %q", b.String())
	}
	warnLength(&b, 16, "--ramp=2s", 2*time.Second, 3*time.Minute)
	for _, want := range []string{"16 sales one after another", "while its buyers arrive (--ramp=2s) and are answered", "--timeout=3m0s at most", "32s to 48m0s in all"} {
		if got := b.String(); !strings.Contains(got, want) {
			t.Errorf("warning %q lacks %q", got, want)
		}
	}
	b.Reset()
	warnLength(&b, 16, "--ramp=0s", 0, 3*time.Minute)
	if got := b.String(); !strings.Contains(got, ": up to 48m0s in all") {
		t.Errorf("without a ramp: %q", got)
	}
}

// TestWarnLengthArrivals: the lower bound follows --rate when it is given
// instead of --ramp.
func TestWarnLengthArrivals(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--impl=lua,atomic", "--ramp=3s"}, "(--ramp=3s) and are answered, --timeout=3m0s at most: 6s to 6m0s in all"},
		{[]string{"--impl=lua,atomic", "--clients=1000", "--rate=100/s"}, "(--rate=100/s, 10s)"},
		{[]string{"--impl=lua,atomic", "--clients=1000", "--rate=100/s"}, ": 20s to 6m0s in all"},
	}
	for _, tt := range tests {
		var o runOpts
		fs := runFlags(&o)
		if err := fs.Parse(tt.args); err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		arrivals, span := o.arrivals()
		warnLength(&b, 2, arrivals, span, o.timeout)
		if !strings.Contains(b.String(), tt.want) {
			t.Errorf("%v: %q lacks %q", tt.args, b.String(), tt.want)
		}
	}
}
