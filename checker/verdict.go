package checker

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/internal/words"
)

// judge sets the verdict and says why in plain sentences.
func (r *Report) judge(h *history.History, opts Options) {
	d := &r.Data
	switch d.Linearizability.Status {
	case Illegal:
		w := d.Linearizability.FirstIllegal
		from, to := span(w.From, w.To)
		r.fail("inventory history not linearizable (first violation between %s and %s)", from, to)
	case Unknown:
		r.fail("linearizability unknown: check timed out after %v", opts.Timeout)
	case NotApplicable:
		if h.Header.Unread {
			r.Notes = append(r.Notes, "the service did not say which stock its purchases read: linearizability not checked, the audits of the answers and the final state judge the data")
		}
	}
	if d.Oversold > 0 {
		// The terms that make the number: orders beyond the units the
		// counter lost (lost updates), or beyond the stock itself.
		stock, final := h.Header.Stock, h.Final.Stock
		switch {
		case d.FinalUnknown || d.Oversold == d.Sold-stock && d.Sold > d.Orders:
			// Sales confirmed beyond the stock, the store's orders unread
			// or fewer than they.
			r.fail("oversold %s: %s confirmed of a stock of %s", words.Count(d.Oversold, "unit"), words.Count(d.Sold, "sale"), words.Commas(stock))
		case final > 0:
			r.fail("oversold %s: %s, but the stock fell only from %s to %s (%s)",
				words.Count(d.Oversold, "unit"), words.Count(d.Orders, "order"), words.Commas(stock), words.Commas(final), words.Count(stock-final, "unit"))
		case final == 0:
			r.fail("oversold %s: %s of a stock of %s", words.Count(d.Oversold, "unit"), words.Count(d.Orders, "order"), words.Commas(stock))
		default:
			r.fail("oversold %s: %s of a stock of %s (the counter ended at %s)",
				words.Count(d.Oversold, "unit"), words.Count(d.Orders, "order"), words.Commas(stock), words.Commas(final))
		}
	}
	if d.LostOrders > 0 {
		r.fail("lost %s acknowledged %s (%s sold, %s in the store)",
			words.Commas(d.LostOrders), words.Plural(d.LostOrders, "order"), words.Commas(d.Sold), words.Commas(d.Orders))
	}
	if d.Unordered > 0 {
		r.fail("%s told \"sold\" %s no order in the store (%s%s)",
			words.Count(d.Unordered, "buyer"), words.Plural(d.Unordered, "has", "have"), words.Plural(d.Unordered, "buyer", "buyers"), namedBuyers(d.UnorderedBuyers, d.Unordered))
	}
	if d.DuplicateOrders > 0 {
		users := int64(len(h.Final.DuplicateUsers))
		switch {
		case users == 0:
			r.fail("%s duplicate %s: a user got more than one", words.Commas(d.DuplicateOrders), words.Plural(d.DuplicateOrders, "order"))
		case users == d.DuplicateOrders:
			r.fail("%s %s two orders", words.Commas(users), words.Plural(users, "user got", "users got"))
		default:
			r.fail("%s %s more than one order (%s extra)", words.Commas(users), words.Plural(users, "user got", "users got"), words.Commas(d.DuplicateOrders))
		}
	}
	if d.DuplicateSales > 0 {
		r.fail("%s %s sold more than once in the history while the store shows one order (a duplicate, or a lost order)",
			words.Commas(d.DuplicateSales), words.Plural(d.DuplicateSales, "user"))
	}
	if d.Mismatched > 0 {
		m := d.FirstMismatch
		op := &h.Ops[m.Index]
		told := "sold out"
		if op.Write == history.Applied {
			told = "sold a unit"
		}
		r.fail("%s the stock read (first: buyer %d attempt %d read %s and was %s, at %s)",
			words.Plural(d.Mismatched, "1 answer contradicts", words.Commas(d.Mismatched)+" answers contradict"), m.Client, m.Attempt,
			words.Commas(op.Stock), told, seconds(m.From, 3))
	}
	if d.Status == Unknown && h.Final.Unknown && !anyAnswered(h) {
		r.fail("nothing observed: no buyer got an answer, and the final state could not be read")
	}
	if d.Status == Unknown && h.Final.Unknown && d.Linearizability.Status == NotApplicable && anyAnswered(h) {
		r.fail("data safety unknown: the service did not say which stock its purchases read, and its final state could not be read")
	}
	if d.FinalUnknown {
		r.Notes = append(r.Notes, "the store's final state could not be read: orders and stock not audited, the history checked alone")
	}
	if d.NegativeStock {
		r.fail("stock went negative (final stock %s)", words.Commas(d.FinalStock))
	}
	if r.Lock.Overlaps > 0 {
		n := int64(r.Lock.Overlaps)
		msg := fmt.Sprintf("mutual exclusion broken: %s overlapping critical %s (%s)", words.Commas(n), words.Plural(n, "section"), causes(&r.Lock))
		if b := r.Lock.FirstBroken; b != nil {
			r.fail("%s", broken(&r.Lock, b))
		}
		switch {
		case r.Lock.Fencing && r.Lock.Broken > 0:
			// The lock broke a promise: the reason above fails it.
			r.Notes = append(r.Notes, msg)
		case r.Lock.Fencing:
			// Fencing, not the lock, keeps the data safe here: the data
			// checks above decide, and the overlap is worth knowing.
			r.Notes = append(r.Notes, msg+" (the store's fencing decides data safety)")
		default:
			r.Reasons = append(r.Reasons, msg)
		}
	}
	if n := int64(r.Lock.Lost); n > 0 {
		msg := fmt.Sprintf("%s %s found the lock gone: %s no mutual exclusion for part of %s critical section",
			words.Commas(n), words.Plural(n, "release", "releases"), words.Plural(n, "that holder had", "those holders had"), words.Plural(n, "its", "their"))
		if r.Lock.Overlaps == 0 {
			msg += ", though no other holder was seen inside it"
		}
		r.Notes = append(r.Notes, msg)
	}
	if r.Lock.Status != NotApplicable && r.Lock.Overtakes == 0 && waited(h) {
		r.Notes = append(r.Notes, fmt.Sprintf("fairness: no overtakes: every buyer got the lock in the order it asked for it (asks closer than %v apart aside)", fairnessMargin(h)))
	}
	if c := r.Lock.FirstClash; c != nil {
		same := "the same token"
		if c.TokenA != c.TokenB {
			same = "a lower token than one granted before it was asked for"
		}
		r.fail("fencing tokens broken: %s %s (first: buyer %d attempt %d got token %d at %s, buyer %d attempt %d token %d at %s)",
			words.Commas(int64(r.Lock.TokenClashes)), words.Plural(int64(r.Lock.TokenClashes), "holder got "+same, "holders got "+same),
			c.B.Client, c.B.Attempt, c.TokenB, seconds(c.B.From, 3), c.A.Client, c.A.Attempt, c.TokenA, seconds(c.A.From, 3))
	}
	if r.Lock.FIFO && r.Lock.Overtakes > 0 {
		o := r.Lock.FirstOvertake
		r.fail("first-come order broken: %s beyond the %v the clocks and the harness's lease slack explain (first: buyer %d asked at %s and got the lock at %s, while buyer %d, asking at %s, waited until %s)",
			words.Count(r.Lock.Overtakes, "overtake"), fairnessMargin(h)+time.Duration(slackOf(h)), o.Behind.Client, seconds(o.Behind.From, 3), seconds(o.Behind.To, 3), o.Ahead.Client, seconds(o.Ahead.From, 3), seconds(o.Ahead.To, 3))
	} else if r.Lock.Status != NotApplicable && r.Lock.Overtakes > 0 {
		o := r.Lock.FirstOvertake
		r.Notes = append(r.Notes, fmt.Sprintf("fairness: %s (a buyer who asked for the lock later got it before one who asked %v or more earlier; first: buyer %d asked at %s and got it at %s, while buyer %d, asking at %s, waited until %s)",
			words.Count(r.Lock.Overtakes, "overtake"), fairnessMargin(h), o.Behind.Client, seconds(o.Behind.From, 3), seconds(o.Behind.To, 3), o.Ahead.Client, seconds(o.Ahead.From, 3), seconds(o.Ahead.To, 3)))
	}
	l := &r.Liveness
	if l.Unfenced > 0 {
		f := l.FirstRefused
		r.fail("liveness: %s %s refused by the store although the lock is declared unfenced (first: buyer %d attempt %d, token %d, at %s)",
			words.Commas(int64(l.Unfenced)), words.Plural(int64(l.Unfenced), "write"), f.Client, f.Attempt, h.Ops[f.Index].Token, seconds(f.To, 3))
	}
	if l.Refused > l.Unfenced {
		f := l.FirstRefused
		r.fail("liveness: %s %s refused with no newer fencing token taken before (first: buyer %d attempt %d, token %d, at %s)",
			words.Commas(int64(l.Refused)), words.Plural(int64(l.Refused), "write"), f.Client, f.Attempt, h.Ops[f.Index].Token, seconds(f.To, 3))
	}
	if n := int64(l.Fenced); n > 0 {
		f := l.firstFenced
		op := &h.Ops[f.op]
		r.Notes = append(r.Notes, fmt.Sprintf("%s stale %s refused by the store's fencing (first: buyer %d attempt %d's token %d at %s, after token %d was taken at %s)",
			words.Commas(n), words.Plural(n, "write was", "writes were"), op.Client, op.Attempt, op.Token,
			seconds(op.WriteReturn, 3), f.token, seconds(f.at, 3)))
	}
	r.Saturation = saturation(h)
	mark := len(r.Reasons) // the liveness findings a saturated harness may explain start here
	if l.Unsold > 0 && l.Status != Unknown {
		away := int64(l.SentAway)
		if l.SentAway == l.GaveUp {
			r.fail("liveness: %s %s unsold while %s %s gave up",
				words.Commas(l.Unsold), words.Plural(l.Unsold, "unit"), words.Commas(away), words.Plural(away, "buyer"))
		} else {
			r.fail("liveness: %s %s unsold while %s %s sent away (%s gave up, %s refused or told sold out)",
				words.Commas(l.Unsold), words.Plural(l.Unsold, "unit"), words.Commas(away), words.Plural(away, "buyer was", "buyers were"),
				words.Commas(int64(l.GaveUp)), words.Commas(away-int64(l.GaveUp)))
		}
	}
	if n := int64(l.Unanswered); n > 0 && !anyAnswered(h) && !h.Final.Unknown {
		// Not giving up, and not service either: a sale of which no
		// buyer learnt anything proves nothing of its liveness.
		r.fail("nothing observed: no buyer got an answer (%s without one)", words.Count(n, "request failed", "requests failed"))
		l.Status = Unknown
	}
	if n := int64(l.Unanswered); n > 0 {
		r.Notes = append(r.Notes, fmt.Sprintf("liveness: %s %s without an answer (an unknown outcome: a timeout, a 5xx, a reset connection), not counted as giving up",
			words.Count(n, "buyer's request", "buyers' requests"), words.Plural(n, "failed", "failed")))
	}
	switch {
	case l.CutBy == history.CutServerLost:
		r.Interrupted = true
		r.Notes = append(r.Notes, "the server stopped answering during the sale: the run was cut short, liveness not judged")
	case l.CutBy == history.CutInterrupt:
		r.Interrupted = true
		r.Notes = append(r.Notes, "interrupted before every buyer was done: liveness not judged")
	case l.CutBy == history.CutTimeout:
		r.fail("run cut short by --timeout after %s with buyers still waiting", time.Duration(h.Header.Duration).Round(time.Millisecond))
	case l.CutShort:
		r.fail("run cut short by --timeout or interrupt")
	}
	stuckFor := ""
	if len(r.Saturation) > 0 && l.Status == Violated {
		stuckFor = stuck(h)
		if stuckFor != "" {
			r.Notes = append(r.Notes, "liveness judged although the harness was saturated: "+stuckFor)
		}
	}
	if len(r.Saturation) > 0 && l.Status == Violated && l.Refused == 0 && len(r.Reasons) > mark && stuckFor == "" {
		// The buyers may have waited for a CPU, not for the lock: what
		// liveness found is set aside, neither a pass nor a failure.
		l.Status = Inconclusive
		r.Unjudged = append(r.Unjudged, r.Reasons[mark:]...)
		r.Reasons = r.Reasons[:mark]
	}
	if n := int64(d.Indeterminate); n > 0 && d.Linearizability.Status == OK {
		r.Notes = append(r.Notes, fmt.Sprintf("%s %s had an unknown outcome; the check let each land at any later time or never",
			words.Commas(n), words.Plural(n, "write")))
	}
	lockOK := r.Lock.Holds()
	r.Pass = d.Status == OK && r.Liveness.Status == OK && lockOK
	r.settle()
}

