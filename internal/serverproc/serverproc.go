// Package serverproc runs real servers (redis-server, redis-sentinel,
// ZooKeeper, mariadbd) as child processes: it keeps their output, watches
// for their end and waits until they serve. Package sentinels, which
// lockbench itself runs for --backend=sentinel, builds on it, and so do
// the tests' internal/redistest, zktest and mysqltest, with
// loopback.Retry to start a server that exited before it served again on
// a new port. It imports no testing: lockbench's binary links it
// (internal/testproc holds what only tests use).
package serverproc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// ErrExited means the process ended before it served: its port taken
// meanwhile, most likely, so a start on another port is worth a try.
var ErrExited = errors.New("serverproc: the server exited before it served")

// Proc is a server process started by Start.
type Proc struct {
	cmd    *exec.Cmd
	out    syncBuffer
	exited chan struct{}
}

// Start starts cmd, collecting what it writes on stdout and stderr.
func Start(cmd *exec.Cmd) (*Proc, error) {
	p := &Proc{cmd: cmd, exited: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = &p.out, &p.out
	// A child the server left behind may hold its output open: its end
	// is the server's, not theirs.
	cmd.WaitDelay = time.Second
	// A server dies with the process that started it, even one killed
	// with no chance to stop its servers (SIGKILL, a test binary's
	// timeout): no orphan keeps its port, its memory and its processor.
	// Linux sends it when the thread that started the server ends, which
	// in Go is the process's end: the runtime ends a thread only under a
	// goroutine that locked it (runtime.LockOSThread) and ended so, and
	// none calls Start.
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		cmd.Wait()
		close(p.exited)
	}()
	return p, nil
}

// Wait calls ready every interval until it returns nil. When the process
// ends first the error wraps ErrExited; when timeout runs out the process
// is killed and the error carries ready's last error. Either error names
// the server (name at addr) and ends with its output.
func (p *Proc) Wait(name, addr string, timeout, interval time.Duration, ready func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := ready()
		if err == nil {
			return nil
		}
		select {
		case <-p.exited:
			return fmt.Errorf("%s on %s: %w; output: %s", name, addr, ErrExited, p.Output())
		case <-time.After(interval):
		}
		if time.Now().After(deadline) {
			p.Kill()
			return fmt.Errorf("%s on %s did not serve within %v: %v; output: %s", name, addr, timeout, err, p.Output())
		}
	}
}

// readyTry bounds each of Await's calls of ready.
const readyTry = time.Second

// Await is Wait for a server asked over the network: it calls ready
// every 100 ms, each call bounded by a second, and gives up at ctx's end
// too, killing the process as when timeout runs out.
func (p *Proc) Await(ctx context.Context, name, addr string, timeout time.Duration, ready func(ctx context.Context) error) error {
	err := p.Wait(name, addr, timeout, 100*time.Millisecond, func() error {
		if ctx.Err() != nil {
			return nil // ends the wait; told below
		}
		tctx, cancel := context.WithTimeout(ctx, readyTry)
		defer cancel()
		return ready(tctx)
	})
	if err == nil && ctx.Err() != nil {
		p.Kill()
		return fmt.Errorf("%s on %s: %w", name, addr, ctx.Err())
	}
	return err
}

// Launch starts cmd and waits until ready answers (Await); a process
// that does not serve is killed, and the error ends with its output.
func Launch(ctx context.Context, cmd *exec.Cmd, name, addr string, timeout time.Duration, ready func(ctx context.Context) error) (*Proc, error) {
	p, err := Start(cmd)
	if err != nil {
		return nil, err
	}
	if err := p.Await(ctx, name, addr, timeout, ready); err != nil {
		p.Kill()
		return nil, err
	}
	return p, nil
}

// Stop sends the process sig (SIGINT, SIGTERM: a clean shutdown), waits
// up to grace for it to end, and kills it if it has not.
func (p *Proc) Stop(sig syscall.Signal, grace time.Duration) {
	p.cmd.Process.Signal(sig)
	select {
	case <-p.exited:
	case <-time.After(grace):
	}
	p.Kill()
}

// Signal sends sig to the process (SIGSTOP and SIGCONT pause it).
func (p *Proc) Signal(sig syscall.Signal) error { return p.cmd.Process.Signal(sig) }

// Kill ends the process, resuming it first if it is stopped (a stopped
// process cannot die), and waits until it has.
func (p *Proc) Kill() {
	p.cmd.Process.Signal(syscall.SIGCONT)
	p.cmd.Process.Kill()
	<-p.exited
}

// Pid is the process's id.
func (p *Proc) Pid() int { return p.cmd.Process.Pid }

// Output returns what the process has written so far, its last MiB.
func (p *Proc) Output() string { return p.out.String() }

// keep bounds the output kept: a server shared by a whole test binary
// logs for as long as it runs.
const keep = 1 << 20

// syncBuffer collects the output, written by exec's copying goroutine and
// read by the test.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n, err := b.buf.Write(p)
	if over := b.buf.Len() - keep; over > 0 {
		b.buf.Next(over)
	}
	return n, err
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
