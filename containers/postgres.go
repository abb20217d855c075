package containers

import (
	"context"
	"time"

	"github.com/lockbench/lockbench/internal/loopback"
	"github.com/lockbench/lockbench/servers"
	"github.com/testcontainers/testcontainers-go"
)

// PostgresImage is the image StartPostgres runs when given none: the
// official PostgreSQL 15 image, the release Debian ships (postgresql), so
// that the local image scripts/docker-images.sh builds and the official
// one run the same server.
const PostgresImage = "postgres:15"

// PostgresImageEnv names the environment variable that overrides
// PostgresImage (--pg-image's default), for machines that cannot pull it.
const PostgresImageEnv = "LOCKBENCH_PG_IMAGE"

// pgStartTimeout bounds the start until the server answers: the official
// image initialises its data directory on first start.
const pgStartTimeout = 90 * time.Second

// postgres is a PostgreSQL server in a Docker container that lockbench
// started: the servers.PostgresHost of the server StartPostgres returns.
type postgres struct {
	image  string
	dsn    string
	ctr    *testcontainers.DockerContainer
	frozen freezer // docker pause, with the Docker client
}

// StartPostgres starts image (PostgresImage when empty) with host
// networking and the server on a free 127.0.0.1 port
// (servers.PostgresArgs: room for 400 connections, no fsync), the user
// postgres trusted without a password (the official image is told
// POSTGRES_HOST_AUTH_METHOD=trust; the local image's data directory
// trusts it), and returns the server once it answers, reached as
// postgres@127.0.0.1:port/postgres. The arguments go to the server: the
// official image's entrypoint passes arguments that start with "-" on to
// postgres, the local image's entrypoint is postgres. Its levers act on
// the container: a pause is docker pause, a restart kills the container
// and starts it again on its data (crash recovery: every session ends,
// what was committed stays). As StartRedis, it leaves nothing running on
// an error and does not let a cancelled ctx interrupt a start.
func StartPostgres(ctx context.Context, image string) (*servers.Postgres, error) {
	if image == "" {
		image = PostgresImage
	}
	cli, err := client(ctx)
	if err != nil {
		return nil, err
	}
	h, err := loopback.Retry(ctx, errExited, func(port int, addr string) (*postgres, error) {
		return startPostgres(ctx, image, port, addr)
	})
	if err != nil {
		cli.Close()
		return nil, err
	}
	h.frozen.cli, h.frozen.id = cli, h.ctr.GetContainerID()
	p, err := servers.PostgresIn(ctx, h.dsn, h)
	if err != nil {
		h.Close()
		return nil, err
	}
	return p, nil
}

func startPostgres(ctx context.Context, image string, port int, addr string) (*postgres, error) {
	h := &postgres{image: image, dsn: "postgres://postgres@" + addr + "/postgres?sslmode=disable"}
	var err error
	h.ctr, err = runServer(ctx, h.server(servers.PostgresArgs(port)))
	if err != nil {
		return nil, err
	}
	return h, nil
}

// server is the server runServer starts with cmd, and waitReady waits
// for: until it answers a query at h's DSN.
func (h *postgres) server(cmd []string) server {
	return server{
		kind:  "postgres",
		image: h.image,
		flag:  "--pg-image",
		local: "lockbench/postgres:local",
		cmd:   cmd,
		env:   map[string]string{"POSTGRES_HOST_AUTH_METHOD": "trust"},
		ready: func(ctx context.Context) error {
			_, err := servers.DialPostgres(ctx, h.dsn)
			return err
		},
		timeout: pgStartTimeout,
	}
}

// Where implements servers.Host: the server runs in docker, in its image.
func (h *postgres) Where() string { return "in docker (" + h.image + ")" }

// Pause implements servers.Pauser with docker pause, as Redis's does.
func (h *postgres) Pause(ctx context.Context, d time.Duration) error {
	return h.frozen.pause(ctx, d)
}

// Restart implements servers.Restarter: the container is killed (every
// process of the server with it) and started again on its data, and
// Restart returns once the server answers.
func (h *postgres) Restart(ctx context.Context) error {
	h.frozen.end()
	if err := kill(ctx, h.ctr); err != nil {
		return err
	}
	return waitReady(ctx, h.ctr, h.server(nil))
}

// Close thaws the container if paused, then stops and removes it.
func (h *postgres) Close() error {
	h.frozen.end()
	err := closeServer(h.ctr)
	h.frozen.cli.Close()
	return err
}

// Interface check.
var _ servers.PostgresHost = (*postgres)(nil)
