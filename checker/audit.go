package checker

import (
	"cmp"
	"iter"
	"math"
	"slices"

	"github.com/lockbench/lockbench/history"
)

// checkData adds the order audit (oversold, lost and duplicate orders) to
// the linearizability result.
func checkData(h *history.History, lin Linearizability) Data {
	d := Data{
		Linearizability: lin,
		Orders:          h.Final.Orders,
		DuplicateOrders: h.Final.DuplicateOrders,
		NegativeStock:   h.Final.Stock < 0,
		FinalStock:      h.Final.Stock,
	}
	applied := make(map[int32]int)
	for i := range h.Ops {
		if h.Ops[i].Outcome == history.Sold {
			d.Sold++
		}
		if mismatched(&h.Ops[i]) {
			if d.Mismatched == 0 {
				d.FirstMismatch = ref(h, i, h.Ops[i].ReadCall, h.Ops[i].End)
			}
			d.Mismatched++
		}
		switch h.Ops[i].Write {
		case history.Indeterminate:
			d.Indeterminate++
		case history.Applied:
			applied[h.Ops[i].Client]++
		}
	}
	// One order per user: a user whose purchase was applied twice in the
	// history got two, whatever the store's final state says (a store
	// that shows one has lost the other). Users the final state already
	// names are counted there.
	for client, n := range applied {
		if n > 1 && !slices.Contains(h.Final.DuplicateUsers, client) {
			d.DuplicateSales++
		}
	}
	// Orders beyond what the counter lost catch lost updates; orders
	// beyond the stock catch a counter that went negative as well.
	// Fewer orders than confirmed sales: acknowledged writes were lost.
	// (More is no finding: a sale whose reply was lost may have landed.)
	// A final state that could not be read (the server was lost) is not
	// audited: the history's own checks stand alone. Sales confirmed
	// beyond the stock are an oversell whatever the final state says, or
	// whether it could be read at all.
	d.Oversold = max(0, d.Sold-h.Header.Stock)
	if d.FinalUnknown = h.Final.Unknown; !d.FinalUnknown {
		consumed := h.Header.Stock - h.Final.Stock
		d.Oversold = max(d.Oversold, d.Orders-consumed, d.Orders-h.Header.Stock)
		d.LostOrders = max(0, d.Sold-d.Orders)
		d.Unordered, d.UnorderedBuyers = unordered(h)
	}
	audited := d.Oversold == 0 && d.LostOrders == 0 && d.Unordered == 0 && d.DuplicateOrders == 0 && d.DuplicateSales == 0 &&
		d.Mismatched == 0 && !d.NegativeStock
	switch {
	case h.Final.Unknown && !anyAnswered(h):
		// No buyer got an answer and the final state is unknown: nothing
		// was observed, so nothing is proved either way.
		d.Status = Unknown
	case h.Final.Unknown && lin.Status == NotApplicable && audited:
		// Neither the reads nor the final state were seen: the answers
		// alone cannot show an oversell within the stock or a lost order.
		d.Status = Unknown
	case (lin.Status == OK || lin.Status == NotApplicable) && audited:
		d.Status = OK
	case lin.Status == Unknown && audited:
		d.Status = Unknown
	default:
		d.Status = Violated
	}
	return d
}

// MaxNamed is how many buyers a finding names at most.
const MaxNamed = 10

// unordered counts the buyers h's attempts told "sold" whom its final
// state lists without an order, and names the first MaxNamed of them; none
// when the state does not list the users with an order.
func unordered(h *history.History) (n int64, named []int32) {
	if h.Final.Ordered == nil {
		return 0, nil
	}
	for i := range h.Ops {
		op := &h.Ops[i]
		if op.Outcome != history.Sold {
			continue
		}
		if _, found := slices.BinarySearch(h.Final.Ordered, op.Client); !found {
			n++
			if len(named) < MaxNamed {
				named = append(named, op.Client)
			}
		}
	}
	return n, named
}

// anyAnswered reports whether some attempt of h got an answer that says
// what happened (sold, sold out, duplicate, refused, gave up, failed
// before writing).
func anyAnswered(h *history.History) bool {
	for i := range h.Ops {
		switch h.Ops[i].Outcome {
		case history.Unknown, history.Pending, history.Crashed:
		default:
			return true
		}
	}
	return false
}

