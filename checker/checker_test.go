package checker

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/lockbench/lockbench/history"
)

// withChunkOps makes the checker hand porcupine n operations at a time
// for the rest of the test.
func withChunkOps(t *testing.T, n int) {
	t.Helper()
	old := chunkOps
	chunkOps = n
	t.Cleanup(func() { chunkOps = old })
}

// summary is what the fixture table asserts of a report.
type summary struct {
	Pass          bool
	Data, Lin     Status
	Segments      int
	FirstIllegal  *Window
	Oversold      int64
	Indeterminate int
	Lock          Status
	Fencing       bool
	Overlaps      int
	Live          Status
	GaveUp        int
	Unsold        int64
	Mismatched    int64
	Refused       int
	SentAway      int
	Lost          int
	Interrupted   bool
	Reasons       []string
	Notes         []string
}

func summarize(r Report) summary {
	return summary{
		Pass: r.Pass, Data: r.Data.Status, Lin: r.Data.Linearizability.Status,
		Segments: r.Data.Linearizability.Segments, FirstIllegal: r.Data.Linearizability.FirstIllegal,
		Oversold: r.Data.Oversold, Indeterminate: r.Data.Indeterminate,
		Lock: r.Lock.Status, Fencing: r.Lock.Fencing, Overlaps: r.Lock.Overlaps,
		Live: r.Liveness.Status, GaveUp: r.Liveness.GaveUp, Unsold: r.Liveness.Unsold,
		Mismatched: r.Data.Mismatched, Refused: r.Liveness.Refused, SentAway: r.Liveness.SentAway, Lost: r.Lock.Lost,
		Interrupted: r.Interrupted, Reasons: r.Reasons, Notes: r.Notes,
	}
}

const fencingNote = "mutual exclusion broken: 1 overlapping critical section (1 with no lease recorded to judge by) (the store's fencing decides data safety)"

const unreadNote = "the service did not say which stock its purchases read: linearizability not checked, the audits of the answers and the final state judge the data"

const finalUnknownNote = "the store's final state could not be read: orders and stock not audited, the history checked alone"

// unansweredNote is the note of one buyer whose request failed without an
// answer: not counted as giving up.
const unansweredNote = "liveness: 1 buyer's request failed without an answer (an unknown outcome: a timeout, a 5xx, a reset connection), not counted as giving up"

const unknownNote = "1 write had an unknown outcome; the check let each land at any later time or never"

