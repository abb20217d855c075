package nodeproto

import (
	"bytes"
	"context"
	"encoding/gob"
	"errors"
	"io"
	"net"
	"reflect"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockbench/lockbench/history"
)

// pair is two links joined by a pipe, which holds each write until the
// other side reads it.
func pair(t *testing.T) (a, b *Link) {
	t.Helper()
	c1, c2 := net.Pipe()
	a, b = NewLink(c1), NewLink(c2)
	t.Cleanup(func() {
		b.Close()
		a.Close()
	})
	return a, b
}

// received is what l reads, in order, until it ends, when the channel is
// closed; it holds n before the reader waits.
func received(l *Link, n int) <-chan *Message {
	got := make(chan *Message, n)
	go func() {
		for {
			m, err := l.Recv()
			if err != nil {
				close(got)
				return
			}
			got <- m
		}
	}()
	return got
}

// drain reads l until it ends, answering nothing.
func drain(l *Link) {
	go func() {
		for {
			if _, err := l.Recv(); err != nil {
				return
			}
		}
	}()
}

func TestRoundTrip(t *testing.T) {
	a, b := pair(t)
	h := history.Health{}
	tests := []struct {
		name string
		m    *Message
	}{
		{"hello", &Message{Kind: Hello, Node: 3, Token: "tok"}},
		{"ping", &Message{Kind: Ping, ID: 7, T0: 12345}},
		{"setup", &Message{Kind: Setup, Setup: &Assignment{Node: 1, Nodes: 2, UUID: "u", Impl: "redlock", Clients: 10, Workload: []byte{1, 2, 3}, Redis: &Redis{Addr: "127.0.0.1:6379", Username: "u", Password: "p", DB: 2}, Servers: map[string]string{"zookeeper": "127.0.0.1:2181", "mysql": "root@tcp(127.0.0.1:3306)/x"}, Probes: true}}},
		{"probe", &Message{Kind: Probe, Client: 4, Attempt: 1, Point: "after-acquire", Ops: []history.Op{{Client: 4, Attempt: 1}}}},
		{"done", &Message{Kind: Done, Client: 9, Ops: []history.Op{{Client: 9}, {Client: 9, Attempt: 1}}}},
		{"end", &Message{Kind: End, Commands: 99, Unread: true, Health: &h}},
		{"die", &Message{Kind: Die}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !a.Send(tt.m) {
				t.Fatal("send on an open link: false")
			}
			got, err := b.Recv()
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.m) {
				t.Errorf("got %+v, want %+v", got, tt.m)
			}
		})
	}
}

func TestCallAnswer(t *testing.T) {
	a, b := pair(t)
	go func() {
		for {
			m, err := b.Recv()
			if err != nil {
				return
			}
			b.Send(&Message{Kind: Pong, ID: m.ID, T1: m.T0 + 1})
		}
	}()
	go func() {
		for {
			m, err := a.Recv()
			if err != nil {
				return
			}
			a.Answer(m)
		}
	}()
	for i := range int64(3) {
		got, err := a.Call(t.Context(), &Message{Kind: Ping, T0: i})
		if err != nil {
			t.Fatal(err)
		}
		if got.Kind != Pong || got.T1 != i+1 {
			t.Errorf("call %d: got %v T1=%d, want pong T1=%d", i, got.Kind, got.T1, i+1)
		}
	}
}

func TestCallEnds(t *testing.T) {
	t.Run("closed", func(t *testing.T) {
		a, b := pair(t)
		drain(b)
		done := make(chan error, 1)
		go func() {
			_, err := a.Call(context.Background(), &Message{Kind: Pause})
			done <- err
		}()
		time.Sleep(10 * time.Millisecond)
		a.Close()
		if err := <-done; !errors.Is(err, ErrClosed) {
			t.Errorf("got %v, want ErrClosed", err)
		}
		if a.Send(&Message{Kind: Ack}) {
			t.Error("send on a closed link: true")
		}
	})
	t.Run("context", func(t *testing.T) {
		a, b := pair(t)
		drain(b)
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Millisecond)
		defer cancel()
		if _, err := a.Call(ctx, &Message{Kind: Pause}); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("got %v, want the context's deadline", err)
		}
	})
}

// gobOf is v as a gob stream of its own.
func gobOf(t *testing.T, vs ...any) []byte {
	t.Helper()
	var b bytes.Buffer
	enc := gob.NewEncoder(&b)
	for _, v := range vs {
		if err := enc.Encode(v); err != nil {
			t.Fatal(err)
		}
	}
	return b.Bytes()
}

