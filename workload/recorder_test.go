package workload

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/internal/monoclock"
)

// testRun is a run with no servers: enough for the recorder and the
// Controls, whose rules need only the run's clock, nodes and buyers.
func testRun(nodes, clients int) *run {
	// A base in the past: every instant the recorder takes is positive.
	r := &run{base: monoclock.Now() - int64(time.Second), stride: 1, cfg: Config{Workload: Workload{Clients: clients, Nodes: nodes}}}
	for i := 0; i < nodes; i++ {
		r.nodes = append(r.nodes, &node{id: i})
	}
	r.kill = make([]atomic.Pointer[context.CancelCauseFunc], clients)
	r.crashAt = make([]atomic.Int64, clients)
	r.controls = &Controls{r: r}
	return r
}

// ended returns a context that ended with cause: a crash (ErrCrashed) or
// the run's end (anything else).
func ended(cause error) context.Context {
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(cause)
	return ctx
}

// instants names the instants of op that are set.
func instants(op *history.Op) string {
	var set []string
	for _, in := range []struct {
		name string
		at   int64
	}{
		{"acquire_call", op.AcquireCall}, {"acquired", op.Acquired},
		{"read_call", op.ReadCall}, {"read_return", op.ReadReturn},
		{"write_call", op.WriteCall}, {"write_return", op.WriteReturn},
		{"release_call", op.ReleaseCall}, {"released", op.Released},
	} {
		if in.at > 0 {
			set = append(set, in.name)
		}
	}
	return strings.Join(set, " ")
}

