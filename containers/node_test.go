package containers_test

import (
	"context"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/lockbench/lockbench/backends"
	"github.com/lockbench/lockbench/checker"
	"github.com/lockbench/lockbench/containers"
	"github.com/lockbench/lockbench/faults"
	"github.com/lockbench/lockbench/harness"
	"github.com/lockbench/lockbench/internal/dockertest"
	"github.com/lockbench/lockbench/nodeproto"
	"github.com/lockbench/lockbench/reports"
	"github.com/lockbench/lockbench/servers"
	"github.com/lockbench/lockbench/workload"
	"github.com/testcontainers/testcontainers-go"
)

// TestMain serves a node when the test binary is started as one: the
// docker-node tests mount this binary into the nodes' containers.
func TestMain(m *testing.M) {
	if harness.IsNode(os.Args[1:]) {
		os.Exit(harness.NodeMain(os.Args[2:], os.Stderr))
	}
	os.Exit(m.Run())
}

// nodeImage is the nodes' image: $LOCKBENCH_NODE_IMAGE, else NodeImage;
// the test skips (fails with LOCKBENCH_REQUIRE_DOCKER=1) without a Docker
// daemon or the image.
func nodeImage(t *testing.T) string { return dockertest.NodeImage(t) }

// nodeContainers lists this process's node containers, in any state.
func nodeContainers(t *testing.T) []container.Summary {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cli, err := testcontainers.NewDockerClientWithOpts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	list, err := cli.ContainerList(ctx, container.ListOptions{All: true, Filters: filters.NewArgs(
		filters.Arg("label", containers.Label+"=node"),
		filters.Arg("label", containers.PIDLabel+"="+strconv.Itoa(os.Getpid())),
	)})
	if err != nil {
		t.Fatal(err)
	}
	return list
}

// state is the node container's state: running, paused, or "" once gone.
func state(t *testing.T) string {
	t.Helper()
	list := nodeContainers(t)
	if len(list) == 0 {
		return ""
	}
	return list[0].State
}

// settles waits until docker lists the node container in state want, and
// fails the test with the state it lists when that takes longer than a
// minute. Docker records a pause and an unpause again when containerd's
// event for it comes in, after the call returned: on a busy machine a
// late "paused" event has listed an unpaused container as paused.
func settles(t *testing.T, want string) {
	t.Helper()
	s := state(t)
	for deadline := time.Now().Add(time.Minute); s != want && time.Now().Before(deadline); s = state(t) {
		time.Sleep(10 * time.Millisecond)
	}
	if s != want {
		t.Fatalf("the container is %q, want %s", s, want)
	}
}

