package main

import (
	"github.com/lockbench/lockbench/faults"
	"github.com/lockbench/lockbench/locks"
)

// mysqlDSNEnv is the environment variable --mysql-dsn defaults to.
const mysqlDSNEnv = "LOCKBENCH_MYSQL_DSN"

// noMySQLReason says why the MySQL implementations cannot run.
const noMySQLReason = "keeps its inventory in MySQL: give --mysql-dsn=user:password@tcp(127.0.0.1:3306)/ or $" + mysqlDSNEnv + ", or run with --backend=docker (MariaDB in a container)"

// mysqlFaults rejects the faults that cannot reach a MySQL
// implementation's server: lockbench cannot pause or restart a MySQL it
// reaches by DSN, and its proxies sit on the Redis link only.
func mysqlFaults(im locks.Impl, specs []faults.Spec) error {
	if im.Store != locks.StoreMySQL {
		return nil
	}
	for _, sp := range specs {
		switch sp.Fault {
		case faults.ServerPause, faults.Restart, faults.Latency, faults.Partition:
			return usageErr("--faults: %s is not available for %s: it acts on the Redis server or link, and lockbench cannot pause, restart or proxy a MySQL it reaches by --mysql-dsn", sp.Fault.Name(), im.Name)
		}
	}
	return nil
}
