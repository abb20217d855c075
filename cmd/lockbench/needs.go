package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/lockbench/lockbench/internal/words"
	"github.com/lockbench/lockbench/locks"
)

// requirement is a server some implementations need beyond the run's
// Redis. Named on --impl without it, they are a usage error; picked by
// --impl=all (and so by the matrix), they are left out and reported as not
// run, never dropped in silence.
type requirement struct {
	// of reports whether im needs the server.
	of func(im locks.Impl) bool
	// met reports whether the options give the server.
	met bool
	// reason completes "--impl=NAME ..." and "NAME not run: ...".
	reason string
}

// requirements are the servers the options must give for each kind of
// implementation. It needs the backend resolved.
func (o *runOpts) requirements() []requirement {
	return []requirement{
		{
			of:     func(im locks.Impl) bool { return im.Store == locks.StoreMySQL },
			met:    o.mysqlDSN != "" || o.backendKind == backendDocker,
			reason: noMySQLReason,
		},
		{
			of:     func(im locks.Impl) bool { return im.ZooKeeper },
			met:    o.zk != "" || o.backendKind == backendDocker,
			reason: noZooKeeper,
		},
		{
			of:     func(im locks.Impl) bool { return im.MultiServer },
			met:    o.backendKind != backendRedis || len(o.redisAddrs()) >= minServers,
			reason: fmt.Sprintf("runs on at least %d independent Redis servers: give their addresses to --redis as a comma list (got %d)", minServers, len(o.redisAddrs())),
		},
	}
}

// leftOut is an implementation --impl=all left out, and why.
type leftOut struct{ impl, reason string }

// require checks impls against the servers the options give, and returns
// those that can run; the others are left out (o.leftOut) when --impl=all
// picked them, a usage error when they were named.
func (o *runOpts) require(impls []locks.Impl) ([]locks.Impl, error) {
	all := false
	for _, name := range o.impls {
		all = all || strings.TrimSpace(name) == "all"
	}
	reqs := o.requirements()
	var out []locks.Impl
next:
	for _, im := range impls {
		for _, r := range reqs {
			if r.met || !r.of(im) {
				continue
			}
			if !all {
				return nil, usageErr("--impl=%s %s", im.Name, r.reason)
			}
			o.leftOut = append(o.leftOut, leftOut{impl: im.Name, reason: r.reason})
			continue next
		}
		out = append(out, im)
	}
	if len(out) == 0 && len(o.leftOut) > 0 {
		return nil, usageErr("--impl=all: no implementation can run: %s", strings.Join(o.leftOutLines(), "; "))
	}
	return out, nil
}

// leftOutLines says which implementations were left out, one line per
// reason: "mysql, mysql-version not run: needs ...".
func (o *runOpts) leftOutLines() []string {
	var reasons []string
	byReason := map[string][]string{}
	for _, l := range o.leftOut {
		if _, ok := byReason[l.reason]; !ok {
			reasons = append(reasons, l.reason)
		}
		byReason[l.reason] = append(byReason[l.reason], l.impl)
	}
	var lines []string
	for _, r := range reasons {
		lines = append(lines, fmt.Sprintf("%s not run: %s", strings.Join(byReason[r], ", "), r))
	}
	return lines
}

// warnLeftOut says on w which implementations were left out, and why.
func (o *runOpts) warnLeftOut(w io.Writer, cmd string) {
	for _, l := range o.leftOutLines() {
		fmt.Fprintf(w, "lockbench%s: %s\n", cmd, l)
	}
}

// notRunCells names the truth table's cells of the implementations left
// out, among those matrixCells would pick for only, one line per reason.
func (o *runOpts) notRunCells(only string) []string {
	var reasons []string
	byReason := map[string][]locks.Impl{}
	for _, l := range o.leftOut {
		im, _ := locks.Lookup(l.impl)
		if _, ok := byReason[l.reason]; !ok {
			reasons = append(reasons, l.reason)
		}
		byReason[l.reason] = append(byReason[l.reason], im)
	}
	var lines []string
	for _, r := range reasons {
		cells, err := matrixCells(byReason[r], only)
		if err != nil {
			continue // no cell of these implementations matches only
		}
		names := make([]string, len(cells))
		for i, c := range cells {
			names[i] = c.Name()
		}
		lines = append(lines, fmt.Sprintf("%s not run (%s): %s", words.Count(len(cells), "cell"), r, strings.Join(names, ", ")))
	}
	return lines
}
