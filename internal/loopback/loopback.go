// Package loopback finds free ports on 127.0.0.1 for the servers
// lockbench and its tests start, and starts such a server again when its
// port was taken: every server listens on loopback only.
package loopback

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
)

// FreePort asks the kernel for a free TCP port on 127.0.0.1. The port is
// free when asked, not reserved: a server that fails to bind it should be
// started again on another (see Retry).
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Retry calls start with a FreePort and its 127.0.0.1 address, up to
// three times, each on a port asked for anew: again only after an error that wraps
// exited (the server ended before it served, its port taken meanwhile
// most likely) and while ctx lasts. It returns the first success, ctx's
// error when ctx ended, or every error joined.
func Retry[T any](ctx context.Context, exited error, start func(port int, addr string) (T, error)) (T, error) {
	var errs []error
	for range 3 {
		port, err := FreePort()
		if err != nil {
			var zero T
			return zero, fmt.Errorf("loopback: no free port: %w", err)
		}
		v, err := start(port, net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err == nil {
			return v, nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil || !errors.Is(err, exited) {
			break
		}
	}
	var zero T
	if ctx.Err() != nil {
		return zero, ctx.Err()
	}
	return zero, errors.Join(errs...)
}