func TestCheckFixtures(t *testing.T) {
	tests := []struct {
		file string
		want summary
	}{
		{"ok-sequential.jsonl", summary{
			Pass: true, Data: OK, Lin: OK, Segments: 7, Lock: OK, Live: OK, GaveUp: 1, SentAway: 1,
		}},
		{"bad-overlap.jsonl", summary{
			Data: Violated, Lin: Illegal, Segments: 2, FirstIllegal: &Window{12 * ms, 41 * ms},
			Oversold: 1, Lock: Violated, Overlaps: 1, Live: OK,
			Reasons: []string{
				"inventory history not linearizable (first violation between 0.012s and 0.041s)",
				"oversold 1 unit: 3 orders, but the stock fell only from 5 to 3 (2 units)",
				"mutual exclusion broken: 1 overlapping critical section (1 with no lease recorded to judge by)",
			},
		}},
		{"ok-segments.jsonl", summary{
			Pass: true, Data: OK, Lin: OK, Segments: 4, Lock: NotApplicable, Live: OK,
		}},
		{"ok-indeterminate-applied.jsonl", summary{
			Pass: true, Data: OK, Lin: OK, Segments: 3, Indeterminate: 1, Lock: OK, Live: OK,
			Notes: []string{unansweredNote, unknownNote},
		}},
		{"ok-indeterminate-lost.jsonl", summary{
			Pass: true, Data: OK, Lin: OK, Segments: 3, Indeterminate: 1, Lock: OK, Live: OK,
			Notes: []string{unansweredNote, unknownNote},
		}},
		{"bad-indeterminate.jsonl", summary{
			Data: Violated, Lin: Illegal, Segments: 1, FirstIllegal: &Window{12 * ms, 35 * ms},
			Indeterminate: 1, Lock: OK, Live: OK,
			Reasons: []string{"inventory history not linearizable (first violation between 0.012s and 0.035s)"},
			Notes:   []string{unansweredNote},
		}},
		{"ok-fenced-refused.jsonl", summary{
			Pass: true, Data: OK, Lin: OK, Segments: 2, Lock: Violated, Fencing: true, Overlaps: 1, Live: OK,
			Notes: []string{
				fencingNote,
				"1 stale write was refused by the store's fencing (first: buyer 0 attempt 0's token 1 at 0.041s, after token 2 was taken at 0.021s)",
			},
		}},
		{"bad-fenced-applied.jsonl", summary{
			Data: Violated, Lin: Illegal, Segments: 2, FirstIllegal: &Window{12 * ms, 41 * ms},
			Oversold: 1, Lock: Violated, Fencing: true, Overlaps: 1, Live: OK,
			Reasons: []string{
				"inventory history not linearizable (first violation between 0.012s and 0.041s)",
				"oversold 1 unit: 3 orders, but the stock fell only from 5 to 3 (2 units)",
			},
			Notes: []string{fencingNote},
		}},
		{"bad-oversell.jsonl", summary{
			Data: Violated, Lin: Illegal, Segments: 2, FirstIllegal: &Window{10 * ms, 21 * ms},
			Oversold: 3, Lock: NotApplicable, Live: OK,
			Reasons: []string{
				"inventory history not linearizable (first violation between 0.010s and 0.021s)",
				"oversold 3 units: 5 orders, but the stock fell only from 3 to 1 (2 units)",
			},
		}},
		{"bad-duplicate.jsonl", summary{
			Data: Violated, Lin: OK, Segments: 3, Lock: OK, Live: OK,
			Reasons: []string{"1 user got two orders"},
		}},
		{"bad-sold-twice.jsonl", summary{
			Data: Violated, Lin: OK, Segments: 3, Lock: OK, Live: OK,
			Reasons: []string{"1 user sold more than once in the history while the store shows one order (a duplicate, or a lost order)"},
		}},
		// A restart without persistence under load: every sale after it
		// timed out (unknown), so the counter's history stays explainable,
		// but the two confirmed orders are gone.
		{"bad-lost-orders.jsonl", summary{
			Data: Violated, Lin: OK, Segments: 2, Indeterminate: 1, Lock: NotApplicable, Live: OK,
			Reasons: []string{"lost 2 acknowledged orders (2 sold, 0 in the store)"},
			Notes:   []string{unansweredNote, unknownNote},
		}},
		{"bad-unsold.jsonl", summary{
			Data: OK, Lin: OK, Segments: 2, Lock: OK, Live: Violated, GaveUp: 3, SentAway: 3, Unsold: 4,
			Reasons: []string{"liveness: 4 units unsold while 3 buyers gave up"},
		}},
		{"ok-blind-landed.jsonl", summary{
			Pass: true, Data: OK, Lin: OK, Segments: 4, Indeterminate: 1, Lock: NotApplicable, Live: OK,
			Notes: []string{unansweredNote, unknownNote},
		}},
		{"ok-blind-lost.jsonl", summary{
			Pass: true, Data: OK, Lin: OK, Segments: 4, Indeterminate: 1, Lock: NotApplicable, Live: OK,
			Notes: []string{unansweredNote, unknownNote},
		}},
		{"bad-blind-twice.jsonl", summary{
			Data: Violated, Lin: Illegal, Segments: 3, FirstIllegal: &Window{20 * ms, 32 * ms},
			Indeterminate: 1, Lock: NotApplicable, Live: OK,
			Reasons: []string{"inventory history not linearizable (first violation between 0.020s and 0.032s)"},
			Notes:   []string{unansweredNote},
		}},
		{"bad-blind-rise.jsonl", summary{
			Data: Violated, Lin: Illegal, Segments: 4, FirstIllegal: &Window{50 * ms, 52 * ms},
			Indeterminate: 1, Lock: NotApplicable, Live: OK,
			Reasons: []string{"inventory history not linearizable (first violation between 0.050s and 0.052s)"},
			Notes:   []string{unansweredNote},
		}},
		{"bad-blind-at-zero.jsonl", summary{
			Data: Violated, Lin: Illegal, Segments: 3, FirstIllegal: &Window{20 * ms, 32 * ms},
			Oversold: 1, Indeterminate: 1, Lock: NotApplicable, Live: OK,
			Reasons: []string{
				"inventory history not linearizable (first violation between 0.020s and 0.032s)",
				"oversold 1 unit: 2 orders of a stock of 1 (the counter ended at -1)",
				"stock went negative (final stock -1)",
			},
			Notes: []string{unansweredNote},
		}},
		{"bad-sold-out-left.jsonl", summary{
			Data: Violated, Lin: OK, Segments: 2, Mismatched: 1, Lock: NotApplicable, Live: Violated, SentAway: 1, Unsold: 1,
			Reasons: []string{
				"1 answer contradicts the stock read (first: buyer 1 attempt 0 read 1 and was sold out, at 0.020s)",
				"liveness: 1 unit unsold while 1 buyer was sent away (0 gave up, 1 refused or told sold out)",
			},
		}},
		{"bad-sold-at-zero.jsonl", summary{
			Data: Violated, Lin: OK, Segments: 2, Oversold: 1, Mismatched: 1, Lock: OK, Live: OK,
			Reasons: []string{
				"oversold 1 unit: 2 orders of a stock of 1 (the counter ended at -1)",
				"1 answer contradicts the stock read (first: buyer 1 attempt 0 read 0 and was sold a unit, at 0.022s)",
				"stock went negative (final stock -1)",
			},
		}},
		{"bad-refuse-all.jsonl", summary{
			Data: OK, Lin: OK, Segments: 6, Lock: OK, Fencing: true, Live: Violated, Refused: 6, SentAway: 3, Unsold: 3,
			Reasons: []string{
				"liveness: 6 writes refused with no newer fencing token taken before (first: buyer 0 attempt 0, token 1, at 0.015s)",
				"liveness: 3 units unsold while 3 buyers were sent away (0 gave up, 3 refused or told sold out)",
			},
		}},
		{"ok-lost-release.jsonl", summary{
			Pass: true, Data: OK, Lin: OK, Segments: 3, Lock: OK, Lost: 1, Live: OK,
			Notes: []string{"1 release found the lock gone: that holder had no mutual exclusion for part of its critical section, though no other holder was seen inside it"},
		}},
		{"bad-cut-short.jsonl", summary{
			Data: OK, Lin: OK, Segments: 2, Indeterminate: 1, Lock: OK, Live: Violated, GaveUp: 1, SentAway: 1, Unsold: 1,
			Reasons: []string{
				"liveness: 1 unit unsold while 1 buyer gave up",
				"run cut short by --timeout or interrupt",
			},
			Notes: []string{unknownNote},
		}},
		// The same run, saying what cut it: --timeout is a liveness
		// failure; an interrupt leaves liveness unknown, and the buyers
		// it stopped are not counted as sent away by the lock.
		{"bad-timeout.jsonl", summary{
			Data: OK, Lin: OK, Segments: 2, Indeterminate: 1, Lock: OK, Live: Violated, GaveUp: 1, SentAway: 1, Unsold: 1,
			Reasons: []string{
				"liveness: 1 unit unsold while 1 buyer gave up",
				"run cut short by --timeout after 30ms with buyers still waiting",
			},
			Notes: []string{unknownNote},
		}},
		// The server lost mid-sale, its final state unread: the history
		// is checked alone, nothing is counted unsold or lost.
		{"bad-server-lost.jsonl", summary{
			Data: OK, Lin: OK, Segments: 2, Indeterminate: 1, Lock: OK, Live: Unknown, GaveUp: 1, SentAway: 1, Interrupted: true,
			Notes: []string{finalUnknownNote, "the server stopped answering during the sale: the run was cut short, liveness not judged", unknownNote},
		}},
		// A black-box service that told every buyer "sold out" without
		// saying what it read, its state showing units left.
		{"bad-sold-out-unread.jsonl", summary{
			Data: OK, Lin: NotApplicable, Lock: NotApplicable, Live: Violated, SentAway: 3, Unsold: 3,
			Reasons: []string{"liveness: 3 units unsold while 3 buyers were sent away (0 gave up, 3 refused or told sold out)"},
			Notes:   []string{unreadNote},
		}},
		// Sales confirmed beyond the stock oversell even when the final
		// state is unknown; within the stock, nothing is known.
		{"bad-sold-unread-state-lost.jsonl", summary{
			Data: Violated, Lin: NotApplicable, Oversold: 2, Lock: NotApplicable, Live: OK,
			Reasons: []string{"oversold 2 units: 5 sales confirmed of a stock of 3"},
			Notes:   []string{unreadNote, finalUnknownNote},
		}},
		{"bad-unread-state-lost.jsonl", summary{
			Data: Unknown, Lin: NotApplicable, Lock: NotApplicable, Live: OK,
			Reasons: []string{"data safety unknown: the service did not say which stock its purchases read, and its final state could not be read"},
			Notes:   []string{unreadNote, finalUnknownNote},
		}},
		{"bad-interrupted.jsonl", summary{
			Data: OK, Lin: OK, Segments: 2, Indeterminate: 1, Lock: OK, Live: Unknown, GaveUp: 1, SentAway: 1, Unsold: 1, Interrupted: true,
			Notes: []string{"interrupted before every buyer was done: liveness not judged", unknownNote},
		}},
	}
	for _, n := range []int{chunkOps, 1} {
		for _, tt := range tests {
			t.Run(tt.file, func(t *testing.T) {
				withChunkOps(t, n)
				got := summarize(Check(load(t, tt.file), Options{}))
				if !reflect.DeepEqual(got, tt.want) {
					t.Errorf("chunks of %d:\ngot  %+v\nwant %+v", n, got, tt.want)
				}
			})
		}
	}
}

