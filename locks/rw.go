package locks

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// ReadLocker is a Locker whose lock can also be held shared: any number
// of readers at once, excluding the writer that Acquire takes
// (RedissonReadWriteLock).
type ReadLocker interface {
	Locker
	// AcquireRead blocks until owner holds the lock shared, or ctx ends.
	AcquireRead(ctx context.Context, owner string) (Lease, error)
}

// The messages of rw's channel, as Redisson's LockPubSub reads them: a
// reader's release wakes one waiter of each node, a writer's every one
// (readers may then all enter).
const (
	rwUnlockOne = "0"
	rwUnlockAll = "1"
)

// rwLocker is Redisson's RedissonReadWriteLock: one hash per lock whose
// mode field says read or write, a count per owner (the writer's field is
// its name plus ":write"), and for each level of each reader a lease key
// of its own (KEY:OWNER:rwlock_timeout:N), so that the hash lives as long
// as its longest-lived reader. Waiters of both kinds subscribe to one
// channel per node; each kind has its watchdog, the readers' renewing the
// hash and every reader's lease key.
type rwLocker struct {
	env     Env
	ttl     time.Duration
	channel string
	ps      *redis.PubSub
	reads   renewer
	writes  renewer

	mu    sync.Mutex
	one   chan struct{} // a permit: one waiter of the node retries
	every chan struct{} // closed to wake every waiter of the node
}

func newRW(ctx context.Context, env Env) (Locker, error) {
	l := &rwLocker{
		env:     env,
		ttl:     ttlOr(&env, sourceLease),
		channel: env.Key + ":rwchannel",
		one:     make(chan struct{}, 1),
		every:   make(chan struct{}),
	}
	l.reads, l.writes = newRenewer(env), newRenewer(env)
	l.reads.renew = func(ctx context.Context, owner string) (bool, error) {
		return rwReadRenew.Run(ctx, env.Redis, []string{env.Key, env.Key}, l.ttl.Milliseconds(), owner).Bool()
	}
	l.writes.renew = func(ctx context.Context, owner string) (bool, error) {
		// owner is the writer's field name, OWNER:write.
		return watchdogRenew.Run(ctx, env.Redis, []string{env.Key}, owner, l.ttl.Milliseconds()).Bool()
	}
	l.ps = env.Redis.Subscribe(ctx, l.channel)
	if _, err := l.ps.Receive(ctx); err != nil {
		l.ps.Close()
		return nil, err
	}
	l.env.Spawn(l.listen)
	return l, nil
}

func (l *rwLocker) listen() {
	ctx := context.Background()
	for {
		msg, err := l.ps.ReceiveMessage(ctx)
		if err != nil {
			if errors.Is(err, redis.ErrClosed) {
				return
			}
			continue
		}
		if msg.Payload == rwUnlockAll {
			l.mu.Lock()
			close(l.every)
			l.every = make(chan struct{})
			l.mu.Unlock()
			continue
		}
		select {
		case l.one <- struct{}{}:
		default:
		}
	}
}

// timeouts is the prefix of owner's lease keys.
func (l *rwLocker) timeouts(owner string) string {
	return l.env.Key + ":" + owner + ":rwlock_timeout"
}

// wait runs try until it answers held, sleeping between tries at most the
// remaining lease it answered, woken by releases.
func (l *rwLocker) wait(ctx context.Context, try func() (*redis.Cmd, error)) error {
	for {
		l.mu.Lock()
		every := l.every
		l.mu.Unlock()
		cmd, err := try()
		if errors.Is(err, redis.Nil) {
			return nil
		}
		if err != nil {
			return err
		}
		pttl, _ := cmd.Int64()
		t := time.NewTimer(time.Duration(max(pttl, 1)) * time.Millisecond)
		select {
		case <-l.one:
		case <-every:
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return context.Cause(ctx)
		}
		t.Stop()
	}
}

// Acquire takes the write lock.
func (l *rwLocker) Acquire(ctx context.Context, owner string) (Lease, error) {
	err := l.wait(ctx, func() (*redis.Cmd, error) {
		TraceOf(ctx).Trying()
		c := rwWriteLock.Run(ctx, l.env.Redis, []string{l.env.Key}, l.ttl.Milliseconds(), owner+":write")
		return c, c.Err()
	})
	if err != nil {
		return nil, err
	}
	l.writes.startRenewal(ctx, owner+":write")
	return &rwLease{l: l, owner: owner}, nil
}

// AcquireRead takes the read lock.
func (l *rwLocker) AcquireRead(ctx context.Context, owner string) (Lease, error) {
	err := l.wait(ctx, func() (*redis.Cmd, error) {
		TraceOf(ctx).Trying()
		c := rwReadLock.Run(ctx, l.env.Redis, []string{l.env.Key, l.timeouts(owner)}, l.ttl.Milliseconds(), owner, owner+":write")
		return c, c.Err()
	})
	if err != nil {
		return nil, err
	}
	l.reads.startRenewal(ctx, owner)
	return &rwLease{l: l, owner: owner, read: true}, nil
}

// Close drops the node's subscription.
func (l *rwLocker) Close() error { return l.ps.Close() }

type rwLease struct {
	l     *rwLocker
	owner string
	read  bool
}

func (*rwLease) Token() uint64 { return 0 }

func (r *rwLease) Release(ctx context.Context) error {
	l := r.l
	var err error
	if r.read {
		defer l.reads.stopRenewal(r.owner)
		err = rwReadUnlock.Run(ctx, l.env.Redis, []string{l.env.Key, l.channel, l.timeouts(r.owner), l.env.Key},
			rwUnlockOne, r.owner).Err()
	} else {
		defer l.writes.stopRenewal(r.owner + ":write")
		err = rwWriteUnlock.Run(ctx, l.env.Redis, []string{l.env.Key, l.channel},
			rwUnlockAll, l.ttl.Milliseconds(), r.owner+":write").Err()
	}
	if errors.Is(err, redis.Nil) {
		return ErrNotHeld
	}
	return err
}
