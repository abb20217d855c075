package servers

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/lockbench/lockbench/internal/loopback"
	"github.com/lockbench/lockbench/internal/serverproc"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// KindEtcd is an etcd cluster, where the etcd locks live (their
// inventory stays in Redis) and etcd-txn keeps its inventory.
const KindEtcd Kind = "etcd"

// etcdEnv is the environment variable --etcd defaults to.
const etcdEnv = "LOCKBENCH_ETCD"

func init() {
	Register(KindInfo{
		Kind:  KindEtcd,
		Title: "an etcd cluster",
		Flag:  "etcd",
		Env:   etcdEnv,
		Usage: "client addresses of an etcd cluster (host:port,...) that the etcd implementations lock in; the inventory stays in Redis, but for etcd-txn's (default $" + etcdEnv + "; without it lockbench starts three members of Debian's etcd on loopback)",
		Hint:  "needs an etcd cluster: give --etcd ADDR,... (or set $" + etcdEnv + "), or install Debian's etcd-server (apt-get install etcd-server) and lockbench starts three members on loopback",
		Check: func(list string) error {
			_, err := ParseEtcdEndpoints(list)
			return err
		},
		Dial: func(ctx context.Context, list string) (Server, error) {
			eps, err := ParseEtcdEndpoints(list)
			if err != nil {
				return nil, err
			}
			return DialEtcd(ctx, eps)
		},
		Start: func(ctx context.Context) (Server, error) { return StartEtcd(ctx) },
		Node: func(list string) (Server, error) {
			eps, err := ParseEtcdEndpoints(list)
			if err != nil {
				return nil, fmt.Errorf("%w: %v", ErrBadAddress, err)
			}
			return &Etcd{endpoints: eps}, nil
		},
	})
}

// EtcdBinary is where Debian's etcd-server package puts the server.
const EtcdBinary = "/usr/bin/etcd"

// EtcdMembers is how many members StartEtcd starts: the smallest cluster
// that survives the loss of one.
const EtcdMembers = 3

// maxEtcdEndpoints bounds the addresses a user's --etcd may name.
const maxEtcdEndpoints = 16

// etcdStartTimeout bounds how long a member may take to serve.
const etcdStartTimeout = 60 * time.Second

// Sentinel errors of an etcd cluster's client side, matched with
// errors.Is; each wraps the servers' own of its kind.
var (
	// ErrEtcdUnreachable: no member of the cluster answered
	// (ErrUnreachable).
	ErrEtcdUnreachable = fmt.Errorf("%w: etcd does not answer", ErrUnreachable)
	// ErrEtcdNotStarted: a lever on a cluster lockbench did not start
	// (ErrNotStarted).
	ErrEtcdNotStarted = fmt.Errorf("%w: etcd", ErrNotStarted)
)

// Etcd is an etcd cluster: one of the user's, reached at its client
// addresses (DialEtcd), or three members lockbench started on loopback
// (StartEtcd), whose processes it can pause, kill and start again.
type Etcd struct {
	endpoints []string
	version   string

	// The members lockbench started, nil for a user's cluster.
	members []*etcdMember
	dir     string
	bin     string
	host    EtcdHost   // runs the members when not processes of lockbench's (EtcdIn)
	mu      sync.Mutex // serializes the levers
}

// etcdMember is one member process of a cluster lockbench started.
type etcdMember struct {
	name   string
	client string // 127.0.0.1:port
	peer   string // 127.0.0.1:port
	data   string
	proc   *serverproc.Proc
}

// ErrEtcdNotInstalled means the etcd binary is missing; it wraps
// ErrNotInstalled.
var ErrEtcdNotInstalled = fmt.Errorf("%w: etcd (apt-get install etcd-server)", ErrNotInstalled)

// EtcdAvailable reports whether the etcd binary is installed.
func EtcdAvailable() bool {
	_, err := etcdBinary()
	return err == nil
}

