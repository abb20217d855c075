package history

import (
	"bufio"
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"syscall"
)

// ErrFormat reports a history file this build cannot read, or one it
// cannot trust: cut short, with fields it does not know, with values out
// of bounds, with records that do not cover the buyers its header
// declares, or with instants that cannot have happened.
var ErrFormat = errors.New("history: bad format")

// ErrDigest reports a history whose records do not hash to the digest its
// trailer carries: the file was edited or corrupted after it was written.
// It is also an ErrFormat.
var ErrDigest = errors.New("history: digest mismatch")

// ErrSignature reports a history whose signature is missing, or does not
// match the key it was read with: it was not written by a run holding
// that key, or was edited since. It is also an ErrFormat.
var ErrSignature = errors.New("history: signature")

// ErrNotRegular reports a path that is not a regular file (a FIFO, a
// device, a directory): a history is only ever read from a regular file,
// so that reading one can neither block nor run forever.
var ErrNotRegular = errors.New("history: not a regular file")

// preamble is the first line of a history file.
type preamble struct {
	Header Header  `json:"header"`
	Final  Final   `json:"final"`
	Faults []Fault `json:"faults,omitempty"`
}

// Trailer is the last line of a history file: it says how many operations
// the file holds, so that a file cut at a line boundary (a disk that
// filled, a copy interrupted) is told from a complete one, and carries
// the digest of every line before it, so that an edited or corrupted one
// is told from the one written.
type Trailer struct {
	// Ops is the number of operation lines before the trailer.
	Ops int `json:"ops"`
	// SHA256 is the SHA-256 of every line before the trailer, each with
	// its newline, in hex. Required from schema 3 on; histories of
	// schema 2 were written without it.
	SHA256 string `json:"sha256,omitempty"`
	// HMAC is, for a history written with a key, HMAC-SHA256 under the
	// key of signedPrefix followed by the digest's 32 bytes, in hex.
	HMAC string `json:"hmac_sha256,omitempty"`
}

// signedPrefix is what the signature covers before the digest: it ties
// a signature to this use of the key.
const signedPrefix = "lockbench history\n"

// trailerLine is the trailer's line, {"trailer":{...}}.
type trailerLine struct {
	Trailer *Trailer `json:"trailer"`
}

// trailerPrefix starts the trailer's line and no operation's.
var trailerPrefix = []byte(`{"trailer"`)

// Key is a secret that signs the histories written with it and verifies
// the signature of those read with it (HMAC-SHA256 over the records'
// digest). A nil Key signs nothing, and reads a history without checking
// its signature: its digest is checked all the same.
type Key []byte

// MinKeyLen is the shortest key accepted for signing: 16 bytes, 128 bits.
const MinKeyLen = 16

// sign is the trailer's HMAC of the records whose digest is sum.
func (k Key) sign(sum []byte) string {
	m := hmac.New(sha256.New, k)
	m.Write([]byte(signedPrefix))
	m.Write(sum)
	return hex.EncodeToString(m.Sum(nil))
}

// Write encodes h as JSON lines: a first line with the header, the final
// state and the faults, one line per operation, and a trailer that counts
// them and carries their digest.
func Write(w io.Writer, h *History) error { return Key(nil).Write(w, h) }

// Write encodes h as the package's Write does, and signs it when k is
// not empty.
func (k Key) Write(w io.Writer, h *History) error {
	bw := bufio.NewWriterSize(w, 1<<16)
	sum := sha256.New()
	enc := json.NewEncoder(io.MultiWriter(bw, sum))
	if err := enc.Encode(preamble{Header: h.Header, Final: h.Final, Faults: h.Faults}); err != nil {
		return err
	}
	for i := range h.Ops {
		if err := enc.Encode(&h.Ops[i]); err != nil {
			return err
		}
	}
	d := sum.Sum(nil)
	tr := &Trailer{Ops: len(h.Ops), SHA256: hex.EncodeToString(d)}
	if len(k) > 0 {
		tr.HMAC = k.sign(d)
	}
	if err := json.NewEncoder(bw).Encode(trailerLine{Trailer: tr}); err != nil {
		return err
	}
	return bw.Flush()
}

// Read decodes a history written by Write and checks that it can be
// trusted: every line complete and of known fields, every value within
// its bounds (CheckHeader), the trailer present, counting the operations
// read and carrying their digest, every operation's instants possible
// (Validate), the records covering exactly the buyers and attempts the
// header declares (CheckCoverage). Anything else is ErrFormat, naming the
// line or the operation; a digest that does not match is ErrDigest too.
func Read(r io.Reader) (*History, error) { return Key(nil).read(r, -1) }