// mismatched reports whether op's answer contradicts the stock it read: a
// write applied after a read of no unit, or "sold out" after a read of one.
// The inventory model lets any answer follow any read (it tracks the
// counter, not what the buyer was told), so this is checked here.
func mismatched(op *history.Op) bool {
	if !op.Read() {
		return false
	}
	switch {
	case op.Write == history.Applied:
		return op.Stock <= 0
	case op.Outcome == history.SoldOut:
		return op.Stock > 0
	}
	return false
}

// ref names operation i of h over [from, to].
func ref(h *history.History, i int, from, to int64) *OpRef {
	op := &h.Ops[i]
	return &OpRef{Index: i, Client: op.Client, Attempt: op.Attempt, Node: op.Node, From: from, To: to}
}

// checkLock counts critical sections that began while a different owner
// still held the lock, naming the first maxPairs of them. Shared sections
// (read locks) may overlap one another; an exclusive one overlaps nobody.
//
// In a widened history (see widen) a section runs from its Acquired, ε
// late, to its ReleaseCall or Crash, ε early: one that shrank to nothing
// overlaps nothing and is left out.
func checkLock(h *history.History, maxPairs int) Lock {
	if h.Header.Lockless {
		return Lock{Status: NotApplicable}
	}
	type section struct {
		OpRef
		shared bool
	}
	var cs []section
	lost := 0
	for i := range h.Ops {
		op := &h.Ops[i]
		if !op.Holds() {
			continue
		}
		if op.Lost {
			lost++
		}
		from, to := op.Acquired, op.HoldEnd(h.Header.Duration)
		if h.Header.ClockError > 0 && from >= to {
			continue
		}
		cs = append(cs, section{OpRef{
			Index: i, Client: op.Client, Attempt: op.Attempt, Node: op.Node,
			From: from, To: to,
		}, op.Shared})
	}
	slices.SortFunc(cs, func(a, b section) int {
		return cmp.Or(cmp.Compare(a.From, b.From), cmp.Compare(a.Index, b.Index))
	})
	l := Lock{Status: OK, Fencing: h.Header.Fenced, Lost: lost}
	// Comparing with the earlier section that ends last is enough to tell
	// whether a section began inside some other one: the earlier
	// exclusive one for any section, and the earlier shared one too for
	// an exclusive section.
	lastX, lastS := -1, -1
	for i := range cs {
		b := &cs[i]
		for _, last := range []int{lastX, lastS} {
			if last < 0 || b.shared && cs[last].shared {
				continue
			}
			a := &cs[last]
			if b.From < a.To && (a.Client != b.Client || a.Attempt != b.Attempt) {
				l.Overlaps++
				c, fault := cause(h, &h.Ops[a.Index], &h.Ops[b.Index])
				o := Overlap{A: a.OpRef, B: b.OpRef, Duration: max(0, min(a.To, b.To)-b.From), Cause: c, Fault: fault}
				if l.Causes == nil {
					l.Causes = make(map[Cause]int)
				}
				l.Causes[c]++
				if breaks(h, c) {
					if l.Broken == 0 {
						l.FirstBroken = &o
					}
					l.Broken++
				}
				if len(l.Pairs) < maxPairs {
					l.Pairs = append(l.Pairs, o)
				}
				break
			}
		}
		switch {
		case b.shared && (lastS < 0 || b.To > cs[lastS].To):
			lastS = i
		case !b.shared && (lastX < 0 || b.To > cs[lastX].To):
			lastX = i
		}
	}
	l.TokenClashes, l.FirstClash = checkTokens(h)
	p := h.Header.Promises
	l.FIFO = p != nil && p.FIFO && len(h.Faults) == 0
	var extra int64
	if l.FIFO {
		extra = slackOf(h)
	}
	l.Overtakes, l.FirstOvertake = checkFairness(h, extra)
	if l.Overlaps > 0 || l.TokenClashes > 0 || l.FIFO && l.Overtakes > 0 {
		l.Status = Violated
	}
	return l
}

// Holds reports whether lock safety holds as far as the verdict goes: no
// violation, or only overlaps that the store's fencing answers for (a
// lease's known limit, a fault that removed the lock), none breaking a
// promise the lock made.
func (l *Lock) Holds() bool {
	switch {
	case l.Status == OK || l.Status == NotApplicable:
		return true
	case l.Status != Violated:
		return false
	}
	return l.Fencing && l.Broken == 0 && l.TokenClashes == 0 && !(l.FIFO && l.Overtakes > 0)
}

