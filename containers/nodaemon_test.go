package containers_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/lockbench/lockbench/containers"
	"github.com/lockbench/lockbench/internal/dockertest"
)

// TestNoDaemon: on a machine where no Docker daemon can be found at all,
// every entry point answers ErrDocker saying how to start one, where
// testcontainers itself would panic ("rootless Docker not found").
func TestNoDaemon(t *testing.T) {
	if !dockertest.NoDaemon(t) {
		return
	}
	ctx := t.Context()
	_, err := containers.HasImage(ctx, containers.RedisImage)
	check(t, "HasImage", err)
	_, err = containers.StartRedis(ctx, containers.RedisImage)
	check(t, "StartRedis", err)
	_, err = containers.StartZooKeeper(ctx, containers.ZooKeeperImage)
	check(t, "StartZooKeeper", err)
	_, err = containers.StartMySQL(ctx, containers.MySQLImage)
	check(t, "StartMySQL", err)
}

func check(t *testing.T, call string, err error) {
	t.Helper()
	if !errors.Is(err, containers.ErrDocker) || !strings.Contains(err.Error(), "scripts/dockerd.sh") {
		t.Errorf("%s without a daemon: %v, want ErrDocker saying how to start one", call, err)
	}
}
