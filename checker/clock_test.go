package checker

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"testing"

	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/internal/words"
)

// us is a microsecond, for the clock errors below a millisecond.
const us = ms / 1000

// shifted is op as a node whose clock offset was off by d recorded it,
// once mapped onto the coordinator's timeline: every instant d later (d
// negative: earlier) but the arrival, which is the coordinator's own.
func shifted(op history.Op, d int64) history.Op {
	for _, t := range []*int64{
		&op.Start, &op.AcquireCall, &op.Acquired, &op.ReadCall, &op.ReadReturn, &op.WriteCall, &op.WriteReturn,
		&op.ReleaseCall, &op.Released, &op.End, &op.Crash,
	} {
		if *t > 0 {
			*t += d
		}
	}
	return op
}

// onNode1 shifts the operations of node 1 by d, as shifted does.
func onNode1(d int64, ops ...history.Op) []history.Op {
	for i := range ops {
		if ops[i].Node == 1 {
			ops[i] = shifted(ops[i], d)
		}
	}
	return ops
}

// clockFixtures are histories of nodes on clocks of their own, in
// testdata/ beside the others: each was recorded with node 1's clock
// offset off by a residual error d, and declares a clock error that
// bounds it.
var clockFixtures = map[string]func() *history.History{
	// A correct lock handed from node to node back to back: each holder
	// takes it 1.5 ms after the last one began to release it (attempts
	// 6.5 ms apart). Node 1's instants are 2 ms early, so each hand-over
	// from node 0 to node 1 looks like an overlap of 0.5 ms.
	"ok-clock-handoff.jsonl": func() *history.History {
		var ops []history.Op
		for k := range int64(6) {
			ops = append(ops, attempt(int32(k), 0, 10*ms+k*6500*us, ms, 6-k, history.Applied, history.Sold))
		}
		h := &history.History{
			Header: header("lua", 6, 6),
			Final:  history.Final{Stock: 0, Orders: 6},
			Ops:    onNode1(-2*ms, ops...),
		}
		h.Header.Attempts = 1
		h.Header.ClockError = 2 * ms
		return h
	},
	// A holder paused past its lease (bad-overlap.jsonl): the next owner,
	// on node 1 whose instants are 1 ms early, entered 10 ms after it
	// took the lock and left 5 ms later while it still held it. The
	// overlap is far longer than twice the clock error of 1 ms.
	"bad-clock-overlap.jsonl": func() *history.History {
		h := &history.History{
			Header: header("set-nx-ex", 5, 3),
			Final:  history.Final{Stock: 3, Orders: 3},
			Faults: []history.Fault{{Name: "pause-holder", Node: 0, Client: -1, Start: 14 * ms, End: 39 * ms, Params: "for=25ms"}},
			Ops:    onNode1(-ms, stale(0, 5, 0, history.Applied, history.Sold), sold(1, 20, 5), sold(2, 50, 4)),
		}
		h.Header.ClockError = ms
		return h
	},
	// The atomic sale, one script per buyer, buyers alternating between
	// nodes, each script (2 ms long) called a millisecond after the last
	// returned. Node 1's instants are 6 ms early, so its buyers seem to
	// have read 3 and 1 before the buyers who read 4 and 2 sent theirs:
	// an order that only looks wrong.
	"ok-clock-shifted-reads.jsonl": func() *history.History {
		var ops []history.Op
		for k := range int64(4) {
			op := atomicSale(int32(k), 10+3*k, 12+3*k, 4-k)
			op.Node = int16(k % 2)
			ops = append(ops, op)
		}
		h := atomicRun(4, history.Final{Stock: 0, Orders: 4}, onNode1(-6*ms, ops...)...)
		h.Header.Attempts = 1
		h.Header.ClockError = 6 * ms
		return h
	},
}

// TestClockFixtures keeps the clock fixtures in testdata/ in step with
// their builders; run it with -update to rewrite the files.
func TestClockFixtures(t *testing.T) {
	writeFixtures(t, clockFixtures, "TestClockFixtures")
}

