package workload

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/lockbench/lockbench/internal/zkver"
	"github.com/lockbench/lockbench/locks"
)

// ZooKeeper is a ZooKeeper server lockbench did not start, reached by
// address; the ZooKeeper locks use it, the inventory stays in Redis.
type ZooKeeper struct {
	addr, version string
}

// DialZooKeeper checks that a ZooKeeper server listens at addr and asks
// its version. It fails with ErrUnreachable within a few seconds when none
// does.
func DialZooKeeper(ctx context.Context, addr string) (*ZooKeeper, error) {
	d := net.Dialer{Timeout: 3 * time.Second}
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("%w: zookeeper at %s: %v", ErrUnreachable, addr, err)
	}
	c.Close()
	return &ZooKeeper{addr: addr, version: zkver.Get(addr, 2*time.Second)}, nil
}

// Addr implements ZooKeeperServer.
func (z *ZooKeeper) Addr() string { return z.addr }

// Version implements Server: the srvr four-letter word's answer, "" when
// the word is not whitelisted.
func (z *ZooKeeper) Version() string { return z.version }

// Close implements Server; the server is not lockbench's to stop.
func (z *ZooKeeper) Close() error { return nil }

// Name implements Server.
func (z *ZooKeeper) Name() string { return ZooKeeperName(z.version, z.addr) }

// ZooKeeperName names a ZooKeeper server of version (may be "") at addr.
func ZooKeeperName(version, addr string) string {
	if version == "" {
		return "zookeeper at " + addr
	}
	return fmt.Sprintf("zookeeper %s at %s", version, addr)
}

// zooKeeperEnv is node n's way to the run's ZooKeeper, through a fault
// proxy when the injector routes the node, and behind the node's pause;
// nil when the run has no ZooKeeper.
func (r *run) zooKeeperEnv(n *node) (*locks.ZooKeeper, error) {
	if r.cfg.Servers.ZooKeeper == nil {
		return nil, nil
	}
	addr := r.cfg.Servers.ZooKeeper.Addr()
	if rt, ok := r.cfg.Injector.(Router); ok {
		var err error
		if addr, err = rt.Route(n.id, addr); err != nil {
			return nil, err
		}
	}
	return &locks.ZooKeeper{Addr: addr, Wait: n.pause.wait}, nil
}
