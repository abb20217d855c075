package workload_test

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/internal/loopback"
	"github.com/lockbench/lockbench/internal/monoclock"
	"github.com/lockbench/lockbench/internal/redistest"
	"github.com/lockbench/lockbench/nodeproto"
	"github.com/lockbench/lockbench/sales"
	"github.com/lockbench/lockbench/servers"
	"github.com/lockbench/lockbench/workload"
)

// The tests of this file are a coordinator of remote nodes (the
// Kubernetes mode) probed by forged nodes: Go clients of the node
// protocol in the test, with the run's secret or without it.

// remoteRun starts a sale on nodes nodes started elsewhere (Remote), with
// secret, on an embedded Redis; the run's result comes on the channel.
func remoteRun(t *testing.T, ctx context.Context, nodes int, secret string, timeout time.Duration) (addr string, result <-chan runResult) {
	t.Helper()
	return remoteRunWith(t, ctx, nodes, secret, timeout, func(*workload.Config) {})
}

// remoteRunWith is remoteRun with the run's configuration changed by set.
func remoteRunWith(t *testing.T, ctx context.Context, nodes int, secret string, timeout time.Duration, set func(*workload.Config)) (addr string, result <-chan runResult) {
	t.Helper()
	b := redistest.Embedded(t)
	port, err := loopback.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	addr = "127.0.0.1:" + strconv.Itoa(port)
	ch := make(chan runResult, 1)
	cfg := workload.Config{
		Name: "atomic", Sale: sales.Atomic(), Servers: &servers.Set{Redis: b},
		Workload: workload.Workload{Prefix: "forged:", Clients: 4 * nodes, Nodes: nodes, Workers: 4, Pool: 4, Stock: int64(4 * nodes), Attempts: 2,
			Timeout: timeout, CommandTimeout: time.Second},
		Launcher: workload.Remote{}, Listen: addr, NodeSecret: secret,
	}
	set(&cfg)
	go func() {
		h, err := workload.Run(ctx, cfg)
		ch <- runResult{h, err}
	}()
	return addr, ch
}

type runResult struct {
	h   *history.History
	err error
}

// dial dials the coordinator at addr until it listens.
func dial(t *testing.T, ctx context.Context, addr string) net.Conn {
	t.Helper()
	return dialWith(t, ctx, addr, &net.Dialer{})
}

