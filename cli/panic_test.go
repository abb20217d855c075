package cli

import (
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockbench/lockbench/harness"
	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/internal/servertest"
	"github.com/lockbench/lockbench/locks"
)

// TestPanicIsInternalError: a panic inside a command is lockbench's bug,
// never the user's: Main recovers it and exits 70 with the panic and its
// stack, not 2 (bad usage) nor a crash.
func TestPanicIsInternalError(t *testing.T) {
	saved := commands
	t.Cleanup(func() { commands = saved })
	commands = append(slices.Clone(commands), command{name: "boom", summary: "panics", run: func([]string, io.Writer, io.Writer) error {
		var s []int
		_ = s[len(s)+1] // index out of range, as issue 24's row 7 made happen
		return nil
	}})
	var stdout, stderr bytes.Buffer
	code := Main([]string{"boom"}, &stdout, &stderr)
	if code != exitInternal {
		t.Fatalf("exit %d, want %d (internal error); stderr:\n%s", code, exitInternal, stderr.String())
	}
	if code == exitUsage {
		t.Fatal("a panic exits as bad usage")
	}
	for _, want := range []string{"internal error", "index out of range", "panic_test.go"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr.String())
		}
	}
}

// TestHelpNamesInternalError: --help lists exit 70 beside the others.
func TestHelpNamesInternalError(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"run", "--help"}} {
		var stdout, stderr bytes.Buffer
		if code := Main(args, &stdout, &stderr); code != exitPass {
			t.Fatalf("%v: exit %d", args, code)
		}
		if !strings.Contains(stdout.String(), "70 internal error") {
			t.Errorf("%v does not document exit 70:\n%s", args, stdout.String())
		}
	}
}

// panicLocksEnv, set to 1 in the environment of this test binary run as
// lockbench (LOCKBENCH_TEST_MAIN), registers the locks of
// registerPanicLocks, in its node processes too.
const panicLocksEnv = "LOCKBENCH_TEST_PANIC_LOCKS"

// registerPanicLocks registers two locks of a user's whose code panics
// inside a worker: test-panic-acquire in Acquire, test-panic-release in
// Release (its Acquire grants at once). test-panic-etcd is
// test-panic-acquire on etcd, which lockbench starts as processes of its
// own when given none.
func registerPanicLocks() {
	for _, l := range []locks.Impl{
		{Info: locks.Info{Name: "test-panic-acquire", Summary: "a lock whose Acquire panics"}, New: newPanicLock("Acquire")},
		{Info: locks.Info{Name: "test-panic-release", Summary: "a lock whose Release panics"}, New: newPanicLock("Release")},
		{Info: locks.Info{Name: "test-panic-etcd", Summary: "a lock on etcd whose Acquire panics"}, Uses: locks.UsesEtcd, New: newPanicLock("Acquire")},
		{Info: locks.Info{Name: "test-panic-renewal", Summary: "a lock whose renewal goroutine (locks.Env.Spawn) panics"}, New: newPanicLock("renewal")},
	} {
		if err := harness.Register(harness.Lock(l)); err != nil {
			panic(err)
		}
	}
}

// newPanicLock makes a lock that panics in the method named, or in the
// renewal goroutine its Acquire starts.
func newPanicLock(in string) func(context.Context, locks.Env) (locks.Locker, error) {
	return func(_ context.Context, env locks.Env) (locks.Locker, error) { return &panicLock{in: in, env: env}, nil }
}

// panicLock panics where in names: a user's lock with a bug.
type panicLock struct {
	in  string
	env locks.Env
}

func (l *panicLock) Acquire(context.Context, string) (locks.Lease, error) {
	switch l.in {
	case "Acquire":
		panic("the test lock's Acquire panicked")
	case "renewal":
		l.env.Spawn(func() { panic("the test lock's renewal panicked") })
	}
	return l, nil
}

func (*panicLock) Token() uint64 { return 0 }

func (l *panicLock) Release(context.Context) error {
	if l.in == "renewal" {
		return nil
	}
	panic("the test lock's " + l.in + " panicked")
}

// TestWorkerPanicIsInternalError (issue 24, point 2): a lock whose
// Acquire or Release panics inside a worker, of lockbench's process or of
// a node process, ends the run as an internal error (exit 70) naming the
// panic and where it happened, not with Go's exit 2; what was recorded is
// written, and no process lockbench started (its nodes, the etcd it
// starts for a lock on etcd) outlives it.
func TestWorkerPanicIsInternalError(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
		// needs is the binary the run starts servers with, "" for none.
		needs string
	}{
		{"Acquire, in process", []string{"--impl=test-panic-acquire"}, "the test lock's Acquire panicked", ""},
		{"Release, in process", []string{"--impl=test-panic-release"}, "the test lock's Release panicked", ""},
		{"Acquire, node processes", []string{"--impl=test-panic-acquire", "--node-mode=process"}, "the test lock's Acquire panicked", ""},
		{"Acquire, on the etcd lockbench starts", []string{"--impl=test-panic-etcd"}, "the test lock's Acquire panicked", "etcd"},
		{"the lock's own goroutine", []string{"--impl=test-panic-renewal"}, "the test lock's renewal panicked", ""},
		{"the lock's own goroutine, node processes", []string{"--impl=test-panic-renewal", "--node-mode=process"}, "the test lock's renewal panicked", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.needs != "" {
				servertest.Etcd.Need(t)
			}
			mark := "LOCKBENCH_TEST_PANIC_RUN=" + strconv.FormatInt(time.Now().UnixNano(), 36)
			out := t.TempDir()
			args := append([]string{"--nodes=2", "--clients=40", "--stock=10", "--ramp=100ms", "--seed=1", "--out=" + out}, tt.args...)
			cmd := exec.CommandContext(t.Context(), os.Args[0], args...)
			cmd.Env = append(os.Environ(), "LOCKBENCH_TEST_MAIN=1", panicLocksEnv+"=1", mark)
			var buf strings.Builder
			cmd.Stdout, cmd.Stderr = &buf, &buf
			t.Cleanup(func() {
				for _, pid := range marked(t, mark) {
					syscall.Kill(pid, syscall.SIGKILL)
				}
			})
			cmd.Run()
			if code := cmd.ProcessState.ExitCode(); code != exitInternal {
				t.Fatalf("exit %d, want %d (internal error):\n%s", code, exitInternal, buf.String())
			}
			for _, want := range []string{"internal error", tt.want, "panic_test.go"} {
				if !strings.Contains(buf.String(), want) {
					t.Errorf("the output lacks %q:\n%s", want, buf.String())
				}
			}
			if !waitFor(t, nil, func() bool { return len(marked(t, mark)) == 0 }) {
				t.Errorf("processes left after lockbench ended: %v\n%s", marked(t, mark), buf.String())
			}
			impl := strings.TrimPrefix(tt.args[0], "--impl=")
			h, err := history.ReadFile(filepath.Join(out, impl+".history.jsonl"))
			if err != nil {
				t.Fatalf("what was recorded was not written: %v\n%s", err, buf.String())
			}
			if h.Header.Clients != 40 || !h.Header.CutShort {
				t.Errorf("the history written is not the run's, cut short: %+v", h.Header)
			}
		})
	}
}
