package harness

import (
	"fmt"
	"strings"
)

// CommandLine is the one builder of reproduce lines, the CLI's (a run's,
// the matrix's and each cell's) and the tests': program, then each flag
// as --name=value in the order given, then --seed=seed.
//
// program is the command that runs lockbench, with its subcommand when
// there is one ("lockbench", "lockbench matrix", "go run
// ./examples/customlock"), written as it is: it is shell text. A flag's
// value that a POSIX shell would split or expand is single-quoted, so
// that the line runs as printed.
func CommandLine(program string, flags [][2]string, seed uint64) string {
	parts := []string{program}
	for _, kv := range flags {
		parts = append(parts, "--"+kv[0]+"="+shellQuote(kv[1]))
	}
	parts = append(parts, fmt.Sprintf("--seed=%d", seed))
	return strings.Join(parts, " ")
}

// shellQuote is s as one word of a POSIX shell: as it is when every
// character is one the shell leaves alone, else in single quotes.
func shellQuote(s string) string {
	plain := s != ""
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', strings.ContainsRune("-_./:=,@%+", r):
		default:
			plain = false
		}
	}
	if plain {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