func TestCheckNamesOverlaps(t *testing.T) {
	got := Check(load(t, "bad-overlap.jsonl"), Options{}).Lock.Pairs
	want := []Overlap{{
		A:        OpRef{Index: 0, Client: 0, Node: 0, From: 11 * ms, To: 42 * ms},
		B:        OpRef{Index: 1, Client: 1, Node: 1, From: 21 * ms, To: 26 * ms},
		Duration: 5 * ms,
		Cause:    CauseUnknown,
	}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
}

// section is a history.Op that held the lock over [from, to].
func section(client int32, n int16, from, to int64) history.Op {
	return history.Op{Client: client, Attempt: n, Acquired: from, ReleaseCall: to, Stock: history.NoStock}
}

func TestCheckLock(t *testing.T) {
	tests := []struct {
		name     string
		ops      []history.Op
		maxPairs int
		overlaps int
		pairs    [][2]int // indexes of the named pairs
	}{
		{"disjoint", []history.Op{section(0, 0, 1, 10), section(1, 0, 10, 20), section(2, 0, 30, 40)}, 5, 0, nil},
		{"nested in a long holder", []history.Op{
			section(0, 0, 1, 100), section(1, 0, 10, 20), section(2, 0, 30, 40), section(3, 0, 100, 110),
		}, 5, 2, [][2]int{{0, 1}, {0, 2}}},
		{"the longest earlier section is the partner", []history.Op{
			section(1, 0, 10, 50), section(0, 0, 1, 20), section(2, 0, 30, 40),
		}, 5, 2, [][2]int{{1, 0}, {0, 2}}},
		{"same owner is no overlap", []history.Op{section(0, 0, 1, 10), section(0, 0, 5, 8)}, 5, 0, nil},
		{"another attempt of the same buyer is", []history.Op{section(0, 0, 1, 10), section(0, 1, 5, 8)}, 5, 1, [][2]int{{0, 1}}},
		{"pairs are capped", []history.Op{
			section(0, 0, 1, 100), section(1, 0, 10, 20), section(2, 0, 30, 40), section(3, 0, 50, 60),
		}, 2, 3, [][2]int{{0, 1}, {0, 2}}},
		{"a crashed holder holds until its crash, a cut-off one until the end", []history.Op{
			{Client: 0, Acquired: 1, Crash: 50, Stock: history.NoStock},
			{Client: 1, Acquired: 60, Stock: history.NoStock},
			section(2, 0, 70, 80), section(3, 0, 40, 45),
		}, 5, 2, [][2]int{{0, 3}, {1, 2}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := &history.History{Header: history.Header{Duration: 1000}, Ops: tt.ops}
			got := checkLock(h, tt.maxPairs)
			if got.Overlaps != tt.overlaps {
				t.Errorf("got %d overlaps, want %d", got.Overlaps, tt.overlaps)
			}
			var pairs [][2]int
			for _, p := range got.Pairs {
				pairs = append(pairs, [2]int{p.A.Index, p.B.Index})
			}
			if !reflect.DeepEqual(pairs, tt.pairs) {
				t.Errorf("got pairs %v, want %v", pairs, tt.pairs)
			}
			if want := tt.overlaps > 0; (got.Status == Violated) != want {
				t.Errorf("got status %s with %d overlaps", got.Status, got.Overlaps)
			}
		})
	}
}

func TestCheckLiveness(t *testing.T) {
	op := func(client int32, n int16, out history.Outcome) history.Op {
		return history.Op{Client: client, Attempt: n, Outcome: out, Stock: history.NoStock}
	}
	// holder took token tok at t and had its write refused at t+5.
	refused := func(client int32, n int16, tok uint64, t int64) history.Op {
		return history.Op{
			Client: client, Attempt: n, Token: tok, Acquired: t, ReadCall: t + 1, ReadReturn: t + 2, Stock: 3,
			WriteCall: t + 3, WriteReturn: t + 5, Write: history.Refused, Outcome: history.Rejected,
		}
	}
	holder := func(client int32, tok uint64, t int64) history.Op {
		return history.Op{Client: client, Token: tok, Acquired: t, Stock: history.NoStock, Outcome: history.Sold}
	}
	read := func(client int32, stock int64, out history.Outcome) history.Op {
		o := op(client, 0, out)
		o.Stock = stock
		return o
	}
	tests := []struct {
		name                      string
		fenced                    bool
		ops                       []history.Op
		stock                     int64
		gaveUp, refused, sentAway int
		unsold                    int64
	}{
		{"a later attempt that bought", false, []history.Op{op(0, 1, history.Sold), op(0, 0, history.GaveUp)}, 3, 0, 0, 0, 0},
		{"a later attempt that gave up", false, []history.Op{op(0, 0, history.Sold), op(0, 1, history.GaveUp)}, 3, 1, 0, 1, 3},
		{"every way of giving up", false, []history.Op{
			op(0, 0, history.GaveUp), op(1, 0, history.Failed), op(2, 0, history.Pending),
		}, 1, 3, 0, 3, 1},
		// A request that failed without an answer (issue 24, row 13: a
		// correct service failing a fifth of its requests with 500s,
		// stalls and resets) is an unknown outcome, never giving up.
		{"a request that failed without an answer is not giving up", false, []history.Op{
			op(0, 0, history.Unknown), op(1, 0, history.Unknown), op(2, 0, history.Sold),
		}, 1, 0, 0, 0, 0},
		{"answers on the stock are not giving up", false, []history.Op{
			op(0, 0, history.Sold), read(1, 0, history.SoldOut), op(2, 0, history.Duplicate), op(4, 0, history.Crashed),
		}, 2, 0, 0, 0, 0},
		{"nothing left to sell", false, []history.Op{op(0, 0, history.GaveUp)}, 0, 1, 0, 1, 0},
		{"sold out after reading zero", false, []history.Op{read(0, 0, history.SoldOut)}, 2, 0, 0, 0, 0},
		{"sold out after reading a unit", false, []history.Op{read(0, 1, history.SoldOut)}, 2, 0, 0, 1, 2},
		// A service that does not say what it read: the stock never
		// rises, so units left at the end were left at every answer.
		{"sold out, unread, with units left at the end", false, []history.Op{op(0, 0, history.SoldOut), op(1, 0, history.SoldOut)}, 2, 0, 0, 2, 2},
		{"sold out, unread, with nothing left", false, []history.Op{op(0, 0, history.SoldOut)}, 0, 0, 0, 0, 0},
		{"a stale holder refused after a newer token", true, []history.Op{
			refused(0, 0, 1, 10), holder(1, 2, 12),
		}, 2, 0, 0, 0, 0},
		{"refused when the newer token came after", true, []history.Op{
			refused(0, 0, 1, 10), holder(1, 2, 15),
		}, 2, 0, 1, 1, 2},
		{"refused with only older tokens about", true, []history.Op{
			holder(1, 1, 5), refused(0, 0, 2, 10),
		}, 2, 0, 1, 1, 2},
		{"an unfenced store never refuses legitimately", false, []history.Op{
			refused(0, 0, 1, 10), holder(1, 2, 12),
		}, 2, 0, 1, 1, 2},
		{"an illegitimate refusal fails even when a retry bought", true, []history.Op{
			refused(0, 0, 1, 10), op(0, 1, history.Sold),
		}, 0, 0, 1, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := &history.History{Header: history.Header{Fenced: tt.fenced}, Final: history.Final{Stock: tt.stock}, Ops: tt.ops}
			got := checkLiveness(h)
			if got.GaveUp != tt.gaveUp || got.Refused != tt.refused || got.SentAway != tt.sentAway || got.Unsold != tt.unsold {
				t.Errorf("got gave up %d, refused %d, sent away %d, unsold %d; want %d, %d, %d, %d",
					got.GaveUp, got.Refused, got.SentAway, got.Unsold, tt.gaveUp, tt.refused, tt.sentAway, tt.unsold)
			}
			if want := tt.unsold > 0 || tt.refused > 0; (got.Status == Violated) != want {
				t.Errorf("got status %s with %d unsold, %d refused", got.Status, got.Unsold, got.Refused)
			}
		})
	}
}

