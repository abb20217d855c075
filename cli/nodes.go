package cli

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/lockbench/lockbench/containers"
	"github.com/lockbench/lockbench/harness"
	"github.com/lockbench/lockbench/nodeproto"
	"github.com/lockbench/lockbench/reports"
	"github.com/lockbench/lockbench/workload"
)

// nodeModes are --node-mode's values.
var nodeModes = []string{"inproc", "process", "docker", "remote"}

// nodes is where --node-mode runs the sale's nodes.
func (o *runOpts) nodesFor() (harness.Nodes, error) {
	n := harness.Nodes{Listen: o.listen, ClockError: o.clockError}
	switch o.nodeMode {
	case "process":
		l, err := harness.NodeProcesses(o.nodes)
		if err != nil {
			return n, err
		}
		n.Launcher = l
	case "docker":
		// The nodes run this binary, mounted into containers of
		// --node-image that use the host's network.
		n.Launcher = containers.NodeLauncher{Image: o.nodeImage}
	case "remote":
		n.Launcher = workload.Remote{}
		secret, err := o.nodeSecret()
		if err != nil {
			return n, err
		}
		n.Secret = secret
	}
	return n, nil
}

// nodeSecret is the secret of a run on remote nodes: --node-secret-file's
// (a fresh one written there when the file does not exist), else
// $LOCKBENCH_NODE_SECRET's.
func (o *runOpts) nodeSecret() (string, error) {
	path := o.nodeSecretFile
	if path == "" {
		s := os.Getenv(nodeproto.SecretEnv)
		if err := nodeproto.CheckSecret(s); err != nil {
			return "", usageErr("$%s: %s", nodeproto.SecretEnv, plain(err))
		}
		return s, nil
	}
	s, err := nodeproto.ReadSecretFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		s, err = nodeproto.CreateSecretFile(path)
	}
	if err != nil {
		return "", usageErr("--node-secret-file: %s", plain(err))
	}
	return s, nil
}

// nodeModeName is --node-mode as result.json records it: empty for the
// default, inproc.
func (o *runOpts) nodeModeName() string {
	if o.nodeMode == "inproc" {
		return ""
	}
	return o.nodeMode
}

// writeWhere prints where a run ran, above its table: the backend, the
// MySQL, and the nodes when they were not goroutines of lockbench.
func writeWhere(w io.Writer, c reports.Config) {
	if c.Backend != "" {
		fmt.Fprintf(w, "backend: %s\n", c.Backend)
	}
	if c.MySQL != "" {
		fmt.Fprintf(w, "mysql: %s\n", c.MySQL)
	}
	if c.NodeMode != "" {
		fmt.Fprintf(w, "nodes: %d, %s\n", c.Nodes, map[string]string{"process": "each a process of its own", "docker": "each in a container of its own", "remote": "started elsewhere, coordinated from here"}[c.NodeMode])
	}
}

// nodeCmd is `lockbench node`: one node of a sale whose coordinator runs
// elsewhere (--node-mode=process, docker or remote).
func nodeCmd(args []string, _, stderr io.Writer) error {
	if code := harness.NodeMain(args, stderr); code != 0 {
		return &exitError{code: code}
	}
	return nil
}
