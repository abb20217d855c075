package checker

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/lockbench/lockbench/history"
)

// chunkOps is how many operations the checker hands porcupine at once. The
// quiescent segments of a lock-protected sale hold one operation each;
// merging them amortises porcupine's fixed cost per call (a goroutine, a
// timer, a sort), while small chunks keep the search cheap: it clones an
// n-bit set at every step, so a chunk costs about n²/64 words. It is a
// variable so that tests can cut every segment into its own chunk.
var chunkOps = 256

// open is the return time of an operation whose answer never came: it may
// take effect at any later time.
const open = math.MaxInt64

// sale is the input of one operation of the inventory model: an atomic
// purchase that found the counter at stock and then wrote stock-1, did not
// write, or may have written.
type sale struct {
	index   int // position in History.Ops
	client  int32
	attempt int16
	node    int16
	stock   int64
	write   history.WriteState
	// probe marks the synthetic last operation of a chunk that pins its
	// end state to the one the next chunk starts from.
	probe bool
}

// saleOp is a sale with its interval. split is the return time used to
// find quiescent points: the real return, or an earlier instant by which
// the operation provably took effect (see bound).
type saleOp struct {
	in               *sale
	call, ret, split int64
}

// inventoryModel is the sequential specification of the counter. The
// model is nondeterministic because a write whose answer never came may
// or may not have landed; porcupine's power-set construction then tracks
// both states, and Init lets a chunk start from the state the previous
// chunk ended in.
func inventoryModel(start int64) porcupine.Model {
	nm := porcupine.NondeterministicModel{
		Init: func() []any { return []any{start} },
		Step: func(state, input, _ any) []any {
			s, in := state.(int64), input.(*sale)
			if s != in.stock {
				return nil
			}
			switch in.write {
			case history.Applied:
				return []any{s - 1}
			case history.NoWrite, history.Refused:
				return []any{s}
			}
			return []any{s, s - 1}
		},
		Hash:              func(state any) uint64 { return uint64(state.(int64)) },
		DescribeOperation: func(input, _ any) string { return describeSale(input.(*sale)) },
		DescribeState:     func(state any) string { return strconv.FormatInt(state.(int64), 10) },
		DescribeOperationMetadata: func(info any) string {
			s, ok := info.(*sale)
			if !ok || s.probe {
				return "synthetic: the stock the next segment's reads imply"
			}
			return fmt.Sprintf("operation %d, node %d", s.index, s.node)
		},
	}
	return nm.ToModel()
}

// describeSale names an operation in porcupine's visualization.
func describeSale(s *sale) string {
	if s.probe {
		return fmt.Sprintf("next segment starts at %d", s.stock)
	}
	read := fmt.Sprintf("c%d/a%d read %d", s.client, s.attempt, s.stock)
	switch s.write {
	case history.Applied:
		return fmt.Sprintf("%s → wrote %d", read, s.stock-1)
	case history.Refused:
		return fmt.Sprintf("%s → write %d refused", read, s.stock-1)
	case history.Indeterminate:
		return fmt.Sprintf("%s → write %d unknown", read, s.stock-1)
	}
	return read + ", no write"
}

// returnOf is when op's effect was known to be over. A write whose answer
// never came is open-ended, and so is a record missing the instant it
// should have (treating it as open can hide a violation, never invent one).
func returnOf(op *history.Op) int64 {
	var r int64
	switch op.Write {
	case history.Applied, history.Refused:
		r = op.WriteReturn
	case history.NoWrite:
		r = op.ReadReturn
	default:
		return open
	}
	if r < op.ReadCall {
		return open
	}
	return r
}

// saleOps collects the operations that read the stock, sorted by call.
func saleOps(h *history.History) []saleOp {
	ops := make([]saleOp, 0, len(h.Ops))
	opened := false
	for i := range h.Ops {
		op := &h.Ops[i]
		if !op.Read() {
			continue
		}
		ret := returnOf(op)
		opened = opened || ret == open
		ops = append(ops, saleOp{
			in: &sale{
				index: i, client: op.Client, attempt: op.Attempt, node: op.Node,
				stock: op.Stock, write: op.Write,
			},
			call: op.ReadCall, ret: ret, split: ret,
		})
	}
	if opened {
		bound(ops)
	}
	slices.SortFunc(ops, func(a, b saleOp) int {
		return cmp.Or(cmp.Compare(a.call, b.call), cmp.Compare(a.in.index, b.in.index))
	})
	return ops
}

