package locks

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// ErrNoReplicaClient means lua-wait was given a Redis that cannot send
// WAIT on the connection its SET went out on.
var ErrNoReplicaClient = errors.New("locks: lua-wait needs a go-redis client (WAIT must follow SET on the same connection)")

// waitReplicas is how many replicas must have the lock before lua-wait
// grants it: one, the replica Sentinel would promote.
const waitReplicas = 1

// waitTimeout is how long lua-wait's WAIT waits for the replica: a tenth
// of the lease, 100 ms at most, so that most of the lease is left to the
// holder when the replica is slow, and a WAIT that times out answers
// within the clients' command timeout (a WAIT cut by the client's own
// deadline would leave the lock set, its outcome unknown).
func waitTimeout(lease time.Duration) time.Duration {
	return min(max(lease/10, time.Millisecond), 100*time.Millisecond)
}

// conner is a client that lends one of its connections: WAIT counts the
// replicas that have every write of its own connection, so it must go
// out on the SET's.
type conner interface {
	Conn() *redis.Conn
}

// replicatedTry is lua's SET NX PX followed, on the same connection, by
// WAIT 1 <timeout> (Redisson's lock with syncSlaves, its RedissonLock's
// "sync" of the lock to the replicas): the lock is granted only once a
// replica has it. When no replica acknowledged it in time, the lock is
// given back with the compare-and-delete and the try counts as not
// obtained: the waiter tries again.
func replicatedTry(ctx context.Context, env *Env, owner string) (uint64, bool, error) {
	cn, ok := env.Redis.(conner)
	if !ok {
		return 0, false, ErrNoReplicaClient
	}
	c := cn.Conn()
	defer c.Close()
	lease := ttlOr(env, sourceLease)
	err := c.SetArgs(ctx, env.Key, owner, redis.SetArgs{Mode: "NX", TTL: lease}).Err()
	if errors.Is(err, redis.Nil) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	n, err := c.Do(ctx, "WAIT", waitReplicas, waitTimeout(lease).Milliseconds()).Int64()
	if err == nil && n >= waitReplicas {
		return 0, true, nil
	}
	// The primary alone has the lock: a failover now would lose it. Give
	// it back, whatever WAIT said.
	if _, derr := luaUnlock.Run(ctx, c, []string{env.Key}, owner).Result(); derr != nil && err == nil {
		err = derr
	}
	if err != nil {
		return 0, false, fmt.Errorf("locks: lua-wait: %w", err)
	}
	return 0, false, nil
}
