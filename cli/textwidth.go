package cli

import (
	"os"
	"strings"

	"golang.org/x/term"
	"golang.org/x/text/width"
)

// defaultColumns is the width lockbench writes to when it cannot ask the
// terminal: a pipe, a CI log, a file.
const defaultColumns = 100

// columns is the width of the terminal f writes to, or defaultColumns.
func columns(f *os.File) int {
	if f != nil {
		if w, _, err := term.GetSize(int(f.Fd())); err == nil && w > 0 {
			return w
		}
	}
	return defaultColumns
}

// displayWidth is how many terminal columns s takes: two for each wide
// or full-width rune (the sources' Chinese titles), one for the others.
func displayWidth(s string) int {
	n := 0
	for _, r := range s {
		switch width.LookupRune(r).Kind() {
		case width.EastAsianWide, width.EastAsianFullwidth:
			n += 2
		default:
			n++
		}
	}
	return n
}

// padRight pads s with spaces to w columns.
func padRight(s string, w int) string {
	if d := w - displayWidth(s); d > 0 {
		return s + strings.Repeat(" ", d)
	}
	return s
}

// truncate cuts s to at most w columns, marking a cut with "…".
func truncate(s string, w int) string {
	if displayWidth(s) <= w {
		return s
	}
	if w < 1 {
		return ""
	}
	out, n := make([]rune, 0, w), 0
	for _, r := range s {
		rw := displayWidth(string(r))
		if n+rw > w-1 {
			break
		}
		out, n = append(out, r), n+rw
	}
	return string(out) + "…"
}

// wrap breaks s into lines of at most w columns at spaces; a word longer
// than w stands on a line of its own.
func wrap(s string, w int) []string {
	var lines []string
	line, n := "", 0
	for _, word := range strings.Fields(s) {
		ww := displayWidth(word)
		switch {
		case n == 0:
			line, n = word, ww
		case n+1+ww <= w:
			line, n = line+" "+word, n+1+ww
		default:
			lines = append(lines, line)
			line, n = word, ww
		}
	}
	if n > 0 || len(lines) == 0 {
		lines = append(lines, line)
	}
	return lines
}
