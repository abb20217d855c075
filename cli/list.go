package cli

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/lockbench/lockbench/faults"
	"github.com/lockbench/lockbench/harness"
)

const listUsage = `Usage: lockbench list

Lists every lock implementation (its default lease, the source listing it
reproduces, what it does and its known flaw) and every fault with its
parameters and their defaults. Lines are wrapped to the terminal's width
(100 columns in a pipe).

Examples:
  lockbench list
  lockbench list | less
`

func listCmd(args []string, stdout, _ io.Writer) error {
	if wantsHelp(args) {
		fmt.Fprint(stdout, listUsage)
		return nil
	}
	if len(args) > 0 {
		return usageErr("list takes no arguments (see lockbench list --help)")
	}
	f, _ := stdout.(*os.File)
	writeList(stdout, max(columns(f), 60))
	return nil
}

// writeList writes the implementations and faults wrapped to cols
// columns: one block per implementation, its name and lease on the first
// line, then its summary, source and notes indented beneath.
func writeList(w io.Writer, cols int) {
	const indent = "    "
	name := 0
	for _, im := range harness.All() {
		name = max(name, displayWidth(im.Name))
	}
	fmt.Fprintln(w, "Implementations (--impl=name,...):")
	for _, im := range harness.All() {
		lease := "no lease"
		if im.DefaultTTL > 0 {
			lease = "lease " + im.DefaultTTL.String()
		}
		fmt.Fprintf(w, "\n  %s  %s\n", padRight(im.Name, name), lease)
		writeWrapped(w, indent, im.Summary, cols)
		writeWrapped(w, indent, "Source: "+im.Source, cols)
		if im.Notes != "" {
			writeWrapped(w, indent, "Notes: "+im.Notes, cols)
		}
	}
	fmt.Fprintln(w, "\nFaults (--faults=name[:param=value...],...; defaults scale with the lease):")
	for _, f := range faults.All() {
		fmt.Fprintf(w, "\n  %s\n", f.Name())
		writeWrapped(w, indent, f.Summary(), cols)
		for _, p := range f.Params() {
			writeWrapped(w, indent+"  ", fmt.Sprintf("%s=%s  %s", p.Name, p.Default, p.Doc), cols)
		}
	}
}

// writeWrapped writes text wrapped to cols columns, each line after
// prefix.
func writeWrapped(w io.Writer, prefix, text string, cols int) {
	for _, line := range wrap(text, max(cols-displayWidth(prefix), 20)) {
		fmt.Fprintln(w, strings.TrimRight(prefix+line, " "))
	}
}
