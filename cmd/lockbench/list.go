package main

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/lockbench/lockbench/faults"
	"github.com/lockbench/lockbench/locks"
)

func listCmd(args []string, stdout, _ io.Writer) error {
	if len(args) > 0 {
		return usageErr("list takes no arguments")
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "IMPL\tLEASE\tSEED\tWHAT IT DOES")
	for _, im := range locks.All() {
		lease := "-"
		if im.DefaultTTL > 0 {
			lease = im.DefaultTTL.String()
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", im.Name, lease, im.Seed, im.Summary)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(stdout, "\nNotes:")
	for _, im := range locks.All() {
		if im.Notes != "" {
			fmt.Fprintf(stdout, "  %-13s %s\n", im.Name, im.Notes)
		}
	}
	return listFaults(stdout)
}

// listFaults prints every fault with its parameters and their defaults.
func listFaults(w io.Writer) error {
	fmt.Fprintln(w, "\nFaults (--faults=name[:param=value...],...; defaults scale with the lease):")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, f := range faults.All {
		fmt.Fprintf(tw, "  %s\t%s\n", f.Name(), f.Summary())
		for _, p := range f.Params() {
			fmt.Fprintf(tw, "  \t  %s=%s\t%s\n", p.Name, p.Default, p.Doc)
		}
	}
	return tw.Flush()
}