// recvRaw is what a link makes of raw bytes from its peer.
func recvRaw(t *testing.T, raw []byte, hello bool) (*Message, error) {
	t.Helper()
	c1, c2 := net.Pipe()
	l := NewLink(c1)
	t.Cleanup(l.Close)
	go func() {
		c2.Write(raw)
		c2.Close()
	}()
	if hello {
		return l.Hello()
	}
	return l.Recv()
}

// TestRefused: what a peer sends is input from outside; what is not a
// message of the protocol is refused with an error that says so, never a
// panic, and an oversized one before it is read.
func TestRefused(t *testing.T) {
	big := func(n uint64) []byte {
		b := []byte{0xf8}
		for s := 56; s >= 0; s -= 8 {
			b = append(b, byte(n>>s))
		}
		return b
	}
	valid := gobOf(t, &Message{Kind: Ping})
	tests := []struct {
		name  string
		raw   []byte
		hello bool
		want  error
	}{
		{"empty", nil, false, io.EOF},
		{"oversized count", big(MaxMessage + 1), false, ErrTooLarge},
		{"8 GB count", big(8 << 30), false, ErrTooLarge},
		{"largest count", big(^uint64(0)), false, ErrTooLarge},
		{"count wider than 8 bytes", []byte{0x80, 1, 2, 3}, false, ErrMalformed},
		{"truncated count", []byte{0xfe, 0x01}, false, io.ErrUnexpectedEOF},
		{"truncated message", valid[:len(valid)/2], false, io.ErrUnexpectedEOF},
		{"garbage", []byte{0x05, 0xde, 0xad, 0xbe, 0xef, 0x00}, false, ErrMalformed},
		{"unknown kind", gobOf(t, &Message{Kind: 99}), false, ErrMalformed},
		{"no kind", gobOf(t, &Message{ID: 1}), false, ErrMalformed},
		{"another type", gobOf(t, struct{ Kind string }{"hello"}), false, ErrMalformed},
		{"not a hello first", valid, true, ErrMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := recvRaw(t, tt.raw, tt.hello)
			if !errors.Is(err, tt.want) {
				t.Fatalf("got %v, %v; want %v", m, err, tt.want)
			}
			if m != nil {
				t.Errorf("got a message %+v with the error", m)
			}
		})
	}
}

// TestLargeAccepted: a message of many records, far below MaxMessage,
// passes the count check whole.
func TestLargeAccepted(t *testing.T) {
	ops := make([]history.Op, 20000)
	for i := range ops {
		ops[i].Client = int32(i)
	}
	m, err := recvRaw(t, gobOf(t, &Message{Kind: Hello}, &Message{Kind: Done, Ops: ops}), true)
	if err != nil || m.Kind != Hello {
		t.Fatalf("hello: got %v, %v", m, err)
	}
}

func TestKindString(t *testing.T) {
	tests := []struct {
		k    Kind
		want string
	}{
		{Hello, "hello"}, {ProbeReply, "probe reply"}, {Die, "die"}, {Challenge, "challenge"}, {Panicked, "panicked"}, {0, "kind 0"}, {Panicked + 1, "kind 23"},
	}
	for _, tt := range tests {
		if got := tt.k.String(); got != tt.want {
			t.Errorf("Kind(%d).String() = %q, want %q", uint8(tt.k), got, tt.want)
		}
	}
}

// FuzzRecv: whatever a peer sends, Recv answers with a message of a
// known kind or an error, and never panics.
func FuzzRecv(f *testing.F) {
	var b bytes.Buffer
	enc := gob.NewEncoder(&b)
	for _, m := range []*Message{{Kind: Hello, Token: "t"}, {Kind: Done, Ops: []history.Op{{Client: 1}}}, {Kind: Setup, Setup: &Assignment{Redis: &Redis{Addr: "a"}}}} {
		enc.Encode(m)
		f.Add(bytes.Clone(b.Bytes()))
	}
	f.Add([]byte{0xf8, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, raw []byte) {
		c1, c2 := net.Pipe()
		l := NewLink(c1)
		defer l.Close()
		go func() {
			c2.Write(raw)
			c2.Close()
		}()
		for {
			m, err := l.Recv()
			if err != nil {
				return
			}
			if !m.Kind.Valid() {
				t.Fatalf("a message of %v", m.Kind)
			}
		}
	})
}