// corrupt makes the read of the first operation at or after position i
// that bought see one unit more than was there, and returns its position.
func corrupt(t *testing.T, h *history.History, i int) int {
	t.Helper()
	for ; i < len(h.Ops); i++ {
		if h.Ops[i].Write == history.Applied {
			h.Ops[i].Stock++
			return i
		}
	}
	t.Fatal("nothing to corrupt")
	return -1
}

func TestCheckGenerated(t *testing.T) {
	tests := []struct {
		name string
		spec saleSpec
		// bad is where to corrupt a read, or -1.
		bad int
	}{
		{"sequential", saleSpec{ops: 20000, stock: 5000, seed: 1}, -1},
		{"sequential with a bad read", saleSpec{ops: 20000, stock: 5000, seed: 1}, 9000},
		{"overlapping groups", saleSpec{ops: 20000, stock: 5000, groups: 60, seed: 2}, -1},
		{"overlapping groups with a bad read", saleSpec{ops: 20000, stock: 5000, groups: 60, seed: 2}, 12000},
		{"unanswered writes early", saleSpec{ops: 20000, stock: 5000, indeterminate: []int{100, 103, 2000, 2001, 2002}, seed: 3}, -1},
		{"unanswered writes early and a bad read", saleSpec{ops: 20000, stock: 5000, indeterminate: []int{100, 103, 2000, 2001, 2002}, seed: 3}, 2003},
		{"unanswered writes everywhere", saleSpec{ops: 20000, stock: 5000, groups: 30, indeterminate: many(20, 12000, 40), seed: 4}, -1},
		{"atomic with blind sales", saleSpec{ops: 20000, stock: 5000, atomic: true, blind: many(20, 501, 911), seed: 5}, -1},
		{"atomic with blind sales and a bad read", saleSpec{ops: 20000, stock: 5000, atomic: true, blind: many(20, 501, 911), seed: 5}, 12000},
		{"atomic with blind sales in overlapping groups", saleSpec{ops: 20000, stock: 5000, atomic: true, groups: 60, blind: many(20, 501, 911), seed: 6}, -1},
		{"atomic with blind sales in overlapping groups and a bad read", saleSpec{ops: 20000, stock: 5000, atomic: true, groups: 60, blind: many(20, 501, 911), seed: 6}, 15000},
	}
	for _, n := range []int{chunkOps, 1} {
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				withChunkOps(t, n)
				h := genSale(tt.spec)
				if got, want := countWrites(h, history.Indeterminate), len(tt.spec.indeterminate)+len(tt.spec.blind); got != want {
					t.Fatalf("generated %d unanswered writes and blind sales, want %d", got, want)
				}
				var at int64
				if tt.bad >= 0 {
					at = h.Ops[corrupt(t, h, tt.bad)].ReadCall
				}
				lin := Check(h, Options{}).Data.Linearizability
				switch {
				case tt.bad < 0 && lin.Status != OK:
					t.Errorf("chunks of %d: got %s (%+v), want ok", n, lin.Status, lin.FirstIllegal)
				case tt.bad >= 0 && lin.Status != Illegal:
					t.Errorf("chunks of %d: got %s, want illegal", n, lin.Status)
				case tt.bad >= 0 && (at < lin.FirstIllegal.From || at > lin.FirstIllegal.To):
					t.Errorf("chunks of %d: violation at %d reported in %+v", n, at, *lin.FirstIllegal)
				case tt.bad >= 0 && lin.FirstIllegal.To-lin.FirstIllegal.From > 10*slot:
					t.Errorf("chunks of %d: violation at %d reported in %+v, more than its segment", n, at, *lin.FirstIllegal)
				}
				if tt.spec.groups == 0 && len(tt.spec.indeterminate) == 0 && len(tt.spec.blind) == 0 && lin.Segments != countReads(h) {
					t.Errorf("got %d segments of a sequential sale of %d reads", lin.Segments, countReads(h))
				}
			})
		}
	}
}

