package cli

import (
	"strings"
	"testing"

	"github.com/lockbench/lockbench/internal/dockertest"
)

// TestNoDockerDaemon: without any Docker daemon, --backend=docker exits 3
// saying Docker is not reachable and how to start it (not a Go panic),
// and a docker-backend test skips.
func TestNoDockerDaemon(t *testing.T) {
	if !dockertest.NoDaemon(t) {
		return
	}
	code, _, errOut := lockbench(t, "--backend=docker", "--impl=lua", "--clients=10")
	if code != exitInfra || !strings.Contains(errOut, "no Docker daemon") || !strings.Contains(errOut, "scripts/dockerd.sh") {
		t.Errorf("exit %d, want %d saying how to start Docker: %s", code, exitInfra, errOut)
	}
	t.Run("docker-backend test", func(t *testing.T) {
		dockertest.RedisImage(t)
		t.Error("RedisImage returned without a daemon: the test should have been skipped")
	})
}
