package workload

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/lockbench/lockbench/locks"
)

// ZooKeeper is a ZooKeeper server that the run's ZooKeeper locks use; the
// inventory stays on the Backend.
type ZooKeeper struct {
	// Addr is the server's host:port.
	Addr string
	// Version is the server's version, "" when it does not say (the srvr
	// four-letter word is not whitelisted).
	Version string
}

// DialZooKeeper checks that a ZooKeeper server listens at addr. It fails
// with ErrUnreachable within a few seconds when none does.
func DialZooKeeper(ctx context.Context, addr string) (*ZooKeeper, error) {
	d := net.Dialer{Timeout: 3 * time.Second}
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("%w: zookeeper at %s: %v", ErrUnreachable, addr, err)
	}
	c.Close()
	return &ZooKeeper{Addr: addr, Version: locks.ZooKeeperVersion(addr, 2*time.Second)}, nil
}

// Name says what the server is, for the summary.
func (z *ZooKeeper) Name() string {
	if z.Version == "" {
		return "zookeeper at " + z.Addr
	}
	return fmt.Sprintf("zookeeper %s at %s", z.Version, z.Addr)
}

// zooKeeperEnv is node n's way to the run's ZooKeeper, through a fault
// proxy when the injector routes the node, and behind the node's gate;
// nil when the run has no ZooKeeper.
func (r *run) zooKeeperEnv(n *node) (*locks.ZooKeeper, error) {
	if r.cfg.ZooKeeper == nil {
		return nil, nil
	}
	addr := r.cfg.ZooKeeper.Addr
	if rt, ok := r.cfg.Injector.(Router); ok {
		var err error
		if addr, err = rt.Route(n.id, addr); err != nil {
			return nil, err
		}
	}
	return &locks.ZooKeeper{Addr: addr, Wait: n.gate.wait}, nil
}