// TestRecorder: a sale says what happened, the recorder writes the Op the
// checker reads: an instant that did not happen is zero, a failed read
// leaves no read, a write not sent leaves no write, a write sent and not
// answered is indeterminate with no return, and a crash or the run's end
// names the outcome of an attempt that stopped on an error.
func TestRecorder(t *testing.T) {
	crashed, cut := ended(ErrCrashed), ended(errors.New("the sale is over"))
	tests := []struct {
		name    string
		ctx     context.Context // the buyer's; nil: alive
		steps   func(rec *recorder)
		outcome history.Outcome
		write   history.WriteState
		stock   int64
		set     string // the instants set, in order
		// sameWrite is true when one command read and wrote: the write's
		// interval is the read's.
		sameWrite bool
		token     uint64
		lost      bool
	}{
		{name: "read, write sent, applied",
			steps:   func(rec *recorder) { rec.Reading(); rec.Read(5); rec.Writing(); rec.Applied() },
			outcome: history.Sold, write: history.Applied, stock: 5, set: "read_call read_return write_call write_return"},
		{name: "one command read and wrote",
			steps:   func(rec *recorder) { rec.Reading(); rec.Read(5); rec.AppliedWithRead() },
			outcome: history.Sold, write: history.Applied, stock: 5, set: "read_call read_return write_call write_return", sameWrite: true},
		{name: "write sent, no answer",
			steps:   func(rec *recorder) { rec.Reading(); rec.Read(5); rec.Writing(); rec.Unknown() },
			outcome: history.Unknown, write: history.Indeterminate, stock: 5, set: "read_call read_return write_call"},
		{name: "write sent, buyer crashed", ctx: crashed,
			steps:   func(rec *recorder) { rec.Reading(); rec.Read(5); rec.Writing(); rec.Unknown() },
			outcome: history.Crashed, write: history.Indeterminate, stock: 5, set: "read_call read_return write_call"},
		{name: "write sent, the run ended", ctx: cut,
			steps:   func(rec *recorder) { rec.Reading(); rec.Read(5); rec.Writing(); rec.Unknown() },
			outcome: history.Pending, write: history.Indeterminate, stock: 5, set: "read_call read_return write_call"},
		{name: "script sent, no answer: a blind sale",
			steps:   func(rec *recorder) { rec.Reading(); rec.WritingWithRead(); rec.Unknown() },
			outcome: history.Unknown, write: history.Indeterminate, stock: history.NoStock, set: "read_call write_call"},
		{name: "write not sent",
			steps:   func(rec *recorder) { rec.Reading(); rec.Read(5); rec.Writing(); rec.NotSent() },
			outcome: history.Failed, write: history.NoWrite, stock: 5, set: "read_call read_return"},
		{name: "write not sent, buyer crashed", ctx: crashed,
			steps:   func(rec *recorder) { rec.Reading(); rec.Read(5); rec.Writing(); rec.NotSent() },
			outcome: history.Crashed, write: history.NoWrite, stock: 5, set: "read_call read_return"},
		{name: "read failed",
			steps:   func(rec *recorder) { rec.Reading(); rec.ReadFailed() },
			outcome: history.Failed, write: history.NoWrite, stock: history.NoStock, set: ""},
		{name: "sold out",
			steps:   func(rec *recorder) { rec.Reading(); rec.Read(0); rec.SoldOut() },
			outcome: history.SoldOut, write: history.NoWrite, stock: 0, set: "read_call read_return"},
		{name: "duplicate",
			steps:   func(rec *recorder) { rec.Reading(); rec.Read(3); rec.Duplicate() },
			outcome: history.Duplicate, write: history.NoWrite, stock: 3, set: "read_call read_return"},
		{name: "fenced write refused",
			steps: func(rec *recorder) {
				rec.Acquiring()
				rec.Acquired(7)
				rec.Reading()
				rec.Read(4)
				rec.Writing()
				rec.Refused()
			},
			outcome: history.Rejected, write: history.Refused, stock: 4, token: 7, set: "acquire_call acquired read_call read_return write_call write_return"},
		{name: "conflict, then the new read's write",
			steps: func(rec *recorder) {
				rec.Reading()
				rec.Read(5)
				rec.Writing()
				rec.Conflict()
				rec.Reading()
				rec.Read(4)
				rec.Writing()
				rec.Applied()
			},
			outcome: history.Sold, write: history.Applied, stock: 4, set: "read_call read_return write_call write_return"},
		{name: "gave up on the lock",
			steps:   func(rec *recorder) { rec.Acquiring(); rec.GaveUp() },
			outcome: history.GaveUp, write: history.NoWrite, stock: history.NoStock, set: "acquire_call"},
		{name: "a service's token",
			steps:   func(rec *recorder) { rec.Reading(); rec.Read(5); rec.Token(9); rec.AppliedWithRead() },
			outcome: history.Sold, write: history.Applied, stock: 5, token: 9, set: "read_call read_return write_call write_return", sameWrite: true},
		{name: "a service that does not say what it read",
			steps:   func(rec *recorder) { rec.Reading(); rec.ReadUntold(); rec.AppliedWithRead() },
			outcome: history.Sold, write: history.Applied, stock: history.NoStock, set: "read_call read_return write_call write_return", sameWrite: true},
		{name: "stopped after the sale, alive",
			steps:   func(rec *recorder) { rec.Reading(); rec.Read(5); rec.Writing(); rec.Applied(); rec.Stopped() },
			outcome: history.Sold, write: history.Applied, stock: 5, set: "read_call read_return write_call write_return"},
		{name: "stopped after the sale, crashed", ctx: crashed,
			steps:   func(rec *recorder) { rec.Reading(); rec.Read(5); rec.Writing(); rec.Applied(); rec.Stopped() },
			outcome: history.Crashed, write: history.Applied, stock: 5, set: "read_call read_return write_call write_return"},
		{name: "released, found lost",
			steps: func(rec *recorder) {
				rec.Acquiring()
				rec.Acquired(0)
				rec.Reading()
				rec.Read(2)
				rec.Writing()
				rec.Applied()
				rec.Releasing()
				rec.Released(true)
			},
			outcome: history.Sold, write: history.Applied, stock: 2, lost: true,
			set: "acquire_call acquired read_call read_return write_call write_return release_call released"},
		{name: "a crashed holder never releases", ctx: crashed,
			steps:   func(rec *recorder) { rec.Acquiring(); rec.Acquired(0); rec.Reading(); rec.Read(2); rec.Crashed() },
			outcome: history.Crashed, write: history.NoWrite, stock: 2, set: "acquire_call acquired read_call read_return"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := testRun(1, 1)
			ctx := tt.ctx
			if ctx == nil {
				ctx = t.Context()
			}
			op := history.Op{Client: 0, Stock: history.NoStock, Arrival: 1}
			rec := recorder{r: r, op: &op, ctx: ctx}
			tt.steps(&rec)
			if op.Outcome != tt.outcome || op.Write != tt.write || op.Stock != tt.stock {
				t.Errorf("outcome %s, write %s, stock %d; want %s, %s, %d", op.Outcome, op.Write, op.Stock, tt.outcome, tt.write, tt.stock)
			}
			if got := instants(&op); got != tt.set {
				t.Errorf("instants set: %q, want %q", got, tt.set)
			}
			if tt.sameWrite && (op.WriteCall != op.ReadCall || op.WriteReturn != op.ReadReturn) {
				t.Errorf("write [%d, %d], read [%d, %d]: one command did both, the intervals must be one", op.WriteCall, op.WriteReturn, op.ReadCall, op.ReadReturn)
			}
			if op.Token != tt.token || op.Lost != tt.lost {
				t.Errorf("token %d, lost %v; want %d, %v", op.Token, op.Lost, tt.token, tt.lost)
			}
			// The purchase ends the attempt as the run does; the history
			// must then be one the checker accepts.
			if op.Outcome != history.Pending {
				op.End = r.now()
			}
			if err := history.Validate(&history.History{Ops: []history.Op{op}}); err != nil {
				t.Errorf("the recorded Op is not a valid history: %v", err)
			}
		})
	}
}

