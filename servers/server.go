package servers

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
)

// Sentinel errors of the servers, matched with errors.Is.
var (
	// ErrUnreachable means a server could not be reached: an
	// infrastructure failure, not a finding about a lock.
	ErrUnreachable = errors.New("servers: server unreachable")
	// ErrUnsupported means a server cannot do what was asked of it (pause
	// or restart).
	ErrUnsupported = errors.New("servers: not supported by this server")
	// ErrNotInstalled means a server lockbench starts itself is not
	// installed on this machine.
	ErrNotInstalled = errors.New("servers: not installed")
	// ErrNotStarted means a lever that acts on a server's processes
	// (pause, restart, quorum loss) was pulled on a server lockbench did
	// not start; it wraps ErrUnsupported.
	ErrNotStarted = fmt.Errorf("%w: not a server lockbench started", ErrUnsupported)
	// ErrMissing means a sale was run without a server it needs.
	ErrMissing = errors.New("servers: a server the sale needs is missing")
	// ErrBadAddress means an address given for a server cannot be read
	// or is not on this machine's loopback.
	ErrBadAddress = errors.New("servers: bad server address")
)

// Server is one server a sale runs on: a Redis (one, or several as a
// Cluster), a ZooKeeper, a MySQL, a service under test, whether lockbench
// runs it in process, reaches it by address or started it itself. What a
// server can do beyond naming itself is said by the small interfaces it
// implements: Pauser, Restarter, QuorumLoser, Addressed, Routable,
// Portable.
type Server interface {
	// Name says what the server is and where, for the summary.
	Name() string
	// Version is the server's own version, "" when it does not say.
	Version() string
	// Close stops the server if lockbench started it.
	Close() error
}

// Pauser is a server that can stop answering for a while (CLIENT PAUSE,
// SIGSTOP, docker pause): the server-pause fault needs it.
type Pauser interface {
	Pause(ctx context.Context, d time.Duration) error
}

// Restarter is a server that can restart without persistence: every key
// is lost. The restart fault needs it.
type Restarter interface {
	Restart(ctx context.Context) error
}

// QuorumLoser is a replicated server that can lose its quorum for a
// while: a majority of its members stop and resume after d, so that the
// ones left can neither elect a leader nor commit. The lose-quorum fault
// needs it.
type QuorumLoser interface {
	Server
	// LoseQuorum stops a majority for d, in the background.
	LoseQuorum(ctx context.Context, d time.Duration) error
	// CanLoseQuorum reports whether lockbench holds the members'
	// processes: false for a user's cluster, which it leaves alone.
	CanLoseQuorum() bool
}

// Addressed is a server whose clients dial it at host:port addresses:
// the engine puts each node's fault proxy in front of every one of them,
// so that latency, partition and cut-link reach the node's link.
type Addressed interface {
	Server
	// Addrs are the addresses the server's clients dial.
	Addrs() []string
}

// Routable is an Addressed server whose clients reach it by a spec that
// names its address (a DSN, with a user, a password, a database and
// options): a node that dials a fault proxy in its place rebuilds it, by
// its kind's Node, from the whole spec with the proxy's address in it.
type Routable interface {
	Addressed
	// SpecAt is the spec with addrs (in Addrs' order) in place of the
	// server's own addresses.
	SpecAt(addrs []string) (string, error)
}

// SpecAt is how a node that dials addrs in place of a's own (its fault
// proxy's) reaches a, as a's kind's Node reads it: the whole spec with
// addrs in it (Routable), else addrs joined by commas.
func SpecAt(a Addressed, addrs []string) (string, error) {
	if r, ok := a.(Routable); ok {
		return r.SpecAt(addrs)
	}
	return strings.Join(addrs, ","), nil
}

// Portable is a server a node in a process of its own reaches by a spec
// the coordinator sends it (a DSN): the kind's Node rebuilds the server
// from it there. An Addressed server is rebuilt from its routed addresses
// instead.
type Portable interface {
	Server
	// Spec is what a node needs to reach the server.
	Spec() string
}

// InProcess is a Server that runs inside lockbench's own process (the
// embedded server): it cannot be lost, and its silence is the process's
// own starvation, which the run's health records instead.
type InProcess interface {
	InProcess()
}

// Host is what runs a server lockbench started or controls, a container
// or a process: it says where the server runs, and it can pause it.
type Host interface {
	Pauser
	// Where says where the server runs, for the server's Name: "in docker
	// (mariadb:11)"; "" adds nothing.
	Where() string
}

