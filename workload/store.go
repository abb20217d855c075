package workload

import (
	"context"
	"fmt"
	"slices"
	"strconv"

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

// claimPrefix checks that the prefix is free on c, server i of the
// run's (0 the main one), unless force, and clears it.
func claimPrefix(ctx context.Context, c *redis.Client, prefix string, force bool, i int) error {
	unreachable := func(err error) error {
		if i == 0 {
			return fmt.Errorf("%w: %v", servers.ErrUnreachable, err)
		}
		return fmt.Errorf("%w: server %d: %v", servers.ErrUnreachable, i, err)
	}
	n, err := countKeys(ctx, c, prefix)
	if err != nil {
		return unreachable(err)
	}
	if n > 0 && !force {
		on := ""
		if i > 0 {
			on = fmt.Sprintf(" on server %d", i)
		}
		return fmt.Errorf("%w: %q holds %s%s; pass --force to delete them, or choose another --prefix", ErrPrefixInUse, prefix, words.Count(n, "key"), on)
	}
	if err := clearPrefix(ctx, c, prefix); err != nil {
		return unreachable(err)
	}
	return nil
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

// clearPrefix deletes every key under prefix.
func clearPrefix(ctx context.Context, c *redis.Client, prefix string) error {
	return scan(ctx, c, prefix, func(ks []string) error { return c.Unlink(ctx, ks...).Err() })
}
