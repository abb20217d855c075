package locks

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// MultiLocker is a Locker that takes several locks together, all of them
// or none (RedissonMultiLock): a buyer's cart of several items locks each
// item's key. Acquire takes every key of the Env (Env.Keys, or Env.Key).
type MultiLocker interface {
	Locker
	// AcquireAll blocks until owner holds the lock of every key of keys
	// (each among the Env's keys), or ctx ends; it never returns holding
	// some of them.
	AcquireAll(ctx context.Context, owner string, keys []string) (Lease, error)
}

// multiRound is Redisson's MultiLock.lock(): each round may wait 1.5 s per
// lock for the locks in turn (its baseWaitTime, locks.size() * 1500).
const multiRound = 1500 * time.Millisecond

// multiLocker is Redisson's RedissonMultiLock over RLocks (the watchdog's
// reentrant hash lock, one per key, each with its node's subscription and
// its watchdog). lock() runs rounds; a round takes the locks in the
// caller's order, each waiting at most what is left of the round's budget;
// one that cannot be had in time makes the round release those it took
// (failedLocksLimit is 0: all or none) and the next round starts from the
// first lock again. The lease is each lock's own, renewed by its watchdog.
type multiLocker struct {
	keys  []string
	locks map[string]*watchdogLocker
}

func newMulti(ctx context.Context, env Env) (Locker, error) {
	keys := env.Keys
	if len(keys) == 0 {
		keys = []string{env.Key}
	}
	m := &multiLocker{keys: keys, locks: make(map[string]*watchdogLocker, len(keys))}
	for _, k := range keys {
		e := env
		e.Key, e.Keys = k, nil
		l, err := newWatchdog(ctx, e)
		if err != nil {
			m.Close()
			return nil, err
		}
		m.locks[k] = l.(*watchdogLocker)
	}
	return m, nil
}

func (m *multiLocker) Acquire(ctx context.Context, owner string) (Lease, error) {
	return m.AcquireAll(ctx, owner, m.keys)
}

func (m *multiLocker) AcquireAll(ctx context.Context, owner string, keys []string) (Lease, error) {
	for {
		l, err := m.TryAll(ctx, owner, keys, time.Duration(len(keys))*multiRound)
		if !errors.Is(err, ErrNotObtained) {
			return l, err
		}
	}
}

// TryAll is one round of RedissonMultiLock.tryLock(wait, -1): it takes
// the locks of keys in order within wait, or none of them
// (ErrNotObtained), releasing those it took when one could not be had in
// time.
func (m *multiLocker) TryAll(ctx context.Context, owner string, keys []string, wait time.Duration) (Lease, error) {
	ls := make([]*watchdogLocker, len(keys))
	for i, k := range keys {
		if ls[i] = m.locks[k]; ls[i] == nil {
			return nil, fmt.Errorf("locks: multi has no lock %q", k)
		}
	}
	deadline := time.Now().Add(wait)
	held := make([]*watchdogLocker, 0, len(ls))
	for i := 0; i < len(ls); i++ {
		ok, err := ls[i].acquire(ctx, owner, deadline)
		if err != nil {
			// A caller that stops waiting takes nothing with it: what it
			// took is released, as a failed round would.
			m.unlock(context.WithoutCancel(ctx), owner, held)
			return nil, err
		}
		if ok {
			held = append(held, ls[i])
		}
		if !ok || !time.Now().Before(deadline) && len(held) < len(ls) {
			m.unlock(ctx, owner, held)
			return nil, ErrNotObtained
		}
	}
	return &multiLease{m: m, owner: owner, held: held}, nil
}

// unlock releases one level of each of held (RedissonMultiLock's
// unlockInner), in order, and says whether each was still held.
func (m *multiLocker) unlock(ctx context.Context, owner string, held []*watchdogLocker) error {
	var first error
	for _, l := range held {
		err := (&watchdogLease{w: l, owner: owner}).Release(ctx)
		if first == nil && err != nil {
			first = err
		}
	}
	return first
}

// Close drops every lock's subscription.
func (m *multiLocker) Close() error {
	var errs []error
	for _, l := range m.locks {
		errs = append(errs, l.Close())
	}
	return errors.Join(errs...)
}

type multiLease struct {
	m     *multiLocker
	owner string
	held  []*watchdogLocker
}

func (*multiLease) Token() uint64 { return 0 }

// Release unlocks every lock; ErrNotHeld when any of them was found no
// longer held by the owner.
func (l *multiLease) Release(ctx context.Context) error {
	return l.m.unlock(ctx, l.owner, l.held)
}
