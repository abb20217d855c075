// Command lockbench load-tests distributed locks in a flash sale and proves
// whether they are correct: thousands of buyers on simulated nodes buy from
// one inventory counter guarded by an interchangeable lock; a
// linearizability check, a mutual-exclusion audit and an oversell audit
// judge the recorded history. The command line is package cli; this is its
// main.
//
// Exit codes: 0 every check passed; 1 a check failed (or --baseline found
// a regression); 2 bad usage; 3 infrastructure failure (a server
// unreachable); 4 inconclusive; 70 internal error (a bug in lockbench,
// never the user's input); 130 interrupted.
package main

import (
	"os"

	"github.com/lockbench/lockbench/cli"
)

func main() { os.Exit(cli.Main(os.Args[1:], os.Stdout, os.Stderr)) }
