package cli

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/lockbench/lockbench/containers"
	"github.com/lockbench/lockbench/internal/dockertest"
	"github.com/lockbench/lockbench/internal/servertest"
	"github.com/lockbench/lockbench/reports"
)

// marked lists the processes whose environment carries mark: a lockbench
// a test started, and every node process it started in turn (children
// inherit their parent's environment).
func marked(t *testing.T, mark string) []int {
	pids, _ := markedStates(t, mark)
	return pids
}

// markedStates is marked, with how many of them are stopped (SIGSTOP).
func markedStates(t *testing.T, mark string) (pids []int, stopped int) {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Skip("no /proc: cannot list processes")
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil || !bytes.Contains(env, []byte(mark)) {
			continue
		}
		if st, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat")); err == nil {
			i := bytes.LastIndexByte(st, ')')
			if i > 0 && i+2 < len(st) && st[i+2] == 'Z' {
				continue // a zombie holds nothing
			}
			if i > 0 && i+2 < len(st) && st[i+2] == 'T' {
				stopped++
			}
		}
		pids = append(pids, pid)
	}
	return pids, stopped
}

// waitFor polls cond every 20 ms until it holds, or until ended is
// closed (the process the test waits on has ended; nil: never), or until
// the test's own deadline is near. It keeps no clock of its own: a busy
// machine only makes it wait longer, never fail.
func waitFor(t *testing.T, ended <-chan struct{}, cond func() bool) bool {
	t.Helper()
	deadline, bounded := t.Deadline()
	for !cond() {
		if bounded && time.Until(deadline) < 30*time.Second {
			return cond()
		}
		select {
		case <-ended:
			return cond()
		case <-time.After(20 * time.Millisecond):
		}
	}
	return true
}

// syncBuffer is what a process writes on its stdout and stderr, read
// while it runs.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// TestProcessNodesLeaveNothing: nodes in processes of their own do not
// outlive their lockbench, however it ends: after a sale, after Ctrl-C
// (which also writes what was recorded), and when lockbench is killed
// outright, even while a pause-holder fault has one node stopped
// (SIGSTOP), which its parent-death signal still kills.
func TestProcessNodesLeaveNothing(t *testing.T) {
	tests := []struct {
		name   string
		args   []string
		signal syscall.Signal // 0: let it finish
		code   int
		// stopped: signal once a node is stopped by the fault.
		stopped bool
	}{
		{"after the sale", []string{"--impl=lua", "--clients=400", "--stock=100", "--ramp=200ms"}, 0, exitPass, false},
		{"after Ctrl-C", []string{"--impl=lua", "--clients=20000", "--stock=20000", "--ramp=60s"}, syscall.SIGINT, exitInterrupted, false},
		{"when lockbench is killed", []string{"--impl=watchdog", "--clients=20000", "--stock=20000", "--ramp=60s", "--faults=pause-holder:for=1h:count=all:after=100ms"}, syscall.SIGKILL, -1, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mark := "LOCKBENCH_TEST_NODES=" + strconv.FormatInt(time.Now().UnixNano(), 36)
			out := t.TempDir()
			args := append([]string{"--node-mode=process", "--nodes=3", "--seed=1", "--out=" + out}, tt.args...)
			cmd := exec.CommandContext(t.Context(), os.Args[0], args...)
			cmd.Env = append(os.Environ(), "LOCKBENCH_TEST_MAIN=1", mark)
			var buf syncBuffer
			cmd.Stdout, cmd.Stderr = &buf, &buf
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			ended := make(chan struct{})
			go func() {
				cmd.Wait()
				close(ended)
			}()
			t.Cleanup(func() {
				for _, pid := range marked(t, mark) {
					syscall.Kill(pid, syscall.SIGKILL)
				}
			})
			if tt.signal != 0 {
				// Signal once lockbench and its three nodes run, and the
				// sale has begun: its first progress line (one every 10 s
				// of the sale, in a pipe) says that some buyers have
				// arrived, whatever the machine's load.
				if !waitFor(t, ended, func() bool { return len(marked(t, mark)) >= 4 }) {
					t.Fatalf("the nodes never ran: %v\n%s", marked(t, mark), buf.String())
				}
				if !tt.stopped && !waitFor(t, ended, func() bool { return strings.Contains(buf.String(), "progress: ") }) {
					t.Fatalf("the sale never reported its progress\n%s", buf.String())
				}
				if tt.stopped && !waitFor(t, ended, func() bool { _, n := markedStates(t, mark); return n > 0 }) {
					t.Fatalf("no node was ever stopped by the fault\n%s", buf.String())
				}
				cmd.Process.Signal(tt.signal)
			}
			<-ended
			if code := cmd.ProcessState.ExitCode(); code != tt.code {
				t.Fatalf("exit %d, want %d:\n%s", code, tt.code, buf.String())
			}
			if !waitFor(t, nil, func() bool { return len(marked(t, mark)) == 0 }) {
				t.Fatalf("node processes left after lockbench ended: %v\n%s", marked(t, mark), buf.String())
			}
			if tt.signal == syscall.SIGKILL {
				return // nothing could be written
			}
			res, err := reports.ReadFile(filepath.Join(out, "result.json"))
			if err != nil {
				t.Fatalf("result: %v\n%s", err, buf.String())
			}
			if r := res.Runs[0]; r.Attempts == 0 || res.Config.Nodes != 3 {
				t.Errorf("%d attempts recorded on %d nodes; want the nodes' records merged", r.Attempts, res.Config.Nodes)
			}
		})
	}
}