// Read reads a history as the package's Read does and, when k is not
// empty, verifies its signature: a history without one, or with one that
// k did not make, is ErrSignature.
func (k Key) Read(r io.Reader) (*History, error) { return k.read(r, -1) }

// minOpLine is the shortest operation line the writer writes (client,
// attempt, node, arrival, stock, write and outcome are always there): the
// operations are preallocated for no more than a file of size bytes can
// hold of such lines, whatever its header claims.
const minOpLine = 64

// maxLine bounds one line of a history.
const maxLine = 64 << 20

// read reads a history of size bytes (-1 when not known).
func (k Key) read(r io.Reader, size int64) (*History, error) {
	dg := newDigester(r)
	defer dg.Sum(-1)
	sc := newLineScanner(dg)
	if !sc.Scan() {
		if err := sc.Err(); err != nil {
			return nil, fmt.Errorf("%w: first line: %v", ErrFormat, err)
		}
		return nil, fmt.Errorf("%w: empty file", ErrFormat)
	}
	var p preamble
	if err := strict(sc.Bytes(), &p); err != nil {
		return nil, fmt.Errorf("%w: first line: %v", ErrFormat, err)
	}
	if p.Header.Schema != SchemaVersion && p.Header.Schema != legacySchema {
		return nil, fmt.Errorf("%w: schema %d, this build reads %d and %d (histories of schema 1 have no trailer to prove them complete: run the sale again)", ErrFormat, p.Header.Schema, legacySchema, SchemaVersion)
	}
	if err := CheckHeader(&p.Header); err != nil {
		return nil, err
	}
	if err := checkFinal(&p.Final, p.Header.ItemCount()); err != nil {
		return nil, err
	}
	h := &History{Header: p.Header, Final: p.Final, Faults: p.Faults}
	h.Ops = make([]Op, 0, prealloc(&h.Header, size))
	var tr *Trailer
	var records int64 // where the trailer's line starts: the records end there
	ops := newOpDecoders(h)
	defer ops.close()
	line := 1
	for sc.Scan() && !ops.failed.Load() {
		line++
		b := sc.Bytes()
		if tr != nil {
			return nil, ops.first(h, fmt.Errorf("%w: line %d follows the trailer", ErrFormat, line))
		}
		if bytes.HasPrefix(b, trailerPrefix) {
			if len(b) >= maxTrailer {
				return nil, ops.first(h, fmt.Errorf("%w: line %d: bad trailer: %d bytes, at most %d", ErrFormat, line, len(b), maxTrailer-1))
			}
			var t trailerLine
			if err := strict(b, &t); err != nil || t.Trailer == nil {
				return nil, ops.first(h, fmt.Errorf("%w: line %d: bad trailer: %v", ErrFormat, line, err))
			}
			tr, records = t.Trailer, sc.start
			continue
		}
		ops.add(h, b, line)
	}
	if err := sc.Err(); err != nil {
		return nil, ops.first(h, fmt.Errorf("%w: line %d: %v", ErrFormat, line+1, err))
	}
	if err := ops.wait(h); err != nil {
		return nil, err
	}
	switch {
	case tr == nil:
		return nil, fmt.Errorf("%w: incomplete: no trailer after %d operations (the file was cut short%s)", ErrFormat, len(h.Ops), cutNote(h))
	case tr.Ops != len(h.Ops):
		return nil, fmt.Errorf("%w: incomplete: the trailer counts %d operations, the file holds %d", ErrFormat, tr.Ops, len(h.Ops))
	}
	if err := k.verify(h, tr, dg.Sum(records)); err != nil {
		return nil, err
	}
	if err := validate(h, ops.validFrom(h)); err != nil {
		return nil, err
	}
	if err := CheckCoverage(h); err != nil {
		return nil, err
	}
	return h, nil
}

// prealloc is how many operations to make room for: what the header
// declares (every buyer once, and as many more attempts and cart items as
// it allows, when the file is big enough to hold them), never more than a
// file of size bytes can hold.
func prealloc(hd *Header, size int64) int {
	n := int64(hd.Clients)
	if size < 0 {
		return int(min(n, 1<<16))
	}
	most := size/minOpLine + 1
	if all := n * int64(hd.Attempts) * int64(max(1, hd.Cart)); all <= most {
		n = all
	}
	return int(min(n, most))
}

