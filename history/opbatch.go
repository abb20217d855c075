package history

import (
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
)

// Operation lines are decoded beside the reading: the reader scans the
// lines, hands them in batches to a few workers, and each worker decodes
// its batch into the operations' own slots, so that a history is decoded
// on every core while the digest is computed beside it. What is read,
// and the error a bad line gets, are those of decoding the lines one
// after another: the first line of the file that fails is the one named.

// Bounds on one batch: what it holds is copied out of the scanner's
// buffer. A line longer than bigLine is decoded by the reader itself,
// so that no batch grows past batchBytes and a line.
const (
	batchBytes = 256 << 10
	batchLines = 2048
	bigLine    = 16 << 10
)

// maxDecoders bounds the workers decoding one history.
const maxDecoders = 4

// opBatch is a run of operation lines, one after another, and the slots
// of the history's operations they decode into.
type opBatch struct {
	buf   []byte // the lines
	ends  []int  // where each line ends in buf
	ops   []Op   // the slots, set when the batch is sent
	first int    // the index of the first line's operation
	line  int    // the first line's number in the file
}

// opDecoders decodes the operation lines of one history on a few
// workers.
type opDecoders struct {
	work    chan *opBatch
	free    chan *opBatch // batches decoded, to be filled again
	pending sync.WaitGroup
	workers sync.WaitGroup
	cur     *opBatch // the batch being filled

	failed  atomic.Bool // a line failed: the reader stops
	mu      sync.Mutex
	errLine int
	err     error

	// Each operation is validated as it is decoded (validItem), so that
	// Read's validation starts at the first found invalid.
	items   int
	eps     int64
	invalid int // the first operation found invalid; -1 for none
}

// newOpDecoders starts the workers decoding the operations of h, whose
// header is read; close stops them.
func newOpDecoders(h *History) *opDecoders {
	n := min(runtime.GOMAXPROCS(0), maxDecoders)
	d := &opDecoders{work: make(chan *opBatch, n), free: make(chan *opBatch, 2*n+1),
		items: h.Header.ItemCount(), eps: h.Header.ClockError, invalid: -1}
	d.workers.Add(n)
	for range n {
		go d.run()
	}
	return d
}

// add makes the next operation of h the one line b, the file's line
// number line, decodes: on a worker, or at once when the line is long.
func (d *opDecoders) add(h *History, b []byte, line int) {
	if len(h.Ops) == cap(h.Ops) {
		// More operations than preallocated: the slots move, so every
		// batch sent must be decoded first.
		d.flush(h)
		d.pending.Wait()
		h.Ops = slices.Grow(h.Ops, 1)
	}
	h.Ops = h.Ops[:len(h.Ops)+1]
	i := len(h.Ops) - 1
	if len(b) > bigLine {
		d.flush(h)
		d.decode(b, h.Ops[i:i+1], i, line)
		return
	}
	if d.cur == nil {
		select {
		case d.cur = <-d.free:
		default:
			d.cur = &opBatch{}
		}
		d.cur.first, d.cur.line = i, line
	}
	c := d.cur
	c.buf = append(c.buf, b...)
	c.ends = append(c.ends, len(c.buf))
	if len(c.buf) >= batchBytes || len(c.ends) >= batchLines {
		d.flush(h)
	}
}

// flush sends the batch being filled to the workers.
func (d *opDecoders) flush(h *History) {
	c := d.cur
	if c == nil {
		return
	}
	d.cur = nil
	c.ops = h.Ops[c.first : c.first+len(c.ends)]
	d.pending.Add(1)
	d.work <- c
}

// wait decodes every line added and returns the error of the first line
// that failed, or nil.
func (d *opDecoders) wait(h *History) error {
	d.flush(h)
	d.pending.Wait()
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.err
}

// first returns, of err (the reader's, at a line after every line added)
// and the error of the first line that failed to decode, the earlier.
func (d *opDecoders) first(h *History, err error) error {
	if derr := d.wait(h); derr != nil {
		return derr
	}
	return err
}

// close stops the workers, once every batch sent is decoded.
func (d *opDecoders) close() {
	close(d.work)
	d.workers.Wait()
}

// run decodes batches until close.
func (d *opDecoders) run() {
	defer d.workers.Done()
	for c := range d.work {
		from := 0
		for k, end := range c.ends {
			if !d.decode(c.buf[from:end], c.ops[k:k+1], c.first+k, c.line+k) {
				break
			}
			from = end
		}
		c.buf, c.ends, c.ops = c.buf[:0], c.ends[:0], nil
		select {
		case d.free <- c:
		default:
		}
		d.pending.Done()
	}
}

// decode decodes line b, the file's line number line, into op[0], the
// history's operation i, and validates it; it reports false if the line
// failed.
func (d *opDecoders) decode(b []byte, op []Op, i, line int) bool {
	if err := decodeLine(b, &op[0]); err != nil {
		d.fail(line, i, err)
		return false
	}
	if validItem(&op[0], d.items, d.eps) != nil {
		d.mu.Lock()
		if d.invalid < 0 || i < d.invalid {
			d.invalid = i
		}
		d.mu.Unlock()
	}
	return true
}

// validFrom is where the operations' validation is to start: the first
// operation found invalid, or past the last.
func (d *opDecoders) validFrom(h *History) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.invalid < 0 {
		return len(h.Ops)
	}
	return d.invalid
}

// fail records that line, operation i, failed with err, if no earlier
// line did.
func (d *opDecoders) fail(line, i int, err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.err == nil || line < d.errLine {
		d.err = fmt.Errorf("%w: operation %d (line %d): %v", ErrFormat, i+1, line, err)
		d.errLine = line
	}
	d.failed.Store(true)
}

// decodeLine decodes one operation line into op: without reflection as
// the writer writes it, else with encoding/json, which names the fault.
func decodeLine(b []byte, op *Op) error {
	if decodeOp(b, op) {
		return nil
	}
	*op = Op{}
	return strict(b, op)
}
