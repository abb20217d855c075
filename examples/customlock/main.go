// Command customlock is lockbench with a team's own lock built in: it
// registers two implementations, example-correct (a lease lock with
// fencing tokens) and example-broken (the same with one subtle bug), with
// their expected rows of the truth table, then runs lockbench's whole
// command line. Every subcommand knows them: list, run, matrix, reports,
// the gate.
//
//	go run ./examples/customlock --impl=example-correct,example-broken --faults=pause-holder
//	go run ./examples/customlock matrix --impl=example-correct,example-broken
package main

import (
	"fmt"
	"os"

	"github.com/lockbench/lockbench/cli"
)

func main() {
	// The reproduce lines it prints run it again, from the repository's
	// root; a team that builds its own binary names that instead.
	cli.Program = "go run ./examples/customlock"
	if err := register(); err != nil {
		fmt.Fprintln(os.Stderr, "customlock:", err)
		os.Exit(2)
	}
	os.Exit(cli.Main(os.Args[1:], os.Stdout, os.Stderr))
}