// TestSendBound (issue 24): a peer that stops reading fills its link's
// queue; once the link's bound has ended, the message that finds no room
// fails the link (ErrStalled) instead of waiting for ever, the messages
// before it are queued, and Close returns.
func TestSendBound(t *testing.T) {
	c1, c2 := net.Pipe() // holds each write until the peer reads it: this one never does
	a := NewLink(c1)
	defer c2.Close()
	ctx, cancel := context.WithCancel(t.Context())
	a.Bound(ctx)
	cancel() // the bound ends first: only a full queue fails
	sent := 0
	for a.Send(&Message{Kind: Buyer, Client: int32(sent)}) {
		sent++
	}
	if sent < queueLen {
		t.Errorf("%d messages queued before the link failed, fewer than its queue's %d", sent, queueLen)
	}
	if !errors.Is(a.Err(), ErrStalled) {
		t.Fatalf("Err = %v, want ErrStalled", a.Err())
	}
	if a.Send(&Message{Kind: Buyer}) {
		t.Error("a send on the failed link was queued")
	}
	a.Close() // returns: the writer ended with the connection
	if _, err := a.Call(t.Context(), &Message{Kind: Ping}); !errors.Is(err, ErrClosed) {
		t.Errorf("a call on the failed link: %v, want ErrClosed", err)
	}
}

// TestSendUnbounded: a link with no bound, or whose bound has not ended,
// has no error of its own.
func TestSendUnbounded(t *testing.T) {
	a, b := pair(t)
	drain(b)
	a.Bound(t.Context())
	for i := range 100 {
		if !a.Send(&Message{Kind: Buyer, Client: int32(i)}) {
			t.Fatalf("send %d on an open link: false", i)
		}
	}
	if err := a.Err(); err != nil {
		t.Fatalf("Err = %v on a link whose peer reads", err)
	}
}

// writes counts the writes to a connection.
type writes struct {
	net.Conn
	n atomic.Int64
}

func (w *writes) Write(p []byte) (int, error) {
	w.n.Add(1)
	return w.Conn.Write(p)
}

// TestPost: posted messages wait for company and go out in order, in one
// write with the message sent after them, after the linger on their own,
// or with the link's close.
func TestPost(t *testing.T) {
	tests := []struct {
		name   string
		linger time.Duration
		end    func(a *Link) // what sends the posted messages on
		writes int64         // 0: not counted
	}{
		{"a send takes them along", time.Hour, func(a *Link) { a.Send(&Message{Kind: Stop}) }, 1},
		{"the linger ends", time.Millisecond, func(*Link) {}, 0},
		{"close sends them", time.Hour, func(a *Link) { a.Close() }, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c1, c2 := net.Pipe()
			w := &writes{Conn: c1}
			a, b := NewLink(w), NewLink(c2)
			t.Cleanup(func() {
				b.Close()
				a.Close()
			})
			a.linger = tt.linger
			got := received(b, 100)
			const n = 50
			for i := range n {
				if !a.Post(&Message{Kind: Done, Client: int32(i)}) {
					t.Fatalf("post %d on an open link: false", i)
				}
				// Each one alone in the queue when the writer takes it: a
				// link that wrote it then would write once per message.
				for len(a.out) > 0 {
					time.Sleep(10 * time.Microsecond)
				}
				time.Sleep(50 * time.Microsecond)
			}
			tt.end(a)
			for i := range n {
				m, ok := within(t, got)
				if !ok {
					t.Fatalf("message %d: the link ended", i)
				}
				if m.Kind != Done || m.Client != int32(i) {
					t.Fatalf("message %d is %v of client %d, want done of %d", i, m.Kind, m.Client, i)
				}
			}
			if tt.writes > 0 {
				if got := w.n.Load(); got != tt.writes {
					t.Errorf("%d messages took %d writes, want %d", n, got, tt.writes)
				}
			}
		})
	}
}

// within is the next message of got, failing the test when none comes in
// a minute: a guard against a message a link never sends, which would
// hang the test, not a bound on its speed.
func within(t *testing.T, got <-chan *Message) (*Message, bool) {
	t.Helper()
	select {
	case m, ok := <-got:
		return m, ok
	case <-time.After(time.Minute):
		t.Fatal("no message in a minute: the link holds it")
		return nil, false
	}
}

// TestSendNotHeldByPost: a sent message with a posted one behind it goes
// out with it at once; it never waits for the posted one's linger.
func TestSendNotHeldByPost(t *testing.T) {
	c1, c2 := net.Pipe()
	a, b := NewLink(c1), NewLink(c2)
	t.Cleanup(func() {
		b.Close()
		a.Close()
	})
	a.linger = time.Hour
	// The pipe holds the writer in its write of the first message until b
	// reads, so that the two after it are both queued when it takes them.
	a.Send(&Message{Kind: Buyer, Client: 0})
	for len(a.out) > 0 {
		time.Sleep(10 * time.Microsecond)
	}
	a.Send(&Message{Kind: Buyer, Client: 1})
	a.Post(&Message{Kind: Stats, Commands: 2})
	got := received(b, 3)
	want := []Kind{Buyer, Buyer, Stats}
	for i, k := range want {
		m, ok := within(t, got)
		if !ok || m.Kind != k {
			t.Fatalf("message %d: %v (link open %v), want %v", i, m, ok, k)
		}
	}
}
