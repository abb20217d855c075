package main

import (
	"cmp"
	"context"
	"math/rand/v2"
	"time"

	"github.com/lockbench/lockbench/harness"
	"github.com/lockbench/lockbench/locks"
	"github.com/lockbench/lockbench/matrix"
	"github.com/redis/go-redis/v9"
)

// The lease lock a team might write: SET NX PX with the owner's value and
// a fencing token from a counter, handed out in the same script, so that
// the store can refuse the writes of a holder whose lease ran out; the
// release deletes the key only if it still holds the owner's value.
var (
	acquireScript = redis.NewScript(`
if redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return redis.call('incr', KEYS[2])
end
return 0`)
	releaseScript = redis.NewScript(`
if redis.call('get', KEYS[1]) == ARGV[1] then
  return redis.call('del', KEYS[1])
end
return 0`)
)

// defaultLease is the lease when lockbench gives none.
const defaultLease = 10 * time.Second

// The waits between a node's tries of a lock another holds: doubling from
// minBackoff to maxBackoff, each jittered between half and the whole.
const (
	minBackoff = 2 * time.Millisecond
	maxBackoff = 20 * time.Millisecond
)

// leaseLock is one node's handle on the lock.
//
// A node's buyers do not all poll the server: they queue for the node's
// turn, and only the one holding it tries the lock in Redis, backing off
// between tries, and woken at once when a holder of its own node lets go.
// The server sees one try per node per backoff, however many buyers wait
// (without the turn, 400 waiting buyers polling every 1-32 ms made about
// a thousand commands per sale and starved the holder's own commands).
type leaseLock struct {
	env locks.Env
	// turn is held by the node's one buyer that tries the lock in Redis.
	turn chan struct{}
	// released wakes that buyer when the node's own holder releases.
	released chan struct{}
}

func newLeaseLock(env locks.Env) leaseLock {
	return leaseLock{env: env, turn: make(chan struct{}, 1), released: make(chan struct{}, 1)}
}

func newLock(_ context.Context, env locks.Env) (locks.Locker, error) {
	l := newLeaseLock(env)
	return &l, nil
}

func (l *leaseLock) keys() []string { return []string{l.env.Key, l.env.Key + ":token"} }

// Acquire waits for the node's turn, then tries until it holds the lock
// or ctx ends, backing off (minBackoff doubling to maxBackoff, jittered)
// between tries, and trying again at once when the node's own holder
// releases.
func (l *leaseLock) Acquire(ctx context.Context, owner string) (locks.Lease, error) {
	select {
	case l.turn <- struct{}{}:
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
	defer func() { <-l.turn }()
	ttl := cmp.Or(l.env.TTL, defaultLease)
	wait := minBackoff
	// The run's trace (locks.TraceOf) is told each try and the lease
	// granted: the checker then knows when the holder's lease began.
	trace := locks.TraceOf(ctx)
	for {
		trace.Trying()
		token, err := acquireScript.Run(ctx, l.env.Redis, l.keys(), owner, ttl.Milliseconds()).Uint64()
		if err != nil {
			return nil, err
		}
		if token > 0 {
			trace.Granted(ttl, 0)
			return &lease{l: l, owner: owner, token: token}, nil
		}
		t := time.NewTimer(wait/2 + rand.N(wait/2+1))
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, context.Cause(ctx)
		case <-l.released:
			t.Stop()
			wait = minBackoff
			continue
		case <-t.C:
		}
		wait = min(2*wait, maxBackoff)
	}
}

type lease struct {
	l     *leaseLock
	owner string
	token uint64
}

func (s *lease) Token() uint64 { return s.token }

func (s *lease) Release(ctx context.Context) error {
	n, err := releaseScript.Run(ctx, s.l.env.Redis, s.l.keys(), s.owner).Int64()
	if err != nil {
		return err
	}
	// Wake the node's trying buyer, if one waits: the lock is free.
	select {
	case s.l.released <- struct{}{}:
	default:
	}
	if n == 0 {
		return locks.ErrNotHeld
	}
	return nil
}

// brokenLock is the same lock with one subtle bug, of the kind a
// refactoring leaves: the lease it hands on has lost its token on the way
// (Token returns zero), so the writes go to the store unfenced. Nothing
// shows while every holder finishes within its lease; a holder paused
// past it writes what it read before the next holder's write, and units
// are sold twice.
type brokenLock struct{ leaseLock }

func newBrokenLock(_ context.Context, env locks.Env) (locks.Locker, error) {
	return &brokenLock{newLeaseLock(env)}, nil
}

func (l *brokenLock) Acquire(ctx context.Context, owner string) (locks.Lease, error) {
	ls, err := l.leaseLock.Acquire(ctx, owner)
	if err != nil {
		return nil, err
	}
	return unfenced{ls.(*lease)}, nil
}

// unfenced is a lease whose token was dropped.
type unfenced struct{ *lease }

func (unfenced) Token() uint64 { return 0 }

// steadyLease is the lease of the rows that expect the locks to stay safe
// with no fault: a critical section must end within it even when the
// machine starves lockbench (measured: 434 ms under a 200 ms lease, and
// the cell differed with no bug). The pause-holder rows keep the matrix's
// short lease, which the pause outlasts.
const steadyLease = 2 * time.Second

// steadyWhy states the condition of those rows.
const steadyWhy = "safe while every critical section ends within the lease: 2 s, which no stall of a loaded machine's harness was measured to cross"

// register adds the two locks to lockbench, and their expected rows to
// the truth table: both are safe without a fault; under a pause past the
// lease both let a second holder in, and the correct one keeps the data
// safe (the store refuses the stale holder's write) where the broken one
// oversells. The locks are registered first: AddRow refuses a row of an
// implementation the harness does not know (matrix.ErrUnknownImpl).
func register() error {
	for _, l := range []locks.Impl{
		{
			Info: locks.Info{
				Name:    "example-correct",
				Summary: "a team's lease lock: SET NX PX, a fencing token from INCR in the same script, compare-and-delete release",
				Source:  "examples/customlock",
			},
			Fenced:  true,
			Scripts: []*redis.Script{acquireScript, releaseScript},
			New:     newLock,
		},
		{
			Info: locks.Info{
				Name:    "example-broken",
				Summary: "the same lock, its lease's token lost on the way to the store: the writes go unfenced",
				Source:  "examples/customlock",
			},
			Fenced:  true,
			Scripts: []*redis.Script{acquireScript, releaseScript},
			New:     newBrokenLock,
		},
	} {
		l.DefaultTTL = defaultLease
		if err := harness.Register(harness.Lock(l)); err != nil {
			return err
		}
	}
	return matrix.AddRow(
		matrix.Cell{Impl: "example-correct", TTL: steadyLease, Want: matrix.Safe, Why: steadyWhy},
		matrix.Cell{Impl: "example-correct", Fault: "pause-holder", Want: matrix.DataSafe},
		matrix.Cell{Impl: "example-broken", TTL: steadyLease, Want: matrix.Safe, Why: steadyWhy},
		matrix.Cell{Impl: "example-broken", Fault: "pause-holder", Want: matrix.Oversell},
	)
}
