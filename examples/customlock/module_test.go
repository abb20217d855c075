package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestOwnModule builds this example the way a team builds its own lock:
// in a module of its own, made in a temporary directory, that requires
// lockbench (a replace points at this checkout). go mod tidy and go build
// must both succeed, and the program must run. Two programs share the
// example's lock.go: one on the extension packages alone (harness,
// backends, reports: a sale on the embedded server), which must link
// neither Docker's packages nor package testing; and the example's own
// main.go, lockbench's whole command line with the lock built in.
//
// It reuses the module cache of the environment and asks the module
// proxy for what the cache lacks; without a go command or the proxy it
// skips, saying so.
func TestOwnModule(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: go mod tidy and go build of a module of a team's own, in a temporary directory")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go command on PATH (%v): cannot build a module of a team's own", err)
	}
	root := moduleRoot(t, goBin)
	tests := []struct {
		name string
		// files are the module's files: name in the module, then the
		// file of this directory it is copied from.
		files  [][2]string
		args   []string // the built program's
		want   string   // the start of its output
		docker bool     // Docker's packages and package testing may be linked
	}{
		{
			name:  "the extension packages",
			files: [][2]string{{"lock.go", "lock.go"}, {"main.go", filepath.Join("testdata", "extension", "main.go")}},
			want:  "example-correct ",
		},
		{
			name:   "the command line",
			files:  [][2]string{{"lock.go", "lock.go"}, {"main.go", "main.go"}},
			args:   []string{"list"},
			want:   "Implementations",
			docker: true, // --backend=docker
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			gomod := "module example.com/ourlock\n\ngo " + strings.TrimPrefix(runtime.Version(), "go") + "\n\n" +
				"require github.com/lockbench/lockbench v0.0.0\n\n" +
				"replace github.com/lockbench/lockbench => " + root + "\n"
			write(t, filepath.Join(dir, "go.mod"), []byte(gomod))
			for _, f := range tt.files {
				src, err := os.ReadFile(f[1])
				if err != nil {
					t.Fatal(err)
				}
				write(t, filepath.Join(dir, f[0]), src)
			}
			if out, err := goCmd(t.Context(), goBin, dir, "mod", "tidy"); err != nil {
				if offline(out) {
					t.Skipf("go mod tidy could not reach the module proxy for what the module cache lacks:\n%s", out)
				}
				t.Fatalf("go mod tidy: %v\n%s", err, out)
			}
			bin := filepath.Join(dir, "ourlock")
			if out, err := goCmd(t.Context(), goBin, dir, "build", "-o", bin, "."); err != nil {
				t.Fatalf("go build: %v\n%s", err, out)
			}
			deps, err := goCmd(t.Context(), goBin, dir, "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".")
			if err != nil {
				t.Fatalf("go list: %v\n%s", err, deps)
			}
			std, err := goCmd(t.Context(), goBin, dir, "list", "-deps", "-f", "{{if .Standard}}{{.ImportPath}}{{end}}", ".")
			if err != nil {
				t.Fatalf("go list: %v\n%s", err, std)
			}
			var docker []string
			for _, p := range strings.Fields(deps) {
				if strings.Contains(p, "docker") || strings.Contains(p, "testcontainers") {
					docker = append(docker, p)
				}
			}
			linksTesting := strings.Contains("\n"+std+"\n", "\ntesting\n")
			t.Logf("links %d packages outside the standard library, %d of them Docker's; package testing: %v", len(strings.Fields(deps)), len(docker), linksTesting)
			if !tt.docker && (len(docker) > 0 || linksTesting) {
				t.Errorf("a program on the extension packages links Docker's packages %q, package testing: %v", docker, linksTesting)
			}
			cmd := exec.CommandContext(t.Context(), bin, tt.args...)
			cmd.Dir = dir
			out, err := cmd.CombinedOutput()
			if err != nil || !strings.HasPrefix(string(out), tt.want) {
				t.Errorf("ourlock %s: %v, output starting %q:\n%s", strings.Join(tt.args, " "), err, tt.want, out)
			}
		})
	}
}

// moduleRoot is the directory of lockbench's go.mod, which the module of
// a team's own replaces lockbench with.
func moduleRoot(t *testing.T, goBin string) string {
	t.Helper()
	out, err := goCmd(t.Context(), goBin, ".", "env", "GOMOD")
	gomod := strings.TrimSpace(out)
	if err != nil || gomod == "" || gomod == os.DevNull {
		t.Fatalf("go env GOMOD: %v %q", err, out)
	}
	return filepath.Dir(gomod)
}

// goCmd runs the go command in dir, outside any workspace and with the
// toolchain at hand, and returns its output.
func goCmd(ctx context.Context, goBin, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, goBin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOTOOLCHAIN=local")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// offline reports whether the go command's output says it could not
// reach the module proxy: a machine without the network, or with
// GOPROXY=off, rather than a module that does not tidy.
func offline(out string) bool {
	for _, s := range []string{"dial tcp", "no such host", "connection refused", "i/o timeout", "network is unreachable", "TLS handshake timeout", "proxyconnect", "GOPROXY=off", "GOFLAGS=-mod=vendor", "module lookup disabled"} {
		if strings.Contains(out, s) {
			return true
		}
	}
	return false
}

// write writes a file of the module of a team's own.
func write(t *testing.T, name string, b []byte) {
	t.Helper()
	if err := os.WriteFile(name, b, 0o644); err != nil {
		t.Fatal(err)
	}
}