// bound gives every operation the earliest instant by which it provably
// took effect, so that an open-ended write does not glue the rest of the
// history into one search.
//
// Every step of the model leaves the counter where it was or lowers it,
// and an operation can only take effect while the counter equals the stock
// it read. So in any linearization, an operation that read v comes before
// every operation that read less than v, and therefore takes effect before
// the earliest return among those. Cutting its interval there (for the
// purpose of splitting only) keeps exactly the same linearizations: it adds
// the constraint "before B" only for operations B called after some J that
// read less than v returned, and B, linearized after J, found the counter
// below v too. The write itself is still never guessed: porcupine sees the
// open-ended interval.
func bound(ops []saleOp) {
	byStock := make([]saleOp, 0, len(ops))
	for _, o := range ops {
		if o.ret != open {
			byStock = append(byStock, o)
		}
	}
	slices.SortFunc(byStock, func(a, b saleOp) int { return cmp.Compare(a.in.stock, b.in.stock) })
	// first[k] is the earliest return among byStock[:k+1].
	first := make([]int64, len(byStock))
	for k, o := range byStock {
		first[k] = o.ret
		if k > 0 {
			first[k] = min(first[k-1], o.ret)
		}
	}
	for i := range ops {
		k, _ := slices.BinarySearchFunc(byStock, ops[i].in.stock, func(o saleOp, v int64) int {
			return cmp.Compare(o.in.stock, v)
		})
		if k > 0 {
			ops[i].split = min(ops[i].split, first[k-1])
		}
	}
}

// segments returns where each quiescent segment of ops begins: at an
// operation called after every earlier one returned.
func segments(ops []saleOp) []int {
	var starts []int
	last := int64(math.MinInt64)
	for i, o := range ops {
		if i == 0 || o.call > last {
			starts = append(starts, i)
		}
		last = max(last, o.split)
	}
	return starts
}

// chunk is a run of consecutive segments checked in one porcupine call.
type chunk struct {
	lo, hi int // ops[lo:hi]
	// segs are the chunk's segments, as a range of the segment starts.
	segs [2]int
	// applied counts the acknowledged writes; opened is true when some
	// operation has no return, so the end state is not simply the start
	// minus applied.
	applied int64
	opened  bool
}

// chunks merges the segments starting at starts[from:to] into chunks of
// at least size operations.
func chunks(ops []saleOp, starts []int, from, to, size int) []chunk {
	var cs []chunk
	for k := from; k < to; k++ {
		lo, hi := starts[k], len(ops)
		if k+1 < len(starts) {
			hi = starts[k+1]
		}
		if len(cs) == 0 || cs[len(cs)-1].hi-cs[len(cs)-1].lo >= size {
			cs = append(cs, chunk{lo: lo, segs: [2]int{k, k}})
		}
		c := &cs[len(cs)-1]
		c.hi = hi
		c.segs[1] = k + 1
		for _, o := range ops[lo:hi] {
			switch {
			case o.ret == open:
				c.opened = true
			case o.in.write == history.Applied:
				c.applied++
			}
		}
	}
	return cs
}

// inventory is the outcome of the linearizability check, with what
// porcupine.Visualize needs of the first illegal chunk when the check was
// verbose.
type inventory struct {
	Linearizability
	model porcupine.Model
	info  porcupine.LinearizationInfo
	// start is the stock the first illegal chunk started from.
	start int64
}

// search checks chunks of a history's sales against one deadline.
type search struct {
	ops      []saleOp
	all      []porcupine.Operation // ops as porcupine sees them
	deadline time.Time
	verbose  bool
	inventory
}

// lostUpdate looks for the signature of a lost update: two writes that
// were applied after reading the same stock. No linearization holds both,
// since every step leaves the counter where it was or lowers it, and an
// applied write needs the counter at the stock it read and leaves it one
// below. It returns the window of the first such pair, from the earlier
// one's call to the later return, or nil. ops are sorted by call.
func lostUpdate(ops []saleOp) *Window {
	seen := make(map[int64]int, len(ops))
	for i, o := range ops {
		if o.in.write != history.Applied {
			continue
		}
		if j, dup := seen[o.in.stock]; dup {
			return &Window{From: ops[j].call, To: max(ops[j].ret, o.ret)}
		}
		seen[o.in.stock] = i
	}
	return nil
}

