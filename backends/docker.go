package backends

import (
	"context"
	"fmt"

	"github.com/lockbench/lockbench/sentinels"
	"github.com/lockbench/lockbench/servers"
)

// Docker starts servers in containers: the Redis, ZooKeeper, MySQL, etcd
// and PostgreSQL of BackendDocker, and the servers of lockbench's Sentinel topology with
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
	StartRedis(ctx context.Context, image string) (servers.Backend, error)
	// StartZooKeeper starts a standalone ZooKeeper in a container of image.
	StartZooKeeper(ctx context.Context, image string) (servers.Addressed, error)
	// StartMySQL starts a MySQL or MariaDB server in a container of image.
	StartMySQL(ctx context.Context, image string) (MySQLContainer, error)
	// StartEtcd starts an etcd cluster of three members, each in a
	// container of image: its levers (pause, restart, quorum loss) act
	// on the containers.
	StartEtcd(ctx context.Context, image string) (servers.Server, error)
	// StartPostgres starts a PostgreSQL in a container of image: its
	// levers (pause, restart) act on the container.
	StartPostgres(ctx context.Context, image string) (servers.Server, error)
	// SentinelStarter returns what starts each server of the Sentinel
	// topology in a container of image.
	SentinelStarter(ctx context.Context, image string) (sentinels.Starter, error)
}

// MySQLContainer is a MySQL or MariaDB server a Docker started: Open
// dials it at its DSN, and the server's Host (where it runs, docker
// pause) is the container's.
type MySQLContainer interface {
	servers.Host
	// DSN reaches the server (go-sql-driver's format).
	DSN() string
	// Close removes the container.
	Close() error
}

// startInDocker starts a server of kind k in a container for
// BackendDocker: the ZooKeeper, MySQL, etcd and PostgreSQL the Docker
// knows how to start. It returns the server and what removes it.
func (o Options) startInDocker(ctx context.Context, k servers.Kind) (servers.Server, func(), error) {
	d, err := o.docker()
	if err != nil {
		return nil, nil, err
	}
	switch k {
	case servers.KindZooKeeper:
		z, err := d.StartZooKeeper(ctx, o.ZooKeeperImage)
		if err != nil {
			return nil, nil, err
		}
		return z, func() { z.Close() }, nil
	case servers.KindMySQL:
		c, err := d.StartMySQL(ctx, o.MySQLImage)
		if err != nil {
			return nil, nil, err
		}
		m, err := servers.DialMySQL(ctx, c.DSN())
		if err != nil {
			c.Close()
			return nil, nil, err
		}
		m.RunsIn(c) // its name says docker; server-pause is docker pause
		return m, func() { m.Close(); c.Close() }, nil
	case servers.KindEtcd:
		return closing(d.StartEtcd(ctx, o.EtcdImage))
	case servers.KindPostgres:
		return closing(d.StartPostgres(ctx, o.PostgresImage))
	}
	return nil, nil, fmt.Errorf("%w: --backend=docker does not start %s; give its address (--%s)", ErrMissing, k.Title(), flagOf(k))
}

// closing is srv with what removes it, or err.
func closing(srv servers.Server, err error) (servers.Server, func(), error) {
	if err != nil {
		return nil, nil, err
	}
	return srv, func() { srv.Close() }, nil
}

// flagOf is the flag that gives a server of kind k.
func flagOf(k servers.Kind) string {
	if info, ok := servers.Lookup(k); ok && info.Flag != "" {
		return info.Flag
	}
	return string(k)
}

// docker is o's Docker, or ErrMissing when it has none.
func (o Options) docker() (Docker, error) {
	if o.Docker == nil {
		return nil, fmt.Errorf("%w: servers in containers need a Docker to start them (Options.Docker: containers.Docker{} is lockbench's)", ErrMissing)
	}
	return o.Docker, nil
}
