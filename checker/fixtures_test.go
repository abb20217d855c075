package checker

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/lockbench/lockbench/history"
)

var update = flag.Bool("update", false, "rewrite the fixtures in testdata/")

// ms is the time unit of the hand-built fixtures: each step of an attempt
// takes a millisecond, so windows read as whole milliseconds.
const ms = int64(time.Millisecond)

// header returns the header of a small fixture run.
func header(impl string, stock int64, clients int) history.Header {
	return history.Header{
		Schema: history.SchemaVersion, Impl: impl, Backend: "fixture",
		Nodes: 2, Clients: clients, Stock: stock, Attempts: 2,
		Duration: 100 * ms,
	}
}

// sold is a lock-protected attempt at t ms that read stock and wrote
// stock-1.
func sold(client int32, t, stock int64) history.Op {
	return attempt(client, 0, t*ms, ms, stock, history.Applied, history.Sold)
}

// soldOut is a lock-protected attempt at t ms that read zero.
func soldOut(client int32, t int64) history.Op {
	return attempt(client, 0, t*ms, ms, 0, history.NoWrite, history.SoldOut)
}

// unanswered is a lock-protected attempt at t ms whose write got no answer.
func unanswered(client int32, t, stock int64) history.Op {
	return attempt(client, 0, t*ms, ms, stock, history.Indeterminate, history.Unknown)
}

// stale is an attempt that took the lock at 11 ms, read stock at 12-13 ms,
// was paused past its lease, and wrote at 40-41 ms: the write is answered
// w, and the lock released at 42 ms. The next owner (sold at 20) takes the
// expired lock at 21 ms and buys at 22-25 ms.
func stale(client int32, stock int64, token uint64, w history.WriteState, out history.Outcome) history.Op {
	op := attempt(client, 0, 10*ms, ms, stock, w, out)
	op.WriteCall, op.WriteReturn = 40*ms, 41*ms
	op.ReleaseCall, op.Released, op.End = 42*ms, 43*ms, 44*ms
	op.Token = token
	return op
}

// lockless is an attempt without a lock that read stock over
// [call, call+1] ms and wrote until ret ms (or answered then, without
// writing, when w is NoWrite).
func lockless(client int32, call, ret, stock int64, w history.WriteState, out history.Outcome) history.Op {
	op := history.Op{
		Client: client, Arrival: call * ms, Start: call * ms,
		ReadCall: call * ms, ReadReturn: (call + 1) * ms, End: ret * ms,
		Stock: stock, Write: w, Outcome: out,
	}
	if w == history.NoWrite {
		op.ReadReturn = ret * ms
	} else {
		op.WriteCall, op.WriteReturn = (call+1)*ms, ret*ms
	}
	return op
}

// atomicSale is an attempt of the lock-free atomic implementation: one
// script that read stock over [call, ret] ms and sold a unit if there was
// one.
func atomicSale(client int32, call, ret, stock int64) history.Op {
	op := history.Op{
		Client: client, Arrival: call * ms, Start: call * ms,
		ReadCall: call * ms, ReadReturn: ret * ms, End: ret * ms,
		Stock: stock, Write: history.NoWrite, Outcome: history.SoldOut,
	}
	if stock > 0 {
		op.Write, op.Outcome = history.Applied, history.Sold
		op.WriteCall, op.WriteReturn = op.ReadCall, op.ReadReturn
	}
	return op
}

// blind is an attempt of the atomic implementation whose script was sent
// at call ms and never answered (the buyer timed out 5 ms later): it may
// have sold a unit at any later time, and it read nothing the buyer saw.
func blind(client int32, call int64) history.Op {
	return history.Op{
		Client: client, Arrival: call * ms, Start: call * ms,
		ReadCall: call * ms, WriteCall: call * ms, End: (call + 5) * ms,
		Stock: history.NoStock, Write: history.Indeterminate, Outcome: history.Unknown,
	}
}

