// Package cli is lockbench's command line: its subcommands, their flags
// wired to the engine (harness, matrix), the summary, the files and the
// exit code. cmd/lockbench's main calls Main; so can a user's own main
// after registering their implementations with harness.Register and
// their truth-table rows with matrix.AddRow, the way k6's extensions are
// built into a k6 binary.
//
// Exit codes: 0 every check passed; 1 a check failed (or --baseline found
// a regression); 2 bad usage; 3 infrastructure failure (a server
// unreachable); 4 inconclusive (no check failed, but lockbench itself
// was saturated and liveness could not be judged); 70 internal error (a
// bug in lockbench, never the user's input); 130 interrupted.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"strings"

	"github.com/redis/go-redis/v9"
	"github.com/spf13/pflag"
)

// version is set by the Makefile (-ldflags "-X
// github.com/lockbench/lockbench/cli.version=…"); a build
// by `go install …@version` reports its module version instead.
var version = ""

// Program is the command that runs this binary, the start of every
// reproduce line it prints: "lockbench". A user's own main that calls
// Main sets it, before Main, to the command their users type for it
// (examples/customlock sets "go run ./examples/customlock"). It is a
// setting rather than os.Args[0] because a binary cannot tell how it
// was run: `go run` builds one under a temporary path that is gone once
// it exits.
var Program = "lockbench"

// Exit codes, documented in the README.
const (
	exitPass  = 0
	exitFail  = 1
	exitUsage = 2
	exitInfra = 3
	// exitInconclusive: no check failed, but the harness was saturated
	// and liveness did not hold, so it could not be judged.
	exitInconclusive = 4
	// exitInternal: lockbench itself failed (a panic), whatever its
	// input; sysexits.h's EX_SOFTWARE, so that it never reads as bad
	// usage.
	exitInternal    = 70
	exitInterrupted = 130
)

// exitError carries an exit code to main's one exit point.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func usageErr(format string, args ...any) error {
	return &exitError{code: exitUsage, err: fmt.Errorf(format, args...)}
}

// flagErr is the usage error of a flag whose value a package refused:
// the package's prefix on its error gives way to the flag's name, so that
// the message reads "--faults: unknown fault", not "--faults: faults:
// unknown fault".
func flagErr(flag string, err error) error {
	return &exitError{code: exitUsage, err: fmt.Errorf("--%s: %s", flag, plain(err))}
}

// plain is err's message without the package prefix it starts with: the
// user reads "server unreachable", not "workload: server unreachable".
// The error itself, for errors.Is, is kept by the callers.
func plain(err error) string {
	msg := err.Error()
	for _, pkg := range []string{"faults", "workload", "locks", "reports", "htmlreport", "history", "checker", "harness", "matrix", "sentinels", "containers", "servers", "sales", "backends", "nodeproto"} {
		if m, ok := strings.CutPrefix(msg, pkg+": "); ok {
			return m
		}
	}
	return msg
}

// plainErr wraps err so that its message reads as plain says, while
// errors.Is still finds what it wraps.
type plainErr struct{ error }

func (e plainErr) Error() string { return plain(e.error) }
func (e plainErr) Unwrap() error { return e.error }

// infraErr is the exit error of a server that could not be started,
// reached or prepared: 3, or 130 when ctx, the run's Ctrl-C context, ended
// first, for then the interrupt cut the call short, not the server.
func infraErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return &exitError{code: exitInterrupted, err: errors.New("interrupted before the sale began; every server lockbench started was stopped")}
	}
	err = plainErr{err}
	if hint := authHint(err); hint != "" {
		err = fmt.Errorf("%w%s", err, hint)
	}
	return &exitError{code: exitInfra, err: err}
}

// isUsage reports whether err is a usage error (exit 2).
func isUsage(err error) bool {
	var e *exitError
	return errors.As(err, &e) && e.code == exitUsage
}

// command is one subcommand: its name, a line for the help, and its run.
type command struct {
	name, summary string
	run           func(args []string, stdout, stderr io.Writer) error
}

