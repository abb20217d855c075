package locks

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/lockbench/lockbench/internal/ctxtime"
)

// backoff is how a spinning variant waits between tries.
type backoff interface {
	// delay returns the pause before try number n+1 (n counts from 0).
	delay(n int) time.Duration
}

// fixedSleep is the sources' spin: Thread.sleep with a constant.
type fixedSleep time.Duration

func (d fixedSleep) delay(int) time.Duration { return time.Duration(d) }

// sourceSleep is the getset source's sleep: a base plus a random jitter.
type sourceSleep struct{ base, jitter time.Duration }

func (s sourceSleep) delay(int) time.Duration {
	return s.base + rand.N(s.jitter)
}

// jittered is exponential backoff with full jitter: a random pause up to a
// ceiling that doubles per try up to max, so that waiters spread out
// instead of retrying in step.
type jittered struct{ base, max time.Duration }

func (j jittered) delay(n int) time.Duration {
	ceil := j.base << min(n, 16)
	if ceil > j.max || ceil <= 0 {
		ceil = j.max
	}
	return j.base/2 + rand.N(ceil)
}

// Backoff is the pause before try n+1 (n counts from 0) of a waiter that
// backs off with jitter, as lua and fenced do: exponential with full
// jitter, from 1 ms up to 32 ms. The optimistic MySQL sale retries with it
// too.
func Backoff(n int) time.Duration { return backoffJitter.delay(n) }

// sleep waits d or until ctx ends.
var sleep = ctxtime.Sleep

// spin calls try until it obtains the lock, fails, or ctx ends, pausing as
// b says between tries. It is the waiting loop of every source variant that
// spins ("while (!tryLock) sleep").
func spin(ctx context.Context, b backoff, try func() (bool, error)) error {
	for n := 0; ; n++ {
		ok, err := try()
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		if err := sleep(ctx, b.delay(n)); err != nil {
			return err
		}
	}
}
