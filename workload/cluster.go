package workload

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/lockbench/lockbench/locks"

	"github.com/redis/go-redis/v9"
)

// errCut is why a command to a server a fault cut a node off from was not
// sent.
var errCut = errors.New("workload: node cut off from this server")

// Cluster is a backend of several independent servers, for the locks that
// run on many (redlock). The first server is the main one: it holds the
// inventory, and every single-server lock runs on it alone, as on a plain
// backend.
type Cluster struct {
	servers []Backend
}

// NewCluster makes one backend of servers, the main one first. Closing
// the cluster closes every server.
func NewCluster(servers []Backend) *Cluster {
	return &Cluster{servers: servers}
}

// StartEmbeddedCluster starts n embedded servers, each on a free loopback
// port with its clock driven in real time.
func StartEmbeddedCluster(n int) (*Cluster, error) {
	c := &Cluster{}
	for range n {
		e, err := StartEmbedded()
		if err != nil {
			c.Close()
			return nil, err
		}
		c.servers = append(c.servers, e)
	}
	return c, nil
}

// DialCluster checks that a Redis server answers at each address and
// returns them as one cluster backend, the first address the main server.
func DialCluster(ctx context.Context, addrs []string, password string) (*Cluster, error) {
	c := &Cluster{}
	for _, a := range addrs {
		x, err := DialRedis(ctx, a, password)
		if err != nil {
			return nil, err
		}
		c.servers = append(c.servers, x)
	}
	return c, nil
}

// Servers returns the cluster's servers, the main one first.
func (c *Cluster) Servers() []Backend { return c.servers }

// Name implements Backend: the main server's name, and how many servers.
func (c *Cluster) Name() string {
	names := make([]string, len(c.servers))
	same := true
	for i, s := range c.servers {
		names[i] = s.Name()
		same = same && names[i] == names[0]
	}
	if same {
		return fmt.Sprintf("%d × %s", len(c.servers), names[0])
	}
	return fmt.Sprintf("%d servers: %s", len(c.servers), strings.Join(names, "; "))
}

// Version implements Server: the main server's.
func (c *Cluster) Version() string { return c.servers[0].Version() }

// Options implements Backend: the main server's.
func (c *Cluster) Options() *redis.Options { return c.servers[0].Options() }

// Pause implements Pauser on the main server, when it can pause.
func (c *Cluster) Pause(ctx context.Context, d time.Duration) error {
	p, ok := c.servers[0].(Pauser)
	if !ok {
		return ErrUnsupported
	}
	return p.Pause(ctx, d)
}

// Restart implements Restarter on the main server.
func (c *Cluster) Restart(ctx context.Context) error { return c.RestartServer(ctx, 0) }

// RestartServer restarts server i without persistence, when it can.
func (c *Cluster) RestartServer(ctx context.Context, i int) error {
	if i < 0 || i >= len(c.servers) {
		return fmt.Errorf("%w: no server %d", ErrUnsupported, i)
	}
	rs, ok := c.servers[i].(Restarter)
	if !ok {
		return ErrUnsupported
	}
	return rs.Restart(ctx)
}

// Close implements Backend: every server is closed.
func (c *Cluster) Close() error {
	var errs []error
	for _, s := range c.servers {
		errs = append(errs, s.Close())
	}
	return errors.Join(errs...)
}

// Pausable reports whether b can pause its (main) server.
func Pausable(b Backend) bool {
	if c, ok := b.(*Cluster); ok {
		b = c.servers[0]
	}
	_, ok := b.(Pauser)
	return ok
}

// Restartable reports whether b can restart its servers, every one of a
// cluster's.
func Restartable(b Backend) bool {
	c, ok := b.(*Cluster)
	if !ok {
		_, ok := b.(Restarter)
		return ok
	}
	for _, s := range c.servers {
		if _, ok := s.(Restarter); !ok {
			return false
		}
	}
	return true
}

// clusterRun is what a sale of a multi-server lock keeps about the
// servers other than the main one.
type clusterRun struct {
	backends []Backend        // every server the impl runs on, main first
	admin    []*redis.Client  // the run's own client of each, main first
	cut      [][]*atomic.Bool // [node][server]: commands refused
}

// servers returns the backends the sale's lock runs on: all of a
// cluster's for a multi-server lock, else the backend alone.
func (r *run) servers() []Backend {
	b := r.cfg.Servers.Redis
	if b == nil {
		return nil
	}
	if c, ok := b.(*Cluster); ok && r.cfg.Sale.Needs().Has(NeedsRedisServers) {
		return c.servers
	}
	return []Backend{b}
}