// unread is a purchase from a service under test that answered out over
// [call, ret] ms without saying which stock it read.
func unread(client int32, call, ret int64, out history.Outcome) history.Op {
	op := history.Op{
		Client: client, Node: int16(client % 2), Arrival: call * ms, Start: call * ms,
		ReadCall: call * ms, ReadReturn: ret * ms, End: ret * ms,
		Stock: history.NoStock, Write: history.NoWrite, Outcome: out,
	}
	if out == history.Sold {
		op.Write, op.WriteCall, op.WriteReturn = history.Applied, op.ReadCall, op.ReadReturn
	}
	return op
}

// serviceRun is a history of a service under test that did not say which
// stock its purchases read.
func serviceRun(stock int64, final history.Final, ops ...history.Op) *history.History {
	h := &history.History{Header: header("service", stock, len(ops)), Final: final, Ops: ops}
	h.Header.Lockless, h.Header.Unread = true, true
	return h
}

// atomicRun is a history of the atomic implementation.
func atomicRun(stock int64, final history.Final, ops ...history.Op) *history.History {
	h := &history.History{Header: header("atomic", stock, len(ops)), Final: final, Ops: ops}
	h.Header.Lockless = true
	return h
}

// fixtures builds the histories in testdata/, by file name. The files are
// the tests' input; these builders only say how they were made.
var fixtures = map[string]func() *history.History{
	// A sale guarded by a working lock: five units sold one after the
	// other, two buyers too late, one who gave up on the busy lock.
	"ok-sequential.jsonl": func() *history.History {
		return &history.History{
			Header: header("lua", 5, 8),
			Final:  history.Final{Stock: 0, Orders: 5},
			Ops: []history.Op{
				sold(0, 10, 5), gaveUp(7, 0, 15*ms, ms, history.GaveUp),
				sold(1, 20, 4), sold(2, 30, 3), sold(3, 40, 2), sold(4, 50, 1),
				soldOut(5, 60), soldOut(6, 70),
			},
		}
	},
	// A holder paused past its lease: a second owner takes the lock, both
	// read 5 and both write 4, one unit is sold twice.
	"bad-overlap.jsonl": func() *history.History {
		return &history.History{
			Header: header("set-nx-ex", 5, 3),
			Final:  history.Final{Stock: 3, Orders: 3},
			Faults: []history.Fault{{Name: "pause-holder", Node: 0, Client: -1, Start: 14 * ms, End: 39 * ms, Params: "for=25ms"}},
			Ops: []history.Op{
				stale(0, 5, 0, history.Applied, history.Sold), sold(1, 20, 5), sold(2, 50, 4),
			},
		}
	},
	// A lockless atomic sale with concurrent buyers, quiet between four
	// bursts.
	"ok-segments.jsonl": func() *history.History {
		h := &history.History{
			Header: header("atomic", 5, 7),
			Final:  history.Final{Stock: 0, Orders: 5},
			Ops: []history.Op{
				lockless(0, 10, 40, 5, history.Applied, history.Sold),
				lockless(1, 20, 50, 4, history.Applied, history.Sold),
				lockless(2, 60, 90, 3, history.Applied, history.Sold),
				lockless(3, 70, 80, 2, history.Applied, history.Sold),
				lockless(4, 100, 110, 1, history.Applied, history.Sold),
				lockless(5, 120, 130, 0, history.NoWrite, history.SoldOut),
				lockless(6, 125, 140, 0, history.NoWrite, history.SoldOut),
			},
		}
		h.Header.Lockless = true
		h.Header.Duration = 150 * ms
		return h
	},
	// A write without an answer that did land: the next buyer reads 1.
	"ok-indeterminate-applied.jsonl": func() *history.History {
		return &history.History{
			Header: header("lua", 3, 4),
			Final:  history.Final{Stock: 0, Orders: 3},
			Ops:    []history.Op{sold(0, 10, 3), unanswered(1, 20, 2), sold(2, 30, 1), soldOut(3, 40)},
		}
	},
	// A write without an answer that never landed: the next buyer reads
	// 2 again.
	"ok-indeterminate-lost.jsonl": func() *history.History {
		return &history.History{
			Header: header("lua", 3, 5),
			Final:  history.Final{Stock: 0, Orders: 3},
			Ops: []history.Op{
				sold(0, 10, 3), unanswered(1, 20, 2), sold(2, 30, 2), sold(3, 40, 1), soldOut(4, 50),
			},
		}
	},
	// A write without an answer cannot explain the reads after it:
	// landing or not, nobody could read 1 right after 3 was written down
	// to 2.
	"bad-indeterminate.jsonl": func() *history.History {
		return &history.History{
			Header: header("lua", 3, 3),
			Final:  history.Final{Stock: 0, Orders: 3},
			Ops:    []history.Op{unanswered(0, 10, 3), sold(1, 20, 3), sold(2, 30, 1)},
		}
	},
	// The fenced store refuses the paused holder's stale write: the lock
	// overlapped, the data did not suffer.
	"ok-fenced-refused.jsonl": func() *history.History {
		return fenced(history.Refused, history.Rejected, 2)
	},
	// The same, with a store that let the stale write through.
	"bad-fenced-applied.jsonl": func() *history.History {
		return fenced(history.Applied, history.Sold, 3)
	},
	// No lock at all: five buyers race for three units.
	"bad-oversell.jsonl": func() *history.History {
		h := &history.History{
			Header: header("none", 3, 5),
			Final:  history.Final{Stock: 1, Orders: 5},
			Ops: []history.Op{
				lockless(0, 10, 20, 3, history.Applied, history.Sold),
				lockless(1, 11, 21, 3, history.Applied, history.Sold),
				lockless(2, 22, 30, 2, history.Applied, history.Sold),
				lockless(3, 23, 31, 2, history.Applied, history.Sold),
				lockless(4, 24, 32, 1, history.Applied, history.Sold),
			},
		}
		h.Header.Lockless = true
		return h
	},
	// One buyer bought twice: the one-order-per-user check let it through.
	"bad-duplicate.jsonl": func() *history.History {
		again := attempt(0, 1, 30*ms, ms, 3, history.Applied, history.Sold)
		return &history.History{
			Header: header("lua", 5, 2),
			Final:  history.Final{Stock: 2, Orders: 3, DuplicateUsers: []int32{0}, DuplicateOrders: 1},
			Ops:    []history.Op{sold(0, 10, 5), sold(1, 20, 4), again},
		}
	},
	// A planted edit: user 0's purchase applied twice in the history,
	// while the final state shows one order each (the store's count of
	// orders agrees with the stock). The history alone shows the
	// duplicate.
	"bad-sold-twice.jsonl": func() *history.History {
		again := attempt(0, 1, 30*ms, ms, 3, history.Applied, history.Sold)
		return &history.History{
			Header: header("lua", 5, 2),
			Final:  history.Final{Stock: 2, Orders: 3},
			Ops:    []history.Op{sold(0, 10, 5), sold(1, 20, 4), again},
		}
	},
	// A lock without expiry whose holder crashed: everyone after gives up
	// with four units left.
	"bad-unsold.jsonl": func() *history.History {
		crashed := attempt(1, 0, 20*ms, ms, 4, history.NoWrite, history.Crashed)
		crashed.ReleaseCall, crashed.Released, crashed.End = 0, 0, 0
		crashed.Crash = 24 * ms
		return &history.History{
			Header: header("setnx", 5, 5),
			Final:  history.Final{Stock: 4, Orders: 1},
			Faults: []history.Fault{{Name: "crash-holder", Node: 1, Client: 1, Start: 24 * ms}},
			Ops: []history.Op{
				sold(0, 10, 5), crashed,
				gaveUp(2, 0, 30*ms, ms, history.GaveUp), gaveUp(3, 0, 40*ms, ms, history.GaveUp),
				gaveUp(4, 0, 50*ms, ms, history.GaveUp),
			},
		}
	},
	// The atomic script of buyer 1 got no answer, and it did sell: the
	// reads after it go one lower than the answered sales explain, and
	// only after buyer 2's, so it landed long after it was sent.
	"ok-blind-landed.jsonl": func() *history.History {
		return atomicRun(4, history.Final{Stock: 0, Orders: 4},
			atomicSale(0, 10, 12, 4), blind(1, 20), atomicSale(2, 30, 32, 3),
			atomicSale(3, 40, 42, 1), atomicSale(4, 50, 52, 0))
	},
	// The same unanswered script never ran: the reads after it go down one
	// sale at a time.
	"ok-blind-lost.jsonl": func() *history.History {
		return atomicRun(3, history.Final{Stock: 0, Orders: 3},
			atomicSale(0, 10, 12, 3), blind(1, 20), atomicSale(2, 30, 32, 2),
			atomicSale(3, 40, 42, 1), atomicSale(4, 50, 52, 0))
	},
	// One unanswered script cannot explain two missing units.
	"bad-blind-twice.jsonl": func() *history.History {
		return atomicRun(5, history.Final{Stock: 0, Orders: 4},
			atomicSale(0, 10, 12, 5), blind(1, 20), atomicSale(2, 30, 32, 2),
			atomicSale(3, 40, 42, 1))
	},
	// An unanswered script may explain a read of 1 right after 3 was sold
	// down to 2, but nothing explains a read of 1 after one of 0.
	"bad-blind-rise.jsonl": func() *history.History {
		again := atomicSale(4, 50, 52, 1)
		again.Write, again.WriteCall, again.WriteReturn, again.Outcome = history.NoWrite, 0, 0, history.Duplicate
		return atomicRun(3, history.Final{Stock: 0, Orders: 3},
			atomicSale(0, 10, 12, 3), blind(1, 20), atomicSale(2, 30, 32, 1),
			atomicSale(3, 40, 42, 0), again)
	},
	// An unanswered script sent when the stock was gone cannot sell: a
	// script that sold at zero (a broken check) shows as a read of -1.
	"bad-blind-at-zero.jsonl": func() *history.History {
		return atomicRun(1, history.Final{Stock: -1, Orders: 2},
			atomicSale(0, 10, 12, 1), atomicSale(2, 15, 17, 0), blind(1, 20), atomicSale(3, 30, 32, -1))
	},
	// A planted bug: a lock-free sale answers "sold out" to a buyer who
	// read the last unit. The counter's history is fine; the answer is not.
	"bad-sold-out-left.jsonl": func() *history.History {
		left := atomicSale(1, 20, 22, 1)
		left.Write, left.WriteCall, left.WriteReturn, left.Outcome = history.NoWrite, 0, 0, history.SoldOut
		return atomicRun(2, history.Final{Stock: 1, Orders: 1}, atomicSale(0, 10, 12, 2), left)
	},
	// A planted bug: a sale that read 0 and still wrote -1.
	"bad-sold-at-zero.jsonl": func() *history.History {
		return &history.History{
			Header: header("lua", 1, 2),
			Final:  history.Final{Stock: -1, Orders: 2},
			Ops:    []history.Op{sold(0, 10, 1), sold(1, 20, 0)},
		}
	},
	// A planted bug: a fenced store that refuses every write, with no
	// newer token anywhere near. Nothing sold, nothing unsafe.
	"bad-refuse-all.jsonl": func() *history.History {
		var ops []history.Op
		for c := range int32(3) {
			for a := range int16(2) {
				op := attempt(c, a, int64(10+20*int(c)+10*int(a))*ms, ms, 3, history.Refused, history.Rejected)
				op.Token = uint64(1 + 2*int(c) + int(a))
				ops = append(ops, op)
			}
		}
		h := &history.History{Header: header("fenced", 3, 3), Final: history.Final{Stock: 3}, Ops: ops}
		h.Header.Fenced = true
		return h
	},
	// A holder whose lease lapsed while it wrote: its release found the
	// lock gone. Nobody else came in, so nothing broke; it is reported.
	"ok-lost-release.jsonl": func() *history.History {
		late := sold(1, 20, 1)
		late.Lost = true
		return &history.History{
			Header: header("lua", 2, 3),
			Final:  history.Final{Stock: 0, Orders: 2},
			Ops:    []history.Op{sold(0, 10, 2), late, soldOut(2, 30)},
		}
	},
	// A service that answers "sold out" to everyone without saying what
	// it read, while its state says three units are left: the stock
	// never rises, so every buyer was sent away with units left.
	"bad-sold-out-unread.jsonl": func() *history.History {
		return serviceRun(3, history.Final{Stock: 3},
			unread(0, 10, 12, history.SoldOut), unread(1, 20, 22, history.SoldOut), unread(2, 30, 32, history.SoldOut))
	},
	// A service that sold five units of a stock of three, without saying
	// what it read, and whose state could not be read after: the
	// confirmed sales alone oversell.
	"bad-sold-unread-state-lost.jsonl": func() *history.History {
		var ops []history.Op
		for c := range int32(5) {
			ops = append(ops, unread(c, 10+10*int64(c), 12+10*int64(c), history.Sold))
		}
		return serviceRun(3, history.Final{Unknown: true}, ops...)
	},
	// The same service selling within the stock: with neither the reads
	// nor the final state, nothing shows the data safe or unsafe.
	"bad-unread-state-lost.jsonl": func() *history.History {
		return serviceRun(3, history.Final{Unknown: true},
			unread(0, 10, 12, history.Sold), unread(1, 20, 22, history.Sold))
	},
	// A run ended by --timeout while a buyer was still waiting for its
	// write: the sale is not over.
	"bad-cut-short.jsonl": func() *history.History {
		h := &history.History{
			Header: header("lua", 2, 2),
			Final:  history.Final{Stock: 1, Orders: 1},
			Ops: []history.Op{
				sold(0, 10, 2),
				attempt(1, 0, 20*ms, ms, 1, history.Indeterminate, history.Pending),
			},
		}
		h.Ops[1].ReleaseCall, h.Ops[1].Released, h.Ops[1].End = 0, 0, 0
		h.Header.CutShort = true
		h.Header.Duration = 30 * ms
		return h
	},
}