// TestCheckClockError: a clock error up to the declared ε never makes a
// violation, a real one beyond 2ε is still caught, and the report says
// what ε was. Each fixture is judged with the clock error its header
// declares replaced by eps.
func TestCheckClockError(t *testing.T) {
	overlaps := func(n int) []string {
		return []string{fmt.Sprintf("mutual exclusion broken: %s (%d with no lease recorded to judge by)", words.Count(int64(n), "overlapping critical section"), n)}
	}
	lostUpdate := []string{
		"inventory history not linearizable (first violation between 0.012s and 0.041s)",
		"oversold 1 unit: 3 orders, but the stock fell only from 5 to 3 (2 units)",
	}
	tests := []struct {
		name string
		file string
		eps  int64
		want summary
		// durations are the named overlaps' lengths, beyond the blind spot.
		durations []int64
	}{
		// (a) Without ε the residual 2 ms of node 1 are a false alarm:
		// three hand-overs from node 0 to node 1 overlap by 0.5 ms.
		{"handoff, one clock assumed", "ok-clock-handoff.jsonl", 0, summary{
			Data: OK, Lin: OK, Segments: 6, Lock: Violated, Overlaps: 3, Live: OK, Reasons: overlaps(3),
		}, []int64{500 * us, 500 * us, 500 * us}},
		// An ε that does not bound the error does not hide it: 0.5 ms is
		// more than twice 0.2 ms.
		{"handoff, ε below the error", "ok-clock-handoff.jsonl", 200 * us, summary{
			Data: OK, Lin: OK, Segments: 6, Lock: Violated, Overlaps: 3, Live: OK, Reasons: overlaps(3),
		}, []int64{100 * us, 100 * us, 100 * us}},
		{"handoff, ε = |d|", "ok-clock-handoff.jsonl", 2 * ms, summary{
			Pass: true, Data: OK, Lin: OK, Segments: 3, Lock: OK, Live: OK,
		}, nil},
		// Widened, the operations leave fewer quiescent points between
		// them: fewer, longer segments for the search.
		{"handoff, ε > |d|", "ok-clock-handoff.jsonl", 3 * ms, summary{
			Pass: true, Data: OK, Lin: OK, Segments: 1, Lock: OK, Live: OK,
		}, nil},
		// (b) A real overlap of 5 ms is caught whatever ε below 2.5 ms;
		// only its part beyond the blind spot is named.
		{"real overlap, one clock assumed", "bad-clock-overlap.jsonl", 0, summary{
			Data: Violated, Lin: Illegal, Segments: 2, FirstIllegal: &Window{12 * ms, 41 * ms},
			Oversold: 1, Lock: Violated, Overlaps: 1, Live: OK, Reasons: append(slices.Clip(lostUpdate), overlaps(1)...),
		}, []int64{5 * ms}},
		{"real overlap, ε = 1ms", "bad-clock-overlap.jsonl", ms, summary{
			Data: Violated, Lin: Illegal, Segments: 2, FirstIllegal: &Window{11 * ms, 42 * ms},
			Oversold: 1, Lock: Violated, Overlaps: 1, Live: OK,
			Reasons: append([]string{
				"inventory history not linearizable (first violation between 0.011s and 0.042s)",
				lostUpdate[1],
			}, overlaps(1)...),
		}, []int64{3 * ms}},
		{"real overlap, ε = 2ms", "bad-clock-overlap.jsonl", 2 * ms, summary{
			Data: Violated, Lin: Illegal, Segments: 2, FirstIllegal: &Window{10 * ms, 43 * ms},
			Oversold: 1, Lock: Violated, Overlaps: 1, Live: OK,
			Reasons: append([]string{
				"inventory history not linearizable (first violation between 0.010s and 0.043s)",
				lostUpdate[1],
			}, overlaps(1)...),
		}, []int64{1 * ms}},
		// (c) Node 1's reads seem to come before the reads of more stock
		// on node 0: illegal on one clock, legal within ε.
		{"shifted reads, one clock assumed", "ok-clock-shifted-reads.jsonl", 0, summary{
			Data: Violated, Lin: Illegal, Segments: 4, FirstIllegal: &Window{7 * ms, 9 * ms}, Lock: NotApplicable, Live: OK,
			Reasons: []string{"inventory history not linearizable (first violation between 0.007s and 0.009s)"},
		}, nil},
		{"shifted reads, ε = |d|", "ok-clock-shifted-reads.jsonl", 6 * ms, summary{
			Pass: true, Data: OK, Lin: OK, Segments: 1, Lock: NotApplicable, Live: OK,
		}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := load(t, tt.file)
			h.Header.ClockError = tt.eps
			before := clone(h)
			r := Check(h, Options{})
			if got := summarize(r); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
			var durations []int64
			for _, p := range r.Lock.Pairs {
				durations = append(durations, p.Duration)
			}
			if !slices.Equal(durations, tt.durations) {
				t.Errorf("overlap durations %v, want %v", durations, tt.durations)
			}
			if r.ClockError != tt.eps {
				t.Errorf("report's ClockError %d, want %d", r.ClockError, tt.eps)
			}
			if !reflect.DeepEqual(h, before) {
				t.Error("Check changed the history it judged")
			}
		})
	}
}

