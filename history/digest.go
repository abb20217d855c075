package history

import (
	"bufio"
	"crypto/sha256"
	"io"
)

// maxTrailer bounds the trailer's line, newline included: a digest and
// a signature in hex, and a count, are well under it.
const maxTrailer = 1024

// digester hashes what is read through it on a goroutine of its own, so
// that reading a history costs its decoding, with the digest computed
// beside it on another core. The trailer's line is not part of the
// digest, and its place is only known once it is read: the last
// maxTrailer bytes read are held back until Sum says where the records
// end.
type digester struct {
	r      io.Reader
	chunks chan []byte
	free   chan []byte // chunks hashed, to be filled again
	limit  chan int64
	sum    chan []byte
	done   bool
}

// newDigester starts hashing what is read from r.
func newDigester(r io.Reader) *digester {
	d := &digester{r: r, chunks: make(chan []byte, 16), free: make(chan []byte, 17), limit: make(chan int64, 1), sum: make(chan []byte, 1)}
	go d.run()
	return d
}

// Read reads from the underlying reader and hands a copy of what it read
// to the hashing goroutine.
func (d *digester) Read(p []byte) (int, error) {
	n, err := d.r.Read(p)
	if n > 0 {
		var c []byte
		select {
		case c = <-d.free:
		default:
		}
		d.chunks <- append(c[:0], p[:n]...)
	}
	return n, err
}

// Sum stops the digester and returns the SHA-256 of the first n bytes
// read: nil when n < 0, or when n is not within the bytes held back (the
// records end more than maxTrailer bytes before the last byte read).
// Later calls return nil.
func (d *digester) Sum(n int64) []byte {
	if d.done {
		return nil
	}
	d.done = true
	close(d.chunks)
	d.limit <- n
	return <-d.sum
}

// run hashes the chunks read, all but the last maxTrailer bytes, then up
// to the limit Sum gives.
func (d *digester) run() {
	h := sha256.New()
	var held []byte
	var hashed int64
	for c := range d.chunks {
		if k := len(held) + len(c) - maxTrailer; k > 0 {
			from := min(k, len(held))
			h.Write(held[:from])
			if rest := k - from; rest > 0 {
				h.Write(c[:rest])
				held = append(held[:0], c[rest:]...)
			} else {
				held = append(held[:0], held[from:]...)
				held = append(held, c...)
			}
			hashed += int64(k)
		} else {
			held = append(held, c...)
		}
		select {
		case d.free <- c:
		default:
		}
	}
	n := <-d.limit
	if n < hashed || n > hashed+int64(len(held)) {
		d.sum <- nil
		return
	}
	h.Write(held[:n-hashed])
	d.sum <- h.Sum(nil)
}

// lineScanner scans the lines of r, knowing where each line it returns
// starts in r.
type lineScanner struct {
	*bufio.Scanner
	pos   int64 // bytes of r consumed
	start int64 // where the last line returned starts
}

// newLineScanner scans r's lines of up to maxLine bytes.
func newLineScanner(r io.Reader) *lineScanner {
	s := &lineScanner{Scanner: bufio.NewScanner(r)}
	s.Buffer(make([]byte, 0, 1<<16), maxLine)
	s.Split(func(data []byte, atEOF bool) (int, []byte, error) {
		adv, tok, err := bufio.ScanLines(data, atEOF)
		if tok != nil {
			s.start = s.pos
			s.pos += int64(adv)
		}
		return adv, tok, err
	})
	return s
}
