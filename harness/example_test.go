package harness_test

import (
	"context"
	"fmt"
	"time"

	"github.com/lockbench/lockbench/backends"
	"github.com/lockbench/lockbench/faults"
	"github.com/lockbench/lockbench/harness"
	"github.com/lockbench/lockbench/reports"
)

// Run a small sale of one implementation on the embedded server, with a
// fault, and read the verdict: what `lockbench --impl=lua
// --faults=pause-holder` prints, as values.
func ExampleRun() {
	ctx := context.Background()
	im, _ := harness.Lookup("lua")
	servers, err := backends.Open(ctx, backends.Options{}, im.Needs())
	if err != nil {
		panic(err)
	}
	defer servers.Close()
	w := harness.Defaults()
	w.Clients, w.Stock, w.Ramp, w.Workers, w.TTL = 400, 300, 500*time.Millisecond, 20, 200*time.Millisecond
	specs, _ := faults.Parse("pause-holder")
	res, err := harness.Run(ctx, &servers.Set, harness.Plan{Impl: im, Workload: w, Faults: specs, Seed: 1})
	if err != nil {
		panic(err)
	}
	// The checker's report says what held; reports.NewRun makes of it the
	// run the CLI prints, with its verdict.
	run := reports.NewRun(res.History, res.Report, res.NotFired...)
	fmt.Println(run.Impl, run.Verdict, "lock safety", res.Report.Lock.Status)
	// Output: lua fail lock safety violated
}

// Register a lock of one's own: it then runs like a built-in one, by name,
// in the CLI (cli.Main), the matrix and Run. examples/customlock is a
// whole one.
func ExampleRegister() {
	im, _ := harness.Lookup("set-nx-ex")
	im.Name = "my-lock"
	im.Summary = "our service's lock"
	if err := harness.Register(im); err != nil {
		panic(err)
	}
	mine, ok := harness.Lookup("my-lock")
	fmt.Println(ok, mine.Locked, mine.Needs())
	// Output: true true Redis
}