// TestNodeContainer: a node's container started by NodeLauncher dials the
// coordinator on the host's loopback, freezes with Stop and runs again
// with Continue, dies with Kill (paused, too) and is gone then, and a node
// whose link ends exits and is removed by itself. It logs how long each
// step takes.
func TestNodeContainer(t *testing.T) {
	image := nodeImage(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	conns := make(chan net.Conn, 4)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns <- c
		}
	}()
	l := containers.NodeLauncher{Image: image}
	if l.Mode() != "docker" {
		t.Fatalf("mode %q", l.Mode())
	}
	launch := func() (workload.Process, net.Conn) {
		t.Helper()
		start := time.Now()
		p, err := l.Launch(t.Context(), 0, ln.Addr().String(), workload.Credentials{Token: "tok", Secret: nodeproto.NewSecret()})
		if err != nil {
			t.Fatal(err)
		}
		launched := time.Since(start)
		select {
		case c := <-conns:
			t.Logf("node container: Launch %v, dialed in after %v", launched.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
			return p, c
		case <-p.Exited():
			t.Fatalf("node exited before it dialed in: %s", p.Output())
		case <-time.After(30 * time.Second):
			p.Close()
			t.Fatalf("node did not dial in within 30s: %s", p.Output())
		}
		return nil, nil
	}

	// Stop, Continue, Kill of a running node.
	p, c := launch()
	for range 3 {
		start := time.Now()
		if err := p.Stop(); err != nil {
			t.Fatal(err)
		}
		took := time.Since(start)
		settles(t, "paused")
		start = time.Now()
		if err := p.Continue(); err != nil {
			t.Fatal(err)
		}
		t.Logf("docker pause took %v, docker unpause %v", took.Round(10*time.Microsecond), time.Since(start).Round(10*time.Microsecond))
		settles(t, "running")
	}
	if err := p.Continue(); err != nil { // not paused: nothing to do
		t.Fatalf("Continue of a running node: %v", err)
	}
	start := time.Now()
	if err := p.Kill(); err != nil {
		t.Fatal(err)
	}
	t.Logf("docker kill until gone: %v", time.Since(start).Round(time.Millisecond))
	select {
	case <-p.Exited():
	default:
		t.Fatal("Exited not closed after Kill")
	}
	if s := state(t); s != "" {
		t.Fatalf("after Kill the container is %q, want gone", s)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	c.Close()

	// Kill of a paused node.
	p, c = launch()
	if err := p.Stop(); err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	if err := p.Kill(); err != nil {
		t.Fatalf("Kill of a paused node: %v", err)
	}
	t.Logf("docker kill of a paused node until gone: %v", time.Since(start).Round(time.Millisecond))
	if s := state(t); s != "" {
		t.Fatalf("after Kill of a paused node the container is %q, want gone", s)
	}
	p.Close()
	c.Close()

	// The link's end: the node exits, Docker removes its container.
	p, c = launch()
	c.Close()
	select {
	case <-p.Exited():
	case <-time.After(30 * time.Second):
		t.Fatalf("node still there 30s after its link ended: %s", p.Output())
	}
	if out := p.Output(); !strings.Contains(out, "lockbench node") {
		t.Errorf("output of a node whose coordinator went away: %q, want its error", out)
	}
	p.Close()

	// Close of a paused node removes it.
	p, c = launch()
	defer c.Close()
	if err := p.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if left := nodeContainers(t); len(left) > 0 {
		t.Fatalf("node containers left: %v", left)
	}
}

// TestDockerNodesSale: a sale whose two nodes run in containers, on the
// embedded Redis (which the containers reach on the host's loopback):
// watchdog under pause-holder (the node's container frozen with docker
// pause) overlaps and oversells, as the truth table says, every node's buyers are in
// the history, and no node container is left after the run.
func TestDockerNodesSale(t *testing.T) {
	image := nodeImage(t)
	s, err := backends.Open(t.Context(), backends.Options{Backend: backends.BackendEmbedded}, servers.Needs{servers.KindRedis})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	im, ok := harness.Lookup("watchdog")
	if !ok {
		t.Fatal("no watchdog")
	}
	specs, err := faults.Parse("pause-holder")
	if err != nil {
		t.Fatal(err)
	}
	w := harness.Defaults()
	// The truth table's workload (matrix.Defaults): with less stock or a
	// shorter ramp the sale can sell out before the first pause.
	w.Clients, w.Stock, w.Nodes, w.Workers, w.Ramp, w.Timeout = 400, 300, 2, 20, 500*time.Millisecond, 2*time.Minute
	plan := harness.Plan{Impl: im, Workload: w, Faults: specs, Seed: 1,
		Nodes: harness.Nodes{Launcher: containers.NodeLauncher{Image: image}}}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	start := time.Now()
	res, err := harness.Run(ctx, &s.Set, plan)
	if err != nil {
		t.Fatal(err)
	}
	run, h := reports.NewRun(res.History, res.Report, res.NotFired...), res.History
	t.Logf("sale on docker nodes: %v; verdict %s, lock %s (%d overlaps), data %s, sold %d; reasons %v",
		time.Since(start).Round(time.Millisecond), run.Verdict, run.Lock.Status, run.Lock.Overlaps, run.Data.Status, run.Data.Sold, run.Reasons)
	if run.Lock.Status != checker.Violated {
		t.Errorf("watchdog under pause-holder on docker nodes: lock %s, want %s (overlap); reasons %v", run.Lock.Status, checker.Violated, run.Reasons)
	}
	if run.Data.Status != checker.Violated && run.Data.Status != checker.Illegal {
		t.Errorf("watchdog under pause-holder on docker nodes: data %s, want an oversell", run.Data.Status)
	}
	if run.Verdict == reports.Pass {
		t.Errorf("watchdog under pause-holder passed on docker nodes")
	}
	perNode := map[int16]int{}
	for _, op := range h.Ops {
		perNode[op.Node]++
	}
	for n := range int16(w.Nodes) {
		if perNode[n] == 0 {
			t.Errorf("no ops of node %d in the history (per node: %v)", n, perNode)
		}
	}
	if left := nodeContainers(t); len(left) > 0 {
		t.Errorf("node containers left after the run: %v", left)
	}
}
