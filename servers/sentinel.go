package servers

import (
	"context"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Failover is a Redis reached through Sentinel: every client lockbench
// makes of it is go-redis's failover client, which asks the Sentinels for
// the primary and follows it when they promote another.
type Failover interface {
	Backend
	// FailoverOptions returns the options of a failover client with the
	// pool size, timeouts and other settings of o (its Addr is not used).
	FailoverOptions(o *redis.Options) *redis.FailoverOptions
}

// FailoverLevers are what lockbench can do to a Sentinel topology it
// started itself (package sentinels): the failover fault's levers.
type FailoverLevers interface {
	// HoldReplication stops (true) or resumes (false) the stream from
	// the primary to its replica; nothing is dropped.
	HoldReplication(hold bool)
	// Synced reports whether the replica has every write of the primary.
	Synced(ctx context.Context) (bool, error)
	// ReplicaHas reports whether key is on the replica.
	ReplicaHas(ctx context.Context, key string) (bool, error)
	// Failover stops the primary until the Sentinels have promoted the
	// replica (within bound), ends any hold, lets the old primary run
	// again and returns once it is the new primary's replica.
	Failover(ctx context.Context, bound time.Duration) (from, to string, err error)
	// Pause stops the primary for d (SIGSTOP and SIGCONT, or docker
	// pause and unpause).
	Pause(ctx context.Context, d time.Duration) error
	// Where says where the servers run, for the backend's name: "" for
	// processes of this machine, "in docker (IMAGE)" for containers.
	Where() string
	// Close stops the topology.
	Close() error
}

// Sentinel is a Redis primary with its replicas, watched by Sentinels:
// an existing deployment (--sentinel, --sentinel-master), or the topology
// lockbench starts for --backend=sentinel, whose levers the failover
// fault pulls.
type Sentinel struct {
	addrs    []string
	master   string
	password string
	primary  string // when dialled
	version  string
	levers   FailoverLevers // nil for a deployment lockbench did not start
}

// DialSentinel asks the Sentinels at addrs for the primary they call
// master, checks that it answers through a failover client, and returns
// it as a backend. levers are the topology's when lockbench started it,
// nil otherwise. It fails with ErrUnreachable within a few seconds when
// no Sentinel or no primary answers.
func DialSentinel(ctx context.Context, addrs []string, master, password string, levers FailoverLevers) (*Sentinel, error) {
	s := &Sentinel{addrs: addrs, master: master, password: password, levers: levers, version: "?"}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	c := redis.NewFailoverClient(s.FailoverOptions(ClientOptions("", password)))
	defer c.Close()
	info, err := c.Info(ctx, "server", "replication").Result()
	if err != nil {
		return nil, fmt.Errorf("%w: the primary %q of the Sentinels at %s: %v", ErrUnreachable, master, strings.Join(addrs, ","), err)
	}
	for _, line := range strings.Split(info, "\n") {
		line = strings.TrimSpace(line)
		if v, ok := strings.CutPrefix(line, "redis_version:"); ok {
			s.version = v
		}
		if v, ok := strings.CutPrefix(line, "role:"); ok && v != "master" {
			return nil, fmt.Errorf("%w: the Sentinels' %q answers as a %s", ErrUnreachable, master, v)
		}
	}
	sc := redis.NewSentinelClient(&redis.Options{Addr: addrs[0], Protocol: 2, DisableIdentity: true, MaxRetries: -1, DialTimeout: 2 * time.Second})
	defer sc.Close()
	if a, err := sc.GetMasterAddrByName(ctx, master).Result(); err == nil && len(a) == 2 {
		s.primary = net.JoinHostPort(a[0], a[1])
	}
	return s, nil
}

// Name implements Backend.
func (s *Sentinel) Name() string {
	who := "Sentinels at " + strings.Join(s.addrs, ",")
	if s.levers != nil {
		who = "a replica and 3 Sentinels started by lockbench"
		if w := s.levers.Where(); w != "" {
			who += " " + w
		}
	}
	return fmt.Sprintf("redis %s via Sentinel (master %q, %s)", s.version, s.master, who)
}

// Version implements Server: the primary's redis_version.
func (s *Sentinel) Version() string { return s.version }

// Options implements Backend: a client of the primary as it was when
// dialled. lockbench's own clients of a Sentinel backend are failover
// clients (FailoverOptions), which follow the primary.
func (s *Sentinel) Options() *redis.Options { return ClientOptions(s.primary, s.password) }

// FailoverOptions implements Failover.
func (s *Sentinel) FailoverOptions(o *redis.Options) *redis.FailoverOptions {
	return &redis.FailoverOptions{
		MasterName:            s.master,
		SentinelAddrs:         append([]string(nil), s.addrs...),
		Password:              s.password,
		Protocol:              o.Protocol,
		DisableIdentity:       o.DisableIdentity,
		MaxRetries:            o.MaxRetries,
		ContextTimeoutEnabled: o.ContextTimeoutEnabled,
		DialTimeout:           o.DialTimeout,
		ReadTimeout:           o.ReadTimeout,
		WriteTimeout:          o.WriteTimeout,
		PoolTimeout:           o.PoolTimeout,
		PoolSize:              o.PoolSize,
	}
}

// Levers are the topology's, nil when lockbench did not start it.
func (s *Sentinel) Levers() FailoverLevers { return s.levers }

// Pause implements Pauser: the primary stops (SIGSTOP, or docker pause
// when its topology runs in containers) for d when
// lockbench started the topology, else CLIENT PAUSE ALL on it. A pause
// longer than the Sentinels' down-after-milliseconds is a failover.
func (s *Sentinel) Pause(ctx context.Context, d time.Duration) error {
	if s.levers != nil {
		if err := s.levers.Pause(ctx, d); err != nil {
			return fmt.Errorf("%w: pausing the primary: %v", ErrUnreachable, err)
		}
		return nil
	}
	c := redis.NewFailoverClient(s.FailoverOptions(ClientOptions("", s.password)))
	defer c.Close()
	if err := c.Do(ctx, "CLIENT", "PAUSE", max(1, d.Milliseconds()), "ALL").Err(); err != nil {
		return fmt.Errorf("%w: CLIENT PAUSE: %v", ErrUnreachable, err)
	}
	return nil
}

// Close implements Server: the topology stops if lockbench started it.
func (s *Sentinel) Close() error {
	if s.levers != nil {
		return s.levers.Close()
	}
	return nil
}

// NewClient makes a client of b with opts: a failover client when b is
// reached through Sentinel, else a plain one.
func NewClient(b Backend, opts *redis.Options) *redis.Client {
	if f, ok := b.(Failover); ok {
		return redis.NewFailoverClient(f.FailoverOptions(opts))
	}
	return redis.NewClient(opts)
}
