package history

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// FuzzRead: no input makes Read panic, hang or allocate without bound;
// what it reads, it writes back and reads again to the same history.
// The corpus is in testdata/fuzz/FuzzRead, seeded with the fixtures.
func FuzzRead(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*.jsonl"))
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := Read(bytes.NewReader(b))
		if err != nil {
			if !errors.Is(err, ErrFormat) {
				t.Fatalf("Read = %v, not ErrFormat", err)
			}
			return
		}
		var buf bytes.Buffer
		if err := Write(&buf, h); err != nil {
			t.Fatal(err)
		}
		again, err := Read(&buf)
		if err != nil {
			t.Fatalf("Read(Write(Read(b))) = %v", err)
		}
		if !reflect.DeepEqual(again.Ops, h.Ops) && len(h.Ops) > 0 {
			t.Fatalf("the operations read back differ")
		}
	})
}

// FuzzDecodeOp: the decoder without reflection accepts no line that
// encoding/json refuses, and reads every line it accepts exactly as
// encoding/json does.
func FuzzDecodeOp(f *testing.F) {
	for _, l := range okLinesF(f) {
		f.Add([]byte(l))
	}
	for _, l := range []string{
		`{}`, ` { "client" : 1 } `, `{"client":-0}`, `{"client":01}`, `{"client":1e3}`, `{"client":2147483648}`,
		`{"token":18446744073709551615}`, `{"token":18446744073709551616}`, `{"stock":-9223372036854775808}`,
		`{"Client":1}`, `{"client":null}`, `{"outcome":"sold"}`, `{"outcome":"s\u006fld"}`, `{"shared":true,"lost":false}`,
		`{"client":1}}`, `{"client":1,}`, `{"client":1} x`, `{"end":1,"end":2}`,
		// Around the digits that cannot overflow (19) and the names'
		// byte table (DEL, a tab, a byte above ASCII).
		`{"token":9999999999999999999}`, `{"token":10000000000000000000}`, `{"token":99999999999999999999}`,
		`{"token":184467440737095516150}`, `{"end":-9223372036854775809}`, `{"end":0009}`,
		"{\"end\x7f\":1}", "{\"en\td\":1}", "{\"end\xc3\xa9\":1}", "{\"end\":1,\t\"start\" :\r\n2}",
	} {
		f.Add([]byte(l))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var fast Op
		if !decodeOp(b, &fast) {
			return
		}
		var std Op
		if err := strict(b, &std); err != nil {
			t.Fatalf("decodeOp accepted %q, encoding/json refuses it: %v", b, err)
		}
		if !reflect.DeepEqual(fast, std) {
			t.Fatalf("decodeOp read %q as %+v, encoding/json as %+v", b, fast, std)
		}
	})
}

// okLinesF returns testdata/ok.jsonl's operation lines.
func okLinesF(f *testing.F) []string {
	b, err := os.ReadFile(filepath.Join("testdata", "ok.jsonl"))
	if err != nil {
		f.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return lines[1 : len(lines)-1]
}

// TestDecodeOpWritten: every operation the writer writes is read by the
// decoder without reflection, as encoding/json reads it.
func TestDecodeOpWritten(t *testing.T) {
	ops := []Op{
		{},
		{Client: 1<<31 - 1, Attempt: -1 << 15, Node: 1<<15 - 1, Item: 999, Arrival: 1, Start: 2, AcquireCall: 3, Acquired: 4,
			ReadCall: 5, ReadReturn: 6, WriteCall: 7, WriteReturn: 8, ReleaseCall: 9, Released: 10, End: 11, Crash: 12, GrantCall: 13, Lease: 14, ServerLease: 15,
			Stock: NoStock, Token: 1<<64 - 1, Shared: true, Lost: true, Write: Indeterminate, Outcome: CartRefused},
	}
	for o := range Outcome(len(outcomeNames)) {
		ops = append(ops, Op{Outcome: o, Write: WriteState(int(o) % len(writeNames)), Stock: -int64(o)})
	}
	for _, op := range ops {
		b, err := json.Marshal(&op)
		if err != nil {
			t.Fatal(err)
		}
		var got Op
		if !decodeOp(b, &got) || !reflect.DeepEqual(got, op) {
			t.Errorf("decodeOp(%s) = %+v, want %+v", b, got, op)
		}
	}
}
