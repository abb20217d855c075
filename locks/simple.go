package locks

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"
)

// simpleLock is the string-valued Redis lock every early source variant
// builds: a try step, a release step, and a spin between tries. The
// variants differ only in those steps.
type simpleLock struct {
	env   Env
	wait  backoff
	try   func(ctx context.Context, env *Env, owner string) (token uint64, ok bool, err error)
	free  func(ctx context.Context, env *Env, owner string) error
	limit time.Duration // give up after this long; zero waits forever
}

func (l *simpleLock) Acquire(ctx context.Context, owner string) (Lease, error) {
	var token uint64
	var deadline time.Time
	if l.limit > 0 {
		deadline = time.Now().Add(l.limit)
	}
	err := spin(ctx, l.wait, func() (bool, error) {
		if !deadline.IsZero() && time.Now().After(deadline) {
			return false, ErrNotObtained
		}
		TraceOf(ctx).Trying()
		t, ok, err := l.try(ctx, &l.env, owner)
		token = t
		return ok, err
	})
	if err != nil {
		return nil, err
	}
	return &simpleLease{l: l, owner: owner, token: token}, nil
}

type simpleLease struct {
	l     *simpleLock
	owner string
	token uint64
}

func (s *simpleLease) Token() uint64 { return s.token }

func (s *simpleLease) Release(ctx context.Context) error {
	return s.l.free(ctx, &s.l.env, s.owner)
}

// ttlOr returns the lease to use: the configured one, or def.
func ttlOr(env *Env, def time.Duration) time.Duration {
	if env.TTL > 0 {
		return env.TTL
	}
	return def
}

// setNX is `SETNX lock owner` with no expiry (source 001 version 1, source 003
// first and second reworks).
func setNX(ctx context.Context, env *Env, owner string) (uint64, bool, error) {
	ok, err := env.Redis.SetNX(ctx, env.Key, owner, 0).Result()
	return 0, ok, err
}

// setNXThenExpire is SETNX followed by a separate EXPIRE (source 000 before
// SET NX EX; source 003's third-rework discussion). A death between the two
// leaves a lock that never expires.
func setNXThenExpire(ctx context.Context, env *Env, owner string) (uint64, bool, error) {
	ok, err := env.Redis.SetNX(ctx, env.Key, owner, 0).Result()
	if err != nil || !ok {
		return 0, false, err
	}
	if err := env.probe(ctx, AfterSetNX); err != nil {
		return 0, false, err
	}
	if err := env.Redis.PExpire(ctx, env.Key, ttlOr(env, sourceLease)).Err(); err != nil {
		return 0, false, err
	}
	return 0, true, nil
}

// setNXPX is the atomic `SET lock owner NX PX ttl` (source 000, source 001
// version 2 and 3, source 003 third rework on).
func setNXPX(ctx context.Context, env *Env, owner string) (uint64, bool, error) {
	err := env.Redis.SetArgs(ctx, env.Key, owner, redis.SetArgs{Mode: "NX", TTL: ttlOr(env, sourceLease)}).Err()
	if errors.Is(err, redis.Nil) {
		return 0, false, nil
	}
	return 0, err == nil, err
}

// fencedTry is SET NX PX that also hands out a fencing token. It first
// looks with a plain GET (test-and-test-and-set) so that waiters poll with a
// cheap read and run the script only when the lock looks free.
func fencedTry(ctx context.Context, env *Env, owner string) (uint64, bool, error) {
	if err := env.Redis.Get(ctx, env.Key).Err(); err == nil {
		return 0, false, nil
	} else if !errors.Is(err, redis.Nil) {
		return 0, false, err
	}
	n, err := fencedLock.Run(ctx, env.Redis, []string{env.Key, env.Key + ":fence"},
		owner, ttlOr(env, sourceLease).Milliseconds()).Int64()
	if err != nil {
		return 0, false, err
	}
	return uint64(n), n > 0, nil
}

// del is the unconditional `DEL lock` unlock: it deletes whoever's lock is
// there (source 001 versions 1 and 2, source 003 up to the third rework).
func del(ctx context.Context, env *Env, _ string) error {
	return env.Redis.Del(ctx, env.Key).Err()
}

// getCompareDel is the owner-checked unlock that is not atomic: GET,
// compare, then DEL (source 000 误删 fix, source 001 version 3, source 003 fourth
// rework). A pause between the compare and the DEL deletes the next
// owner's lock.
func getCompareDel(ctx context.Context, env *Env, owner string) error {
	v, err := env.Redis.Get(ctx, env.Key).Result()
	if errors.Is(err, redis.Nil) {
		// Source 003 calls Objects.requireNonNull on the GET: an expired
		// lock makes unlock throw.
		return ErrNotHeld
	}
	if err != nil {
		return err
	}
	if v != owner {
		return ErrNotHeld
	}
	if err := env.probe(ctx, BeforeDelete); err != nil {
		return err
	}
	return env.Redis.Del(ctx, env.Key).Err()
}

// compareAndDelete is the atomic Lua unlock. It has no window between
// its check and its delete; a stall just before it is sent (the
// BeforeDelete probe) shows that: the lease runs out, another client takes
// the lock, and the late unlock finds a value not its own and deletes
// nothing.
func compareAndDelete(ctx context.Context, env *Env, owner string) error {
	if err := env.probe(ctx, BeforeDelete); err != nil {
		return err
	}
	n, err := luaUnlock.Run(ctx, env.Redis, []string{env.Key}, owner).Int64()
	if err != nil {
		return err
	}
	if n == 0 {
		return ErrNotHeld
	}
	return nil
}
