// Package sentinels runs the Redis topology of the failover fault on
// this machine's loopback: a primary, a replica and three Sentinels
// watching them, from Debian's redis-server (and redis-sentinel), each
// server behind a relay that can hold the replication stream back. The
// servers run as processes of this machine (Start), or wherever a Starter
// puts them (StartWith: containers.SentinelStarter runs them in Docker);
// the relays and the levers stay in lockbench's process either way.
//
// Everyone reaches a server by its relay's address: the clients, the
// Sentinels, and the replica for its replication link; each server
// announces its relay's port when it is a replica. Sentinel therefore
// knows every server by its relay, and whichever server is the primary
// after a failover, its replicas replicate through a relay too. Holding
// replication (HoldReplication) stops the primary's stream at the relay;
// pausing the primary (SIGSTOP, or docker pause) past
// down-after-milliseconds makes the
// Sentinels promote the replica, which then lacks what was held.
//
// backends.Open starts a Topology for --backend=sentinel; the tests use
// internal/redistest.StartSentinel.
package sentinels

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/lockbench/lockbench/internal/ctxtime"
	"github.com/lockbench/lockbench/internal/loopback"
	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// MasterName is the name the Sentinels know the primary by.
const MasterName = "lockbench"

// Sentinel's timings, short so that a failover takes a second or two.
const (
	// DownAfter is down-after-milliseconds: how long the primary may go
	// without answering before a Sentinel thinks it down.
	DownAfter = 400 * time.Millisecond
	// FailoverTimeout is failover-timeout: among others, how long a
	// Sentinel waits before it tries a failover of the same primary
	// again (twice this).
	FailoverTimeout = 2 * time.Second
)

// ErrUnavailable means redis-server is not installed.
var ErrUnavailable = errors.New("sentinels: redis-server is not on PATH (apt-get install redis-server redis-sentinel)")

// ErrFailover means the Sentinels did not promote the replica in time.
var ErrFailover = errors.New("sentinels: no failover")

// Available reports whether redis-server is on PATH (Sentinel is the same
// program, run as redis-sentinel or with --sentinel).
func Available() bool {
	_, err := exec.LookPath("redis-server")
	return err == nil
}

// Server is one redis-server of the topology.
type Server struct {
	relay *relay
	proc  Process
	addr  string // the server's own address, behind the relay
}

// Addr is the address everyone reaches the server by: its relay's.
func (s *Server) Addr() string { return s.relay.Addr() }

// Topology is a primary, a replica and three Sentinels lockbench started.
type Topology struct {
	starter   Starter
	servers   []*Server
	sentinels []Process
	addrs     []string // the Sentinels'
	version   string
}

// startTimeout bounds the start of each process, and the wait for the
// Sentinels to know each other and the replica.
const startTimeout = 15 * time.Second

// Start runs the topology as processes of this machine (Local): the
// primary, a replica replicating from it, three Sentinels with a quorum
// of two; it returns once the replica is in sync and every Sentinel knows
// the replica and the two others. Close stops it all.
func Start(ctx context.Context) (*Topology, error) {
	s, err := Local()
	if err != nil {
		return nil, err
	}
	return StartWith(ctx, s)
}

// StartWith runs the topology as Start does, each server and Sentinel
// started by s. The topology owns s from then on: Close (or a failed
// start) stops every process, then closes s.
func StartWith(ctx context.Context, s Starter) (*Topology, error) {
	t := &Topology{starter: s}
	fail := func(err error) (*Topology, error) {
		t.Close()
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, 2*startTimeout)
	defer cancel()
	for i := range 2 {
		s, err := t.startServer(ctx, i)
		if err != nil {
			return fail(err)
		}
		t.servers = append(t.servers, s)
	}
	if err := t.waitSynced(ctx); err != nil {
		return fail(err)
	}
	for range 3 {
		if err := t.startSentinel(ctx); err != nil {
			return fail(err)
		}
	}
	if err := t.waitSentinels(ctx); err != nil {
		return fail(err)
	}
	info, err := t.info(ctx, t.servers[0].addr, "server")
	if err == nil {
		t.version = field(info, "redis_version")
	}
	return t, nil
}

