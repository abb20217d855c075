package main

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockbench/lockbench/cli"
	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/internal/dockertest"
	"github.com/lockbench/lockbench/internal/loopback"
	"github.com/lockbench/lockbench/internal/redistest"
	"github.com/lockbench/lockbench/internal/testproc"
	"github.com/lockbench/lockbench/reports"
)

// TestMain makes the test binary the shop itself when SHOP_MAIN=1, so that
// the tests run it as separate processes, as two service instances are.
func TestMain(m *testing.M) {
	if os.Getenv("SHOP_MAIN") == "1" {
		os.Args = append(os.Args[:1], strings.Fields(os.Getenv("SHOP_ARGS"))...)
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// instances starts n shop processes against the Redis at addr with args
// and returns their URLs and pids as --target and --target-pid take them.
func instances(t *testing.T, n int, addr string, args ...string) (string, string) {
	t.Helper()
	var urls, pids []string
	for range n {
		port, err := loopback.FreePort()
		if err != nil {
			t.Fatal(err)
		}
		hostport := fmt.Sprintf("127.0.0.1:%d", port)
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), "SHOP_MAIN=1", "SHOP_ARGS="+strings.Join(append([]string{"--listen=" + hostport, "--redis=" + addr}, args...), " "))
		p := testproc.Listen(t, "shop", hostport, cmd, 20*time.Second)
		urls = append(urls, "http://"+hostport)
		pids = append(pids, fmt.Sprint(p.Pid()))
	}
	return strings.Join(urls, ","), strings.Join(pids, ",")
}

