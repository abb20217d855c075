package containers

import (
	"context"
	"fmt"
	"io"
	"net"
	"strings"
	"time"

	"github.com/lockbench/lockbench/internal/loopback"
	"github.com/lockbench/lockbench/internal/zkver"
	"github.com/testcontainers/testcontainers-go"
)

// ZooKeeperImage is the image StartZooKeeper runs when given none: the
// official ZooKeeper 3.9 image.
const ZooKeeperImage = "zookeeper:3.9"

// ZooKeeperImageEnv names the environment variable that overrides
// ZooKeeperImage (--zk-image's default), for machines that cannot pull it.
const ZooKeeperImageEnv = "LOCKBENCH_ZK_IMAGE"

// ZooKeeperConfig is where StartZooKeeper puts the server's zoo.cfg in the
// container. The official image's entrypoint uses a zoo.cfg it finds there
// instead of writing one from its ZOO_* variables, and the local image
// (scripts/docker-images.sh) passes that path to ZooKeeperServerMain: one
// configuration for both.
const ZooKeeperConfig = "/conf/zoo.cfg"

// ZooKeeperMinSession is the shortest session timeout the server grants
// (minSessionTimeout, with tickTime 100 ms): a --ttl of a second is
// honoured, not raised to Debian's default 4 s.
const ZooKeeperMinSession = 200 * time.Millisecond

// zkStartTimeout bounds the JVM's start until the server answers ruok.
const zkStartTimeout = 60 * time.Second

// ZooKeeper is a standalone ZooKeeper server in a Docker container that
// lockbench started, listening on 127.0.0.1 with the host's network.
type ZooKeeper struct {
	image   string
	addr    string
	version string
	ctr     *testcontainers.DockerContainer
}

// StartZooKeeper starts image (ZooKeeperImage when empty) with host
// networking and a standalone server on a free 127.0.0.1 port (tickTime
// 100 ms, minSessionTimeout ZooKeeperMinSession, the srvr, ruok and
// conf four-letter words allowed, no admin server, data in the container
// and not synced to disk: a throwaway server, and every lock is a write), and
// returns once it serves requests. As StartRedis, it leaves nothing running
// on an error and does not let a cancelled ctx interrupt a start.
func StartZooKeeper(ctx context.Context, image string) (*ZooKeeper, error) {
	if image == "" {
		image = ZooKeeperImage
	}
	cli, err := client(ctx)
	if err != nil {
		return nil, err
	}
	cli.Close()
	return loopback.Retry(ctx, errExited, func(port int, addr string) (*ZooKeeper, error) {
		return startZooKeeper(ctx, image, port, addr)
	})
}

func startZooKeeper(ctx context.Context, image string, port int, addr string) (*ZooKeeper, error) {
	ctr, err := runServer(ctx, server{
		kind:  "zookeeper",
		image: image,
		flag:  "--zk-image",
		local: "lockbench/zookeeper:local",
		files: []testcontainers.ContainerFile{{
			Reader:            strings.NewReader(zooConfig(port)),
			ContainerFilePath: ZooKeeperConfig,
			FileMode:          0o644,
		}},
		ready: func(ctx context.Context) error {
			return serving(ctx, addr)
		},
		timeout: zkStartTimeout,
	})
	if err != nil {
		return nil, err
	}
	return &ZooKeeper{image: image, addr: addr, ctr: ctr, version: zkver.Get(addr, 2*time.Second)}, nil
}

// zooConfig is the standalone server's zoo.cfg; dataDir /data exists in
// the official image and in the local one.
func zooConfig(port int) string {
	return fmt.Sprintf(`tickTime=100
minSessionTimeout=%d
maxSessionTimeout=120000
initLimit=10
syncLimit=5
dataDir=/data
clientPort=%d
clientPortAddress=127.0.0.1
admin.enableServer=false
forceSync=no
4lw.commands.whitelist=srvr,ruok,conf
`, ZooKeeperMinSession.Milliseconds(), port)
}

// serving asks the server at addr the srvr four-letter word; nil when it
// answers with its version. ruok is not enough: a server answers imok
// before it serves requests.
func serving(ctx context.Context, addr string) error {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	defer c.Close()
	if dl, ok := ctx.Deadline(); ok {
		c.SetDeadline(dl)
	}
	if _, err := io.WriteString(c, "srvr"); err != nil {
		return err
	}
	b, err := io.ReadAll(io.LimitReader(c, 4096))
	if !strings.Contains(string(b), "Zookeeper version:") {
		return fmt.Errorf("srvr: %q, %v", strings.TrimSpace(string(b)), err)
	}
	return nil
}

// Addr is the server's address on the host's loopback.
func (z *ZooKeeper) Addr() string { return z.addr }

// Addrs implements servers.Addressed.
func (z *ZooKeeper) Addrs() []string { return []string{z.addr} }

// Version is the server's version as srvr reports it, "" if it did not.
func (z *ZooKeeper) Version() string { return z.version }

// Name says what the server is, for the summary and the report.
func (z *ZooKeeper) Name() string {
	return fmt.Sprintf("zookeeper %s in docker (%s)", z.version, z.image)
}

// ContainerID is the Docker ID of the server's container.
func (z *ZooKeeper) ContainerID() string { return z.ctr.GetContainerID() }

// Close stops and removes the container.
func (z *ZooKeeper) Close() error { return closeServer(z.ctr) }

// Image is the image the server runs.
func (z *ZooKeeper) Image() string { return z.image }
