package checker

import (
	"bytes"
	"cmp"
	"errors"
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
	Overlaps      int
	Live          Status
	GaveUp        int
	Unsold        int64
	Reasons       []string
	Notes         []string
}

func summarize(r Report) summary {
	return summary{
		Pass: r.Pass, Data: r.Data.Status, Lin: r.Data.Linearizability.Status,
		Segments: r.Data.Linearizability.Segments, FirstIllegal: r.Data.Linearizability.FirstIllegal,
		Oversold: r.Data.Oversold, Indeterminate: r.Data.Indeterminate,
		Lock: r.Lock.Status, Overlaps: r.Lock.Overlaps,
		Live: r.Liveness.Status, GaveUp: r.Liveness.GaveUp, Unsold: r.Liveness.Unsold,
		Reasons: r.Reasons, Notes: r.Notes,
	}
}

const fencingNote = "mutual exclusion broken: 1 overlapping critical section (the store's fencing decides data safety)"

const unknownNote = "1 write had an unknown outcome; the check let each land at any later time or never"

func TestCheckFixtures(t *testing.T) {
	tests := []struct {
		file string
		want summary
	}{
		{"ok-sequential.jsonl", summary{
			Pass: true, Data: OK, Lin: OK, Segments: 7, Lock: OK, Live: OK, GaveUp: 1,
		}},
		{"bad-overlap.jsonl", summary{
			Data: Violated, Lin: Illegal, Segments: 2, FirstIllegal: &Window{12 * ms, 41 * ms},
			Oversold: 1, Lock: Violated, Overlaps: 1, Live: OK,
			Reasons: []string{
				"inventory history not linearizable (first violation between 0.012s and 0.041s)",
				"oversold 1 unit (orders 3, stock 5)",
				"mutual exclusion broken: 1 overlapping critical section",
			},
		}},
		{"ok-segments.jsonl", summary{
			Pass: true, Data: OK, Lin: OK, Segments: 4, Lock: NotApplicable, Live: OK,
		}},
		{"ok-indeterminate-applied.jsonl", summary{
			Pass: true, Data: OK, Lin: OK, Segments: 3, Indeterminate: 1, Lock: OK, Live: OK, GaveUp: 1,
			Notes: []string{unknownNote},
		}},
		{"ok-indeterminate-lost.jsonl", summary{
			Pass: true, Data: OK, Lin: OK, Segments: 3, Indeterminate: 1, Lock: OK, Live: OK, GaveUp: 1,
			Notes: []string{unknownNote},
		}},
		{"bad-indeterminate.jsonl", summary{
			Data: Violated, Lin: Illegal, Segments: 1, FirstIllegal: &Window{12 * ms, 35 * ms},
			Indeterminate: 1, Lock: OK, Live: OK, GaveUp: 1,
			Reasons: []string{"inventory history not linearizable (first violation between 0.012s and 0.035s)"},
		}},
		{"ok-fenced-refused.jsonl", summary{
			Pass: true, Data: OK, Lin: OK, Segments: 2, Lock: Violated, Overlaps: 1, Live: OK,
			Notes: []string{fencingNote},
		}},
		{"bad-fenced-applied.jsonl", summary{
			Data: Violated, Lin: Illegal, Segments: 2, FirstIllegal: &Window{12 * ms, 41 * ms},
			Oversold: 1, Lock: Violated, Overlaps: 1, Live: OK,
			Reasons: []string{
				"inventory history not linearizable (first violation between 0.012s and 0.041s)",
				"oversold 1 unit (orders 3, stock 5)",
			},
			Notes: []string{fencingNote},
		}},
		{"bad-oversell.jsonl", summary{
			Data: Violated, Lin: Illegal, Segments: 2, FirstIllegal: &Window{10 * ms, 21 * ms},
			Oversold: 3, Lock: NotApplicable, Live: OK,
			Reasons: []string{
				"inventory history not linearizable (first violation between 0.010s and 0.021s)",
				"oversold 3 units (orders 5, stock 3)",
			},
		}},
		{"bad-duplicate.jsonl", summary{
			Data: Violated, Lin: OK, Segments: 3, Lock: OK, Live: OK,
			Reasons: []string{"1 user got two orders"},
		}},
		{"bad-unsold.jsonl", summary{
			Data: OK, Lin: OK, Segments: 2, Lock: OK, Live: Violated, GaveUp: 3, Unsold: 4,
			Reasons: []string{"liveness: 4 units unsold while 3 buyers gave up"},
		}},
		{"bad-cut-short.jsonl", summary{
			Data: OK, Lin: OK, Segments: 2, Indeterminate: 1, Lock: OK, Live: Violated, GaveUp: 1, Unsold: 1,
			Reasons: []string{
				"liveness: 1 unit unsold while 1 buyer gave up",
				"run cut short by --timeout or interrupt",
			},
			Notes: []string{unknownNote},
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
	tests := []struct {
		name   string
		ops    []history.Op
		stock  int64
		gaveUp int
		unsold int64
	}{
		{"a later attempt that bought", []history.Op{op(0, 1, history.Sold), op(0, 0, history.GaveUp)}, 3, 0, 0},
		{"a later attempt that gave up", []history.Op{op(0, 0, history.Sold), op(0, 1, history.GaveUp)}, 3, 1, 3},
		{"every way of giving up", []history.Op{
			op(0, 0, history.GaveUp), op(1, 0, history.Failed), op(2, 0, history.Pending), op(3, 0, history.Unknown),
		}, 1, 4, 1},
		{"answers on the stock are not giving up", []history.Op{
			op(0, 0, history.Sold), op(1, 0, history.SoldOut), op(2, 0, history.Duplicate),
			op(3, 0, history.Rejected), op(4, 0, history.Crashed),
		}, 2, 0, 0},
		{"nothing left to sell", []history.Op{op(0, 0, history.GaveUp)}, 0, 1, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := checkLiveness(&history.History{Final: history.Final{Stock: tt.stock}, Ops: tt.ops})
			if got.GaveUp != tt.gaveUp || got.Unsold != tt.unsold {
				t.Errorf("got gave up %d, unsold %d; want %d, %d", got.GaveUp, got.Unsold, tt.gaveUp, tt.unsold)
			}
			if want := tt.unsold > 0; (got.Status == Violated) != want {
				t.Errorf("got status %s with %d unsold", got.Status, got.Unsold)
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
	}
	for _, n := range []int{chunkOps, 1} {
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				withChunkOps(t, n)
				h := genSale(tt.spec)
				if got := countWrites(h, history.Indeterminate); got != len(tt.spec.indeterminate) {
					t.Fatalf("generated %d unanswered writes, want %d", got, len(tt.spec.indeterminate))
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
				if tt.spec.groups == 0 && len(tt.spec.indeterminate) == 0 && lin.Segments != countReads(h) {
					t.Errorf("got %d segments of a sequential sale of %d reads", lin.Segments, countReads(h))
				}
			})
		}
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

func TestCheckTimeout(t *testing.T) {
	// The small crowd shows the history is legal, so the only answers
	// for the large one are ok and unknown.
	if got := Check(crowd(40), Options{}).Data.Linearizability.Status; got != OK {
		t.Fatalf("a crowd of 40: got %s, want ok", got)
	}
	r := Check(crowd(3000), Options{Timeout: time.Millisecond})
	if got := r.Data.Linearizability.Status; got != Unknown {
		t.Errorf("got linearizability %s, want unknown", got)
	}
	if r.Data.Status != Unknown || r.Pass {
		t.Errorf("got data %s, pass %v; want unknown, false", r.Data.Status, r.Pass)
	}
	want := []string{"linearizability unknown: check timed out after 1ms"}
	if !reflect.DeepEqual(r.Reasons, want) {
		t.Errorf("got reasons %q, want %q", r.Reasons, want)
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
		{"ok-sequential.jsonl", ErrNoViolation, nil},
		{"ok-indeterminate-lost.jsonl", ErrNoViolation, nil},
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

func TestVisualizePinsTheNextSegment(t *testing.T) {
	// Cut into chunks of one segment, the unanswered write's chunk ends
	// with the stock the next chunk starts from; an impossible one is
	// drawn as such.
	withChunkOps(t, 1)
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

func TestFormat(t *testing.T) {
	for _, tt := range []struct {
		n    int64
		want string
	}{{0, "0"}, {999, "999"}, {1000, "1,000"}, {1234567, "1,234,567"}, {-5000, "-5,000"}} {
		if got := commas(tt.n); got != tt.want {
			t.Errorf("commas(%d) = %q, want %q", tt.n, got, tt.want)
		}
	}
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

// randomSale returns a small lockless history: operations at random
// intervals (some open-ended) that read and write a counter at a random
// point inside their interval, with a read or a write outcome sometimes
// garbled so that about half the histories are not linearizable.
func randomSale(rng *rand.Rand) *history.History {
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
		switch rng.IntN(4) {
		case 0, 1:
			op.Write, op.WriteCall, op.WriteReturn, op.Outcome = history.Applied, call, ret, history.Sold
		case 2:
			op.Write, op.WriteCall, op.Outcome = history.Indeterminate, call, history.Unknown
			ret = call + rng.Int64N(200) // when it lands, if it does
		}
		h.Ops = append(h.Ops, op)
		points[i] = point{call + rng.Int64N(ret-call+1), i}
	}
	slices.SortFunc(points, func(a, b point) int { return cmp.Compare(a.at, b.at) })
	stock := h.Header.Stock
	for _, p := range points {
		op := &h.Ops[p.op]
		op.Stock = stock
		switch {
		case op.Write == history.Applied && stock > 0, op.Write == history.Indeterminate && rng.IntN(2) == 0:
			stock--
		case op.Write == history.Applied:
			op.Write, op.WriteReturn, op.Outcome = history.NoWrite, 0, history.SoldOut
		}
	}
	switch rng.IntN(4) {
	case 0:
		h.Ops[rng.IntN(n)].Stock += int64(1 - 2*rng.IntN(2))
	case 1:
		op := &h.Ops[rng.IntN(n)]
		if op.Write == history.NoWrite {
			op.Write, op.WriteReturn = history.Applied, op.ReadReturn
		}
	}
	return h
}

func TestChunkingAgreesWithOneSearch(t *testing.T) {
	// Splitting at quiescent points, bounding open-ended writes and
	// pinning chunk ends must not change the answer of one porcupine
	// search over the whole history.
	withChunkOps(t, 1)
	rng := rand.New(rand.NewPCG(7, 7))
	counts := map[bool]int{}
	for i := range 3000 {
		h := randomSale(rng)
		var whole []porcupine.Operation
		for j := range h.Ops {
			op := &h.Ops[j]
			in := &sale{index: j, stock: op.Stock, write: op.Write}
			whole = append(whole, porcupine.Operation{Input: in, Call: op.ReadCall, Return: returnOf(op)})
		}
		want := porcupine.CheckOperations(inventoryModel(h.Header.Stock), whole)
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
