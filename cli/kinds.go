package cli

import (
	"os"

	"github.com/lockbench/lockbench/servers"
	"github.com/spf13/pflag"
)

// kindFlags declares the flag of every registered kind of server that
// has one (--zk, --mysql-dsn): each defaults to its environment variable.
func (o *runOpts) kindFlags(fs *pflag.FlagSet) {
	o.addrs = map[servers.Kind]*string{}
	for _, info := range servers.Kinds() {
		if info.Flag == "" {
			continue
		}
		o.addrs[info.Kind] = fs.String(info.Flag, os.Getenv(info.Env), info.Usage)
	}
}

// addr is the value of kind k's flag, "" when not given.
func (o *runOpts) addr(k servers.Kind) string {
	if p := o.addrs[k]; p != nil {
		return *p
	}
	return ""
}

// kindAddrs are the servers the kinds' flags give, for backends.Options.
func (o *runOpts) kindAddrs() map[servers.Kind]string {
	out := map[servers.Kind]string{}
	for k, p := range o.addrs {
		if *p != "" {
			out[k] = *p
		}
	}
	return out
}

// checkKindAddrs refuses a kind's flag whose value cannot be right before
// anything is dialled: a usage error (exit 2) naming the flag.
func (o *runOpts) checkKindAddrs() error {
	for _, info := range servers.Kinds() {
		if v := o.addr(info.Kind); v != "" && info.Check != nil {
			if err := info.Check(v); err != nil {
				return usageErr("--%s: %v", info.Flag, err)
			}
		}
	}
	return nil
}

// kindFlagNames are the flags of the kinds of server whose values are
// secret (a DSN with its password), or not.
func kindFlagNames(secret bool) []string {
	var out []string
	for _, info := range servers.Kinds() {
		if info.Flag != "" && info.Secret == secret {
			out = append(out, info.Flag)
		}
	}
	return out
}

// secretArgs are the flags of a reproduce line that carry a server's
// secret (--mysql-dsn): for each kind of needs whose flag is Secret and
// was given other than by its environment variable (the line runs where
// that is set), its value with the password written as PASSWORD for the
// reader to fill in (KindInfo.Redact), never printed.
// harness.CommandLine quotes them for the shell.
func (o *runOpts) secretArgs(needs servers.Needs) [][2]string {
	var out [][2]string
	for _, info := range servers.Kinds() {
		v := o.addr(info.Kind)
		if !info.Secret || !needs.Has(info.Kind) || v == "" || v == os.Getenv(info.Env) {
			continue
		}
		if info.Redact != nil {
			v = info.Redact(v)
		}
		out = append(out, [2]string{info.Flag, v})
	}
	return out
}

// kindEnv is the environment variable kind k's flag defaults to.
func kindEnv(k servers.Kind) string {
	info, _ := servers.Lookup(k)
	return info.Env
}
