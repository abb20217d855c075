// Package servicenode tests examples/service-node, a Node.js flash-sale
// service with a Redis lock, through lockbench's black-box mode: the way a
// team whose service is not written in Go gates it.
package servicenode

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/lockbench/lockbench/cli"
	"github.com/lockbench/lockbench/internal/loopback"
	"github.com/lockbench/lockbench/internal/redistest"
	"github.com/lockbench/lockbench/internal/testproc"
)

// requireEnv, set to 1, turns a missing node or npm into a failure.
const requireEnv = "LOCKBENCH_REQUIRE_NODE"

// npmCI installs the service's packages from its lockfile, once.
func npmCI(t *testing.T) {
	t.Helper()
	for _, bin := range []string{"node", "npm"} {
		if _, err := exec.LookPath(bin); err != nil {
			if os.Getenv(requireEnv) == "1" {
				t.Fatalf("%s is not installed and %s=1: apt-get install nodejs npm", bin, requireEnv)
			}
			t.Skipf("%s is not installed (apt-get install nodejs npm); skipping the Node.js service (set %s=1 to fail instead)", bin, requireEnv)
		}
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "npm", "ci", "--no-audit", "--no-fund")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("npm ci: %v\n%s", err, out)
	}
}

// start runs n instances of the service on free loopback ports against
// the Redis at addr, with env added, and returns their URLs.
func start(t *testing.T, n int, addr string, env ...string) string {
	t.Helper()
	var urls []string
	for range n {
		port, err := loopback.FreePort()
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command("node", "server.js")
		cmd.Env = append(os.Environ(), append(env, fmt.Sprintf("PORT=%d", port), "REDIS_URL=redis://"+addr)...)
		p, err := testproc.Start(cmd)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(p.Kill)
		hostport := fmt.Sprintf("127.0.0.1:%d", port)
		if err := p.Wait("service-node", hostport, 30*time.Second, 50*time.Millisecond, func() error {
			c, err := net.DialTimeout("tcp", hostport, time.Second)
			if err == nil {
				c.Close()
			}
			return err
		}); err != nil {
			t.Fatal(err)
		}
		urls = append(urls, "http://"+hostport)
	}
	return strings.Join(urls, ",")
}

// TestServiceNode runs the flash sale against two instances of the Node.js
// service: with its lock it passes; with LOCK=none it oversells, and
// lockbench says so.
func TestServiceNode(t *testing.T) {
	npmCI(t)
	tests := []struct {
		name string
		env  []string
		code int
		want string
	}{
		{"locked", nil, 0, "pass"},
		{"without its lock", []string{"LOCK=none"}, 1, "oversold"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			targets := start(t, 2, redistest.Start(t), tt.env...)
			var out, errOut bytes.Buffer
			code := cli.Main([]string{"--target=" + targets, "--clients=1000", "--stock=300", "--ramp=500ms", "--workers=20", "--seed=1"}, &out, &errOut)
			if code != tt.code || !strings.Contains(out.String(), tt.want) {
				t.Errorf("exit %d, want %d and %q\n%s%s", code, tt.code, tt.want, out.String(), errOut.String())
			}
		})
	}
}
