package cli

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/go-sql-driver/mysql"
)

// checkAddrs refuses server addresses that cannot be right before anything
// is dialled: a malformed address is a usage error (exit 2) naming its
// flag, not an unreachable server (exit 3).
func checkAddrs(redisAddrs, zk, mysqlDSN string) error {
	if redisAddrs != "" {
		for _, a := range strings.Split(redisAddrs, ",") {
			if err := checkHostPort(strings.TrimSpace(a)); err != nil {
				return usageErr("--redis: %q is not host:port (%v); for example --redis=127.0.0.1:6379", a, err)
			}
		}
	}
	if zk != "" {
		if err := checkHostPort(zk); err != nil {
			return usageErr("--zk: %q is not host:port (%v); for example --zk=127.0.0.1:2181", zk, err)
		}
	}
	if mysqlDSN != "" {
		if _, err := mysql.ParseDSN(mysqlDSN); err != nil {
			return usageErr("--mysql-dsn: %v; for example --mysql-dsn='user:password@tcp(127.0.0.1:3306)/lockbench'", strings.TrimPrefix(err.Error(), "invalid DSN: "))
		}
	}
	return nil
}

// checkHostPort accepts host:port with a host and a port from 1 to 65535.
func checkHostPort(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	if host == "" {
		return errors.New("no host")
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return fmt.Errorf("port %q is not a number from 1 to 65535", port)
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
		if err := checkHostPort(a); err != nil {
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
