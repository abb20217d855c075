package harness

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestImports: the engine returns values and runs on servers it is given;
// it imports neither the presentation that callers build of its results
// nor the infrastructure that starts servers, so that a program on the
// extension packages links no Docker client (examples/customlock's
// TestOwnModule checks what such a program links).
func TestImports(t *testing.T) {
	forbidden := map[string]string{
		"github.com/lockbench/lockbench/reports":    "presentation: callers build reports.NewRun of a Result",
		"github.com/lockbench/lockbench/backends":   "opening servers: callers open them and pass them in",
		"github.com/lockbench/lockbench/containers": "Docker",
		"github.com/lockbench/lockbench/sentinels":  "starting servers",
		"testing": "test support in the binary",
	}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if why, ok := forbidden[path]; ok {
				t.Errorf("%s imports %s (%s)", name, path, why)
			}
		}
	}
}
