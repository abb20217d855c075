package htmlreport

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/lockbench/lockbench/reports"
)

// FuzzResult: no result.json makes the reader or the report panic or
// hang: reports.ReadJSON refuses it as reports.ErrFormat, or the report
// is drawn. The corpus is in testdata/fuzz/FuzzResult, seeded with the
// results of testdata/ and reports/testdata/.
func FuzzResult(f *testing.F) {
	for _, file := range []string{
		filepath.Join("testdata", "result.json"),
		filepath.Join("..", "testdata", "result.golden.json"),
		filepath.Join("..", "testdata", "result.older.json"),
	} {
		b, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := reports.ReadJSON(bytes.NewReader(b))
		if err != nil {
			if !errors.Is(err, reports.ErrFormat) {
				t.Fatalf("ReadJSON = %v, not ErrFormat", err)
			}
			return
		}
		if err := Write(io.Discard, Options{}, NewSource("fuzz", t.TempDir(), r)); err != nil {
			t.Logf("Write = %v", err)
		}
	})
}
