package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/lockbench/lockbench/harness"
	"github.com/lockbench/lockbench/internal/words"
	"github.com/lockbench/lockbench/matrix"
	"github.com/lockbench/lockbench/workload"
)

// leftOut is an implementation --impl=all left out, and why.
type leftOut struct{ impl, reason string }

// require checks impls against the servers the options give, and returns
// those that can run; the others are left out (o.leftOut) when --impl=all
// picked them, a usage error when they were named.
func (o *runOpts) require(impls []harness.Impl) ([]harness.Impl, error) {
	all := false
	for _, name := range o.impls {
		all = all || strings.TrimSpace(name) == "all"
	}
	so := o.serverOptions()
	var out []harness.Impl
	for _, im := range impls {
		reason := so.Missing(im.Needs())
		if reason == "" && o.nodeMode != "inproc" {
			if err := workload.SupportsNodes(o.nodeMode, im.Name, im.Sale, nil); err != nil {
				reason = plain(err)
			}
		}
		if reason == "" {
			out = append(out, im)
			continue
		}
		if !all {
			return nil, usageErr("--impl=%s %s", im.Name, reason)
		}
		o.leftOut = append(o.leftOut, leftOut{impl: im.Name, reason: reason})
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
// out, among those matrix.Select would pick for only, one line per reason.
func (o *runOpts) notRunCells(only string) []string {
	var reasons []string
	byReason := map[string][]harness.Impl{}
	for _, l := range o.leftOut {
		im, _ := harness.Lookup(l.impl)
		if _, ok := byReason[l.reason]; !ok {
			reasons = append(reasons, l.reason)
		}
		byReason[l.reason] = append(byReason[l.reason], im)
	}
	var lines []string
	for _, r := range reasons {
		cells, err := matrix.Select(byReason[r], only)
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
