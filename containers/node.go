package containers

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/mount"
	"github.com/docker/docker/pkg/stdcopy"
	"github.com/lockbench/lockbench/workload"
	"github.com/testcontainers/testcontainers-go"
)

// NodeImage is the image NodeLauncher runs nodes in when given none:
// lockbench/node:local, which scripts/docker-images.sh builds from the
// host's libc and its loader (all a lockbench binary built on the host
// links to). There is no official image: the node is lockbench's own
// binary, mounted into the container. Any image with a libc as new as the
// host's serves, and any image at all for a static binary (CGO_ENABLED=0).
const NodeImage = "lockbench/node:local"

// NodeImageEnv names the environment variable that overrides NodeImage
// (--node-image's default).
const NodeImageEnv = "LOCKBENCH_NODE_IMAGE"

// Labels of a node's container, besides Label ("node") and PIDLabel.
const (
	// NodeLabel's value is the node's index in its sale.
	NodeLabel = "lockbench.node"
	// PIDNSLabel's value names the PID namespace PIDLabel's process ID
	// belongs to (the link /proc/self/ns/pid reads), so that only a
	// process of the same namespace judges whether that process still
	// runs.
	PIDNSLabel = "lockbench.pidns"
)

// nodeKind is Label's value on a node's container.
const nodeKind = "node"

// nodePath is where a node's container sees the mounted binary.
const nodePath = "/lockbench"

// NodeLauncher is the workload.Launcher of --node-mode=docker: each node
// runs in a container of Image, with the host's network (it dials the
// coordinator on 127.0.0.1, and the servers on their loopback
// addresses), running Binary, bind-mounted read-only at /lockbench, as
// `/lockbench node --coordinator=ADDR --index=N`, its credentials (the
// run's secret and its token) in its environment. Its processes
// freeze with docker pause (the cgroup freezer: the whole node, its
// timers and connections included, stops at once) and die with docker
// kill (SIGKILL).
//
// Nothing is left behind. A node's container is removed by Docker when it
// exits (AutoRemove), and Close removes it (forced) otherwise; lockbench
// closes every node on its way out, Ctrl-C and errors included. When
// lockbench is killed (kill -9, a second Ctrl-C), a running node leaves at
// once when its link to the coordinator ends, and is removed; a node
// frozen at that moment cannot notice, so the first Launch of a lockbench
// process also starts its reaper: a shell, in a process group of its own,
// that waits for that lockbench to end, however it ends, then removes
// every node container lockbench started (docker rm -f, frozen ones
// included). Every node container carries Label=node, PIDLabel (the
// launching process), PIDNSLabel and NodeLabel, and Launch also removes
// the node containers, in any state, whose launching process no longer
// runs in this PID namespace: what a reaper that was itself killed left.
// testcontainers' own reaper (Ryuk) is an image a machine without a
// registry cannot pull.
type NodeLauncher struct {
	// Image is the nodes' image; NodeImage when empty.
	Image string
	// Binary is the lockbench binary the nodes run; os.Executable() when
	// empty (for a test binary, the test binary: its TestMain serves
	// nodes with harness.IsNode and harness.NodeMain).
	Binary string
	// Env, when set, is added to the nodes' environment (NAME=VALUE).
	Env []string
}

// Mode implements workload.Launcher.
func (NodeLauncher) Mode() string { return "docker" }

// Launch implements workload.Launcher: it creates the node's container,
// attaches to its output, starts it and returns; the node dials in by
// itself. Cancelling ctx does not interrupt a start under way (which
// could leave a container nobody knows of): the container is started,
// then removed, and the error is ctx's.
func (l NodeLauncher) Launch(ctx context.Context, node int, addr string, cred workload.Credentials) (workload.Process, error) {
	image := l.Image
	if image == "" {
		image = NodeImage
	}
	bin := l.Binary
	if bin == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("%w: cannot find this program to run as the node: %v", ErrDocker, err)
		}
		bin = exe
	}
	bin, err := filepath.EvalSymlinks(bin)
	if err == nil {
		bin, err = filepath.Abs(bin)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: the node's binary: %v", ErrDocker, err)
	}
	cli, err := client(ctx)
	if err != nil {
		return nil, err
	}
	startCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), pullTimeout)
	defer cancel()
	reapNodes(startCtx, cli)
	reaperOnce.Do(startReaper)
	p, err := startNode(startCtx, cli, image, bin, append(append([]string(nil), l.Env...), cred.Env()...), node, addr)
	if err != nil {
		cli.Close()
		return nil, err
	}
	if ctx.Err() != nil {
		p.Close()
		return nil, ctx.Err()
	}
	return p, nil
}

var reaperOnce sync.Once

// startReaper starts the reaper of this process's node containers (see
// NodeLauncher): a shell that polls whether this process still runs and,
// once it does not, removes them. It is not this process's child in the
// sense that matters: its own process group (a Ctrl-C of the terminal
// does not reach it) and no parent-death signal, so it outlives a killed
// lockbench by the time it takes to clean up.
func startReaper() {
	pid := strconv.Itoa(os.Getpid())
	script := `while kill -0 ` + pid + ` 2>/dev/null; do sleep 0.2; done
ids=$(docker ps -aq --filter label=` + Label + `=` + nodeKind + ` --filter label=` + PIDLabel + `=` + pid + `)
[ -n "$ids" ] && docker rm -f $ids >/dev/null 2>&1
exit 0`
	cmd := exec.Command("sh", "-c", script)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if cmd.Start() == nil {
		go cmd.Wait()
	}
}

