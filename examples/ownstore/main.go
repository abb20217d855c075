// Command ownstore is lockbench with a team's own sale built in: the
// inventory lives in the team's own store, laid out their way (a Redis
// hash per product), and the sale is theirs, written against lockbench's
// exported seam (workload.Sale; store.go). It registers two
// implementations, ownstore-correct (WATCH and MULTI/EXEC) and
// ownstore-broken (the same read-modify-write with nothing guarding it),
// then runs lockbench's whole command line: list, run, reports, the gate.
//
//	go run ./examples/ownstore --impl=ownstore-correct,ownstore-broken --hold=20ms
package main

import (
	"fmt"
	"os"

	"github.com/lockbench/lockbench/cli"
)

func main() {
	// The reproduce lines it prints run it again, from the repository's
	// root; a team that builds its own binary names that instead.
	cli.Program = "go run ./examples/ownstore"
	if err := register(); err != nil {
		fmt.Fprintln(os.Stderr, "ownstore:", err)
		os.Exit(2)
	}
	os.Exit(cli.Main(os.Args[1:], os.Stdout, os.Stderr))
}
