package workload

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"time"

	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/locks"
)

// asClient is ctx as buyer c's.
func asClient(ctx context.Context, c int32) context.Context {
	return context.WithValue(ctx, clientKey{}, c)
}

// stoppedAtLeast returns once n's pause has stopped goroutines want
// times, and fails if one of the waiters returns meanwhile: none may
// while the pause is on.
func stoppedAtLeast(t *testing.T, n *node, want int64, waiters ...chan error) {
	t.Helper()
	for n.pause.stopped() < want {
		for _, w := range waiters {
			select {
			case err := <-w:
				t.Fatalf("a buyer of a paused node went on (%v) while the pause was on", err)
			default:
			}
		}
		runtime.Gosched()
	}
}

// TestPauseNode: a paused node's probes and commands wait until the
// pause ends (the one client let through aside), the other nodes run on,
// and a buyer killed during the pause stops there, its command never
// sent. Every check reads the node's state, never the clock.
func TestPauseNode(t *testing.T) {
	r := testRun(2, 8)
	c := r.controls
	paused, other := r.nodes[0], r.nodes[1]
	t.Cleanup(func() { c.ResumeNode(0) })

	c.PauseNode(0, time.Hour)
	if sent, on, pauses := c.NodeTraffic(0); sent != 0 || !on || pauses != 1 {
		t.Fatalf("after PauseNode: %d sent, paused %v, %d pauses; want 0, true, 1", sent, on, pauses)
	}
	// Buyers of the paused node reach a probe point and a command, and
	// wait there.
	probed := make(chan error, 1)
	go func() { probed <- r.probe(asClient(t.Context(), 3), paused, locks.Acquired) }()
	sent := make(chan error, 1)
	go func() { sent <- (hook{paused}).admit(asClient(t.Context(), 4), 1) }()
	stoppedAtLeast(t, paused, 2, probed, sent)

	// The other node is not paused: its probe and its commands pass.
	if err := r.probe(t.Context(), other, locks.Acquired); err != nil {
		t.Fatalf("probe on the node not paused: %v", err)
	}
	if err := (hook{other}).admit(t.Context(), 2); err != nil || c.Commands(1) != 2 {
		t.Fatalf("commands on the node not paused: %v, %d counted; want 2", err, c.Commands(1))
	}
	if err := c.WaitNode(t.Context(), 1); err != nil {
		t.Fatalf("WaitNode on the node not paused: %v", err)
	}

	// The client let through goes on; the others, woken, wait anew.
	c.LetThrough(0, 7)
	stoppedAtLeast(t, paused, 4, probed, sent)
	if err := r.probe(asClient(t.Context(), 7), paused, locks.Acquired); err != nil {
		t.Fatalf("probe of the client let through: %v", err)
	}
	if err := (hook{paused}).admit(asClient(t.Context(), 7), 1); err != nil {
		t.Fatalf("command of the client let through: %v", err)
	}
	// The pause lasts an hour: until it is ended, nothing else passes.
	if n, on, _ := c.NodeTraffic(0); n != 1 || !on {
		t.Fatalf("during the pause: %d sent, paused %v; want only the client let through's 1, paused", n, on)
	}
	select {
	case err := <-probed:
		t.Fatalf("a paused node's probe returned (%v) before the pause ended", err)
	case err := <-sent:
		t.Fatalf("a paused node's command went (%v) before the pause ended", err)
	default:
	}

	c.ResumeNode(0)
	if err := <-probed; err != nil {
		t.Errorf("probe after the pause ended: %v", err)
	}
	if err := <-sent; err != nil {
		t.Errorf("command after the pause ended: %v", err)
	}
	if n, on, pauses := c.NodeTraffic(0); n != 2 || on || pauses != 1 {
		t.Errorf("after ResumeNode: %d sent, paused %v, %d pauses; want 2, false, 1", n, on, pauses)
	}

	// A buyer killed while it waits stops there: its command is never
	// sent, and says why.
	c.PauseNode(0, time.Hour)
	ctx, kill := context.WithCancelCause(asClient(t.Context(), 5))
	probed2 := make(chan error, 1)
	go func() { probed2 <- r.probe(ctx, paused, locks.Business) }()
	sent2 := make(chan error, 1)
	go func() { sent2 <- (hook{paused}).admit(ctx, 1) }()
	kill(ErrCrashed)
	if err := <-probed2; !errors.Is(err, ErrCrashed) {
		t.Errorf("probe of a buyer killed during a pause: %v, want ErrCrashed", err)
	}
	if err := <-sent2; !errors.Is(err, ErrCrashed) || !errors.Is(err, ErrNotSent) {
		t.Errorf("command of a buyer killed during a pause: %v, want ErrCrashed, not sent", err)
	}
	if n, on, pauses := c.NodeTraffic(0); n != 2 || !on || pauses != 2 {
		t.Errorf("after the kill: %d sent, paused %v, %d pauses; want 2, true, 2", n, on, pauses)
	}
}