// checkInventory checks that the stock reads and writes of h are
// linearizable, chunk by chunk, within timeout. With verbose it keeps
// porcupine's account of the first illegal chunk for visualization.
func checkInventory(h *history.History, timeout time.Duration, verbose bool) inventory {
	begin := time.Now()
	s := search{ops: saleOps(h), deadline: begin.Add(timeout), verbose: verbose}
	starts := segments(s.ops)
	s.Ops, s.Segments = len(s.ops), len(starts)
	if !verbose {
		if w := lostUpdate(s.ops); w != nil {
			// Proof enough, and found in linear time where porcupine
			// could search for long in a highly concurrent history.
			s.Status, s.FirstIllegal = Illegal, w
			s.Elapsed = time.Since(begin).Nanoseconds()
			return s.inventory
		}
	}
	s.all = make([]porcupine.Operation, len(s.ops))
	for i, o := range s.ops {
		s.all[i] = porcupine.Operation{Input: o.in, Call: o.call, Return: o.ret, Metadata: o.in}
	}
	cs := chunks(s.ops, starts, 0, len(starts), chunkOps)
	var k int
	var state int64
	s.Status, k, state, s.FirstIllegal = s.walk(cs, nil, h.Header.Stock)
	if s.Status == Illegal && cs[k].segs[1]-cs[k].segs[0] > 1 {
		// Narrow the report down to the first illegal segment of the
		// chunk: the chunk is illegal if and only if one of them is.
		c := cs[k]
		var next *chunk
		if k+1 < len(cs) {
			next = &cs[k+1]
		}
		sub := chunks(s.ops, starts, c.segs[0], c.segs[1], 1)
		if st, _, _, w := s.walk(sub, next, state); st == Illegal {
			s.FirstIllegal = w
		}
	}
	s.Elapsed = time.Since(begin).Nanoseconds()
	return s.inventory
}

// walk checks cs in order, the first from state; next is the chunk after
// the last one (nil at the end of the history). It stops at the first
// chunk found illegal or undecided and returns its index, the state it
// started from and, when illegal, its window.
func (s *search) walk(cs []chunk, next *chunk, state int64) (Status, int, int64, *Window) {
	for k, c := range cs {
		pops := s.all[c.lo:c.hi]
		n := next
		if k+1 < len(cs) {
			n = &cs[k+1]
		}
		var probe *sale
		at := int64(0)
		if c.opened && n != nil {
			// The next chunk starts at the highest stock it reads: its
			// first operation finds the counter at its start state and
			// the counter never rises. Pin this chunk's end there with a
			// read when the next chunk begins. Every operation of this
			// chunk comes before that read: it returned earlier, or bound
			// showed it comes before one that did.
			probe = &sale{index: -1, probe: true, stock: math.MinInt64}
			for _, o := range s.ops[n.lo:n.hi] {
				probe.stock = max(probe.stock, o.in.stock)
			}
			at = s.ops[n.lo].call
			pops = append(slices.Clip(pops), porcupine.Operation{Input: probe, Call: at, Return: at, Metadata: probe})
		}
		left := time.Until(s.deadline)
		if left <= 0 {
			return Unknown, k, state, nil
		}
		model := inventoryModel(state)
		var r porcupine.CheckResult
		if s.verbose {
			lanes(pops)
			var info porcupine.LinearizationInfo
			r, info = porcupine.CheckOperationsVerbose(model, pops, left)
			if r == porcupine.Illegal {
				s.model, s.info, s.start = model, info, state
			}
		} else {
			r = porcupine.CheckOperationsTimeout(model, pops, left)
		}
		switch r {
		case porcupine.Unknown:
			return Unknown, k, state, nil
		case porcupine.Illegal:
			return Illegal, k, state, window(s.ops[c.lo:c.hi], at)
		}
		if probe != nil {
			state = probe.stock
		} else {
			state -= c.applied
		}
	}
	return OK, len(cs), state, nil
}

// window bounds a chunk in time: from its first call to its last known
// return (or the probe's instant, when later).
func window(ops []saleOp, probe int64) *Window {
	w := &Window{From: ops[0].call, To: probe}
	for _, o := range ops {
		end := o.ret
		if end == open {
			end = o.call
		}
		w.To = max(w.To, end)
	}
	return w
}

// lanes gives each operation of a chunk a row of the visualization:
// porcupine draws one row per ClientId from zero up, and a chunk of a
// sequential sale touches hundreds of buyers, so operations that do not
// overlap share a row (the description names the buyer).
func lanes(ops []porcupine.Operation) {
	var busy []int64 // busy[l] is when lane l frees up
	for i := range ops {
		l := slices.IndexFunc(busy, func(end int64) bool { return end < ops[i].Call })
		if l < 0 {
			l = len(busy)
			busy = append(busy, 0)
		}
		busy[l] = ops[i].Return
		ops[i].ClientId = l
	}
}