// checkTokens finds the holders whose fencing tokens break a fenced
// lock's promise (Promises.Tokens; Header.Fenced in a history that
// records no promises): two acquisitions with the same token, or one
// whose token is lower than a token granted before its try was sent. It
// counts each acquisition that clashes with an earlier one once, and
// names the first.
func checkTokens(h *history.History) (int, *TokenClash) {
	if p := h.Header.Promises; p != nil && !p.Tokens || p == nil && !h.Header.Fenced {
		return 0, nil
	}
	var held []int
	for i := range h.Ops {
		if op := &h.Ops[i]; op.Token > 0 && op.Acquired > 0 {
			held = append(held, i)
		}
	}
	// In the order the tokens were had, each acquisition against the
	// highest token granted before its try was sent, and against every
	// other holder of its own token.
	byGrant := slices.Clone(held)
	slices.SortFunc(byGrant, func(a, b int) int {
		return cmp.Or(cmp.Compare(h.Ops[a].Acquired, h.Ops[b].Acquired), cmp.Compare(a, b))
	})
	byAsk := slices.Clone(held)
	asked := func(i int) int64 { return holdOf(h, &h.Ops[i]).start }
	slices.SortFunc(byAsk, func(a, b int) int { return cmp.Or(cmp.Compare(asked(a), asked(b)), cmp.Compare(a, b)) })
	first := make(map[uint64]int, len(held))
	clash := func(a, b int) *TokenClash {
		oa, ob := &h.Ops[a], &h.Ops[b]
		return &TokenClash{A: *ref(h, a, oa.Acquired, oa.HoldEnd(h.Header.Duration)), B: *ref(h, b, ob.Acquired, ob.HoldEnd(h.Header.Duration)), TokenA: oa.Token, TokenB: ob.Token}
	}
	var n int
	var firstClash *TokenClash
	note := func(c *TokenClash) {
		if n == 0 || c.B.From < firstClash.B.From {
			firstClash = c
		}
		n++
	}
	top, j := -1, 0
	for _, b := range byAsk {
		for j < len(byGrant) && h.Ops[byGrant[j]].Acquired < asked(b) {
			if g := byGrant[j]; top < 0 || h.Ops[g].Token > h.Ops[top].Token {
				top = g
			}
			j++
		}
		switch a, dup := first[h.Ops[b].Token]; {
		case dup:
			note(clash(a, b))
		case top >= 0 && h.Ops[top].Token > h.Ops[b].Token:
			note(clash(top, b))
		}
		if _, ok := first[h.Ops[b].Token]; !ok {
			first[h.Ops[b].Token] = b
		}
	}
	return n, firstClash
}

// checkLiveness looks at each buyer's last attempt: a buyer sent away
// while units were left points at a lock nobody could take, a store that
// refused a holder's write, or a sale that answered "sold out" too early.
// Every refused write is judged, on any attempt: it is legitimate only
// when a newer fencing token was taken before the refusal came back (the
// store refuses a stale holder, and only after a newer one read). With a
// clock error ε (h widened, see widen), a token taken up to 2ε after the
// refusal came back may have been taken before it: the refusal is
// legitimate then too, since widening moved the grant and the refusal
// alike.
func checkLiveness(h *history.History) Liveness {
	l := Liveness{Status: OK, CutShort: h.Header.CutShort, CutBy: h.Header.CutBy}
	newer := newerTokens(h)
	illegit := make(map[int]bool)
	last := newLastAttempts(h)
	for i := range h.Ops {
		op := &h.Ops[i]
		last.see(h, i)
		if op.Write != history.Refused {
			continue
		}
		// Only a fenced store refuses legitimately: a lock declared
		// unfenced whose store refused a write was fenced all the same,
		// and the refusal is blamed on that, not on a missing token.
		if !h.Header.Fenced {
			l.Unfenced++
		}
		if tok, at, ok := newer.before(op.Token, later(op.WriteReturn, slack(h))); ok && h.Header.Fenced {
			if l.Fenced == 0 {
				l.firstFenced = fencedBy{op: i, token: tok, at: at}
			}
			l.Fenced++
			continue
		}
		if l.Refused == 0 || op.WriteCall < l.FirstRefused.From {
			l.FirstRefused = ref(h, i, op.WriteCall, op.WriteReturn)
		}
		l.Refused++
		illegit[i] = true
	}
	for i := range last.all() {
		op := &h.Ops[i]
		switch op.Outcome {
		case history.Unknown:
			// A request that failed without an answer (a timeout, a 5xx,
			// a reset): the purchase may have landed, and its buyer did
			// not give up; the failure is the transport's or the server's,
			// not the lock's liveness.
			l.Unanswered++
		case history.GaveUp, history.Failed, history.Pending:
			l.GaveUp++
			l.SentAway++
		case history.Rejected:
			if illegit[i] {
				l.SentAway++
			}
		case history.SoldOut:
			// The stock never rises during a sale: a "sold out" whose read
			// is unknown (a service that does not say) was wrong when
			// units were still left at the end.
			if op.Read() && op.Stock > 0 || !op.Read() && !h.Final.Unknown && h.Final.Stock > 0 {
				l.SentAway++
			}
		}
	}
	if h.Final.Stock > 0 && l.SentAway > 0 {
		l.Unsold = h.Final.Stock
	}
	switch {
	case l.Refused > 0:
		l.Status = Violated
	case l.CutBy == history.CutInterrupt || l.CutBy == history.CutServerLost:
		// Buyers the user stopped, or a lost server left waiting, were
		// not refused service by the lock: whether they would have been
		// served is unknown.
		l.Status = Unknown
	case l.CutShort || l.Unsold > 0:
		l.Status = Violated
	}
	return l
}