var commands = []command{
	{"run", "run the flash sale against one or more lock implementations (the default)", runCmd},
	{"matrix", "run the truth table: every implementation against every fault that applies", matrixCmd},
	{"check", "re-check saved histories offline", checkCmd},
	{"list", "list the lock implementations", listCmd},
	{"report", "write the HTML report of saved results, or compare several", reportCmd},
	{"version", "print the version", versionCmd},
	{"node", "run one node of a sale whose coordinator runs elsewhere (--node-mode)", nodeCmd},
}

// quietRedis drops go-redis's own log lines (a pool's dial failures, a
// reconnect): lockbench reports every failure that matters itself, once,
// with its exit code, and a load test's stderr is read by people.
type quietRedis struct{}

func (quietRedis) Printf(context.Context, string, ...any) {}

// Main runs lockbench with args (the command line without the program's
// name) and returns the exit code: 0 pass, 1 a check failed or regressed,
// 2 bad usage, 3 infrastructure failure, 4 inconclusive, 70 internal
// error, 130 interrupted.
//
// A panic in the command's own goroutine is recovered here: no input may
// panic lockbench, and were one to, it is a bug of lockbench's, reported
// with its stack as an internal error (70), never as bad usage.
func Main(args []string, stdout, stderr io.Writer) (code int) {
	redis.SetLogger(quietRedis{})
	defer func() {
		if p := recover(); p != nil {
			code = internalError(stderr, p, debug.Stack())
		}
	}()
	return exitCode(dispatch(args, stdout, stderr), stderr)
}

// internalError reports panic p with its stack on stderr and returns
// exitInternal.
func internalError(stderr io.Writer, p any, stack []byte) int {
	fmt.Fprintf(stderr, "lockbench: internal error (a bug in lockbench %s, not in what it was given): %v\n%s\nPlease report it with the command line above.\n", buildVersion(), p, stack)
	return exitInternal
}

// panicExit is the exit error of a panic recovered in a goroutine of a
// run (safego.ErrPanic): an internal error (70) naming the panic and its
// stack, returned once what the run recorded was written and the servers
// it started were stopped.
func panicExit(err error) error {
	return &exitError{code: exitInternal, err: fmt.Errorf("internal error (a bug in lockbench %s, or in the lock or sale it ran, not in what it was given; please report it with the command line above): %w", buildVersion(), plainErr{err})}
}

// dispatch picks the subcommand; flags without one mean `run`.
func dispatch(args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 {
		switch args[0] {
		case "help", "-h", "--help":
			topUsage(stdout)
			return nil
		case "--version":
			return versionCmd(args[1:], stdout, stderr)
		}
		for _, c := range commands {
			if args[0] == c.name {
				return c.run(args[1:], stdout, stderr)
			}
		}
		if args[0] != "" && args[0][0] != '-' {
			return usageErr("unknown command %q (commands: run, matrix, check, list, report, version, node; see lockbench --help)", args[0])
		}
	}
	return runCmd(args, stdout, stderr)
}

func exitCode(err error, stderr io.Writer) int {
	if err == nil {
		return exitPass
	}
	var e *exitError
	if errors.As(err, &e) {
		if e.err != nil && e.code != exitFail {
			fmt.Fprintln(stderr, "lockbench:", e.err)
		}
		return e.code
	}
	fmt.Fprintln(stderr, "lockbench:", err)
	return exitInfra
}

