// Package loopback finds free ports on 127.0.0.1 for the servers
// lockbench and its tests start: every server listens on loopback only.
package loopback

import "net"

// FreePort asks the kernel for a free TCP port on 127.0.0.1. The port is
// free when asked, not reserved: a server that fails to bind it should be
// started again on another.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
