package checker

import (
	"testing"

	"github.com/lockbench/lockbench/history"
)

// healthy is the health of a harness that kept up: stalls of a
// millisecond, nothing starved.
func healthy() *history.Health {
	return &history.Health{Node: -1, CPUs: 2, CPUWait: 0.1, StallMax: ms, StallP99: ms / 2, SchedMax: ms / 2, SchedP99: ms / 10}
}

// leased is the fenced run of fenced(): a holder (client 0: try sent at
// 10.5 ms, lock at 11 ms, release at 42 ms) whose write at 40 ms the
// store refuses after client 1 took the lock at 21 ms; each acquisition
// granted lease ms, the lock promising p, the harness healthy.
func leased(lease int64, p history.Promises, faults ...history.Fault) *history.History {
	h := fenced(history.Refused, history.Rejected, 2)
	h.Header.Impl = "team-lock"
	h.Header.Lease = lease * ms
	p.Exclusion, p.Tokens = true, true
	h.Header.Promises = &p
	h.Header.Health = healthy()
	h.Faults = faults
	h.Ops[0].GrantCall = 10*ms + ms/2
	for i := range h.Ops {
		h.Ops[i].Lease = lease * ms
	}
	return h
}

// renewedTwice is leased(5, p): client 0's lease renewed at 12 and 14 ms,
// then no more, the holder running on until 42 ms.
func renewedTwice(p history.Promises) *history.History {
	h := leased(5, p)
	h.Ops[0].Renewals = []history.Renewal{{Call: 12 * ms, Return: 12*ms + ms/2, OK: true}, {Call: 14 * ms, Return: 14*ms + ms/2, OK: true}}
	return h
}

// spentTry is leased(5, p) with client 1's winning try sent at 1 ms and
// its lock taken at 12 ms (a pause inside its acquisition): its own lease
// had run out by 6 ms, before client 0 took the lock at 11 ms, while
// client 0's, granted at 10.5 ms, ran until 15.5 ms.
func spentTry(p history.Promises) *history.History {
	h := leased(5, p)
	b := &h.Ops[1]
	b.Arrival, b.Start, b.AcquireCall, b.GrantCall, b.Acquired = ms/2, ms/2+ms/10, ms/2+ms/5, ms, 12*ms
	return h
}

// tokened is a fenced run of two buyers one after the other, holding
// tokens a then b.
func tokened(a, b uint64) *history.History {
	first, second := sold(0, 10, 5), sold(1, 20, 4)
	first.Token, second.Token = a, b
	h := &history.History{Header: header("team-lock", 5, 2), Final: history.Final{Stock: 3, Orders: 2}, Ops: []history.Op{first, second}}
	h.Header.Fenced = true
	h.Header.Promises = &history.Promises{Exclusion: true, Tokens: true}
	return h
}

// queued is a run of a lock promising first-come order as fifo says:
// client 0 holds from 11 to 50 ms; client 1 asks at 15 ms and gets the
// lock at 81 ms; client 2 asks at 40 ms, 25 ms later, and gets it first,
// at 61 ms.
func queued(fifo bool) *history.History {
	a := attempt(0, 0, 10*ms, ms, 3, history.Applied, history.Sold)
	a.ReleaseCall, a.Released, a.End = 50*ms, 51*ms, 52*ms
	b := attempt(1, 0, 80*ms, ms, 1, history.Applied, history.Sold)
	b.Arrival, b.Start, b.AcquireCall = 15*ms, 15*ms, 15*ms
	c := attempt(2, 0, 60*ms, ms, 2, history.Applied, history.Sold)
	c.Arrival, c.Start, c.AcquireCall = 40*ms, 40*ms, 40*ms
	h := &history.History{Header: header("team-fair", 3, 3), Final: history.Final{Stock: 0, Orders: 3}, Ops: []history.Op{a, b, c}}
	h.Header.Promises = &history.Promises{Exclusion: true, FIFO: fifo}
	h.Header.Health = healthy()
	return h
}

// causeFixtures are the overlap causes' and the promises' histories in
// testdata/, by file name.
var causeFixtures = map[string]func() *history.History{
	// Client 1 took the lock at 21 ms while client 0's 20 ms lease,
	// granted by a try sent at 10.5 ms, ran until 30.5 ms: a broken lock,
	// fenced or not.
	"bad-cause-live-lease.jsonl": func() *history.History { return leased(20, history.Promises{}) },
	// The lease is 5 ms and a pause struck client 0's node from 14 ms to
	// 39 ms: the lease ran out during the pause, the store's fencing
	// keeps the data safe.
	"ok-cause-paused.jsonl": func() *history.History {
		return leased(5, history.Promises{}, history.Fault{Name: "pause-holder", Node: 0, Client: 0, Start: 14 * ms, End: 39 * ms})
	},
	// A lock that promises renewal renewed client 0's 5 ms lease twice,
	// then stopped while the holder ran on: it ran out at 19 ms with no
	// fault and no stall to explain it.
	"bad-cause-ran-out.jsonl": func() *history.History { return renewedTwice(history.Promises{Renewal: true}) },
	// The same history of a lock that promises no renewal: a slow holder
	// outran its lease, the design's limit, and fencing kept the data.
	"ok-cause-ran-out-no-renewal.jsonl": func() *history.History { return renewedTwice(history.Promises{}) },
	// A live 20 ms lease deleted by a fault at 15 ms: the fault is the
	// cause.
	"ok-cause-fault.jsonl": func() *history.History {
		return leased(20, history.Promises{}, history.Fault{Name: "delete-lock", Node: -1, Client: -1, Start: 15 * ms, End: 15 * ms})
	},
	// A lock that promises valid leases only (Redlock's validity) let
	// client 1 in on a try whose lease had run out, while client 0's was
	// live: a broken lock, whichever was granted first.
	"bad-cause-spent-validity.jsonl": func() *history.History { return spentTry(history.Promises{Validity: true}) },
	// The same history of a lock that promises nothing of the kind: client
	// 1 may have been granted first and paused in its acquisition.
	"ok-cause-spent-no-validity.jsonl": func() *history.History { return spentTry(history.Promises{}) },
	// Two holders, one after the other, with one token.
	"bad-token-same.jsonl": func() *history.History { return tokened(4, 4) },
	// The second holder's token is lower than the first's.
	"bad-token-lower.jsonl": func() *history.History { return tokened(5, 3) },
	// Tokens that rise.
	"ok-token-rising.jsonl": func() *history.History { return tokened(3, 5) },
	// Client 2 overtook client 1, who asked 25 ms earlier.
	"bad-fifo-overtake.jsonl": func() *history.History { return queued(true) },
	// The same overtake, of a lock that does not promise the order.
	"ok-fifo-not-promised.jsonl": func() *history.History { return queued(false) },
}

