package servers

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// EtcdHost runs the members of an etcd cluster that lockbench started
// outside its own process tree: in containers (package containers, for
// --backend=docker). The cluster's levers (Pause, LoseQuorum, Restart,
// RestartMember) act on the members through it, each named by its index
// in the cluster's Endpoints, as they act on member processes otherwise.
type EtcdHost interface {
	// Where says where the members run, for the cluster's Name: "in
	// docker (lockbench/etcd:local)".
	Where() string
	// Stop holds the members still (docker pause) until resume is
	// called: they answer nobody, and their peers elect a new leader.
	Stop(ctx context.Context, members []int) (resume func(), err error)
	// Restart kills member i (no clean shutdown) and starts it again on
	// its data and addresses, and returns once it serves (EtcdServes).
	Restart(ctx context.Context, i int) error
	// Close removes the members.
	Close() error
}

// EtcdIn is the etcd cluster whose members h runs, reached at their
// client addresses (host:port, in h's order), which already serve. It
// reads the cluster's version; on an error h is the caller's to close,
// and after a success the cluster's Close closes it.
func EtcdIn(ctx context.Context, endpoints []string, h EtcdHost) (*Etcd, error) {
	if len(endpoints) == 0 {
		return nil, fmt.Errorf("%w: no address", ErrEtcdAddr)
	}
	e := &Etcd{endpoints: slices.Clone(endpoints), host: h}
	for i, ep := range endpoints {
		e.members = append(e.members, &etcdMember{name: "m" + strconv.Itoa(i), client: ep})
	}
	v, err := e.readVersion(ctx)
	if err != nil {
		return nil, err
	}
	e.version = v
	return e, nil
}

// EtcdMemberArgs are the arguments that start etcd member name of a
// cluster lockbench runs, as a process or in a container: its data
// directory, its client and peer addresses (host:port), every member's
// peer address (cluster: name=http://host:port,...), the cluster's token,
// and state "new" for the first start ("existing" on its data);
// lockbench's timings (heartbeat 100 ms, election timeout 1 s), and
// errors alone logged.
func EtcdMemberArgs(name, data, client, peer, cluster, token, state string) []string {
	return []string{
		"--name", name, "--data-dir", data,
		"--listen-client-urls", "http://" + client, "--advertise-client-urls", "http://" + client,
		"--listen-peer-urls", "http://" + peer, "--initial-advertise-peer-urls", "http://" + peer,
		"--initial-cluster", cluster, "--initial-cluster-token", token,
		"--initial-cluster-state", state,
		"--heartbeat-interval", "100", "--election-timeout", "1000",
		"--logger", "zap", "--log-level", "error",
	}
}

// EtcdServes is nil once the etcd member at addr (host:port) answers a
// status request and names a leader: the member of a new cluster serves
// once a majority has started.
func EtcdServes(ctx context.Context, addr string) error {
	c, err := newEtcdClient([]string{addr})
	if err != nil {
		return err
	}
	defer c.Close()
	return etcdLeads(ctx, c, addr)
}

// etcdLeads asks member ep, through c, whether the cluster has a leader.
func etcdLeads(ctx context.Context, c *clientv3.Client, ep string) error {
	st, err := c.Status(ctx, ep)
	if err != nil {
		return err
	}
	if st.Leader == 0 {
		return errors.New("no leader yet")
	}
	return nil
}

// hostTimeout bounds a host's pause of the members it runs.
const hostTimeout = 30 * time.Second

// holdHosted is hold for members an EtcdHost runs; e.mu is held, and
// the resume it returns unlocks it.
func (e *Etcd) holdHosted(ms []*etcdMember) (resume func(), err error) {
	idx := make([]int, len(ms))
	for j, m := range ms {
		idx[j] = slices.Index(e.members, m)
	}
	ctx, cancel := context.WithTimeout(context.Background(), hostTimeout)
	defer cancel()
	thaw, err := e.host.Stop(ctx, idx)
	if err != nil {
		e.mu.Unlock()
		return nil, err
	}
	return func() {
		thaw()
		e.mu.Unlock()
	}, nil
}

// where is where the cluster's host runs it, " in docker (...)", or "".
func (e *Etcd) where() string {
	if e.host == nil || e.host.Where() == "" {
		return ""
	}
	return " " + e.host.Where()
}

// PostgresHost runs a PostgreSQL that lockbench started outside its own
// process tree: in a container (package containers, for
// --backend=docker). The server's levers act through it: Pause (docker
// pause) and Restart (killed and started again on its data, returning
// once it answers).
type PostgresHost interface {
	Host
	Restarter
	// Close removes the server.
	Close() error
}

// MemoryDir makes a new directory for a started server's data in memory
// (/dev/shm) when the machine has one, else in the temporary directory,
// as StartEtcd keeps its members' data: for the etcd members lockbench
// starts in containers too.
func MemoryDir(pattern string) (string, error) { return memoryDir(pattern) }

// PostgresArgs are the arguments of the postgres server lockbench runs,
// as a process or in a container, after its data directory: port on
// 127.0.0.1 only, room for 400 connections (every node's pool, the run's
// own connection and the fault levers), small buffers, no fsync and no
// JIT: a throwaway server, whose crash loses nothing it committed (only
// the machine's would).
func PostgresArgs(port int) []string {
	return []string{
		"-p", strconv.Itoa(port), "-h", "127.0.0.1",
		"-c", "max_connections=" + strconv.Itoa(pgMaxConnections), "-c", "shared_buffers=32MB",
		"-c", "fsync=off", "-c", "full_page_writes=off", "-c", "jit=off",
	}
}

// PostgresIn is the PostgreSQL h runs, reached at dsn (DialPostgres): its
// Name says where it runs, its levers act through h, and its Close
// closes h. On an error h is the caller's to close.
func PostgresIn(ctx context.Context, dsn string, h PostgresHost) (*Postgres, error) {
	p, err := DialPostgres(ctx, dsn)
	if err != nil {
		return nil, err
	}
	p.host = h
	return p, nil
}
