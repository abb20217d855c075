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
	"strings"

	"github.com/lockbench/lockbench/locks"
	"github.com/lockbench/lockbench/workload"
)

// The kinds of Redis backend Options.Backend accepts.
const (
	// BackendEmbedded is the in-process, Redis-compatible server.
	BackendEmbedded = "embedded"
	// BackendRedis is a real Redis lockbench reaches by address.
	BackendRedis = "redis"
	// BackendDocker is Redis (and the ZooKeeper and MariaDB the
	// implementations need) started in containers (Options.Docker) and
	// removed after.
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
	// RedisImage, ZooKeeperImage and MySQLImage are BackendDocker's
	// images (default the Docker's own: the containers package's
	// RedisImage, ZooKeeperImage and MySQLImage for containers.Docker).
	RedisImage, ZooKeeperImage, MySQLImage string
	// Docker starts the containers of BackendDocker and SentinelDocker,
	// and the ZooKeeper and MySQL that BackendDocker starts when none is
	// given: containers.Docker{} is lockbench's. Nil refuses them with
	// ErrMissing.
	Docker Docker
	// ZooKeeper is the address of a ZooKeeper; with BackendDocker and none
	// given, one is started.
	ZooKeeper string
	// MySQLDSN reaches a MySQL or MariaDB; with BackendDocker and none
	// given, one is started.
	MySQLDSN string
	// Endpoints are the instances of a running service under test; Redis,
	// when given with them, is the service's own.
	Endpoints workload.Endpoints
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
func (o Options) Missing(needs workload.Needs) string {
	docker := o.Backend == BackendDocker
	if why := o.sentinelMissing(needs); why != "" {
		return why
	}
	switch {
	case needs.Has(workload.NeedsMySQL) && o.MySQLDSN == "" && !docker:
		return "keeps its inventory in MySQL: give --mysql-dsn=user:password@tcp(127.0.0.1:3306)/ or $LOCKBENCH_MYSQL_DSN, or run with --backend=docker (MariaDB in a container)"
	case needs.Has(workload.NeedsZooKeeper) && o.ZooKeeper == "" && !docker:
		return "needs a ZooKeeper: give --zk ADDR (or set $LOCKBENCH_ZK), or run with --backend=docker (ZooKeeper in a container)"
	case needs.Has(workload.NeedsTarget) && len(o.Endpoints) == 0:
		return "tests a running service: give --target=URL[,URL...], one base URL per instance"
	case needs.Has(workload.NeedsRedisServers) && o.Backend == BackendRedis && len(o.Redis) < MinRedlockServers:
		return fmt.Sprintf("runs on at least %d independent Redis servers: give their addresses to --redis as a comma list (got %d)", MinRedlockServers, len(o.Redis))
	}
	return ""
}

// Servers are the servers Open started or reached, and what undoes it.
type Servers struct {
	workload.Servers
	undo []func()
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
// the Redis, the ZooKeeper and the service under test, "" when the run
// has none of them. The MySQL, when there is one, names itself
// (s.MySQL.Name()) on a line of its own: a MySQL-only run names no
// backend.
func (s *Servers) Names() string {
	var names []string
	if s.Redis != nil {
		names = append(names, s.Redis.Name())
	}
	if s.ZooKeeper != nil {
		names = append(names, s.ZooKeeper.Name())
	}
	if len(s.Endpoints) > 0 {
		names = append(names, s.Endpoints.Name())
	}
	return strings.Join(names, "; ")
}

// Open starts or reaches the servers needs names, and only those. Every
// server it starts goes on one undo stack: on an error nothing is left
// running, and Close stops them all. A server that cannot be reached
// fails with workload.ErrUnreachable; options that cannot give a server
// fail with ErrMissing.
func Open(ctx context.Context, o Options, needs workload.Needs) (*Servers, error) {
	if why := o.Missing(needs); why != "" {
		return nil, fmt.Errorf("%w: %s", ErrMissing, why)
	}
	s := &Servers{}
	fail := func(err error) (*Servers, error) {
		s.Close()
		return nil, err
	}
	if needs.Has(workload.NeedsRedis) {
		b, err := o.redis(ctx, needs.Has(workload.NeedsRedisServers))
		if err != nil {
			return fail(err)
		}
		s.Redis = b
		s.undo = append(s.undo, func() { b.Close() })
	}
	if needs.Has(workload.NeedsZooKeeper) {
		if o.ZooKeeper != "" {
			z, err := workload.DialZooKeeper(ctx, o.ZooKeeper)
			if err != nil {
				return fail(err)
			}
			s.ZooKeeper = z
		} else {
			d, err := o.docker()
			if err != nil {
				return fail(err)
			}
			z, err := d.StartZooKeeper(ctx, o.ZooKeeperImage)
			if err != nil {
				return fail(err)
			}
			s.ZooKeeper = z
			s.undo = append(s.undo, func() { z.Close() })
		}
	}
	if needs.Has(workload.NeedsTarget) {
		s.Endpoints, s.TargetPids, s.TargetLockKey, s.TargetStart = o.Endpoints, o.TargetPids, o.TargetLockKey, o.TargetStart
		s.TargetContainers, s.TargetVia = o.Containers, o.Via
	}
	if needs.Has(workload.NeedsMySQL) {
		dsn := o.MySQLDSN
		var c MySQLContainer
		if dsn == "" {
			d, err := o.docker()
			if err != nil {
				return fail(err)
			}
			if c, err = d.StartMySQL(ctx, o.MySQLImage); err != nil {
				return fail(err)
			}
			s.undo = append(s.undo, func() { c.Close() })
			dsn = c.DSN()
		}
		m, err := workload.DialMySQL(ctx, dsn)
		if err != nil {
			return fail(err)
		}
		if c != nil {
			m.RunsIn(c) // its name says docker; server-pause is docker pause
		}
		s.MySQL = m
		s.undo = append(s.undo, func() { m.Close() })
	}
	return s, nil
}

// redis starts or reaches the Redis backend: several independent servers
// when many is true (or several addresses are given).
func (o Options) redis(ctx context.Context, many bool) (workload.Backend, error) {
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
			return workload.DialCluster(ctx, o.Redis, o.RedisPassword)
		}
		return workload.DialRedis(ctx, o.Redis[0], o.RedisPassword)
	case BackendDocker:
		d, err := o.docker()
		if err != nil {
			return nil, err
		}
		var servers []workload.Backend
		for range n {
			b, err := d.StartRedis(ctx, o.RedisImage)
			if err != nil {
				workload.NewCluster(servers).Close()
				return nil, err
			}
			servers = append(servers, b)
		}
		if n == 1 {
			return servers[0], nil
		}
		return workload.NewCluster(servers), nil
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
			return workload.StartEmbeddedCluster(n)
		}
		return workload.StartEmbedded()
	}
	return nil, fmt.Errorf("%w: unknown backend %q; accepts embedded, redis, docker or sentinel", ErrMissing, o.Backend)
}
