package locks

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/bsm/redislock"
	"github.com/go-redsync/redsync/v4"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/go-redis/v9"
)

// The third-party libraries' versions, as in go.mod, for `lockbench list`.
const (
	redsyncVersion   = "v4.18.1"
	redislockVersion = "v0.9.4"
)

// The libraries' documented defaults that lockbench keeps.
const (
	// redsyncExpiry is redsync's default lease (NewMutex: 8 s).
	redsyncExpiry = 8 * time.Second
	// redislockRetry is the interval of redislock's retry example,
	// LinearBackoff(100 * time.Millisecond).
	redislockRetry = 100 * time.Millisecond
	// redislockDefaultLease is the lease lockbench gives redislock, which
	// has no default of its own: 5 s, refreshed every half lease. Its
	// README example's 100 ms, refreshed every 50 ms, lapses whenever the
	// process stalls for 50 ms, as it does on a busy CI runner (measured:
	// 4 overlaps with no fault at a load average of 3), so a run on it
	// judged the machine, not the lock. Faults and the matrix set leases of
	// their own.
	redislockDefaultLease = 5 * time.Second
)

// redsyncLocker is go-redsync/redsync's Redlock on a single pool: the
// node's own go-redis client. A Mutex holds its acquisition's random value,
// so every Acquire makes a fresh one, as a caller of the library must.
type redsyncLocker struct {
	rs  *redsync.Redsync
	key string
	ttl time.Duration
}

func newRedsync(_ context.Context, env Env) (Locker, error) {
	c, ok := env.Redis.(redis.UniversalClient)
	if !ok {
		return nil, fmt.Errorf("locks: redsync needs a go-redis client (redis.UniversalClient) for its goredis pool, got %T", env.Redis)
	}
	return &redsyncLocker{
		rs:  redsync.New(goredis.NewPool(c)),
		key: env.Key,
		ttl: ttlOr(&env, redsyncExpiry),
	}, nil
}

// Acquire is Mutex.LockContext with the library's defaults (32 tries,
// 50-250 ms apart, drift factor 0.01) and the lease as the expiry.
func (l *redsyncLocker) Acquire(ctx context.Context, _ string) (Lease, error) {
	m := l.rs.NewMutex(l.key, redsync.WithExpiry(l.ttl))
	err := m.LockContext(ctx)
	if err == nil {
		TraceOf(ctx).Granted(l.ttl, 0)
		return &redsyncLease{m: m}, nil
	}
	if ctx.Err() != nil {
		// redsync answers ErrFailed to a context that ended.
		return nil, context.Cause(ctx)
	}
	var taken *redsync.ErrTaken
	var nodeTaken *redsync.ErrNodeTaken
	if errors.Is(err, redsync.ErrFailed) || errors.As(err, &taken) || errors.As(err, &nodeTaken) {
		// Out of tries: the last one found the lock taken.
		return nil, fmt.Errorf("%w: %w", ErrNotObtained, err)
	}
	return nil, err
}

type redsyncLease struct{ m *redsync.Mutex }

func (*redsyncLease) Token() uint64 { return 0 }

// Release is Mutex.UnlockContext. redsync reports a missing key as
// ErrLockAlreadyExpired and another owner's value as the lock taken; both
// are ErrNotHeld here.
func (r *redsyncLease) Release(ctx context.Context) error {
	ok, err := r.m.UnlockContext(ctx)
	if ok {
		return nil
	}
	var taken *redsync.ErrTaken
	var nodeTaken *redsync.ErrNodeTaken
	if errors.Is(err, redsync.ErrLockAlreadyExpired) || errors.As(err, &taken) || errors.As(err, &nodeTaken) {
		return fmt.Errorf("%w: %w", ErrNotHeld, err)
	}
	if err == nil {
		return ErrNotHeld
	}
	return err
}

// redislockLocker is bsm/redislock's Client on the node's client, with a
// refresh loop per lease that refreshes it every half lease while it is
// held, as the library's README example refreshes after half its lease.
type redislockLocker struct {
	c   *redislock.Client
	key string
	ttl time.Duration

	stop    context.Context // ends when the node shuts down
	stopAll context.CancelFunc
	loops   sync.WaitGroup
	spawn   func(func()) // Env.Spawn
}

func newRedislock(_ context.Context, env Env) (Locker, error) {
	stop, stopAll := context.WithCancel(context.Background())
	return &redislockLocker{
		c:       redislock.New(env.Redis),
		key:     env.Key,
		ttl:     ttlOr(&env, redislockDefaultLease),
		stop:    stop,
		stopAll: stopAll,
		spawn:   env.Spawn,
	}, nil
}

// Acquire is Client.Obtain retrying every 100 ms (the retry example's
// interval) until ctx ends (the custom-deadline example's bound), then
// starts the lease's refresh loop in ctx: a crashed client's refresh dies
// with it.
func (l *redislockLocker) Acquire(ctx context.Context, _ string) (Lease, error) {
	lock, err := l.c.Obtain(ctx, l.key, l.ttl, &redislock.Options{
		RetryStrategy: redislock.LinearBackoff(redislockRetry),
	})
	if err != nil {
		if ctx.Err() != nil {
			return nil, context.Cause(ctx)
		}
		if errors.Is(err, redislock.ErrNotObtained) {
			return nil, fmt.Errorf("%w: %w", ErrNotObtained, err)
		}
		return nil, err
	}
	TraceOf(ctx).Granted(l.ttl, 0)
	rctx, cancel := context.WithCancel(ctx)
	unhook := context.AfterFunc(l.stop, cancel)
	l.loops.Add(1)
	l.spawn(func() {
		defer l.loops.Done()
		defer unhook()
		l.refresh(rctx, lock)
	})
	return &redislockLease{lock: lock, stop: cancel}, nil
}

// refresh extends lock's lease every half lease until ctx ends or the lock
// is found gone: Refresh cannot bring a lost lock back. A refresh that
// fails otherwise (a timeout) is tried again at the next tick, while the
// lease may still run.
func (l *redislockLocker) refresh(ctx context.Context, lock *redislock.Lock) {
	t := time.NewTicker(l.ttl / 2)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		done := TraceOf(ctx).Renewing()
		err := lock.Refresh(ctx, l.ttl, nil)
		done(err == nil)
		if errors.Is(err, redislock.ErrNotObtained) {
			return
		}
	}
}

// Close stops the node's refresh loops, as the process exiting would, and
// waits for them.
func (l *redislockLocker) Close() error {
	l.stopAll()
	l.loops.Wait()
	return nil
}

type redislockLease struct {
	lock *redislock.Lock
	stop context.CancelFunc
}

func (*redislockLease) Token() uint64 { return 0 }

// Release stops the refresh loop, then Lock.Release; redislock's
// ErrLockNotHeld is ErrNotHeld here.
func (r *redislockLease) Release(ctx context.Context) error {
	r.stop()
	err := r.lock.Release(ctx)
	if errors.Is(err, redislock.ErrLockNotHeld) {
		return fmt.Errorf("%w: %w", ErrNotHeld, err)
	}
	return err
}
