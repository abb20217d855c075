package history

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"time"
)

// Bounds on what a history may declare. Each is far above what a run
// records (the command line refuses more), and low enough that nothing
// computed from a value within them overflows or allocates without bound.
const (
	// MaxDuration bounds every instant and duration of a history, in
	// nanoseconds: 30 days.
	MaxDuration = int64(30 * 24 * time.Hour)
	// MaxItems is the most items a sale can have (--items).
	MaxItems = 1000
	// MaxAttempts is the most attempts a buyer can make (--attempts).
	MaxAttempts = 1000
	// MaxNodes is the most nodes a run can have: an Op's Node is an int16.
	MaxNodes = math.MaxInt16 + 1
	// MaxCount bounds the stock, the orders and the commands counted:
	// 2^53, every one exact as a float64.
	MaxCount = int64(1) << 53
)

// ErrClockError reports a history whose header claims a clock error
// larger than its run measured, and than the reader allows.
var ErrClockError = errors.New("history: clock error not measured")

// bound is one value and the range it must be in.
type bound struct {
	name   string
	v      int64
	lo, hi int64
}

// firstOut returns an error naming the first value of bs out of its
// range.
func firstOut(what string, bs ...bound) error {
	for _, b := range bs {
		if b.v < b.lo || b.v > b.hi {
			return fmt.Errorf("%w: %s: %s %d is out of bounds [%d, %d]", ErrFormat, what, b.name, b.v, b.lo, b.hi)
		}
	}
	return nil
}

// CheckHeader checks that every number of a header is within its bounds:
// the workload's size (buyers, attempts, items, nodes), every duration,
// the counts. Read calls it before it reads the operations, so that no
// value of a header can make reading or judging the history loop, panic
// or allocate without bound.
func CheckHeader(hd *Header) error {
	err := firstOut("header",
		bound{"clients", int64(hd.Clients), 0, math.MaxInt32},
		bound{"nodes", int64(hd.Nodes), 0, MaxNodes},
		bound{"attempts", int64(hd.Attempts), 0, MaxAttempts},
		bound{"items", int64(hd.Items), 0, MaxItems},
		bound{"cart", int64(hd.Cart), 0, int64(hd.ItemCount())},
		bound{"reads", int64(hd.Reads), 0, 100},
		bound{"stock", hd.Stock, 0, MaxCount},
		bound{"commands", hd.Commands, 0, MaxCount},
		bound{"duration", hd.Duration, 0, MaxDuration},
		bound{"lease_ns", hd.Lease, 0, MaxDuration},
		bound{"clock_error_ns", hd.ClockError, 0, MaxDuration},
		bound{"clock_measured_ns", hd.ClockMeasured, 0, MaxDuration},
	)
	if err != nil {
		return err
	}
	if hd.Rate < 0 || math.IsInf(hd.Rate, 0) || math.IsNaN(hd.Rate) {
		return fmt.Errorf("%w: header: rate %v is not a rate", ErrFormat, hd.Rate)
	}
	if hd.Health != nil {
		return checkHealth(hd.Health, 0)
	}
	return nil
}

// checkHealth checks the spans of a health and its nodes'.
func checkHealth(hl *Health, depth int) error {
	if depth > 1 {
		return fmt.Errorf("%w: header: health: a node's health lists nodes of its own", ErrFormat)
	}
	for _, s := range hl.Starved {
		if err := firstOut("header: health: starved span", bound{"from", s.From, 0, MaxDuration}, bound{"to", s.To, s.From, MaxDuration}); err != nil {
			return err
		}
	}
	for i := range hl.Nodes {
		if err := checkHealth(&hl.Nodes[i], depth+1); err != nil {
			return err
		}
	}
	return nil
}

// checkFinal checks the counts of a final state and its items'.
func checkFinal(f *Final, items int) error {
	if len(f.Items) > items {
		return fmt.Errorf("%w: final: %d items' states for a sale of %d", ErrFormat, len(f.Items), items)
	}
	err := firstOut("final",
		bound{"stock", f.Stock, -MaxCount, MaxCount},
		bound{"orders", f.Orders, 0, MaxCount},
		bound{"duplicate_orders", f.DuplicateOrders, 0, MaxCount},
	)
	if err != nil {
		return err
	}
	for i := range f.Items {
		if len(f.Items[i].Items) > 0 {
			return fmt.Errorf("%w: final: item %d lists items of its own", ErrFormat, i)
		}
		if err := checkFinal(&f.Items[i], 0); err != nil {
			return err
		}
	}
	return nil
}

