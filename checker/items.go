package checker

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/internal/safego"
	"github.com/lockbench/lockbench/internal/words"
)

// A sale of several items (Header.Items) keeps one counter, one set of
// orders and one lock per item, and the items share nothing: a history of
// K items is K independent histories, one per item, as porcupine
// partitions a key-value history by key. Each is checked alone (the
// witness check, porcupine's window, the audits, mutual exclusion among
// the holders of that item's lock) and the reports add up, each reason
// naming its item. What spans items, a cart that buys all its items or
// none, is checked on the whole history (see checkCarts).

// part is one item's history, with the index in the whole history of each
// of its operations.
type part struct {
	item  int
	h     history.History
	index []int // index[i] is the whole history's index of h.Ops[i]
}

// split partitions h by item.
func split(h *history.History) []part {
	k := h.Header.ItemCount()
	parts := make([]part, k)
	for i := range parts {
		p := &parts[i]
		p.item = i
		p.h.Header = h.Header
		p.h.Header.Items, p.h.Header.Cart = 0, 0
		p.h.Faults = h.Faults
		p.h.Final = history.Final{Unknown: h.Final.Unknown}
		if i < len(h.Final.Items) {
			p.h.Final = h.Final.Items[i]
			p.h.Final.Unknown = p.h.Final.Unknown || h.Final.Unknown
		}
	}
	for i := range h.Ops {
		p := &parts[h.Ops[i].Item]
		p.h.Ops = append(p.h.Ops, h.Ops[i])
		p.index = append(p.index, i)
	}
	return parts
}

// checkItems checks each item of h on its own, in parallel, and adds the
// reports up.
func checkItems(h *history.History, opts Options) Report {
	parts := split(h)
	reps := make([]Report, len(parts))
	// A panic in an item's check is raised again in the caller's
	// goroutine, where the command line's recover makes it an internal
	// error (exit 70), not Go's exit 2.
	panics := make([]error, len(parts))
	var wg sync.WaitGroup
	for i := range parts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer safego.Recover(func(err error) { panics[i] = err })
			reps[i] = checkOne(&parts[i].h, opts)
			parts[i].remap(&reps[i])
		}()
	}
	wg.Wait()
	for _, p := range panics {
		if p != nil {
			panic(p)
		}
	}
	r := merge(h, parts, reps, opts)
	checkCarts(h, &r)
	return r
}

// remap turns the part's operation indexes in r into the whole history's.
func (p *part) remap(r *Report) {
	fix := func(ref *OpRef) {
		if ref != nil {
			ref.Index = p.index[ref.Index]
		}
	}
	fix(r.Data.FirstMismatch)
	for i := range r.Lock.Pairs {
		fix(&r.Lock.Pairs[i].A)
		fix(&r.Lock.Pairs[i].B)
	}
	if b := r.Lock.FirstBroken; b != nil {
		fix(&b.A)
		fix(&b.B)
	}
	if c := r.Lock.FirstClash; c != nil {
		fix(&c.A)
		fix(&c.B)
	}
	if o := r.Lock.FirstOvertake; o != nil {
		fix(&o.Ahead)
		fix(&o.Behind)
	}
	fix(r.Liveness.FirstRefused)
	if r.Liveness.Fenced > 0 {
		r.Liveness.firstFenced.op = p.index[r.Liveness.firstFenced.op]
	}
}

// Worse returns the worse of two statuses (a when they are as bad): a
// violation over an unknown or inconclusive check, over a pass, over a
// check that does not apply.
func Worse(a, b Status) Status {
	rank := map[Status]int{"": 0, NotApplicable: 1, OK: 2, Inconclusive: 3, Unknown: 3, Illegal: 4, Violated: 4}
	if rank[b] > rank[a] {
		return b
	}
	return a
}

