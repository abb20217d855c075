package cli

import (
	"github.com/lockbench/lockbench/backends"
	"github.com/lockbench/lockbench/servers"
	"github.com/spf13/pflag"
)

// backendSentinel is --backend=sentinel: a primary with a replica,
// reached through Sentinel.
const backendSentinel = backends.BackendSentinel

// sentinelFlags adds the flags of the Sentinel backend.
func sentinelFlags(fs *pflag.FlagSet, o *runOpts) {
	fs.StringVar(&o.sentinel, "sentinel", "", "addresses of the Sentinels of an existing deployment (host:port, comma separated): every client is go-redis's failover client of the primary they name; implies --backend=sentinel (which, without --sentinel, starts a primary, a replica and three Sentinels from redis-server on loopback, the topology of the failover fault)")
	fs.StringVar(&o.sentinelMaster, "sentinel-master", backends.DefaultSentinelMaster, "with --sentinel: the name the Sentinels know the primary by")
	fs.BoolVar(&o.sentinelDocker, "sentinel-docker", false, "run lockbench's own Sentinel topology (the primary, the replica and the three Sentinels) in containers of --redis-image, with host networking on 127.0.0.1, removed on exit; lockbench's relays stay in its own process and server-pause and failover freeze the primary with docker pause; implies --backend=sentinel")
}

// sentinelAddrs splits --sentinel into its addresses.
func (o *runOpts) sentinelAddrs() []string { return splitList(o.sentinel) }

// resolveSentinel checks --sentinel and --sentinel-master against
// --backend (before its default is filled in: --sentinel implies
// --backend=sentinel).
func (o *runOpts) resolveSentinel(fs *pflag.FlagSet) error {
	if o.sentinelDocker {
		switch {
		case o.sentinel != "":
			return usageErr("--sentinel-docker and --sentinel: --sentinel-docker starts lockbench's own topology in containers, --sentinel names a deployment of yours; give one or the other")
		case o.redis != "":
			return usageErr("--sentinel-docker and --redis: the Sentinels lockbench starts name the primary; drop --redis")
		case o.backendKind == "":
			o.backendKind = backendSentinel
		case o.backendKind != backendSentinel:
			return usageErr("--sentinel-docker applies to --backend=sentinel, not --backend=%s (--backend=docker runs a lone Redis in a container)", o.backendKind)
		}
	}
	if o.sentinel == "" {
		if fs.Changed("sentinel-master") {
			return usageErr("--sentinel-master applies to --sentinel, the Sentinels of a deployment of your own")
		}
		return nil
	}
	for _, a := range o.sentinelAddrs() {
		if err := servers.CheckHostPort(a); err != nil {
			return usageErr("--sentinel: %q is not host:port (%v); for example --sentinel=127.0.0.1:26379", a, err)
		}
	}
	switch {
	case o.redis != "":
		return usageErr("--sentinel and --redis: give one or the other, the Sentinels name the primary")
	case o.backendKind == "":
		o.backendKind = backendSentinel
	case o.backendKind != backendSentinel:
		return usageErr("--sentinel applies to --backend=sentinel, not --backend=%s", o.backendKind)
	}
	return nil
}

// realRedis reports whether the flags name a real Redis lockbench does
// not start, where --prefix, --redis-password and --force apply.
func (o *runOpts) realRedis() bool { return o.redis != "" || o.sentinel != "" }
