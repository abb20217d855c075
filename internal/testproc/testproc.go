// Package testproc holds what only tests use of internal/serverproc:
// Listen, which starts a server for a test and fails the test when it
// does not serve.
package testproc

import (
	"net"
	"os/exec"
	"testing"
	"time"

	"github.com/lockbench/lockbench/internal/serverproc"
)

// Listen starts cmd, a server that is to accept connections on hostport,
// waits until it does (or fails the test after timeout) and kills it when
// the test ends.
func Listen(t testing.TB, name, hostport string, cmd *exec.Cmd, timeout time.Duration) *serverproc.Proc {
	t.Helper()
	p, err := serverproc.Start(cmd)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Kill)
	if err := p.Wait(name, hostport, timeout, 20*time.Millisecond, func() error {
		c, err := net.DialTimeout("tcp", hostport, time.Second)
		if err == nil {
			c.Close()
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return p
}