// lockbench runs the command line in-process: its exit code, its stdout
// and its stderr.
func lockbench(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := cli.Main(args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// TestShop is the sources' setting: two instances of a service on one Redis.
// Unguarded they oversell; guarded by lua they pass, seed after seed; an
// instance stopped past its lease lets the other one in, and the stale
// write it makes when it runs again is caught.
func TestShop(t *testing.T) {
	sale := []string{"--clients=1000", "--stock=300", "--ramp=500ms", "--workers=20"}
	t.Run("unguarded", func(t *testing.T) {
		targets, _ := instances(t, 2, redistest.Start(t), "--lock=none")
		code, out, errOut := lockbench(t, append(sale, "--target="+targets, "--seed=1")...)
		if code != 1 || !strings.Contains(out, "oversold") {
			t.Errorf("two unguarded instances: exit %d, want 1 and an oversell\n%s%s", code, out, errOut)
		}
	})
	t.Run("lua", func(t *testing.T) {
		targets, _ := instances(t, 2, redistest.Start(t), "--lock=lua")
		for seed := 1; seed <= 3; seed++ {
			if code, out, errOut := lockbench(t, append(sale, "--target="+targets, fmt.Sprintf("--seed=%d", seed))...); code != 0 {
				t.Errorf("seed %d: two instances guarded by lua: exit %d, want 0\n%s%s", seed, code, out, errOut)
			}
		}
	})
	t.Run("lua, an instance paused past its lease", func(t *testing.T) {
		// A 100 ms lease, a 2 ms business step between read and write,
		// and twenty pauses of 300 ms, one instance then the other: each
		// finds the paused instance inside its critical section about
		// half the time.
		targets, pids := instances(t, 2, redistest.Start(t), "--lock=lua", "--ttl=100ms", "--hold=2ms")
		code, out, errOut := lockbench(t, "--target="+targets, "--target-pid="+pids, "--json",
			"--faults=pause-instance:node=0:count=10:for=300ms:every=400ms,pause-instance:node=1:count=10:for=300ms:every=400ms:after=300ms",
			"--clients=3000", "--stock=3000", "--ramp=10s", "--workers=20", "--command-timeout=2s", "--seed=1")
		if code != 1 {
			t.Fatalf("exit %d, want 1: a stale write after a pause past the lease\n%s%s", code, out, errOut)
		}
		res, err := reports.ReadJSON(strings.NewReader(out))
		if err != nil {
			t.Fatal(err)
		}
		r := res.Runs[0]
		if r.Oversold == 0 || len(r.Faults) < 10 {
			t.Errorf("oversold %d after %d pauses, want an oversell", r.Oversold, len(r.Faults))
		}
		t.Logf("oversold %d units after %d pauses", r.Oversold, len(r.Faults))
	})
}

// TestShopInContainers runs the two shops in Docker containers (host
// network, loopback) and pauses one with docker pause: the frozen
// container answers nothing meanwhile, and with lua's 30 s lease the sale
// stays correct.
func TestShopInContainers(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds the shop and runs it in containers")
	}
	image := dockertest.RedisImage(t) // any image will do: the shop is a static binary
	bin := filepath.Join(t.TempDir(), "shop")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	redisAddr := redistest.Start(t)
	var urls, ids []string
	for range 2 {
		port, err := loopback.FreePort()
		if err != nil {
			t.Fatal(err)
		}
		hostport := fmt.Sprintf("127.0.0.1:%d", port)
		out, err := exec.Command("docker", "run", "-d", "--rm", "--network=host", "-v", bin+":/shop:ro", "--entrypoint=/shop", image, "--listen="+hostport, "--redis="+redisAddr, "--lock=lua").CombinedOutput()
		if err != nil {
			t.Fatalf("docker run: %v\n%s", err, out)
		}
		id := strings.TrimSpace(string(out))
		t.Cleanup(func() { exec.Command("docker", "rm", "-f", id).Run() })
		waitListening(t, hostport)
		urls, ids = append(urls, "http://"+hostport), append(ids, id)
	}
	dir := t.TempDir()
	code, out, errOut := lockbench(t, "--target="+strings.Join(urls, ","), "--target-container="+strings.Join(ids, ","),
		"--faults=pause-instance:for=600ms:after=200ms", "--clients=1000", "--stock=300", "--ramp=1s", "--workers=20", "--seed=1", "--out="+dir)
	if code != 0 {
		t.Fatalf("pause-instance in docker: exit %d, want 0\n%s%s", code, out, errOut)
	}
	h, err := history.ReadFile(filepath.Join(dir, "service.history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Faults) != 1 || h.Faults[0].Name != "pause-instance" {
		t.Fatalf("faults %+v, want one pause-instance", h.Faults)
	}
	// The window lies within the freeze: a request node 0 sent after it
	// opened cannot be answered before it closed, however late lockbench
	// stamps the answer.
	f := h.Faults[0]
	for _, op := range h.Ops {
		if op.Node == 0 && op.Start > f.Start && op.End > 0 && op.End < f.End {
			t.Fatalf("buyer %d, sent at %v, was answered at %v by a frozen container (frozen from %v to %v)", op.Client, time.Duration(op.Start), time.Duration(op.End), time.Duration(f.Start), time.Duration(f.End))
		}
	}
}

// waitListening waits until something accepts connections at hostport.
func waitListening(t *testing.T, hostport string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", hostport, time.Second)
		if err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("nothing listens on %s: %v", hostport, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestShopLink relays each shop's Redis link through lockbench's fault
// proxy (--target-redis-via): without a fault the sale passes through the
// relay; with the link of instance 0 cut for half a second, that instance
// sells nothing meanwhile.
func TestShopLink(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: two sales through the fault proxy")
	}
	redisAddr := redistest.Start(t)
	var via []string
	for range 2 {
		port, err := loopback.FreePort()
		if err != nil {
			t.Fatal(err)
		}
		via = append(via, fmt.Sprintf("127.0.0.1:%d", port))
	}
	// Each shop dials its relay for its Redis; lockbench relays it.
	var urls []string
	for i := range 2 {
		u, _ := instances(t, 1, via[i], "--lock=lua", "--ttl=1s")
		urls = append(urls, u)
	}
	common := []string{"--target=" + strings.Join(urls, ","), "--redis=" + redisAddr, "--target-redis-via=" + strings.Join(via, ","),
		"--clients=1000", "--stock=300", "--ramp=1s", "--workers=20", "--seed=1"}
	if code, out, errOut := lockbench(t, common...); code != 0 {
		t.Fatalf("through the relay, no fault: exit %d, want 0\n%s%s", code, out, errOut)
	}
	dir := t.TempDir()
	code, out, errOut := lockbench(t, append(common, "--faults=cut-link:node=0:for=500ms:after=200ms", "--out="+dir)...)
	if code != 0 && code != 1 {
		t.Fatalf("cut-link: exit %d\n%s%s", code, out, errOut)
	}
	h, err := history.ReadFile(filepath.Join(dir, "service.history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Faults) != 1 || h.Faults[0].Name != "cut-link" || h.Faults[0].Node != 0 {
		t.Fatalf("faults %+v, want one cut-link of node 0", h.Faults)
	}
	f, slack := h.Faults[0], int64(50*time.Millisecond)
	for _, op := range h.Ops {
		if op.Node == 0 && op.Outcome == history.Sold && op.End > f.Start+slack && op.End < f.End-slack {
			t.Fatalf("buyer %d of the cut instance was sold a unit at %v (cut from %v to %v)", op.Client, time.Duration(op.End), time.Duration(f.Start), time.Duration(f.End))
		}
	}
	t.Logf("with the cut: exit %d", code)
}