func TestCheckCrowdedAtomic(t *testing.T) {
	// Hundreds of scripts in flight at once, some never answered: the
	// search must not try taking the pending units at every read.
	spec := crowdSpec{ops: 10_000, stock: 8_000, width: 100, burst: 1000, blind: many(20, 150, 487), seed: 1}
	swap := func(h *history.History) {
		// A sale and a later one that did not overlap it trade the
		// stock they read: the counter rose.
		a := slices.IndexFunc(h.Ops, func(op history.Op) bool { return op.Write == history.Applied && op.ReadCall > 3*slot*1000 })
		b := slices.IndexFunc(h.Ops, func(op history.Op) bool {
			return op.Write == history.Applied && op.ReadCall > h.Ops[a].WriteReturn+slot
		})
		h.Ops[a].Stock, h.Ops[b].Stock = h.Ops[b].Stock, h.Ops[a].Stock
	}
	tests := []struct {
		name  string
		spoil func(*history.History)
		want  Status
	}{
		{"linearizable", nil, OK},
		{"two reads traded", swap, Illegal},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := genCrowd(spec)
			if tt.spoil != nil {
				tt.spoil(h)
			}
			lin := Check(h, Options{Timeout: 5 * time.Second}).Data.Linearizability
			if lin.Status != tt.want {
				t.Errorf("got %s (%d ops, %d segments, %v), want %s", lin.Status, lin.Ops, lin.Segments, time.Duration(lin.Elapsed), tt.want)
			}
		})
	}
}

// many returns n positions from lo, step apart.
func many(n, lo, step int) []int {
	var at []int
	for i := range n {
		at = append(at, lo+i*step)
	}
	return at
}

func countWrites(h *history.History, w history.WriteState) int {
	n := 0
	for i := range h.Ops {
		if h.Ops[i].Write == w {
			n++
		}
	}
	return n
}

func countReads(h *history.History) int {
	n := 0
	for i := range h.Ops {
		if h.Ops[i].Read() {
			n++
		}
	}
	return n
}

// crowd returns a lockless history of n buyers all in flight at once,
// each reading a different stock, called in the order that makes the
// search try every other operation before the right one.
func crowd(n int) *history.History {
	h := &history.History{Header: history.Header{
		Schema: history.SchemaVersion, Impl: "none", Lockless: true,
		Stock: int64(n), Clients: n, Duration: int64(20 * n),
	}}
	for k := range n {
		call := int64(1 + k)
		h.Ops = append(h.Ops, history.Op{
			Client: int32(k), Arrival: call, ReadCall: call, ReadReturn: call + 1,
			WriteCall: call + 2, WriteReturn: int64(10*n + k), End: int64(10*n + k),
			Stock: int64(k + 1), Write: history.Applied, Outcome: history.Sold,
		})
	}
	h.Final = history.Final{Stock: 0, Orders: int64(n)}
	return h
}

