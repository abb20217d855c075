package backends

import (
	"context"
	"fmt"

	"github.com/lockbench/lockbench/sentinels"
	"github.com/lockbench/lockbench/workload"
)

// Docker starts servers in containers: the Redis, ZooKeeper and MySQL of
// BackendDocker, and the servers of lockbench's Sentinel topology with
// Options.SentinelDocker. containers.Docker is lockbench's. It is a seam,
// not an import, so that a program that opens only the embedded server
// or servers by address (a team's test of its own lock) links neither
// the Docker client nor its dependencies.
//
// An empty image asks for the Docker's own default. Each method leaves
// nothing running when it fails, and what it returns stops its container
// when closed.
type Docker interface {
	// StartRedis starts a Redis server in a container of image.
	StartRedis(ctx context.Context, image string) (workload.Backend, error)
	// StartZooKeeper starts a standalone ZooKeeper in a container of image.
	StartZooKeeper(ctx context.Context, image string) (workload.ZooKeeperServer, error)
	// StartMySQL starts a MySQL or MariaDB server in a container of image.
	StartMySQL(ctx context.Context, image string) (MySQLContainer, error)
	// SentinelStarter returns what starts each server of the Sentinel
	// topology in a container of image.
	SentinelStarter(ctx context.Context, image string) (sentinels.Starter, error)
}

// MySQLContainer is a MySQL or MariaDB server a Docker started: Open
// dials it at its DSN, and the server's Host (where it runs, docker
// pause) is the container's.
type MySQLContainer interface {
	workload.Host
	// DSN reaches the server (go-sql-driver's format).
	DSN() string
	// Close removes the container.
	Close() error
}

// docker is o's Docker, or ErrMissing when it has none.
func (o Options) docker() (Docker, error) {
	if o.Docker == nil {
		return nil, fmt.Errorf("%w: servers in containers need a Docker to start them (Options.Docker: containers.Docker{} is lockbench's)", ErrMissing)
	}
	return o.Docker, nil
}
