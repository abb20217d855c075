package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/lockbench/lockbench/faults"
	"github.com/lockbench/lockbench/locks"
)

// mysqlDSNEnv is the environment variable --mysql-dsn defaults to.
const mysqlDSNEnv = "LOCKBENCH_MYSQL_DSN"

// noMySQLReason says why the MySQL implementations cannot run.
const noMySQLReason = "no MySQL server: give --mysql-dsn=user:password@tcp(127.0.0.1:3306)/ or $" + mysqlDSNEnv

// needMySQL checks that the MySQL implementations asked for have a
// server. Named explicitly without one, they are a usage error; picked by
// --impl=all, they are left out and listed in o.noMySQL, to be reported
// as not run.
func (o *runOpts) needMySQL(impls []locks.Impl) ([]locks.Impl, error) {
	for _, im := range impls {
		o.wantMySQL = o.wantMySQL || im.Store == locks.StoreMySQL
	}
	if o.mysqlDSN != "" {
		return impls, nil
	}
	o.wantMySQL = false
	all := false
	for _, name := range o.impls {
		all = all || strings.TrimSpace(name) == "all"
	}
	var out []locks.Impl
	for _, im := range impls {
		if im.Store != locks.StoreMySQL {
			out = append(out, im)
			continue
		}
		if !all {
			return nil, usageErr("--impl=%s keeps its inventory in MySQL: %s", im.Name, noMySQLReason)
		}
		o.noMySQL = append(o.noMySQL, im.Name)
	}
	return out, nil
}

// warnNoMySQL says on w which implementations were not run, and why.
func (o *runOpts) warnNoMySQL(w io.Writer, cmd string) {
	if len(o.noMySQL) > 0 {
		fmt.Fprintf(w, "lockbench%s: %s not run: %s\n", cmd, strings.Join(o.noMySQL, ", "), noMySQLReason)
	}
}

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

// notRunCells names the truth table's cells of the implementations left
// out for want of a MySQL, among those matrixCells would pick.
func (o *runOpts) notRunCells(only string) []string {
	if len(o.noMySQL) == 0 {
		return nil
	}
	var impls []locks.Impl
	for _, name := range o.noMySQL {
		im, _ := locks.Lookup(name)
		impls = append(impls, im)
	}
	cells, err := matrixCells(impls, only)
	if err != nil {
		return nil
	}
	var out []string
	for _, c := range cells {
		out = append(out, c.Name())
	}
	return out
}
