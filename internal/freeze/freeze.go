// Package freeze holds a whole process still for a while, as a starved
// machine or a stop-the-world pause would: tests use it to make the
// harness's own stalls happen on purpose, whatever the machine's load.
package freeze

import (
	"fmt"
	"os/exec"
	"time"
)

// Process stops process pid (SIGSTOP) and lets it go on (SIGCONT) after at
// least d, from a shell of its own, so that pid may be the caller. It
// returns once the shell is started; done is closed when it has ended
// (the process is running again), with the shell's error, if any, sent
// first.
func Process(pid int, d time.Duration) (done <-chan error, err error) {
	script := fmt.Sprintf("kill -STOP %d; sleep %.3f; kill -CONT %d", pid, d.Seconds(), pid)
	cmd := exec.Command("sh", "-c", script)
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	ch := make(chan error, 1)
	go func() {
		if err := cmd.Wait(); err != nil {
			ch <- err
		}
		close(ch)
	}()
	return ch, nil
}
