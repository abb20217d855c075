package htmlreport

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/reports"
)

// TestHostileSeries (issue 24, row 7): a result.json whose sales series
// has p50_ms empty or null, or buckets beyond any run, once panicked the
// report (index out of range in svg.go); it is refused as
// reports.ErrFormat naming the run.
func TestHostileSeries(t *testing.T) {
	tests := []struct {
		name string
		edit string // replaces the first run's "p50_ms": [
		want string
	}{
		{"p50_ms empty", `"p50_ms": [], "ignored": [`, "p50_ms has 0 buckets"},
		{"p50_ms null", `"p50_ms": null, "ignored": [`, "p50_ms has 0 buckets"},
		{"buckets beyond any run", `"bucket_ms": 9223372036854775807, "p50_ms": [`, "are not a run's length"},
	}
	b, err := os.ReadFile(filepath.Join("testdata", "result.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := strings.Replace(string(b), `"p50_ms": [`, tt.edit, 1)
			if s == string(b) {
				t.Fatal("the fixture has no p50_ms to edit")
			}
			path := filepath.Join(t.TempDir(), "result.json")
			if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
				t.Fatal(err)
			}
			src, err := LoadSource(path)
			if err == nil {
				err = Write(io.Discard, Options{}, src)
			}
			if !errors.Is(err, reports.ErrFormat) || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "runs[0]") {
				t.Fatalf("LoadSource = %v; want reports.ErrFormat naming runs[0] and saying %q", err, tt.want)
			}
		})
	}
}

// TestReportReadsOnlyBeside (issue 24, row 8): the report reads only the
// histories beside the result it was given, and only regular files: a
// result naming ../, an absolute path, a device, a FIFO or a symbolic
// link out of its directory has them noted as not read, and the report
// is drawn without them, at once.
func TestReportReadsOnlyBeside(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "run")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	// A valid history outside the result's directory: read, it would
	// draw; it must not be.
	if err := history.WriteFile(filepath.Join(root, "outside.history.jsonl"), loadHistory(t, "lua")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(root, "outside.history.jsonl"), filepath.Join(dir, "link.history.jsonl")); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo.history.jsonl")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("cannot make a FIFO here: %v", err)
	}
	res := fixtureResult(t)
	names := []string{"../outside.history.jsonl", filepath.Join(root, "outside.history.jsonl"), "/dev/zero", "fifo.history.jsonl", "link.history.jsonl"}
	var runs []reports.Run
	for _, name := range names {
		r := res.Runs[0]
		r.History = name
		runs = append(runs, r)
	}
	res.Runs = runs
	if err := reports.WriteFile(filepath.Join(dir, "result.json"), res); err != nil {
		t.Fatal(err)
	}
	src, err := LoadSource(dir)
	if err != nil {
		t.Fatal(err)
	}
	for i, name := range names {
		if src.Histories[i] != nil || src.Missing[i] == "" {
			t.Errorf("%s: read (%v), want it left unread with a note", name, src.Missing[i])
		}
	}
	if err := Write(io.Discard, Options{}, src); err != nil {
		t.Fatal(err)
	}
	// The result itself: only a regular file.
	if _, err := LoadSource(fifo); !errors.Is(err, history.ErrNotRegular) {
		t.Errorf("LoadSource(a FIFO) = %v, want history.ErrNotRegular", err)
	}
}
