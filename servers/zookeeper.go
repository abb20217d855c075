package servers

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/lockbench/lockbench/internal/zkver"
)

// KindZooKeeper is a ZooKeeper, where the ZooKeeper locks live; their
// inventory stays in Redis.
const KindZooKeeper Kind = "zookeeper"

// zooKeeperEnv is the environment variable --zk defaults to.
const zooKeeperEnv = "LOCKBENCH_ZK"

func init() {
	Register(KindInfo{
		Kind:  KindZooKeeper,
		Title: "a ZooKeeper",
		Flag:  "zk",
		Env:   zooKeeperEnv,
		Usage: "address of the ZooKeeper (host:port) that the zookeeper implementations lock in; the inventory stays in Redis (default $" + zooKeeperEnv + ")",
		Hint:  "needs a ZooKeeper: give --zk ADDR (or set $" + zooKeeperEnv + "), or run with --backend=docker (ZooKeeper in a container)",
		Check: func(addr string) error {
			if err := CheckHostPort(addr); err != nil {
				return fmt.Errorf("%q is not host:port (%v); for example --zk=127.0.0.1:2181", addr, err)
			}
			return nil
		},
		Dial: func(ctx context.Context, addr string) (Server, error) { return DialZooKeeper(ctx, addr) },
		Node: func(spec string) (Server, error) { return &ZooKeeper{addr: spec}, nil },
	})
}

// ZooKeeper is a ZooKeeper server reached by address; the ZooKeeper locks
// use it, the inventory stays in Redis.
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

// Addr is the server's host:port.
func (z *ZooKeeper) Addr() string { return z.addr }

// Addrs implements Addressed.
func (z *ZooKeeper) Addrs() []string { return []string{z.addr} }

// Version is the server's own, "" when it did not say (a ZooKeeper that
// does not answer the srvr command).
func (z *ZooKeeper) Version() string { return z.version }

// Close implements Server; the server is not lockbench's to stop.
func (z *ZooKeeper) Close() error { return nil }

// Name implements Server.
func (z *ZooKeeper) Name() string { return ZooKeeperName(z.version, z.addr) }

// ZooKeeperName names a ZooKeeper of version (which may be "") at addr.
func ZooKeeperName(version, addr string) string {
	if version == "" {
		return "zookeeper at " + addr
	}
	return fmt.Sprintf("zookeeper %s at %s", version, addr)
}

// CheckHostPort accepts host:port with a host and a port from 1 to
// 65535, without dialing; its error says what is wrong.
func CheckHostPort(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	if host == "" {
		return errors.New("no host")
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return fmt.Errorf("port %q is not a number from 1 to 65535", port)
	}
	return nil
}
