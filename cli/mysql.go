package cli

import (
	"os"

	"github.com/go-sql-driver/mysql"
	"github.com/lockbench/lockbench/workload"
)

// mysqlDSNEnv is the environment variable --mysql-dsn defaults to.
const mysqlDSNEnv = "LOCKBENCH_MYSQL_DSN"

// dsnArg is the --mysql-dsn value of a reproduce line: empty when no
// implementation to run uses MySQL or the DSN comes from
// $LOCKBENCH_MYSQL_DSN (the line runs where that is set); otherwise the
// DSN, its password (if any) written as PASSWORD for the reader to fill
// in, never printed. harness.CommandLine quotes it for the shell.
func (o *runOpts) dsnArg(needs workload.Needs) string {
	if !needs.Has(workload.NeedsMySQL) || o.mysqlDSN == "" || o.mysqlDSN == os.Getenv(mysqlDSNEnv) {
		return ""
	}
	dsn := o.mysqlDSN
	if cfg, err := mysql.ParseDSN(dsn); err == nil && cfg.Passwd != "" {
		cfg.Passwd = "PASSWORD"
		dsn = cfg.FormatDSN()
	}
	return dsn
}
