package main

import (
	"github.com/lockbench/lockbench/workload"
)

// zkEnv is the environment variable that gives --zk its default.
const zkEnv = "LOCKBENCH_ZK"

// noZooKeeper says why a ZooKeeper implementation cannot run.
const noZooKeeper = "needs a ZooKeeper: give --zk ADDR (or set $" + zkEnv + "), or run with --backend=docker (ZooKeeper in a container)"

// serverNames names the servers of the run for the summary: the backend,
// and the ZooKeeper when there is one.
func (o *runOpts) serverNames(b workload.Backend) string {
	if o.zkServer == nil {
		return b.Name()
	}
	if o.zkContainer != nil {
		return b.Name() + "; " + o.zkContainer.Name()
	}
	return b.Name() + "; " + o.zkServer.Name()
}