// Kind names a kind of server a sale can need: the word of Needs, of the
// registry and of messages.
type Kind string

// The kinds lockbench's own sales need. KindRedis is the engine's own
// store (the run claims its key prefix there, faults reach its keys);
// KindRedisServers and KindRedisReplica ask more of that Redis;
// KindTarget is a service under test. The other kinds are registered
// (Register) by the file that knows them.
const (
	// KindRedis is a Redis that holds the inventory (and the lock, for a
	// lock that lives in Redis).
	KindRedis Kind = "redis"
	// KindRedisServers is several independent Redis servers for a lock
	// that runs on many (redlock), a Cluster; the first is KindRedis.
	KindRedisServers Kind = "redis-servers"
	// KindRedisReplica is a Redis with a replica, reached through
	// Sentinel (a Failover), for a lock that waits for its replica.
	KindRedisReplica Kind = "redis-replica"
	// KindTarget is a running service under test (Set.Endpoints).
	KindTarget Kind = "target"
)

// Needs are the kinds of server a sale runs on, the one that holds its
// inventory first (Store).
type Needs []Kind

// Has reports whether k is among n.
func (n Needs) Has(k Kind) bool { return slices.Contains(n, k) }

// Store is the kind that holds the inventory: the first, "" for none.
func (n Needs) Store() Kind {
	if len(n) == 0 {
		return ""
	}
	return n[0]
}

// Union is n with the kinds of m it lacks, in order.
func (n Needs) Union(m Needs) Needs {
	out := slices.Clone(n)
	for _, k := range m {
		if !out.Has(k) {
			out = append(out, k)
		}
	}
	return out
}

// Without is n less the kinds of m.
func (n Needs) Without(m ...Kind) Needs {
	var out Needs
	for _, k := range n {
		if !slices.Contains(m, k) {
			out = append(out, k)
		}
	}
	return out
}

// String names the servers of n, for messages: "Redis, a ZooKeeper".
func (n Needs) String() string {
	if len(n) == 0 {
		return "none"
	}
	out := make([]string, len(n))
	for i, k := range n {
		out[i] = k.Title()
	}
	return strings.Join(out, ", ")
}

// builtinTitles name the kinds the engine knows itself.
var builtinTitles = map[Kind]string{
	KindRedis:        "Redis",
	KindRedisServers: "several Redis servers",
	KindRedisReplica: "a Redis with a replica (Sentinel)",
	KindTarget:       "a service under test",
}

// Title names the kind in a sentence: "Redis", a registered kind's Title,
// else the kind itself.
func (k Kind) Title() string {
	if t, ok := builtinTitles[k]; ok {
		return t
	}
	if info, ok := Lookup(k); ok && info.Title != "" {
		return info.Title
	}
	return string(k)
}

// KindInfo is what lockbench knows of a kind of server, registered once
// by the file that implements it: how the command line gives a user's
// server, how lockbench reaches it or starts one, and how a node in a
// process of its own rebuilds it. Adding a kind of server is one file
// that fills a KindInfo and calls Register from an init function.
type KindInfo struct {
	// Kind is the kind's word.
	Kind Kind
	// Title names it in a sentence: "a ZooKeeper".
	Title string
	// Flag is the command-line flag that gives a user's server ("zk");
	// Env is the environment variable the flag defaults to
	// ("LOCKBENCH_ZK"); Usage is the flag's help.
	Flag, Env, Usage string
	// Secret is true when the flag's value may hold a password (a DSN):
	// a reproduce line carries it with Redact's mask, or not at all when
	// it came from Env.
	Secret bool
	// Redact returns a Secret value with its password replaced by
	// PASSWORD; nil leaves it as it is.
	Redact func(value string) string
	// Hint says how to give a server of the kind, for the error of a run
	// without one.
	Hint string
	// Check reads the flag's value without dialing; its error says what
	// is wrong. Nil accepts any value.
	Check func(addr string) error
	// Dial reaches a user's server at the flag's value; it fails with
	// ErrUnreachable within a few seconds when the server does not answer.
	Dial func(ctx context.Context, addr string) (Server, error)
	// Start starts a server of the kind on this machine's loopback for a
	// run that gave none, stopped by its Close; nil when lockbench cannot
	// start one (Hint then says how to give one).
	Start func(ctx context.Context) (Server, error)
	// Node rebuilds the server on a node in a process of its own: from
	// its Spec (Portable), or from its addresses as the node dials them
	// (Addressed, joined by commas).
	Node func(spec string) (Server, error)
}

