package workload

import (
	"errors"
	"strings"
)

// ErrNoRedis means a sale that keeps its inventory or its lock in Redis
// was run without one.
var ErrNoRedis = errors.New("workload: no Redis server")

// Server is one server a sale runs on: a Redis (one, or several as a
// Cluster), a ZooKeeper or a MySQL, whether lockbench runs it in process,
// reaches it by address or started it in a container. A server may also
// pause (Pauser) or restart (Restarter); clients reach Redis and
// ZooKeeper by an address the fault proxy can stand in for.
type Server interface {
	// Name says what the server is and where, for the summary.
	Name() string
	// Version is the server's own version, "" when it does not say.
	Version() string
	// Close stops the server if lockbench started it.
	Close() error
}

// ZooKeeperServer is a ZooKeeper reached at an address.
type ZooKeeperServer interface {
	Server
	// Addr is the server's host:port.
	Addr() string
}

// Servers are the servers a run's sales may use; a field is nil when the
// run has no such server. A sale uses those its Needs name.
type Servers struct {
	// Redis holds the inventory and the locks of the Redis sales; a
	// Cluster for a lock on several servers.
	Redis Backend
	// ZooKeeper is where the ZooKeeper locks live.
	ZooKeeper ZooKeeperServer
	// MySQL holds the inventory of the SQL sales.
	MySQL *MySQL
	// Endpoints are the instances of a service under test (sales.HTTPSale). With
	// them, Redis (when given) is the service's own, which server-pause
	// pauses and the lock-key faults reach.
	Endpoints Endpoints
	// TargetPids are the process ids of the instances, in Endpoints' order:
	// with them pause-instance can stop one (SIGSTOP, SIGCONT).
	TargetPids []int
	// TargetContainers are the Docker containers of the instances, in
	// Endpoints' order, when they run in containers: pause-instance pauses
	// one (docker pause, docker unpause).
	TargetContainers []string
	// TargetLockKey names the service's lock key in its Redis: with it,
	// delete-lock can make the lock vanish.
	TargetLockKey string
	// TargetVia are the addresses the instances dial for their Redis, in
	// Endpoints' order: lockbench relays each to Redis through its fault
	// proxy for the whole run, so that latency and cut-link reach the link.
	TargetVia []string
	// TargetStart are the shell commands that start each instance again,
	// in Endpoints' order: with them (and the pids) crash-instance can kill
	// one and restart it.
	TargetStart []string
}

// Missing returns the servers of needs that s lacks, as a set.
func (s *Servers) Missing(needs Needs) Needs {
	var have Needs
	if s != nil && s.Redis != nil {
		have |= NeedsRedis
		if _, ok := s.Redis.(Failover); ok {
			have |= NeedsReplica
		}
		if c, ok := s.Redis.(*Cluster); ok && len(c.servers) > 1 {
			have |= NeedsRedisServers
		}
	}
	if s != nil && s.ZooKeeper != nil {
		have |= NeedsZooKeeper
	}
	if s != nil && s.MySQL != nil {
		have |= NeedsMySQL
	}
	if s != nil && len(s.Endpoints) > 0 {
		have |= NeedsTarget
	}
	return needs &^ have
}

// Reach is what a run's faults can act on: the server that holds the
// sale's inventory, and whether the sale's clients reach their servers by
// addresses the fault proxy can stand in for.
type Reach struct {
	// Store holds the inventory: the Redis, or the MySQL of a SQL sale.
	Store Server
	// Routed is true when latency and partition can be put between the
	// nodes and the servers (Redis, ZooKeeper: yes; MySQL: no).
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
	// RemoteNodes is true when the sale's nodes run on other machines
	// (Remote): a node cannot be killed from here and started again.
	RemoteNodes bool
}

// Reach is what the faults of a run of sale on s act on. It fails with
// ErrNoRedis or ErrNoMySQL when s lacks the store.
func (s *Servers) Reach(sale Sale) (Reach, error) {
	if sale.Needs().Has(NeedsTarget) {
		if len(s.Endpoints) == 0 {
			return Reach{}, ErrMissingServer
		}
		t := Reach{Store: Server(s.Endpoints), Instances: len(s.TargetPids) > 0 || len(s.TargetContainers) > 0, LockKey: s.TargetLockKey != "" && s.Redis != nil}
		t.Restarts = len(s.TargetPids) > 0 && len(s.TargetStart) == len(s.TargetPids)
		t.Routed = len(s.TargetVia) > 0 && s.Redis != nil
		if s.Redis != nil {
			t.Store = s.Redis // the service's own: server-pause pauses it
		}
		return t, nil
	}
	if sale.Needs().Has(NeedsMySQL) {
		if s.MySQL == nil {
			return Reach{}, ErrNoMySQL
		}
		return Reach{Store: s.MySQL, InProcess: true}, nil
	}
	if s.Redis == nil {
		return Reach{}, ErrNoRedis
	}
	t := Reach{Store: s.Redis, Routed: true, InProcess: true, LockKey: true}
	if f, ok := s.Redis.(*Sentinel); ok {
		// The failover client finds the primary through the Sentinels:
		// no address the fault proxy could stand in for.
		t.Routed, t.Failover = false, f.levers != nil
	}
	return t, nil
}

// Pausable reports whether the store can stop answering for a while.
func (t Reach) Pausable() bool {
	if m, ok := t.Store.(*MySQL); ok {
		return m.pausable()
	}
	if c, ok := t.Store.(*Cluster); ok {
		_, ok := c.servers[0].(Pauser)
		return ok
	}
	_, ok := t.Store.(Pauser)
	return ok
}

// Restartable reports whether the store can restart empty, every server
// of a cluster.
func (t Reach) Restartable() bool {
	c, ok := t.Store.(*Cluster)
	if !ok {
		_, ok := t.Store.(Restarter)
		return ok
	}
	for _, s := range c.servers {
		if _, ok := s.(Restarter); !ok {
			return false
		}
	}
	return true
}

// String names the store.
func (t Reach) String() string {
	if t.Store == nil {
		return "no server"
	}
	return t.Store.Name()
}

// describeNeeds names the servers of n, for errors.
func describeNeeds(n Needs) string {
	var out []string
	for _, x := range []struct {
		n    Needs
		name string
	}{{NeedsRedis, "Redis"}, {NeedsRedisServers, "several Redis servers"}, {NeedsZooKeeper, "ZooKeeper"}, {NeedsMySQL, "MySQL"}, {NeedsTarget, "a service under test"}, {NeedsReplica, "a Redis with a replica (Sentinel)"}} {
		if n.Has(x.n) {
			out = append(out, x.name)
		}
	}
	return strings.Join(out, ", ")
}

// String names the servers of n.
func (n Needs) String() string {
	if n == 0 {
		return "none"
	}
	return describeNeeds(n)
}