// dialWith is dial with d.
func dialWith(t *testing.T, ctx context.Context, addr string, d *net.Dialer) net.Conn {
	t.Helper()
	for {
		conn, err := d.DialContext(ctx, "tcp", addr)
		if err == nil {
			t.Cleanup(func() { conn.Close() })
			return conn
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the coordinator at %s never listened: %v", addr, err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// refused reads l until it ends, and fails the test if the coordinator
// sends anything but its challenge: a refused node gets nothing.
func refused(t *testing.T, l *nodeproto.Link) {
	t.Helper()
	for {
		m, err := l.Recv()
		if err != nil {
			return
		}
		if m.Kind != nodeproto.Challenge {
			t.Errorf("a node without the run's secret was sent a %v: %+v", m.Kind, m)
		}
	}
}

// node is a forged node with the run's secret: it answers the pings and
// the setup like a node, then hands each message to on.
func node(t *testing.T, ctx context.Context, addr, secret string, index int, on func(l *nodeproto.Link, m *nodeproto.Message)) {
	nodeOn(t, ctx, dial(t, ctx, addr), secret, index, func(l *nodeproto.Link, m *nodeproto.Message) bool {
		on(l, m)
		return true
	})
}

// nodeOn is node on conn; it reads on while on returns true.
func nodeOn(t *testing.T, ctx context.Context, conn net.Conn, secret string, index int, on func(l *nodeproto.Link, m *nodeproto.Message) bool) {
	l, err := nodeproto.Connect(ctx, conn, secret, &nodeproto.Message{Kind: nodeproto.Hello, Node: index})
	if err != nil {
		t.Errorf("node %d: %v", index, err)
		return
	}
	t.Cleanup(l.Close)
	go func() {
		for {
			m, err := l.Recv()
			if err != nil {
				return
			}
			switch m.Kind {
			case nodeproto.Ping:
				l.Send(&nodeproto.Message{Kind: nodeproto.Pong, ID: m.ID, T1: monoclock.Now()})
			case nodeproto.Setup:
				l.Send(&nodeproto.Message{Kind: nodeproto.Ready})
			default:
				if !on(l, m) {
					return
				}
			}
		}
	}()
}

// TestForgedNodeRefused (issue 24, rows 1 and 2): a node that does not
// prove the run's secret gets nothing (no setup, so neither the Redis
// password nor a buyer), and the run does not pass: it ends naming the
// node that never came and the connections refused.
func TestForgedNodeRefused(t *testing.T) {
	secret := nodeproto.NewSecret()
	tests := []struct {
		name  string
		forge func(t *testing.T, ctx context.Context, addr string)
		// why is what the run's error says of the refusal, "" when the
		// test cannot wait for the coordinator's.
		why string
	}{
		{"plaintext hello, as before", func(t *testing.T, ctx context.Context, addr string) {
			l := nodeproto.NewLink(dial(t, ctx, addr))
			defer l.Close()
			l.Send(&nodeproto.Message{Kind: nodeproto.Hello, Node: 0})
			refused(t, l)
		}, "TLS"},
		{"TLS, no proof", func(t *testing.T, ctx context.Context, addr string) {
			l := nodeproto.NewLink(tls.Client(dial(t, ctx, addr), &tls.Config{InsecureSkipVerify: true}))
			defer l.Close()
			l.Send(&nodeproto.Message{Kind: nodeproto.Hello, Node: 0})
			refused(t, l)
		}, "does not prove"},
		{"TLS, a forged proof", func(t *testing.T, ctx context.Context, addr string) {
			l := nodeproto.NewLink(tls.Client(dial(t, ctx, addr), &tls.Config{InsecureSkipVerify: true}))
			defer l.Close()
			l.Send(&nodeproto.Message{Kind: nodeproto.Hello, Node: 0, Proof: make([]byte, 32)})
			refused(t, l)
		}, "does not prove"},
		{"a wrong secret", func(t *testing.T, ctx context.Context, addr string) {
			_, err := nodeproto.Connect(ctx, dial(t, ctx, addr), nodeproto.NewSecret(), &nodeproto.Message{Kind: nodeproto.Hello, Node: 0})
			if !errors.Is(err, nodeproto.ErrAuth) {
				t.Errorf("a node with a wrong secret connected: %v", err)
			}
		}, ""}, // the node refused the coordinator first: the coordinator's refusal may come after the cancel
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			addr, result := remoteRun(t, ctx, 1, secret, time.Minute)
			tt.forge(t, ctx, addr)
			cancel() // the forged node was refused: the genuine one never comes
			res := <-result
			if res.err == nil || res.h != nil {
				t.Fatalf("a run whose only node was forged returned %v, %v", res.h, res.err)
			}
			if msg := res.err.Error(); !strings.Contains(msg, "node 0 had not dialed in") || tt.why != "" && (!strings.Contains(msg, "refused") || !strings.Contains(msg, tt.why)) {
				t.Errorf("the error does not name the node and the refusal (%q): %v", tt.why, res.err)
			}
		})
	}
}

// TestSecondConnectionRefused (row 1): a second connection for a node's
// index, even with the secret, is refused; the first one is the node.
func TestSecondConnectionRefused(t *testing.T) {
	secret := nodeproto.NewSecret()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	addr, result := remoteRun(t, ctx, 1, secret, time.Minute)
	first, err := nodeproto.Connect(ctx, dial(t, ctx, addr), secret, &nodeproto.Message{Kind: nodeproto.Hello, Node: 0})
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	if m, err := first.Recv(); err != nil || m.Kind != nodeproto.Ping {
		t.Fatalf("the first node got %v, %v; want a ping", m, err)
	}
	second, err := nodeproto.Connect(ctx, dial(t, ctx, addr), secret, &nodeproto.Message{Kind: nodeproto.Hello, Node: 0})
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	refused(t, second)
	cancel()
	if res := <-result; res.err == nil {
		t.Fatal("the run passed")
	}
}

// TestNodeMisbehaves (row 3): a node with the secret that sends what the
// plan does not allow is dropped and named, the run ends with an
// infrastructure error and what was recorded; no panic.
func TestNodeMisbehaves(t *testing.T) {
	// Node 0 of 2 serves buyers 0, 2, 4 and 6. Without faults it keeps
	// their schedule, and sends what a case says of them once the sale has
	// begun; under faults (an injector that injects nothing) the
	// coordinator hands it each buyer, and it sends that once buyer 0 is
	// handed to it. now is the sale's clock then.
	type mode int
	const (
		both mode = iota
		scheduled
		handed
	)
	tests := []struct {
		name string
		mode mode
		// ramp spreads the arrivals (0: all at FirstArrival).
		ramp time.Duration
		send func(now int64) []*nodeproto.Message
		want string
	}{
		{"done of buyer 1<<30", both, 0, func(int64) []*nodeproto.Message {
			return []*nodeproto.Message{{Kind: nodeproto.Done, Client: 1 << 30}}
		}, "buyer 1073741824 is not one of node 0's"},
		{"probe of buyer -7", handed, 0, func(int64) []*nodeproto.Message {
			return []*nodeproto.Message{{Kind: nodeproto.Probe, Client: -7, Ops: []history.Op{{Client: -7}}}}
		}, "buyer -7 is not one of node 0's"},
		{"a probe with no fault injected", scheduled, 0, func(now int64) []*nodeproto.Message {
			return []*nodeproto.Message{{Kind: nodeproto.Start, Client: 0, T0: now}, {Kind: nodeproto.Probe, Client: 0}}
		}, "a probe, with no fault injected"},
		{"start of attempt 99", both, 0, func(now int64) []*nodeproto.Message {
			return []*nodeproto.Message{{Kind: nodeproto.Start, Client: 0, Attempt: 99, T0: now}}
		}, "attempt 99"},
		{"a buyer of another node", both, 0, func(int64) []*nodeproto.Message {
			return []*nodeproto.Message{{Kind: nodeproto.Done, Client: 1}}
		}, "not one of node 0's"},
		{"records of another buyer", both, 0, func(int64) []*nodeproto.Message {
			return []*nodeproto.Message{{Kind: nodeproto.Done, Client: 0, Ops: []history.Op{{Client: 2, Outcome: history.Sold}}}}
		}, "a record of buyer"},
		{"an instant years ahead", both, 0, func(int64) []*nodeproto.Message {
			return []*nodeproto.Message{{Kind: nodeproto.Done, Client: 0, Ops: []history.Op{{Client: 0, Start: int64(time.Hour) * 24 * 365, Outcome: history.Sold}}}}
		}, "instant"},
		{"a done twice", both, 0, func(int64) []*nodeproto.Message {
			return []*nodeproto.Message{{Kind: nodeproto.Done, Client: 0}, {Kind: nodeproto.Done, Client: 0}}
		}, "done of buyer 0, which it was not serving"},
		{"a start after its done", scheduled, 0, func(now int64) []*nodeproto.Message {
			return []*nodeproto.Message{{Kind: nodeproto.Done, Client: 2}, {Kind: nodeproto.Start, Client: 2, T0: now}}
		}, "start of buyer 2, which it had answered"},
		// Over an hour's ramp, buyer 6 of 8 arrives 45 minutes in.
		{"a start before its arrival", scheduled, time.Hour, func(now int64) []*nodeproto.Message {
			return []*nodeproto.Message{{Kind: nodeproto.Start, Client: 6, T0: now}}
		}, "start of buyer 6 at"},
		{"a done before its arrival", both, time.Hour, func(int64) []*nodeproto.Message {
			return []*nodeproto.Message{{Kind: nodeproto.Done, Client: 6}}
		}, "done of buyer 6, which it was not serving"},
		{"an end before it was told the sale's end", both, 0, func(int64) []*nodeproto.Message {
			return []*nodeproto.Message{{Kind: nodeproto.End}}
		}, "an end before it was told the sale's end"},
		{"a setup, which only a coordinator sends", both, 0, func(int64) []*nodeproto.Message {
			return []*nodeproto.Message{{Kind: nodeproto.Setup}}
		}, "a setup, which a node never sends"},
	}
	for _, tt := range tests {
		for _, m := range []mode{scheduled, handed} {
			if tt.mode != both && tt.mode != m {
				continue
			}
			name := map[mode]string{scheduled: "/without faults", handed: "/under faults"}[m]
			t.Run(tt.name+name, func(t *testing.T) {
				secret := nodeproto.NewSecret()
				addr, result := remoteRunWith(t, t.Context(), 2, secret, time.Minute, func(c *workload.Config) {
					c.Ramp = tt.ramp
					if m == handed {
						c.Injector = workload.NoFaults{}
					}
				})
				for i := range 2 {
					var base int64
					node(t, t.Context(), addr, secret, i, func(l *nodeproto.Link, msg *nodeproto.Message) {
						switch msg.Kind {
						case nodeproto.Stop:
							l.Send(&nodeproto.Message{Kind: nodeproto.End})
							return
						case nodeproto.Go:
							base = msg.T0
						}
						if i != 0 || m == scheduled && msg.Kind != nodeproto.Go || m == handed && (msg.Kind != nodeproto.Buyer || msg.Client != 0) {
							return
						}
						// Once the first buyers are due (FirstArrival).
						for monoclock.Now()-base <= int64(workload.FirstArrival) {
							time.Sleep(time.Millisecond)
						}
						for _, s := range tt.send(monoclock.Now() - base) {
							l.Send(s)
						}
					})
				}
				res := <-result
				if !errors.Is(res.err, workload.ErrNodeMisbehaved) || !errors.Is(res.err, servers.ErrUnreachable) {
					t.Fatalf("got %v, want the node dropped (ErrNodeMisbehaved, an infrastructure error)", res.err)
				}
				if msg := res.err.Error(); !strings.Contains(msg, "node 0 dropped") || !strings.Contains(msg, tt.want) {
					t.Errorf("the error does not name node 0 and %q: %v", tt.want, res.err)
				}
				if res.h == nil || !res.h.Header.CutShort || res.h.Header.CutBy != history.CutServerLost {
					t.Fatalf("what was recorded is not returned, cut short by the node's loss: %+v", res.h)
				}
				for _, op := range res.h.Ops {
					if op.Outcome == history.Sold {
						t.Errorf("a sale nobody made is in the history: %+v", op)
					}
				}
			})
		}
	}
}

// TestNodeBeforeTheSale: a node reports nothing of its buyers before the
// sale begins on it, and one lost then crashes none of them. Node 0 says
// it is ready, then sends a done of its buyer 0 or ends, while node 1 has
// not dialed in yet: the run ends with an error naming node 0, and never
// hangs.
func TestNodeBeforeTheSale(t *testing.T) {
	tests := []struct {
		name string
		then func(l *nodeproto.Link)
		want error
		text string
	}{
		{"a done", func(l *nodeproto.Link) { l.Send(&nodeproto.Message{Kind: nodeproto.Done, Client: 0}) }, workload.ErrNodeMisbehaved, "a done before the sale"},
		{"its process ends", func(l *nodeproto.Link) { l.Close() }, servers.ErrUnreachable, "node 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			secret := nodeproto.NewSecret()
			addr, result := remoteRun(t, t.Context(), 2, secret, time.Minute)
			readied := make(chan struct{})
			conn := dial(t, t.Context(), addr)
			l, err := nodeproto.Connect(t.Context(), conn, secret, &nodeproto.Message{Kind: nodeproto.Hello, Node: 0})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(l.Close)
			go func() {
				for {
					m, err := l.Recv()
					if err != nil {
						return
					}
					switch m.Kind {
					case nodeproto.Ping:
						l.Send(&nodeproto.Message{Kind: nodeproto.Pong, ID: m.ID, T1: monoclock.Now()})
					case nodeproto.Setup:
						l.Send(&nodeproto.Message{Kind: nodeproto.Ready})
						tt.then(l)
						close(readied)
					case nodeproto.Stop:
						l.Send(&nodeproto.Message{Kind: nodeproto.End})
					}
				}
			}()
			<-readied
			// Node 1 dials in only once node 0's report or loss was sent.
			node(t, t.Context(), addr, secret, 1, func(l *nodeproto.Link, m *nodeproto.Message) {
				if m.Kind == nodeproto.Stop {
					l.Send(&nodeproto.Message{Kind: nodeproto.End})
				}
			})
			res := <-result
			if !errors.Is(res.err, tt.want) || !strings.Contains(res.err.Error(), tt.text) {
				t.Fatalf("got %v, want %v naming %q", res.err, tt.want, tt.text)
			}
			if res.h != nil {
				for _, op := range res.h.Ops {
					if op.Start != 0 || op.Outcome != history.Pending {
						t.Errorf("a buyer of a sale that never began was recorded: %+v", op)
					}
				}
			}
		})
	}
}