// clone is a deep copy of h's operations and faults.
func clone(h *history.History) *history.History {
	c := *h
	c.Ops = slices.Clone(h.Ops)
	c.Faults = slices.Clone(h.Faults)
	return &c
}

// TestCheckItemsClockError: a sale of several items is widened once, not
// once per item: the hand-overs of ok-clock-handoff.jsonl, on item 1 of
// two, still overlap by 0.5 ms, more than twice an ε of 0.2 ms (widened
// twice, they would not).
func TestCheckItemsClockError(t *testing.T) {
	h := load(t, "ok-clock-handoff.jsonl")
	h.Header.Items, h.Header.ClockError = 2, 200*us
	h.Final = finals(history.Final{Stock: 6}, h.Final)
	for i := range h.Ops {
		h.Ops[i].Item = 1
	}
	r := Check(h, Options{})
	if r.Lock.Overlaps != 3 || r.Lock.Status != Violated || r.ClockError != 200*us {
		t.Errorf("got %d overlaps (%s), clock error %d; want 3, violated, %d", r.Lock.Overlaps, r.Lock.Status, r.ClockError, 200*us)
	}
}

// TestWiden: calls move ε earlier and returns ε later, on a copy; what
// did not happen, the arrival and the faults stay; nothing moves to zero
// or below; without a clock error the history is judged as it is.
func TestWiden(t *testing.T) {
	op := history.Op{
		Client: 1, Node: 1, Arrival: 100, Start: 101, AcquireCall: 102, Acquired: 110, ReadCall: 111, ReadReturn: 112,
		WriteCall: 113, WriteReturn: 114, ReleaseCall: 115, Released: 116, End: 117,
		Stock: 3, Write: history.Applied, Outcome: history.Sold,
	}
	crashed := history.Op{Client: 2, Arrival: 3, Start: 4, AcquireCall: 5, Acquired: 6, Crash: 8, Stock: history.NoStock, Outcome: history.Crashed}
	faults := []history.Fault{{Name: "pause-holder", Node: 1, Client: -1, Start: 105, End: 120}}
	tests := []struct {
		name string
		eps  int64
		want []history.Op
	}{
		{"one clock", 0, []history.Op{op, crashed}},
		{"ε = 10", 10, []history.Op{
			{
				Client: 1, Node: 1, Arrival: 100, Start: 91, AcquireCall: 92, Acquired: 120, ReadCall: 101, ReadReturn: 122,
				WriteCall: 103, WriteReturn: 124, ReleaseCall: 105, Released: 126, End: 127,
				Stock: 3, Write: history.Applied, Outcome: history.Sold,
			},
			// Calls stop at 1; a crash bounds a hold's end, a call.
			{Client: 2, Arrival: 3, Start: 1, AcquireCall: 1, Acquired: 16, Crash: 1, Stock: history.NoStock, Outcome: history.Crashed},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := &history.History{Header: history.Header{ClockError: tt.eps, Duration: 200}, Faults: faults, Ops: []history.Op{op, crashed}}
			before := clone(h)
			w := widen(h)
			if !reflect.DeepEqual(w.Ops, tt.want) {
				t.Errorf("widened\n%+v\nwant\n%+v", w.Ops, tt.want)
			}
			if !reflect.DeepEqual(w.Faults, faults) || w.Header != h.Header {
				t.Errorf("widen moved the faults or the header: %+v, %+v", w.Faults, w.Header)
			}
			if !reflect.DeepEqual(h, before) {
				t.Error("widen changed its argument")
			}
			if (w == h) != (tt.eps == 0) {
				t.Errorf("widen returned h itself: %v, want %v", w == h, tt.eps == 0)
			}
		})
	}
}

// TestCheckLockClockError: a hold shrunk to nothing by ε overlaps
// nothing; one that keeps some length still does.
func TestCheckLockClockError(t *testing.T) {
	tests := []struct {
		name     string
		eps      int64
		overlaps int
	}{
		{"one clock", 0, 2},
		{"the 2-long hold shrinks to nothing", 1, 1},
		{"both short holds shrink to nothing", 2, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := &history.History{
				Header: history.Header{Duration: 1000, ClockError: tt.eps},
				Ops:    []history.Op{section(0, 0, 1, 100), section(1, 0, 10, 12), section(2, 0, 20, 24)},
			}
			if got := checkLock(widen(h), 5); got.Overlaps != tt.overlaps {
				t.Errorf("got %d overlaps, want %d", got.Overlaps, tt.overlaps)
			}
		})
	}
}

