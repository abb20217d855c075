// Package atomicfile writes a file whole or not at all: to a temporary
// file in the same directory, synced, then renamed over the path, so that
// a reader, a run killed while writing, or a filesystem that fills up
// finds the old file or the new one, never part of one.
package atomicfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Write writes path with what write puts into the writer it is given.
// The file is made 0644. On any failure, write's or the filesystem's (a
// full disk), the temporary file is removed, path is left as it was, and
// the error names path.
func Write(path string, write func(io.Writer) error) (err error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return named(path, err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
			err = named(path, err)
		}
	}()
	if err := write(f); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	// CreateTemp makes the file 0600; results are read by others.
	if err := os.Chmod(tmp, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// named is err said of path: "DIR/result.json: no space left on device",
// not of the temporary file the operation failed on.
func named(path string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		err = le.Err
	}
	return fmt.Errorf("%s: %w", path, err)
}

// Temp reports whether name is a temporary file Write makes, left behind
// by a process killed while writing, and the name of the file it was to
// become.
func Temp(name string) (base string, ok bool) {
	rest, ok := strings.CutPrefix(name, ".")
	if !ok {
		return "", false
	}
	rest, ok = strings.CutSuffix(rest, ".tmp")
	if !ok {
		return "", false
	}
	i := strings.LastIndexByte(rest, '.')
	if i <= 0 {
		return "", false
	}
	return rest[:i], true
}