// startNode creates, attaches to and starts one node's container.
func startNode(ctx context.Context, cli *testcontainers.DockerClient, image, bin string, env []string, node int, addr string) (*nodeProcess, error) {
	req := testcontainers.GenericContainerRequest{
		ContainerRequest: testcontainers.ContainerRequest{
			Image:      image,
			Entrypoint: []string{nodePath},
			Cmd:        []string{"node", "--coordinator=" + addr, "--index=" + strconv.Itoa(node)},
		},
	}
	labels := map[string]string{
		Label:     nodeKind,
		PIDLabel:  strconv.Itoa(os.Getpid()),
		NodeLabel: strconv.Itoa(node),
	}
	if ns := pidNS(); ns != "" {
		labels[PIDNSLabel] = ns
	}
	opts := []testcontainers.CustomizeRequestOption{
		testcontainers.WithHostConfigModifier(func(hc *container.HostConfig) {
			hc.NetworkMode = "host"
			hc.AutoRemove = true
			hc.Mounts = append(hc.Mounts, mount.Mount{Type: mount.TypeBind, Source: bin, Target: nodePath, ReadOnly: true})
		}),
		testcontainers.WithLabels(labels),
	}
	if len(env) > 0 {
		m := map[string]string{}
		for _, kv := range env {
			k, v, _ := strings.Cut(kv, "=")
			m[k] = v
		}
		opts = append(opts, testcontainers.WithEnv(m))
	}
	for _, opt := range opts {
		if err := opt.Customize(&req); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrDocker, err)
		}
	}
	// No bridge, as for the servers (runServer).
	prov, err := testcontainers.NewDockerProvider(testcontainers.WithDefaultBridgeNetwork("host"))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrDocker, err)
	}
	defer prov.Close()
	c, err := prov.CreateContainer(ctx, req.ContainerRequest)
	ctr, _ := c.(*testcontainers.DockerContainer)
	if err != nil {
		if ctr != nil && ctr.GetContainerID() != "" {
			forceRemove(cli, ctr.GetContainerID())
			return nil, fmt.Errorf("%w: node %d: %s: %v", ErrDocker, node, image, err)
		}
		return nil, fmt.Errorf("%w: node %d: %s: %v (no registry? build it with scripts/docker-images.sh, or name another with --node-image or $%s)", ErrDocker, node, image, err, NodeImageEnv)
	}
	p := &nodeProcess{cli: cli, id: ctr.GetContainerID(), out: &outputTail{max: 4 << 10}, gone: make(chan struct{})}
	// Attached before the start, so that a node that fails at once still
	// says why, though Docker removes its container as it exits.
	hj, err := cli.ContainerAttach(ctx, p.id, container.AttachOptions{Stream: true, Stdout: true, Stderr: true})
	if err != nil {
		forceRemove(cli, p.id)
		return nil, fmt.Errorf("%w: node %d: attach: %v", ErrDocker, node, err)
	}
	p.copied = make(chan struct{})
	go func() {
		defer close(p.copied)
		defer hj.Close()
		stdcopy.StdCopy(p.out, p.out, hj.Reader)
	}()
	// Registered before the start, too, so that no exit goes unseen.
	waitCtx, waitCancel := context.WithCancel(context.Background())
	p.stopWait = waitCancel
	wait, waitErr := cli.ContainerWait(waitCtx, p.id, container.WaitConditionRemoved)
	go p.watch(waitCtx, wait, waitErr)
	if err := ctr.Start(ctx); err != nil {
		p.Close()
		return nil, fmt.Errorf("%w: node %d: %s: start: %v; its output: %s", ErrDocker, node, image, err, p.Output())
	}
	return p, nil
}

// nodeProcess is a node's container, a workload.Process.
type nodeProcess struct {
	cli    *testcontainers.DockerClient
	id     string
	out    *outputTail
	copied chan struct{} // closed once the output is all copied
	gone   chan struct{} // closed once the container is removed
	// stopWait ends the wait for the container's removal.
	stopWait context.CancelFunc

	mu        sync.Mutex
	paused    bool
	closeOnce sync.Once
	closeErr  error
}