// TestPauseEnds: a pause ends by itself when its time is up.
func TestPauseEnds(t *testing.T) {
	r := testRun(1, 1)
	r.controls.PauseNode(0, time.Millisecond)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if err := r.controls.WaitNode(ctx, 0); err != nil {
		t.Fatalf("WaitNode: %v, want the pause over", err)
	}
	if _, on, pauses := r.controls.NodeTraffic(0); on || pauses != 1 {
		t.Errorf("paused %v, %d pauses; want false, 1", on, pauses)
	}
}

// TestSkewClock: a skew moves the node's clock, and that node's alone.
func TestSkewClock(t *testing.T) {
	for _, offset := range []time.Duration{3 * time.Second, -2 * time.Second, 0} {
		t.Run(offset.String(), func(t *testing.T) {
			r := testRun(2, 1)
			r.controls.SkewClock(0, offset)
			before := time.Now()
			skewed, plain := r.controls.NodeClock(0), r.controls.NodeClock(1)
			after := time.Now()
			if skewed.Before(before.Add(offset)) || skewed.After(after.Add(offset)) {
				t.Errorf("node 0's clock reads %v, want between %v and %v", skewed, before.Add(offset), after.Add(offset))
			}
			if plain.Before(before) || plain.After(after) {
				t.Errorf("node 1's clock reads %v, want between %v and %v: only node 0 was skewed", plain, before, after)
			}
		})
	}
}

// TestKill: killing a running client cancels its context with
// ErrCrashed and records when; its attempt then ends crashed. A client
// that is not running cannot be killed.
func TestKill(t *testing.T) {
	r := testRun(1, 3)
	ctx, cancel := context.WithCancelCause(t.Context())
	defer cancel(nil)
	r.kill[1].Store(&cancel)

	tests := []struct {
		client int32
		want   bool
	}{{1, true}, {0, false}, {3, false}, {-1, false}}
	for _, tt := range tests {
		if got := r.controls.Kill(tt.client); got != tt.want {
			t.Errorf("Kill(%d) = %v, want %v", tt.client, got, tt.want)
		}
	}
	if !errors.Is(context.Cause(ctx), ErrCrashed) {
		t.Errorf("the killed client's context ended with %v, want ErrCrashed", context.Cause(ctx))
	}
	if r.crashAt[1].Load() <= 0 || r.crashAt[0].Load() != 0 {
		t.Errorf("crash instants %d, %d: want client 1's recorded, client 0's not", r.crashAt[1].Load(), r.crashAt[0].Load())
	}
	op := history.Op{Client: 1, Stock: history.NoStock, Arrival: 1}
	rec := recorder{r: r, op: &op, ctx: ctx}
	rec.Reading()
	rec.ReadFailed()
	if op.Outcome != history.Crashed {
		t.Errorf("the killed client's attempt ended %s, want crashed", op.Outcome)
	}
}
