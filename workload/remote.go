package workload

import (
	"github.com/lockbench/lockbench/locks"
	"github.com/lockbench/lockbench/servers"
)

// remoteEnv is node n's way to the server the sale's lock lives on when
// that is not Redis (a ZooKeeper: the first Addressed server of the
// sale's needs other than Redis and the service under test), through the
// node's fault proxy when the injector routes the node, and behind the
// node's pause; nil when the sale needs none.
func (r *run) remoteEnv(n *node) (*locks.Remote, error) {
	for _, k := range r.cfg.Sale.Needs() {
		switch k {
		case servers.KindRedis, servers.KindRedisServers, servers.KindRedisReplica, servers.KindTarget:
			continue
		}
		a, ok := r.cfg.Servers.Get(k).(servers.Addressed)
		if !ok {
			continue
		}
		addrs := append([]string(nil), a.Addrs()...)
		if rt, ok := r.cfg.Injector.(Router); ok {
			for i, addr := range addrs {
				var err error
				if addrs[i], err = rt.Route(n.id, addr); err != nil {
					return nil, err
				}
			}
		}
		return &locks.Remote{Addrs: addrs, Wait: n.pause.wait}, nil
	}
	return nil, nil
}
