package history

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadRefusesUntrustworthy: planted edits of a saved history are
// refused as a bad format naming what is wrong, never read as data.
func TestReadRefusesUntrustworthy(t *testing.T) {
	tests := []struct {
		file string
		want string
	}{
		{"bad-truncated.jsonl", "incomplete: no trailer after 5 operations"},
		{"bad-header-only.jsonl", "incomplete: no trailer after 0 operations"},
		{"bad-trailer-count.jsonl", "the trailer counts 12 operations, the file holds 8"},
		{"bad-read-before-call.jsonl", "operation 3 (client 1, attempt 0): read_return 21500000 is before read_call 22000000"},
		{"bad-negative.jsonl", "operation 2 (client 7, attempt 0): end is negative"},
		{"bad-unknown-field.jsonl", `operation 4 (line 5): json: unknown field "stok"`},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			h, err := ReadFile(filepath.Join("testdata", tt.file))
			if !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("ReadFile = %v, %v; want ErrFormat saying %q", h, err, tt.want)
			}
		})
	}
}

// TestRoundTrip: what Write writes, Read reads back whole and trusts.
func TestRoundTrip(t *testing.T) {
	h, err := ReadFile(filepath.Join("testdata", "ok.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := Write(&buf, h); err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(filepath.Join("testdata", "ok.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf.Bytes(), want) {
		t.Errorf("Write(Read(ok.jsonl)) differs from the file:\n%s", buf.String())
	}
	again, err := Read(&buf)
	if err != nil || len(again.Ops) != len(h.Ops) {
		t.Fatalf("Read(Write(h)) = %d ops, %v; want %d", len(again.Ops), err, len(h.Ops))
	}
}

// TestValidate: each kind of impossible instant is named.
func TestValidate(t *testing.T) {
	good := Op{Client: 3, Arrival: 10, Start: 11, AcquireCall: 12, Acquired: 13, ReadCall: 14, ReadReturn: 15,
		WriteCall: 16, WriteReturn: 17, ReleaseCall: 18, Released: 19, End: 20, Write: Applied, Outcome: Sold}
	tests := []struct {
		name string
		edit func(*Op)
		eps  int64  // the header's clock error
		want string // "" for valid
	}{
		{"good", func(*Op) {}, 0, ""},
		{"acquired before its call", func(o *Op) { o.Acquired = 11 }, 0, "acquired 11 is before acquire_call 12"},
		{"write answered before sent", func(o *Op) { o.WriteReturn = 15 }, 0, "write_return 15 is before write_call 16"},
		{"released before its call", func(o *Op) { o.Released = 17 }, 0, "released 17 is before release_call 18"},
		{"start before arrival", func(o *Op) { o.Start = 9 }, 0, "start 9 is before arrival 10"},
		{"release after the answer", func(o *Op) { o.Released = 21 }, 0, "released 21 is after end 20"},
		{"negative", func(o *Op) { o.ReadCall = -1 }, 0, "read_call is negative"},
		{"answered but pending", func(o *Op) { o.Outcome = Pending }, 0, "outcome pending with end 20"},
		{"sold without an answer", func(o *Op) { o.End = 0 }, 0, "outcome sold with end 0"},
		{"crashed before its answer", func(o *Op) { o.End, o.ReleaseCall, o.Released, o.Crash, o.Outcome = 0, 0, 0, 18, Crashed }, 0, ""},
		{"pending", func(o *Op) { o.End, o.ReleaseCall, o.Released, o.Outcome = 0, 0, 0, Pending }, 0, ""},
		// A node's steps are mapped onto the coordinator's timeline, its
		// arrival is the coordinator's own: within the clock error, a step
		// may seem to come before it.
		{"start before arrival within the clock error", func(o *Op) { o.Start = 8 }, 2, ""},
		{"start before arrival beyond the clock error", func(o *Op) { o.Start = 7 }, 2, "start 7 is before arrival 10 by more than the clock error 2"},
		{"a step's order is exact whatever the clock error", func(o *Op) { o.Acquired = 11 }, 2, "acquired 11 is before acquire_call 12"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			op := good
			tt.edit(&op)
			err := Validate(&History{Header: Header{ClockError: tt.eps}, Ops: []Op{op}})
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("Validate = %v, want nil", err)
			case tt.want != "" && (!errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("Validate = %v, want ErrFormat saying %q", err, tt.want)
			}
		})
	}
}

// TestClockError: a history's clock error is written as clock_error_ns
// when there is one, left out when there is none (so that histories
// written before the field read, and are written, unchanged), read back,
// and refused when negative.
func TestClockError(t *testing.T) {
	h, err := ReadFile(filepath.Join("testdata", "ok.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if h.Header.ClockError != 0 {
		t.Fatalf("ok.jsonl, written without the field, reads ClockError %d, want 0", h.Header.ClockError)
	}
	tests := []struct {
		name    string
		eps     int64
		written string // in the header line; "" for the key left out
		refused string // "" when it reads back
	}{
		{"one clock", 0, "", ""},
		{"nodes' clocks", 1_500_000, `"clock_error_ns":1500000`, ""},
		{"negative", -1, `"clock_error_ns":-1`, "clock_error_ns -1 is out of bounds"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := *h
			c.Header.ClockError = tt.eps
			var buf bytes.Buffer
			if err := Write(&buf, &c); err != nil {
				t.Fatal(err)
			}
			head, _, _ := strings.Cut(buf.String(), "\n")
			if has := strings.Contains(head, "clock_error_ns"); has != (tt.written != "") || !strings.Contains(head, tt.written) {
				t.Errorf("header line %s, want it to hold %q", head, tt.written)
			}
			got, err := Read(&buf)
			switch {
			case tt.refused != "" && (!errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), tt.refused)):
				t.Errorf("Read = %v, want ErrFormat saying %q", err, tt.refused)
			case tt.refused == "" && err != nil:
				t.Errorf("Read = %v", err)
			case tt.refused == "" && got.Header.ClockError != tt.eps:
				t.Errorf("read back ClockError %d, want %d", got.Header.ClockError, tt.eps)
			}
		})
	}
}
