package main

import (
	"os"

	"github.com/go-sql-driver/mysql"
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

// dsnArg is the --mysql-dsn of a reproduce line: empty when no
// implementation to run uses MySQL or the DSN comes from $LOCKBENCH_MYSQL_DSN
// (the line runs where that is set); otherwise the DSN, quoted for the
// shell, its password (if any) written as PASSWORD for the reader to
// fill in, never printed.
func (o *runOpts) dsnArg() string {
	if !o.wantMySQL || o.mysqlDSN == "" || o.mysqlDSN == os.Getenv(mysqlDSNEnv) {
		return ""
	}
	dsn := o.mysqlDSN
	if cfg, err := mysql.ParseDSN(dsn); err == nil && cfg.Passwd != "" {
		cfg.Passwd = "PASSWORD"
		dsn = cfg.FormatDSN()
	}
	return "--mysql-dsn='" + dsn + "'"
}
