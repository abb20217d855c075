package main

import (
	"fmt"
	"strings"

	"github.com/lockbench/lockbench/locks"
	"github.com/lockbench/lockbench/workload"
)

// zkEnv is the environment variable that gives --zk its default.
const zkEnv = "LOCKBENCH_ZK"

// noZooKeeper says why a ZooKeeper implementation cannot run.
const noZooKeeper = "needs a ZooKeeper: give --zk ADDR (or set $" + zkEnv + ")"

// withoutZooKeeper drops the ZooKeeper implementations from --impl=all
// when there is no ZooKeeper, and notes each as not run.
func (o *runOpts) withoutZooKeeper(impls []locks.Impl) []locks.Impl {
	if o.zk != "" {
		return impls
	}
	var out []locks.Impl
	var left []string
	for _, im := range impls {
		if im.ZooKeeper {
			left = append(left, im.Name)
			continue
		}
		out = append(out, im)
	}
	if len(left) > 0 {
		o.notRun = append(o.notRun, fmt.Sprintf("%s not run: %s %s", strings.Join(left, ", "), pluralNeeds(len(left)), strings.TrimPrefix(noZooKeeper, "needs ")))
	}
	return out
}

func pluralNeeds(n int) string {
	if n == 1 {
		return "it needs"
	}
	return "they need"
}

// needZooKeeper refuses an implementation named on --impl whose lock
// lives in ZooKeeper when no --zk was given: it is never skipped silently.
func (o *runOpts) needZooKeeper(impls []locks.Impl) error {
	if o.zk != "" {
		return nil
	}
	for _, im := range impls {
		if im.ZooKeeper {
			return usageErr("--impl=%s %s", im.Name, noZooKeeper)
		}
	}
	return nil
}

// serverNames names the servers of the run for the summary: the backend,
// and the ZooKeeper when there is one.
func (o *runOpts) serverNames(b workload.Backend) string {
	if o.zkServer == nil {
		return b.Name()
	}
	return b.Name() + "; " + o.zkServer.Name()
}
