package locks

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// reentrantTry runs source 003's seventh-rework lock script.
func reentrantTry(ctx context.Context, env *Env, owner string) (uint64, bool, error) {
	n, err := reentrantLock.Run(ctx, env.Redis, []string{env.Key}, owner, ttlOr(env, sourceLease).Milliseconds()).Int64()
	return 0, n == 1, err
}

// reentrantFree runs the matching unlock script. The source throws when the
// owner holds nothing; that is ErrNotHeld here.
func reentrantFree(ctx context.Context, env *Env, owner string) error {
	err := reentrantUnlock.Run(ctx, env.Redis, []string{env.Key}, owner).Err()
	if errors.Is(err, redis.Nil) {
		return ErrNotHeld
	}
	return err
}

// naiveLocker is source 001's last version: the reentrant hash lock plus a
// renewal thread started on every successful lock() and stopped only when
// the lock key is gone, whoever holds it. The source's lease is the caller's
// seconds passed to PEXPIRE, so 30 s becomes 30 ms, renewed every 15 ms.
type naiveLocker struct {
	simpleLock
	secs int64         // the lease "seconds", used as milliseconds
	stop chan struct{} // closed when the node shuts down: the JVM exits
	once sync.Once
}

func newNaive(_ context.Context, env Env) (Locker, error) {
	secs := int64(ttlOr(&env, sourceLease) / time.Second)
	if secs < 1 {
		secs = 1
	}
	n := &naiveLocker{secs: secs, stop: make(chan struct{})}
	n.simpleLock = simpleLock{env: env, wait: fixedSleep(50 * time.Millisecond), try: n.try, free: n.free}
	return n, nil
}

func (n *naiveLocker) try(ctx context.Context, env *Env, owner string) (uint64, bool, error) {
	r, err := naiveLock.Run(ctx, env.Redis, []string{env.Key}, owner, n.secs).Int64()
	if err != nil || r != 1 {
		return 0, false, err
	}
	// The source's renewal thread outlives the request that started it: it
	// belongs to the process, so a crashed request does not stop it.
	env.Spawn(func() { n.renew(owner) })
	// The lease the source asks for in seconds is set in milliseconds:
	// that is the lease the server holds.
	TraceOf(ctx).Granted(ttlOr(env, sourceLease), time.Duration(n.secs)*time.Millisecond)
	return 0, true, nil
}

func (n *naiveLocker) renew(owner string) {
	ctx := context.Background()
	period := time.Duration(n.secs/2) * time.Millisecond
	if period <= 0 {
		// Thread.sleep(0) in the source; a busy loop would only measure the
		// machine, so lockbench sleeps one millisecond.
		period = time.Millisecond
	}
	for {
		r, err := naiveRenew.Run(ctx, n.env.Redis, []string{n.env.Key}, owner, n.secs).Int64()
		if err != nil || r == 0 {
			return
		}
		select {
		case <-time.After(period):
		case <-n.stop:
			return
		}
	}
}

func (n *naiveLocker) free(ctx context.Context, env *Env, owner string) error {
	r, err := naiveUnlock.Run(ctx, env.Redis, []string{env.Key}, owner, n.secs).Int64()
	if err != nil {
		return err
	}
	if r == 0 {
		return ErrNotHeld
	}
	return nil
}

// Close stops the node's renewal threads.
func (n *naiveLocker) Close() error {
	n.once.Do(func() { close(n.stop) })
	return nil
}

// watchdogLocker is Redisson's RLock as source 003's eighth rework and source
// 004 describe it: the reentrant hash lock, a watchdog that renews the
// lease every third of it while the owner holds the lock, and waiting the
// Redisson way: one subscription per node to the lock's channel, and a
// semaphore so that each release message lets one waiter of the node retry,
// never all of them. A waiter sleeps at most the holder's remaining lease.
type watchdogLocker struct {
	renewer
	channel string
	wake    chan struct{} // the semaphore: one permit at most
	ps      *redis.PubSub
	waiting atomic.Int32 // the node's clients waiting for the lock
}

// renewer is Redisson's watchdog, shared by its hash locks (watchdog,
// spin): while an owner holds the lock through this node, its lease is
// renewed every third of it.
type renewer struct {
	env Env
	ttl time.Duration

	mu       sync.Mutex
	renewals map[string]*renewal // owner → its watchdog (Redisson's EXPIRATION_RENEWAL_MAP)
	// renew extends owner's lease once and says whether it still holds
	// the lock; nil runs the hash lock's renewal script.
	renew func(ctx context.Context, owner string) (bool, error)
}

func newRenewer(env Env) renewer {
	return renewer{env: env, ttl: ttlOr(&env, sourceLease), renewals: make(map[string]*renewal)}
}

type renewal struct {
	depth  int
	cancel context.CancelFunc
}

func newWatchdog(ctx context.Context, env Env) (Locker, error) {
	w := &watchdogLocker{
		renewer: newRenewer(env),
		channel: env.Key + ":channel",
		wake:    make(chan struct{}, 1),
	}
	w.ps = env.Redis.Subscribe(ctx, w.channel)
	if _, err := w.ps.Receive(ctx); err != nil {
		w.ps.Close()
		return nil, err
	}
	w.env.Spawn(w.listen)
	return w, nil
}