// TestDockerNodesLeaveNothing: nodes in containers do not outlive a
// lockbench that is killed outright while a pause-holder fault has one
// frozen (docker pause): its reaper removes them.
func TestDockerNodesLeaveNothing(t *testing.T) {
	image := dockertest.NodeImage(t)
	cmd := exec.CommandContext(t.Context(), os.Args[0], "--node-mode=docker", "--node-image="+image, "--nodes=2", "--seed=1", "--impl=watchdog",
		"--clients=20000", "--stock=20000", "--ramp=60s", "--faults=pause-holder:for=1h:count=all:after=100ms")
	cmd.Env = append(os.Environ(), "LOCKBENCH_TEST_MAIN=1")
	var buf strings.Builder
	cmd.Stdout, cmd.Stderr = &buf, &buf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	label := "label=" + containers.PIDLabel + "=" + strconv.Itoa(cmd.Process.Pid)
	list := func(extra ...string) []string {
		args := append([]string{"ps", "-aq", "--filter", "label=" + containers.Label + "=node", "--filter", label}, extra...)
		out, _ := exec.Command("docker", args...).Output()
		return strings.Fields(string(out))
	}
	t.Cleanup(func() {
		if ids := list(); len(ids) > 0 {
			exec.Command("docker", append([]string{"rm", "-f"}, ids...)...).Run()
		}
	})
	if !waitFor(t, nil, func() bool { return len(list("--filter", "status=paused")) > 0 }) {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("no node container was ever frozen by the fault\n%s", buf.String())
	}
	cmd.Process.Kill()
	cmd.Wait()
	if !waitFor(t, nil, func() bool { return len(list()) == 0 }) {
		t.Fatalf("node containers left after lockbench was killed: %v\n%s", list(), buf.String())
	}
}

// TestPostgresUserOnProcessNodes: a user's own role, password and
// database (the server refuses any other) sell on process nodes as in
// process, the nodes given the whole DSN; the password is in no output.
func TestPostgresUserOnProcessNodes(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts a PostgreSQL and node processes")
	}
	const password = "s3cret-Pa55"
	p := servertest.Postgres.Own(t)
	dsn := servertest.PostgresUser(t, p, "shopkeeper", password, "shop")
	for _, mode := range []string{"inproc", "process"} {
		t.Run(mode, func(t *testing.T) {
			code, out, errOut := lockbench(t, "--impl=pg-for-update,pg-advisory-xact", "--pg-dsn="+dsn, "--node-mode="+mode,
				"--clients=60", "--stock=40", "--ramp=200ms", "--faults=latency:delay=2ms:jitter=1ms")
			if code != 0 {
				t.Fatalf("exit %d: %s\n%s", code, errOut, out)
			}
			if !strings.Contains(out, "40/40") {
				t.Errorf("every unit sold? want 40/40 in the summary:\n%s", out)
			}
			if strings.Contains(out+errOut, password) {
				t.Errorf("the password is in the output:\n%s\n%s", out, errOut)
			}
		})
	}
}
