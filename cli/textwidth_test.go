package cli

import (
	"strings"
	"testing"
)

func TestTextWidth(t *testing.T) {
	tests := []struct {
		s     string
		width int
	}{
		{"lua", 3},
		{"000 误删 fix", 12},
		{"001 悲观锁 (row lock)", 21},
		{"", 0},
	}
	for _, tt := range tests {
		if got := displayWidth(tt.s); got != tt.width {
			t.Errorf("displayWidth(%q) = %d, want %d", tt.s, got, tt.width)
		}
		if got := displayWidth(padRight(tt.s, 30)); got != 30 {
			t.Errorf("padRight(%q, 30) is %d columns", tt.s, got)
		}
	}
	if got := truncate("001 悲观锁 (row lock)", 8); displayWidth(got) > 8 || !strings.HasSuffix(got, "…") {
		t.Errorf("truncate to 8 = %q (%d columns)", got, displayWidth(got))
	}
	if got := truncate("short", 8); got != "short" {
		t.Errorf("truncate of a short string = %q", got)
	}
}

func TestWrap(t *testing.T) {
	text := "A pause between the compare and the DEL deletes the next owner's lock. 悲观锁 乐观锁 误删"
	for _, w := range []int{10, 20, 40} {
		lines := wrap(text, w)
		if got := strings.Join(lines, " "); got != text {
			t.Errorf("width %d: words lost or changed: %q", w, got)
		}
		for _, l := range lines {
			if displayWidth(l) > w {
				t.Errorf("width %d: line %q is %d columns", w, l, displayWidth(l))
			}
		}
	}
}

// TestListFitsAndHelp checks that lockbench list wraps to the width it is
// given, whatever the sources' Chinese titles, and that list and version
// answer --help with exit 0.
func TestListFitsAndHelp(t *testing.T) {
	var b strings.Builder
	writeList(&b, 80)
	for _, line := range strings.Split(b.String(), "\n") {
		if displayWidth(line) > 80 {
			t.Errorf("line of %d columns: %q", displayWidth(line), line)
		}
	}
	for _, want := range []string{"悲观锁", "watchdog", "pause-holder"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("list lacks %q", want)
		}
	}
	for _, args := range [][]string{{"list", "--help"}, {"version", "--help"}, {"--version"}} {
		if code, out, errOut := lockbench(t, args...); code != exitPass || out == "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", args, code, out, errOut)
		}
	}
	code, out, _ := lockbench(t, "--help")
	if code != exitPass || !strings.Contains(out, "--clients") || !strings.Contains(out, "--faults") {
		t.Errorf("--help: exit %d, lacks the run flags:\n%s", code, out)
	}
	if strings.Contains(out, "(default [") || strings.Count(out, "(default $LOCKBENCH_REDIS_IMAGE") != 1 || strings.Contains(out, `(default "redis:7")`) {
		t.Errorf("--help prints a default twice or as Go syntax:\n%s", out)
	}
	code, out, _ = lockbench(t, "matrix", "--help")
	for _, line := range strings.Split(out, "\n") {
		if code != exitPass || strings.Count(line, "(default") > 1 || strings.Contains(line, "(default [") {
			t.Errorf("matrix --help: exit %d, a default twice or as Go syntax: %q", code, line)
		}
	}
}
