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
//
// With until=next the pause ends at an event instead: as soon as one other
// client has taken the lock and read the stock (the next holder, whose
// token is one past the paused one's). That client is kept from writing
// until the paused one has written (its next probe, before-release), half
// a lease at most so that its own lease cannot run out. The two then
// write from the same stock, the paused one first: the smallest
// interleaving that a fencing check off by one token lets through.
func pauseHolder(ctx context.Context, in *Injector, c *workload.Controls, at workload.Site, v values) error {
	end := record(c, "pause-holder", at.Node, at.Client, v)
	defer end()
	c.PauseNode(at.Node, v.duration("for"))
	switch v.raw("until") {
	case untilExpired:
		return resumeExpired(ctx, in, c, at, v)
	case untilNext:
		_, letGo, err := in.catches.wait(ctx, locks.Business, []int32{at.Client}, true, v.duration("for"))
		if err == nil {
			wrote := in.catches.expect(locks.BeforeRelease, nil, at.Client, false)
			c.ResumeNode(at.Node)
			c.Go(func() {
				defer letGo()
				in.catches.await(context.WithoutCancel(ctx), wrote, v.env.Lease/2)
			})
		}
	}
	return c.WaitNode(ctx, at.Node)
}

// resumeExpired lets the holder go on right after its lease ran out (its
// key is gone from the server), with the rest of its node and every other
// node kept paused from the start until the holder has released, within
// for: the holder writes and releases after its lease, with nobody else
// in. A correct lock loses nothing there (the release finds the lock
// gone); one whose release or renewal does harm to a lock it no longer
// holds shows it.
func resumeExpired(ctx context.Context, in *Injector, c *workload.Controls, at workload.Site, v values) error {
	bound := v.duration("for")
	// Everything but the holder stays paused until it has released: the
	// event ends the pauses, and hold bounds them should it never come (a
	// busy machine must not end them first).
	hold := 10 * bound
	for i := range c.Nodes() {
		if i != at.Node {
			c.PauseNode(i, hold)
		}
	}
	resumeAll := func() {
		for i := range c.Nodes() {
			c.ResumeNode(i)
		}
	}
	deadline := time.Now().Add(bound)
	for time.Now().Before(deadline) {
		held, err := c.LockHeld(ctx)
		if err != nil || !held {
			break
		}
		if err := sleep(ctx, time.Millisecond); err != nil {
			resumeAll()
			return err
		}
	}
	released := in.catches.expect(locks.Released, nil, at.Client, false)
	c.PauseNode(at.Node, hold)
	c.LetThrough(at.Node, at.Client)
	c.Go(func() {
		defer resumeAll()
		in.catches.await(context.WithoutCancel(ctx), released, hold)
	})
	return ctx.Err()
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
// then read and write side by side. It is let go as soon as the stalled
// client's release has returned with the lock still held (the DEL removed
// nothing: a compare-and-delete), and after half a lease at most: a longer
// hold would let the second client's own lease run out, a pause-holder
// fault of its own that would break even an unlock that deletes nothing.
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
	third := in.catches.expect(locks.Acquired, []int32{at.Client, second}, -1, false)
	released := in.catches.expect(locks.Released, nil, at.Client, false)
	c.Go(func() {
		defer letGo()
		bg := context.WithoutCancel(ctx)
		deadline := time.Now().Add(v.env.Lease / 2)
		if _, _, err := in.catches.await(bg, released, v.env.Lease/2); err == nil {
			if held, err := c.LockHeld(bg); err == nil && held {
				in.catches.await(bg, third, 0) // the DEL freed nothing
				return
			}
		}
		in.catches.await(bg, third, time.Until(deadline))
	})
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
	c.Go(func() {
		defer end()
		time.Sleep(d)
		in.proxies.mend(at.Node)
	})
	return nil
}
