package checker

import (
	"cmp"
	"math"
	"slices"

	"github.com/lockbench/lockbench/history"
)

// witness decides whether the sales ops (sorted by call, as saleOps
// returns them) of a sale that began with stock units are linearizable,
// in O(n log n) whatever the concurrency: every operation that read names
// its place in any linearization by the stock it read, so there is no
// order to search for, only one to verify. It returns the verdict and,
// when illegal, a window around the violation.
//
// The counter never rises, so an operation that read v comes after every
// operation that read more and before every one that read less: the reads
// fall into levels, one per stock read, highest first. Within a level at
// most one write lands (an applied one, or one whose answer never came),
// and it comes last: two applied writes that read one stock are a lost
// update. Between two levels v > v' the counter lost v - v' units: the
// write of level v, if one landed, and blind sales (see sale.blind) for
// the rest, each linearized after its call and before every operation of
// the lower levels. Real time must agree with that order: no operation of
// a lower level returned before one of a higher level was called, and no
// operation of a level was called after its applied write returned. The
// blind sales each fill one unit of one gap, where their call allows; a
// gap whose units outnumber the blind sales that may fill it (Hall's
// condition, on gaps taken in order) is a violation. These are the
// inventory model's rules (see inventoryModel) read off the witnesses;
// TestWitnessAgreesWithPorcupine holds the two to the same verdicts.
func witness(ops []saleOp, stock int64) (Status, *Window, *focus) {
	// Each slice made at its size: on a million operations, growing them
	// leaves several times their size behind for the collector.
	nblind := 0
	for _, o := range ops {
		if o.in.blind() {
			nblind++
		}
	}
	reads := make([]saleOp, 0, len(ops)-nblind)
	blinds := make([]int64, 0, nblind) // the blind sales' calls
	for _, o := range ops {
		if o.in.blind() {
			blinds = append(blinds, o.call)
		} else {
			reads = append(reads, o)
		}
	}
	// Highest stock first; within a stock, by call.
	slices.SortStableFunc(reads, func(a, b saleOp) int { return cmp.Compare(b.in.stock, a.in.stock) })
	nlevels := 0
	for i := range reads {
		if i == 0 || reads[i].in.stock != reads[i-1].in.stock {
			nlevels++
		}
	}

	type level struct {
		stock     int64
		lo, hi    int   // reads[lo:hi]
		minRet    int64 // earliest return in the level
		maxCall   int64 // latest call in the level
		writer    int   // index in reads of the applied write, -1 if none
		landable  bool  // a write whose answer never came may have landed
		suffixRet int64 // earliest return in this level and every lower one
	}
	levels := make([]level, 0, nlevels)
	for i := 0; i < len(reads); {
		l := level{stock: reads[i].in.stock, lo: i, minRet: math.MaxInt64, maxCall: math.MinInt64, writer: -1}
		for ; i < len(reads) && reads[i].in.stock == l.stock; i++ {
			o := reads[i]
			l.minRet = min(l.minRet, o.ret)
			l.maxCall = max(l.maxCall, o.call)
			switch o.in.write {
			case history.Applied:
				if l.writer >= 0 {
					a := reads[l.writer]
					return Illegal, &Window{From: min(a.call, o.call), To: maxKnown(a, o)}, &focus{l.stock, l.stock, l.stock}
				}
				l.writer = i
			case history.Indeterminate:
				l.landable = true
			}
		}
		l.hi = i
		levels = append(levels, l)
	}
	if len(levels) > 0 && levels[0].stock > stock {
		o := reads[0]
		return Illegal, &Window{From: o.call, To: maxKnown(o)}, &focus{stock, levels[0].stock, levels[0].stock}
	}

	// Real time. Within a level, nothing is called after its applied
	// write returned (the write comes last).
	for _, l := range levels {
		if l.writer < 0 {
			continue
		}
		w := reads[l.writer]
		for _, o := range reads[l.lo:l.hi] {
			if o.in != w.in && w.ret < o.call {
				return Illegal, &Window{From: w.call, To: maxKnown(w, o)}, &focus{l.stock, l.stock, l.stock}
			}
		}
	}
	// Across levels, no operation of a lower level returned before one of
	// a higher level was called.
	latest, at := int64(math.MinInt64), -1 // the latest call so far, and whose
	for _, l := range levels {
		if l.minRet < latest {
			hi := reads[at]
			for _, o := range reads[l.lo:l.hi] {
				if o.ret < latest {
					// Blind sales may fill the levels between: no focus.
					var f *focus
					if len(blinds) == 0 {
						f = &focus{hi.in.stock, hi.in.stock, l.stock}
					}
					return Illegal, &Window{From: min(o.call, hi.call), To: maxKnown(o, hi)}, f
				}
			}
		}
		for k := l.lo; k < l.hi; k++ {
			if reads[k].call > latest {
				latest, at = reads[k].call, k
			}
		}
	}

	// The gaps: gap 0 is from the starting stock to the first level, gap
	// i from level i-1 to level i. Each needs units from blind sales,
	// beyond the write that may have landed at its upper level.
	suffix := int64(math.MaxInt64)
	for i := len(levels) - 1; i >= 0; i-- {
		suffix = min(suffix, levels[i].minRet)
		levels[i].suffixRet = suffix
	}
	// A blind sale called at c may fill gap i when every operation of
	// level i and below returned at c or later: from the first such gap
	// on (suffixRet rises with i). open counts, per gap, the blind sales
	// whose first gap it is.
	opens := make([]int, len(levels)+1)
	for _, c := range blinds {
		i, _ := slices.BinarySearchFunc(levels, c, func(l level, c int64) int {
			if l.suffixRet >= c {
				return 1
			}
			return -1
		})
		opens[i]++
	}
	supply, demand := 0, int64(0)
	for i, l := range levels {
		supply += opens[i]
		upper := stock
		var landed int64
		if i > 0 {
			upper = levels[i-1].stock
			if levels[i-1].writer >= 0 || levels[i-1].landable {
				landed = 1
			}
		}
		need := upper - l.stock - landed
		if need <= 0 {
			continue
		}
		// Blind sales take units only down to a read of zero or more
		// (a counter at zero has none to give).
		demand += need
		if l.stock < 0 || demand > int64(supply) {
			return Illegal, levelWindow(reads[l.lo:l.hi]), nil
		}
	}
	return OK, nil, nil
}

// maxKnown is the latest known instant of ops: their returns, or their
// calls where the answer never came.
func maxKnown(ops ...saleOp) int64 {
	var t int64
	for _, o := range ops {
		end := o.ret
		if end == open {
			end = o.call
		}
		t = max(t, end)
	}
	return t
}

// levelWindow bounds the operations of a level that the units above it
// cannot reach.
func levelWindow(ops []saleOp) *Window {
	w := &Window{From: ops[0].call}
	for _, o := range ops {
		w.From = min(w.From, o.call)
	}
	w.To = maxKnown(ops...)
	return w
}

// focus names the operations that show a violation: those that read a
// stock from high down to low, from a counter at start (no blind sale
// among them). Drawn alone, they are illegal from there.
type focus struct{ start, high, low int64 }
