package cli

import (
	"bytes"
	"io"
	"slices"
	"strings"
	"testing"
)

// TestPanicIsInternalError: a panic inside a command is lockbench's bug,
// never the user's: Main recovers it and exits 70 with the panic and its
// stack, not 2 (bad usage) nor a crash.
func TestPanicIsInternalError(t *testing.T) {
	saved := commands
	t.Cleanup(func() { commands = saved })
	commands = append(slices.Clone(commands), command{name: "boom", summary: "panics", run: func([]string, io.Writer, io.Writer) error {
		var s []int
		_ = s[len(s)+1] // index out of range, as issue 24's row 7 made happen
		return nil
	}})
	var stdout, stderr bytes.Buffer
	code := Main([]string{"boom"}, &stdout, &stderr)
	if code != exitInternal {
		t.Fatalf("exit %d, want %d (internal error); stderr:\n%s", code, exitInternal, stderr.String())
	}
	if code == exitUsage {
		t.Fatal("a panic exits as bad usage")
	}
	for _, want := range []string{"internal error", "index out of range", "panic_test.go"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr.String())
		}
	}
}

// TestHelpNamesInternalError: --help lists exit 70 beside the others.
func TestHelpNamesInternalError(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"run", "--help"}} {
		var stdout, stderr bytes.Buffer
		if code := Main(args, &stdout, &stderr); code != exitPass {
			t.Fatalf("%v: exit %d", args, code)
		}
		if !strings.Contains(stdout.String(), "70 internal error") {
			t.Errorf("%v does not document exit 70:\n%s", args, stdout.String())
		}
	}
}
