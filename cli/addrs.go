package cli

import (
	"net"
	"strings"

	"github.com/lockbench/lockbench/servers"
)

// checkAddrs refuses server addresses that cannot be right before anything
// is dialled: a malformed address is a usage error (exit 2) naming its
// flag, not an unreachable server (exit 3).
func checkAddrs(redisAddrs string) error {
	if redisAddrs != "" {
		for _, a := range strings.Split(redisAddrs, ",") {
			if err := servers.CheckHostPort(strings.TrimSpace(a)); err != nil {
				return usageErr("--redis: %q is not host:port (%v); for example --redis=127.0.0.1:6379", a, err)
			}
		}
	}
	return nil
}

// authHint names the flag to fix when a server refused lockbench's
// credentials: go-redis reports a refused password only as the server's
// words (WRONGPASS, NOAUTH).
func authHint(err error) string {
	if s := err.Error(); strings.Contains(s, "WRONGPASS") || strings.Contains(s, "NOAUTH") || strings.Contains(s, "invalid password") {
		return " (check --redis-password, or $LOCKBENCH_REDIS_PASSWORD)"
	}
	return ""
}

// checkLoopback refuses addresses lockbench is to listen on that are not
// host:port on this machine's loopback.
func checkLoopback(flag string, addrs []string) error {
	for _, a := range addrs {
		if err := servers.CheckHostPort(a); err != nil {
			return usageErr("--%s: %q is not host:port (%v)", flag, a, err)
		}
		switch host, _, _ := net.SplitHostPort(a); host {
		case "127.0.0.1", "::1", "localhost":
		default:
			return usageErr("--%s: %q is not on this machine's loopback (127.0.0.1, ::1)", flag, a)
		}
	}
	return nil
}
