package nodeproto

import (
	"bufio"
	"context"
	"encoding/gob"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// MaxMessage is the most bytes one message may take on the wire. A
// buyer's records are far less; the bound keeps a peer that is not a
// node (or a broken one) from making the other side read gigabytes.
const MaxMessage = 64 << 20

var (
	// ErrClosed is a call's error when the link closed before its answer.
	ErrClosed = errors.New("nodeproto: link closed")
	// ErrTooLarge is Recv's error for a message longer than MaxMessage,
	// refused before it is read.
	ErrTooLarge = errors.New("nodeproto: message too large")
	// ErrMalformed is Recv's error for bytes that are not a message of
	// the protocol, and Hello's for a first message that is no hello.
	ErrMalformed = errors.New("nodeproto: malformed message")
	// ErrStalled is Err's for a link whose peer stopped reading: its
	// queue stayed full past the bound it was given (Bound), and the
	// link was closed.
	ErrStalled = errors.New("nodeproto: the peer stopped reading")
)

// queueLen is how many messages a link queues toward its peer before
// Send waits for the peer to read.
const queueLen = 4096

// Linger is the longest a message queued with Post waits for company
// before it is written: the messages queued in that time go in one write
// (one TLS record, one system call on each side) instead of one each.
const Linger = time.Millisecond

// queued is a message on its way out: later when it may linger (Post).
type queued struct {
	m     *Message
	later bool
}

// Link is one end of a node's connection: messages go out in order
// through one writer, and calls wait for the answer with their ID. One
// goroutine reads it (Recv); any may send, call and answer.
type Link struct {
	conn  net.Conn
	in    *frames
	dec   *gob.Decoder
	mu    sync.Mutex
	done  bool
	out   chan queued
	wrote chan struct{}
	// linger is Linger, or a test's.
	linger time.Duration
	// bound ends the waits of Send on a full queue (Bound); stalled is
	// set when one ended so.
	bound   <-chan struct{}
	stalled atomic.Bool

	callMu  sync.Mutex
	next    uint64
	waiting map[uint64]chan *Message
}

// NewLink starts a link on conn; Close ends it.
func NewLink(conn net.Conn) *Link {
	in := &frames{r: bufio.NewReader(conn)}
	l := &Link{conn: conn, in: in, dec: gob.NewDecoder(in), out: make(chan queued, queueLen), wrote: make(chan struct{}), linger: Linger, waiting: map[uint64]chan *Message{}}
	go l.write()
	return l
}

// write sends the queued messages, flushing whenever none is waiting;
// when every message written since the last flush was posted (Post), once
// l.linger has passed or a sent one follows.
func (l *Link) write() {
	defer close(l.wrote)
	w := bufio.NewWriterSize(l.conn, 64<<10)
	enc := gob.NewEncoder(w)
	flush := func() {
		if err := w.Flush(); err != nil {
			l.conn.Close()
		}
	}
	linger := time.NewTimer(time.Hour)
	linger.Stop()
	lingering := false // posted messages wait in w for linger
	urgent := false    // w holds a sent message, which never waits
	for {
		var q queued
		ok := true
		if lingering {
			select {
			case q, ok = <-l.out:
			case <-linger.C:
				lingering, urgent = false, false
				flush()
				continue
			}
		} else {
			q, ok = <-l.out
		}
		if !ok {
			break
		}
		if err := enc.Encode(q.m); err != nil {
			l.conn.Close()
			for range l.out {
			}
			return
		}
		urgent = urgent || !q.later
		switch {
		case len(l.out) > 0:
		case !urgent:
			if !lingering {
				lingering = true
				linger.Reset(l.linger)
			}
		default:
			if lingering {
				linger.Stop()
				lingering = false
			}
			urgent = false
			flush()
		}
	}
	w.Flush()
}

// Send queues m; false when the link is closed. On a full queue (a peer
// that reads slower than it is sent to, or not at all) it waits for room,
// until the link's bound ends (Bound): then the peer is held to have
// stopped reading, the link is closed and fails with ErrStalled (Err),
// and Send returns false.
func (l *Link) Send(m *Message) bool {
	return l.queue(queued{m: m})
}

// Post is Send for a message nothing waits on (a report, or a buyer that
// waits behind others at its node): it may wait up to Linger in the link
// for the messages after it, so that they go out together. A message sent
// (Send) after it takes it along at once, and so does Close.
func (l *Link) Post(m *Message) bool {
	return l.queue(queued{m: m, later: true})
}

// queue is Send and Post.
func (l *Link) queue(q queued) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.done {
		return false
	}
	select {
	case l.out <- q:
		return true
	case <-l.bound:
	}
	select {
	case l.out <- q: // room came as the bound ended
		return true
	default:
	}
	// l.mu is held: end the writer as stop does, and the connection,
	// which the writer may be blocked on.
	l.stalled.Store(true)
	l.done = true
	close(l.out)
	l.conn.Close()
	return false
}

// Bound bounds the waits of Send on a full queue: once ctx ends, a
// message that finds no room fails the link (ErrStalled) instead of
// waiting for a peer that may never read. Without a bound, Send waits as
// long as the peer takes.
func (l *Link) Bound(ctx context.Context) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.bound = ctx.Done()
}

// Err is why the link failed of its own accord: ErrStalled when its peer
// stopped reading (see Send), nil otherwise. A link closed by its owner,
// or by its peer, has no error here.
func (l *Link) Err() error {
	if l.stalled.Load() {
		return ErrStalled
	}
	return nil
}