// TestRecorderInstantsInOrder: the instants a sale's steps take follow
// one another: no answer before its call, no step before the one before.
func TestRecorderInstantsInOrder(t *testing.T) {
	r := testRun(1, 1)
	op := history.Op{Stock: history.NoStock, Arrival: 1}
	rec := recorder{r: r, op: &op, ctx: t.Context()}
	rec.Acquiring()
	rec.Acquired(3)
	rec.Reading()
	rec.Read(9)
	rec.Writing()
	rec.Applied()
	rec.Releasing()
	rec.Released(false)
	steps := []int64{op.AcquireCall, op.Acquired, op.ReadCall, op.ReadReturn, op.WriteCall, op.WriteReturn, op.ReleaseCall, op.Released}
	if !slices.IsSorted(steps) || steps[0] <= 0 {
		t.Errorf("instants %v: want positive and in the order of the steps", steps)
	}
}

// TestRecorderTrace: the lock's trace lands in the attempt's op: the
// last try before the lock was obtained, the lease granted once, each
// renewal told from another goroutine up to the release, none after it.
func TestRecorderTrace(t *testing.T) {
	r := testRun(1, 1)
	op := history.Op{Stock: history.NoStock}
	rec := &recorder{r: r, op: &op, ctx: context.Background()}
	rec.Acquiring()
	rec.Trying()
	time.Sleep(time.Millisecond)
	rec.Trying()
	rec.Granted(time.Second, 900*time.Millisecond)
	rec.Acquired(7)
	rec.Trying()                     // a nested acquisition's try
	rec.Granted(time.Minute, 0)      // and its grant: the first lease stands
	done := make(chan func(bool), 1) // a renewal answered after the release
	go func() {
		rec.Renewing()(true)
		rec.Renewing()(false)
		done <- rec.Renewing()
	}()
	late := <-done
	rec.Releasing()
	late(true)
	rec.Renewing()(true)
	rec.Released(false)
	switch {
	case op.GrantCall <= op.AcquireCall || op.GrantCall > op.Acquired:
		t.Errorf("grant_call %d outside [acquire_call %d, acquired %d], or the first try's", op.GrantCall, op.AcquireCall, op.Acquired)
	case op.Lease != int64(time.Second) || op.ServerLease != int64(900*time.Millisecond):
		t.Errorf("lease %d, server lease %d; want the first grant's", op.Lease, op.ServerLease)
	case len(op.Renewals) != 3:
		t.Fatalf("renewals %+v, want the three sent before the release", op.Renewals)
	}
	want := []bool{true, false, false}
	for i, rn := range op.Renewals {
		if rn.OK != want[i] || (i < 2) != (rn.Return >= rn.Call && rn.Return > 0) {
			t.Errorf("renewal %d: %+v, want ok %v, answered %v", i, rn, want[i], i < 2)
		}
	}
}
