package workload

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/lockbench/lockbench/servers"

	"github.com/lockbench/lockbench/internal/words"
	"github.com/redis/go-redis/v9"
)

// keys are the Redis keys of one run the engine knows: its prefix and
// its lock keys, which the faults act on. A sale's inventory names its
// own under the prefix.
type keys struct {
	prefix string
	// lock is the lock key of a sale of one item, the name a failover
	// fault looks for on the replica.
	lock string
	// locks are each item's lock key; a sale of one item has one, lock.
	locks []string
}

// newKeys returns the keys of a sale of n items. One item keeps the
// sources' name, lock; item i of several has lock:i, so that the items
// share nothing.
func newKeys(prefix string, n int) keys {
	k := keys{prefix: prefix, lock: prefix + "lock"}
	if n <= 1 {
		k.locks = []string{k.lock}
		return k
	}
	for i := range n {
		k.locks = append(k.locks, prefix+"lock:"+strconv.Itoa(i))
	}
	return k
}

// export is k as a sale sees it.
func (k *keys) export() Keys {
	return Keys{Prefix: k.prefix, Locks: slices.Clone(k.locks)}
}

// The prefix of a run is claimed on each Redis it uses, atomically: a
// claim key under it, set with NX, holds the run's identity (claimant)
// with a lease, renewed while the run lives and deleted at its end
// (clearPrefix). A second run on the same prefix finds the claim and is
// refused, naming the first; a run that died without releasing leaves a
// claim that runs out within claimLease, and one on this machine whose
// process is gone is recognised as such at once.
const (
	claimSuffix = "claim"
	// claimLease is how long a claim outlives its run's last renewal.
	claimLease = 15 * time.Second
	// claimRenew is how often a live run renews its claim.
	claimRenew = claimLease / 3
)

// claimant is the identity a run writes into its claim.
type claimant struct {
	ID      string    `json:"id"`
	Host    string    `json:"host"`
	PID     int       `json:"pid"`
	Started time.Time `json:"started"`
}

// String names the run the claim is of, for the error of a run refused.
func (c claimant) String() string {
	return fmt.Sprintf("the run of pid %d on %s, started %s", c.PID, c.Host, c.Started.UTC().Format("2006-01-02 15:04:05 UTC"))
}

// dead reports whether c is a run of this machine's whose process is gone.
func (c claimant) dead() bool {
	host, err := os.Hostname()
	if err != nil || host != c.Host || c.PID <= 0 {
		return false
	}
	return errors.Is(syscall.Kill(c.PID, 0), syscall.ESRCH)
}

// claims are the claims this process holds, each renewed by a goroutine
// until clearPrefix releases it: claimPrefix and clearPrefix keep their
// shape for their callers, and what lies between them lives here.
var claims = struct {
	sync.Mutex
	held map[claimRef]*heldClaim
}{held: map[claimRef]*heldClaim{}}

// claimRef is a claim this process holds: a prefix on one client.
type claimRef struct {
	c      *redis.Client
	prefix string
}

// heldClaim is one claim held: its value, and the stop of its renewal.
type heldClaim struct {
	value string
	stop  context.CancelFunc
	done  chan struct{}
}

// renewClaim extends a claim's lease if it is still value's; releaseClaim
// deletes it if it is; takeClaim replaces the claim ARGV[1] (a dead run's)
// by ARGV[2].
var (
	renewClaim   = redis.NewScript(`if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call("PEXPIRE", KEYS[1], ARGV[2]) end return 0`)
	releaseClaim = redis.NewScript(`if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call("DEL", KEYS[1]) end return 0`)
	takeClaim    = redis.NewScript(`if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call("SET", KEYS[1], ARGV[2], "PX", ARGV[3]) end return false`)
)

// claimPrefix claims the prefix on c, server i of the run's (0 the main
// one), then checks that it holds no other key, unless force, and clears
// it. A prefix another run claims is refused (ErrPrefixInUse) naming that
// run, force or not; a dead run's claim on this machine is taken over
// with force.
func claimPrefix(ctx context.Context, c *redis.Client, prefix string, force bool, i int) error {
	unreachable := func(err error) error {
		if i == 0 {
			return fmt.Errorf("%w: %v", servers.ErrUnreachable, err)
		}
		return fmt.Errorf("%w: server %d: %v", servers.ErrUnreachable, i, err)
	}
	on := ""
	if i > 0 {
		on = fmt.Sprintf(" on server %d", i)
	}
	key := prefix + claimSuffix
	me := newClaimant()
	value, _ := json.Marshal(me)
	ok, err := c.SetNX(ctx, key, value, claimLease).Result()
	if err != nil {
		return unreachable(err)
	}
	if !ok {
		if err := takeOver(ctx, c, key, string(value), prefix, on, force); err != nil {
			return err
		}
	}
	ref := claimRef{c, prefix}
	hold(ref, string(value))
	// On a refusal the claim goes, and the keys found stay.
	release := func() { unhold(context.WithoutCancel(ctx), ref) }
	n, err := countKeys(ctx, c, prefix)
	if err != nil {
		release()
		return unreachable(err)
	}
	if n--; n > 0 && !force { // the claim aside
		release()
		return fmt.Errorf("%w: %q holds %s%s; pass --force to delete them, or choose another --prefix", ErrPrefixInUse, prefix, words.Count(n, "key"), on)
	}
	if err := clearKeys(ctx, c, prefix, key); err != nil {
		release()
		return unreachable(err)
	}
	return nil
}