// Call sends m with a fresh ID and returns the answer with that ID (which
// the reader hands over with Answer): ErrClosed when the link closes
// first, the context's cause when it ends first.
func (l *Link) Call(ctx context.Context, m *Message) (*Message, error) {
	ch := make(chan *Message, 1)
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
	if !l.Send(m) {
		return nil, ErrClosed
	}
	select {
	case a, ok := <-ch:
		if !ok {
			return nil, ErrClosed
		}
		return a, nil
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
}

// Answer hands a to the call waiting for it; an answer nobody waits for
// is dropped.
func (l *Link) Answer(a *Message) {
	l.callMu.Lock()
	ch := l.waiting[a.ID]
	delete(l.waiting, a.ID)
	l.callMu.Unlock()
	if ch != nil {
		ch <- a
	}
}

// Recv reads the next message. Its error is the connection's (io.EOF
// when the peer closed it), ErrTooLarge, or ErrMalformed; after one, the
// link reads nothing more and is to be closed.
func (l *Link) Recv() (m *Message, err error) {
	defer func() {
		// The decoder is gob's, on bytes from outside; whatever it does
		// with them, a bad peer costs its link, not the process.
		if p := recover(); p != nil {
			m, err = nil, fmt.Errorf("%w: %v", ErrMalformed, p)
		}
	}()
	m = new(Message)
	if err := l.dec.Decode(m); err != nil {
		switch {
		case l.in.err != nil:
			return nil, l.in.err
		case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
			return nil, err
		}
		return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	if !m.Kind.Valid() {
		return nil, fmt.Errorf("%w: unknown %v", ErrMalformed, m.Kind)
	}
	return m, nil
}

// closeWait bounds how long Close may spend sending what is queued to a
// peer that does not read it.
const closeWait = 5 * time.Second

// Close sends what is queued, then closes the connection; the calls
// waiting fail with ErrClosed. A peer that reads nothing costs it
// closeWait at most: what it did not take is dropped.
func (l *Link) Close() {
	l.conn.SetWriteDeadline(time.Now().Add(closeWait))
	l.stop()
	l.conn.Close()
	l.callMu.Lock()
	for id, ch := range l.waiting {
		close(ch)
		delete(l.waiting, id)
	}
	l.callMu.Unlock()
}

// stop sends what is queued and ends the writer, leaving the connection
// open.
func (l *Link) stop() {
	l.mu.Lock()
	if !l.done {
		l.done = true
		close(l.out)
	}
	l.mu.Unlock()
	<-l.wrote
}

// Done is closed once the link is closed and what was queued before is
// sent (or could not be): a message sent before the close, and whatever
// its peer does on it, happened by then.
func (l *Link) Done() <-chan struct{} { return l.wrote }

// Hello reads the first message of a link, which must be a hello.
func (l *Link) Hello() (*Message, error) {
	m, err := l.Recv()
	if err != nil {
		return nil, err
	}
	if m.Kind != Hello {
		return nil, fmt.Errorf("%w: first message is %v, not hello", ErrMalformed, m.Kind)
	}
	return m, nil
}

// frames passes a gob stream through, reading each message's length
// before its bytes and refusing one longer than MaxMessage. A gob stream
// is a sequence of messages, each an unsigned count then that many bytes;
// a count below 128 is its one byte, a larger one a byte of minus its
// length in bytes, then those bytes, big-endian.
type frames struct {
	r *bufio.Reader
	// head is what is left of the count this frame began with; left is
	// how many of its message's bytes are still to come.
	head []byte
	left uint64
	buf  [9]byte
	// err is the first error of the connection or of a count, which the
	// decoder may wrap.
	err error
}

// Read implements io.Reader.
func (f *frames) Read(p []byte) (int, error) {
	if f.err != nil {
		return 0, f.err
	}
	if len(p) == 0 {
		return 0, nil
	}
	if len(f.head) == 0 && f.left == 0 {
		if err := f.count(); err != nil {
			f.err = err
			return 0, err
		}
	}
	if len(f.head) > 0 {
		n := copy(p, f.head)
		f.head = f.head[n:]
		return n, nil
	}
	n, err := f.r.Read(p[:min(uint64(len(p)), f.left)])
	f.left -= uint64(n)
	if err == io.EOF && f.left > 0 {
		err = io.ErrUnexpectedEOF // the connection ended inside a message
	}
	if err != nil {
		f.err = err
	}
	return n, err
}

// ReadByte implements io.ByteReader, so that gob reads through frames
// without a buffer of its own.
func (f *frames) ReadByte() (byte, error) {
	var b [1]byte
	for {
		n, err := f.Read(b[:])
		if n == 1 {
			return b[0], nil
		}
		if err != nil {
			return 0, err
		}
	}
}

// count reads the next message's count and checks it.
func (f *frames) count() error {
	b, err := f.r.ReadByte()
	if err != nil {
		return err
	}
	f.buf[0] = b
	if b < 0x80 {
		f.head, f.left = f.buf[:1], uint64(b)
		return nil
	}
	width := -int(int8(b))
	if width > 8 {
		return fmt.Errorf("%w: a count of %d bytes", ErrMalformed, width)
	}
	if _, err := io.ReadFull(f.r, f.buf[1:1+width]); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return err
	}
	var n uint64
	for _, c := range f.buf[1 : 1+width] {
		n = n<<8 | uint64(c)
	}
	if n > MaxMessage {
		return fmt.Errorf("%w: %d bytes, more than %d", ErrTooLarge, n, MaxMessage)
	}
	f.head, f.left = f.buf[:1+width], n
	return nil
}
