package health

import (
	"fmt"
	"os"
	"os/exec"
	"time"
)

// stopTheWorld holds the whole process still for at least d, as a
// starved machine does: a child process stops it (SIGSTOP) and lets it go
// on (SIGCONT) after d.
func stopTheWorld(d time.Duration) error {
	script := fmt.Sprintf("kill -STOP %d; sleep %.3f; kill -CONT %d", os.Getpid(), d.Seconds(), os.Getpid())
	return exec.Command("sh", "-c", script).Run()
}
