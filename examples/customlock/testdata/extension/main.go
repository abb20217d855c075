// Command extension is a team's own module that tests its lock with
// lockbench's extension packages alone, without the command line or
// Docker: it registers the lock (examples/customlock's lock.go, copied
// beside it by TestOwnModule), runs a small sale of it on the embedded
// server and prints what the checker found.
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/lockbench/lockbench/backends"
	"github.com/lockbench/lockbench/harness"
	"github.com/lockbench/lockbench/reports"
)

func main() {
	if err := run(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "extension:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	if err := register(); err != nil {
		return err
	}
	im, ok := harness.Lookup("example-correct")
	if !ok {
		return fmt.Errorf("example-correct is not registered")
	}
	// The embedded server: nothing to install, no Docker linked.
	servers, err := backends.Open(ctx, backends.Options{}, im.Needs())
	if err != nil {
		return err
	}
	defer servers.Close()
	w := harness.Defaults()
	w.Clients, w.Stock, w.Ramp, w.Workers = 200, 100, 200*time.Millisecond, 20
	res, err := harness.Run(ctx, &servers.Set, harness.Plan{Impl: im, Workload: w, Seed: 1})
	if err != nil {
		return err
	}
	run := reports.NewRun(res.History, res.Report, res.NotFired...)
	fmt.Println(run.Impl, run.Verdict, "sold", run.Sold, "of", run.Stock)
	return nil
}
