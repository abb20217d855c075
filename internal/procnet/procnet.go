// Package procnet tells, from Linux's /proc, whether a process listens on
// a TCP port: the check that a process id given for a service's instance
// is that instance, before a fault stops it.
package procnet

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// ErrUnsupported means the system has no /proc to read: nothing can be
// told either way.
var ErrUnsupported = errors.New("procnet: /proc/net/tcp cannot be read")

// ListensOn reports whether process pid, or one of its children, holds a
// TCP socket listening on port (IPv4 or IPv6, any address). It fails with
// ErrUnsupported where /proc/net/tcp cannot be read, and with another
// error when the process does not exist.
func ListensOn(pid, port int) (bool, error) {
	inodes, err := listening(port)
	if err != nil {
		return false, err
	}
	if _, err := os.Stat(filepath.Join("/proc", strconv.Itoa(pid))); err != nil {
		return false, fmt.Errorf("procnet: no process %d", pid)
	}
	if len(inodes) == 0 {
		return false, nil
	}
	for _, p := range append([]int{pid}, children(pid)...) {
		if holds(p, inodes) {
			return true, nil
		}
	}
	return false, nil
}

// listening returns the inodes of the sockets listening on port.
func listening(port int) (map[string]bool, error) {
	out := map[string]bool{}
	read := 0
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		f, err := os.Open(table)
		if err != nil {
			continue
		}
		read++
		s := bufio.NewScanner(f)
		s.Scan() // the header
		for s.Scan() {
			// sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode
			fields := strings.Fields(s.Text())
			if len(fields) < 10 || fields[3] != "0A" { // 0A: LISTEN
				continue
			}
			local := fields[1]
			i := strings.LastIndexByte(local, ':')
			if i < 0 {
				continue
			}
			if p, err := strconv.ParseUint(local[i+1:], 16, 16); err == nil && int(p) == port {
				out[fields[9]] = true
			}
		}
		f.Close()
	}
	if read == 0 {
		return nil, ErrUnsupported
	}
	return out, nil
}

// holds reports whether process pid has one of the socket inodes open.
func holds(pid int, inodes map[string]bool) bool {
	dir := filepath.Join("/proc", strconv.Itoa(pid), "fd")
	fds, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	for _, fd := range fds {
		target, err := os.Readlink(filepath.Join(dir, fd.Name()))
		if err != nil || !strings.HasPrefix(target, "socket:[") {
			continue
		}
		if inodes[strings.TrimSuffix(strings.TrimPrefix(target, "socket:["), "]")] {
			return true
		}
	}
	return false
}

// children returns the processes whose parent is pid.
func children(pid int) []int {
	var out []int
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces and parentheses.
		s := string(b)
		j := strings.LastIndexByte(s, ')')
		if j < 0 {
			continue
		}
		f := strings.Fields(s[j+1:])
		if len(f) > 1 && f[1] == strconv.Itoa(pid) {
			out = append(out, child)
		}
	}
	return out
}
