package checker

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
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
// write, or may have written; or a blind sale (see blind).
type sale struct {
	index   int // position in History.Ops
	client  int32
	attempt int16
	node    int16
	stock   int64
	write   history.WriteState
}

// blind reports whether s is a blind sale: the atomic implementation's
// check-and-decrement script, sent and never answered. It read no stock
// the buyer saw, and it may have run at any time after it was sent,
// taking a unit if there was one.
//
// Taken literally, a blind sale steps from s to {s, s-1} when s > 0 (to
// {s} otherwise) at any instant in [call, ∞). An operation that never
// returns would overlap everything after it and glue the rest of the
// history into one search, and unlike an unanswered write that read v
// (see bound) nothing bounds when it took effect. So the model grants it
// instead: a blind sale steps at its call, over [call, call], and only
// counts a pending unit in the state (counter.pending); an operation that
// reads v from a counter at s > v takes s-v pending units first (at most
// pending, and only down to v >= 0, since each unit needs a counter above
// zero). This is the same specification:
//
//   - A literal linearization becomes a granted one: grant each blind sale
//     at its call, and have the first read after each decrement take it.
//     Grants only follow operations that returned before the call, and a
//     decrement comes after the call, so real time is kept.
//   - A granted linearization becomes a literal one: the i-th unit taken
//     comes after the i-th grant (pending never goes negative), so place
//     the i-th blind sale to be granted, decrementing, right before the
//     read that took the i-th unit, and the others, doing nothing, at
//     their grant. Nothing has to follow a sale that never returned, and
//     what had to precede it precedes its grant, hence the read.
//
// Units taken after the last read are seen by nobody, so a state is taken
// lazily, at the next read: that keeps the state a chunk ends in a function
// of its operations, and the grants closed intervals that split cleanly.
func (s *sale) blind() bool { return s.stock == history.NoStock }

// counter is a state of the inventory model: the stock, and how many
// blind sales have been sent and may still take a unit each.
type counter struct{ stock, pending int64 }

// gaps says where in a history pending units may be taken. A read of v
// that finds the counter at s > v (blind sales took the units between) is
// possible in a linearization of the whole history only if no operation
// read a stock strictly between v and s, and none that read s applied its
// write: linearized before the read of v, either would have left the
// counter below s, and after it, it would find the counter at v or below.
// Every linearization keeps these rules, so the model may enforce them
// without changing the answer, and it must for speed: without them, a
// search may take units early at any read, and finds out only at some
// operation's return, far later, that a stock it skipped was still to be
// read. With them, units are only taken across the stocks nobody read,
// where the blind sales that landed left them.
type gaps struct {
	reads   []int64 // the stocks read, sorted, without repeats
	applied []int64 // the stocks read by applied writes, sorted
}

// gapsOf returns the gaps of ops.
func gapsOf(ops []saleOp) *gaps {
	g := &gaps{}
	for _, o := range ops {
		if o.in.blind() {
			continue
		}
		g.reads = append(g.reads, o.in.stock)
		if o.in.write == history.Applied {
			g.applied = append(g.applied, o.in.stock)
		}
	}
	slices.Sort(g.reads)
	slices.Sort(g.applied)
	g.reads = slices.Compact(g.reads)
	return g
}

// allow reports whether a read of v may find the counter at s > v.
func (g *gaps) allow(s, v int64) bool {
	if g == nil {
		return true
	}
	if i, _ := slices.BinarySearch(g.reads, v+1); i < len(g.reads) && g.reads[i] < s {
		return false
	}
	_, found := slices.BinarySearch(g.applied, s)
	return !found
}

// endPin is the synthetic last operation of a chunk: it pins the chunk's
// end state to one the next chunk can start from.
type endPin struct {
	// ends are the states it accepts.
	ends []counter
}

// saleOp is a sale with its interval. split is the return time used to
// find quiescent points: the real return, or an earlier instant by which
// the operation provably took effect (see bound).
type saleOp struct {
	in               *sale
	call, ret, split int64
}

