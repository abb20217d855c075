// Package backends opens the servers a sale runs on, as the --backend
// flags name them: the embedded Redis, servers reached by address
// (Redis, several independent Redis servers, a Sentinel deployment,
// ZooKeeper, MySQL, a service under test), lockbench's own Sentinel
// topology, or servers in containers. Open starts or reaches those an
// implementation needs, and only those, on one undo stack; the engine
// (package harness) runs sales on what it gives.
//
// Containers are started through the Docker seam, which
// containers.Docker implements: this package does not import the
// containers package, so that a program that opens the embedded server
// or servers by address links no Docker client.
package backends

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"strings"

	"github.com/lockbench/lockbench/locks"
	"github.com/lockbench/lockbench/servers"
)

// The kinds of Redis backend Options.Backend accepts.
const (
	// BackendEmbedded is the in-process, Redis-compatible server.
	BackendEmbedded = "embedded"
	// BackendRedis is a real Redis lockbench reaches by address.
	BackendRedis = "redis"
	// BackendDocker is Redis (and the ZooKeeper, MariaDB, etcd and
	// PostgreSQL the implementations need) started in containers
	// (Options.Docker) and removed after.
	BackendDocker = "docker"
)

// MinRedlockServers is the fewest independent servers a lock on several
// (redlock) is run on: with two, a majority is both, and one server down
// stops the lock.
const MinRedlockServers = 3

// RedlockServers is how many independent servers BackendEmbedded and
// BackendDocker start for a lock on several when Options does not say:
// the lock's own default (locks.RedlockServers).
const RedlockServers = locks.RedlockServers

// ErrMissing means the options cannot give a server an implementation
// needs: no --zk for a ZooKeeper lock, too few Redis addresses for
// redlock, no Docker for BackendDocker...
var ErrMissing = errors.New("backends: a server is missing")

// Options say where the servers are, or which to start.
type Options struct {
	// Backend is BackendEmbedded (the default), BackendRedis or
	// BackendDocker.
	Backend string
	// Redis are the addresses of BackendRedis: one, or several
	// independent servers for redlock (the first holds the inventory).
	Redis []string
	// RedisPassword is the password of BackendRedis.
	RedisPassword string
	// RedlockServers is how many independent servers BackendEmbedded and
	// BackendDocker start for a lock on several (default RedlockServers).
	RedlockServers int
	// RedisImage, ZooKeeperImage, MySQLImage, EtcdImage and
	// PostgresImage are BackendDocker's images (default the Docker's own:
	// the containers package's images of the same names for
	// containers.Docker).
	RedisImage, ZooKeeperImage, MySQLImage, EtcdImage, PostgresImage string
	// Docker starts the containers of BackendDocker and SentinelDocker,
	// and the ZooKeeper, MySQL, etcd and PostgreSQL that BackendDocker
	// starts when none is given: containers.Docker{} is lockbench's. Nil refuses them with
	// ErrMissing.
	Docker Docker
	// Addrs give a user's server of each registered kind (servers.Kind,
	// KindInfo): the address of a ZooKeeper, the DSN of a MySQL. A kind
	// given none is started in a container with BackendDocker (ZooKeeper,
	// MySQL, etcd, PostgreSQL), else on this machine when its kind can (KindInfo.Start).
	Addrs map[servers.Kind]string
	// Endpoints are the instances of a running service under test; Redis,
	// when given with them, is the service's own.
	Endpoints servers.Endpoints
	// TargetPids are the instances' process ids (pause-instance).
	TargetPids []int
	// TargetLockKey is the service's lock key in its Redis (delete-lock).
	TargetLockKey string
	// TargetStart are the commands that start the instances again
	// (crash-instance).
	TargetStart []string
	// Containers are the Docker containers the instances run in
	// (pause-instance).
	Containers []string
	// Via are the addresses the instances dial for their Redis, which
	// lockbench relays through its fault proxy (latency, cut-link).
	Via []string
	// Sentinel are the addresses of an existing Sentinel deployment for
	// BackendSentinel; none starts lockbench's own topology (see
	// sentinel.go).
	Sentinel []string
	// SentinelMaster is the name the Sentinels know the primary by.
	SentinelMaster string
	// SentinelDocker runs BackendSentinel's own topology in containers
	// of RedisImage instead of as processes of this machine (see
	// sentinel.go).
	SentinelDocker bool
}

// Missing says why o cannot give the servers of needs, "" when it can.
// It reads the options as the flags set them: that BackendDocker has a
// Docker to start its containers is Open's to check.
func (o Options) Missing(needs servers.Needs) string {
	docker := o.Backend == BackendDocker
	if why := o.sentinelMissing(needs); why != "" {
		return why
	}
	for _, k := range needs {
		info, ok := servers.Lookup(k)
		if !ok || o.Addrs[k] != "" || docker && dockerStarts(k) || info.Start != nil {
			continue
		}
		return info.Hint
	}
	switch {
	case needs.Has(servers.KindTarget) && len(o.Endpoints) == 0:
		return "tests a running service: give --target=URL[,URL...], one base URL per instance"
	case needs.Has(servers.KindRedisServers) && o.Backend == BackendRedis && len(o.Redis) < MinRedlockServers:
		return fmt.Sprintf("runs on at least %d independent Redis servers: give their addresses to --redis as a comma list (got %d)", MinRedlockServers, len(o.Redis))
	}
	return ""
}

// Servers are the servers Open started or reached, and what undoes it.
type Servers struct {
	servers.Set
	undo []func()
}

