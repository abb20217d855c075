// Package containers starts the servers a sale runs against in Docker
// containers, with testcontainers-go: `lockbench --backend=docker`. Redis
// (one, or N for redlock), and the ZooKeeper, MariaDB, etcd cluster and
// PostgreSQL that the zookeeper, mysql, etcd and pg implementations need.
// Each container uses the host's network and listens on 127.0.0.1 only, so
// that every connection stays on loopback and a dockerd started without its
// bridge (--bridge=none --iptables=false) will do. A backend removes its
// container on Close; lockbench calls Close on every way out of a run,
// Ctrl-C and errors included.
//
// It is a package of its own so that workload, and everything else but the
// command, stays free of the Docker client's dependencies.
package containers

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/lockbench/lockbench/internal/loopback"
	"github.com/lockbench/lockbench/servers"
	"github.com/redis/go-redis/v9"
	"github.com/testcontainers/testcontainers-go"
)

// RedisImage is the image StartRedis runs when given none: the official
// Redis 7 image.
const RedisImage = "redis:7"

// RedisImageEnv names the environment variable that overrides RedisImage
// (--redis-image's default), for machines that cannot pull it.
const RedisImageEnv = "LOCKBENCH_REDIS_IMAGE"

// ErrDocker means Docker could not run what was asked (no daemon, no such
// image, a container that did not start): an infrastructure failure.
var ErrDocker = errors.New("containers: docker")

// Labels of every container lockbench starts, so that one left behind by
// a killed process can be found: docker ps -a --filter label=lockbench.
const (
	// Label's value is the server the container runs (redis, zookeeper,
	// mysql, sentinel), or node for a sale's node (NodeLauncher).
	Label = "lockbench"
	// PIDLabel's value is the process ID of the lockbench that started it.
	PIDLabel = "lockbench.pid"
)

// Timeouts of the container's life cycle.
const (
	startTimeout   = 30 * time.Second // a started redis-server answering INFO
	pullTimeout    = 5 * time.Minute  // an image pull and the start together
	restartTimeout = 20 * time.Second // a restarted server answering PING
	removeTimeout  = 30 * time.Second // stop and remove on Close
)

// Redis is a redis-server in a Docker container that lockbench started. It
// is a servers.Backend, a servers.Pauser (docker pause: the process is
// frozen, so it answers nobody and expires nothing) and a
// servers.Restarter (the container is killed and started again; the
// server keeps nothing, as it runs with --save "" --appendonly no).
type Redis struct {
	image  string
	addr   string
	ctr    *testcontainers.DockerContainer
	ext    *servers.External // reaches the server; its version
	frozen freezer           // docker pause, with the Docker client
}

// StartRedis starts image (RedisImage when empty) with host networking and
// redis-server listening on 127.0.0.1 at a free port, without persistence,
// and returns once the server answers. It disables testcontainers' reaper
// (TESTCONTAINERS_RYUK_DISABLED=true) unless the environment says
// otherwise: the reaper is an image of its own that a machine without a
// registry cannot pull, and Close removes the container anyway.
//
// Cancelling ctx does not interrupt a start under way, which could leave
// a container Docker created but nobody knows of: the container is started,
// then removed, and the error is ctx's.
func StartRedis(ctx context.Context, image string) (*Redis, error) {
	if image == "" {
		image = RedisImage
	}
	cli, err := client(ctx)
	if err != nil {
		return nil, err
	}
	r, err := loopback.Retry(ctx, errExited, func(port int, addr string) (*Redis, error) {
		return startRedis(ctx, image, port, addr)
	})
	if err != nil {
		cli.Close()
		return nil, err
	}
	r.frozen.cli, r.frozen.id = cli, r.ContainerID()
	return r, nil
}

// noDaemon is the advice every "no Docker daemon" error carries.
const noDaemon = "no Docker daemon answers (start one: make dockerd, or scripts/dockerd.sh; install it with apt-get install docker.io)"

