package history

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// batchedHistory is a history of buyers buyers, every third with a second
// attempt: more operations than a batch holds, and more than the header's
// buyers, so that a reader preallocating for the buyers grows its slice
// while batches are being decoded.
func batchedHistory(buyers int) *History {
	h := &History{Header: Header{Schema: SchemaVersion, Impl: "atomic", Lockless: true, Backend: "test", Nodes: 2,
		Clients: buyers, Stock: 1, Attempts: 2, Duration: 1e9}}
	for c := range buyers {
		at := int64(c+1) * 1000
		h.Ops = append(h.Ops, Op{Client: int32(c), Node: int16(c % 2), Arrival: at, Start: at + 1, ReadCall: at + 2, ReadReturn: at + 3,
			End: at + 4, Stock: 0, Outcome: SoldOut})
		if c%3 == 0 {
			h.Ops = append(h.Ops, Op{Client: int32(c), Attempt: 1, Arrival: at, Start: at + 5, End: at + 6, Stock: NoStock, Outcome: Failed})
		}
	}
	return h
}

// historyLines writes h and returns its lines, each without its newline.
func historyLines(t *testing.T, h *History) []string {
	t.Helper()
	var buf bytes.Buffer
	if err := Write(&buf, h); err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
}

// readBoth reads b as a stream (its size unknown: the operations grow
// past what the header preallocates) and as a file (preallocated whole),
// and fails unless both give the same error.
func readBoth(t *testing.T, b []byte) (*History, error) {
	t.Helper()
	h, err := Read(bytes.NewReader(b))
	path := filepath.Join(t.TempDir(), "h.jsonl")
	if werr := os.WriteFile(path, b, 0o644); werr != nil {
		t.Fatal(werr)
	}
	hf, ferr := ReadFile(path)
	if fmt.Sprint(err) != strings.TrimPrefix(fmt.Sprint(ferr), path+": ") {
		t.Fatalf("Read = %v; ReadFile = %v", err, ferr)
	}
	if err == nil && !reflect.DeepEqual(h.Ops, hf.Ops) {
		t.Fatal("Read and ReadFile read different operations")
	}
	return h, err
}

// longLine pads an operation's line past bigLine with the whitespace JSON
// allows, so that the reader decodes it itself rather than in a batch.
func longLine(l string) string {
	return strings.TrimSuffix(l, "}") + strings.Repeat(" ", bigLine) + "}"
}

// TestReadBatched: a history of several batches, its operations growing
// past the preallocation, some lines long, reads back exactly as written.
func TestReadBatched(t *testing.T) {
	want := batchedHistory(3 * batchLines)
	lines := historyLines(t, want)
	for _, i := range []int{1, 700, len(lines) - 2} {
		lines[i] = longLine(lines[i])
	}
	// The long lines change the digest: a writer's digest of these bytes.
	b := rewrite(t, lines[:len(lines)-1])
	got, err := readBoth(t, b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Ops, want.Ops) {
		t.Fatalf("read %d operations, not the %d written", len(got.Ops), len(want.Ops))
	}
}

// TestReadBatchedNamesFirst: whichever batch or worker meets a bad line
// first, the error names the first bad line of the file, as reading the
// lines one after another would.
func TestReadBatchedNamesFirst(t *testing.T) {
	h := batchedHistory(3 * batchLines)
	bad := func(l string) string { return strings.Replace(l, `"arrival"`, `"arrivax"`, 1) }
	tests := []struct {
		name  string
		edit  func(l []string) []string // l[0] is the header, l[i] operation i
		first int                       // the operation named
	}{
		{"in the first batch", func(l []string) []string { l[5] = bad(l[5]); return l }, 5},
		{"in a later batch", func(l []string) []string { l[5000] = bad(l[5000]); return l }, 5000},
		{"two in two batches", func(l []string) []string { l[6000], l[2500] = bad(l[6000]), bad(l[2500]); return l }, 2500},
		{"a long one before a short one", func(l []string) []string {
			l[3000], l[4000] = longLine(bad(l[3000])), bad(l[4000])
			return l
		}, 3000},
		{"a short one before a long one", func(l []string) []string {
			l[1000], l[3000] = bad(l[1000]), longLine(bad(l[3000]))
			return l
		}, 1000},
		{"before a line after the trailer", func(l []string) []string {
			l[10] = bad(l[10])
			return append(l[:3001:3001], append([]string{`{"trailer":{"ops":2999}}`}, l[3001:]...)...)
		}, 10},
		{"before a line too long", func(l []string) []string {
			l[10] = bad(l[10])
			l[3000] = strings.Repeat(" ", maxLine+1)
			return l
		}, 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lines := tt.edit(historyLines(t, h))
			_, err := readBoth(t, []byte(strings.Join(lines, "\n")+"\n"))
			want := fmt.Sprintf(`operation %d (line %d): json: unknown field "arrivax"`, tt.first, tt.first+1)
			if !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), want) {
				t.Fatalf("Read = %v; want ErrFormat saying %q", err, want)
			}
		})
	}
}

// TestReadBatchedValidatesFirst: operations validated by the workers as
// they decode them are refused naming the first invalid one of the file,
// as Validate names it.
func TestReadBatchedValidatesFirst(t *testing.T) {
	h := batchedHistory(3 * batchLines)
	negative := func(l string) string { return regexp.MustCompile(`"end":\d+`).ReplaceAllString(l, `"end":-1`) }
	for _, bad := range [][]int{{5}, {6000, 2500}, {4000, 3000}} {
		lines := historyLines(t, h)
		lines = lines[:len(lines)-1]
		for _, i := range bad {
			lines[i] = negative(lines[i])
		}
		lines[3000] = longLine(lines[3000]) // decoded by the reader itself
		first := slices.Min(bad)
		_, err := readBoth(t, rewrite(t, lines))
		want := fmt.Sprintf("operation %d (client %d, attempt %d): end is negative (-1)", first, h.Ops[first-1].Client, h.Ops[first-1].Attempt)
		if !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), want) {
			t.Errorf("invalid operations %v: Read = %v; want ErrFormat saying %q", bad, err, want)
		}
	}
}