// startServer starts server i behind its relay: the first as the
// primary, the others as its replicas.
func (t *Topology) startServer(ctx context.Context, i int) (*Server, error) {
	rl, err := newRelay()
	if err != nil {
		return nil, err
	}
	s, err := loopback.Retry(ctx, ErrExited, func(port int, addr string) (*Server, error) {
		args := []string{
			"--port", strconv.Itoa(port), "--bind", "127.0.0.1",
			"--save", "", "--appendonly", "no", "--daemonize", "no",
			// Known by its relay when it is a replica.
			"--replica-announce-ip", "127.0.0.1", "--replica-announce-port", strconv.Itoa(rl.port()),
			// A full sync now, not after the default 5 s: the old primary
			// resyncs from the new one after each failover.
			"--repl-diskless-sync", "yes", "--repl-diskless-sync-delay", "0",
		}
		if i > 0 {
			args = append(args, "--replicaof", "127.0.0.1", strconv.Itoa(t.servers[0].relay.port()))
		}
		p, err := t.starter.Server(ctx, port, args)
		if err != nil {
			return nil, err
		}
		return &Server{proc: p, addr: addr}, nil
	})
	if err != nil {
		rl.close()
		return nil, errStarter("redis-server", err)
	}
	s.relay = rl
	rl.start(s.addr)
	return s, nil
}

// startSentinel starts a Sentinel watching the primary by its relay.
func (t *Topology) startSentinel(ctx context.Context) error {
	primary := t.servers[0].relay.port()
	addr, err := loopback.Retry(ctx, ErrExited, func(port int, addr string) (string, error) {
		conf := fmt.Sprintf("port %d\nbind 127.0.0.1\ndaemonize no\nprotected-mode no\n", port) +
			fmt.Sprintf("sentinel monitor %s 127.0.0.1 %d 2\n", MasterName, primary) +
			fmt.Sprintf("sentinel down-after-milliseconds %s %d\n", MasterName, DownAfter.Milliseconds()) +
			fmt.Sprintf("sentinel failover-timeout %s %d\n", MasterName, FailoverTimeout.Milliseconds()) +
			fmt.Sprintf("sentinel parallel-syncs %s 1\n", MasterName)
		p, err := t.starter.Sentinel(ctx, port, conf)
		if err != nil {
			return "", err
		}
		t.sentinels = append(t.sentinels, p)
		return addr, nil
	})
	if err != nil {
		return errStarter("redis-sentinel", err)
	}
	t.addrs = append(t.addrs, addr)
	return nil
}

// options are the options of the topology's own clients (RESP2, no
// retries, no handshake extras).
func options(addr string) *redis.Options {
	return &redis.Options{
		Addr: addr, Protocol: 2, DisableIdentity: true, MaxRetries: -1,
		DialTimeout: time.Second, ReadTimeout: time.Second, WriteTimeout: time.Second,
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
	}
}

// do sends one command to addr on a connection of its own.
func do(ctx context.Context, addr string, args ...any) *redis.Cmd {
	c := redis.NewClient(options(addr))
	defer c.Close()
	return c.Do(ctx, args...)
}

// info returns a section of INFO from the server at addr.
func (t *Topology) info(ctx context.Context, addr, section string) (string, error) {
	return do(ctx, addr, "INFO", section).Text()
}

// field reads name's value from an INFO reply.
func field(info, name string) string {
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), name+":"); ok {
			return v
		}
	}
	return ""
}

// poll calls ok every 20 ms until it reports true or ctx ends; the
// error then says what was waited for and ok's last error.
func poll(ctx context.Context, what string, ok func() (bool, error)) error {
	var last error
	for {
		done, err := ok()
		if done {
			return nil
		}
		if err != nil {
			last = err
		}
		if ctxtime.Sleep(ctx, 20*time.Millisecond) != nil {
			if last != nil {
				return fmt.Errorf("sentinels: %s: %w (last: %v)", what, ctx.Err(), last)
			}
			return fmt.Errorf("sentinels: %s: %w", what, ctx.Err())
		}
	}
}