// client connects to the Docker daemon, after disabling testcontainers'
// reaper unless the environment says otherwise (see StartRedis); it is
// the first thing this package does with testcontainers, which reads its
// configuration once. Every entry point of the package asks it first, so
// that a machine without Docker gets ErrDocker here and never reaches
// testcontainers' other calls.
func client(ctx context.Context) (cli *testcontainers.DockerClient, err error) {
	if _, ok := os.LookupEnv("TESTCONTAINERS_RYUK_DISABLED"); !ok {
		os.Setenv("TESTCONTAINERS_RYUK_DISABLED", "true")
	}
	// testcontainers panics when it finds no Docker host at all (its
	// MustExtractDockerHost: "rootless Docker not found"); lockbench
	// reports that as the error it is.
	defer func() {
		if r := recover(); r != nil {
			cli, err = nil, fmt.Errorf("%w: %s: %v", ErrDocker, noDaemon, r)
		}
	}()
	cli, err = testcontainers.NewDockerClientWithOpts(context.WithoutCancel(ctx))
	if err == nil {
		_, err = cli.Ping(ctx)
		if err != nil {
			cli.Close()
		}
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrDocker, noDaemon, err)
	}
	return cli, nil
}

// HasImage reports whether image is present on the Docker daemon, so that
// a caller can tell a missing image from a daemon that cannot run it; an
// error means no daemon answered.
func HasImage(ctx context.Context, image string) (bool, error) {
	cli, err := client(ctx)
	if err != nil {
		return false, err
	}
	defer cli.Close()
	_, err = cli.ImageInspect(ctx, image)
	return err == nil, nil
}

// startRedis runs one redis-server container on a free port through
// runServer, ready once the server answers INFO from the host; the
// returned Redis has no Docker client yet.
func startRedis(ctx context.Context, image string, port int, addr string) (*Redis, error) {
	r := &Redis{image: image, addr: addr}
	// The arguments go to redis-server itself: the official image's
	// entrypoint passes arguments that start with "--" on to it, and the
	// local images' entrypoint is the binary.
	var err error
	r.ctr, err = runServer(ctx, server{
		kind:  "redis",
		image: image,
		flag:  "--redis-image",
		local: "lockbench/redis:local",
		cmd: []string{
			"--port", strconv.Itoa(port),
			"--bind", "127.0.0.1",
			"--save", "",
			"--appendonly", "no",
			"--daemonize", "no",
		},
		ready: func(ctx context.Context) (err error) {
			r.ext, err = servers.DialRedis(ctx, addr, "")
			return err
		},
		timeout: startTimeout,
	})
	if err != nil {
		return nil, err
	}
	return r, nil
}

// remove stops and removes ctr, if there is one, whatever the context.
func remove(ctr *testcontainers.DockerContainer) error {
	if ctr == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), removeTimeout)
	defer cancel()
	return testcontainers.TerminateContainer(ctr, testcontainers.StopContext(ctx), testcontainers.StopTimeout(0))
}

// Name implements servers.Backend.
func (r *Redis) Name() string {
	return fmt.Sprintf("redis %s in docker (%s)", r.ext.Version(), r.image)
}

// Version implements servers.Server.
func (r *Redis) Version() string { return r.ext.Version() }

// Options implements servers.Backend.
func (r *Redis) Options() *redis.Options { return r.ext.Options() }

// Addr is the server's address on the host's loopback.
func (r *Redis) Addr() string { return r.addr }

// ContainerID is the Docker ID of the server's container.
func (r *Redis) ContainerID() string { return r.ctr.GetContainerID() }

// Pause implements servers.Pauser with docker pause: the server's process
// is frozen for d from the moment it is, and thawed in the background. A
// pause while paused extends it.
func (r *Redis) Pause(ctx context.Context, d time.Duration) error {
	return r.frozen.pause(ctx, d)
}

// Restart implements servers.Restarter: the container is killed and
// started again, and Restart returns once the server answers PING on the
// same address. It keeps no data: every key is gone.
func (r *Redis) Restart(ctx context.Context) error {
	r.frozen.end()
	if err := kill(ctx, r.ctr); err != nil {
		return err
	}
	c := redis.NewClient(r.ext.Options())
	defer c.Close()
	ctx, cancel := context.WithTimeout(ctx, restartTimeout)
	defer cancel()
	for {
		pctx, pcancel := context.WithTimeout(ctx, 200*time.Millisecond)
		err := c.Ping(pctx).Err()
		pcancel()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w: restart: the server did not answer: %v", servers.ErrUnreachable, err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Close implements servers.Backend: the container is thawed if paused,
// then stopped and removed.
func (r *Redis) Close() error {
	r.frozen.end()
	err := remove(r.ctr)
	r.frozen.cli.Close()
	if err != nil {
		return fmt.Errorf("%w: remove %s: %v", ErrDocker, r.ContainerID(), err)
	}
	return nil
}

// Interface checks.
var (
	_ servers.Backend   = (*Redis)(nil)
	_ servers.Pauser    = (*Redis)(nil)
	_ servers.Restarter = (*Redis)(nil)
)
