package workload

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/lockbench/lockbench/servers"

	"github.com/lockbench/lockbench/internal/ctxtime"
)

// instances are the processes of a service under test: their pids (which
// a restart changes) and the commands that start them again, or their
// containers.
type instances struct {
	mu         sync.Mutex
	pids       []int
	start      []string
	containers []string
}

func newInstances(s *servers.Set) *instances {
	return &instances{pids: append([]int(nil), s.TargetPids...), start: s.TargetStart, containers: s.TargetContainers}
}

// pause stops instance i for d (or until ctx ends): its process, or its
// container.
func (in *instances) pause(ctx context.Context, i int, d time.Duration, frozen func() func()) error {
	if i >= 0 && i < len(in.containers) {
		return pauseContainer(ctx, in.containers[i], d, frozen)
	}
	pid, err := in.pid(i)
	if err != nil {
		return err
	}
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		return fmt.Errorf("%w: SIGSTOP of pid %d: %v", servers.ErrUnsupported, pid, err)
	}
	thawing := frozen()
	ctxtime.Sleep(ctx, d)
	thawing()
	syscall.Kill(pid, syscall.SIGCONT)
	return nil
}

// pauseContainer freezes a container with the docker command (the cgroup
// freezer: every process in it stops) for d, then thaws it.
func pauseContainer(ctx context.Context, id string, d time.Duration, frozen func() func()) error {
	if out, err := exec.CommandContext(ctx, "docker", "pause", id).CombinedOutput(); err != nil {
		return fmt.Errorf("%w: docker pause %s: %v: %s", servers.ErrUnsupported, id, err, bytes.TrimSpace(out))
	}
	thawing := frozen()
	ctxtime.Sleep(ctx, d)
	thawing()
	// Thawed even when the run ends meanwhile: never leave it frozen.
	return exec.Command("docker", "unpause", id).Run()
}

// pid is instance i's process id now.
func (in *instances) pid(i int) (int, error) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if i < 0 || i >= len(in.pids) {
		return 0, fmt.Errorf("%w: no pid of instance %d", servers.ErrUnsupported, i)
	}
	return in.pids[i], nil
}

// crash kills instance i, waits for it to be gone and down more, starts
// it again and waits until addr accepts connections.
func (in *instances) crash(ctx context.Context, i int, down time.Duration, addr string) error {
	pid, err := in.pid(i)
	if err != nil {
		return err
	}
	if i >= len(in.start) {
		return fmt.Errorf("%w: no start command of instance %d", servers.ErrUnsupported, i)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		return fmt.Errorf("%w: SIGKILL of pid %d: %v", servers.ErrUnsupported, pid, err)
	}
	// A process that is not lockbench's child cannot be waited for: it is
	// gone when signal 0 finds nobody (or a zombie its parent has not
	// reaped yet, which holds no socket).
	for syscall.Kill(pid, 0) == nil && !zombie(pid) {
		if err := ctxtime.Sleep(ctx, 5*time.Millisecond); err != nil {
			return err
		}
	}
	if err := ctxtime.Sleep(ctx, down); err != nil {
		return err
	}
	cmd := exec.Command("sh", "-c", in.start[i])
	// Its own process group: a Ctrl-C of lockbench does not reach it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("%w: starting instance %d again: %v", servers.ErrUnsupported, i, err)
	}
	in.mu.Lock()
	in.pids[i] = cmd.Process.Pid
	in.mu.Unlock()
	go cmd.Wait() // reaped if it ends while lockbench runs
	for {
		d := net.Dialer{Timeout: time.Second}
		c, err := d.DialContext(ctx, "tcp", addr)
		if err == nil {
			return c.Close()
		}
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		if err := ctxtime.Sleep(ctx, 20*time.Millisecond); err != nil {
			return err
		}
	}
}

// zombie reports whether pid has ended and waits for its parent.
func zombie(pid int) bool {
	var ws syscall.WaitStatus
	// Only a child can be waited for; for others this fails, and /proc
	// says.
	if got, err := syscall.Wait4(pid, &ws, syscall.WNOHANG, nil); err == nil && got == pid {
		return true
	}
	b, err := readProcStat(pid)
	return err == nil && b == 'Z'
}

var errNoStat = errors.New("workload: no process state")

// readProcStat reads the state letter of pid from /proc (R, S, Z...).
func readProcStat(pid int) (byte, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return 0, errNoStat
	}
	return b[i+2], nil
}
