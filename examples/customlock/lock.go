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

// leaseLock is one node's handle on the lock.
type leaseLock struct{ env locks.Env }

func newLock(_ context.Context, env locks.Env) (locks.Locker, error) {
	return &leaseLock{env: env}, nil
}

func (l *leaseLock) keys() []string { return []string{l.env.Key, l.env.Key + ":token"} }

// Acquire tries until it holds the lock or ctx ends, waiting 1-32 ms
// (jittered, doubling) between tries.
func (l *leaseLock) Acquire(ctx context.Context, owner string) (locks.Lease, error) {
	ttl := cmp.Or(l.env.TTL, defaultLease)
	wait := time.Millisecond
	for {
		token, err := acquireScript.Run(ctx, l.env.Redis, l.keys(), owner, ttl.Milliseconds()).Uint64()
		if err != nil {
			return nil, err
		}
		if token > 0 {
			return &lease{l: l, owner: owner, token: token}, nil
		}
		t := time.NewTimer(rand.N(wait) + time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, context.Cause(ctx)
		case <-t.C:
		}
		wait = min(2*wait, 32*time.Millisecond)
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
	return &brokenLock{leaseLock{env: env}}, nil
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

// register adds the two locks to lockbench, and their expected rows to
// the truth table: both are safe without a fault; under a pause past the
// lease both let a second holder in, and the correct one keeps the data
// safe (the store refuses the stale holder's write) where the broken one
// oversells. The locks are registered first: AddRow refuses a row of an
// implementation the harness does not know (matrix.ErrUnknownImpl).
func register() error {
	for _, l := range []locks.Impl{
		{
			Name:    "example-correct",
			Summary: "a team's lease lock: SET NX PX, a fencing token from INCR in the same script, compare-and-delete release",
			Seed:    "examples/customlock",
			Fenced:  true,
			Scripts: []*redis.Script{acquireScript, releaseScript},
			New:     newLock,
		},
		{
			Name:    "example-broken",
			Summary: "the same lock, its lease's token lost on the way to the store: the writes go unfenced",
			Seed:    "examples/customlock",
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
	// A lease lock without a fault is safe only while no holder stalls
	// past its lease: the fault-free cells take a lease long against a
	// busy machine's stalls (the matrix's 200 ms default let a 375 ms
	// stall in a second holder). The pause-holder cells keep the short
	// one: their pause outlasts any lease on purpose.
	safeLease := 5 * time.Second
	return matrix.AddRow(
		matrix.Cell{Impl: "example-correct", Want: matrix.Safe, TTL: safeLease},
		matrix.Cell{Impl: "example-correct", Fault: "pause-holder", Want: matrix.DataSafe},
		matrix.Cell{Impl: "example-broken", Want: matrix.Safe, TTL: safeLease},
		matrix.Cell{Impl: "example-broken", Fault: "pause-holder", Want: matrix.Oversell},
	)
}
