package servers

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

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

// WatchClock implements SteppedClock: the longest step of any of the
// cluster's servers whose clock moves in steps (none: zero).
func (c *Cluster) WatchClock() func() time.Duration {
	var clocks []SteppedClock
	for _, s := range c.servers {
		if sc, ok := s.(SteppedClock); ok {
			clocks = append(clocks, sc)
		}
	}
	return WatchClocks(clocks...)
}

// WatchClocks watches the steps of every clock of cs at once: the
// function it returns stops every watch and returns the longest step of
// any (zero for none).
func WatchClocks(cs ...SteppedClock) func() time.Duration {
	stops := make([]func() time.Duration, len(cs))
	for i, c := range cs {
		stops[i] = c.WatchClock()
	}
	return func() time.Duration {
		var longest time.Duration
		for _, stop := range stops {
			longest = max(longest, stop())
		}
		return longest
	}
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

// Pausable reports whether s can stop answering for a while: the main
// server of a Cluster, a server whose Host is known (CanPause).
func Pausable(s Server) bool {
	if c, ok := s.(*Cluster); ok {
		s = c.servers[0]
	}
	if p, ok := s.(interface{ CanPause() bool }); ok {
		return p.CanPause()
	}
	_, ok := s.(Pauser)
	return ok
}

// Restartable reports whether s can restart without persistence, every
// server of a Cluster.
func Restartable(s Server) bool {
	c, ok := s.(*Cluster)
	if !ok {
		_, ok := s.(Restarter)
		return ok
	}
	for _, s := range c.servers {
		if _, ok := s.(Restarter); !ok {
			return false
		}
	}
	return true
}