// CheckCoverage checks that the records of h cover exactly the buyers and
// attempts its header declares: every buyer has a record of its first
// attempt, a buyer's attempts are counted from zero without a gap and
// within Header.Attempts, no (buyer, attempt, item) is recorded twice,
// and each record names a node and an item of the run. A record deleted,
// or one copied (a second sold-out line), is refused as ErrFormat naming
// the buyer. Read calls it.
func CheckCoverage(h *History) error {
	hd := &h.Header
	if hd.Clients > len(h.Ops) {
		return fmt.Errorf("%w: the header declares %d buyers, the file holds %d operations: each buyer has at least one", ErrFormat, hd.Clients, len(h.Ops))
	}
	nodes, items := int64(max(1, hd.Nodes)), int64(hd.ItemCount())
	for i := range h.Ops {
		op := &h.Ops[i]
		if int(op.Client) >= hd.Clients || int(op.Attempt) >= hd.Attempts || int64(op.Node) >= nodes || int64(op.Item) >= items ||
			op.Client < 0 || op.Attempt < 0 || op.Node < 0 || op.Item < 0 {
			// Named here only, off the path of every record.
			return firstOut(fmt.Sprintf("operation %d", i+1),
				bound{"client", int64(op.Client), 0, int64(hd.Clients) - 1},
				bound{"attempt", int64(op.Attempt), 0, int64(hd.Attempts) - 1},
				bound{"node", int64(op.Node), 0, nodes - 1},
				bound{"item", int64(op.Item), 0, items - 1},
			)
		}
	}
	if hd.Attempts <= 1 && items == 1 {
		return coverOnce(h)
	}
	return coverAll(h)
}

// coverOnce checks the common case: one record per buyer.
func coverOnce(h *History) error {
	seen := make([]uint64, (h.Header.Clients+63)/64)
	for i := range h.Ops {
		c := h.Ops[i].Client
		w, bit := c/64, uint64(1)<<(c%64)
		if seen[w]&bit != 0 {
			return fmt.Errorf("%w: operation %d: buyer %d's attempt 0 is recorded twice", ErrFormat, i+1, c)
		}
		seen[w] |= bit
	}
	// Every buyer within [0, Clients) once, and no fewer records than
	// buyers (CheckCoverage): none is missing.
	return nil
}

// missing is the error of a buyer without a record.
func missing(c int) error {
	return fmt.Errorf("%w: buyer %d has no record, although the header declares it", ErrFormat, c)
}

// coverAll checks any number of attempts and cart items per buyer.
func coverAll(h *History) error {
	// A record's key, in the order of the check: buyer, attempt, item.
	key := func(op *Op) uint64 {
		return uint64(op.Client)<<32 | uint64(op.Attempt)<<16 | uint64(op.Item)
	}
	keys := make([]uint64, len(h.Ops))
	for i := range h.Ops {
		keys[i] = key(&h.Ops[i])
	}
	slices.Sort(keys)
	cart := max(1, h.Header.Cart)
	prevC, prevA := -1, -1
	for i := 0; i < len(keys); {
		c, a := int(keys[i]>>32), int(keys[i]>>16&0xffff)
		switch {
		case c != prevC && c != prevC+1:
			return missing(prevC + 1)
		case c != prevC && a != 0:
			return fmt.Errorf("%w: buyer %d has no record of its first attempt", ErrFormat, c)
		case c == prevC && a != prevA+1:
			return fmt.Errorf("%w: buyer %d's attempt %d is recorded without its attempt %d", ErrFormat, c, a, prevA+1)
		}
		prevC, prevA = c, a
		// The records of one attempt: distinct items, no more than a cart.
		j := i + 1
		for j < len(keys) && keys[j]>>16 == keys[i]>>16 {
			if keys[j] == keys[j-1] {
				return fmt.Errorf("%w: buyer %d's attempt %d is recorded twice (item %d)", ErrFormat, c, a, keys[j]&0xffff)
			}
			j++
		}
		if j-i > cart {
			return fmt.Errorf("%w: buyer %d's attempt %d has %d records, more than a cart of %d", ErrFormat, c, a, j-i, cart)
		}
		i = j
	}
	if next := prevC + 1; next != h.Header.Clients {
		return missing(next)
	}
	return nil
}

// CheckClock checks the clock error a history read from a file claims:
// no larger than its run measured (Header.ClockMeasured) unless the
// reader allows as much, allowed being the clock error a user gave on the
// command line. A larger claim is ErrClockError: every interval would be
// widened by more than the run could justify, and a failing history could
// pass.
func CheckClock(h *History, allowed int64) error {
	eps := h.Header.ClockError
	if eps <= max(h.Header.ClockMeasured, allowed) {
		return nil
	}
	return fmt.Errorf("%w: the header's clock_error_ns %d is larger than its run measured (%d): give a clock error of at least %v to accept it",
		ErrClockError, eps, h.Header.ClockMeasured, time.Duration(eps))
}
