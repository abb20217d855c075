// Package zkver asks a ZooKeeper server its version with the srvr
// four-letter word: the one probe the server code, the containers and the
// test helpers share.
package zkver

import (
	"io"
	"net"
	"strings"
	"time"
)

// Get asks the ZooKeeper at addr for its version; "" when it does not
// answer within timeout or the srvr word is not whitelisted.
func Get(addr string, timeout time.Duration) string {
	c, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return ""
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(timeout))
	if _, err := io.WriteString(c, "srvr"); err != nil {
		return ""
	}
	b, _ := io.ReadAll(io.LimitReader(c, 4096))
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "Zookeeper version: "); ok {
			v, _, _ = strings.Cut(v, ",")
			v, _, _ = strings.Cut(v, "-")
			return strings.TrimSpace(v)
		}
	}
	return ""
}
