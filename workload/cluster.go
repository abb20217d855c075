package workload

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/lockbench/lockbench/servers"

	"github.com/lockbench/lockbench/locks"

	"github.com/redis/go-redis/v9"
)

// errCut is why a command to a server a fault cut a node off from was not
// sent.
var errCut = errors.New("workload: node cut off from this server")

// clusterRun is what a sale of a multi-server lock keeps about the
// servers other than the main one.
type clusterRun struct {
	backends []servers.Backend // every server the impl runs on, main first
	admin    []*redis.Client   // the run's own client of each, main first
	cut      [][]*atomic.Bool  // [node][server]: commands refused
}

// lockBackends returns the backends the sale's lock runs on: all of a
// cluster's for a multi-server lock, else the backend alone.
func (r *run) lockBackends() []servers.Backend {
	b := r.cfg.Servers.Redis
	if b == nil {
		return nil
	}
	if c, ok := b.(*servers.Cluster); ok && r.cfg.Sale.Needs().Has(servers.KindRedisServers) {
		return c.Servers()
	}
	return []servers.Backend{b}
}

// claimServers readies every Redis of a sale that servers.KindRedis, the main
// one first: the run's prefix free (or cleared with Force), the lock's
// scripts (Scripted) loaded. It returns the function that clears the
// prefix on each server it claimed after the sale; on any other, and for
// a sale that does not need Redis, nothing is touched.
func (r *run) claimServers(ctx context.Context) (cleanup func(), err error) {
	r.cluster.backends = r.lockBackends()
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
	if r.admin == nil || !r.cfg.Sale.Needs().Has(servers.KindRedis) {
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
					return cleanup, fmt.Errorf("%w: loading scripts: %v", servers.ErrUnreachable, err)
				}
				return cleanup, fmt.Errorf("%w: server %d: loading scripts: %v", servers.ErrUnreachable, i, err)
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
func (c *Controls) DeleteLockOn(ctx context.Context, indexes ...int) error {
	var errs []error
	for _, i := range indexes {
		if i < 0 || i >= len(c.r.cluster.admin) {
			errs = append(errs, fmt.Errorf("%w: no server %d", servers.ErrUnsupported, i))
			continue
		}
		errs = append(errs, c.r.cluster.admin[i].Del(ctx, c.r.keys.locks...).Err())
	}
	return errors.Join(errs...)
}

// RestartServerAt restarts server i of the lock's servers (0 is the main
// one) without persistence, when the backend can.
func (c *Controls) RestartServerAt(ctx context.Context, i int) error {
	if cl, ok := c.r.cfg.Servers.Redis.(*servers.Cluster); ok {
		if i == 0 {
			c.r.quiet(c.r.lostAfter())
		}
		return cl.RestartServer(ctx, i)
	}
	if i != 0 {
		return fmt.Errorf("%w: no server %d", servers.ErrUnsupported, i)
	}
	return c.RestartServer(ctx)
}

// CutServer cuts node off server i of the lock's servers (i > 0: the main
// server stays reachable), or mends the cut: while cut, what the node
// sends there fails at once, as to a server it cannot reach.
func (c *Controls) CutServer(node, i int, cut bool) error {
	if i < 1 || i >= c.Servers() || node < 0 || node >= len(c.r.cluster.cut) {
		return fmt.Errorf("%w: cannot cut node %d off server %d", servers.ErrUnsupported, node, i)
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