func TestCauseFixtures(t *testing.T) {
	writeFixtures(t, causeFixtures, "TestCauseFixtures")
}

// TestCauses judges each cause's fixture: the overlap's cause, whether
// the lock held its promises, and the verdict.
func TestCauses(t *testing.T) {
	tests := []struct {
		file      string
		cause     Cause // of the first overlap; "" for none
		fault     string
		broken    int
		clashes   int
		lockHolds bool
		pass      bool
	}{
		{"bad-cause-live-lease.jsonl", CauseLiveLease, "", 1, 0, false, false},
		{"ok-cause-paused.jsonl", CausePaused, "", 0, 0, true, true},
		{"bad-cause-ran-out.jsonl", CauseRanOut, "", 1, 0, false, false},
		{"ok-cause-ran-out-no-renewal.jsonl", CauseRanOut, "", 0, 0, true, true},
		{"ok-cause-fault.jsonl", CauseFault, "delete-lock", 0, 0, true, true},
		{"bad-cause-spent-validity.jsonl", CauseLiveLease, "", 1, 0, false, false},
		{"ok-cause-spent-no-validity.jsonl", CauseRanOut, "", 0, 0, true, true},
		{"bad-token-same.jsonl", "", "", 0, 1, false, false},
		{"bad-token-lower.jsonl", "", "", 0, 1, false, false},
		{"ok-token-rising.jsonl", "", "", 0, 0, true, true},
		{"bad-fifo-overtake.jsonl", "", "", 0, 0, false, false},
		{"ok-fifo-not-promised.jsonl", "", "", 0, 0, true, true},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			r := Check(load(t, tt.file), Options{})
			var got Cause
			var fault string
			if len(r.Lock.Pairs) > 0 {
				got, fault = r.Lock.Pairs[0].Cause, r.Lock.Pairs[0].Fault
			}
			if got != tt.cause || fault != tt.fault {
				t.Errorf("cause %q (fault %q), want %q (%q)", got, fault, tt.cause, tt.fault)
			}
			if r.Lock.Broken != tt.broken || r.Lock.TokenClashes != tt.clashes {
				t.Errorf("broken %d, token clashes %d; want %d, %d", r.Lock.Broken, r.Lock.TokenClashes, tt.broken, tt.clashes)
			}
			if r.Lock.Holds() != tt.lockHolds || r.Pass != tt.pass {
				t.Errorf("lock holds %v, pass %v; want %v, %v (reasons %q, notes %q)", r.Lock.Holds(), r.Pass, tt.lockHolds, tt.pass, r.Reasons, r.Notes)
			}
			if !tt.pass && len(r.Reasons) == 0 {
				t.Error("a failure without a reason")
			}
		})
	}
}

// TestCauseWidened: the clock error and the harness's lease slack (its
// stalls, the embedded server's clock steps) only ever move a live lease
// towards "ran out": a lease live by less than them is not proved live.
// Client 1 took the lock at 21 ms, 9.5 ms before client 0's lease ran
// out, less the expiry margin (2 ms) and the slack (1 ms unless said).
func TestCauseWidened(t *testing.T) {
	tests := []struct {
		name  string
		edit  func(h *history.History)
		cause Cause
	}{
		{"live by 6.5 ms beyond the margins", func(*history.History) {}, CauseLiveLease},
		{"a clock error of 4 ms", func(h *history.History) { h.Header.ClockError = 4 * ms }, CauseRanOut},
		{"stalls of 7 ms", func(h *history.History) { h.Header.Health.StallMax = 7 * ms }, CauseLiveLease},
		{"stalls of 8 ms", func(h *history.History) { h.Header.Health.StallMax = 8 * ms }, CausePaused},
		{"embedded server clock steps of 7 ms", func(h *history.History) { h.Header.Health.ServerClockStepMax = 7 * ms }, CauseLiveLease},
		{"embedded server clock steps of 8 ms", func(h *history.History) { h.Header.Health.ServerClockStepMax = 8 * ms }, CausePaused},
		{"health unknown", func(h *history.History) { h.Header.Health = nil }, CauseLiveLease},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := leased(20, history.Promises{})
			b := &h.Ops[1] // held until 35 ms, so that widening keeps the overlap
			b.ReleaseCall, b.Released, b.End = 35*ms, 36*ms, 37*ms
			tt.edit(h)
			r := Check(h, Options{})
			if len(r.Lock.Pairs) == 0 || r.Lock.Pairs[0].Cause != tt.cause {
				t.Fatalf("pairs %+v, want cause %q", r.Lock.Pairs, tt.cause)
			}
		})
	}
}