// TestNodeNeverStops (row 4): nodes that never answer the stop cost the
// run one grace, not one per node: the run ends (its timeout, or its
// caller's cancel as SIGTERM does) with an error naming them, and what
// was recorded.
func TestNodeNeverStops(t *testing.T) {
	tests := []struct {
		name    string
		timeout time.Duration
		cancel  bool
		cut     history.Cut
	}{
		{"timeout", 300 * time.Millisecond, false, history.CutTimeout},
		{"interrupted", time.Hour, true, history.CutInterrupt},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			secret := nodeproto.NewSecret()
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			// Buyers 0 to 7 arrive 10 s apart, from 1 ms on: buyer 1 is
			// due before the nodes are dropped (one grace, 12 s).
			addr, result := remoteRunWith(t, ctx, 2, secret, tt.timeout, func(c *workload.Config) { c.Ramp = 80 * time.Second })
			begun := make(chan struct{}, 2)
			for i := range 2 {
				node(t, t.Context(), addr, secret, i, func(_ *nodeproto.Link, m *nodeproto.Message) {
					if m.Kind == nodeproto.Go {
						begun <- struct{}{} // its buyers never answered, nor the stop
					}
				})
			}
			if tt.cancel {
				<-begun
				cancel()
			}
			res := <-result
			if !errors.Is(res.err, workload.ErrNodeMisbehaved) || !strings.Contains(res.err.Error(), "node 0, 1 did not end the sale") {
				t.Fatalf("got %v, want both nodes named for not ending the sale", res.err)
			}
			if res.h == nil || res.h.Header.CutBy != tt.cut {
				t.Fatalf("the history recorded is not returned, cut by %q: %+v", tt.cut, res.h)
			}
			// The nodes kept their buyers' schedule and were told the
			// sale's end within a second: buyer 0 may have begun, and is
			// crashed; those due seconds after the end, when the nodes
			// were dropped, cannot have, and are not.
			crashed := map[int32]bool{}
			for _, op := range res.h.Ops {
				if op.Outcome == history.Crashed {
					crashed[op.Client] = true
				}
			}
			if !crashed[0] || len(crashed) != 1 {
				t.Errorf("buyers recorded crashed: %v, want buyer 0 alone", crashed)
			}
		})
	}
}