// TestCheckFairnessClockError: an overtake counts only when it is one
// whatever the clocks did: the later buyer asked more than the margin and
// 2ε after the one it went ahead of, and got the lock more than 2ε before
// it.
func TestCheckFairnessClockError(t *testing.T) {
	acq := func(client int32, call, got int64) history.Op {
		return history.Op{Client: client, Arrival: call * us, AcquireCall: call * us, Acquired: got * us, Stock: history.NoStock}
	}
	tests := []struct {
		name string
		eps  int64 // µs
		ops  []history.Op
		want int64
	}{
		// Buyer 1 asked 14 ms after buyer 0 and got the lock 10 ms before it.
		{"asked 14ms later, one clock", 0, []history.Op{acq(0, 5000, 40000), acq(1, 19000, 30000)}, 1},
		{"asked 14ms later, ε = 1ms", 1000, []history.Op{acq(0, 5000, 40000), acq(1, 19000, 30000)}, 1},
		{"asked 14ms later, ε = 2.5ms: within the margin and 2ε", 2500, []history.Op{acq(0, 5000, 40000), acq(1, 19000, 30000)}, 0},
		// Buyer 1 asked long after buyer 0 and got the lock 1 ms before it.
		{"granted 1ms earlier, one clock", 0, []history.Op{acq(0, 5000, 31000), acq(1, 30000, 30000)}, 1},
		{"granted 1ms earlier, ε = 0.4ms", 400, []history.Op{acq(0, 5000, 31000), acq(1, 30000, 30000)}, 1},
		{"granted 1ms earlier, ε = 0.5ms: within 2ε", 500, []history.Op{acq(0, 5000, 31000), acq(1, 30000, 30000)}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := &history.History{Header: history.Header{Duration: 100 * ms, ClockError: tt.eps * us}, Ops: tt.ops}
			if n, first := checkFairness(widen(h), 0); n != tt.want || (first != nil) != (n > 0) {
				t.Errorf("overtakes = %d (first %+v), want %d", n, first, tt.want)
			}
		})
	}
}

// TestCheckLivenessClockError: a fenced store's refusal that came back
// 1 ms before a newer token was taken is a stale holder's, not an
// illegitimate refusal, when the clocks may be more than 0.5 ms off each
// way.
func TestCheckLivenessClockError(t *testing.T) {
	refused := history.Op{Client: 0, Arrival: ms, Start: ms, AcquireCall: ms, Acquired: 2 * ms, Token: 1,
		ReadCall: 3 * ms, ReadReturn: 4 * ms, WriteCall: 5 * ms, WriteReturn: 10 * ms, Write: history.Refused,
		ReleaseCall: 11 * ms, Released: 12 * ms, End: 13 * ms, Stock: 1, Outcome: history.Rejected}
	newer := history.Op{Client: 1, Attempt: 0, Arrival: 5 * ms, Start: 5 * ms, AcquireCall: 5 * ms, Acquired: 11 * ms, Token: 2,
		ReadCall: 12 * ms, ReadReturn: 13 * ms, WriteCall: 14 * ms, WriteReturn: 15 * ms, Write: history.Applied,
		ReleaseCall: 16 * ms, Released: 17 * ms, End: 18 * ms, Stock: 1, Outcome: history.Sold}
	tests := []struct {
		name            string
		eps             int64
		refused, fenced int
	}{
		{"one clock", 0, 1, 0},
		{"ε = 0.4ms", 400 * us, 1, 0},
		{"ε = 0.6ms", 600 * us, 0, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := &history.History{Header: history.Header{Fenced: true, Duration: 100 * ms, ClockError: tt.eps}, Ops: []history.Op{refused, newer}}
			if l := checkLiveness(widen(h)); l.Refused != tt.refused || l.Fenced != tt.fenced {
				t.Errorf("refused %d, fenced %d; want %d, %d", l.Refused, l.Fenced, tt.refused, tt.fenced)
			}
		})
	}
}

// TestVisualizeClockError: Visualize judges as Check does, widened: the
// reads that only look out of order are drawn on one clock and are no
// violation within ε.
func TestVisualizeClockError(t *testing.T) {
	tests := []struct {
		eps  int64
		want error
	}{
		{0, nil},
		{6 * ms, ErrNoViolation},
	}
	for _, tt := range tests {
		h := load(t, "ok-clock-shifted-reads.jsonl")
		h.Header.ClockError = tt.eps
		var buf bytes.Buffer
		if err := Visualize(&buf, h, Options{}); !errors.Is(err, tt.want) {
			t.Errorf("ε %d: Visualize = %v, want %v", tt.eps, err, tt.want)
		}
	}
}