// merge adds the items' reports up: counts are summed, a status is the
// worst of the items', a first is the earliest, and every reason and note
// names the items it comes from.
func merge(h *history.History, parts []part, reps []Report, opts Options) Report {
	var r Report
	d, l, v := &r.Data, &r.Lock, &r.Liveness
	d.Status, d.Linearizability.Status, l.Status, v.Status = NotApplicable, NotApplicable, NotApplicable, NotApplicable
	r.Pass = true
	for _, p := range reps {
		pd, pl, pv := &p.Data, &p.Lock, &p.Liveness
		d.Status = Worse(d.Status, pd.Status)
		d.Linearizability.Status = Worse(d.Linearizability.Status, pd.Linearizability.Status)
		d.Ops += pd.Ops
		d.Segments += pd.Segments
		d.Elapsed = max(d.Elapsed, pd.Elapsed)
		if w := pd.FirstIllegal; w != nil && (d.FirstIllegal == nil || w.From < d.FirstIllegal.From) {
			d.FirstIllegal = w
		}
		d.Sold += pd.Sold
		d.Orders += pd.Orders
		d.Oversold += pd.Oversold
		d.LostOrders += pd.LostOrders
		d.Unordered += pd.Unordered
		if room := MaxNamed - len(d.UnorderedBuyers); room > 0 {
			d.UnorderedBuyers = append(d.UnorderedBuyers, pd.UnorderedBuyers[:min(room, len(pd.UnorderedBuyers))]...)
		}
		d.DuplicateOrders += pd.DuplicateOrders
		d.DuplicateSales += pd.DuplicateSales
		if pd.Mismatched > 0 && (d.FirstMismatch == nil || pd.FirstMismatch.From < d.FirstMismatch.From) {
			d.FirstMismatch = pd.FirstMismatch
		}
		d.Mismatched += pd.Mismatched
		d.NegativeStock = d.NegativeStock || pd.NegativeStock
		d.FinalStock += pd.FinalStock
		d.FinalUnknown = d.FinalUnknown || pd.FinalUnknown
		d.Indeterminate += pd.Indeterminate

		l.Status = Worse(l.Status, pl.Status)
		l.Fencing = pl.Fencing
		l.Overlaps += pl.Overlaps
		for _, o := range pl.Pairs {
			if len(l.Pairs) < opts.withDefaults().MaxPairs {
				l.Pairs = append(l.Pairs, o)
			}
		}
		l.Lost += pl.Lost
		for c, n := range pl.Causes {
			if l.Causes == nil {
				l.Causes = make(map[Cause]int)
			}
			l.Causes[c] += n
		}
		if pl.Broken > 0 && (l.FirstBroken == nil || pl.FirstBroken.B.From < l.FirstBroken.B.From) {
			l.FirstBroken = pl.FirstBroken
		}
		l.Broken += pl.Broken
		if pl.TokenClashes > 0 && (l.FirstClash == nil || pl.FirstClash.B.From < l.FirstClash.B.From) {
			l.FirstClash = pl.FirstClash
		}
		l.TokenClashes += pl.TokenClashes
		l.FIFO = pl.FIFO
		if pl.Overtakes > 0 && (l.FirstOvertake == nil || pl.FirstOvertake.Behind.To < l.FirstOvertake.Behind.To) {
			l.FirstOvertake = pl.FirstOvertake
		}
		l.Overtakes += pl.Overtakes

		v.Status = Worse(v.Status, pv.Status)
		v.Unsold += pv.Unsold
		v.GaveUp += pv.GaveUp
		v.Unanswered += pv.Unanswered
		if pv.Refused > 0 && (v.FirstRefused == nil || pv.FirstRefused.From < v.FirstRefused.From) {
			v.FirstRefused = pv.FirstRefused
		}
		v.Refused += pv.Refused
		v.Unfenced += pv.Unfenced
		if pv.Fenced > 0 && v.Fenced == 0 {
			v.firstFenced = pv.firstFenced
		}
		v.Fenced += pv.Fenced
		v.SentAway += pv.SentAway
		r.Pass = r.Pass && p.Pass
	}
	v.CutShort, v.CutBy = h.Header.CutShort, h.Header.CutBy
	// Reasons and notes, each naming its items; the same sentence for
	// several items is said once.
	r.Reasons = byItem(parts, reps, func(p *Report) []string { return p.Reasons })
	r.Notes = byItem(parts, reps, func(p *Report) []string { return p.Notes })
	r.Unjudged = byItem(parts, reps, func(p *Report) []string { return p.Unjudged })
	r.Saturation = reps[0].Saturation   // the run's, the same for every item
	r.Interrupted = reps[0].Interrupted // the run's cut, the same for every item
	r.settle()
	return r
}

// byItem gathers the sentences of every item's report, in the order they
// first appear, each led by the items that said it.
func byItem(parts []part, reps []Report, of func(*Report) []string) []string {
	var order []string
	items := make(map[string][]string)
	for i := range reps {
		for _, s := range of(&reps[i]) {
			if _, ok := items[s]; !ok {
				order = append(order, s)
			}
			items[s] = append(items[s], strconv.Itoa(parts[i].item))
		}
	}
	var out []string
	for _, s := range order {
		names := items[s]
		lead := words.Plural(int64(len(names)), "item ", "items ") + strings.Join(names, ", ")
		if len(names) == len(parts) && len(parts) > 1 {
			lead = "every item"
		}
		out = append(out, lead+": "+s)
	}
	return out
}

// checkCarts holds a sale of carts to all or none: a cart (the operations
// of one buyer's attempt, one per item) that sold some of its items and
// not others, or that was refused while none of its items was sold out or
// already ordered, is broken. A cart with an item of unknown outcome, or
// cut short, proves nothing either way.
func checkCarts(h *history.History, r *Report) {
	if h.Header.Cart < 2 {
		return
	}
	type key struct {
		client  int32
		attempt int16
	}
	carts := make(map[key][]int)
	for i := range h.Ops {
		k := key{h.Ops[i].Client, h.Ops[i].Attempt}
		carts[k] = append(carts[k], i)
	}
	var broken []int
	for _, ops := range carts {
		if len(ops) < 2 {
			continue
		}
		var sold, refused, cause int
		open := false
		for _, i := range ops {
			switch h.Ops[i].Outcome {
			case history.Sold:
				sold++
			case history.CartRefused:
				refused++
			case history.SoldOut, history.Duplicate:
				cause++
			case history.Unknown, history.Pending, history.Crashed:
				open = true
			}
		}
		if open {
			continue
		}
		if sold > 0 && sold < len(ops) || refused > 0 && cause == 0 {
			broken = append(broken, slices.Min(ops))
		}
	}
	if len(broken) == 0 {
		return
	}
	slices.Sort(broken)
	d := &r.Data
	d.BrokenCarts = len(broken)
	d.Status = Violated
	r.Pass = false
	op := &h.Ops[broken[0]]
	r.Reasons = append(r.Reasons, fmt.Sprintf("%s not all or none (first: buyer %d attempt %d)",
		words.Plural(int64(len(broken)), "1 cart was", words.Commas(int64(len(broken)))+" carts were"), op.Client, op.Attempt))
}