// watch closes p.gone once Docker reports the container removed; if the
// wait itself fails (the daemon's connection lost), it asks the daemon
// until the container is gone.
func (p *nodeProcess) watch(ctx context.Context, wait <-chan container.WaitResponse, waitErr <-chan error) {
	defer close(p.gone)
	select {
	case <-wait:
		return
	case err := <-waitErr:
		if err == nil || cerrdefs.IsNotFound(err) {
			return
		}
	}
	for ctx.Err() == nil {
		ictx, cancel := context.WithTimeout(ctx, 5*time.Second)
		_, err := p.cli.ContainerInspect(ictx, p.id)
		cancel()
		if cerrdefs.IsNotFound(err) {
			return
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (p *nodeProcess) ended() bool {
	select {
	case <-p.gone:
		return true
	default:
		return false
	}
}

// Stop implements workload.Process with docker pause, which returns once
// the container's cgroup is frozen.
func (p *nodeProcess) Stop() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.paused || p.ended() {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), removeTimeout)
	defer cancel()
	if err := p.cli.ContainerPause(ctx, p.id); err != nil {
		if p.ended() || cerrdefs.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("%w: pause node: %v", ErrDocker, err)
	}
	p.paused = true
	return nil
}

// Continue implements workload.Process with docker unpause; it does
// nothing to a container that is not paused.
func (p *nodeProcess) Continue() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.paused {
		return nil
	}
	p.paused = false
	if p.ended() {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), removeTimeout)
	defer cancel()
	if err := p.cli.ContainerUnpause(ctx, p.id); err != nil && !cerrdefs.IsNotFound(err) {
		return fmt.Errorf("%w: unpause node: %v", ErrDocker, err)
	}
	return nil
}

// Kill implements workload.Process with docker kill (SIGKILL, paused or
// not), and returns once the container is gone.
func (p *nodeProcess) Kill() error {
	if p.ended() {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), removeTimeout)
	defer cancel()
	if err := p.cli.ContainerKill(ctx, p.id, "KILL"); err != nil && !cerrdefs.IsNotFound(err) && !p.ended() {
		// Not running (exited, about to be removed): wait for its end
		// below all the same; a kill refused otherwise is forced.
		if st, ierr := p.cli.ContainerInspect(ctx, p.id); ierr == nil && st.State != nil && st.State.Running {
			forceRemove(p.cli, p.id)
		}
	}
	select {
	case <-p.gone:
		p.mu.Lock()
		p.paused = false
		p.mu.Unlock()
		return nil
	case <-ctx.Done():
		return fmt.Errorf("%w: node container %.12s not gone %v after docker kill", ErrDocker, p.id, removeTimeout)
	}
}

// Exited implements workload.Process: closed once the container has
// ended and Docker has removed it.
func (p *nodeProcess) Exited() <-chan struct{} { return p.gone }

// Output implements workload.Process: the end of what the node printed
// (its stdout and stderr, attached from its start).
func (p *nodeProcess) Output() string {
	if p.ended() {
		// All of it, once the container is gone.
		select {
		case <-p.copied:
		case <-time.After(time.Second):
		}
	}
	return p.out.String()
}

// Close implements workload.Process: the container is removed, forced
// (paused or running, it is killed), and Close returns once it is gone.
func (p *nodeProcess) Close() error {
	p.closeOnce.Do(func() {
		defer p.cli.Close()
		defer p.stopWait()
		if !p.ended() {
			forceRemove(p.cli, p.id)
		}
		select {
		case <-p.gone:
		case <-time.After(removeTimeout):
			p.closeErr = fmt.Errorf("%w: node container %.12s not removed within %v", ErrDocker, p.id, removeTimeout)
		}
	})
	return p.closeErr
}

// forceRemove removes the container id, killing it first if it runs or
// is paused; an error means it is still there or already going.
func forceRemove(cli *testcontainers.DockerClient, id string) error {
	ctx, cancel := context.WithTimeout(context.Background(), removeTimeout)
	defer cancel()
	err := cli.ContainerRemove(ctx, id, container.RemoveOptions{Force: true})
	if cerrdefs.IsNotFound(err) {
		return nil
	}
	return err
}

// reapNodes removes the node containers of lockbench processes of this
// PID namespace that no longer run: those of a lockbench killed while a
// node was paused, which cannot end by themselves, and any other it left.
// Errors are ignored: a leftover is no reason to fail a run.
func reapNodes(ctx context.Context, cli *testcontainers.DockerClient) {
	ns := pidNS()
	if ns == "" {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	list, err := cli.ContainerList(ctx, container.ListOptions{
		All: true,
		Filters: filters.NewArgs(
			filters.Arg("label", Label+"="+nodeKind),
			filters.Arg("label", PIDNSLabel+"="+ns),
		),
	})
	if err != nil {
		return
	}
	for _, c := range list {
		pid, err := strconv.Atoi(c.Labels[PIDLabel])
		if err != nil || pid <= 0 || pid == os.Getpid() || running(pid) {
			continue
		}
		forceRemove(cli, c.ID)
	}
}

// running reports whether process pid exists.
func running(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// pidNS names this process's PID namespace ("pid:[4026531836]"), or is
// empty when it cannot be read.
func pidNS() string {
	ns, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		return ""
	}
	return ns
}

// outputTail keeps the last max bytes written to it.
type outputTail struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *outputTail) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, b...)
	if len(t.b) > t.max {
		t.b = append(t.b[:0], t.b[len(t.b)-t.max:]...)
	}
	return len(b), nil
}

func (t *outputTail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}

// Interface checks.
var (
	_ workload.Launcher = NodeLauncher{}
	_ workload.Process  = (*nodeProcess)(nil)
)
