// Package locks holds the lock implementations lockbench tests: every
// variant the source articles build, each with its known bug kept on purpose,
// next to the designs that are actually safe.
//
// A lock algorithm is described by an Impl in the catalog (All, Lookup);
// the sales that guard nothing with a lock (none, atomic, the SQL sales)
// are the workload's, not locks.
// Each simulated node creates its own Locker from an Env that carries the
// node's Redis client, clock and fault probe, so that nodes share nothing
// but the server, as separate service instances would.
package locks

import (
	"context"
	"errors"
	"io"
	"time"

	"github.com/redis/go-redis/v9"
)

// Sentinel errors, matched with errors.Is.
var (
	// ErrNotObtained means the lock could not be obtained: a try-lock gave
	// up, or its waiting bound ran out.
	ErrNotObtained = errors.New("locks: not obtained")
	// ErrNotHeld means a release found the lock not held by its caller.
	ErrNotHeld = errors.New("locks: not held")
	// ErrCrashed is the cause a caller's context carries when its client
	// died: a lock does nothing more on its behalf (a dead process cleans
	// nothing up). The workload's crash faults wrap it.
	ErrCrashed = errors.New("locks: client crashed")
)

// Redis is the part of go-redis the implementations call. *redis.Client
// satisfies it; keeping it narrow documents exactly what each variant sends.
type Redis interface {
	redis.Scripter
	Get(ctx context.Context, key string) *redis.StringCmd
	Del(ctx context.Context, keys ...string) *redis.IntCmd
	SetNX(ctx context.Context, key string, value any, expiration time.Duration) *redis.BoolCmd
	SetArgs(ctx context.Context, key string, value any, a redis.SetArgs) *redis.StatusCmd
	PExpire(ctx context.Context, key string, expiration time.Duration) *redis.BoolCmd
	GetSet(ctx context.Context, key string, value any) *redis.StringCmd
	Subscribe(ctx context.Context, channels ...string) *redis.PubSub
	PSubscribe(ctx context.Context, patterns ...string) *redis.PubSub
}

// Point names an instant in a lock's life where a fault may strike.
type Point string

// The probe points. Locks call the ones inside their own code; the
// workload calls the ones around the critical section.
const (
	// AfterSetNX is between SETNX and the separate EXPIRE (setnx-expire).
	AfterSetNX Point = "after-setnx"
	// Acquiring is between two steps of one acquisition: after a step
	// that decided something (a redlock vote won or lost, a fencing
	// token read) and before the next. A lock whose Acquire takes
	// several commands calls it there (Env.Pass), so that a holder fault
	// at=acquiring can stop it in the middle: a race inside Acquire (a
	// token read, then incremented in a second command) then shows.
	Acquiring Point = "acquiring"
	// BeforeDelete is after an owner check and before the DEL that
	// follows it (owner-check's non-atomic unlock), or just before an
	// atomic compare-and-delete is sent (lua, fenced), where the same
	// stall is harmless.
	BeforeDelete Point = "before-delete"
	// Acquired is right after the lock is obtained, inside the critical
	// section, before the stock is read.
	Acquired Point = "acquired"
	// Business is the business step between the read and the write.
	Business Point = "business"
	// BeforeRelease is after the write, before the release.
	BeforeRelease Point = "before-release"
	// Released is right after the release returned, whatever it found or
	// whatever failed.
	Released Point = "released"
)

// Probe is called at each Point with the calling client's context. A fault
// may block in it (a pause) or return an error (a crash), which the caller
// returns at once without cleaning up, as a dead process would.
type Probe func(ctx context.Context, p Point) error

// Env is what a Locker gets from the node it runs on.
type Env struct {
	// Node is the node's index.
	Node int
	// Redis is the node's own client, with its own connection pool.
	Redis Redis
	// Key is the lock's key; variants derive their other keys from it.
	Key string
	// Keys are the keys of every lock a MultiLocker may take together
	// (one per item of a sale of several, the first being Key); nil for
	// a sale of one item, and for every other kind of lock, which is made
	// once per key instead.
	Keys []string
	// TTL is the lease. Zero means the source's own default (Impl.DefaultTTL).
	TTL time.Duration
	// Now is the node's wall clock, which a clock-skew fault moves.
	// Nil means time.Now.
	Now func() time.Time
	// Probe is the node's fault probe; nil means no faults.
	Probe Probe
	// Servers are the node's own clients of the independent servers a
	// multi-server lock (redlock) runs on, one per server, the run's main
	// server first. Nil for every other implementation; a multi-server
	// lock given none runs on Redis alone.
	Servers []Redis
	// Remote is the node's way to the server a lock lives on when that is
	// not Redis (a ZooKeeper: Uses names its kind); nil when the run has
	// none.
	Remote *Remote
	// Go starts a goroutine of the lock's own (a renewal loop, a
	// listener) as one of the run's: a panic in it ends the run as an
	// internal error, never the whole process. Nil means a plain go
	// statement. A lock of a user's own may start its goroutines with it.
	Go func(f func())
}

// Spawn runs f in a goroutine through Go, or a plain go statement when
// Go is nil.
func (e *Env) Spawn(f func()) {
	if e.Go == nil {
		go f()
		return
	}
	e.Go(f)
}