// TestNodeLostOnItsOwn: without faults a node keeps its buyers'
// schedule and sends each attempt's start unanswered, so a node whose
// process ends on its own may take a start with it. Every buyer of its
// that had arrived and was not answered is then recorded as crashed with
// an indeterminate write (it may have sold), whether or not its start
// reached the coordinator: never dropped from the history, where an
// unseen sale would make the inventory look wrong.
func TestNodeLostOnItsOwn(t *testing.T) {
	tests := []struct {
		name  string
		start bool // the node's start of the buyer reaches the coordinator
	}{
		{"start received", true},
		{"start lost with the node", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			secret := nodeproto.NewSecret()
			addr, result := remoteRun(t, t.Context(), 2, secret, time.Minute)
			for i := range 2 {
				node(t, t.Context(), addr, secret, i, func(l *nodeproto.Link, m *nodeproto.Message) {
					switch m.Kind {
					case nodeproto.Stop:
						l.Send(&nodeproto.Message{Kind: nodeproto.End})
					case nodeproto.Go:
						if i != 0 {
							return
						}
						// Once its buyers (0, 2, 4, 6) are due.
						for monoclock.Now()-m.T0 <= int64(workload.FirstArrival) {
							time.Sleep(time.Millisecond)
						}
						if tt.start {
							l.Send(&nodeproto.Message{Kind: nodeproto.Start, Client: 0, T0: monoclock.Now() - m.T0})
						}
						go l.Close() // the node's process ends
					}
				})
			}
			res := <-result
			if !errors.Is(res.err, servers.ErrUnreachable) || !strings.Contains(res.err.Error(), "node 0") {
				t.Fatalf("got %v, want the sale cut short by node 0's loss", res.err)
			}
			if res.h == nil {
				t.Fatal("what was recorded is not returned")
			}
			for c := int32(0); c < 8; c += 2 {
				var got []history.Op
				for _, op := range res.h.Ops {
					if op.Client == c {
						got = append(got, op)
					}
				}
				if len(got) != 1 || got[0].Outcome != history.Crashed || got[0].Write != history.Indeterminate || got[0].Start <= 0 {
					t.Fatalf("buyer %d's records: %+v, want one attempt, crashed, its write indeterminate", c, got)
				}
			}
		})
	}
}