// fenced is a fenced run where a holder paused past its lease writes with
// a stale token after the next owner bought: the store answers w.
func fenced(w history.WriteState, out history.Outcome, orders int64) *history.History {
	fresh := sold(1, 20, 5)
	fresh.Token = 2
	last := sold(2, 50, 4)
	last.Token = 3
	h := &history.History{
		Header: header("fenced", 5, 3),
		Final:  history.Final{Stock: 3, Orders: orders},
		Ops:    []history.Op{stale(0, 5, 1, w, out), fresh, last},
	}
	h.Header.Fenced = true
	return h
}

// load reads a fixture.
func load(t testing.TB, name string) *history.History {
	t.Helper()
	h, err := history.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// TestFixtures keeps testdata/ in step with the builders above; run it
// with -update to rewrite the files.
func TestFixtures(t *testing.T) {
	writeFixtures(t, fixtures, "TestFixtures")
}

// writeFixtures compares each builder's history with its file in testdata/,
// or rewrites the file when -update is given; test names the test to run
// with -update.
func writeFixtures(t *testing.T, builders map[string]func() *history.History, test string) {
	t.Helper()
	for name, build := range builders {
		t.Run(name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := history.Write(&buf, build()); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join("testdata", name)
			if *update {
				if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			got, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, buf.Bytes()) {
				t.Errorf("%s differs from its builder; run go test -run %s -update", path, test)
			}
		})
	}
}
