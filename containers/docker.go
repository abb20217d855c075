package containers

import (
	"context"

	"github.com/lockbench/lockbench/backends"
	"github.com/lockbench/lockbench/sentinels"
	"github.com/lockbench/lockbench/servers"
)

// Docker starts lockbench's servers in containers: it is the
// backends.Docker of --backend=docker and --sentinel-docker, each method
// the package's function of the same name, an empty image its default
// (RedisImage, ZooKeeperImage, MySQLImage, EtcdImage, PostgresImage).
type Docker struct{}

var _ backends.Docker = Docker{}

// StartRedis is StartRedis, as a servers.Backend.
func (Docker) StartRedis(ctx context.Context, image string) (servers.Backend, error) {
	r, err := StartRedis(ctx, image)
	if err != nil {
		return nil, err // not a nil *Redis in a non-nil interface
	}
	return r, nil
}

// StartZooKeeper is StartZooKeeper, as a servers.Addressed.
func (Docker) StartZooKeeper(ctx context.Context, image string) (servers.Addressed, error) {
	z, err := StartZooKeeper(ctx, image)
	if err != nil {
		return nil, err
	}
	return z, nil
}

// StartMySQL is StartMySQL, as the server's DSN and its servers.Host.
func (Docker) StartMySQL(ctx context.Context, image string) (backends.MySQLContainer, error) {
	m, err := StartMySQL(ctx, image)
	if err != nil {
		return nil, err
	}
	return m, nil
}

// StartEtcd is StartEtcd, as a servers.Server.
func (Docker) StartEtcd(ctx context.Context, image string) (servers.Server, error) {
	e, err := StartEtcd(ctx, image)
	if err != nil {
		return nil, err
	}
	return e, nil
}

// StartPostgres is StartPostgres, as a servers.Server.
func (Docker) StartPostgres(ctx context.Context, image string) (servers.Server, error) {
	p, err := StartPostgres(ctx, image)
	if err != nil {
		return nil, err
	}
	return p, nil
}

// SentinelStarter is SentinelStarter.
func (Docker) SentinelStarter(ctx context.Context, image string) (sentinels.Starter, error) {
	return SentinelStarter(ctx, image)
}