// listen turns each release message into one permit. It reads the
// subscription itself rather than through PubSub.Channel, whose extra
// goroutine would add a hand-off to every lock transfer.
func (w *watchdogLocker) listen() {
	ctx := context.Background()
	for {
		if _, err := w.ps.ReceiveMessage(ctx); err != nil {
			if errors.Is(err, redis.ErrClosed) {
				return
			}
			continue // go-redis reconnects and resubscribes
		}
		select {
		case w.wake <- struct{}{}:
		default: // a permit is already pending: one waiter retries per message
		}
	}
}

// tryAcquire returns 0 when owner now holds the lock, else the holder's
// remaining lease.
func (w *renewer) tryAcquire(ctx context.Context, owner string) (time.Duration, error) {
	TraceOf(ctx).Trying()
	pttl, err := watchdogLock.Run(ctx, w.env.Redis, []string{w.env.Key}, w.ttl.Milliseconds(), owner).Int64()
	if errors.Is(err, redis.Nil) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	if pttl <= 0 { // no expiry, or gone since: try again soon
		pttl = 1
	}
	return time.Duration(pttl) * time.Millisecond, nil
}

func (w *watchdogLocker) Acquire(ctx context.Context, owner string) (Lease, error) {
	if _, err := w.acquire(ctx, owner, time.Time{}); err != nil {
		return nil, err
	}
	return &watchdogLease{w: w, owner: owner}, nil
}

// acquire waits until owner holds the lock, or until deadline (never, when
// zero: then it answers true or an error), or until ctx ends. It says
// whether owner now holds the lock, its watchdog started.
func (w *watchdogLocker) acquire(ctx context.Context, owner string, deadline time.Time) (bool, error) {
	// A client that finds others of its node waiting queues behind them
	// without trying: each release lets one waiter per node retry, and a
	// try from every arrival would only load the server. Its wait is then
	// bounded by a whole lease.
	// An owner that holds the lock already (a nested acquire) always
	// tries: no release will come to wake it.
	wait, err := w.ttl, error(nil)
	if w.waiting.Load() == 0 || w.holds(owner) {
		wait, err = w.tryAcquire(ctx, owner)
	}
	if err == nil && wait > 0 {
		w.waiting.Add(1)
		defer w.waiting.Add(-1)
	}
	for err == nil && wait > 0 {
		if !deadline.IsZero() {
			left := time.Until(deadline)
			if left <= 0 {
				return false, nil
			}
			wait = min(wait, left)
		}
		t := time.NewTimer(wait)
		select {
		case <-w.wake:
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return false, context.Cause(ctx)
		}
		t.Stop()
		wait, err = w.tryAcquire(ctx, owner)
	}
	if err != nil {
		return false, err
	}
	w.startRenewal(ctx, owner)
	return true, nil
}

// holds reports whether owner holds the lock through this node, as far as
// the node knows (its watchdog runs).
func (w *renewer) holds(owner string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	_, ok := w.renewals[owner]
	return ok
}

// startRenewal starts owner's watchdog, or counts one more level when it
// runs already. The watchdog lives in the owner's context: a crashed
// client's watchdog dies with it.
func (w *renewer) startRenewal(ctx context.Context, owner string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if r, ok := w.renewals[owner]; ok {
		r.depth++
		return
	}
	rctx, cancel := context.WithCancel(ctx)
	r := &renewal{depth: 1, cancel: cancel}
	w.renewals[owner] = r
	w.env.Spawn(func() { w.renewLoop(rctx, owner, r) })
}

// renewLoop renews owner's lease until r is stopped, its context ends (a
// crashed client), or a renewal fails. However it ends, it removes r, and
// only r: a later acquisition by the same owner has an entry of its own.
func (w *renewer) renewLoop(ctx context.Context, owner string, r *renewal) {
	defer w.forget(owner, r)
	t := time.NewTicker(w.ttl / 3)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		done := TraceOf(ctx).Renewing()
		ok, err := w.renewOnce(ctx, owner)
		done(err == nil && ok)
		if err != nil || !ok {
			// Redisson stops renewing when the renewal fails or finds the
			// lock gone.
			return
		}
	}
}

// renewOnce extends owner's lease once.
func (w *renewer) renewOnce(ctx context.Context, owner string) (bool, error) {
	if w.renew != nil {
		return w.renew(ctx, owner)
	}
	return watchdogRenew.Run(ctx, w.env.Redis, []string{w.env.Key}, owner, w.ttl.Milliseconds()).Bool()
}

// forget removes owner's watchdog entry if it is still r.
func (w *renewer) forget(owner string, r *renewal) {
	w.mu.Lock()
	defer w.mu.Unlock()
	r.cancel()
	if w.renewals[owner] == r {
		delete(w.renewals, owner)
	}
}

// stopRenewal counts one level down and stops the watchdog at zero.
func (w *renewer) stopRenewal(owner string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	r, ok := w.renewals[owner]
	if !ok {
		return
	}
	r.depth--
	if r.depth <= 0 {
		r.cancel()
		delete(w.renewals, owner)
	}
}

// Close drops the node's subscription.
func (w *watchdogLocker) Close() error { return w.ps.Close() }

type watchdogLease struct {
	w     *watchdogLocker
	owner string
}

func (*watchdogLease) Token() uint64 { return 0 }

func (l *watchdogLease) Release(ctx context.Context) error {
	w := l.w
	// Redisson cancels the renewal whatever the unlock answers.
	defer w.stopRenewal(l.owner)
	err := watchdogUnlock.Run(ctx, w.env.Redis, []string{w.env.Key, w.channel},
		"0", w.ttl.Milliseconds(), l.owner).Err()
	if errors.Is(err, redis.Nil) {
		return ErrNotHeld
	}
	return err
}