// dockerStarts reports whether BackendDocker starts a server of kind k
// when none is given.
func dockerStarts(k servers.Kind) bool {
	switch k {
	case servers.KindZooKeeper, servers.KindMySQL, servers.KindEtcd, servers.KindPostgres:
		return true
	}
	return false
}

// Close stops what Open started, in reverse order: the MySQL's database
// is dropped before its container goes.
func (s *Servers) Close() {
	for i := len(s.undo) - 1; i >= 0; i-- {
		s.undo[i]()
	}
	s.undo = nil
}

// Names names the servers of the summary's backend line (--backend's):
// the Redis, the servers reached by address and the service under test, "" when the run
// has none of them. A server reached by its spec (servers.Portable: a
// MySQL's DSN) names itself on a line of its own: a MySQL-only run names
// no backend.
func (s *Servers) Names() string {
	var names []string
	if s.Redis != nil {
		names = append(names, s.Redis.Name())
	}
	for _, k := range sortedKinds(s.Others()) {
		if _, own := s.Get(k).(servers.Portable); !own {
			names = append(names, s.Get(k).Name())
		}
	}
	if len(s.Endpoints) > 0 {
		names = append(names, s.Endpoints.Name())
	}
	return strings.Join(names, "; ")
}

// Open starts or reaches the servers needs names, and only those. Every
// server it starts goes on one undo stack: on an error nothing is left
// running, and Close stops them all. A server that cannot be reached
// fails with servers.ErrUnreachable; options that cannot give a server
// fail with ErrMissing.
func Open(ctx context.Context, o Options, needs servers.Needs) (*Servers, error) {
	if why := o.Missing(needs); why != "" {
		return nil, fmt.Errorf("%w: %s", ErrMissing, why)
	}
	s := &Servers{}
	fail := func(err error) (*Servers, error) {
		s.Close()
		return nil, err
	}
	if needs.Has(servers.KindRedis) {
		b, err := o.redis(ctx, needs.Has(servers.KindRedisServers))
		if err != nil {
			return fail(err)
		}
		s.Redis = b
		s.undo = append(s.undo, func() { b.Close() })
	}
	if needs.Has(servers.KindTarget) {
		s.Endpoints, s.TargetPids, s.TargetLockKey, s.TargetStart = o.Endpoints, o.TargetPids, o.TargetLockKey, o.TargetStart
		s.TargetContainers, s.TargetVia = o.Containers, o.Via
	}
	for _, k := range needs {
		info, ok := servers.Lookup(k)
		if !ok {
			continue // Redis in all its shapes and the service under test, above; a kind no one registered stays missing, for harness.Check to refuse
		}
		srv, undo, err := o.open(ctx, info)
		if err != nil {
			return fail(err)
		}
		s.Put(k, srv)
		s.undo = append(s.undo, undo)
	}
	return s, nil
}

// open reaches the user's server of a kind (Options.Addrs), or starts
// one: in a container with BackendDocker, else on this machine. It
// returns the server and what stops it.
func (o Options) open(ctx context.Context, info servers.KindInfo) (servers.Server, func(), error) {
	if addr := o.Addrs[info.Kind]; addr != "" {
		srv, err := info.Dial(ctx, addr)
		if err != nil {
			return nil, nil, err
		}
		return srv, func() { srv.Close() }, nil
	}
	if o.Backend == BackendDocker && dockerStarts(info.Kind) {
		return o.startInDocker(ctx, info.Kind)
	}
	if info.Start == nil {
		return nil, nil, fmt.Errorf("%w: %s", ErrMissing, info.Hint)
	}
	srv, err := info.Start(ctx)
	if err != nil {
		return nil, nil, err
	}
	return srv, func() { srv.Close() }, nil
}

// sortedKinds are the kinds of m, by name.
func sortedKinds(m map[servers.Kind]servers.Server) []servers.Kind {
	out := make([]servers.Kind, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// redis starts or reaches the Redis backend: several independent servers
// when many is true (or several addresses are given).
func (o Options) redis(ctx context.Context, many bool) (servers.Backend, error) {
	n := 1
	switch {
	case o.Backend == BackendRedis:
		n = len(o.Redis)
	case many:
		n = cmp.Or(o.RedlockServers, RedlockServers)
	}
	switch o.Backend {
	case BackendRedis:
		if n == 0 {
			return nil, fmt.Errorf("%w: --backend=redis needs the address of a Redis", ErrMissing)
		}
		if n > 1 {
			return servers.DialCluster(ctx, o.Redis, o.RedisPassword)
		}
		return servers.DialRedis(ctx, o.Redis[0], o.RedisPassword)
	case BackendDocker:
		d, err := o.docker()
		if err != nil {
			return nil, err
		}
		var started []servers.Backend
		for range n {
			b, err := d.StartRedis(ctx, o.RedisImage)
			if err != nil {
				servers.NewCluster(started).Close()
				return nil, err
			}
			started = append(started, b)
		}
		if n == 1 {
			return started[0], nil
		}
		return servers.NewCluster(started), nil
	case BackendSentinel:
		return o.sentinel(ctx)
	case "", BackendEmbedded:
		// The embedded server runs a fresh Lua state for every script
		// call: garbage, not live data. A lazier collector buys a third
		// of the run time; the memory limit keeps the footprint bounded
		// all the same.
		debug.SetGCPercent(400)
		debug.SetMemoryLimit(300 << 20)
		if n > 1 {
			return servers.StartEmbeddedCluster(n)
		}
		return servers.StartEmbedded()
	}
	return nil, fmt.Errorf("%w: unknown backend %q; accepts embedded, redis, docker or sentinel", ErrMissing, o.Backend)
}