func etcdBinary() (string, error) {
	if p, err := exec.LookPath("etcd"); err == nil {
		return p, nil
	}
	if _, err := os.Stat(EtcdBinary); err == nil {
		return EtcdBinary, nil
	}
	return "", ErrEtcdNotInstalled
}

// ErrEtcdAddr means an etcd address is not a host:port; it wraps
// ErrBadAddress.
var ErrEtcdAddr = fmt.Errorf("%w: etcd", ErrBadAddress)

// ParseEtcdEndpoints checks a comma-separated list of etcd client
// addresses (host:port, or http://host:port) and returns them as
// host:port, refusing an empty one, a scheme other than http, a path, a
// port out of range and more than 16 addresses.
func ParseEtcdEndpoints(list string) ([]string, error) {
	parts := strings.Split(list, ",")
	if len(parts) > maxEtcdEndpoints {
		return nil, fmt.Errorf("%w: %d addresses, at most %d", ErrEtcdAddr, len(parts), maxEtcdEndpoints)
	}
	out := make([]string, 0, len(parts))
	for _, p := range parts {
		p = strings.TrimSpace(p)
		if strings.Contains(p, "://") {
			u, err := url.Parse(p)
			if err != nil || u.Scheme != "http" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.User != nil {
				return nil, fmt.Errorf("%w: %q: want host:port or http://host:port", ErrEtcdAddr, p)
			}
			p = u.Host
		}
		host, port, err := net.SplitHostPort(p)
		if err != nil || host == "" {
			return nil, fmt.Errorf("%w: %q: want host:port", ErrEtcdAddr, p)
		}
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return nil, fmt.Errorf("%w: %q: port out of range", ErrEtcdAddr, p)
		}
		out = append(out, p)
	}
	return out, nil
}

// DialEtcd reaches a user's etcd cluster at its client addresses
// (host:port) and reads its version. lockbench leaves its processes
// alone: the levers fail with ErrEtcdNotStarted.
func DialEtcd(ctx context.Context, endpoints []string) (*Etcd, error) {
	if len(endpoints) == 0 {
		return nil, fmt.Errorf("%w: no address", ErrEtcdAddr)
	}
	e := &Etcd{endpoints: endpoints}
	v, err := e.readVersion(ctx)
	if err != nil {
		return nil, err
	}
	e.version = v
	return e, nil
}

