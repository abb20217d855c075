package procnet

import (
	"errors"
	"net"
	"os"
	"os/exec"
	"testing"
)

// TestListensOn: this process listening on a loopback port is found;
// a port nobody listens on, and a process that listens on nothing, are
// not; a process that does not exist is an error.
func TestListensOn(t *testing.T) {
	if _, err := listening(0); errors.Is(err, ErrUnsupported) {
		t.Skip("no /proc/net/tcp here")
	}
	for _, network := range []string{"tcp4", "tcp6"} {
		addr := map[string]string{"tcp4": "127.0.0.1:0", "tcp6": "[::1]:0"}[network]
		l, err := net.Listen(network, addr)
		if err != nil {
			t.Logf("%s: %v (no such loopback here)", network, err)
			continue
		}
		port := l.Addr().(*net.TCPAddr).Port
		if ok, err := ListensOn(os.Getpid(), port); !ok || err != nil {
			t.Errorf("%s: this process on port %d: %v, %v; want true", network, port, ok, err)
		}
		l.Close()
		if ok, err := ListensOn(os.Getpid(), port); ok || err != nil {
			t.Errorf("%s: port %d closed: %v, %v; want false", network, port, ok, err)
		}
	}

	// A child that listens on nothing is not the listener, though its
	// parent (this process) listens.
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := l.Addr().(*net.TCPAddr).Port
	child := exec.Command("sleep", "30")
	if err := child.Start(); err != nil {
		t.Skip("cannot start sleep:", err)
	}
	defer child.Process.Kill()
	if ok, err := ListensOn(child.Process.Pid, port); ok || err != nil {
		t.Errorf("a child listening on nothing: %v, %v; want false", ok, err)
	}
	// The parent still listens, a child beside it or not.
	if ok, err := ListensOn(os.Getpid(), port); !ok || err != nil {
		t.Errorf("this process with a child: %v, %v; want true", ok, err)
	}
	if _, err := ListensOn(1<<30, port); err == nil {
		t.Error("a process that does not exist: no error")
	}
}
