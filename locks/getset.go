package locks

import (
	"context"
	"strconv"
	"time"
)

// getsetLock is source 002's RedisLock: the value is an expiry timestamp from
// the client's own clock; a waiter that finds it in the past takes the lock
// over with GETSET. Trusting clients' clocks is its flaw: a node whose
// clock runs ahead decides a live lock has expired and steals it.
type getsetLock struct {
	env      Env
	interval time.Duration // how long a holder may keep the lock (source: 5000 ms)
	timeout  time.Duration // how long tryLock tries (source: 1000 ms)
}

func newGetset(_ context.Context, env Env) (Locker, error) {
	return &getsetLock{env: env, interval: ttlOr(&env, getsetLease), timeout: getsetTimeout}, nil
}

func (l *getsetLock) Acquire(ctx context.Context, owner string) (Lease, error) {
	start := l.env.now()
	wait := sourceSleep{base: 200 * time.Millisecond, jitter: 40 * time.Millisecond}
	for {
		if l.env.now().Sub(start) > l.timeout {
			return nil, ErrNotObtained
		}
		ok, err := l.innerTryLock(ctx)
		if err != nil {
			return nil, err
		}
		if ok {
			return &simpleLease{l: &simpleLock{env: l.env, free: del}, owner: owner}, nil
		}
		if err := sleep(ctx, wait.delay(0)); err != nil {
			return nil, err
		}
	}
}

// innerTryLock follows the source line by line. Like the source it swallows
// Redis errors (it catches Exception and returns false); only the end of
// the caller's context stops it.
func (l *getsetLock) innerTryLock(ctx context.Context) (bool, error) {
	r := l.env.Redis
	now := l.env.now().UnixMilli()
	expireTime := strconv.FormatInt(now+l.interval.Milliseconds(), 10)
	ok, err := r.SetNX(ctx, l.env.Key, expireTime, 0).Result()
	if err != nil {
		return false, ctx.Err()
	}
	if ok {
		return true, nil
	}
	if l.checkIfLockTimeout(ctx, now) {
		expect, errGet := r.Get(ctx, l.env.Key).Result()
		pre, errSet := r.GetSet(ctx, l.env.Key, expireTime).Result()
		if errGet == nil && errSet == nil && pre == expect {
			return true, nil
		}
	}
	return false, ctx.Err()
}

// checkIfLockTimeout reports whether the lock's timestamp is in the past.
// As in the source, any failure (the key vanished, a parse error) counts as
// expired.
func (l *getsetLock) checkIfLockTimeout(ctx context.Context, now int64) bool {
	v, err := l.env.Redis.Get(ctx, l.env.Key).Result()
	if err != nil {
		return true
	}
	ts, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return true
	}
	return now > ts
}