// StartEtcd starts a cluster of three etcd members on free 127.0.0.1
// ports (client and peer), their data in a new directory in memory where
// the machine has room (memoryDir), and waits until it has a leader. Close stops the members and removes the
// directory.
func StartEtcd(ctx context.Context) (*Etcd, error) {
	bin, err := etcdBinary()
	if err != nil {
		return nil, err
	}
	var errs []error
	// A free port is only free when asked: a cluster one of whose members
	// exited before it served is started again on new ports.
	for range 3 {
		e, err := startEtcd(ctx, bin)
		if err == nil {
			return e, nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil || !errors.Is(err, serverproc.ErrExited) {
			break
		}
	}
	return nil, errors.Join(errs...)
}

func startEtcd(ctx context.Context, bin string) (*Etcd, error) {
	dir, err := memoryDir("lockbench-etcd-")
	if err != nil {
		return nil, err
	}
	e := &Etcd{dir: dir, bin: bin}
	for i := range EtcdMembers {
		m := &etcdMember{name: "m" + strconv.Itoa(i), data: filepath.Join(dir, "m"+strconv.Itoa(i))}
		for _, addr := range []*string{&m.client, &m.peer} {
			port, err := loopback.FreePort()
			if err != nil {
				os.RemoveAll(dir)
				return nil, fmt.Errorf("loopback: no free port: %w", err)
			}
			*addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		}
		e.members = append(e.members, m)
		e.endpoints = append(e.endpoints, m.client)
	}
	for _, m := range e.members {
		if err := e.spawn(m, "new"); err != nil {
			e.Close()
			return nil, err
		}
	}
	for _, m := range e.members {
		if err := e.await(ctx, m); err != nil {
			e.Close()
			return nil, err
		}
	}
	v, err := e.readVersion(ctx)
	if err != nil {
		e.Close()
		return nil, err
	}
	e.version = v
	return e, nil
}

// spawn starts member m's process; state is "new" for the first start,
// "existing" for a restart on its data.
func (e *Etcd) spawn(m *etcdMember, state string) error {
	var cluster []string
	for _, o := range e.members {
		cluster = append(cluster, o.name+"=http://"+o.peer)
	}
	p, err := serverproc.Start(exec.Command(e.bin,
		EtcdMemberArgs(m.name, m.data, m.client, m.peer, strings.Join(cluster, ","), filepath.Base(e.dir), state)...))
	if err != nil {
		return err
	}
	m.proc = p
	return nil
}

// await waits until member m answers a status request.
func (e *Etcd) await(ctx context.Context, m *etcdMember) error {
	c, err := newEtcdClient([]string{m.client})
	if err != nil {
		return err
	}
	defer c.Close()
	return m.proc.Await(ctx, "etcd "+m.name, m.client, etcdStartTimeout, func(ctx context.Context) error {
		return etcdLeads(ctx, c, m.client)
	})
}

// newEtcdClient is lockbench's client of etcd: no log, a short dial.
func newEtcdClient(endpoints []string) (*clientv3.Client, error) {
	return clientv3.New(clientv3.Config{
		Endpoints:   endpoints,
		DialTimeout: 2 * time.Second,
		Logger:      zap.NewNop(),
	})
}

// readVersion asks the members for the server's version, the first that
// answers.
func (e *Etcd) readVersion(ctx context.Context) (string, error) {
	c, err := newEtcdClient(e.endpoints)
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrEtcdUnreachable, err)
	}
	defer c.Close()
	var errs []error
	for _, ep := range e.endpoints {
		sctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		st, err := c.Status(sctx, ep)
		cancel()
		if err == nil {
			return st.Version, nil
		}
		errs = append(errs, fmt.Errorf("%s: %v", ep, err))
	}
	return "", fmt.Errorf("%w: %v", ErrEtcdUnreachable, errors.Join(errs...))
}

// Endpoints are the members' client addresses (host:port).
func (e *Etcd) Endpoints() []string { return append([]string(nil), e.endpoints...) }

// Addrs implements Addressed: the members' client addresses, each of
// which the engine puts behind a node's fault proxy.
func (e *Etcd) Addrs() []string { return e.Endpoints() }

// Name says what the cluster is and where.
func (e *Etcd) Name() string {
	if e.members != nil {
		return fmt.Sprintf("etcd cluster of %d members (%s)", len(e.members), strings.Join(e.endpoints, ",")) + e.where()
	}
	return "etcd " + strings.Join(e.endpoints, ",")
}

// Version is the server's version, as its status says it.
func (e *Etcd) Version() string { return e.version }

// Close stops the members lockbench started and removes their data; a
// user's cluster is left as it was.
func (e *Etcd) Close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.host != nil {
		return e.host.Close()
	}
	for _, m := range e.members {
		if m.proc != nil {
			m.proc.Kill()
			m.proc = nil
		}
	}
	if e.dir != "" {
		return os.RemoveAll(e.dir)
	}
	return nil
}

// Leader returns the index in Endpoints of the member that leads, as
// the members' status says it.
func (e *Etcd) Leader(ctx context.Context) (int, error) {
	c, err := newEtcdClient(e.endpoints)
	if err != nil {
		return 0, fmt.Errorf("%w: %v", ErrEtcdUnreachable, err)
	}
	defer c.Close()
	ids := map[uint64]int{}
	var leader uint64
	for i, ep := range e.endpoints {
		sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		st, err := c.Status(sctx, ep)
		cancel()
		if err != nil {
			continue
		}
		ids[st.Header.MemberId] = i
		if st.Leader != 0 {
			leader = st.Leader
		}
	}
	if i, ok := ids[leader]; ok && leader != 0 {
		return i, nil
	}
	return 0, fmt.Errorf("%w: no member names a leader among %s", ErrEtcdUnreachable, strings.Join(e.endpoints, ","))
}