// causeWords say each cause in a sentence.
var causeWords = map[Cause]string{
	CauseLiveLease: "granted during a live lease",
	CauseRanOut:    "after the lease ran out while its holder ran",
	CausePaused:    "after the lease ran out during a pause or stall",
	CauseFault:     "after a fault removed the lock",
	CauseUnknown:   "with no lease recorded to judge by",
}

// causeOrder is the order the causes are said in: the broken promises
// first.
var causeOrder = []Cause{CauseLiveLease, CauseRanOut, CausePaused, CauseFault, CauseUnknown}

// causes says how many overlaps each cause explains, the faults named.
func causes(l *Lock) string {
	var parts []string
	for _, c := range causeOrder {
		n := int64(l.Causes[c])
		if n == 0 {
			continue
		}
		s := words.Commas(n) + " " + causeWords[c]
		if c == CauseFault {
			var names []string
			for _, p := range l.Pairs {
				if p.Fault != "" && !slices.Contains(names, p.Fault) {
					names = append(names, p.Fault)
				}
			}
			if len(names) > 0 {
				s += " (" + strings.Join(names, ", ") + ")"
			}
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, "; ")
}

// broken says the overlaps that break the lock's promise, whatever the
// fencing, naming the first.
func broken(l *Lock, o *Overlap) string {
	n := int64(l.Broken)
	what := "granted while the holder's lease was live on the server"
	if o.Cause == CauseRanOut {
		what = "the lease ran out while its holder ran, though the lock promises to renew it"
	}
	return fmt.Sprintf("lock broken: %s %s, whatever the fencing (first: buyer %d attempt %d got the lock at %s while buyer %d attempt %d held it since %s: %s)",
		words.Commas(n), words.Plural(n, "overlap", "overlaps"), o.B.Client, o.B.Attempt, seconds(o.B.From, 3), o.A.Client, o.A.Attempt, seconds(o.A.From, 3), what)
}

// settle sets Inconclusive: nothing failed, but liveness was not judged
// because the harness was saturated.
func (r *Report) settle() {
	r.Inconclusive = !r.Pass && len(r.Reasons) == 0 && len(r.Unjudged) > 0
}

// fail adds a reason.
func (r *Report) fail(format string, args ...any) {
	r.Reasons = append(r.Reasons, fmt.Sprintf(format, args...))
}

// span writes two instants of the run as seconds, to the millisecond
// unless that would make them look the same.
func span(from, to int64) (string, string) {
	digits := 3
	for digits < 9 && seconds(from, digits) == seconds(to, digits) {
		digits += 3
	}
	return seconds(from, digits), seconds(to, digits)
}

// seconds writes ns as seconds with the given number of decimals.
func seconds(ns int64, digits int) string {
	return strconv.FormatFloat(float64(ns)/1e9, 'f', digits, 64) + "s"
}

// namedBuyers lists the buyers a finding names, " 319, 334, 511", and
// says how many more there are when it names only the first.
func namedBuyers(named []int32, n int64) string {
	var b strings.Builder
	for i, c := range named {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, " %d", c)
	}
	if rest := n - int64(len(named)); rest > 0 {
		fmt.Fprintf(&b, " and %s more", words.Commas(rest))
	}
	return b.String()
}
