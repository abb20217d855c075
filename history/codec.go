package history

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
)

// ErrFormat reports a history file this build cannot read.
var ErrFormat = errors.New("history: bad format")

// preamble is the first line of a history file.
type preamble struct {
	Header Header  `json:"header"`
	Final  Final   `json:"final"`
	Faults []Fault `json:"faults,omitempty"`
}

// Write encodes h as JSON lines: a first line with the header, the final
// state and the faults, then one line per operation.
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
	return bw.Flush()
}

// Read decodes a history written by Write.
func Read(r io.Reader) (*History, error) {
	dec := json.NewDecoder(bufio.NewReaderSize(r, 1<<16))
	var p preamble
	if err := dec.Decode(&p); err != nil {
		return nil, fmt.Errorf("%w: first line: %v", ErrFormat, err)
	}
	if p.Header.Schema != SchemaVersion {
		return nil, fmt.Errorf("%w: schema %d, this build reads %d", ErrFormat, p.Header.Schema, SchemaVersion)
	}
	h := &History{Header: p.Header, Final: p.Final, Faults: p.Faults}
	for {
		var op Op
		err := dec.Decode(&op)
		if err == io.EOF {
			return h, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%w: operation %d: %v", ErrFormat, len(h.Ops)+1, err)
		}
		h.Ops = append(h.Ops, op)
	}
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