// Remote is how one node reaches a server other than Redis that a lock
// lives on (ZooKeeper). Each node opens its own sessions through it, as
// each of the sources' processes has its own client.
type Remote struct {
	// Addrs are the server's host:port addresses (a cluster's members),
	// already routed through the node's fault proxy when a fault wants
	// one.
	Addrs []string
	// Wait waits out the node's pause: every read and write on the node's
	// connections waits on it, heartbeats included, so that a node paused
	// past its session's lease loses the session. Nil means the node is
	// never paused.
	Wait func(ctx context.Context) error
}

func (e *Env) now() time.Time {
	if e.Now == nil {
		return time.Now()
	}
	return e.Now()
}

// Pass calls the node's fault probe at p, and returns what it returns (a
// crash's error, to be returned at once); nil when there are no faults.
// A lock of a user's own calls it at the points it passes (Acquiring
// between the steps of its Acquire, BeforeDelete before a delete that
// follows an owner check), so that the holder faults strike it there.
func (e *Env) Pass(ctx context.Context, p Point) error { return e.probe(ctx, p) }

func (e *Env) probe(ctx context.Context, p Point) error {
	if e.Probe == nil {
		return nil
	}
	return e.Probe(ctx, p)
}

// Locker is one node's handle on a lock.
type Locker interface {
	// Acquire blocks until owner holds the lock, the implementation gives
	// up (ErrNotObtained) or ctx ends. Reentrant implementations let an
	// owner that already holds the lock acquire it again; each Lease must
	// then be released.
	Acquire(ctx context.Context, owner string) (Lease, error)
}

// Lease is one successful acquisition.
type Lease interface {
	// Token is the fencing token handed out with the lease, zero when the
	// implementation has none.
	Token() uint64
	// Release gives the lock up. It returns ErrNotHeld when the
	// implementation checks ownership and finds the lock not held.
	Release(ctx context.Context) error
}

// Uses names the kind of server a lock lives on, as package servers
// names it (servers.Kind): the run gives the lock a server of that kind.
type Uses string

// The servers lockbench's own locks live on. A lock on another kind of
// server names that kind ("etcd"); the server reaches the lock as
// Env.Remote.
const (
	// UsesRedis, the zero Uses, is one Redis: Env.Redis.
	UsesRedis Uses = ""
	// UsesServers is several independent Redis servers, one client of
	// each in Env.Servers (redlock); given none, the lock runs on
	// Env.Redis alone.
	UsesServers Uses = "redis-servers"
	// UsesReplica is one Redis primary with a replica (Env.Redis, a
	// failover client through Sentinel): a lock that waits for its
	// replica (WAIT) is never obtained on a server without one.
	UsesReplica Uses = "redis-replica"
	// UsesZooKeeper is a ZooKeeper: Env.Remote.
	UsesZooKeeper Uses = "zookeeper"
	// UsesEtcd is an etcd cluster: Env.Remote, its members' addresses.
	UsesEtcd Uses = "etcd"
)

// Info is what an implementation is to the people who run it: the name
// they give --impl, what `lockbench list` says of it, and the two
// properties a run asks of it. It is written once per implementation: a
// lock algorithm (Impl) holds it, and so does every implementation the
// harness runs (harness.Impl), the lockless sales included.
type Info struct {
	// Name is the --impl value.
	Name string
	// Summary is one line for `lockbench list`.
	Summary string
	// Source names the source article and listing it reproduces (the
	// articles are numbered 000 to 004; see docs/catalog.md).
	Source string
	// Notes record where the implementation departs from its source, and
	// why.
	Notes string
	// Beyond is true for a design beyond the source articles (fencing
	// tokens, third-party libraries): the built-in implementations are
	// listed with those the articles build first, these after them.
	Beyond bool
	// Reentrant is true when an owner may acquire the lock it holds
	// (--reentry).
	Reentrant bool
	// DefaultTTL is the source's lease when --ttl is not given (zero: no lease).
	DefaultTTL time.Duration
}

// Impl describes one lock algorithm: what it is to its users (Info), and
// how a node makes its Locker.
type Impl struct {
	Info
	// Fenced is true when leases carry fencing tokens for the store to
	// check: the store fences a lock only when it says so, and its tokens
	// are then held to be unique and increasing. An unfenced lock's
	// tokens, if it hands any out, are recorded and never sent to the
	// store.
	Fenced bool
	// Promises are what the lock promises beyond exclusion within its
	// lease (renewal, first-come order), which the checker holds it to.
	Promises Promises
	// Multi is true when its Lockers are MultiLockers, taking the locks of
	// several keys (a cart's items) together.
	Multi bool
	// Uses says where the lock lives.
	Uses Uses
	// Scripts are the Lua scripts the implementation runs, for preloading.
	Scripts []*redis.Script
	// New makes a node's Locker; ctx bounds its set-up only (a
	// subscription, say).
	New func(ctx context.Context, env Env) (Locker, error)
}

// Closer is implemented by Lockers that hold node-level resources (a
// subscription, timers) to free when the node shuts down.
type Closer = io.Closer