// topUsage is `lockbench --help`: the commands, then the flags of run, the
// default command, so that the first help a user asks for has them all.
func topUsage(w io.Writer) {
	fmt.Fprint(w, `lockbench load-tests distributed locks in a flash sale and proves whether they are correct.

Usage:
  lockbench [run] [flags]      run the sale (see lockbench run --help for examples)
`)
	for _, c := range commands[1:] {
		fmt.Fprintf(w, "  lockbench %-18s %s\n", c.name, c.summary)
	}
	fmt.Fprint(w, `
Examples:
  lockbench --impl=watchdog --clients=20000
  lockbench --impl=none,local,lua --nodes=2 --out=run1
  lockbench --impl=all --redis=127.0.0.1:6379
  lockbench check run1
  lockbench report run1/result.json run2/result.json -o compare.html
  lockbench --impl=watchdog --repeat=3 --baseline=base/result.json --junit=junit.xml
`)
	fs := runFlags(&runOpts{})
	tidyDefaults(fs)
	fmt.Fprintf(w, "\nFlags of run:\n%s", fs.FlagUsages())
	fmt.Fprint(w, `
Exit codes: 0 pass, 1 a check failed or regressed, 2 bad usage, 3 infrastructure failure, 4 inconclusive (lockbench itself was starved: liveness not judged), 70 internal error (a bug in lockbench), 130 interrupted.
`)
}

// modulePath is lockbench's module: in a user's own binary (a main that
// calls Main), the build information's main module is the user's, and
// lockbench is one of its dependencies.
const modulePath = "github.com/lockbench/lockbench"

// buildVersion is the Makefile's version, else what the build information
// says of lockbench (see moduleVersion), else "devel".
func buildVersion() string {
	if version != "" {
		return version
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel"
	}
	return moduleVersion(bi)
}

// moduleVersion is lockbench's version in the build bi describes. When
// lockbench is the main module: its module version (a `go install
// …@v1.2.3` build, or Go's version from the checkout's VCS state), else
// the VCS revision Go recorded. When another module is the main one (a
// user's binary that calls Main): lockbench's version among its
// dependencies, the replacement's when it is replaced by another
// version; the VCS state is the user's, not lockbench's, so a lockbench
// replaced by a directory is "devel (DIR)", and one not found "devel".
func moduleVersion(bi *debug.BuildInfo) string {
	if bi.Main.Path != modulePath && bi.Main.Path != "" {
		for _, d := range bi.Deps {
			if d.Path != modulePath {
				continue
			}
			if d.Replace != nil {
				d = d.Replace
			}
			if d.Version != "" && d.Version != "(devel)" {
				return d.Version
			}
			if d.Path != modulePath {
				// Replaced by a directory: name it, since its
				// checkout's state is unknown here.
				return "devel (" + d.Path + ")"
			}
		}
		return "devel"
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	var rev, modified string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value
		}
	}
	if rev == "" {
		return "devel"
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if modified == "true" {
		rev += "-dirty"
	}
	return "devel-" + rev
}

// wantsHelp reports whether args ask a command without flags of its own
// for its help.
func wantsHelp(args []string) bool {
	return len(args) == 1 && (args[0] == "-h" || args[0] == "--help" || args[0] == "help")
}

// tidyDefaults makes --help print each default once and as a user types
// it: a flag whose usage already states its default (an environment
// variable's, say) shows no second "(default …)", and lists show as the
// comma list --flag=a,b takes, not as Go's [a b].
func tidyDefaults(fs *pflag.FlagSet) {
	fs.VisitAll(func(f *pflag.Flag) {
		switch {
		case strings.Contains(f.Usage, "(default "):
			f.DefValue = ""
			if f.Value.Type() == "stringSlice" {
				f.DefValue = "[]"
			}
		case f.Value.Type() == "stringSlice" && f.DefValue != "[]":
			f.DefValue = strings.Join(strings.Fields(strings.Trim(f.DefValue, "[]")), ",")
		}
	})
}

func versionCmd(args []string, stdout, _ io.Writer) error {
	if wantsHelp(args) {
		fmt.Fprintln(stdout, "Usage: lockbench version (or lockbench --version)\n\nPrints lockbench's version: the Makefile's git description, or the module's build information.")
		return nil
	}
	if len(args) > 0 {
		return usageErr("version takes no arguments")
	}
	fmt.Fprintln(stdout, "lockbench", buildVersion())
	return nil
}
