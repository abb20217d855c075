package serverproc

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// parentEnv makes the test binary the parent of TestServerDiesWithParent:
// it starts a server and prints its pid, then waits to be killed.
const parentEnv = "SERVERPROC_TEST_PARENT"

func TestMain(m *testing.M) {
	if os.Getenv(parentEnv) == "1" {
		p, err := Start(exec.Command("sleep", "3600"))
		if err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		fmt.Println(p.cmd.Process.Pid)
		select {}
	}
	os.Exit(m.Run())
}

// TestServerDiesWithParent kills the process that started a server with
// SIGKILL, which leaves it no chance to stop the server: the server must
// end all the same, not stay behind as an orphan.
func TestServerDiesWithParent(t *testing.T) {
	parent := exec.Command(os.Args[0], "-test.run=^$")
	parent.Env = append(os.Environ(), parentEnv+"=1")
	out, err := parent.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := parent.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		parent.Process.Kill()
		t.Fatalf("the parent printed no pid: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		parent.Process.Kill()
		t.Fatalf("the parent printed %q, not a pid", line)
	}
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
	if !alive(pid) {
		t.Fatalf("server %d is not running before its parent is killed", pid)
	}
	parent.Process.Kill()
	parent.Wait()
	// The kernel sends the signal as the parent exits; the test's own
	// deadline bounds the wait, not a clock here.
	deadline, bounded := t.Deadline()
	for alive(pid) {
		if bounded && time.Until(deadline) < 30*time.Second {
			t.Fatalf("server %d still runs after its parent was killed", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// alive reports whether pid runs (a zombie, dead but not yet reaped, does
// not).
func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the command's closing parenthesis.
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}