// takeOver is the claim of a prefix another claim holds: refused, naming
// the run that holds it, unless that run is gone and force takes it over.
func takeOver(ctx context.Context, c *redis.Client, key, value, prefix, on string, force bool) error {
	old, err := c.Get(ctx, key).Result()
	switch {
	case errors.Is(err, redis.Nil):
		// Released between the two commands: claim it again.
		ok, err := c.SetNX(ctx, key, value, claimLease).Result()
		if err == nil && ok {
			return nil
		}
		return inUse("%q%s is claimed by another run that started as this one did; choose another --prefix", prefix, on)
	case err != nil:
		return fmt.Errorf("%w: %v", servers.ErrUnreachable, err)
	}
	var other claimant
	if err := json.Unmarshal([]byte(old), &other); err != nil || other.ID == "" {
		return inUse("%q%s is claimed by %q, which is no claim of lockbench's; choose another --prefix", prefix, on, snippet(old))
	}
	if !other.dead() {
		return inUse("%q%s is in use by %s (its claim, %s, is renewed while it runs): wait for it to end, or choose another --prefix", prefix, on, other, key)
	}
	if !force {
		return inUse("%q%s is claimed by %s, which is no longer running (it ended without releasing %s): its claim runs out within %v, or pass --force to take it over", prefix, on, other, key, claimLease)
	}
	if err := takeClaim.Run(ctx, c, []string{key}, old, value, claimLease.Milliseconds()).Err(); err != nil {
		if errors.Is(err, redis.Nil) {
			return inUse("%q%s: the dead run's claim changed hands while it was taken over; try again", prefix, on)
		}
		return fmt.Errorf("%w: %v", servers.ErrUnreachable, err)
	}
	return nil
}

// inUse is the error of a prefix another run claims: ErrPrefixInUse,
// said as the claim found (ErrPrefixInUse's own words are of keys left).
func inUse(format string, args ...any) error {
	return prefixInUse{fmt.Sprintf(format, args...)}
}

// prefixInUse is an ErrPrefixInUse that says why in words of its own.
type prefixInUse struct{ msg string }

func (e prefixInUse) Error() string { return "workload: " + e.msg }
func (e prefixInUse) Unwrap() error { return ErrPrefixInUse }

// newClaimant is this run's identity.
func newClaimant() claimant {
	host, _ := os.Hostname()
	return claimant{ID: newUUID(), Host: host, PID: os.Getpid(), Started: time.Now().UTC().Truncate(time.Second)}
}

// hold keeps the claim ref holds, value, renewed every claimRenew until
// clearPrefix releases it.
func hold(ref claimRef, value string) {
	ctx, stop := context.WithCancel(context.Background())
	h := &heldClaim{value: value, stop: stop, done: make(chan struct{})}
	claims.Lock()
	claims.held[ref] = h
	claims.Unlock()
	go func() {
		defer close(h.done)
		t := time.NewTicker(claimRenew)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				rctx, cancel := context.WithTimeout(ctx, claimRenew)
				renewClaim.Run(rctx, ref.c, []string{ref.prefix + claimSuffix}, value, claimLease.Milliseconds())
				cancel()
			}
		}
	}()
}

// snippet is the start of a value read from Redis, for an error.
func snippet(s string) string {
	if len(s) > 80 {
		return s[:80] + "..."
	}
	return s
}

func scan(ctx context.Context, c *redis.Client, prefix string, each func([]string) error) error {
	var cursor uint64
	for {
		ks, next, err := c.Scan(ctx, cursor, prefix+"*", 1000).Result()
		if err != nil {
			return err
		}
		if len(ks) > 0 {
			if err := each(ks); err != nil {
				return err
			}
		}
		if next == 0 {
			return nil
		}
		cursor = next
	}
}

func countKeys(ctx context.Context, c *redis.Client, prefix string) (int, error) {
	n := 0
	err := scan(ctx, c, prefix, func(ks []string) error { n += len(ks); return nil })
	return n, err
}

// clearPrefix deletes every key under prefix at the end of a run, and
// releases the run's claim of it: its renewal stopped, its key deleted
// if it is still the run's.
func clearPrefix(ctx context.Context, c *redis.Client, prefix string) error {
	// A claim not held here is another run's, and stays.
	err := clearKeys(ctx, c, prefix, prefix+claimSuffix)
	return errors.Join(err, unhold(ctx, claimRef{c, prefix}))
}

// unhold releases the claim ref names, if this process holds it: its
// renewal stopped, its key deleted if it is still the run's.
func unhold(ctx context.Context, ref claimRef) error {
	claims.Lock()
	h := claims.held[ref]
	delete(claims.held, ref)
	claims.Unlock()
	if h == nil {
		return nil
	}
	h.stop()
	<-h.done
	return releaseClaim.Run(ctx, ref.c, []string{ref.prefix + claimSuffix}, h.value).Err()
}

// clearKeys deletes every key under prefix but keep.
func clearKeys(ctx context.Context, c *redis.Client, prefix, keep string) error {
	return scan(ctx, c, prefix, func(ks []string) error {
		ks = slices.DeleteFunc(ks, func(k string) bool { return k == keep })
		if len(ks) == 0 {
			return nil
		}
		return c.Unlink(ctx, ks...).Err()
	})
}
