package htmlreport

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/reports"
)

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

// TestFixtureIsReportsGolden keeps testdata/result.json the copy it says
// it is: the result reports builds from the fixture histories.
func TestFixtureIsReportsGolden(t *testing.T) {
	want, err := os.ReadFile(filepath.Join("..", "testdata", "result.golden.json"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join("testdata", "result.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("testdata/result.json differs from ../testdata/result.golden.json: copy it over")
	}
}