// inventoryModel is the sequential specification of the counter, starting
// in any of starts, taking pending units only where g allows (nil: at any
// read). The model is nondeterministic because a write whose answer never
// came may or may not have landed; porcupine's power-set construction then
// tracks both states, and Init lets a chunk start from the states the
// previous chunk may have ended in.
func inventoryModel(starts []counter, g *gaps) porcupine.Model {
	nm := porcupine.NondeterministicModel{
		Init: func() []any {
			init := make([]any, len(starts))
			for i, c := range starts {
				init[i] = c
			}
			return init
		},
		Step: func(state, input, _ any) []any {
			c := state.(counter)
			if p, ok := input.(*endPin); ok {
				if slices.Contains(p.ends, c) {
					return []any{c}
				}
				return nil
			}
			in := input.(*sale)
			if in.blind() {
				c.pending++
				return []any{c}
			}
			// Blind sales that landed since the last read took the
			// counter down to what this one read.
			if taken := c.stock - in.stock; taken != 0 {
				if taken < 0 || taken > c.pending || in.stock < 0 || !g.allow(c.stock, in.stock) {
					return nil
				}
				c.stock, c.pending = in.stock, c.pending-taken
			}
			switch in.write {
			case history.Applied:
				c.stock--
				return []any{c}
			case history.NoWrite, history.Refused:
				return []any{c}
			}
			return []any{c, counter{c.stock - 1, c.pending}}
		},
		Hash: func(state any) uint64 {
			c := state.(counter)
			return uint64(c.stock)*0x9e3779b97f4a7c15 ^ uint64(c.pending)
		},
		DescribeOperation: func(input, _ any) string {
			if p, ok := input.(*endPin); ok {
				return p.describe()
			}
			return describeSale(input.(*sale))
		},
		DescribeState: func(state any) string { return describeCounter(state.(counter)) },
		DescribeOperationMetadata: func(info any) string {
			s, ok := info.(*sale)
			if !ok {
				return "synthetic: the states the next segment's reads allow"
			}
			return fmt.Sprintf("operation %d, node %d", s.index, s.node)
		},
	}
	return nm.ToModel()
}

// describeCounter names a state in porcupine's visualization.
func describeCounter(c counter) string {
	stock := strconv.FormatInt(c.stock, 10)
	switch c.pending {
	case 0:
		return stock
	case 1:
		return stock + " (1 blind sale may land)"
	}
	return fmt.Sprintf("%s (%d blind sales may land)", stock, c.pending)
}

// describeCounters names a set of states: "5", "5 or 4".
func describeCounters(cs []counter) string {
	names := make([]string, len(cs))
	for i, c := range cs {
		names[i] = describeCounter(c)
	}
	return strings.Join(names, " or ")
}

// describe names an end pin in porcupine's visualization.
func (p *endPin) describe() string {
	return "next segment starts at " + describeCounters(p.ends)
}