// TestClockMeasured: the run, not its caller, says how much of the
// history's clock error it measured (history.Header.ClockMeasured), so
// that every user of the library writes histories `check` takes: all of
// it when the nodes' measured bound is above the floor given, none of it
// when the floor (the caller's, given again to check) is above.
func TestClockMeasured(t *testing.T) {
	tests := []struct {
		name     string
		floor    time.Duration
		measured bool
	}{
		{"no floor", 0, true},
		{"a floor above what is measured", time.Hour, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			secret := nodeproto.NewSecret()
			addr, result := remoteRunWith(t, t.Context(), 1, secret, 200*time.Millisecond, func(c *workload.Config) { c.ClockError = tt.floor })
			node(t, t.Context(), addr, secret, 0, func(l *nodeproto.Link, m *nodeproto.Message) {
				if m.Kind == nodeproto.Stop {
					l.Send(&nodeproto.Message{Kind: nodeproto.End})
				}
			})
			res := <-result
			if res.h == nil {
				t.Fatalf("no history: %v", res.err)
			}
			hd := res.h.Header
			if hd.ClockError < int64(tt.floor) || hd.ClockError <= 0 {
				t.Fatalf("clock error %d, want a measured bound above 0 and at least the floor %d", hd.ClockError, tt.floor)
			}
			want := int64(0)
			if tt.measured {
				want = hd.ClockError
			}
			if hd.ClockMeasured != want {
				t.Errorf("clock measured %d, want %d (clock error %d, floor %d)", hd.ClockMeasured, want, hd.ClockError, tt.floor)
			}
			if err := history.CheckClock(res.h, 0); (err == nil) != tt.measured {
				t.Errorf("CheckClock without an allowance: %v (measured: %v)", err, tt.measured)
			}
		})
	}
}

