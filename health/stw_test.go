package health

import (
	"os"
	"time"

	"github.com/lockbench/lockbench/internal/freeze"
)

// stopTheWorld holds the whole process still for at least d, as a
// starved machine does.
func stopTheWorld(d time.Duration) error {
	done, err := freeze.Process(os.Getpid(), d)
	if err != nil {
		return err
	}
	return <-done
}
