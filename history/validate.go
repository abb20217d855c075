package history

import "fmt"

// Validate checks that every operation of h could have happened: no
// negative instant, each call answered no earlier than it was made, no
// step before the buyer arrived or after it was answered, and an answer
// exactly when the outcome is not pending (a crashed buyer may have died
// either side of its answer), no instant beyond MaxDuration; and that the
// header's clock error is not negative. It returns ErrFormat naming the
// first operation that could not; Read calls it, so a history that fails
// it is never judged.
//
// An operation's steps are all on its node's clock, so their order is
// exact whatever the clock error; its arrival is the coordinator's
// schedule, so with a clock error ε (Header.ClockError) a step may seem
// up to ε earlier than the arrival.
func Validate(h *History) error { return validate(h, 0) }

// validate is Validate, the operations before from known to be valid
// (Read's workers check each as they decode it).
func validate(h *History, from int) error {
	if h.Header.ClockError < 0 {
		return fmt.Errorf("%w: clock_error_ns is negative (%d)", ErrFormat, h.Header.ClockError)
	}
	for i := from; i < len(h.Ops); i++ {
		if err := validItem(&h.Ops[i], h.Header.ItemCount(), h.Header.ClockError); err != nil {
			op := &h.Ops[i]
			return fmt.Errorf("%w: operation %d (client %d, attempt %d): %v", ErrFormat, i+1, op.Client, op.Attempt, err)
		}
	}
	for i, f := range h.Faults {
		if f.Start < 0 || f.Start > MaxDuration || f.End > MaxDuration || (f.End != 0 && f.End < f.Start) {
			return fmt.Errorf("%w: fault %d (%s): window [%d, %d] is not a span of the run", ErrFormat, i+1, f.Name, f.Start, f.End)
		}
	}
	return nil
}

// validItem checks one operation of a sale of items items, whose clock
// error is eps.
func validItem(op *Op, items int, eps int64) error {
	if op.Item < 0 || int(op.Item) >= items {
		return fmt.Errorf("item %d of a sale of %d", op.Item, items)
	}
	return validOp(op, eps)
}

// instant is one named instant of an operation.
type instant struct {
	name string
	at   int64
}

// validOp checks one operation of a history whose clock error is eps.
func validOp(op *Op, eps int64) error {
	all := []instant{
		{"arrival", op.Arrival}, {"start", op.Start},
		{"acquire_call", op.AcquireCall}, {"acquired", op.Acquired},
		{"read_call", op.ReadCall}, {"read_return", op.ReadReturn},
		{"write_call", op.WriteCall}, {"write_return", op.WriteReturn},
		{"release_call", op.ReleaseCall}, {"released", op.Released},
		{"end", op.End}, {"crash", op.Crash},
	}
	for _, in := range all {
		if in.at < 0 {
			return fmt.Errorf("%s is negative (%d)", in.name, in.at)
		}
		if in.at > MaxDuration {
			return fmt.Errorf("%s %d is beyond any run (%d ns at most)", in.name, in.at, MaxDuration)
		}
	}
	// Each call is answered no earlier than it was made.
	pairs := [][2]instant{
		{all[2], all[3]}, {all[4], all[5]}, {all[6], all[7]}, {all[8], all[9]},
	}
	for _, p := range pairs {
		if p[0].at > 0 && p[1].at > 0 && p[1].at < p[0].at {
			return fmt.Errorf("%s %d is before %s %d", p[1].name, p[1].at, p[0].name, p[0].at)
		}
	}
	// Nothing happens before the buyer arrived (give or take the clock
	// error), nor after it was answered (a crash aside, which the buyer is
	// answered with).
	for _, in := range all[1:] {
		if in.at > 0 && in.at < op.Arrival-eps {
			if eps > 0 {
				return fmt.Errorf("%s %d is before arrival %d by more than the clock error %d", in.name, in.at, op.Arrival, eps)
			}
			return fmt.Errorf("%s %d is before arrival %d", in.name, in.at, op.Arrival)
		}
		if in.name != "crash" && in.at > 0 && op.End > 0 && in.at > op.End {
			return fmt.Errorf("%s %d is after end %d, when the buyer was answered", in.name, in.at, op.End)
		}
	}
	// The lease: never negative; the winning try sent within the
	// acquisition; each renewal answered no earlier than sent, after the
	// lock was taken (a renewal loop starts inside the acquisition, so
	// its first renewal may come before Acquired is stamped).
	if op.Lease < 0 || op.ServerLease < 0 {
		return fmt.Errorf("lease_ns %d or server_lease_ns %d is negative", op.Lease, op.ServerLease)
	}
	if op.GrantCall != 0 && (op.GrantCall < op.AcquireCall || op.Acquired > 0 && op.GrantCall > op.Acquired) {
		return fmt.Errorf("grant_call %d is outside the acquisition [%d, %d]", op.GrantCall, op.AcquireCall, op.Acquired)
	}
	for k, rn := range op.Renewals {
		if rn.Call <= 0 || rn.Return < 0 || rn.Return > 0 && rn.Return < rn.Call || op.AcquireCall == 0 || rn.Call < op.AcquireCall {
			return fmt.Errorf("renewal %d [%d, %d] is not a step after acquire_call %d", k+1, rn.Call, rn.Return, op.AcquireCall)
		}
	}
	// A crashed client may die before or after it is answered.
	if op.Outcome != Crashed && (op.End == 0) != (op.Outcome == Pending) {
		return fmt.Errorf("outcome %s with end %d: an answered attempt has an end, a pending one none", op.Outcome, op.End)
	}
	return nil
}
