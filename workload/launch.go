package workload

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/lockbench/lockbench/internal/cpushare"
	"github.com/lockbench/lockbench/nodeproto"
	"github.com/lockbench/lockbench/servers"
)

// Launcher starts the nodes of a sale in processes of their own (Config.
// Launcher; without one, nodes are goroutines of the run's process). A
// node started by Launch dials the coordinator at addr, proves its
// credentials, and runs its part of the sale (see ServeNode).
type Launcher interface {
	// Launch starts node, with cred in its environment (Credentials.Env).
	Launch(ctx context.Context, node int, addr string, cred Credentials) (Process, error)
	// Mode names where the nodes run: "process", "docker", "remote".
	Mode() string
}

// Process is a node's process as its launcher controls it. A method the
// launcher cannot do fails with servers.ErrUnsupported, and the coordinator does
// what it can from inside the node instead.
type Process interface {
	// Stop freezes the whole process (SIGSTOP, docker pause) and returns
	// once it is frozen.
	Stop() error
	// Continue lets it run again.
	Continue() error
	// Kill kills it at once (SIGKILL: the kernel closes its connections)
	// and returns once it is gone.
	Kill() error
	// Exited is closed once the process has ended.
	Exited() <-chan struct{}
	// Output is the end of what it printed, for errors.
	Output() string
	// Close makes sure it is gone and nothing of it is left.
	Close() error
}

// Credentials are what a node its coordinator starts proves itself with:
// the run's secret, and the token of its launch (one per incarnation).
// They go in the node's environment, never on its command line, which
// any user of the machine may read.
type Credentials struct {
	// Token names the launch.
	Token string
	// Secret is the run's (Config.NodeSecret).
	Secret string
}

// Env is the credentials as NAME=VALUE, for the node's environment
// (nodeproto.TokenEnv and nodeproto.SecretEnv), which ServeNode's caller
// reads (harness.NodeMain).
func (c Credentials) Env() []string {
	return []string{nodeproto.TokenEnv + "=" + c.Token, nodeproto.SecretEnv + "=" + c.Secret}
}

// Processes launches each node as a child process: Command, then the
// node's flags --coordinator and --index, its Credentials in its
// environment. The children die with
// their parent, however it ends (the kernel's parent-death signal, and
// their link's end), and a Ctrl-C of the parent's terminal does not
// reach them (their own process group): the parent stops them.
type Processes struct {
	// Command is the program and its first arguments, such as lockbench
	// and "node".
	Command []string
	// Env, when set, is added to the children's environment.
	Env []string
	// Share, when not 0, is the CPUs each node and, while the sale runs,
	// the coordinator run on while other processes leave the machine
	// quiet (internal/cpushare; cpushare.For gives it). The children are
	// given it in their environment (cpushare.Env).
	Share int
}

// Mode implements Launcher.
func (Processes) Mode() string { return "process" }

// Launch implements Launcher.
func (p Processes) Launch(ctx context.Context, node int, addr string, cred Credentials) (Process, error) {
	if len(p.Command) == 0 {
		return nil, errors.New("workload: no command to start a node with")
	}
	args := append(append([]string(nil), p.Command[1:]...), "--coordinator="+addr, "--index="+strconv.Itoa(node))
	cmd := exec.Command(p.Command[0], args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Env = append(append(cmd.Environ(), p.Env...), cred.Env()...)
	if cpushare.Fits(p.Share) {
		cmd.Env = append(cmd.Env, cpushare.Env+"="+strconv.Itoa(p.Share))
	}
	out := &tail{max: 4 << 10}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("workload: starting node %d: %w", node, err)
	}
	c := &child{cmd: cmd, out: out, exited: make(chan struct{})}
	go func() {
		cmd.Wait()
		close(c.exited)
	}()
	return c, nil
}

// child is a node's child process.
type child struct {
	cmd    *exec.Cmd
	out    *tail
	exited chan struct{}
}

func (c *child) pid() int { return c.cmd.Process.Pid }

// Stop implements Process: SIGSTOP, then the kernel's word that the
// process is stopped.
func (c *child) Stop() error {
	if err := syscall.Kill(c.pid(), syscall.SIGSTOP); err != nil {
		return err
	}
	for {
		st, err := readProcStat(c.pid())
		if err != nil || st == 'T' || st == 't' || st == 'Z' {
			return nil
		}
		select {
		case <-c.exited:
			return nil
		default:
		}
		time.Sleep(50 * time.Microsecond)
	}
}

// Continue implements Process.
func (c *child) Continue() error { return syscall.Kill(c.pid(), syscall.SIGCONT) }

// Kill implements Process.
func (c *child) Kill() error {
	select {
	case <-c.exited:
		return nil
	default:
	}
	if err := c.cmd.Process.Kill(); err != nil {
		return err
	}
	<-c.exited
	return nil
}

// Exited implements Process.
func (c *child) Exited() <-chan struct{} { return c.exited }

// Output implements Process.
func (c *child) Output() string { return c.out.String() }

// Close implements Process: a node still running is killed.
func (c *child) Close() error {
	select {
	case <-c.exited:
		return nil
	case <-time.After(2 * time.Second):
	}
	return c.Kill()
}

// tail keeps the last max bytes written to it.
type tail struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = append(t.b[:0], t.b[len(t.b)-t.max:]...)
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}

// Remote is the launcher of nodes that others start, on other machines
// (a Kubernetes Indexed Job): Launch starts nothing, and the node with
// the index dials in when it comes up. Its processes cannot be stopped or
// killed from here: a pause is the node's own, in process, and a crash is
// the node killing itself.
type Remote struct{}

// Mode implements Launcher.
func (Remote) Mode() string { return "remote" }

// Launch implements Launcher.
func (Remote) Launch(context.Context, int, string, Credentials) (Process, error) {
	return &remoteProcess{exited: make(chan struct{})}, nil
}

type remoteProcess struct {
	once   sync.Once
	exited chan struct{}
}

func (*remoteProcess) Stop() error               { return servers.ErrUnsupported }
func (*remoteProcess) Continue() error           { return servers.ErrUnsupported }
func (*remoteProcess) Kill() error               { return servers.ErrUnsupported }
func (p *remoteProcess) Exited() <-chan struct{} { return p.exited }
func (*remoteProcess) Output() string            { return "" }
func (p *remoteProcess) Close() error {
	p.once.Do(func() { close(p.exited) })
	return nil
}

// waitExit waits up to d for p to end.
func waitExit(ctx context.Context, p Process, d time.Duration) bool {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	select {
	case <-p.Exited():
		return true
	case <-ctx.Done():
		return false
	}
}
