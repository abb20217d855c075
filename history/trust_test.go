package history

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"runtime/debug"
	"strings"
	"syscall"
	"testing"
	"testing/iotest"
)

// okLines returns testdata/ok.jsonl's lines before its trailer.
func okLines(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "ok.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	return lines[:len(lines)-1]
}

// rewrite re-encodes lines as a history whose trailer counts them and
// carries their digest: an edit made by someone who fixed the trailer.
func rewrite(t *testing.T, lines []string) []byte {
	t.Helper()
	h, err := Read(strings.NewReader(strings.Join(lines, "\n") + "\n" + `{"trailer":{"ops":` + fmt.Sprint(len(lines)-1) + `}}` + "\n"))
	if err == nil {
		// Schema 3 needs a digest: Read cannot have passed.
		t.Fatalf("a schema 3 history without a digest read: %d ops", len(h.Ops))
	}
	var buf bytes.Buffer
	for _, l := range lines {
		buf.WriteString(l + "\n")
	}
	sum := digestOf(buf.Bytes())
	fmt.Fprintf(&buf, `{"trailer":{"ops":%d,"sha256":"%s"}}`+"\n", len(lines)-1, sum)
	return buf.Bytes()
}

// TestReadRefusesEdits: a history whose records do not cover the buyers
// its header declares, or whose numbers are out of bounds, is refused
// naming what is wrong, even with its trailer fixed up to match.
func TestReadRefusesEdits(t *testing.T) {
	tests := []struct {
		name string
		edit func([]string) []string
		want string
	}{
		{"a buyer deleted", func(l []string) []string { return append(l[:3:3], l[4:]...) }, "the header declares 8 buyers, the file holds 7 operations"},
		{"a sold-out line twice", func(l []string) []string { return append(l, l[len(l)-1]) }, "buyer 6's attempt 0 is recorded twice"},
		{"a buyer beyond the header's", func(l []string) []string {
			return append(l, strings.Replace(l[len(l)-1], `"client":6`, `"client":8`, 1))
		}, "client 8 is out of bounds [0, 7]"},
		{"an attempt without its first", func(l []string) []string {
			l[1] = strings.Replace(l[1], `"attempt":0`, `"attempt":1`, 1)
			return l
		}, "buyer 0 has no record of its first attempt"},
		{"an attempt beyond the header's", func(l []string) []string {
			return append(l, strings.Replace(l[1], `"attempt":0`, `"attempt":2`, 1))
		}, "attempt 2 is out of bounds [0, 1]"},
		{"a second attempt recorded twice", func(l []string) []string {
			a := strings.Replace(l[1], `"attempt":0`, `"attempt":1`, 1)
			return append(l, a, a)
		}, "buyer 0's attempt 1 is recorded twice"},
		{"a node beyond the header's", func(l []string) []string {
			l[1] = strings.Replace(l[1], `"node":0`, `"node":2`, 1)
			return l
		}, "node 2 is out of bounds [0, 1]"},
		{"duration at MaxInt64", func(l []string) []string {
			l[0] = strings.Replace(l[0], `"duration":100000000`, `"duration":9223372036854775807`, 1)
			return l
		}, "duration 9223372036854775807 is out of bounds"},
		{"an end at MaxInt64", func(l []string) []string {
			l[1] = strings.Replace(l[1], `"end":18000000`, `"end":9223372036854775806`, 1)
			return l
		}, "end 9223372036854775806 is beyond any run"},
		{"items at MaxInt64", func(l []string) []string {
			l[0] = strings.Replace(l[0], `"attempts":2`, `"attempts":2,"items":9223372036854775807`, 1)
			return l
		}, "items"},
		{"items 1e8", func(l []string) []string {
			l[0] = strings.Replace(l[0], `"attempts":2`, `"attempts":2,"items":100000000`, 1)
			return l
		}, "items 100000000 is out of bounds [0, 1000]"},
		{"clients 1e9", func(l []string) []string {
			l[0] = strings.Replace(l[0], `"clients":8`, `"clients":1000000000`, 1)
			return l
		}, "the header declares 1000000000 buyers, the file holds 8 operations"},
		{"a starved span beyond any run", func(l []string) []string {
			l[0] = strings.Replace(l[0], `"commands":0`, `"commands":0,"health":{"node":-1,"elapsed_ns":1,"cpus":1,"cpu_use":0,"cpu_wait":0,"others":0,"stall_max_ns":0,"stall_p99_ns":0,"sched_latency_p99_ns":0,"sched_latency_max_ns":0,"gc_pause_max_ns":0,"gc_pause_total_ns":0,"arrival_lag_p99_ns":0,"arrival_lag_max_ns":0,"starved":[{"from":0,"to":9223372036854775807}]}`, 1)
			return l
		}, "starved span: to 9223372036854775807 is out of bounds"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := rewrite(t, tt.edit(okLines(t)))
			h, err := Read(bytes.NewReader(b))
			if !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Read = %v, %v; want ErrFormat saying %q", h, err, tt.want)
			}
		})
	}
}

