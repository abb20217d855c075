package history

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
)

// ErrFormat reports a history file this build cannot read, or one it
// cannot trust: cut short, with fields it does not know, or with
// instants that cannot have happened.
var ErrFormat = errors.New("history: bad format")

// preamble is the first line of a history file.
type preamble struct {
	Header Header  `json:"header"`
	Final  Final   `json:"final"`
	Faults []Fault `json:"faults,omitempty"`
}

// Trailer is the last line of a history file: it says how many operations
// the file holds, so that a file cut at a line boundary (a disk that
// filled, a copy interrupted) is told from a complete one.
type Trailer struct {
	// Ops is the number of operation lines before the trailer.
	Ops int `json:"ops"`
}

// trailerLine is the trailer's line, {"trailer":{...}}.
type trailerLine struct {
	Trailer *Trailer `json:"trailer"`
}

// trailerPrefix starts the trailer's line and no operation's.
var trailerPrefix = []byte(`{"trailer"`)

// Write encodes h as JSON lines: a first line with the header, the final
// state and the faults, one line per operation, and a trailer that counts
// them.
func Write(w io.Writer, h *History) error {
	bw := bufio.NewWriterSize(w, 1<<16)
	enc := json.NewEncoder(bw)
	if err := enc.Encode(preamble{Header: h.Header, Final: h.Final, Faults: h.Faults}); err != nil {
		return err
	}
	for i := range h.Ops {
		if err := enc.Encode(&h.Ops[i]); err != nil {
			return err
		}
	}
	if err := enc.Encode(trailerLine{Trailer: &Trailer{Ops: len(h.Ops)}}); err != nil {
		return err
	}
	return bw.Flush()
}

// Read decodes a history written by Write and checks that it can be
// trusted: every line complete and of known fields, the trailer present
// and counting the operations read, every operation's instants possible
// (see Validate). Anything else is ErrFormat, naming the line or the
// operation.
func Read(r io.Reader) (*History, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<16), 64<<20)
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
	if p.Header.Schema < OldestSchema || p.Header.Schema > SchemaVersion {
		return nil, fmt.Errorf("%w: schema %d, this build reads %d to %d (histories of schema 1 have no trailer to prove them complete: run the sale again)", ErrFormat, p.Header.Schema, OldestSchema, SchemaVersion)
	}
	h := &History{Header: p.Header, Final: p.Final, Faults: p.Faults}
	var tr *Trailer
	line := 1
	for sc.Scan() {
		line++
		b := sc.Bytes()
		if tr != nil {
			return nil, fmt.Errorf("%w: line %d follows the trailer", ErrFormat, line)
		}
		if bytes.HasPrefix(b, trailerPrefix) {
			var t trailerLine
			if err := strict(b, &t); err != nil || t.Trailer == nil {
				return nil, fmt.Errorf("%w: line %d: bad trailer: %v", ErrFormat, line, err)
			}
			tr = t.Trailer
			continue
		}
		var op Op
		if err := strict(b, &op); err != nil {
			return nil, fmt.Errorf("%w: operation %d (line %d): %v", ErrFormat, len(h.Ops)+1, line, err)
		}
		h.Ops = append(h.Ops, op)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%w: line %d: %v", ErrFormat, line+1, err)
	}
	switch {
	case tr == nil:
		return nil, fmt.Errorf("%w: incomplete: no trailer after %d operations (the file was cut short%s)", ErrFormat, len(h.Ops), cutNote(h))
	case tr.Ops != len(h.Ops):
		return nil, fmt.Errorf("%w: incomplete: the trailer counts %d operations, the file holds %d", ErrFormat, tr.Ops, len(h.Ops))
	}
	if err := Validate(h); err != nil {
		return nil, err
	}
	return h, nil
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
func WriteFile(path string, h *History) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := Write(f, h); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// ReadFile reads the history at path.
func ReadFile(path string) (*History, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	h, err := Read(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return h, nil
}
