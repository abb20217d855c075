package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/internal/atomicfile"
	"github.com/lockbench/lockbench/reports"
)

// fullDir mounts a tmpfs of size on a directory of the test's, unmounted
// at its end; the test skips, saying why, where mounting is not allowed
// (not root, no mount).
func fullDir(t *testing.T, size string) string {
	t.Helper()
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a %s tmpfs to fill (needs root): %v %s", size, err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v %s", dir, err, out)
		}
	})
	return dir
}

// TestOutFull: --out on a filesystem that fills up during the run (issue
// 24, row 12: exit 3, nothing printed, the later implementations never
// ran, a partial history and a truncated report.html left behind). Every
// implementation still runs, every verdict is printed, the write that
// failed is named, the files after it are skipped with a message, exit 3,
// and every file left is whole.
func TestOutFull(t *testing.T) {
	out := fullDir(t, "64k")
	code, stdout, stderr := lockbench(t, "--impl=lua,atomic", "--clients=200", "--stock=100", "--ramp=100ms", "--seed=1", "--out="+out)
	if code != exitInfra {
		t.Errorf("exit %d, want %d (files lost)\nstdout:\n%s\nstderr:\n%s", code, exitInfra, stdout, stderr)
	}
	for _, impl := range []string{"lua ", "atomic "} {
		if !strings.Contains(stdout, impl) || !strings.Contains(stdout, " pass ") {
			t.Errorf("the summary lacks %s's verdict:\n%s", impl, stdout)
		}
	}
	for _, want := range []string{"not written", "no space left on device", "skipped", "the verdicts above stand"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	entries, err := os.ReadDir(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		name, path := e.Name(), filepath.Join(out, e.Name())
		if _, tmp := atomicfile.Temp(name); tmp {
			t.Errorf("a temporary file is left: %s", name)
		}
		switch {
		case strings.HasSuffix(name, ".history.jsonl"):
			if _, err := history.ReadFile(path); err != nil {
				t.Errorf("a partial history is left: %v", err)
			}
		case name == "result.json":
			if _, err := reports.ReadFile(path); err != nil {
				t.Errorf("a partial result.json is left: %v", err)
			}
		case name == "report.html":
			if b, _ := os.ReadFile(path); !strings.Contains(string(b), "</html>") {
				t.Errorf("a truncated report.html is left (%d bytes)", len(b))
			}
		}
	}
	t.Logf("left in the full directory: %d files; stderr:\n%s", len(entries), stderr)
}
