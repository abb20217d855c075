package atomicfile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWrite: a write that succeeds replaces the file whole; one that fails
// leaves the old file and no temporary behind.
func TestWrite(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "result.json")
	if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("disk full")
	tests := []struct {
		name  string
		write func(io.Writer) error
		want  string
		err   error
	}{
		{"fails half way", func(w io.Writer) error { io.WriteString(w, "ne"); return boom }, "old", boom},
		{"succeeds", func(w io.Writer) error { _, err := io.WriteString(w, "new"); return err }, "new", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Write(path, tt.write)
			if !errors.Is(err, tt.err) || err != nil && !strings.Contains(err.Error(), path) {
				t.Fatalf("Write: %v, want %v naming %s", err, tt.err, path)
			}
			got, _ := os.ReadFile(path)
			if string(got) != tt.want {
				t.Errorf("file holds %q, want %q", got, tt.want)
			}
			entries, _ := os.ReadDir(dir)
			if len(entries) != 1 {
				t.Errorf("%d files in the directory: a temporary was left", len(entries))
			}
			if st, _ := os.Stat(path); st.Mode().Perm() != 0o644 {
				t.Errorf("mode %v", st.Mode().Perm())
			}
		})
	}
}

func TestTemp(t *testing.T) {
	tests := []struct {
		name, base string
		ok         bool
	}{
		{".result.json.123.tmp", "result.json", true},
		{".lua.history.jsonl.9.tmp", "lua.history.jsonl", true},
		{"result.json", "", false},
		{".x.tmp", "", false},
		{".bashrc", "", false},
	}
	for _, tt := range tests {
		if base, ok := Temp(tt.name); base != tt.base || ok != tt.ok {
			t.Errorf("Temp(%q) = %q, %v; want %q, %v", tt.name, base, ok, tt.base, tt.ok)
		}
	}
}