// ErrDuplicate means a kind of server was registered twice.
var ErrDuplicate = errors.New("servers: kind already registered")

var registry struct {
	sync.Mutex
	kinds map[Kind]KindInfo
}

// Register adds a kind of server. It panics on an empty kind or one
// registered before: a programming error, found at start-up.
func Register(info KindInfo) {
	registry.Lock()
	defer registry.Unlock()
	if info.Kind == "" {
		panic("servers: Register of a kind with no name")
	}
	if _, ok := registry.kinds[info.Kind]; ok {
		panic(fmt.Errorf("%w: %s", ErrDuplicate, info.Kind))
	}
	if registry.kinds == nil {
		registry.kinds = map[Kind]KindInfo{}
	}
	registry.kinds[info.Kind] = info
}

// Lookup returns the registered kind k.
func Lookup(k Kind) (KindInfo, bool) {
	registry.Lock()
	defer registry.Unlock()
	info, ok := registry.kinds[k]
	return info, ok
}

// Kinds returns every registered kind, by name.
func Kinds() []KindInfo {
	registry.Lock()
	defer registry.Unlock()
	out := make([]KindInfo, 0, len(registry.kinds))
	for _, info := range registry.kinds {
		out = append(out, info)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Kind < out[j].Kind })
	return out
}

// Set are the servers of a run; a sale uses those its Needs name. The
// engine's own store (Redis) and the service under test (Endpoints and
// what controls its instances) have fields of their own; every other
// kind is held by its Kind (Get, Put).
type Set struct {
	// Redis holds the inventory and the locks of the Redis sales; a
	// Cluster for a lock on several servers.
	Redis Backend
	// Endpoints are the instances of a service under test. With them,
	// Redis (when given) is the service's own, which server-pause pauses
	// and the lock-key faults reach.
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

	others map[Kind]Server
}

// Get returns the server of kind k, nil when the set has none: Redis for
// KindRedis, Endpoints for KindTarget, else the one Put gave.
func (s *Set) Get(k Kind) Server {
	if s == nil {
		return nil
	}
	switch k {
	case KindRedis, KindRedisServers, KindRedisReplica:
		if s.Redis == nil {
			return nil
		}
		return s.Redis
	case KindTarget:
		if len(s.Endpoints) == 0 {
			return nil
		}
		return s.Endpoints
	}
	return s.others[k]
}

// Put sets the server of kind k (not Redis nor the service under test,
// which have fields of their own).
func (s *Set) Put(k Kind, v Server) {
	if s.others == nil {
		s.others = map[Kind]Server{}
	}
	s.others[k] = v
}

// Others returns the servers Put gave, by kind.
func (s *Set) Others() map[Kind]Server {
	if s == nil {
		return nil
	}
	return s.others
}

// Missing returns the kinds of needs that s lacks.
func (s *Set) Missing(needs Needs) Needs {
	var out Needs
	for _, k := range needs {
		if !s.has(k) {
			out = append(out, k)
		}
	}
	return out
}

func (s *Set) has(k Kind) bool {
	if s.Get(k) == nil {
		return false
	}
	switch k {
	case KindRedisReplica:
		_, ok := s.Redis.(Failover)
		return ok
	case KindRedisServers:
		c, ok := s.Redis.(*Cluster)
		return ok && len(c.servers) > 1
	}
	return true
}

// Quorum returns the first server of needs in s that can lose its
// quorum (QuorumLoser), nil when none can.
func (s *Set) Quorum(needs Needs) QuorumLoser {
	for _, k := range needs {
		if q, ok := s.Get(k).(QuorumLoser); ok && q.CanLoseQuorum() {
			return q
		}
	}
	return nil
}

// With puts v as the server of kind k (Put) and returns s, for a set
// written in one expression.
func (s *Set) With(k Kind, v Server) *Set {
	s.Put(k, v)
	return s
}

// pauseFor stops what hold stops and lets it run again after d, in the
// background: hold returns the resume. The server levers that stop
// processes (SIGSTOP, SIGCONT) share it.
func pauseFor(d time.Duration, hold func() (resume func(), err error)) error {
	resume, err := hold()
	if err != nil {
		return err
	}
	go func() {
		time.Sleep(d)
		resume()
	}()
	return nil
}
