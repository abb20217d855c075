package checker

import (
	"fmt"
	"strconv"

	"github.com/lockbench/lockbench/history"
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
	}
	if d.Oversold > 0 {
		r.fail("oversold %s %s (orders %s, stock %s)",
			commas(d.Oversold), plural(d.Oversold, "unit"), commas(d.Orders), commas(h.Header.Stock))
	}
	if d.LostOrders > 0 {
		r.fail("lost %s acknowledged %s (%s sold, %s in the store)",
			commas(d.LostOrders), plural(d.LostOrders, "order"), commas(d.Sold), commas(d.Orders))
	}
	if d.DuplicateOrders > 0 {
		users := int64(len(h.Final.DuplicateUsers))
		switch {
		case users == 0:
			r.fail("%s duplicate %s: a user got more than one", commas(d.DuplicateOrders), plural(d.DuplicateOrders, "order"))
		case users == d.DuplicateOrders:
			r.fail("%s %s two orders", commas(users), plural(users, "user got", "users got"))
		default:
			r.fail("%s %s more than one order (%s extra)", commas(users), plural(users, "user got", "users got"), commas(d.DuplicateOrders))
		}
	}
	if d.DuplicateSales > 0 {
		r.fail("%s %s sold more than once in the history while the store shows one order (a duplicate, or a lost order)",
			commas(d.DuplicateSales), plural(d.DuplicateSales, "user"))
	}
	if d.NegativeStock {
		r.fail("stock went negative (final stock %s)", commas(d.FinalStock))
	}
	if r.Lock.Overlaps > 0 {
		n := int64(r.Lock.Overlaps)
		msg := fmt.Sprintf("mutual exclusion broken: %s overlapping critical %s", commas(n), plural(n, "section"))
		if h.Header.Fenced {
			// Fencing, not the lock, keeps the data safe here: the data
			// checks above decide, and the overlap is worth knowing.
			r.Notes = append(r.Notes, msg+" (the store's fencing decides data safety)")
		} else {
			r.Reasons = append(r.Reasons, msg)
		}
	}
	if r.Liveness.Unsold > 0 {
		r.fail("liveness: %s %s unsold while %s %s gave up",
			commas(r.Liveness.Unsold), plural(r.Liveness.Unsold, "unit"),
			commas(int64(r.Liveness.GaveUp)), plural(int64(r.Liveness.GaveUp), "buyer"))
	}
	if r.Liveness.CutShort {
		r.fail("run cut short by --timeout or interrupt")
	}
	if n := int64(d.Indeterminate); n > 0 && d.Linearizability.Status == OK {
		r.Notes = append(r.Notes, fmt.Sprintf("%s %s had an unknown outcome; the check let each land at any later time or never",
			commas(n), plural(n, "write")))
	}
	lockOK := r.Lock.Status == OK || r.Lock.Status == NotApplicable || h.Header.Fenced
	r.Pass = d.Status == OK && r.Liveness.Status == OK && lockOK
}

// fail adds a reason.
func (r *Report) fail(format string, args ...any) {
	r.Reasons = append(r.Reasons, fmt.Sprintf(format, args...))
}

// plural picks the singular form for one and the plural (given, or the
// singular with an s) otherwise.
func plural(n int64, forms ...string) string {
	switch {
	case n == 1:
		return forms[0]
	case len(forms) > 1:
		return forms[1]
	}
	return forms[0] + "s"
}

// commas writes n with thousands separators: 1,234,567.
func commas(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := s[0] == '-'
	if neg {
		s = s[1:]
	}
	out := make([]byte, 0, len(s)+len(s)/3+1)
	if neg {
		out = append(out, '-')
	}
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	return string(out)
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
