package containers

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/testcontainers/testcontainers-go"
)

// freezer pauses a server's container with docker pause, and thaws it in
// the background once the pause is over: the Pause of Redis and MySQL.
// The server's process is frozen, so it answers nobody and expires
// nothing meanwhile.
type freezer struct {
	cli *testcontainers.DockerClient
	id  string // the container's

	mu     sync.Mutex
	until  time.Time     // end of the current pause; zero when running
	resume chan struct{} // closed to end the current pause at once
	paused sync.WaitGroup
}

// pause freezes the container for d from the moment it is frozen. A pause
// while paused extends it.
func (f *freezer) pause(ctx context.Context, d time.Duration) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.until.IsZero() {
		if until := time.Now().Add(d); until.After(f.until) {
			f.until = until
		}
		return nil
	}
	if err := f.cli.ContainerPause(ctx, f.id); err != nil {
		return fmt.Errorf("%w: pause: %v", ErrDocker, err)
	}
	// The pause counts from the freeze: freezing a container can take a
	// while on a loaded machine.
	f.until = time.Now().Add(d)
	f.resume = make(chan struct{})
	f.paused.Add(1)
	go f.thaw(f.resume)
	return nil
}

// thaw unpauses the container when the pause is over, or when resume is
// closed.
func (f *freezer) thaw(resume chan struct{}) {
	defer f.paused.Done()
	for {
		f.mu.Lock()
		left := time.Until(f.until)
		if left <= 0 || isClosed(resume) {
			f.unpauseLocked()
			f.mu.Unlock()
			return
		}
		f.mu.Unlock()
		select {
		case <-time.After(left):
		case <-resume:
		}
	}
}

// isClosed reports whether c is closed, without waiting.
func isClosed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// unpauseLocked thaws the container if it is paused; f.mu is held.
func (f *freezer) unpauseLocked() {
	if f.until.IsZero() {
		return
	}
	f.until = time.Time{}
	ctx, cancel := context.WithTimeout(context.Background(), removeTimeout)
	defer cancel()
	f.cli.ContainerUnpause(ctx, f.id)
}

// end ends a pause in progress at once and waits for the thaw.
func (f *freezer) end() {
	f.mu.Lock()
	if f.resume != nil && !isClosed(f.resume) {
		close(f.resume)
	}
	f.mu.Unlock()
	f.paused.Wait()
}
