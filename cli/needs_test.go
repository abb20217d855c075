package cli

import (
	"slices"
	"strings"
	"testing"

	"github.com/lockbench/lockbench/backends"
	"github.com/lockbench/lockbench/harness"
	"github.com/lockbench/lockbench/servers"
)

// TestRequiredServers: an implementation whose server is not given is a
// usage error when named, and is left out, and reported as not run, when
// --impl=all picked it; never dropped in silence.
func TestRequiredServers(t *testing.T) {
	t.Setenv(kindEnv(servers.KindMySQL), "")
	t.Setenv(kindEnv(servers.KindZooKeeper), "")
	noMySQLReason := backends.Options{}.Missing(servers.Needs{servers.KindMySQL})
	noZooKeeper := backends.Options{}.Missing(servers.Needs{servers.KindZooKeeper})
	noReplica := backends.Options{}.Missing(servers.Needs{servers.KindRedisReplica})
	luaWait := "lua-wait not run: " + noReplica
	luaWaitCells := "3 cells not run (" + noReplica + ")"
	mysqlCells := "9 cells not run (" + noMySQLReason + ")"
	zkCells := "9 cells not run (" + noZooKeeper + ")"
	tests := []struct {
		name    string
		args    []string
		usage   string   // a usage error that names this, or "" for none
		leftOut []string // leftOutLines' prefixes
		cells   []string // notRunCells("")' prefixes, in registry order
	}{
		{
			name:    "all on the embedded server",
			args:    []string{"--impl=all"},
			leftOut: []string{luaWait, "zookeeper, zookeeper-seed002 not run: " + noZooKeeper, "mysql, mysql-for-update, mysql-version not run: " + noMySQLReason},
			cells:   []string{luaWaitCells, zkCells, mysqlCells},
		},
		{
			name:    "all on one real Redis leaves redlock out too",
			args:    []string{"--impl=all", "--redis=127.0.0.1:6379"},
			leftOut: []string{luaWait, "redlock not run: runs on at least 3 independent Redis servers", "zookeeper, zookeeper-seed002 not run", "mysql, mysql-for-update, mysql-version not run"},
			cells:   []string{luaWaitCells, "9 cells not run (runs on at least 3", zkCells, mysqlCells},
		},
		{
			name:    "all with every server given",
			args:    []string{"--impl=all", "--mysql-dsn=root@tcp(127.0.0.1:3306)/", "--zk=127.0.0.1:2181"},
			leftOut: []string{luaWait},
			cells:   []string{luaWaitCells},
		},
		{
			name:    "all on docker: ZooKeeper and MariaDB in containers",
			args:    []string{"--impl=all", "--backend=docker"},
			leftOut: []string{luaWait},
			cells:   []string{luaWaitCells},
		},
		{name: "zookeeper and mysql named on docker", args: []string{"--impl=zookeeper,mysql", "--backend=docker"}},
		{name: "--zk-image without docker", args: []string{"--impl=zookeeper", "--zk=127.0.0.1:2181", "--zk-image=zk:local"}, usage: "--zk-image applies to --backend=docker"},
		{name: "--mysql-image without docker", args: []string{"--impl=lua", "--mysql-image=m:local"}, usage: "--mysql-image applies to --backend=docker"},
		{name: "--etcd-image without docker", args: []string{"--impl=etcd-txn", "--etcd-image=e:local"}, usage: "--etcd-image applies to --backend=docker"},
		{name: "an empty --pg-image on docker", args: []string{"--impl=pg-for-update", "--backend=docker", "--pg-image="}, usage: "--pg-image must not be empty"},
		{name: "mysql named without a DSN", args: []string{"--impl=lua,mysql"}, usage: "--impl=mysql keeps its inventory in MySQL: give --mysql-dsn"},
		{name: "zookeeper named without --zk", args: []string{"--impl=zookeeper"}, usage: "--impl=zookeeper needs a ZooKeeper: give --zk"},
		{name: "redlock named on one Redis", args: []string{"--impl=redlock", "--redis=127.0.0.1:6379"}, usage: "--impl=redlock runs on at least 3 independent Redis servers"},
		{name: "redlock named on three", args: []string{"--impl=redlock", "--redis=127.0.0.1:1,127.0.0.1:2,127.0.0.1:3"}},
		{name: "lua-wait named on one Redis", args: []string{"--impl=lua-wait", "--redis=127.0.0.1:6379"}, usage: "--impl=lua-wait waits for a replica"},
		{name: "all on Sentinel leaves redlock out, runs lua-wait", args: []string{"--impl=all", "--backend=sentinel", "--mysql-dsn=root@tcp(127.0.0.1:3306)/", "--zk=127.0.0.1:2181"},
			leftOut: []string{"redlock not run: runs on several independent Redis servers, not on a Sentinel's primary"},
			cells:   []string{"9 cells not run (runs on several independent Redis servers"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var o runOpts
			fs := matrixFlags(&o)
			if err := fs.Parse(tt.args); err != nil {
				t.Fatal(err)
			}
			impls, err := o.validate(fs)
			if tt.usage != "" {
				if !isUsage(err) || !strings.Contains(err.Error(), tt.usage) {
					t.Fatalf("err = %v, want a usage error naming %q", err, tt.usage)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, l := range o.leftOut {
				if slices.ContainsFunc(impls, func(im harness.Impl) bool { return im.Name == l.impl }) {
					t.Errorf("%s is both left out and chosen", l.impl)
				}
			}
			prefixed(t, "left out", o.leftOutLines(), tt.leftOut)
			prefixed(t, "cells not run", o.notRunCells(""), tt.cells)
		})
	}
}

// prefixed checks that got has one line per prefix in want, in order.
func prefixed(t *testing.T, what string, got, want []string) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: %q, want %d lines starting %q", what, got, len(want), want)
		return
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("%s line %d: %q, want it to start %q", what, i, got[i], want[i])
		}
	}
}
