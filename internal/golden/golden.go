// Package golden compares a test's output with its golden file in
// testdata/, or rewrites the file when the test runs with -update. The
// tests of reports and reports/htmlreport share it, so that the two
// packages' golden files are kept the same way.
package golden

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// Check compares got with the golden file testdata/name, or rewrites the
// file when -update is given.
func Check(t testing.TB, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file (run go test -update to accept):\ngot:\n%s\nwant:\n%s", path, got, want)
	}
}