// TestCheckTimeout: a crowd of 3,000 concurrent sales, each reading a
// different stock and called in the order that makes porcupine's search
// try every other operation before the right one, is decided by the
// witnesses at once; a check given no time answers unknown, never ok.
func TestCheckTimeout(t *testing.T) {
	// porcupine agrees on a small crowd, where its search is short.
	if got := searchInventory(saleOps(crowd(40)), 40, time.Now(), time.Minute, false).Status; got != OK {
		t.Fatalf("porcupine on a crowd of 40: got %s, want ok", got)
	}
	if got := Check(crowd(3000), Options{}).Data.Linearizability.Status; got != OK {
		t.Errorf("a crowd of 3,000: got %s, want ok", got)
	}
	r := Check(crowd(3000), Options{Timeout: time.Nanosecond})
	if got := r.Data.Linearizability.Status; got != Unknown {
		t.Errorf("got linearizability %s, want unknown", got)
	}
	if r.Data.Status != Unknown || r.Pass {
		t.Errorf("got data %s, pass %v; want unknown, false", r.Data.Status, r.Pass)
	}
	want := []string{"linearizability unknown: check timed out after 1ns"}
	if !reflect.DeepEqual(r.Reasons, want) {
		t.Errorf("got reasons %q, want %q", r.Reasons, want)
	}
}

func TestCheckWithoutTimeIsNeverOK(t *testing.T) {
	// Granting blind sales and carrying states across chunks must still
	// leave a search that ran out of time undecided.
	for _, file := range []string{"ok-blind-landed.jsonl", "ok-blind-lost.jsonl", "ok-indeterminate-applied.jsonl"} {
		t.Run(file, func(t *testing.T) {
			withChunkOps(t, 1)
			if got := Check(load(t, file), Options{Timeout: time.Nanosecond}).Data.Linearizability.Status; got != Unknown {
				t.Errorf("got %s, want %s", got, Unknown)
			}
		})
	}
}

func TestVisualize(t *testing.T) {
	tests := []struct {
		file string
		err  error
		html []string // what the page must show
	}{
		{"bad-overlap.jsonl", nil, []string{
			"<html", "c0/a0 read 5 → wrote 4", "c1/a0 read 5 → wrote 4", "pause-holder node 0", "stock 5 at start",
		}},
		{"bad-indeterminate.jsonl", nil, []string{"c0/a0 read 3 → write 2 unknown", "c2/a0 read 1 → wrote 0"}},
		{"bad-blind-twice.jsonl", nil, []string{
			"c1/a0 blind sale, no answer: may take a unit later", "c2/a0 read 2 → wrote 1",
			"4 (1 blind sale may land)", "stock 4 at start",
		}},
		{"ok-sequential.jsonl", ErrNoViolation, nil},
		{"ok-indeterminate-lost.jsonl", ErrNoViolation, nil},
		{"ok-blind-landed.jsonl", ErrNoViolation, nil},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			var buf bytes.Buffer
			err := Visualize(&buf, load(t, tt.file), Options{})
			if !errors.Is(err, tt.err) {
				t.Fatalf("got error %v, want %v", err, tt.err)
			}
			if tt.err != nil && buf.Len() > 0 {
				t.Errorf("wrote %d bytes with %v", buf.Len(), err)
			}
			for _, s := range tt.html {
				if !strings.Contains(buf.String(), s) {
					t.Errorf("the page does not show %q", s)
				}
			}
		})
	}
}

// TestVisualizeFocuses: the view of a lost update in a crowd of 3,000
// concurrent sales (one segment, no quiescent point) draws the two
// operations that read the same stock, not the crowd.
func TestVisualizeFocuses(t *testing.T) {
	h := crowd(3000)
	h.Ops[2999].Stock = 17 // reads what the buyer of stock 17 read, and writes
	var buf bytes.Buffer
	if err := Visualize(&buf, h, Options{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "c2999/a0 read 17") || !strings.Contains(buf.String(), "c16/a0 read 17") {
		t.Error("the page does not show the two sales of stock 17")
	}
	if strings.Contains(buf.String(), "c1500/a0") {
		t.Error("the page draws sales of other stocks")
	}
}

func TestVisualizePinsTheNextSegment(t *testing.T) {
	// Cut into chunks of one segment, the unanswered write's chunk ends
	// with the stock the next chunk starts from; an impossible one is
	// drawn as such.
	withChunkOps(t, 1)
	focusViews = false
	t.Cleanup(func() { focusViews = true })
	h := load(t, "ok-indeterminate-applied.jsonl")
	h.Ops[3].Stock = 1 // the last buyer reads a unit that was sold
	var buf bytes.Buffer
	if err := Visualize(&buf, h, Options{}); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"next segment starts at 1", "stock 2 at start"} {
		if !strings.Contains(buf.String(), s) {
			t.Errorf("the page does not show %q", s)
		}
	}
}

