package locks_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/lockbench/lockbench/health"
)

// stallTries is how many tries a test whose timing a stalled machine can
// break makes before it gives up and skips.
const stallTries = 3

// stallWatch measures how long the test process stood still over one
// try's timing window, as the harness measures its own health in a run
// (see package health).
type stallWatch struct {
	margin time.Duration
	m      *health.Monitor
	clock  func() time.Duration // stops watching the embedded servers' clocks
	stall  time.Duration        // the largest stall of the ended window
}

// start begins the window, ending any window already open without
// judging it.
func (w *stallWatch) start() {
	w.end()
	t0 := time.Now()
	w.m = health.Start(func() int64 { return int64(time.Since(t0)) }, nil, nil)
	w.clock = watchEmbeddedClocks()
}

// end ends the window, if one is open, and keeps its largest stall: the
// longest of the stall timer's lateness, the Go scheduler's latency and
// a step of an embedded server's clock (the lease slack, as a run
// measures it: history.Health.LeaseSlack).
func (w *stallWatch) end() {
	if w.m == nil {
		return
	}
	h := w.m.Stop(-1)
	h.ServerClockStepMax = int64(w.clock())
	w.m = nil
	w.stall = max(w.stall, time.Duration(h.LeaseSlack()))
}

// judge ends the window and skips the try when the process stood still
// for the margin or more: the lease may really have lapsed, and the try
// says nothing about the lock. A try calls it after its observations and
// before asserting on them, so a quiet try is judged as strictly as ever.
// A nil w judges nothing.
func (w *stallWatch) judge(t *testing.T) {
	t.Helper()
	if w == nil {
		return
	}
	w.end()
	if w.stall >= w.margin {
		t.Skipf("not judged: the process stood still for %v, at least the %v margin the test depends on", w.stall, w.margin)
	}
}

// quietTry runs try as subtests try1, try2, ... (each with its own key,
// see lockKey) until one is judged, at most stallTries times. Each try's
// window opens as it starts (try may open it later with w.start) and
// ends at w.judge. margin is how long a stall may last before a lease
// the test expects to be kept can lapse: the lease less the renewal
// interval. When every try stalled past it, the test skips, naming the
// stalls measured; a failing try fails the test at once.
func quietTry(t *testing.T, margin time.Duration, try func(t *testing.T, w *stallWatch)) {
	t.Helper()
	var stalls []time.Duration
	for i := 1; i <= stallTries; i++ {
		w := &stallWatch{margin: margin}
		var skipped bool
		ok := t.Run(fmt.Sprintf("try%d", i), func(t *testing.T) {
			defer func() { skipped = t.Skipped() }()
			defer w.end()
			w.start()
			try(t, w)
		})
		if !ok || !skipped {
			return
		}
		if w.stall < margin {
			// The try skipped for a reason of its own (a server missing).
			t.SkipNow()
		}
		stalls = append(stalls, w.stall)
	}
	t.Skipf("every one of %d tries stood still past the %v margin (stalls %v): the machine is too loaded to judge this test", stallTries, margin, stalls)
}
