package containers

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"

	"github.com/lockbench/lockbench/sentinels"
	"github.com/testcontainers/testcontainers-go"
)

// sentinelConf is where a Sentinel's container finds its configuration
// file: in the working directory of both the official image and the
// local one (/data), which the official entrypoint hands to its redis
// user, and where Sentinel can rewrite it (a file copied in, not a bind
// mount, which Sentinel could not rename over).
const sentinelConf = "/data/sentinel.conf"

// sentinelStarter starts the redis-servers and Sentinels of the failover
// topology in containers of one Redis image.
type sentinelStarter struct {
	image string
	cli   *testcontainers.DockerClient
}

// SentinelStarter returns the sentinels.Starter that runs each
// redis-server and Sentinel of the failover topology in a container of
// image (RedisImage when empty): host networking, listening on 127.0.0.1
// at the port the topology gives, labelled like every container of
// lockbench's, removed when the topology closes. A Sentinel is the
// image's redis-server run with a configuration file and --sentinel.
// Pausing a server is docker pause. lockbench's relays, which everyone
// reaches the servers by, stay in lockbench's process on the host's
// loopback, which the containers share.
func SentinelStarter(ctx context.Context, image string) (sentinels.Starter, error) {
	if image == "" {
		image = RedisImage
	}
	cli, err := client(ctx)
	if err != nil {
		return nil, err
	}
	return &sentinelStarter{image: image, cli: cli}, nil
}

// Server implements sentinels.Starter. The arguments go to redis-server
// as StartRedis's do; its files stay in the container's working
// directory.
func (s *sentinelStarter) Server(ctx context.Context, port int, args []string) (sentinels.Process, error) {
	return s.run(ctx, "redis", port, args, nil)
}

// Sentinel implements sentinels.Starter.
func (s *sentinelStarter) Sentinel(ctx context.Context, port int, conf string) (sentinels.Process, error) {
	file := testcontainers.ContainerFile{Reader: strings.NewReader(conf), ContainerFilePath: sentinelConf, FileMode: 0o644}
	return s.run(ctx, "sentinel", port, []string{sentinelConf, "--sentinel"}, []testcontainers.ContainerFile{file})
}

// run starts one container of the topology, ready once it answers PING.
func (s *sentinelStarter) run(ctx context.Context, kind string, port int, cmd []string, files []testcontainers.ContainerFile) (sentinels.Process, error) {
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	ctr, err := runServer(ctx, server{
		kind:    kind,
		image:   s.image,
		flag:    "--redis-image",
		local:   "lockbench/redis:local",
		cmd:     cmd,
		files:   files,
		ready:   func(ctx context.Context) error { return sentinels.Ping(ctx, addr) },
		timeout: startTimeout,
	})
	if errors.Is(err, errExited) {
		return nil, fmt.Errorf("%w: %w", sentinels.ErrExited, err)
	}
	if err != nil {
		return nil, err
	}
	return &frozen{cli: s.cli, ctr: ctr}, nil
}

// Where implements sentinels.Starter.
func (s *sentinelStarter) Where() string { return "in docker (" + s.image + ")" }

// Close implements sentinels.Starter: the Docker client goes (the
// topology has removed every container).
func (s *sentinelStarter) Close() error { return s.cli.Close() }

// frozen is a container of the topology: docker pause and unpause freeze
// and thaw it.
type frozen struct {
	cli *testcontainers.DockerClient
	ctr *testcontainers.DockerContainer

	mu     sync.Mutex
	paused bool
}

// Pause implements sentinels.Process with docker pause.
func (f *frozen) Pause(ctx context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.paused {
		return nil
	}
	if err := f.cli.ContainerPause(ctx, f.ctr.GetContainerID()); err != nil {
		return fmt.Errorf("%w: pause: %v", ErrDocker, err)
	}
	f.paused = true
	return nil
}

// Resume implements sentinels.Process with docker unpause.
func (f *frozen) Resume(ctx context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.paused {
		return nil
	}
	if err := f.cli.ContainerUnpause(ctx, f.ctr.GetContainerID()); err != nil {
		return fmt.Errorf("%w: unpause: %v", ErrDocker, err)
	}
	f.paused = false
	return nil
}

// Stop implements sentinels.Process: the container is thawed if paused,
// then stopped and removed.
func (f *frozen) Stop() error {
	ctx, cancel := context.WithTimeout(context.Background(), removeTimeout)
	defer cancel()
	f.Resume(ctx)
	return closeServer(f.ctr)
}