// TestDigest: a history edited after it was written, its trailer left
// alone, is refused as ErrDigest; a schema 3 history without a digest is
// refused; one of schema 2, written before digests, still reads.
func TestDigest(t *testing.T) {
	ok, err := os.ReadFile(filepath.Join("testdata", "ok.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	legacy, err := os.ReadFile(filepath.Join("testdata", "ok-schema2.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	noDigest := regexpTrailer(ok, `{"trailer":{"ops":8}}`)
	tests := []struct {
		name string
		b    []byte
		want error
	}{
		{"as written", ok, nil},
		{"a sale edited", bytes.Replace(ok, []byte(`"outcome":"sold-out"`), []byte(`"outcome":"gave-up"`), 1), ErrDigest},
		{"a byte flipped in the header", bytes.Replace(ok, []byte(`"stock":5`), []byte(`"stock":6`), 1), ErrDigest},
		{"schema 3 without a digest", noDigest, ErrDigest},
		{"schema 2 without a digest", legacy, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Read(bytes.NewReader(tt.b))
			if tt.want == nil && err != nil || tt.want != nil && (!errors.Is(err, tt.want) || !errors.Is(err, ErrFormat)) {
				t.Fatalf("Read = %v, want %v", err, tt.want)
			}
		})
	}
}

// regexpTrailer replaces b's last line with trailer.
func regexpTrailer(b []byte, trailer string) []byte {
	s := strings.TrimSuffix(string(b), "\n")
	return []byte(s[:strings.LastIndex(s, "\n")+1] + trailer + "\n")
}

// TestSignature: a history written with a key reads back with it; read
// with another key, or unsigned, or signed and then edited with its
// digest fixed up, it is refused as ErrSignature.
func TestSignature(t *testing.T) {
	h, err := ReadFile(filepath.Join("testdata", "ok.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	key, other := Key("0123456789abcdef-run"), Key("0123456789abcdef-not")
	var signed, unsigned bytes.Buffer
	if err := key.Write(&signed, h); err != nil {
		t.Fatal(err)
	}
	if err := Write(&unsigned, h); err != nil {
		t.Fatal(err)
	}
	// The sale edited and the digest recomputed, the signature kept.
	edited := *h
	edited.Ops = append([]Op(nil), h.Ops...)
	edited.Ops[0].Outcome = GaveUp
	var forged bytes.Buffer
	if err := Write(&forged, &edited); err != nil {
		t.Fatal(err)
	}
	sig := signed.String()[strings.LastIndex(signed.String(), `,"hmac_sha256"`):]
	forgedB := regexpTrailer(forged.Bytes(), strings.TrimSuffix(lastLine(forged.Bytes()), "}}")+sig[:len(sig)-1])
	tests := []struct {
		name string
		b    []byte
		key  Key
		want error
	}{
		{"signed, read with its key", signed.Bytes(), key, nil},
		{"signed, read without a key", signed.Bytes(), nil, nil},
		{"signed, read with another key", signed.Bytes(), other, ErrSignature},
		{"unsigned, read with a key", unsigned.Bytes(), key, ErrSignature},
		{"edited, digest fixed, signature kept", forgedB, key, ErrSignature},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.key.Read(bytes.NewReader(tt.b))
			if tt.want == nil && err != nil || tt.want != nil && !errors.Is(err, tt.want) {
				t.Fatalf("Read = %v, want %v", err, tt.want)
			}
		})
	}
}

// lastLine is b's last line, without its newline.
func lastLine(b []byte) string {
	s := strings.TrimSuffix(string(b), "\n")
	return s[strings.LastIndex(s, "\n")+1:]
}

// TestReadFileRegularOnly: a FIFO, a directory or a device named like a
// history is refused at once, never waited on or read.
func TestReadFileRegularOnly(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "none.history.jsonl")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("cannot make a FIFO here: %v", err)
	}
	for _, path := range []string{fifo, dir, "/dev/zero"} {
		if _, err := ReadFile(path); !errors.Is(err, ErrNotRegular) {
			t.Errorf("ReadFile(%s) = %v, want ErrNotRegular", path, err)
		}
	}
}