// tokens holds the fencing tokens taken in a run, by token, each with the
// earliest instant it was taken.
type tokens struct {
	token []uint64 // ascending
	// first[k] is the earliest instant any of token[k:] was taken, by
	// firstTok[k].
	first    []int64
	firstTok []uint64
}

// newerTokens indexes the tokens of h's attempts that took the lock.
func newerTokens(h *history.History) tokens {
	type taken struct {
		token uint64
		at    int64
	}
	var all []taken
	for i := range h.Ops {
		if op := &h.Ops[i]; op.Token > 0 && op.Acquired > 0 {
			all = append(all, taken{op.Token, op.Acquired})
		}
	}
	slices.SortFunc(all, func(a, b taken) int { return cmp.Compare(a.token, b.token) })
	n := len(all)
	t := tokens{token: make([]uint64, n), first: make([]int64, n), firstTok: make([]uint64, n)}
	earliest, by := int64(math.MaxInt64), uint64(0)
	for k := n - 1; k >= 0; k-- {
		if all[k].at <= earliest {
			earliest, by = all[k].at, all[k].token
		}
		t.token[k], t.first[k], t.firstTok[k] = all[k].token, earliest, by
	}
	return t
}

// before returns the token newer than tok taken first, and when, if that
// was before at.
func (t tokens) before(tok uint64, at int64) (uint64, int64, bool) {
	k, _ := slices.BinarySearch(t.token, tok+1)
	if k == len(t.token) || t.first[k] >= at {
		return 0, 0, false
	}
	return t.firstTok[k], t.first[k], true
}

// lastAttempts is the last attempt of each buyer: a slice by buyer where
// every buyer is within the header's and the header declares no more
// buyers than there are operations (a history read from a file always
// does), a map otherwise.
type lastAttempts struct {
	by    []int // index+1 of the buyer's last attempt's operation; 0 for none yet
	other map[int32]int
}

// newLastAttempts makes room for the buyers of h.
func newLastAttempts(h *history.History) *lastAttempts {
	if h.Header.Clients > len(h.Ops) {
		return &lastAttempts{other: make(map[int32]int)}
	}
	for i := range h.Ops {
		if c := h.Ops[i].Client; c < 0 || int(c) >= h.Header.Clients {
			return &lastAttempts{other: make(map[int32]int)}
		}
	}
	return &lastAttempts{by: make([]int, h.Header.Clients)}
}

// see keeps operation i if it is its buyer's latest attempt so far.
func (l *lastAttempts) see(h *history.History, i int) {
	op := &h.Ops[i]
	if l.other != nil {
		if j, ok := l.other[op.Client]; !ok || op.Attempt > h.Ops[j].Attempt {
			l.other[op.Client] = i
		}
		return
	}
	if j := l.by[op.Client] - 1; j < 0 || op.Attempt > h.Ops[j].Attempt {
		l.by[op.Client] = i + 1
	}
}

// all yields the operation of every buyer's last attempt.
func (l *lastAttempts) all() iter.Seq[int] {
	return func(yield func(int) bool) {
		for _, i := range l.other {
			if !yield(i) {
				return
			}
		}
		for _, j := range l.by {
			if j > 0 && !yield(j-1) {
				return
			}
		}
	}
}
