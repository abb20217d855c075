package main

import (
	"context"
	"runtime/debug"
	"strings"

	"github.com/lockbench/lockbench/containers"
	"github.com/lockbench/lockbench/locks"
	"github.com/lockbench/lockbench/workload"
	"github.com/spf13/pflag"
)

// minServers is the fewest independent servers a multi-server lock
// (redlock) is run on: with two, a majority is both, and one server down
// stops the lock.
const minServers = 3

// redisAddrs splits --redis into its addresses.
func (o *runOpts) redisAddrs() []string {
	var out []string
	for _, a := range strings.Split(o.redis, ",") {
		if a = strings.TrimSpace(a); a != "" {
			out = append(out, a)
		}
	}
	return out
}

// resolveServers checks --redlock-servers and notes whether a
// multi-server implementation runs; too few --redis addresses for one is
// a requirement (see require).
func (o *runOpts) resolveServers(fs *pflag.FlagSet, impls []locks.Impl) ([]locks.Impl, error) {
	if fs.Changed("redlock-servers") && o.backendKind == backendRedis {
		return nil, usageErr("--redlock-servers applies to --backend=embedded or docker; with --backend=redis give the servers' addresses to --redis")
	}
	if o.servers < minServers || o.servers > 15 {
		return nil, usageErr("--redlock-servers must be between %d and 15, got %d", minServers, o.servers)
	}
	for _, im := range impls {
		o.multiServer = o.multiServer || im.MultiServer
	}
	return impls, nil
}

// serverCount is how many servers the backend starts or reaches.
func (o *runOpts) serverCount() int {
	if o.backendKind == backendRedis {
		return len(o.redisAddrs())
	}
	if o.multiServer {
		return o.servers
	}
	return 1
}

// cluster starts or reaches n independent servers as one backend. On an
// error nothing is left running.
func (o *runOpts) cluster(ctx context.Context, n int) (workload.Backend, error) {
	switch o.backendKind {
	case backendRedis:
		c, err := workload.DialCluster(ctx, o.redisAddrs(), o.password)
		if err != nil {
			return nil, infraErr(ctx, err)
		}
		return c, nil
	case backendDocker:
		var servers []workload.Backend
		for range n {
			b, err := containers.StartRedis(ctx, o.redisImage)
			if err != nil {
				workload.NewCluster(servers).Close()
				return nil, infraErr(ctx, err)
			}
			servers = append(servers, b)
		}
		return workload.NewCluster(servers), nil
	}
	// As for one embedded server (see backend).
	debug.SetGCPercent(400)
	debug.SetMemoryLimit(300 << 20)
	c, err := workload.StartEmbeddedCluster(n)
	if err != nil {
		return nil, &exitError{code: exitInfra, err: err}
	}
	return c, nil
}