func TestInventoryModelStep(t *testing.T) {
	read := func(stock int64, w history.WriteState) *sale { return &sale{stock: stock, write: w} }
	blindSale := &sale{stock: history.NoStock, write: history.Indeterminate}
	tests := []struct {
		name  string
		from  counter
		in    *sale
		wants []counter // nil: illegal
	}{
		{"a read of the stock", counter{5, 0}, read(5, history.NoWrite), []counter{{5, 0}}},
		{"an applied write", counter{5, 0}, read(5, history.Applied), []counter{{4, 0}}},
		{"a refused write", counter{5, 0}, read(5, history.Refused), []counter{{5, 0}}},
		{"an unanswered write", counter{5, 0}, read(5, history.Indeterminate), []counter{{5, 0}, {4, 0}}},
		{"a read below the stock", counter{5, 0}, read(4, history.NoWrite), nil},
		{"a read above the stock", counter{5, 1}, read(6, history.NoWrite), nil},
		{"a blind sale is granted", counter{5, 0}, blindSale, []counter{{5, 1}}},
		{"a blind sale at zero is granted too", counter{0, 0}, blindSale, []counter{{0, 1}}},
		{"a read takes a pending unit", counter{5, 1}, read(4, history.Applied), []counter{{3, 0}}},
		{"or leaves it pending", counter{5, 1}, read(5, history.NoWrite), []counter{{5, 1}}},
		{"a read takes several", counter{5, 3}, read(3, history.NoWrite), []counter{{3, 1}}},
		{"but not more than pending", counter{5, 1}, read(3, history.NoWrite), nil},
		{"a blind sale takes the last unit", counter{1, 1}, read(0, history.NoWrite), []counter{{0, 0}}},
		{"but never one at zero", counter{0, 2}, read(-1, history.NoWrite), nil},
		{"nor below zero", counter{-1, 2}, read(-2, history.NoWrite), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := inventoryModel([]counter{tt.from}, nil)
			ok, got := m.Step(m.Init(), tt.in, nil)
			if !ok {
				got = []any(nil)
			}
			var want []any
			for _, c := range tt.wants {
				want = append(want, c)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("from %+v: got %v, want %v", tt.from, got, want)
			}
		})
	}
}

