package locks

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// fairWait is how long a queued waiter's place lives without a new try:
// Redisson's default threadWaitTime, five minutes.
const fairWait = 5 * time.Minute

// fairLocker is Redisson's RFairLock (source 004's family): RLock's reentrant
// hash and watchdog, plus a queue. A waiter's first try puts it at the end
// of a list, with the instant its place lapses in a sorted set (from the
// client's clock); the lock goes to the head of the queue only, and a
// release tells the head on a channel of its own. Waiters that stop trying
// lose their place when it lapses.
type fairLocker struct {
	renewer
	prefix string // channel prefix; a waiter's channel is prefix+owner
	ps     *redis.PubSub

	mu    sync.Mutex
	wakes map[string]chan struct{} // waiting owner → its wake-up
}

func newFair(ctx context.Context, env Env) (Locker, error) {
	f := &fairLocker{
		renewer: newRenewer(env),
		prefix:  env.Key + ":fair:",
		wakes:   make(map[string]chan struct{}),
	}
	// One pattern subscription per node: each release message names the
	// owner it is for, and the node wakes that waiter alone.
	f.ps = env.Redis.PSubscribe(ctx, f.prefix+"*")
	if _, err := f.ps.Receive(ctx); err != nil {
		f.ps.Close()
		return nil, err
	}
	f.env.Spawn(f.listen)
	return f, nil
}

func (f *fairLocker) keys() []string {
	return []string{f.env.Key, f.env.Key + ":queue", f.env.Key + ":timeouts"}
}

// listen wakes the waiter each release message names.
func (f *fairLocker) listen() {
	ctx := context.Background()
	for {
		msg, err := f.ps.ReceiveMessage(ctx)
		if err != nil {
			if errors.Is(err, redis.ErrClosed) {
				return
			}
			continue
		}
		f.mu.Lock()
		wake := f.wakes[strings.TrimPrefix(msg.Channel, f.prefix)]
		f.mu.Unlock()
		if wake != nil {
			select {
			case wake <- struct{}{}:
			default:
			}
		}
	}
}

// try runs the lock step: held, or how long to wait before the next try.
func (f *fairLocker) try(ctx context.Context, owner string) (bool, time.Duration, error) {
	TraceOf(ctx).Trying()
	ms, err := fairLock.Run(ctx, f.env.Redis, f.keys(), f.ttl.Milliseconds(), owner, fairWait.Milliseconds(), f.env.now().UnixMilli()).Int64()
	if errors.Is(err, redis.Nil) {
		return true, 0, nil
	}
	if err != nil {
		return false, 0, err
	}
	return false, time.Duration(max(ms, 1)) * time.Millisecond, nil
}

func (f *fairLocker) Acquire(ctx context.Context, owner string) (Lease, error) {
	wake := make(chan struct{}, 1)
	f.mu.Lock()
	f.wakes[owner] = wake
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		delete(f.wakes, owner)
		f.mu.Unlock()
	}()
	for {
		held, wait, err := f.try(ctx, owner)
		if err != nil {
			f.leave(ctx, owner)
			return nil, err
		}
		if held {
			f.startRenewal(ctx, owner)
			return &fairLease{f: f, owner: owner}, nil
		}
		t := time.NewTimer(wait)
		select {
		case <-wake:
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			f.leave(ctx, owner)
			return nil, context.Cause(ctx)
		}
		t.Stop()
	}
}

// leave takes a waiter that gives up out of the queue, as Redisson does
// when a tryLock fails: without it, its place would hold up every waiter
// behind it until it lapses (five minutes). A client that died does
// nothing (ErrCrashed): its place stays, as a dead process's would.
func (f *fairLocker) leave(ctx context.Context, owner string) {
	if errors.Is(context.Cause(ctx), ErrCrashed) {
		return
	}
	c, cancel := context.WithTimeout(context.WithoutCancel(ctx), leaveTimeout)
	defer cancel()
	fairCancel.Run(c, f.env.Redis, []string{f.env.Key + ":queue", f.env.Key + ":timeouts", f.prefix}, owner, fairWait.Milliseconds(), "0")
}

// leaveTimeout bounds a waiter's leaving the queue: best effort, as
// Redisson's is; a place that stays lapses in time.
const leaveTimeout = time.Second

// Close drops the node's subscription.
func (f *fairLocker) Close() error { return f.ps.Close() }

type fairLease struct {
	f     *fairLocker
	owner string
}

func (*fairLease) Token() uint64 { return 0 }

func (l *fairLease) Release(ctx context.Context) error {
	f := l.f
	defer f.stopRenewal(l.owner)
	err := fairUnlock.Run(ctx, f.env.Redis, append(f.keys(), f.prefix), "0", f.ttl.Milliseconds(), l.owner, f.env.now().UnixMilli()).Err()
	if errors.Is(err, redis.Nil) {
		return ErrNotHeld
	}
	return err
}
