package checker

import (
	"errors"
	"io"
	"strconv"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/lockbench/lockbench/history"
)

// The defaults of Options.
const (
	// DefaultTimeout bounds the linearizability search when
	// Options.Timeout is zero.
	DefaultTimeout = 10 * time.Second
	// DefaultMaxPairs is how many overlaps are named when
	// Options.MaxPairs is zero.
	DefaultMaxPairs = 5
)

// ErrNoViolation is returned by Visualize for a linearizable history:
// there is no illegal chunk to draw.
var ErrNoViolation = errors.New("checker: no violation")

// ErrTimeout is returned by Visualize when the search ran out of time
// before it found a violation or proved there is none.
var ErrTimeout = errors.New("checker: linearizability check timed out")

// withDefaults fills the zero fields of o.
func (o Options) withDefaults() Options {
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.MaxPairs <= 0 {
		o.MaxPairs = DefaultMaxPairs
	}
	return o
}

// Check judges h: data safety, lock safety and liveness, and the verdict
// they add up to. A failed check is a Report with Pass false and its
// reasons, never an error.
//
// A history with a clock error (Header.ClockError) is judged widened by
// it, on a copy (see widen): a clock error within it never shows as a
// violation, and the report carries it as its blind spot.
//
// A sale of several items is checked item by item (see checkItems).
func Check(h *history.History, opts Options) Report {
	opts = opts.withDefaults()
	w := widen(h)
	var r Report
	if w.Header.ItemCount() > 1 {
		r = checkItems(w, opts)
	} else {
		r = checkOne(w, opts)
	}
	r.ClockError = max(0, h.Header.ClockError)
	r.settle()
	return r
}

// checkOne judges the history of one counter.
func checkOne(h *history.History, opts Options) Report {
	r := Report{
		Data:     checkData(h, checkInventory(h, opts.Timeout, false).Linearizability),
		Lock:     checkLock(h, opts.MaxPairs),
		Liveness: checkLiveness(h),
	}
	r.judge(h, opts)
	return r
}

// Visualize re-runs the linearizability check of h and writes porcupine's
// HTML view of the first illegal chunk to w: the chunk's operations with
// the longest partial linearizations the search found, and the faults
// injected meanwhile. It returns ErrNoViolation when h is linearizable
// and ErrTimeout when the search ran out of time.
//
// For a sale of several items it draws the first item whose history is
// illegal. A history with a clock error is drawn widened, as Check judges
// it.
func Visualize(w io.Writer, h *history.History, opts Options) error {
	return visualize(w, widen(h), opts.withDefaults())
}

// visualize is Visualize of a history already widened.
func visualize(w io.Writer, h *history.History, opts Options) error {
	if h.Header.ItemCount() > 1 {
		err := ErrNoViolation
		for _, p := range split(h) {
			if err = visualize(w, &p.h, opts); !errors.Is(err, ErrNoViolation) {
				return err
			}
		}
		return err
	}
	res := checkInventory(h, opts.Timeout, true)
	switch res.Status {
	case OK:
		return ErrNoViolation
	case Unknown:
		return ErrTimeout
	}
	// porcupine draws the states after each step; the one before the
	// first is this chunk's inheritance from the rest of the history.
	notes := []porcupine.Annotation{{
		Tag: "checker", Start: res.FirstIllegal.From,
		Description: "stock " + describeCounters(res.starts) + " at start",
		Details:     "the stock the operations before this segment left, and the blind sales that may still land",
	}}
	for _, f := range h.Faults {
		end := f.End
		if end == 0 {
			end = h.Header.Duration
		}
		if end < res.FirstIllegal.From || f.Start > res.FirstIllegal.To {
			continue
		}
		desc := f.Name
		if f.Node >= 0 {
			desc += " node " + strconv.Itoa(f.Node)
		}
		if f.Client >= 0 {
			desc += " client " + strconv.Itoa(int(f.Client))
		}
		notes = append(notes, porcupine.Annotation{
			Tag: "faults", Start: f.Start, End: end, Description: desc, Details: f.Params,
		})
	}
	res.info.AddAnnotations(notes)
	return porcupine.Visualize(res.model, res.info, w)
}
