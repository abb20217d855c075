package workload

import (
	"bufio"
	"context"
	"encoding/gob"
	"errors"
	"fmt"
	"net"
	"sync"

	"github.com/lockbench/lockbench/history"
)

// The node protocol is how a coordinator (the run) and its nodes in
// processes of their own talk, over one TCP connection per node, in gob.
// It is the same on one machine (--node-mode=process or docker) and on
// many (remote). In order:
//
//	node → coordinator   hello   its index and the token it was started with
//	coordinator → node   ping…   round trips that measure its clock's offset
//	coordinator → node   setup   the sale: implementation, workload, servers
//	node → coordinator   ready   its clients and locks are up
//	coordinator → node   go      the sale's start, on the node's clock
//	coordinator → node   buyer   a buyer arrives (the coordinator schedules arrivals)
//	node → coordinator   start   an attempt begins
//	node → coordinator   probe   a probe point, with the attempt's record so far; the
//	                             coordinator's faults answer it (wait, go on, or crash)
//	node → coordinator   done    a buyer is answered: its records, whole
//	coordinator → node   pause, through, resume, skew   the faults' levers
//	coordinator → node   stop    the sale is over (cut short, or every buyer answered)
//	node → coordinator   end     its counters; then the coordinator closes the link
//
// A node whose link ends leaves at once: a node never outlives its
// coordinator.
type msgKind uint8

const (
	mHello msgKind = iota + 1
	mPing
	mPong
	mSetup
	mReady
	mGo
	mBuyer
	mStart
	mProbe
	mProbeReply
	mDone
	mPause
	mAck
	mThrough
	mResume
	mSkew
	mStats
	mStop
	mEnd
	mDie
)

// message is every message of the node protocol; a kind uses some fields.
type message struct {
	Kind msgKind
	// ID pairs a call with its answer (ping and pong, probe and its
	// reply, pause and its ack).
	ID      uint64
	Node    int
	Token   string
	Client  int32
	Attempt int16
	Point   string
	// T0 and T1 are instants: a ping's sending and the node's clock in
	// its pong; an attempt's start; the sale's base; a skew.
	T0, T1   int64
	Ops      []history.Op
	Setup    *nodeSetup
	Err      string
	Commands int64
	Unread   bool
	// Health is a node's own health, in its end.
	Health *history.Health
}

// nodeSetup is what a node needs to run its part of the sale.
type nodeSetup struct {
	Node, Nodes int
	UUID        string
	Impl        string
	Clients     int
	Workload    Workload
	// Redis is the address the node's clients dial (the coordinator's
	// fault proxy, when it routes the node), nil without Redis.
	Redis *redisAddr
	// ZooKeeper is the ZooKeeper address the node dials, "" for none.
	ZooKeeper string
	// MySQL is the MySQL DSN, "" for none.
	MySQL string
	// Probes is true when faults are injected: the node sends each probe
	// point to the coordinator and waits for its answer.
	Probes bool
}

// redisAddr is how a node reaches a Redis.
type redisAddr struct {
	Addr, Username, Password string
	DB                       int
}

// errLinkClosed is a call's error when the link closed before its answer.
var errLinkClosed = errors.New("workload: node link closed")

// nodeLink is one end of a node's connection: messages go out in order
// through one writer, and calls wait for the answer with their ID.
type nodeLink struct {
	conn net.Conn
	dec  *gob.Decoder

	mu     sync.Mutex
	closed bool
	out    chan *message
	wrote  chan struct{}

	callMu  sync.Mutex
	next    uint64
	waiting map[uint64]chan *message
}

func newLink(conn net.Conn) *nodeLink {
	l := &nodeLink{conn: conn, dec: gob.NewDecoder(bufio.NewReader(conn)), out: make(chan *message, 4096), wrote: make(chan struct{}), waiting: map[uint64]chan *message{}}
	go l.write()
	return l
}

// write sends the queued messages, flushing whenever none is waiting.
func (l *nodeLink) write() {
	defer close(l.wrote)
	w := bufio.NewWriterSize(l.conn, 64<<10)
	enc := gob.NewEncoder(w)
	for m := range l.out {
		if err := enc.Encode(m); err != nil {
			l.conn.Close()
			for range l.out {
			}
			return
		}
		if len(l.out) == 0 {
			if err := w.Flush(); err != nil {
				l.conn.Close()
			}
		}
	}
	w.Flush()
}

// send queues m; false when the link is closed.
func (l *nodeLink) send(m *message) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return false
	}
	l.out <- m
	return true
}

// call sends m with a fresh ID and returns the answer with that ID.
func (l *nodeLink) call(ctx context.Context, m *message) (*message, error) {
	ch := make(chan *message, 1)
	l.callMu.Lock()
	l.next++
	m.ID = l.next
	l.waiting[m.ID] = ch
	l.callMu.Unlock()
	defer func() {
		l.callMu.Lock()
		delete(l.waiting, m.ID)
		l.callMu.Unlock()
	}()
	if !l.send(m) {
		return nil, errLinkClosed
	}
	select {
	case a, ok := <-ch:
		if !ok {
			return nil, errLinkClosed
		}
		return a, nil
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
}

// answer hands a to the call waiting for it.
func (l *nodeLink) answer(a *message) {
	l.callMu.Lock()
	ch := l.waiting[a.ID]
	delete(l.waiting, a.ID)
	l.callMu.Unlock()
	if ch != nil {
		ch <- a
	}
}

// recv reads the next message.
func (l *nodeLink) recv() (*message, error) {
	m := new(message)
	if err := l.dec.Decode(m); err != nil {
		return nil, err
	}
	return m, nil
}

// close sends what is queued, then closes the connection; the calls
// waiting fail.
func (l *nodeLink) close() {
	l.mu.Lock()
	if !l.closed {
		l.closed = true
		close(l.out)
	}
	l.mu.Unlock()
	<-l.wrote
	l.conn.Close()
	l.callMu.Lock()
	for id, ch := range l.waiting {
		close(ch)
		delete(l.waiting, id)
	}
	l.callMu.Unlock()
}

// hello reads the first message of a link, which must be a hello.
func (l *nodeLink) hello() (*message, error) {
	m, err := l.recv()
	if err != nil {
		return nil, err
	}
	if m.Kind != mHello {
		return nil, fmt.Errorf("workload: node protocol: first message is %d, not hello", m.Kind)
	}
	return m, nil
}
