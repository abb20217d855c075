package cli

import (
	"strings"

	"github.com/lockbench/lockbench/backends"
	"github.com/spf13/pflag"
)

// redisAddrs splits --redis into its addresses.
func (o *runOpts) redisAddrs() []string { return splitList(o.redis) }

// splitList splits a comma list flag into its non-empty entries, spaces
// trimmed.
func splitList(s string) []string {
	var out []string
	for _, a := range strings.Split(s, ",") {
		if a = strings.TrimSpace(a); a != "" {
			out = append(out, a)
		}
	}
	return out
}

// resolveServers checks --redlock-servers; too few --redis addresses for
// redlock is a requirement (see require).
func (o *runOpts) resolveServers(fs *pflag.FlagSet) error {
	if fs.Changed("redlock-servers") && o.backendKind == backendRedis {
		return usageErr("--redlock-servers applies to --backend=embedded or docker; with --backend=redis give the servers' addresses to --redis")
	}
	if o.redlockServers < backends.MinRedlockServers || o.redlockServers > 15 {
		return usageErr("--redlock-servers must be between %d and 15, got %d", backends.MinRedlockServers, o.redlockServers)
	}
	return nil
}
