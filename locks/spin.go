package locks

import (
	"context"
	"errors"
	"time"

	"github.com/lockbench/lockbench/internal/ctxtime"
	"github.com/redis/go-redis/v9"
)

// spinLocker is Redisson's RSpinLock (source 004 names it): the same
// reentrant hash lock and watchdog as RLock, but no pub/sub: a waiter
// retries after an exponential backoff (Redisson's default
// ExponentialBackOff: 1 ms, doubling, at most 128 ms), and never sleeps
// past the holder's remaining lease.
type spinLocker struct {
	renewer
}

// spinBackoff is the wait before try n+1: 1 ms doubling up to 128 ms.
func spinBackoff(n int) time.Duration {
	return time.Millisecond << min(n, 7)
}

func newSpin(_ context.Context, env Env) (Locker, error) {
	return &spinLocker{renewer: newRenewer(env)}, nil
}

func (s *spinLocker) Acquire(ctx context.Context, owner string) (Lease, error) {
	for try := 0; ; try++ {
		left, err := s.tryAcquire(ctx, owner)
		if err != nil {
			return nil, err
		}
		if left == 0 {
			s.startRenewal(ctx, owner)
			return &spinLease{s: s, owner: owner}, nil
		}
		if err := ctxtime.Sleep(ctx, min(spinBackoff(try), left)); err != nil {
			return nil, err
		}
	}
}

type spinLease struct {
	s     *spinLocker
	owner string
}

func (*spinLease) Token() uint64 { return 0 }

func (l *spinLease) Release(ctx context.Context) error {
	defer l.s.stopRenewal(l.owner)
	err := spinUnlock.Run(ctx, l.s.env.Redis, []string{l.s.env.Key}, l.s.ttl.Milliseconds(), l.owner).Err()
	if errors.Is(err, redis.Nil) {
		return ErrNotHeld
	}
	return err
}
