package workload

import (
	"github.com/lockbench/lockbench/locks"
	"github.com/lockbench/lockbench/servers"
)

// remoteEnv is node n's way to the run's server of kind k, where a lock
// lives when that is not Redis (a ZooKeeper): its addresses routed
// through the node's fault proxy, and the node's pause; nil for a Redis
// kind, and when the run has no Addressed server of kind k.
func (r *run) remoteEnv(n *node, k servers.Kind) (*locks.Remote, error) {
	switch k {
	case "", servers.KindRedis, servers.KindRedisServers, servers.KindRedisReplica, servers.KindTarget:
		return nil, nil
	}
	a, ok := r.cfg.Servers.Get(k).(servers.Addressed)
	if !ok {
		return nil, nil
	}
	addrs, err := r.routed(n, a.Addrs())
	if err != nil {
		return nil, err
	}
	return &locks.Remote{Addrs: addrs, Wait: n.pause.wait}, nil
}

// routed are addrs as node n dials them: each through the node's fault
// proxy when the injector routes nodes (Router), else as they are.
func (r *run) routed(n *node, addrs []string) ([]string, error) {
	out := append([]string(nil), addrs...)
	rt, ok := r.cfg.Injector.(Router)
	if !ok {
		return out, nil
	}
	for i, addr := range out {
		var err error
		if out[i], err = rt.Route(n.id, addr); err != nil {
			return nil, err
		}
	}
	return out, nil
}
