package harness

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/lockbench/lockbench/internal/cpushare"
	"github.com/lockbench/lockbench/nodeproto"
	"github.com/lockbench/lockbench/workload"
	"github.com/spf13/pflag"
)

// NodeProcesses launches each of a sale's nodes (nodes of them) as a
// child process of this program's binary, `<program> node …` (cli.Main
// serves that subcommand with NodeMain; a test binary's TestMain does
// with IsNode). Each, and the coordinator while the sale runs, runs on
// its share of the CPUs while the machine is otherwise quiet
// (internal/cpushare).
func NodeProcesses(nodes int) (workload.Processes, error) {
	exe, err := os.Executable()
	if err != nil {
		return workload.Processes{}, fmt.Errorf("%w: cannot find this program to start its nodes: %v", ErrPlan, err)
	}
	return workload.Processes{Command: []string{exe, "node"}, Share: cpushare.For(nodes)}, nil
}

// ServeNode runs one node of a sale whose coordinator runs elsewhere,
// finding the implementation the coordinator names in the registry (a
// user's own, registered before, included).
func ServeNode(ctx context.Context, o workload.NodeOptions) error {
	o.Sale = func(name string) (workload.Sale, error) {
		im, ok := Lookup(name)
		if !ok {
			return nil, fmt.Errorf("%w: this node does not know the implementation %q (a node runs the coordinator's program, with the same registrations)", ErrPlan, name)
		}
		return im.Sale, nil
	}
	return workload.ServeNode(ctx, o)
}

// IsNode reports whether args (os.Args without the program) ask for a
// node: `node …`. A test binary that runs sales with NodeProcesses calls
// NodeMain from its TestMain when it is.
func IsNode(args []string) bool { return len(args) > 0 && args[0] == "node" }

// NodeMain is `lockbench node`: it parses the node's flags (args after
// "node"), serves the node and returns the exit code (0, 2 for bad
// usage, 3 when the coordinator could not be reached or went away).
func NodeMain(args []string, stderr io.Writer) int {
	fs := pflag.NewFlagSet("node", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, `lockbench node runs one node of a sale whose coordinator runs elsewhere:
lockbench --node-mode=process starts its nodes so, and on Kubernetes each pod
of an Indexed Job runs one (see docs/kubernetes.md).

The node proves it holds the run's secret (the coordinator's, given with
--node-secret-file or $LOCKBENCH_NODE_SECRET) before it is given anything,
over TLS whose key the secret pins: give it with --secret-file, or in
$LOCKBENCH_NODE_SECRET (never on the command line, which others can read).

Usage:
  lockbench node --coordinator=HOST:PORT [--index=N] [--secret-file=PATH]

Examples:
  lockbench node --coordinator=127.0.0.1:7070 --index=0 --secret-file=node.secret
  lockbench node --coordinator=lockbench-coordinator:7070   # index from $JOB_COMPLETION_INDEX, secret from $LOCKBENCH_NODE_SECRET

Flags:
`)
		fmt.Fprint(stderr, fs.FlagUsages())
	}
	var o workload.NodeOptions
	index := 0
	if v := os.Getenv("JOB_COMPLETION_INDEX"); v != "" {
		index, _ = strconv.Atoi(v)
	}
	fs.StringVar(&o.Coordinator, "coordinator", "", "the coordinator's `host:port`")
	fs.IntVar(&o.Index, "index", index, "this node's index (default $JOB_COMPLETION_INDEX, else 0)")
	secretFile := ""
	fs.StringVar(&secretFile, "secret-file", "", "the file holding the run's node secret (default: $"+nodeproto.SecretEnv+")")
	fs.DurationVar(&o.ClockShift, "clock-shift", 0, "move every instant this node records (a clock error the coordinator cannot measure; for tests)")
	fs.DurationVar(&o.DialTimeout, "dial-timeout", 30*time.Second, "how long to keep dialing the coordinator")
	fs.MarkHidden("clock-shift")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return 0
		}
		return 2
	}
	if o.Coordinator == "" || fs.NArg() > 0 || o.Index < 0 {
		fmt.Fprintln(stderr, "lockbench node: give --coordinator=HOST:PORT (and a node index of 0 or more); see lockbench node --help")
		return 2
	}
	// A node its coordinator started has its token and the secret in its
	// environment; the variables are not passed on to anything it starts.
	o.Token, o.Secret = os.Getenv(nodeproto.TokenEnv), os.Getenv(nodeproto.SecretEnv)
	os.Unsetenv(nodeproto.TokenEnv)
	os.Unsetenv(nodeproto.SecretEnv)
	if secretFile != "" {
		s, err := nodeproto.ReadSecretFile(secretFile)
		if err != nil {
			fmt.Fprintln(stderr, "lockbench node: --secret-file:", err)
			return 2
		}
		o.Secret = s
	}
	if err := nodeproto.CheckSecret(o.Secret); err != nil {
		fmt.Fprintf(stderr, "lockbench node: give the run's node secret with --secret-file=PATH or $%s: %v\n", nodeproto.SecretEnv, err)
		return 2
	}
	share, err := cpushare.FromEnv()
	if err != nil {
		fmt.Fprintln(stderr, "lockbench node:", err)
		return 2
	}
	// Ctrl-C and SIGTERM end the node; its coordinator sees it gone.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	o.CPUShare = share
	err = ServeNode(ctx, o)
	switch {
	case err == nil:
		return 0
	case errors.Is(err, workload.ErrCoordinatorGone):
		fmt.Fprintln(stderr, "lockbench node:", err)
		return 3
	}
	fmt.Fprintln(stderr, "lockbench node:", err)
	return 1
}