// describeSale names an operation in porcupine's visualization.
func describeSale(s *sale) string {
	if s.blind() {
		return fmt.Sprintf("c%d/a%d blind sale, no answer: may take a unit later", s.client, s.attempt)
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

// isBlind reports whether op is a blind sale (see sale.blind).
func isBlind(op *history.Op) bool { return !op.Read() && op.Write == history.Indeterminate }

// saleOps collects the operations that read the stock and the blind
// sales, sorted by call.
func saleOps(h *history.History) []saleOp {
	ops := make([]saleOp, 0, len(h.Ops))
	opened := false
	for i := range h.Ops {
		op := &h.Ops[i]
		if !op.Read() && !isBlind(op) {
			continue
		}
		o := saleOp{in: &sale{
			index: i, client: op.Client, attempt: op.Attempt, node: op.Node,
			stock: op.Stock, write: op.Write,
		}}
		if isBlind(op) {
			// Granted when sent (see sale.blind). A record without the
			// instant is granted from the start: more units may land,
			// which can hide a violation, never invent one.
			o.call = op.ReadCall
			if o.call <= 0 {
				o.call = max(0, op.WriteCall)
			}
			o.ret, o.split = o.call, o.call
		} else {
			o.call, o.ret = op.ReadCall, returnOf(op)
			o.split = o.ret
			opened = opened || o.ret == open
		}
		ops = append(ops, o)
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
// Every step of the model leaves the counter where it was or lowers it
// (blind sales only ever take it lower), and an operation that read can
// only take effect while the counter equals the stock it read. So in any
// linearization, an operation that read v comes before every operation
// that read less than v, and therefore takes effect before the earliest
// return among those. Cutting its interval there (for the purpose of
// splitting only) keeps exactly the same linearizations: it adds the
// constraint "before B" only for operations B called after some J that
// read less than v returned, and B, linearized after J, found the counter
// below v too. The write itself is still never guessed: porcupine sees the
// open-ended interval. Blind sales read nothing: they neither bound nor
// need bounding, as they are granted at their call.
func bound(ops []saleOp) {
	byStock := make([]saleOp, 0, len(ops))
	for _, o := range ops {
		if o.ret != open && !o.in.blind() {
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
		if ops[i].in.blind() {
			continue
		}
		k, _ := slices.BinarySearchFunc(byStock, ops[i].in.stock, func(o saleOp, v int64) int {
			return cmp.Compare(o.in.stock, v)
		})
		if k > 0 {
			ops[i].split = min(ops[i].split, first[k-1])
		}
	}
}

// segments returns where each quiescent segment of ops begins: at an
// operation called after every earlier one returned. A segment of blind
// sales alone joins the next one (or, at the end, the one before), so that
// every segment but a lone one reads the stock: an end pin needs the next
// segment's reads (see search.step).
func segments(ops []saleOp) []int {
	var starts []int
	last := int64(math.MinInt64)
	read := false // the current segment has an operation that read
	for i, o := range ops {
		if i == 0 || o.call > last && read {
			starts = append(starts, i)
			read = false
		}
		last = max(last, o.split)
		read = read || !o.in.blind()
	}
	if len(starts) > 1 && !read {
		starts = starts[:len(starts)-1]
	}
	return starts
}

// chunk is a run of consecutive segments checked in one porcupine call.
type chunk struct {
	lo, hi int // ops[lo:hi]
	// segs are the chunk's segments, as a range of the segment starts.
	segs [2]int
	// applied counts the acknowledged writes, landable the unanswered ones
	// that read, grants the blind sales.
	applied, landable, grants int64
	// opened is true when some operation that read has no return, so the
	// end state is not a function of the start.
	opened bool
	// reads is true when some operation read the stock; high and low are
	// the highest and lowest stock read. lowApplied is true when an
	// operation that read low wrote, lowLandable when one may have.
	reads                   bool
	high, low               int64
	lowApplied, lowLandable bool
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
			cs = append(cs, chunk{lo: lo, segs: [2]int{k, k}, high: math.MinInt64, low: math.MaxInt64})
		}
		c := &cs[len(cs)-1]
		c.hi = hi
		c.segs[1] = k + 1
		for _, o := range ops[lo:hi] {
			in := o.in
			if in.blind() {
				c.grants++
				continue
			}
			c.opened = c.opened || o.ret == open
			switch in.write {
			case history.Applied:
				c.applied++
			case history.Indeterminate:
				c.landable++
			}
			c.reads = true
			c.high = max(c.high, in.stock)
			if in.stock < c.low {
				c.low, c.lowApplied, c.lowLandable = in.stock, false, false
			}
			if in.stock == c.low {
				c.lowApplied = c.lowApplied || in.write == history.Applied
				c.lowLandable = c.lowLandable || in.write == history.Indeterminate
			}
		}
	}
	return cs
}

// after is the state a chunk that is not opened ends in when it starts
// from c and is linearizable from there. The counter never rises, so the
// last read of any linearization is the lowest, and it leaves the counter
// one lower if it wrote (an applied write that read the lowest stock comes
// last: nothing after it could read that stock again). Units taken are
// counted at the reads (see sale.blind), so pending minus stock grows by
// one with each applied write and each grant, and nothing else changes it.
func (k *chunk) after(c counter) counter {
	if !k.reads {
		return counter{c.stock, c.pending + k.grants}
	}
	end := counter{stock: k.low}
	if k.lowApplied {
		end.stock--
	}
	end.pending = c.pending - c.stock + k.grants + k.applied + end.stock
	return end
}

// ends lists the states an opened chunk k may end in, from the states in
// from, that the next chunk n (which reads) may start from. Each is a
// candidate only: an end pin decides which k reaches.
//
// k's last read is its lowest (the counter never rises, and every
// operation of k comes before the pin), so k ends at low, or one below
// when that read wrote or may have. Pending minus stock grows by one with
// each applied write, grant and landed write and by nothing else (see
// after), and stays within what was granted. n's first read is its
// highest, high, and what the counter lost before it was taken from what
// was pending then, with n's own grants at most.
func (k *chunk) ends(n *chunk, from []counter) []counter {
	stocks := []int64{k.low}
	switch {
	case k.lowApplied:
		stocks[0]--
	case k.lowLandable:
		stocks = append(stocks, k.low-1)
	}
	var out []counter
	for _, f := range from {
		for landed := range k.landable + 1 {
			for _, s := range stocks {
				p := f.pending - f.stock + k.grants + k.applied + landed + s
				if s >= n.high && s <= f.stock && p >= 0 && p <= f.pending+k.grants && s-n.high <= p+n.grants {
					out = append(out, counter{s, p})
				}
			}
		}
	}
	return sortCounters(out)
}

// sortCounters sorts cs by stock then pending, both descending, and drops
// repeats.
func sortCounters(cs []counter) []counter {
	slices.SortFunc(cs, func(a, b counter) int {
		return cmp.Or(cmp.Compare(b.stock, a.stock), cmp.Compare(b.pending, a.pending))
	})
	return slices.Compact(cs)
}

// maximal returns, for each stock among ends (sorted by sortCounters), the
// end with the most pending that try confirms a chunk reaches. The rest
// need no carrying: a state with more pending allows every linearization
// that one with less does, and more (units pending may be taken, or not).
// After maxPinTries tries the answer is Unknown: an end carried untried
// may be unreachable, and a later chunk linearized from it could hide a
// violation.
func maximal(ends []counter, try func(counter) Status) ([]counter, Status) {
	var out []counter
	tries := 0
	for i := 0; i < len(ends); {
		j := i + 1
		for j < len(ends) && ends[j].stock == ends[i].stock {
			j++
		}
		for ; i < j; i++ {
			if tries == maxPinTries {
				return nil, Unknown
			}
			tries++
			st := try(ends[i])
			if st == Unknown {
				return nil, Unknown
			}
			if st == OK {
				out = append(out, ends[i])
				break
			}
		}
		i = j
	}
	if len(out) == 0 {
		// The chunk was found linearizable to some end, so one is
		// confirmed; should none be, an empty start would make the next
		// chunk illegal: undecided is the honest answer.
		return nil, Unknown
	}
	return out, OK
}

// maxPinTries is how many end states of a chunk the checker tries one by
// one (see maximal) before it answers Unknown. Only histories that mix
// blind sales with unanswered writes that read try more than one or two;
// the check's deadline bounds the time all the same.
const maxPinTries = 64

// inventory is the outcome of the linearizability check, with what
// porcupine.Visualize needs of the first illegal chunk when the check was
// verbose.
type inventory struct {
	Linearizability
	model porcupine.Model
	info  porcupine.LinearizationInfo
	// starts are the states the first illegal chunk started from.
	starts []counter
}

// search checks chunks of a history's sales against one deadline.
type search struct {
	ops      []saleOp
	gaps     *gaps
	all      []porcupine.Operation // ops as porcupine sees them
	deadline time.Time
	verbose  bool
	inventory
}

// lostUpdate looks for the signature of a lost update: two writes that
// were applied after reading the same stock. No linearization holds both,
// since every step leaves the counter where it was or lowers it (blind
// sales too, and they never count here as they write nothing known), and an
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
// linearizable within timeout. The witnesses decide (see witness), in
// O(n log n) whatever the concurrency; porcupine, chunk by chunk, then
// finds the first illegal segment of an illegal history, within what is
// left of timeout, so that the report names the violation's first window
// (the witness's own window when the search runs out of time). With
// verbose the search alone decides and keeps porcupine's account of the
// first illegal chunk for visualization.
func checkInventory(h *history.History, timeout time.Duration, verbose bool) inventory {
	if h.Header.Unread {
		// Nothing says which stock the sales saw: there is no history of
		// the counter to check, only its final state to audit.
		return inventory{Linearizability: Linearizability{Status: NotApplicable}}
	}
	begin := time.Now()
	ops := saleOps(h)
	st, w, f := witness(ops, h.Header.Stock)
	if verbose {
		// The view is of the operations that show the violation, where
		// the witnesses name them: never a page of the whole history.
		if st == Illegal && f != nil && focusViews {
			sub := saleOps(h)
			sub = slices.DeleteFunc(sub, func(o saleOp) bool { return o.in.blind() || o.in.stock > f.high || o.in.stock < f.low })
			if res := searchInventory(sub, f.start, begin, timeout, true); res.Status == Illegal {
				return res
			}
		}
		return searchInventory(ops, h.Header.Stock, begin, timeout, true)
	}
	var res inventory
	switch {
	case st == OK && time.Since(begin) >= timeout:
		// Out of time: a pass is only what a check finished in time
		// proved (an illegal verdict is a proof whenever it comes).
		res.Status, res.Segments = Unknown, len(segments(ops))
	case st == OK:
		res.Status, res.Segments = OK, len(segments(ops))
	case lostUpdate(ops) != nil:
		// Two applied writes of one stock: the first pair is the window.
		res.Status, res.FirstIllegal, res.Segments = Illegal, lostUpdate(ops), len(segments(ops))
	default:
		// The window is a courtesy: porcupine gets windowSearch at most,
		// so that an illegal history of a million operations is not
		// searched for as long as the whole check may take.
		res = searchInventory(ops, h.Header.Stock, time.Now(), min(windowSearch, timeout-time.Since(begin)), false)
		if res.Status != Illegal {
			res.Status, res.FirstIllegal = Illegal, w
		}
	}
	res.Ops = len(ops)
	res.Elapsed = time.Since(begin).Nanoseconds()
	return res
}

// focusViews draws a violation from the operations the witnesses name
// (see focus) rather than from the first illegal segment; a variable so
// that tests can draw the segment.
var focusViews = true

// windowSearch bounds porcupine's search for the first illegal segment
// of a history the witnesses found illegal.
const windowSearch = 2 * time.Second

// searchInventory is porcupine's check of ops, sales from a counter at
// stock, chunk by chunk, against the deadline begin+timeout (see
// checkInventory).
func searchInventory(ops []saleOp, stock int64, begin time.Time, timeout time.Duration, verbose bool) inventory {
	s := search{ops: ops, deadline: begin.Add(timeout), verbose: verbose}
	starts := segments(s.ops)
	s.Ops, s.Segments = len(s.ops), len(starts)
	s.gaps = gapsOf(s.ops)
	s.all = make([]porcupine.Operation, len(s.ops))
	for i, o := range s.ops {
		s.all[i] = porcupine.Operation{Input: o.in, Call: o.call, Return: o.ret, Metadata: o.in}
	}
	cs := chunks(s.ops, starts, 0, len(starts), chunkOps)
	var k int
	var from []counter
	s.Status, k, from, s.FirstIllegal = s.walk(cs, nil, []counter{{stock: stock}})
	if s.Status == Illegal && cs[k].segs[1]-cs[k].segs[0] > 1 {
		// Narrow the report down to the first illegal segment of the
		// chunk: the chunk is illegal if and only if one of them is.
		c := cs[k]
		var next *chunk
		if k+1 < len(cs) {
			next = &cs[k+1]
		}
		sub := chunks(s.ops, starts, c.segs[0], c.segs[1], 1)
		if st, _, _, w := s.walk(sub, next, from); st == Illegal {
			s.FirstIllegal = w
		}
	}
	s.Elapsed = time.Since(begin).Nanoseconds()
	return s.inventory
}

// walk checks cs in order, the first from the states in from; next is the
// chunk after the last one (nil at the end of the history). It stops at
// the first chunk found illegal or undecided and returns its index, the
// states it started from and, when illegal, its window.
func (s *search) walk(cs []chunk, next *chunk, from []counter) (Status, int, []counter, *Window) {
	for k := range cs {
		c := &cs[k]
		n := next
		if k+1 < len(cs) {
			n = &cs[k+1]
		}
		last := n == nil || !n.reads
		if last {
			// A chunk that reads nothing is linearizable from any state
			// (segments lets only a lone one be), so c decides.
			n = nil
		}
		st, ends, at := s.step(c, n, from)
		switch {
		case st == Illegal:
			return Illegal, k, from, window(s.ops[c.lo:c.hi], at)
		case st == Unknown:
			return Unknown, k, from, nil
		case last:
			return OK, len(cs), nil, nil
		}
		from = ends
	}
	return OK, len(cs), from, nil
}

// step checks chunk c from the states in from, and returns the states it
// may end in that the next chunk n (nil when there is none) may start from,
// and the instant of the end pin it added, if any.
//
// A chunk whose operations all returned ends in one state per start (see
// chunk.after). One with an unanswered write that read does not: then
// each end state it may reach is pinned with a read when n begins, and the
// ends are those it can reach. Every operation of c comes before that
// read: it returned earlier, was granted earlier, or bound showed it comes
// before one that did (and the pin's counter is no higher than what
// that one read). The candidates come from c's and n's reads (see
// chunk.ends); with no blind sales there is one, n's highest read, as n's
// first operation finds the counter there and it never rises.
func (s *search) step(c, n *chunk, from []counter) (Status, []counter, int64) {
	pops := s.all[c.lo:c.hi]
	if n == nil {
		return s.check(pops, from, true), nil, 0
	}
	if !c.opened {
		if st := s.check(pops, from, true); st != OK {
			return st, nil, 0
		}
		starts := make(map[counter][]counter, len(from))
		ends := make([]counter, 0, len(from))
		for _, f := range from {
			end := c.after(f)
			if end.pending < 0 || end.stock > f.stock {
				continue // c is not linearizable from f
			}
			starts[end] = append(starts[end], f)
			ends = append(ends, end)
		}
		ends = sortCounters(ends)
		if len(ends) == 1 {
			return OK, ends, 0
		}
		ends, st := maximal(ends, func(e counter) Status { return s.check(pops, starts[e], false) })
		return st, ends, 0
	}
	at := s.ops[n.lo].call
	p := &endPin{ends: c.ends(n, from)}
	if len(p.ends) == 0 {
		// No state c may end in leads to n. To draw the violation, pin
		// the one n's first read needs: c cannot reach it, so the verdict
		// stands (and were it reached, porcupine would have shown it).
		most := int64(0)
		for _, f := range from {
			most = max(most, f.pending+c.grants)
		}
		p.ends = []counter{{n.high, most}}
	}
	pops = append(slices.Clip(pops), porcupine.Operation{Input: p, Call: at, Return: at, Metadata: p})
	st := s.check(pops, from, true)
	if st != OK || len(p.ends) == 1 {
		return st, p.ends, at
	}
	ends, st := maximal(p.ends, func(e counter) Status {
		one := &endPin{ends: []counter{e}}
		pops[len(pops)-1] = porcupine.Operation{Input: one, Call: at, Return: at, Metadata: one}
		return s.check(pops, from, false)
	})
	return st, ends, at
}

// check runs porcupine on pops from the states in from. With keep, a
// verbose search keeps its account of an illegal answer.
func (s *search) check(pops []porcupine.Operation, from []counter, keep bool) Status {
	left := time.Until(s.deadline)
	if left <= 0 {
		return Unknown
	}
	model := inventoryModel(from, s.gaps)
	var r porcupine.CheckResult
	if s.verbose && keep {
		lanes(pops)
		var info porcupine.LinearizationInfo
		r, info = porcupine.CheckOperationsVerbose(model, pops, left)
		if r == porcupine.Illegal {
			s.model, s.info, s.starts = model, info, from
		}
	} else {
		r = porcupine.CheckOperationsTimeout(model, pops, left)
	}
	switch r {
	case porcupine.Ok:
		return OK
	case porcupine.Illegal:
		return Illegal
	}
	return Unknown
}

// window bounds a chunk in time: from its first call to its last known
// return (or the end pin's instant, when later).
func window(ops []saleOp, pin int64) *Window {
	w := &Window{From: ops[0].call, To: pin}
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
