package locks

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Redlock's parameters (antirez's algorithm, as Redisson's RedissonRedLock
// and source 004 describe it).
const (
	// RedlockServers is the number of independent servers redlock runs on
	// when not told otherwise: antirez's five.
	RedlockServers = 5
	// redlockDriftFactor is the share of the lease set aside for the
	// servers' clocks drifting apart (antirez: 0.01), on top of
	// redlockDriftFloor.
	redlockDriftFactor = 0.01
	// redlockDriftFloor is the fixed part of the drift allowance, 2 ms as
	// in antirez's reference implementation.
	redlockDriftFloor = 2 * time.Millisecond
	// redlockMinTry is the least time a try gives each server: the tenth
	// of the lease antirez advises is too short for a sub-second lease on
	// a loaded machine.
	redlockMinTry = 50 * time.Millisecond
)

// Quorum is how many of n servers make a majority.
func Quorum(n int) int { return n/2 + 1 }

// redlockLocker is antirez's Redlock: SET NX PX with a random value on
// each of N independent servers, held when a majority answered yes within
// the lease less the time the try took and the drift; otherwise deleted
// again where it may have been set, and tried again after a jittered
// pause.
type redlockLocker struct {
	env     Env
	servers []Redis
	ttl     time.Duration
	try     time.Duration // each server's share of a try
	drift   time.Duration
}

func newRedlock(_ context.Context, env Env) (Locker, error) {
	servers := env.Servers
	if len(servers) == 0 {
		servers = []Redis{env.Redis}
	}
	ttl := ttlOr(&env, sourceLease)
	return &redlockLocker{
		env:     env,
		servers: servers,
		ttl:     ttl,
		try:     max(ttl/10, redlockMinTry),
		drift:   time.Duration(float64(ttl)*redlockDriftFactor) + redlockDriftFloor,
	}, nil
}

// Acquire tries until the lock is held or ctx ends. Every try takes a
// fresh random value: a late SET or release of an abandoned try can then
// never pass for the lock a later try won.
func (l *redlockLocker) Acquire(ctx context.Context, owner string) (Lease, error) {
	for n := 0; ; n++ {
		lease, err := l.tryOnce(ctx, owner)
		if lease != nil || err != nil {
			return lease, err
		}
		if err := sleep(ctx, backoffJitter.delay(n)); err != nil {
			return nil, err
		}
	}
}

// tryOnce is one round of the algorithm: a lease when a majority was won
// in time, nil and nil when not (what the round may have set is deleted
// again), or ctx's error.
//
// The servers are tried one after another in the same order by every
// client, and a round stops as soon as a majority is out of reach, as
// Redisson's RedissonRedLock does (failedLocksLimit): clients that all
// ask every server at once split the votes under contention, and then
// nobody wins.
func (l *redlockLocker) tryOnce(ctx context.Context, owner string) (Lease, error) {
	TraceOf(ctx).Trying()
	value := owner + ":" + randomHex()
	q := Quorum(len(l.servers))
	start := l.env.now()
	var set []Redis // servers where the value may be: won, or no answer
	won, failed := 0, 0
	held := make([]bool, len(l.servers))
	for i, s := range l.servers {
		c, cancel := context.WithTimeout(ctx, l.try)
		err := s.SetArgs(c, l.env.Key, value, redis.SetArgs{Mode: "NX", TTL: l.ttl}).Err()
		cancel()
		switch {
		case err == nil:
			won++
			held[i] = true
			set = append(set, s)
		case errors.Is(err, redis.Nil):
			failed++
		default:
			failed++
			set = append(set, s) // the SET may have landed
		}
		if failed > len(l.servers)-q || ctx.Err() != nil {
			break
		}
		if won == q && i < len(l.servers)-1 {
			// Right after the vote that made the majority, with votes
			// left: a pause here eats the validity the round has left
			// (the votes won age on their servers), which the validity
			// computed below must account. Only a client holding a
			// majority reaches it, so no other client of its node holds
			// the lock when a pause of the node strikes it there; a probe
			// after any vote would also stop, with the whole node, a
			// holder already inside its critical section: the lease's
			// known limit, not the votes'.
			if err := l.env.probe(ctx, Acquiring); err != nil {
				return nil, err
			}
		}
	}
	validity := l.ttl - l.env.now().Sub(start) - l.drift
	if won >= q && validity > 0 {
		return &redlockLease{l: l, value: value, validity: validity, held: held}, nil
	}
	// Cleaned up even when ctx ended meanwhile: the round won nothing,
	// and what it set would otherwise block every server it reached for
	// a whole lease.
	l.release(context.WithoutCancel(ctx), set, value)
	if ctx.Err() != nil {
		return nil, context.Cause(ctx)
	}
	return nil, nil
}

// release runs the compare-and-delete on the servers given, at once,
// each bounded by the try timeout, and says for each whether it deleted
// the key and what error it gave.
func (l *redlockLocker) release(ctx context.Context, servers []Redis, value string) (deleted []bool, errs []error) {
	deleted, errs = make([]bool, len(servers)), make([]error, len(servers))
	var wg sync.WaitGroup
	for i, s := range servers {
		wg.Add(1)
		l.env.Spawn(func() {
			defer wg.Done()
			c, cancel := context.WithTimeout(ctx, l.try)
			defer cancel()
			n, err := luaUnlock.Run(c, s, []string{l.env.Key}, value).Int64()
			deleted[i], errs[i] = n == 1, err
		})
	}
	wg.Wait()
	return deleted, errs
}

// randomHex is 16 random hex digits.
func randomHex() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

type redlockLease struct {
	l        *redlockLocker
	value    string
	validity time.Duration
	held     []bool // the servers the lease was won on
}

func (*redlockLease) Token() uint64 { return 0 }

// Validity is how long the lock was known to be held when it was obtained:
// the lease less the time the try took and the drift allowance.
func (r *redlockLease) Validity() time.Duration { return r.validity }

// Release deletes the key on every server that still holds this lease's
// value. It returns ErrNotHeld when fewer than a majority did: the lock
// had been lost. When servers the lease was won on did not answer, and
// the deletions they may have made could have made a majority, their
// errors are returned instead: whether the lock was still held is unknown.
func (r *redlockLease) Release(ctx context.Context) error {
	deleted, errs := r.l.release(ctx, r.l.servers, r.value)
	d, unknown := 0, 0
	var held []error
	for i := range deleted {
		switch {
		case deleted[i]:
			d++
		case errs[i] != nil && r.held[i]:
			unknown++
			held = append(held, errs[i])
		}
	}
	q := Quorum(len(r.l.servers))
	switch {
	case d >= q:
		return nil
	case d+unknown >= q:
		return errors.Join(held...)
	}
	return fmt.Errorf("%w: %d of %d servers still held the lock", ErrNotHeld, d, len(r.l.servers))
}