// waitSynced waits until every replica's link to the primary is up.
func (t *Topology) waitSynced(ctx context.Context) error {
	for _, s := range t.servers[1:] {
		err := poll(ctx, "replica in sync", func() (bool, error) {
			info, err := t.info(ctx, s.addr, "replication")
			return err == nil && field(info, "master_link_status") == "up", err
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// waitSentinels waits until every Sentinel knows the replica and the two
// other Sentinels: before then a failover may find no quorum, or no
// replica to promote.
func (t *Topology) waitSentinels(ctx context.Context) error {
	for _, a := range t.addrs {
		err := poll(ctx, "Sentinels acquainted", func() (bool, error) {
			m, err := do(ctx, a, "SENTINEL", "MASTER", MasterName).Result()
			if err != nil {
				return false, err
			}
			kv := pairs(m)
			if kv["num-slaves"] == strconv.Itoa(len(t.servers)-1) && kv["num-other-sentinels"] == strconv.Itoa(len(t.addrs)-1) {
				return true, nil
			}
			// Said when the wait runs out.
			return false, fmt.Errorf("the Sentinel at %s knew %s replicas and %s other Sentinels", a, kv["num-slaves"], kv["num-other-sentinels"])
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// pairs reads a Sentinel's field-value reply, a flat list or a map.
func pairs(v any) map[string]string {
	out := map[string]string{}
	switch m := v.(type) {
	case []any:
		for i := 0; i+1 < len(m); i += 2 {
			out[fmt.Sprint(m[i])] = fmt.Sprint(m[i+1])
		}
	case map[any]any:
		for k, v := range m {
			out[fmt.Sprint(k)] = fmt.Sprint(v)
		}
	}
	return out
}

// SentinelAddrs are the Sentinels' addresses.
func (t *Topology) SentinelAddrs() []string { return append([]string(nil), t.addrs...) }

// MasterName is the name the Sentinels know the primary by.
func (t *Topology) MasterName() string { return MasterName }

// Where says where the servers run: "" for this machine's processes,
// "in docker (IMAGE)" for containers (the Starter's Where).
func (t *Topology) Where() string { return t.starter.Where() }

// Version is the servers' redis_version.
func (t *Topology) Version() string { return t.version }

// Servers are the topology's redis-servers, the first primary at the
// start.
func (t *Topology) Servers() []*Server { return append([]*Server(nil), t.servers...) }

// PrimaryAddr is the primary's address as the Sentinels give it, the
// first that answers.
func (t *Topology) PrimaryAddr(ctx context.Context) (string, error) {
	var errs []error
	for _, a := range t.addrs {
		v, err := do(ctx, a, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", MasterName).StringSlice()
		if err == nil && len(v) == 2 {
			return net.JoinHostPort(v[0], v[1]), nil
		}
		errs = append(errs, err)
	}
	return "", fmt.Errorf("sentinels: no Sentinel gave the primary: %w", errors.Join(errs...))
}

// Primary is the server the Sentinels give as the primary.
func (t *Topology) Primary(ctx context.Context) (*Server, error) {
	addr, err := t.PrimaryAddr(ctx)
	if err != nil {
		return nil, err
	}
	for _, s := range t.servers {
		if s.Addr() == addr {
			return s, nil
		}
	}
	return nil, fmt.Errorf("sentinels: the Sentinels give %s as the primary, not one of the topology's", addr)
}

// replicas are the servers other than p.
func (t *Topology) replicas(p *Server) []*Server {
	var out []*Server
	for _, s := range t.servers {
		if s != p {
			out = append(out, s)
		}
	}
	return out
}

// HoldReplication stops (true) or resumes (false) the replication
// streams at the relays: while held, a replica receives nothing more of
// its primary's writes, and acknowledges nothing more (WAIT counts it
// out). Nothing is dropped: the stream resumes where it stopped.
func (t *Topology) HoldReplication(hold bool) {
	for _, s := range t.servers {
		s.relay.hold(hold)
	}
}

// Synced reports whether every replica has applied everything the
// primary has written.
func (t *Topology) Synced(ctx context.Context) (bool, error) {
	p, err := t.Primary(ctx)
	if err != nil {
		return false, err
	}
	info, err := t.info(ctx, p.addr, "replication")
	if err != nil {
		return false, err
	}
	want := field(info, "master_repl_offset")
	for _, s := range t.replicas(p) {
		info, err := t.info(ctx, s.addr, "replication")
		if err != nil {
			return false, err
		}
		if field(info, "master_link_status") != "up" || field(info, "slave_repl_offset") != want {
			return false, nil
		}
	}
	return true, nil
}

// ReplicaHas reports whether key is on a replica of the primary.
func (t *Topology) ReplicaHas(ctx context.Context, key string) (bool, error) {
	p, err := t.Primary(ctx)
	if err != nil {
		return false, err
	}
	for _, s := range t.replicas(p) {
		n, err := do(ctx, s.addr, "EXISTS", key).Int64()
		if err != nil {
			return false, err
		}
		if n > 0 {
			return true, nil
		}
	}
	return false, nil
}

// Failover stops the primary (SIGSTOP, docker pause) until the Sentinels have promoted
// a replica, within bound, ends any hold of replication, then lets the
// old primary run again (SIGCONT, docker unpause): the
// Sentinels make it a replica of the new primary, and its data is
// replaced by the new primary's. It returns the old and the new
// primary's addresses once the old primary is in sync with the new one
// (or bound has run out, with an error).
func (t *Topology) Failover(ctx context.Context, bound time.Duration) (from, to string, err error) {
	p, err := t.Primary(ctx)
	if err != nil {
		return "", "", err
	}
	from = p.Addr()
	ctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	if err := p.proc.Pause(ctx); err != nil {
		return from, "", err
	}
	err = poll(ctx, "promotion of a replica", func() (bool, error) {
		a, err := t.PrimaryAddr(ctx)
		to = a
		return err == nil && a != from, err
	})
	// The promoted replica has left the old primary's stream: what the
	// relay held back goes nowhere now, and the new primary's stream to
	// the old one must flow.
	t.HoldReplication(false)
	if rerr := p.proc.Resume(context.WithoutCancel(ctx)); rerr != nil && err == nil {
		err = rerr
	}
	if err != nil {
		return from, "", fmt.Errorf("%w within %v: %v", ErrFailover, bound, err)
	}
	// Sentinel would make the old primary a replica of the new one once
	// it next reads its INFO, up to 10 s later: lockbench does it now, as
	// Sentinel would (and Sentinel then finds it as it wants it).
	host, port, _ := net.SplitHostPort(to)
	if err := do(ctx, p.addr, "REPLICAOF", host, port).Err(); err != nil {
		return from, to, fmt.Errorf("sentinels: making the old primary a replica: %w", err)
	}
	err = poll(ctx, "the old primary in sync as a replica", func() (bool, error) {
		info, err := t.info(ctx, p.addr, "replication")
		return err == nil && field(info, "role") == "slave" && field(info, "master_link_status") == "up" &&
			field(info, "master_port") == portOf(to), err
	})
	if err != nil {
		return from, to, err
	}
	// The Sentinels learn the new primary from each other's hello
	// messages, a second or two apart: until all of them give it, a
	// client that asks a late one is sent to the old primary, now a
	// replica, and its writes fail with READONLY.
	return from, to, poll(ctx, "every Sentinel giving the new primary", func() (bool, error) {
		return t.agree(ctx, to)
	})
}

// agree reports whether every Sentinel gives addr as the primary.
func (t *Topology) agree(ctx context.Context, addr string) (bool, error) {
	for _, a := range t.addrs {
		v, err := do(ctx, a, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", MasterName).StringSlice()
		if err != nil {
			return false, err
		}
		if len(v) != 2 || net.JoinHostPort(v[0], v[1]) != addr {
			return false, nil
		}
	}
	return true, nil
}

func portOf(addr string) string {
	_, port, _ := net.SplitHostPort(addr)
	return port
}

// Pause stops the primary (SIGSTOP, docker pause) for d, then lets it
// run. Longer than DownAfter, it is a failover.
func (t *Topology) Pause(ctx context.Context, d time.Duration) error {
	p, err := t.Primary(ctx)
	if err != nil {
		return err
	}
	if err := p.proc.Pause(ctx); err != nil {
		return err
	}
	go func() {
		time.Sleep(d)
		ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
		defer cancel()
		p.proc.Resume(ctx)
	}()
	return nil
}

// Close stops the Sentinels, the servers and their relays, and removes
// their files (and containers).
func (t *Topology) Close() error {
	var errs []error
	for _, p := range t.sentinels {
		errs = append(errs, p.Stop())
	}
	for _, s := range t.servers {
		errs = append(errs, s.proc.Stop())
		s.relay.close()
	}
	errs = append(errs, t.starter.Close())
	return errors.Join(errs...)
}