func TestSegmentsJoinBlindSales(t *testing.T) {
	// A blind sale alone in a quiet moment joins the next segment, or the
	// one before it at the end: every segment but a lone one reads.
	op := func(call int64, blind bool) saleOp {
		in := &sale{stock: 1}
		if blind {
			in.stock = history.NoStock
		}
		return saleOp{in: in, call: call, ret: call + 1, split: call + 1}
	}
	tests := []struct {
		name string
		ops  []saleOp
		want []int
	}{
		{"reads only", []saleOp{op(10, false), op(20, false), op(30, false)}, []int{0, 1, 2}},
		{"a blind sale between reads", []saleOp{op(10, false), op(20, true), op(30, false)}, []int{0, 1}},
		{"blind sales first", []saleOp{op(10, true), op(20, true), op(30, false), op(40, false)}, []int{0, 3}},
		{"a blind sale last", []saleOp{op(10, false), op(20, false), op(30, true)}, []int{0, 1}},
		{"blind sales only", []saleOp{op(10, true), op(20, true)}, []int{0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := segments(tt.ops); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestFormat(t *testing.T) {
	for _, tt := range []struct {
		from, to     int64
		wantF, wantT string
	}{
		{1_204_000_000, 1_210_000_000, "1.204s", "1.210s"},
		{1_204_000_100, 1_204_000_900, "1.204000s", "1.204001s"},
	} {
		if f, to := span(tt.from, tt.to); f != tt.wantF || to != tt.wantT {
			t.Errorf("span(%d, %d) = %s, %s; want %s, %s", tt.from, tt.to, f, to, tt.wantF, tt.wantT)
		}
	}
}

// mix says what a random sale holds besides reads and applied writes.
type mix struct {
	// unanswered adds writes that read and got no answer; blind adds
	// blind sales.
	unanswered, blind bool
}

// randomSale returns a small lockless history: operations at random
// intervals (some open-ended) that read and write a counter at a random
// point inside their interval (blind sales only write, if there is a
// unit), with a read or a write outcome sometimes garbled so that about
// half the histories are not linearizable.
func randomSale(rng *rand.Rand, m mix) *history.History {
	n := 3 + rng.IntN(10)
	type point struct {
		at int64
		op int
	}
	h := &history.History{Header: history.Header{
		Schema: history.SchemaVersion, Impl: "none", Lockless: true, Stock: int64(n / 2), Duration: 1000,
	}}
	points := make([]point, n)
	for i := range n {
		call := 1 + rng.Int64N(100)
		ret := call + rng.Int64N(20)
		op := history.Op{
			Client: int32(i), Arrival: call, ReadCall: call, ReadReturn: ret,
			Write: history.NoWrite, Outcome: history.SoldOut,
		}
		switch kind := rng.IntN(5); {
		case kind <= 1:
			op.Write, op.WriteCall, op.WriteReturn, op.Outcome = history.Applied, call, ret, history.Sold
		case kind == 2 && m.unanswered:
			op.Write, op.WriteCall, op.Outcome = history.Indeterminate, call, history.Unknown
			ret = call + rng.Int64N(200) // when it lands, if it does
		case kind == 3 && m.blind:
			op.Write, op.WriteCall, op.ReadReturn, op.Outcome = history.Indeterminate, call, 0, history.Unknown
			ret = call + rng.Int64N(200)
		}
		h.Ops = append(h.Ops, op)
		points[i] = point{call + rng.Int64N(ret-call+1), i}
	}
	slices.SortFunc(points, func(a, b point) int { return cmp.Compare(a.at, b.at) })
	stock := h.Header.Stock
	var read []int
	for _, p := range points {
		op := &h.Ops[p.op]
		if op.Write == history.Indeterminate && op.ReadReturn == 0 {
			op.Stock = history.NoStock
			if stock > 0 && rng.IntN(2) == 0 {
				stock--
			}
			continue
		}
		read = append(read, p.op)
		op.Stock = stock
		switch {
		case op.Write == history.Applied && stock > 0, op.Write == history.Indeterminate && rng.IntN(2) == 0:
			stock--
		case op.Write == history.Applied:
			op.Write, op.WriteReturn, op.Outcome = history.NoWrite, 0, history.SoldOut
		}
	}
	if len(read) == 0 {
		return h
	}
	switch rng.IntN(4) {
	case 0:
		h.Ops[read[rng.IntN(len(read))]].Stock += int64(1 - 2*rng.IntN(2))
	case 1:
		op := &h.Ops[read[rng.IntN(len(read))]]
		if op.Write == history.NoWrite {
			op.Write, op.WriteReturn = history.Applied, op.ReadReturn
		}
	}
	return h
}

// literalModel is the inventory's specification taken literally, the
// oracle the chunked check is held to: an operation that read s needs the
// counter at s, and a blind sale takes a unit or not, if there is one.
func literalModel(start int64) porcupine.Model {
	nm := porcupine.NondeterministicModel{
		Init: func() []any { return []any{start} },
		Step: func(state, input, _ any) []any {
			s, op := state.(int64), input.(*history.Op)
			switch {
			case isBlind(op) && s > 0:
				return []any{s, s - 1}
			case isBlind(op):
				return []any{s}
			case s != op.Stock:
				return nil
			}
			switch op.Write {
			case history.Applied:
				return []any{s - 1}
			case history.NoWrite, history.Refused:
				return []any{s}
			}
			return []any{s, s - 1}
		},
	}
	return nm.ToModel()
}

func TestChunkingAgreesWithOneSearch(t *testing.T) {
	// Splitting at quiescent points, bounding open-ended writes, granting
	// blind sales at their call and pinning chunk ends must not change
	// the answer of one porcupine search over the whole history, with
	// every unanswered operation open-ended.
	tests := []struct {
		name string
		mix  mix
		seed uint64
	}{
		{"unanswered writes", mix{unanswered: true}, 7},
		{"blind sales", mix{blind: true}, 8},
		{"both", mix{unanswered: true, blind: true}, 9},
	}
	for _, tt := range tests {
		for _, size := range []int{1, 3} {
			t.Run(fmt.Sprintf("%s/chunks of %d", tt.name, size), func(t *testing.T) {
				withChunkOps(t, size)
				rng := rand.New(rand.NewPCG(tt.seed, 7))
				counts := map[bool]int{}
				for i := range 3000 {
					h := randomSale(rng, tt.mix)
					var whole []porcupine.Operation
					for j := range h.Ops {
						op := &h.Ops[j]
						whole = append(whole, porcupine.Operation{Input: op, Call: op.ReadCall, Return: returnOf(op)})
					}
					want := porcupine.CheckOperations(literalModel(h.Header.Stock), whole)
					counts[want]++
					got := checkInventory(h, time.Minute, false)
					if (got.Status == OK) != want || got.Status == Unknown {
						var buf bytes.Buffer
						history.Write(&buf, h)
						t.Fatalf("history %d: got %s, one search says linearizable=%v (%d segments)\n%s", i, got.Status, want, got.Segments, buf.String())
					}
				}
				if counts[true] < 500 || counts[false] < 500 {
					t.Errorf("too few of a kind: %d linearizable, %d not", counts[true], counts[false])
				}
			})
		}
	}
}

func TestCheckNothingRead(t *testing.T) {
	// Everyone gave up on a lock nobody released: nothing to linearize,
	// and the unsold stock says why.
	h := load(t, "bad-unsold.jsonl")
	h.Ops = slices.DeleteFunc(h.Ops, func(op history.Op) bool { return op.Read() })
	r := Check(h, Options{})
	lin := r.Data.Linearizability
	if lin.Status != OK || lin.Ops != 0 || lin.Segments != 0 {
		t.Errorf("got %+v, want ok with no operations", lin)
	}
	if r.Pass || r.Liveness.Unsold != 4 {
		t.Errorf("got pass %v, unsold %d; want false, 4", r.Pass, r.Liveness.Unsold)
	}
	var buf bytes.Buffer
	if err := Visualize(&buf, h, Options{}); !errors.Is(err, ErrNoViolation) {
		t.Errorf("Visualize: got %v, want %v", err, ErrNoViolation)
	}
}

// TestMaximalNeverCarriesUntriedEnds: once the budget of end pins tried is spent, the
// ends left are unconfirmed, so the answer is Unknown, never OK with ends
// that may be unreachable (a later chunk linearized from one could hide a
// violation).
func TestMaximalNeverCarriesUntriedEnds(t *testing.T) {
	tests := []struct {
		name   string
		stocks int // distinct stocks, one end each
		okAt   int // the only end whose try succeeds; -1 for none
		want   Status
		wantN  int // ends kept
	}{
		{name: "one confirmed within the budget", stocks: 3, okAt: 1, want: OK, wantN: 1},
		{name: "every stock confirmed", stocks: 4, okAt: -2, want: OK, wantN: 4},
		{name: "none confirmed", stocks: 3, okAt: -1, want: Unknown},
		{name: "budget spent before any is confirmed", stocks: maxPinTries + 5, okAt: maxPinTries + 2, want: Unknown},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var ends []counter
			for s := range tt.stocks {
				ends = append(ends, counter{stock: int64(s), pending: 1})
			}
			tried := 0
			got, st := maximal(ends, func(e counter) Status {
				tried++
				if tt.okAt == -2 || int(e.stock) == tt.okAt {
					return OK
				}
				return Illegal
			})
			if st != tt.want || len(got) != tt.wantN {
				t.Errorf("maximal: status %v with %d ends, want %v with %d", st, len(got), tt.want, tt.wantN)
			}
			if tried > maxPinTries {
				t.Errorf("tried %d ends, more than the budget %d", tried, maxPinTries)
			}
		})
	}
}
