// Package dockertest gives tests of the docker backend the images to run
// (Redis, ZooKeeper, MySQL, etcd, PostgreSQL) and the containers a process left behind.
// Without a Docker daemon, or without the image, tests skip, unless
// LOCKBENCH_REQUIRE_DOCKER=1 makes that a failure (CI sets it after
// starting dockerd and building the local images), so that a missing
// daemon can never turn a required run green.
package dockertest

import (
	"cmp"
	"context"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/lockbench/lockbench/containers"
	"github.com/testcontainers/testcontainers-go"
)

// RequireEnv is the environment variable that, set to 1, turns a missing
// Docker daemon or image into a test failure instead of a skip.
const RequireEnv = "LOCKBENCH_REQUIRE_DOCKER"

// RedisImage returns the Redis image the docker backend runs in tests:
// $LOCKBENCH_REDIS_IMAGE, else the official one. The test is skipped (or
// fails, with LOCKBENCH_REQUIRE_DOCKER=1) when no Docker daemon answers
// or the image is not on it: tests never pull.
func RedisImage(t testing.TB) string {
	t.Helper()
	return image(t, containers.RedisImageEnv, containers.RedisImage, "lockbench/redis:local")
}

// ZooKeeperImage returns the ZooKeeper image the docker backend runs in
// tests: $LOCKBENCH_ZK_IMAGE, else the official one; skipped or failed as
// RedisImage.
func ZooKeeperImage(t testing.TB) string {
	t.Helper()
	return image(t, containers.ZooKeeperImageEnv, containers.ZooKeeperImage, "lockbench/zookeeper:local")
}

// MySQLImage returns the MySQL image the docker backend runs in tests:
// $LOCKBENCH_MYSQL_IMAGE, else the official one; skipped or failed as
// RedisImage.
func MySQLImage(t testing.TB) string {
	t.Helper()
	return image(t, containers.MySQLImageEnv, containers.MySQLImage, "lockbench/mariadb:local")
}

// EtcdImage returns the etcd image the docker backend runs its members
// in, in tests: $LOCKBENCH_ETCD_IMAGE, else etcd's own; skipped or failed
// as RedisImage.
func EtcdImage(t testing.TB) string {
	t.Helper()
	return image(t, containers.EtcdImageEnv, containers.EtcdImage, "lockbench/etcd:local")
}

// PostgresImage returns the PostgreSQL image the docker backend runs in
// tests: $LOCKBENCH_PG_IMAGE, else the official one; skipped or failed as
// RedisImage.
func PostgresImage(t testing.TB) string {
	t.Helper()
	return image(t, containers.PostgresImageEnv, containers.PostgresImage, "lockbench/postgres:local")
}

// NodeImage returns the image --node-mode=docker runs nodes in, in
// tests: $LOCKBENCH_NODE_IMAGE, else lockbench/node:local, which
// scripts/docker-images.sh builds; skipped or failed as RedisImage.
func NodeImage(t testing.TB) string {
	t.Helper()
	return image(t, containers.NodeImageEnv, containers.NodeImage, containers.NodeImage)
}

func image(t testing.TB, env, official, local string) string {
	t.Helper()
	image := cmp.Or(os.Getenv(env), official)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ok, err := containers.HasImage(ctx, image)
	switch {
	case err != nil:
		unavailable(t, "no Docker daemon (apt-get install docker.io; scripts/dockerd.sh): %v", err)
	case !ok:
		unavailable(t, "image %s is not on the Docker daemon (scripts/docker-images.sh builds %s; %s names the image)", image, local, env)
	}
	return image
}

func unavailable(t testing.TB, format string, args ...any) {
	t.Helper()
	if os.Getenv(RequireEnv) == "1" {
		t.Fatalf(format+" and "+RequireEnv+"=1", args...)
	}
	t.Skipf(format+"; skipping docker-backend test (set "+RequireEnv+"=1 to fail instead)", args...)
}

// Leftovers returns the IDs of the containers, running or not, that the
// process pid started and that still exist.
func Leftovers(t testing.TB, pid int) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cli, err := testcontainers.NewDockerClientWithOpts(ctx)
	if err != nil {
		t.Fatalf("docker client: %v", err)
	}
	defer cli.Close()
	list, err := cli.ContainerList(ctx, container.ListOptions{
		All:     true,
		Filters: filters.NewArgs(filters.Arg("label", containers.PIDLabel+"="+strconv.Itoa(pid))),
	})
	if err != nil {
		t.Fatalf("docker ps: %v", err)
	}
	var ids []string
	for _, c := range list {
		ids = append(ids, c.ID)
	}
	return ids
}

// childEnv marks the child process NoDaemon starts.
const childEnv = "LOCKBENCH_NO_DOCKER_CHILD"

// NoDaemon runs the calling test again in a child process that can reach
// no Docker daemon: a private mount namespace with an empty /run (where
// the daemon's socket lives, /var/run included) and DOCKER_HOST naming a
// socket that does not exist, LOCKBENCH_REQUIRE_DOCKER unset. It returns
// true in the child, where the test's body then runs; in the parent it
// waits for the child, fails the test if the child failed, logs its
// output, and returns false. Without unshare(1) and the right to use it
// (root), the test is skipped.
func NoDaemon(t *testing.T) bool {
	t.Helper()
	if os.Getenv(childEnv) == "1" {
		return true
	}
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Skip("unshare(1) not on PATH (util-linux): cannot hide the Docker daemon from a child")
	}
	script := `mount -t tmpfs tmpfs /run && exec "$@"`
	cmd := exec.CommandContext(t.Context(), unshare, "-m", "--propagation", "private", "sh", "-c", script, "sh",
		os.Args[0], "-test.run=^"+t.Name()+"$", "-test.count=1", "-test.v")
	cmd.Env = append(withoutEnv(os.Environ(), RequireEnv, "DOCKER_HOST"),
		childEnv+"=1", "DOCKER_HOST=unix:///nonexistent/docker.sock")
	out, err := cmd.CombinedOutput()
	if err != nil && strings.Contains(string(out), "unshare failed") {
		t.Skipf("unshare refused (not root?): %s", out)
	}
	t.Logf("child without a Docker daemon:\n%s", out)
	if err != nil {
		t.Fatalf("child: %v", err)
	}
	return false
}

// withoutEnv returns env less the variables named.
func withoutEnv(env []string, names ...string) []string {
	var out []string
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if !slices.Contains(names, name) {
			out = append(out, kv)
		}
	}
	return out
}
