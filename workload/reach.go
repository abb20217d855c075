package workload

import (
	"fmt"

	"github.com/lockbench/lockbench/servers"
)

// Reach is what a run's faults can act on: the server that holds the
// sale's inventory, and whether the sale's clients reach their servers by
// addresses the fault proxy can stand in for.
type Reach struct {
	// Store holds the inventory: the Redis, the MySQL of a SQL sale, the
	// server of the first kind a sale Needs.
	Store servers.Server
	// Routed is true when latency and partition can be put between the
	// nodes and the servers (Redis, an Addressed store: yes; MySQL: no).
	Routed bool
	// InProcess is true when the sale runs inside lockbench's nodes, so
	// that faults can strike at its probe points and move its clocks;
	// false for a service under test.
	InProcess bool
	// Instances is true when the service's instances can be paused
	// (their pids or their containers are known).
	Instances bool
	// Restarts is true when they can be killed and started again (their
	// start commands are known too).
	Restarts bool
	// LockKey is true when the lock's key in Redis is known: the sale's
	// own, or the one a service under test was given.
	LockKey bool
	// Failover is true when the store is a Sentinel topology lockbench
	// started, whose replication it can hold back and whose primary it
	// can stop (the failover fault).
	Failover bool
	// Quorum is the server of the sale that can lose its quorum (the
	// first of its Needs that can, servers.Set.Quorum), nil when none can.
	Quorum servers.QuorumLoser
	// RemoteNodes is true when the sale's nodes run on other machines
	// (Remote): a node cannot be killed from here and started again.
	RemoteNodes bool
}

// ReachOf is what the faults of a run of sale on s act on. It fails with
// servers.ErrMissing when s lacks the store.
func ReachOf(s *servers.Set, sale Sale) (Reach, error) {
	t, err := storeReach(s, sale)
	if err != nil {
		return t, err
	}
	t.Quorum = s.Quorum(sale.Needs())
	return t, nil
}

// storeReach is ReachOf's store and what it allows.
func storeReach(s *servers.Set, sale Sale) (Reach, error) {
	switch store := sale.Needs().Store(); store {
	case servers.KindTarget:
		if len(s.Endpoints) == 0 {
			return Reach{}, fmt.Errorf("%w: %s", servers.ErrMissing, store.Title())
		}
		t := Reach{Store: s.Endpoints, Instances: len(s.TargetPids) > 0 || len(s.TargetContainers) > 0, LockKey: s.TargetLockKey != "" && s.Redis != nil}
		t.Restarts = len(s.TargetPids) > 0 && len(s.TargetStart) == len(s.TargetPids)
		t.Routed = len(s.TargetVia) > 0 && s.Redis != nil
		if s.Redis != nil {
			t.Store = s.Redis // the service's own: server-pause pauses it
		}
		return t, nil
	case "", servers.KindRedis, servers.KindRedisServers, servers.KindRedisReplica:
		if s.Redis == nil {
			return Reach{}, fmt.Errorf("%w: Redis", servers.ErrMissing)
		}
		t := Reach{Store: s.Redis, Routed: true, InProcess: true, LockKey: true}
		if f, ok := s.Redis.(*servers.Sentinel); ok {
			// The failover client finds the primary through the Sentinels:
			// no address the fault proxy could stand in for.
			t.Routed, t.Failover = false, f.Levers() != nil
		}
		return t, nil
	default:
		srv := s.Get(store)
		if srv == nil {
			return Reach{}, fmt.Errorf("%w: %s", servers.ErrMissing, store.Title())
		}
		_, routed := srv.(servers.Addressed)
		return Reach{Store: srv, InProcess: true, Routed: routed}, nil
	}
}

// Pausable reports whether the store can stop answering for a while.
func (t Reach) Pausable() bool { return t.Store != nil && servers.Pausable(t.Store) }

// Restartable reports whether the store can restart empty, every server
// of a cluster.
func (t Reach) Restartable() bool { return t.Store != nil && servers.Restartable(t.Store) }

// String names the store.
func (t Reach) String() string {
	if t.Store == nil {
		return "no server"
	}
	return t.Store.Name()
}