// TestNodeStopsReading (issue 24): a node that proves the secret, gets
// ready and then never reads again fills its link's queue; once the sale
// has ended, the coordinator drops it and names it (ErrNodeMisbehaved)
// with what was recorded, instead of waiting for it for ever. The node's
// socket takes little before TCP stops the sender (a small receive
// buffer and segment size): the queue fills after some thousands of
// buyers, not a million.
func TestNodeStopsReading(t *testing.T) {
	secret := nodeproto.NewSecret()
	// Every buyer is due at once, and the sale lasts long enough for
	// the coordinator to fill the queue under the race detector on a
	// busy machine (at 60,000 buyers and a second, it once had not).
	addr, result := remoteRunWith(t, t.Context(), 1, secret, 3*time.Second, func(c *workload.Config) {
		c.Clients, c.Stock, c.Attempts, c.Ramp = 200000, 10, 1, 0
		// Under faults the coordinator hands each buyer to its node
		// (without, the node keeps the schedule and is sent nothing
		// until the stop, which TestNodeNeverStops covers).
		c.Injector = workload.NoFaults{}
	})
	small := &net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		var err error
		c.Control(func(fd uintptr) {
			err = errors.Join(syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 1024),
				syscall.SetsockoptInt(int(fd), syscall.IPPROTO_TCP, syscall.TCP_MAXSEG, 536))
		})
		return err
	}}
	// The sale's first message after the setup (its go) is the last read.
	nodeOn(t, t.Context(), dialWith(t, t.Context(), addr, small), secret, 0, func(*nodeproto.Link, *nodeproto.Message) bool { return false })
	res := <-result
	if !errors.Is(res.err, workload.ErrNodeMisbehaved) || !strings.Contains(res.err.Error(), "node 0 dropped") || !strings.Contains(res.err.Error(), "stopped reading") {
		t.Fatalf("got %v, want node 0 dropped for not reading (ErrNodeMisbehaved)", res.err)
	}
	if res.h == nil || !res.h.Header.CutShort {
		t.Fatalf("what was recorded is not returned, cut short: %+v", res.h)
	}
}