// claimServers readies every Redis of a sale that NeedsRedis, the main
// one first: the run's prefix free (or cleared with Force), the lock's
// scripts (Scripted) loaded. It returns the function that clears the
// prefix on each server it claimed after the sale; on any other, and for
// a sale that does not need Redis, nothing is touched.
func (r *run) claimServers(ctx context.Context) (cleanup func(), err error) {
	r.cluster.backends = r.servers()
	r.cluster.admin = []*redis.Client{r.admin}
	var claimed []*redis.Client
	cleanup = func() {
		c, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		for _, a := range claimed {
			clearPrefix(c, a, r.keys.prefix)
		}
		for _, a := range r.cluster.admin[1:] {
			a.Close()
		}
	}
	if r.admin == nil || !r.cfg.Sale.Needs().Has(NeedsRedis) {
		return cleanup, nil
	}
	var scripts []*redis.Script
	if s, ok := r.cfg.Sale.(Scripted); ok {
		scripts = s.Scripts()
	}
	for i, b := range r.cluster.backends {
		a := r.admin
		if i > 0 {
			a = redis.NewClient(b.Options())
			r.cluster.admin = append(r.cluster.admin, a)
		}
		if err := claimPrefix(ctx, a, r.keys.prefix, r.cfg.Force, i); err != nil {
			return cleanup, err
		}
		claimed = append(claimed, a)
		for _, s := range scripts {
			if err := s.Load(ctx, a).Err(); err != nil {
				if i == 0 {
					return cleanup, fmt.Errorf("%w: loading scripts: %v", ErrUnreachable, err)
				}
				return cleanup, fmt.Errorf("%w: server %d: loading scripts: %v", ErrUnreachable, i, err)
			}
		}
	}
	return cleanup, nil
}

// serverClients makes node n's own client of each server the lock runs
// on, the node's main client first; every command passes the node's pause
// and counter, so that pausing the node stops them all. It returns nil
// for a single-server lock.
func (r *run) serverClients(n *node, main *redis.Client) []*redis.Client {
	if len(r.cluster.backends) < 2 {
		return nil
	}
	cut := make([]*atomic.Bool, len(r.cluster.backends))
	out := []*redis.Client{main}
	cut[0] = new(atomic.Bool)
	for i, b := range r.cluster.backends[1:] {
		opts := b.Options()
		opts.PoolSize = r.cfg.Pool
		if t := r.cfg.CommandTimeout; t > 0 {
			opts.ReadTimeout, opts.WriteTimeout = t, t
		}
		cut[i+1] = new(atomic.Bool)
		c := redis.NewClient(opts)
		c.AddHook(cutHook{hook: hook{n}, cut: cut[i+1]})
		out = append(out, c)
	}
	r.cluster.cut = append(r.cluster.cut, cut)
	return out
}

// lockServers returns a node's clients as the lock's Env.Servers.
func lockServers(cs []*redis.Client) []locks.Redis {
	if cs == nil {
		return nil
	}
	out := make([]locks.Redis, len(cs))
	for i, c := range cs {
		out[i] = c
	}
	return out
}

// closeServerClients closes a node's clients of the servers other than
// the main one.
func closeServerClients(n *node) {
	for _, c := range n.servers[min(1, len(n.servers)):] {
		c.Close()
	}
}

// cutHook is the node's hook, in front of which a fault may cut the link
// to one server: commands then fail at once, known not sent.
type cutHook struct {
	hook
	cut *atomic.Bool
}

func (h cutHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	next = h.hook.ProcessHook(next)
	return func(ctx context.Context, cmd redis.Cmder) error {
		if h.cut.Load() {
			err := &notSentError{errCut}
			cmd.SetErr(err)
			return err
		}
		return next(ctx, cmd)
	}
}

// Servers is how many independent servers the sale's lock runs on: one
// but for a multi-server lock on a cluster.
func (c *Controls) Servers() int { return len(c.r.cluster.backends) }

// Quorum is how many of the lock's servers make a majority.
func (c *Controls) Quorum() int { return c.Servers()/2 + 1 }

// DeleteLockOn removes the lock's key on the servers listed (indexes of
// the lock's servers, the main one 0), as an eviction or a flush there
// would.
func (c *Controls) DeleteLockOn(ctx context.Context, servers ...int) error {
	var errs []error
	for _, i := range servers {
		if i < 0 || i >= len(c.r.cluster.admin) {
			errs = append(errs, fmt.Errorf("%w: no server %d", ErrUnsupported, i))
			continue
		}
		errs = append(errs, c.r.cluster.admin[i].Del(ctx, c.r.keys.locks...).Err())
	}
	return errors.Join(errs...)
}

// RestartServerAt restarts server i of the lock's servers (0 is the main
// one) without persistence, when the backend can.
func (c *Controls) RestartServerAt(ctx context.Context, i int) error {
	if cl, ok := c.r.cfg.Servers.Redis.(*Cluster); ok {
		if i == 0 {
			c.r.quiet(c.r.lostAfter())
		}
		return cl.RestartServer(ctx, i)
	}
	if i != 0 {
		return fmt.Errorf("%w: no server %d", ErrUnsupported, i)
	}
	return c.RestartServer(ctx)
}

// CutServer cuts node off server i of the lock's servers (i > 0: the main
// server stays reachable), or mends the cut: while cut, what the node
// sends there fails at once, as to a server it cannot reach.
func (c *Controls) CutServer(node, i int, cut bool) error {
	if i < 1 || i >= c.Servers() || node < 0 || node >= len(c.r.cluster.cut) {
		return fmt.Errorf("%w: cannot cut node %d off server %d", ErrUnsupported, node, i)
	}
	c.r.cluster.cut[node][i].Store(cut)
	return nil
}

// serverRange is 0, 1, ..., n-1.
func serverRange(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}