// started returns the members, or ErrEtcdNotStarted.
func (e *Etcd) started() error {
	if e.members == nil {
		return ErrEtcdNotStarted
	}
	return nil
}

// Pause stops the leader's process (SIGSTOP) and resumes it after d in
// the background: the others elect a new leader after the election
// timeout (1 s) and the cluster serves on, while what the clients sent
// to the stopped member waits. The levers are serialized: the next
// waits until the member resumes.
func (e *Etcd) Pause(ctx context.Context, d time.Duration) error {
	if err := e.started(); err != nil {
		return err
	}
	i, err := e.Leader(ctx)
	if err != nil {
		return err
	}
	return e.stop(e.members[i:i+1], d)
}

// LoseQuorum implements QuorumLoser: it stops two of the three members
// (SIGSTOP) for d, the leader among them: the one left can neither elect
// a leader nor commit a write, so every lock and sale waits (liveness),
// and nothing is granted twice (safety).
func (e *Etcd) LoseQuorum(ctx context.Context, d time.Duration) error {
	if err := e.started(); err != nil {
		return err
	}
	i, err := e.Leader(ctx)
	if err != nil {
		return err
	}
	other := (i + 1) % len(e.members)
	return e.stop([]*etcdMember{e.members[i], e.members[other]}, d)
}

// CanLoseQuorum implements QuorumLoser: true for the members lockbench
// started.
func (e *Etcd) CanLoseQuorum() bool { return e.members != nil }

var _ QuorumLoser = (*Etcd)(nil)

// stop holds ms still for d, in the background.
func (e *Etcd) stop(ms []*etcdMember, d time.Duration) error {
	return pauseFor(d, func() (func(), error) { return e.hold(ms) })
}

// hold sends SIGSTOP to ms and returns the resume that sends them
// SIGCONT; the levers wait until it is called.
func (e *Etcd) hold(ms []*etcdMember) (resume func(), err error) {
	e.mu.Lock()
	if e.host != nil {
		return e.holdHosted(ms)
	}
	resume = func() {
		for _, m := range ms {
			m.proc.Signal(syscall.SIGCONT)
		}
		e.mu.Unlock()
	}
	for _, m := range ms {
		if err := m.proc.Signal(syscall.SIGSTOP); err != nil {
			resume()
			return nil, err
		}
	}
	return resume, nil
}

// Restart kills the leader (SIGKILL: no clean shutdown) and starts it
// again on its data, and waits until it serves: the cluster elects
// another leader meanwhile, and the member catches up from it. Nothing
// committed is lost; a session's lease survives, as etcd keeps leases
// across a leader change.
func (e *Etcd) Restart(ctx context.Context) error {
	if err := e.started(); err != nil {
		return err
	}
	i, err := e.Leader(ctx)
	if err != nil {
		return err
	}
	return e.RestartMember(ctx, i)
}

// RestartMember kills member i (SIGKILL) and starts it again on its data,
// on the same ports, and waits until it serves.
func (e *Etcd) RestartMember(ctx context.Context, i int) error {
	if err := e.started(); err != nil {
		return err
	}
	if i < 0 || i >= len(e.members) {
		return fmt.Errorf("servers: etcd member %d of %d", i, len(e.members))
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.host != nil {
		return e.host.Restart(ctx, i)
	}
	m := e.members[i]
	m.proc.Kill()
	if err := e.spawn(m, "existing"); err != nil {
		return err
	}
	// Killed, it must come back whatever becomes of ctx (a fault's, which
	// ends with the sale): the start's own timeout bounds the wait.
	return e.await(context.WithoutCancel(ctx), m)
}
