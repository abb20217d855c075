package faults

import (
	"context"
	"time"

	"github.com/lockbench/lockbench/locks"
	"github.com/lockbench/lockbench/workload"
)

// pauseHolder stops the holder's whole node: every goroutine of the node
// waits at its next command or business step, its watchdog's renewals
// included, as in a stop-the-world GC pause.
func pauseHolder(ctx context.Context, _ *Injector, c *workload.Controls, at workload.Site, v values) error {
	end := record(c, "pause-holder", at.Node, at.Client, v)
	defer end()
	c.PauseNode(at.Node, v.duration("for"))
	return c.WaitNode(ctx, at.Node)
}

// slowHolder stretches one holder's business step; its node runs on.
func slowHolder(ctx context.Context, _ *Injector, c *workload.Controls, at workload.Site, v values) error {
	end := record(c, "slow-holder", at.Node, at.Client, v)
	defer end()
	return sleep(ctx, v.duration("for"))
}

// pauseBeforeRelease stalls a client after its owner check. When the
// stall ends, the lease has run out and others have taken the lock; the
// stalled client's DEL is about to remove whichever lock is there. To make
// the damage show in every run (even once the stock is gone), the next
// client to take the lock is kept inside its critical section, before its
// read, until a third client has taken the lock the DEL freed: the two
// then read and write side by side. It is kept there half a lease at
// most: a stray DEL frees the lock at once, and a longer hold would let the
// second client's own lease run out, a pause-holder fault of its own that
// would break even an unlock that deletes nothing (lua's).
func pauseBeforeRelease(ctx context.Context, in *Injector, c *workload.Controls, at workload.Site, v values) error {
	end := record(c, "pause-before-release", at.Node, at.Client, v)
	defer end()
	d := v.duration("for")
	if err := sleep(ctx, d); err != nil {
		return err
	}
	second, letGo, err := in.catches.wait(ctx, locks.Acquired, []int32{at.Client}, true, d)
	if err != nil {
		return nil // nobody took the lock meanwhile: the DEL goes ahead anyway
	}
	go func() {
		defer letGo()
		in.catches.wait(context.WithoutCancel(ctx), locks.Acquired, []int32{at.Client, second}, false, v.env.Lease/2)
	}()
	return nil
}

// expire deletes the lock key under its holder and keeps the holder in
// its critical section until another client has taken the lock and read
// the stock, so that two holders have read the same stock.
func expire(ctx context.Context, in *Injector, c *workload.Controls, at workload.Site, v values) error {
	end := record(c, "expire", at.Node, at.Client, v)
	defer end()
	if err := c.DeleteLock(ctx); err != nil {
		return nil // the key stays: nothing was injected, the run goes on
	}
	in.catches.wait(ctx, locks.Business, []int32{at.Client}, false, v.duration("for"))
	return ctx.Err()
}

// crash kills the client where it stands: it never releases, and what it
// started with its context (a watchdog) stops.
func crash(ctx context.Context, _ *Injector, c *workload.Controls, at workload.Site, v values) error {
	name := "crash-holder"
	if at.Point == locks.AfterSetNX {
		name = "crash-after-setnx"
	}
	end := record(c, name, at.Node, at.Client, v)
	end() // a crash is an instant; the client stays dead
	c.Kill(at.Client)
	return context.Cause(ctx)
}

// partition cuts the holder's node off the server for the fault's length;
// the holder goes on and its next command is lost in the cut.
func partition(ctx context.Context, in *Injector, c *workload.Controls, at workload.Site, v values) error {
	if !in.proxies.wants(at.Node) {
		return nil
	}
	end := record(c, "partition", at.Node, at.Client, v)
	if err := in.proxies.cut(at.Node); err != nil {
		end()
		return nil
	}
	d := v.duration("for")
	go func() {
		defer end()
		time.Sleep(d)
		in.proxies.mend(at.Node)
	}()
	return nil
}
