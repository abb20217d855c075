package cli

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/lockbench/lockbench/internal/atomicfile"
	"github.com/lockbench/lockbench/internal/words"
)

// Outputs are checked before the sale, so that a run of minutes never ends
// in "permission denied" with nothing kept: prepareOutputs makes the --out
// directory, proves it and the --junit file's directory writable, and
// clears what an earlier lockbench run wrote into --out, so that
// `lockbench check DIR` never re-checks a previous run's histories.

// ownFile reports whether name is a file lockbench writes into --out:
// result.json, report.html, IMPL[.repK].history.jsonl and its porcupine
// view IMPL[.repK].porcupine.html, and the temporary file each is
// written to before it is renamed (atomicfile, reports.WriteFile), left
// by a run killed while writing.
func ownFile(name string) bool {
	if base, ok := atomicfile.Temp(name); ok {
		return ownFile(base)
	}
	switch {
	case name == "result.json", name == "report.html":
		return true
	case strings.HasSuffix(name, ".history.jsonl"), strings.HasSuffix(name, ".porcupine.html"):
		return true
	}
	return false
}

// prepareOutputs checks --out and --junit before anything runs. Every
// failure is a usage error naming its flag: the path is the user's to fix.
func prepareOutputs(out, junit string) error {
	if out != "" {
		if err := os.MkdirAll(out, 0o755); err != nil {
			return usageErr("--out: %v", unwrapPath(err))
		}
		if err := clearOwn(out, 0); err != nil {
			return usageErr("--out: clearing the previous run's files: %v", unwrapPath(err))
		}
		if err := checkWritable(out); err != nil {
			return usageErr("--out: %s is not writable: %v", out, unwrapPath(err))
		}
	}
	if junit != "" {
		return writableFile("--junit", junit, "junit.xml")
	}
	return nil
}

// writableFile checks that the file flag names can be written: not a
// directory, in a directory that exists and takes new files, and, when it
// exists, open for writing. The failure is a usage error naming the flag;
// example is a file name to suggest when path is a directory.
func writableFile(flag, path, example string) error {
	st, statErr := os.Stat(path)
	if statErr == nil && st.IsDir() {
		return usageErr("%s: %s is a directory; give a file name such as %s", flag, path, filepath.Join(path, example))
	}
	dir := filepath.Dir(path)
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return usageErr("%s: directory %s does not exist", flag, dir)
	}
	if err := checkWritable(dir); err != nil {
		return usageErr("%s: %s is not writable: %v", flag, dir, unwrapPath(err))
	}
	if statErr == nil {
		// Opened without truncating: the file is replaced only once the
		// report is rendered.
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			return usageErr("%s: %s is not writable: %v", flag, path, unwrapPath(err))
		}
		f.Close()
	}
	return nil
}

// clearOwn removes lockbench's own files from dir, and from the matrix's
// cell directories below it (one level), leaving everything else alone;
// a cell directory left empty goes too.
func clearOwn(dir string, depth int) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		switch {
		case e.IsDir() && depth == 0:
			if err := clearOwn(p, depth+1); err != nil {
				return err
			}
			if rest, err := os.ReadDir(p); err == nil && len(rest) == 0 {
				if err := os.Remove(p); err != nil {
					return err
				}
			}
		case e.Type().IsRegular() && ownFile(e.Name()):
			if err := os.Remove(p); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkWritable creates and removes a file in dir.
func checkWritable(dir string) error {
	f, err := os.CreateTemp(dir, ".lockbench-writable-*")
	if err != nil {
		return err
	}
	name := f.Name()
	f.Close()
	return os.Remove(name)
}

// unwrapPath drops the operation and path from a *fs.PathError when the
// message names the path already.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s: %w", pe.Path, pe.Err)
	}
	return err
}

// outFiles writes a run's files (--out, --junit), each whole or not at
// all (atomicfile): a file that cannot be written (a full disk) is
// reported on stderr, and the files after it are skipped, each with a
// message, while the run goes on: the implementations still to run run,
// and every verdict is printed. err is then the exit error.
type outFiles struct {
	stderr io.Writer
	// failed is the first write that failed; nil while none has.
	failed error
	// skipped counts the files not written.
	skipped int
}

// write writes path with write, unless a write failed before; it reports
// whether the file was written.
func (f *outFiles) write(path string, write func(io.Writer) error) bool {
	if f.failed != nil {
		f.skipped++
		fmt.Fprintf(f.stderr, "lockbench: %s skipped: an earlier file could not be written\n", path)
		return false
	}
	if err := atomicfile.Write(path, write); err != nil {
		f.failed = err
		f.skipped++
		fmt.Fprintf(f.stderr, "lockbench: not written: %v; the run goes on, its verdicts printed, the files after it skipped\n", unwrapPath(err))
		return false
	}
	return true
}

// err is the exit error of the files not written (3), nil when every one
// was.
func (f *outFiles) err() error {
	if f.failed == nil {
		return nil
	}
	return &exitError{code: exitInfra, err: fmt.Errorf("%s not written, the first: %v (the verdicts above stand)", words.Count(f.skipped, "file"), unwrapPath(f.failed))}
}
