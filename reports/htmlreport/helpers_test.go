package htmlreport

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/reports"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// golden compares got with the golden file testdata/name, or rewrites the
// file when -update is given.
func golden(t *testing.T, name string, got []byte) {
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

// fixtureOrder is the order the fixture runs appear in testdata/result.json.
var fixtureOrder = []string{"lua", "set-nx-ex", "atomic"}

// fixtureResult reads testdata/result.json, a copy of the result package
// reports builds from the histories testdata/<impl>.jsonl (its
// result.golden.json), afresh for each test to change as it likes.
func fixtureResult(t *testing.T) *reports.Result {
	t.Helper()
	res, err := reports.ReadFile(filepath.Join("testdata", "result.json"))
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// loadHistory reads the fixture history of impl.
func loadHistory(t *testing.T, impl string) *history.History {
	t.Helper()
	h, err := history.ReadFile(filepath.Join("testdata", impl+".jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	return h
}
