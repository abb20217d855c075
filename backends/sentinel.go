package backends

import (
	"cmp"
	"context"
	"fmt"

	"github.com/lockbench/lockbench/sentinels"
	"github.com/lockbench/lockbench/servers"
)

// BackendSentinel is a Redis primary with a replica, reached through
// Sentinel: an existing deployment (Options.Sentinel), or the topology
// lockbench starts on loopback (package sentinels: a primary, a replica
// and three Sentinels, from Debian's redis-server, or in containers of
// Options.RedisImage with SentinelDocker), the only
// one the failover fault can act on.
const BackendSentinel = "sentinel"

// DefaultSentinelMaster is the master name of a Sentinel deployment when
// none is given: the name in Redis's sample sentinel.conf.
const DefaultSentinelMaster = "mymaster"

// sentinelMissing says why o cannot give the servers of needs on the
// Sentinel backend, or a lock that waits for a replica elsewhere.
func (o Options) sentinelMissing(needs servers.Needs) string {
	switch {
	case needs.Has(servers.KindRedisReplica) && o.Backend != BackendSentinel:
		return "waits for a replica (WAIT), which the embedded server and a lone Redis do not have: run with --backend=sentinel (a primary, a replica and three Sentinels started by lockbench) or give --sentinel=ADDR[,ADDR...] --sentinel-master=NAME"
	case needs.Has(servers.KindRedisServers) && o.Backend == BackendSentinel:
		return "runs on several independent Redis servers, not on a Sentinel's primary: run it with --backend=embedded, docker or redis"
	}
	return ""
}

// sentinel reaches the Sentinel deployment o names, or starts lockbench's
// own topology.
func (o Options) sentinel(ctx context.Context) (servers.Backend, error) {
	if len(o.Sentinel) > 0 {
		return servers.DialSentinel(ctx, o.Sentinel, cmp.Or(o.SentinelMaster, DefaultSentinelMaster), o.RedisPassword, nil)
	}
	top, err := o.startSentinels(ctx)
	if err != nil {
		return nil, err
	}
	b, err := servers.DialSentinel(ctx, top.SentinelAddrs(), top.MasterName(), "", top)
	if err != nil {
		top.Close()
		return nil, err
	}
	return b, nil
}

// startSentinels starts lockbench's own topology: in containers with
// SentinelDocker (the relays and the levers stay in this process), else
// as processes of this machine.
func (o Options) startSentinels(ctx context.Context) (*sentinels.Topology, error) {
	if o.SentinelDocker {
		d, err := o.docker()
		if err != nil {
			return nil, err
		}
		starter, err := d.SentinelStarter(ctx, o.RedisImage)
		if err != nil {
			return nil, err
		}
		return sentinels.StartWith(ctx, starter)
	}
	if !sentinels.Available() {
		return nil, fmt.Errorf("%w: --backend=sentinel starts redis-server and redis-sentinel, which are not installed (apt-get install redis-server redis-sentinel); or run them in containers (--sentinel-docker), or give --sentinel=ADDR for a deployment of your own", ErrMissing)
	}
	top, err := sentinels.Start(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", servers.ErrUnreachable, err)
	}
	return top, nil
}