// TestCheckClock: a clock error larger than the run measured is refused
// unless the reader allows as much.
func TestCheckClock(t *testing.T) {
	tests := []struct {
		name                   string
		eps, measured, allowed int64
		want                   error
	}{
		{"one clock", 0, 0, 0, nil},
		{"measured", 1_000_000, 1_000_000, 0, nil},
		{"added to the header", 1_000_000, 0, 0, ErrClockError},
		{"more than measured", 2_000_000, 1_000_000, 0, ErrClockError},
		{"allowed on the command line", 1_000_000, 0, 1_000_000, nil},
		{"more than allowed", 2_000_000, 0, 1_000_000, ErrClockError},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := &History{Header: Header{ClockError: tt.eps, ClockMeasured: tt.measured}}
			if err := CheckClock(h, tt.allowed); !errors.Is(err, tt.want) {
				t.Fatalf("CheckClock = %v, want %v", err, tt.want)
			}
		})
	}
}

// digestOf is the hex SHA-256 of b.
func digestOf(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// TestDigestWhateverTheReads: the digest, computed beside the decoding
// on chunks as they are read, is the same however the reads are cut.
func TestDigestWhateverTheReads(t *testing.T) {
	ok, err := os.ReadFile(filepath.Join("testdata", "ok.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		r    io.Reader
	}{
		{"one byte at a time", iotest.OneByteReader(bytes.NewReader(ok))},
		{"half of each read", iotest.HalfReader(bytes.NewReader(ok))},
		{"data with EOF", iotest.DataErrReader(bytes.NewReader(ok))},
		{"whole", bytes.NewReader(ok)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := Read(tt.r); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestReadFileHeldRestoresCollector: ReadFileHeld holds the garbage
// collector off only while it reads, whether the history is read or
// refused, and reads what ReadFile reads.
func TestReadFileHeldRestoresCollector(t *testing.T) {
	for _, name := range []string{"ok.jsonl", "bad-negative.jsonl"} {
		path := filepath.Join("testdata", name)
		pct := debug.SetGCPercent(77)
		limit := debug.SetMemoryLimit(1 << 40)
		h, err := Key(nil).ReadFileHeld(path)
		gotPct, gotLimit := debug.SetGCPercent(pct), debug.SetMemoryLimit(limit)
		if gotPct != 77 || gotLimit != 1<<40 {
			t.Errorf("%s: GC percent %d, memory limit %d after reading; want 77, %d", name, gotPct, gotLimit, int64(1<<40))
		}
		// A process's own limit, lower than the reader's, is kept.
		debug.SetMemoryLimit(64 << 20)
		if _, err := Key(nil).ReadFileHeld(path); err == nil && debug.SetMemoryLimit(limit) != 64<<20 {
			t.Errorf("%s: a memory limit of 64 MiB was not restored", name)
		}
		debug.SetMemoryLimit(limit)
		want, wantErr := ReadFile(path)
		if fmt.Sprint(err) != fmt.Sprint(wantErr) || !reflect.DeepEqual(h, want) {
			t.Errorf("%s: ReadFileHeld = %v, ReadFile = %v", name, err, wantErr)
		}
	}
}