// verify checks the trailer's digest against sum, the digest of the
// records read, and, when k is not empty, its signature.
func (k Key) verify(h *History, tr *Trailer, sum []byte) error {
	want := hex.EncodeToString(sum)
	switch {
	case tr.SHA256 == "" && h.Header.Schema >= SchemaVersion:
		return fmt.Errorf("%w: %w: the trailer of a schema %d history carries no sha256", ErrFormat, ErrDigest, h.Header.Schema)
	case tr.SHA256 != "" && !hmac.Equal([]byte(tr.SHA256), []byte(want)):
		return fmt.Errorf("%w: %w: the trailer's sha256 is %.16s…, the records hash to %.16s…: the file was edited or corrupted after it was written", ErrFormat, ErrDigest, tr.SHA256, want)
	case len(k) == 0:
		return nil
	case tr.HMAC == "":
		return fmt.Errorf("%w: %w: not signed, and a key was given to verify it", ErrFormat, ErrSignature)
	case tr.SHA256 == "":
		return fmt.Errorf("%w: %w: a schema %d history has no digest to sign", ErrFormat, ErrSignature, h.Header.Schema)
	case !hmac.Equal([]byte(tr.HMAC), []byte(k.sign(sum))):
		return fmt.Errorf("%w: %w: the signature does not match the key: the history was not signed with it, or was edited since", ErrFormat, ErrSignature)
	}
	return nil
}

// cutNote says, for a truncated file, what the header knew of the run.
func cutNote(h *History) string {
	if h.Header.CutShort {
		return "; the run itself was cut short too, but its history was written whole"
	}
	return fmt.Sprintf("; the run had %d buyers", h.Header.Clients)
}

// strict decodes one JSON value from b into v, refusing fields v does not
// have: a misspelt field would otherwise decode as zero and be judged as
// data.
func strict(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("more than one JSON value on the line")
	}
	return nil
}

// WriteFile writes h to path.
func WriteFile(path string, h *History) error { return Key(nil).WriteFile(path, h) }

// WriteFile writes h to path, signed when k is not empty.
func (k Key) WriteFile(path string, h *History) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := k.Write(f, h); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// ReadFile reads the history at path, which must be a regular file.
func ReadFile(path string) (*History, error) { return Key(nil).ReadFile(path) }

// ReadFile reads the history at path as the package's ReadFile does, and
// verifies its signature when k is not empty.
func (k Key) ReadFile(path string) (*History, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	return k.readOpened(f, err, path)
}

// ReadFileHeld reads the history at path as ReadFile does, with the
// garbage collector held off while it reads, within a memory limit of
// three times the file and 256 MiB, or the process's own if lower
// (beyond it the collector runs all the same), both restored after. What reading allocates is the history's
// operations, all live: a collection while they are filled reads the
// pages not yet written, which costs each of them a second fault (a
// third of the system time of reading the 1M-buyer history). The
// settings are the process's: for a program that reads one history at a
// time and does little else meanwhile, as lockbench check.
func (k Key) ReadFileHeld(path string) (*History, error) {
	limit := int64(256 << 20)
	if st, err := os.Stat(path); err == nil {
		limit += 3 * min(st.Size(), 1<<40)
	}
	own := debug.SetMemoryLimit(-1) // a negative limit reads it
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(min(own, limit)))
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	return k.ReadFile(path)
}

// ReadFileIn reads the history name in dir, as ReadFile does, refusing a
// name that leaves dir: an absolute path, a "..", or a symbolic link out
// of it (see os.Root).
func (k Key) ReadFileIn(dir, name string) (*History, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	f, err := root.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	return k.readOpened(f, err, filepath.Join(dir, name))
}

// readOpened reads the history of f, opened from path (or not: err),
// if it is a regular file.
func (k Key) readOpened(f *os.File, err error, path string) (*History, error) {
	if err != nil {
		return nil, err
	}
	defer f.Close()
	size, err := regularSize(f, path)
	if err != nil {
		return nil, err
	}
	h, err := k.read(f, size)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return h, nil
}

// OpenRegular opens path for reading if it is a regular file (after
// symbolic links), and returns its size; anything else is ErrNotRegular.
// It opens without blocking, so that a FIFO with no writer is refused
// rather than waited on.
func OpenRegular(path string) (*os.File, int64, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, 0, err
	}
	size, err := regularSize(f, path)
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	return f, size, nil
}

// regularSize returns the size of f, opened from path, if it is a
// regular file, and ErrNotRegular otherwise.
func regularSize(f *os.File, path string) (int64, error) {
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	if !st.Mode().IsRegular() {
		return 0, fmt.Errorf("%w: %s is a %s", ErrNotRegular, path, fileKind(st.Mode()))
	}
	return st.Size(), nil
}

// fileKind names the kind of a file that is not regular.
func fileKind(m os.FileMode) string {
	switch {
	case m.IsDir():
		return "directory"
	case m&os.ModeNamedPipe != 0:
		return "named pipe (FIFO)"
	case m&os.ModeSocket != 0:
		return "socket"
	case m&os.ModeDevice != 0:
		return "device"
	}
	return "special file"
}
