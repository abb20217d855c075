package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/lockbench/lockbench/backends"
	"github.com/lockbench/lockbench/checker"
	"github.com/lockbench/lockbench/containers"
	"github.com/lockbench/lockbench/faults"
	"github.com/lockbench/lockbench/harness"
	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/internal/procnet"
	"github.com/lockbench/lockbench/internal/safego"
	"github.com/lockbench/lockbench/internal/words"
	"github.com/lockbench/lockbench/nodeproto"
	"github.com/lockbench/lockbench/reports"
	"github.com/lockbench/lockbench/sales"
	"github.com/lockbench/lockbench/servers"
	"github.com/lockbench/lockbench/workload"
	"github.com/spf13/pflag"
)

// runOpts are the flags of `lockbench run`.
type runOpts struct {
	impls          []string
	clients        int
	nodes          int
	stock          int64
	attempts       int
	ramp           time.Duration
	rate           rateFlag // --rate; zero uses ramp
	ttl            time.Duration
	hold           time.Duration
	reentry        int
	items          int // --items
	cart           int // --cart
	reads          int // --reads
	workers        int
	pool           int
	pipeline       int    // --pipeline
	backendKind    string // embedded, redis or docker; resolved by validate
	redis          string
	redlockServers int // --redlock-servers
	redisImage     string
	addrs          map[servers.Kind]*string // the flags of the kinds of server (--zk, --mysql-dsn): kindFlags
	password       string
	target         string            // --target
	endpoints      servers.Endpoints // parsed from target by validate
	targetPids     []int             // --target-pid
	targetLockKey  string            // --target-lock-key
	targetStart    []string          // --target-start
	targetCtrs     []string          // --target-container
	targetVia      []string          // --target-redis-via
	prefix         string
	force          bool
	seed           uint64
	out            string
	signSpec       string
	signKey        history.Key
	held           map[string]*history.History
	json           bool
	verbose        bool
	timeout        time.Duration
	checkTimeout   time.Duration
	cpuprofile     string
	faults         string
	cmdTimeout     time.Duration
	gate           gateOpts
	sentinel       string // --sentinel: the Sentinels of a deployment
	sentinelMaster string // --sentinel-master
	sentinelDocker bool   // --sentinel-docker: lockbench's topology in containers
	nodeMode       string // --node-mode
	nodeImage      string // --node-image
	listen         string // --coordinator-listen
	nodeSecretFile string // --node-secret-file
	clockError     time.Duration
	nodesPlan      harness.Nodes

	specs   []faults.Spec     // parsed from faults by validate
	needs   servers.Needs     // the servers the implementations to run need; set by validate
	servers *backends.Servers // opened by start
	// zkImage, mysqlImage, etcdImage and pgImage are --zk-image,
	// --mysql-image, --etcd-image and --pg-image.
	zkImage, mysqlImage, etcdImage, pgImage string
	// leftOut lists the implementations --impl=all left out for want of
	// a server, and why; notRun the matrix cells that leaves out.
	leftOut []leftOut
	notRun  []string
	// sweep is matrix --sweep, parsed; nil without it.
	sweep *faults.Sweep
	// flags are the command line's, kept by validate for the reproduce
	// lines of the matrix's cells.
	flags *pflag.FlagSet
	// files writes the run's files, and says which could not be.
	files outFiles
}

const runExamples = `
Examples:
  # source 003's flash sale: 20,000 buyers in one second, two nodes, stock 5,000
  lockbench --impl=watchdog --clients=20000

  # the unguarded sale oversells (exit 1); a JVM lock breaks across two nodes
  lockbench --impl=none
  lockbench --impl=local --nodes=1
  lockbench --impl=local --nodes=2

  # every implementation against a real Redis, results and histories saved
  lockbench --impl=all --redis=127.0.0.1:6379 --out=run1

  # Redis in a container, removed on exit; server-pause is docker pause there
  # (a machine without a registry: scripts/docker-images.sh, then
  # --redis-image=lockbench/redis:local)
  lockbench --impl=lua,atomic --backend=docker --faults=server-pause

  # an open model: 500 buyers a second for a minute, however far behind the
  # lock falls; latency counts from each buyer's scheduled arrival
  lockbench --impl=lua,watchdog --clients=30000 --rate=500/s

  # a million buyers in ten seconds on a real Redis, several buyers' scripts
  # to a round trip
  lockbench --impl=atomic --clients=1000000 --stock=250000 --ramp=10s --pipeline=64 --redis=127.0.0.1:6379

  # nested acquisition three levels deep inside the critical section
  lockbench --impl=reentrant,watchdog --reentry=3

  # a GC pause longer than the lease inside the critical section: lua and
  # watchdog let a second holder in; fenced keeps the data safe
  lockbench --impl=lua,watchdog,fenced --faults=pause-holder

  # two faults with parameters; the same --seed gives the same schedule
  lockbench --impl=getset --faults=clock-skew:offset=3s,crash-holder:at=acquired --seed=7

  # every implementation against every fault of the catalog's truth table
  lockbench matrix
`

func runFlags(o *runOpts) *pflag.FlagSet {
	fs := pflag.NewFlagSet("run", pflag.ContinueOnError)
	fs.SortFlags = false
	fs.StringSliceVar(&o.impls, "impl", []string{"watchdog"}, "lock implementations, comma separated, or all (see lockbench list)")
	fs.IntVar(&o.clients, "clients", 20000, "buyers")
	fs.IntVar(&o.nodes, "nodes", 2, "simulated service instances, each with its own pool, lock, clock and timers")
	fs.Int64Var(&o.stock, "stock", 5000, "initial inventory")
	fs.IntVar(&o.attempts, "attempts", 1, "purchase attempts per buyer")
	fs.DurationVar(&o.ramp, "ramp", time.Second, "window over which buyers arrive, evenly spread")
	fs.Var(&o.rate, "rate", "buyers arrive at this constant rate, `N/s` (500/s, 500, 30000/m), whatever the system does (an open model, as wrk2 -R), instead of over --ramp")
	fs.DurationVar(&o.ttl, "ttl", 0, "lock lease (default: each implementation's own, from its source article, see lockbench list)")
	fs.DurationVar(&o.hold, "hold", 0, "business time inside the critical section, between read and write")
	fs.IntVar(&o.reentry, "reentry", 0, "re-acquire the lock this many levels deep inside the critical section (reentrant implementations)")
	fs.IntVar(&o.items, "items", 1, "products on sale, each with --stock units and its own counter, orders and lock key; every item's history is checked on its own")
	fs.IntVar(&o.cart, "cart", 1, "the most items one buyer's cart takes (1 to N, drawn from --seed), all or none; above 1 needs multi (or none)")
	fs.IntVar(&o.reads, "reads", 0, "percentage of buyers who only read an item's stock (the product page), under rw's read lock; each read is checked against the counter")
	fs.IntVar(&o.workers, "workers", 200, "request workers per node (Tomcat's default); 0 gives every buyer its own goroutine")
	fs.IntVar(&o.pool, "pool", 0, "connections per node to the store; 0: one per worker for Redis and HTTP, 16 for MySQL and PostgreSQL (within their servers' default connection limits)")
	fs.IntVar(&o.pipeline, "pipeline", 0, "with atomic and no faults: up to this many buyers' scripts share one round trip on a node's connection, each still recorded from its start to its own reply; 0: each its own round trip")
	fs.StringVar(&o.nodeMode, "node-mode", "inproc", "where the nodes run: inproc (goroutines of lockbench), process (each a child process: pause-holder is a SIGSTOP of it, crash-holder a SIGKILL, and it is started again), docker (each in a container: docker pause, docker kill) or remote (nodes started elsewhere with lockbench node dial --coordinator-listen, e.g. a Kubernetes Indexed Job; see docs/kubernetes.md)")
	fs.StringVar(&o.nodeImage, "node-image", cmp.Or(os.Getenv(containers.NodeImageEnv), containers.NodeImage), "with --node-mode=docker: the image each node's container runs lockbench's own binary in, mounted read-only (default $"+containers.NodeImageEnv+", else "+containers.NodeImage+", which scripts/docker-images.sh builds from the host's libc)")
	fs.StringVar(&o.listen, "coordinator-listen", "", "with --node-mode=remote: the host:port the coordinator listens on for its nodes (process and docker nodes use a loopback port)")
	fs.StringVar(&o.nodeSecretFile, "node-secret-file", "", "with --node-mode=remote: the file holding the run's node secret, which each node proves it holds and which pins the coordinator's TLS key; written with a fresh secret when it does not exist (default: $"+nodeproto.SecretEnv+"; process and docker nodes get a fresh one in their environment)")
	fs.DurationVar(&o.clockError, "clock-error", 0, "widen every interval of the history by at least this clock error before checking: with remote nodes, a floor on the bound measured of their clocks, for drift")
	fs.StringVar(&o.backendKind, "backend", "", "server to run against: embedded (in process), redis (a real Redis at --redis), docker (Redis, and the ZooKeeper and MariaDB the implementations need, started in containers and removed on exit) or sentinel (a primary and its replica through Sentinel: --sentinel's, or a primary, a replica and three Sentinels lockbench starts from redis-server, in containers with --sentinel-docker) (default embedded, or redis when --redis is given)")
	fs.StringVar(&o.redis, "redis", "", "address of a real Redis (host:port), or a comma list of independent Redis servers for redlock (at least 3; the first holds the inventory); implies --backend=redis")
	fs.IntVar(&o.redlockServers, "redlock-servers", backends.RedlockServers, "independent servers redlock runs on with --backend=embedded or docker (at least 3); with --backend=redis, the --redis addresses")
	fs.StringVar(&o.redisImage, "redis-image", cmp.Or(os.Getenv(containers.RedisImageEnv), containers.RedisImage), "Redis image of --backend=docker and --sentinel-docker (default $"+containers.RedisImageEnv+", else the official "+containers.RedisImage+"); scripts/docker-images.sh builds lockbench/redis:local where nothing can be pulled")
	o.kindFlags(fs)
	fs.StringVar(&o.password, "redis-password", os.Getenv("LOCKBENCH_REDIS_PASSWORD"), "Redis password (default $LOCKBENCH_REDIS_PASSWORD)")
	fs.StringVar(&o.target, "target", "", "test a running service instead of an implementation: the base URLs of its instances on this machine, comma separated (http://127.0.0.1:8081,http://127.0.0.1:8082), each driven by one node through lockbench's black-box protocol (docs/target-protocol.md)")
	fs.IntSliceVar(&o.targetPids, "target-pid", nil, "with --target: the process ids of the instances, in --target's order, for the pause-instance fault (SIGSTOP, SIGCONT)")
	fs.StringSliceVar(&o.targetCtrs, "target-container", nil, "with --target: the Docker containers the instances run in, in --target's order, for the pause-instance fault (docker pause, docker unpause)")
	fs.StringSliceVar(&o.targetVia, "target-redis-via", nil, "with --target and --redis (the service's Redis): the loopback addresses the instances dial for their Redis, in --target's order; lockbench relays each to --redis through its fault proxy for the run, for the latency and cut-link faults")
	fs.StringArrayVar(&o.targetStart, "target-start", nil, "with --target and --target-pid: the shell command that starts an instance, once per instance in --target's order, for the crash-instance fault")
	fs.StringVar(&o.targetLockKey, "target-lock-key", "", "with --target and --redis (the service's Redis): the key of the service's lock, for the delete-lock fault")
	fs.StringVar(&o.prefix, "prefix", "lockbench:", "key prefix on a real Redis; its keys are removed after the run")
	fs.BoolVar(&o.force, "force", false, "use the prefix even if it already holds keys (they are deleted), and on MySQL drop lockbench's tables left in the database")
	fs.Uint64Var(&o.seed, "seed", 0, "seed for every random choice (default: random, printed in the summary)")
	fs.StringVar(&o.out, "out", "", "directory to write result.json, report.html and the histories to")
	fs.StringVar(&o.signSpec, "sign-key", "", "with --out: sign each history with this key (HMAC-SHA256), given as file:PATH or env:NAME, never the key itself; `lockbench check --sign-key` verifies it")
	fs.BoolVar(&o.json, "json", false, "print the result JSON on stdout instead of the table")
	fs.BoolVarP(&o.verbose, "verbose", "v", false, "say every note of every implementation in full under the table (by default they are folded into one line per kind)")
	fs.StringVar(&o.faults, "faults", "", "faults to inject, comma separated, each as name[:param=value...] (see lockbench list); with faults and no --ttl the lease is "+harness.FaultLease.String())
	fs.DurationVar(&o.cmdTimeout, "command-timeout", 3*time.Second, "deadline of each Redis command; one that runs out has an unknown outcome")
	fs.DurationVar(&o.timeout, "timeout", 3*time.Minute, "bound on each implementation's run; a run cut short is a liveness failure")
	fs.DurationVar(&o.checkTimeout, "check-timeout", checker.DefaultTimeout, "bound on the linearizability check; one that runs out is reported unknown")
	fs.StringVar(&o.cpuprofile, "cpuprofile", "", "write a Go CPU profile of the whole run to this file (go tool pprof)")
	dockerFlags(fs, o)
	sentinelFlags(fs, o)
	gateFlags(fs, &o.gate)
	return fs
}

func runUsage(w io.Writer, fs *pflag.FlagSet) {
	tidyDefaults(fs)
	fmt.Fprintf(w, "Usage: lockbench [run] [flags]\n\nRuns a flash sale against lock implementations and checks what happened.\n\nFlags:\n%s%s%s\nExit codes: 0 pass, 1 a check failed or regressed, 2 bad usage, 3 infrastructure failure, 4 inconclusive, 70 internal error, 130 interrupted.\n", fs.FlagUsages(), runExamples, gateExamples)
}

// parseFlags fills o from args; help is true when --help was asked for.
func parseFlags(fs *pflag.FlagSet, args []string, stdout io.Writer) (help bool, err error) {
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			runUsage(stdout, fs)
			return true, nil
		}
		return false, usageErr("%v (see lockbench --help)", err)
	}
	if fs.NArg() > 0 {
		return false, usageErr("unexpected argument %q (see lockbench --help)", fs.Arg(0))
	}
	return false, nil
}

// validate checks the options and resolves the implementations: the
// flags each on its own, then against each other, then the servers they
// name, then what the library says of each implementation with them.
func (o *runOpts) validate(fs *pflag.FlagSet) ([]harness.Impl, error) {
	o.flags = fs
	impls, err := o.resolveImpls(fs)
	if err != nil {
		return nil, err
	}
	for _, check := range []func(*pflag.FlagSet) error{o.checkLoad, o.checkNodeFlags, o.checkLimits} {
		if err := check(fs); err != nil {
			return nil, err
		}
	}
	if err := checkAddrs(o.redis); err != nil {
		return nil, err
	}
	if err := o.checkKindAddrs(); err != nil {
		return nil, err
	}
	if err := o.resolveBackend(fs); err != nil {
		return nil, err
	}
	if o.signSpec != "" && o.out == "" {
		return nil, usageErr("--sign-key signs the histories --out writes: give --out too")
	}
	if o.signKey, err = loadSignKey(o.signSpec); err != nil {
		return nil, flagErr("sign-key", err)
	}
	if err := o.resolveServers(fs); err != nil {
		return nil, err
	}
	if impls, err = o.require(impls); err != nil {
		return nil, err
	}
	o.resolveNeeds(impls)
	if o.specs, err = faults.Parse(o.faults); err != nil {
		return nil, flagErr("faults", err)
	}
	return impls, o.checkImpls(impls)
}

// resolveImpls reads --target, or else --impl: the implementations to
// run, before any is checked against the servers.
func (o *runOpts) resolveImpls(fs *pflag.FlagSet) ([]harness.Impl, error) {
	if o.target != "" {
		if err := o.resolveTarget(fs); err != nil {
			return nil, err
		}
		o.impls = nil
		return []harness.Impl{harness.Service()}, nil
	}
	var impls []harness.Impl
	for _, name := range o.impls {
		name = strings.TrimSpace(name)
		if name == "all" {
			impls = harness.All()
			break
		}
		im, ok := harness.Lookup(name)
		if !ok {
			return nil, usageErr("--impl: unknown implementation %q; accepts all or a comma list of: %s", name, strings.Join(harness.Names(), ", "))
		}
		impls = append(impls, im)
	}
	if len(impls) == 0 {
		return nil, usageErr("--impl: give at least one implementation")
	}
	return impls, nil
}

// refusal is one check of the flags: when bad holds, the usage error
// says why.
type refusal struct {
	bad    bool
	format string
	args   []any
}

// firstRefusal is the usage error of the first check of checks that
// fails, nil when none does.
func firstRefusal(checks ...refusal) error {
	for _, c := range checks {
		if c.bad {
			return usageErr(c.format, c.args...)
		}
	}
	return nil
}

// checkLoad checks the flags that shape the sale: its buyers, stock,
// arrivals, lease and carts.
func (o *runOpts) checkLoad(fs *pflag.FlagSet) error {
	late := o.rate.perSecond > 0 && o.rate.span(o.clients) >= o.timeout
	var span string
	if late {
		span = roundDur(o.rate.span(o.clients))
	}
	return firstRefusal(
		refusal{o.clients < 1, "--clients must be at least 1, got %d", []any{o.clients}},
		refusal{o.nodes < 1, "--nodes must be at least 1, got %d", []any{o.nodes}},
		refusal{o.stock < 0, "--stock must not be negative, got %d", []any{o.stock}},
		refusal{o.attempts < 1 || o.attempts > 1000, "--attempts must be between 1 and 1000, got %d", []any{o.attempts}},
		refusal{o.ramp < 0, "--ramp must not be negative, got %v", []any{o.ramp}},
		refusal{fs.Changed("rate") && fs.Changed("ramp"), "--rate and --ramp: give one or the other (--rate brings the buyers at a constant rate, --ramp spreads them over a window)", nil},
		refusal{late, "--rate=%s brings the last of %s after %v, past --timeout=%v: raise --rate or --timeout, or lower --clients",
			[]any{o.rate.text, words.Count(o.clients, "buyer"), span, o.timeout}},
		refusal{o.ttl < 0 || (o.ttl > 0 && o.ttl < time.Millisecond), "--ttl must be at least 1ms (or 0 for each source's default), got %v", []any{o.ttl}},
		refusal{o.hold < 0, "--hold must not be negative, got %v", []any{o.hold}},
		refusal{o.reentry < 0, "--reentry must not be negative, got %d", []any{o.reentry}},
		// 0 items or a cart of 0 is the library's default (one); on the
		// command line it is a mistake. The upper bounds are the library's
		// (workload.Supports, checkImpls).
		refusal{o.items < 1, "--items must be at least 1, got %d", []any{o.items}},
		refusal{o.cart < 1, "--cart must be at least 1, got %d", []any{o.cart}},
		refusal{o.workers < 0, "--workers must not be negative, got %d", []any{o.workers}},
	)
}

// checkNodeFlags checks where the nodes run (--node-mode and the flags
// that go with it) and the clock error they widen the history by.
func (o *runOpts) checkNodeFlags(fs *pflag.FlagSet) error {
	// Whether nodes in processes can drive a service under test, or reach
	// a Redis through Sentinel, is the workload's to say: the refusal is
	// its own, named after the flag.
	var nodesRefused error
	switch {
	case o.nodeMode == "inproc":
	case o.target != "":
		nodesRefused = workload.SupportsNodes(o.nodeMode, harness.Service().Name, harness.Service().Sale, nil)
	case o.backendKind == "sentinel" || o.sentinel != "":
		nodesRefused = workload.NodesOnFailover(o.nodeMode)
	}
	why := ""
	if nodesRefused != nil {
		why = strings.TrimPrefix(nodesRefused.Error(), workload.ErrNodesUnsupported.Error()+": ")
	}
	return firstRefusal(
		refusal{!slices.Contains(nodeModes, o.nodeMode), "--node-mode must be one of %s, got %q", []any{strings.Join(nodeModes, ", "), o.nodeMode}},
		refusal{o.nodeMode == "remote" && o.listen == "", "--node-mode=remote needs --coordinator-listen=HOST:PORT, where its nodes (lockbench node --coordinator=...) dial in", nil},
		refusal{fs.Changed("node-image") && o.nodeMode != "docker", "--node-image is for --node-mode=docker", nil},
		refusal{o.nodeMode == "docker" && o.nodeImage == "", "--node-image must not be empty", nil},
		refusal{o.listen != "" && o.nodeMode != "remote", "--coordinator-listen is for --node-mode=remote; process and docker nodes dial a loopback port of lockbench's choice", nil},
		refusal{o.nodeSecretFile != "" && o.nodeMode != "remote", "--node-secret-file is for --node-mode=remote; process and docker nodes get a fresh secret in their environment", nil},
		refusal{o.nodeMode == "remote" && o.nodeSecretFile == "" && os.Getenv(nodeproto.SecretEnv) == "", "--node-mode=remote needs the run's node secret, which its nodes are given too: --node-secret-file=PATH (written with a fresh one if it does not exist) or $%s", []any{nodeproto.SecretEnv}},
		refusal{nodesRefused != nil, "%s", []any{why}},
		refusal{o.clockError < 0, "--clock-error must not be negative, got %v", []any{o.clockError}},
	)
}

// checkLimits checks the connection pool, the timeouts, and the flags
// that apply to a real Redis or MySQL only.
func (o *runOpts) checkLimits(fs *pflag.FlagSet) error {
	return firstRefusal(
		refusal{o.pool < 0, "--pool must not be negative, got %d", []any{o.pool}},
		refusal{o.timeout <= 0, "--timeout must be positive, got %v", []any{o.timeout}},
		refusal{o.checkTimeout <= 0, "--check-timeout must be positive, got %v", []any{o.checkTimeout}},
		refusal{o.cmdTimeout < time.Millisecond, "--command-timeout must be at least 1ms, got %v", []any{o.cmdTimeout}},
		refusal{!o.realRedis() && (fs.Changed("prefix") || o.password != ""), "--prefix and --redis-password apply to a real Redis: give --redis too (or --sentinel)", nil},
		refusal{o.force && !o.realRedis() && o.addr(servers.KindMySQL) == "", "--force applies to a real Redis or MySQL: give --redis or --mysql-dsn too (or --sentinel)", nil},
	)
}

// resolveNeeds sets the servers the implementations need, and the
// service's own Redis, for its faults, when --target gives one.
func (o *runOpts) resolveNeeds(impls []harness.Impl) {
	for _, im := range impls {
		o.needs = o.needs.Union(im.Needs())
	}
	if o.target != "" && o.redis != "" {
		o.needs = o.needs.Union(servers.Needs{servers.KindRedis})
	}
}

// checkImpls asks the library whether each implementation can run the
// workload the flags give: its items, carts and readers
// (workload.Supports), its reentry (harness.Impl.CheckReentry). Each
// refusal is the library's, named after the flags that ask for it.
func (o *runOpts) checkImpls(impls []harness.Impl) error {
	w := o.workload()
	for _, im := range impls {
		err := workload.Supports(im.Sale, w)
		switch {
		case errors.Is(err, workload.ErrPipeline):
			return usageErr("--pipeline: %s: %s", im.Name, strings.TrimPrefix(err.Error(), workload.ErrPipeline.Error()+": "))
		case err != nil:
			return usageErr("--items, --cart, --reads: %s", strings.TrimPrefix(err.Error(), workload.ErrWorkload.Error()+": "))
		}
	}
	if err := harness.CheckPipeline(w, o.specs); err != nil {
		return usageErr("--pipeline: %s", strings.TrimPrefix(err.Error(), harness.ErrPlan.Error()+": "))
	}
	for _, im := range impls {
		if err := im.CheckReentry(w.Reentry); err != nil {
			return usageErr("--reentry: %s; reentrant implementations: %s", strings.TrimPrefix(err.Error(), harness.ErrPlan.Error()+": "), strings.Join(reentrant(), ", "))
		}
	}
	return nil
}

func reentrant() []string {
	var out []string
	for _, im := range harness.All() {
		if im.Reentrant {
			out = append(out, im.Name)
		}
	}
	return out
}

func runCmd(args []string, stdout, stderr io.Writer) error {
	var o runOpts
	fs := runFlags(&o)
	if help, err := parseFlags(fs, args, stdout); help || err != nil {
		return err
	}
	impls, err := o.validate(fs)
	if err != nil {
		return err
	}
	if err := o.gate.prepare(fs, impls); err != nil {
		return err
	}
	ctx, done, err := o.start(fs)
	if err != nil {
		return err
	}
	defer done()
	o.warnLeftOut(stderr, "")
	arrivals, span := o.arrivals()
	warnLength(stderr, len(impls)*o.gate.repeat, arrivals, span, o.timeout)

	result := o.newResult(o.command(""), impls)
	o.files.stderr = stderr
	progress := newProgress(stderr, o.clients, len(impls)*o.gate.repeat, o.timeout)
	var plans []harness.Plan
	for _, im := range o.gate.schedule(impls) {
		plans = append(plans, o.plan(im, progress))
	}
	err = harness.RunAll(ctx, &o.servers.Set, plans, func(p harness.Plan, res harness.Result) error {
		progress.clear()
		run := reports.NewRun(res.History, res.Report, res.NotFired...)
		if o.out != "" {
			// A history that cannot be written is reported, and the
			// implementations after it still run (outFiles).
			name := o.gate.historyName(p.Impl.Name)
			if o.files.write(filepath.Join(o.out, name), func(w io.Writer) error { return o.signKey.Write(w, res.History) }) {
				run.History = name
				// Kept for report.html, drawn from memory (writeRunReport).
				if o.held == nil {
					o.held = map[string]*history.History{}
				}
				o.held[name] = res.History
			}
		}
		result.Runs = append(result.Runs, run)
		return nil
	})
	progress.clear()
	result.NotRun = notRun(plans, len(result.Runs))
	// A server lost during a sale, or Ctrl-C, leaves the runs done (the
	// last one cut short): they are judged, printed and written like any
	// other; then the loss is exit 3, Ctrl-C 130.
	var lost error
	switch {
	case err == nil:
	case ctx.Err() != nil && len(result.Runs) > 0:
	case errors.Is(err, workload.ErrAnswer) && len(result.Runs) > 0:
		// The service under test answered outside the protocol: its
		// run fails, naming the answer, whatever else it answered.
		r := &result.Runs[len(result.Runs)-1]
		r.Verdict, r.Reasons = reports.Fail, append(r.Reasons, plain(err))
	case errors.Is(err, safego.ErrPanic) && len(result.Runs) > 0:
		// A goroutine of the run panicked: what it recorded is judged
		// and written like a cut run's, then lockbench exits 70.
		lost = panicExit(err)
	case errors.Is(err, harness.ErrLost):
		lost = &exitError{code: exitInfra, err: plainErr{err}}
	default:
		return runErr(ctx, err)
	}
	err = finishRun(ctx, &o, result, stdout, stderr)
	if lost != nil {
		return lost
	}
	return err
}

// notRun names the implementations of plans that never ran when only the
// first ran of them did, each once, in order: an implementation one of
// whose repetitions ran did run.
func notRun(plans []harness.Plan, ran int) []string {
	ran = min(ran, len(plans))
	var out []string
	for _, p := range plans[ran:] {
		name := p.Impl.Name
		if !slices.Contains(out, name) && !slices.ContainsFunc(plans[:ran], func(q harness.Plan) bool { return q.Impl.Name == name }) {
			out = append(out, name)
		}
	}
	return out
}

// start does what every command that runs sales does first: it picks the
// seed, makes the --out directory, starts the CPU profile, ties a context
// to Ctrl-C and opens the servers the implementations need (o.servers).
// done undoes it all, in order.
//
// Ctrl-C ends the sale in progress; what was recorded is still checked
// and written. A second Ctrl-C kills the process.
func (o *runOpts) start(fs *pflag.FlagSet) (ctx context.Context, done func(), err error) {
	if !fs.Changed("seed") {
		o.seed = rand.Uint64()
	}
	if err := prepareOutputs(o.out, o.gate.junit); err != nil {
		return nil, nil, err
	}
	var undo []func()
	done = func() {
		for i := len(undo) - 1; i >= 0; i-- {
			undo[i]()
		}
	}
	fail := func(err error) (context.Context, func(), error) {
		done()
		return nil, nil, err
	}
	// sig, not the named result: fail sets that to nil while this
	// goroutine may still be about to read it.
	sig, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	undo = append(undo, stop)
	go func() { <-sig.Done(); stop() }()
	if o.cpuprofile != "" {
		f, err := os.Create(o.cpuprofile)
		if err != nil {
			return fail(&exitError{code: exitInfra, err: fmt.Errorf("--cpuprofile: %w", err)})
		}
		undo = append(undo, func() { f.Close() })
		if err := pprof.StartCPUProfile(f); err != nil {
			return fail(&exitError{code: exitInfra, err: fmt.Errorf("--cpuprofile: %w", err)})
		}
		undo = append(undo, pprof.StopCPUProfile)
	}
	if o.nodesPlan, err = o.nodesFor(); err != nil {
		return fail(err)
	}
	servers, err := backends.Open(sig, o.serverOptions(), o.needs)
	if err != nil {
		if errors.Is(err, backends.ErrMissing) {
			return fail(usageErr("%s", plain(err)))
		}
		return fail(infraErr(sig, err))
	}
	o.servers = servers
	undo = append(undo, servers.Close)
	return sig, done, nil
}

// serverOptions are the servers the flags name.
func (o *runOpts) serverOptions() backends.Options {
	return backends.Options{
		Backend:        o.backendKind,
		Redis:          o.redisAddrs(),
		RedisPassword:  o.password,
		RedlockServers: o.redlockServers,
		RedisImage:     o.redisImage,
		ZooKeeperImage: o.zkImage,
		MySQLImage:     o.mysqlImage,
		EtcdImage:      o.etcdImage,
		PostgresImage:  o.pgImage,
		Docker:         containers.Docker{},
		Addrs:          o.kindAddrs(),
		Endpoints:      o.endpoints,
		TargetPids:     o.targetPids,
		TargetLockKey:  o.targetLockKey,
		TargetStart:    o.targetStart,
		Containers:     o.targetCtrs,
		Via:            o.targetVia,
		Sentinel:       o.sentinelAddrs(),
		SentinelMaster: o.sentinelMaster,
		SentinelDocker: o.sentinelDocker,
	}
}

// listensOn checks that process pid (or a child of it) listens on the
// port of the instance at u, so that pause-instance and crash-instance
// stop that instance and nothing else: a process id from an earlier run
// (a reproduce line) may name another process by now.
func listensOn(pid int, u *url.URL) error {
	port, err := strconv.Atoi(u.Port())
	if err != nil {
		return nil // no port to check against: ParseEndpoints took it as the scheme's
	}
	ok, err := procnet.ListensOn(pid, port)
	switch {
	case errors.Is(err, procnet.ErrUnsupported):
		return nil // nothing to tell either way
	case err != nil:
		return usageErr("--target-pid: no process %d (the instance at %s)", pid, u)
	case !ok:
		return usageErr("--target-pid: process %d does not listen on port %d, so it is not the instance at %s: a fault would stop some other process", pid, port, u)
	}
	return nil
}

// resolveTarget reads --target: the service's instances, one node each.
func (o *runOpts) resolveTarget(fs *pflag.FlagSet) error {
	t, err := servers.ParseEndpoints(o.target)
	if err != nil {
		return flagErr("target", err)
	}
	for _, name := range append([]string{"impl", "backend", "prefix", "reentry", "ttl", "hold", "redlock-servers"}, append(kindFlagNames(false), kindFlagNames(true)...)...) {
		if fs.Changed(name) {
			return usageErr("--%s does not apply to --target: the service brings its own lock and servers", name)
		}
	}
	if err := o.checkInstanceControls(t); err != nil {
		return err
	}
	if fs.Changed("nodes") && o.nodes != len(t) {
		return usageErr("--nodes=%d with --target: one node drives each instance, and %s given", o.nodes, words.Count(len(t), "instance is", "instances are"))
	}
	o.endpoints, o.nodes = t, len(t)
	return nil
}

// checkInstanceControls checks what lockbench is given to act on the
// service's instances (--target-pid, --target-container, --target-start,
// --target-redis-via, --target-lock-key): one per instance, in --target's
// order, each what it claims to be.
func (o *runOpts) checkInstanceControls(t servers.Endpoints) error {
	if len(o.targetPids) > 0 && len(o.targetPids) != len(t) {
		return usageErr("--target-pid gives %s for %s: give one per instance, in --target's order", words.Count(len(o.targetPids), "pid"), words.Count(len(t), "instance"))
	}
	for i, pid := range o.targetPids {
		if pid <= 1 {
			return usageErr("--target-pid: %d is not an instance's process id", pid)
		}
		if err := listensOn(pid, t[i]); err != nil {
			return err
		}
	}
	if len(o.targetCtrs) > 0 && len(o.targetCtrs) != len(t) {
		return usageErr("--target-container gives %s for %s: give one per instance, in --target's order", words.Count(len(o.targetCtrs), "container"), words.Count(len(t), "instance"))
	}
	if len(o.targetVia) > 0 && (len(o.targetVia) != len(t) || o.redis == "") {
		return usageErr("--target-redis-via gives the address each instance dials for its Redis: one per instance, in --target's order, with --redis the Redis itself")
	}
	if err := checkLoopback("target-redis-via", o.targetVia); err != nil {
		return err
	}
	if len(o.targetCtrs) > 0 && len(o.targetPids) > 0 {
		return usageErr("--target-container and --target-pid: give one or the other, the instances run in containers or as processes")
	}
	if len(o.targetStart) > 0 && len(o.targetStart) != len(o.targetPids) {
		return usageErr("--target-start gives %s for %s: give one per instance, with --target-pid", words.Count(len(o.targetStart), "command"), words.Count(len(o.targetPids), "pid"))
	}
	if o.targetLockKey != "" && o.redis == "" {
		return usageErr("--target-lock-key needs --redis, the address of the service's Redis")
	}
	return nil
}

// newResult starts the result of a benchmark run by command.
func (o *runOpts) newResult(command string, impls []harness.Impl) *reports.Result {
	return &reports.Result{
		Schema:  reports.SchemaVersion,
		Version: buildVersion(),
		Started: time.Now().UTC(),
		Command: command,
		Config:  o.config(impls),
	}
}

// workload is the sale the flags describe.
func (o *runOpts) workload() harness.Workload {
	return harness.Workload{
		Clients:        o.clients,
		Nodes:          o.nodes,
		Workers:        o.workers,
		Pool:           o.pool,
		Pipeline:       o.pipeline,
		Stock:          o.stock,
		Attempts:       o.attempts,
		Ramp:           o.ramp,
		Rate:           o.rate.perSecond,
		TTL:            o.ttl,
		Hold:           o.hold,
		Reentry:        o.reentry,
		Items:          o.items,
		Cart:           o.cart,
		Reads:          o.reads,
		Timeout:        o.timeout,
		CommandTimeout: o.cmdTimeout,
		Prefix:         o.prefix,
		Force:          o.force,
	}
}

// plan is the plan of a run of im: the flags' workload, faults and seed.
func (o *runOpts) plan(im harness.Impl, progress *progress) harness.Plan {
	p := harness.Plan{Impl: im, Workload: o.workload(), Faults: o.specs, Seed: o.seed, CheckTimeout: o.checkTimeout, Nodes: o.nodesPlan}
	if progress != nil {
		p.Progress = progress.update
	}
	return p
}

// runErr is the exit error of a sale that could not run, a run's or a
// matrix cell's: a usage error naming the flag to fix, else an
// infrastructure failure (or Ctrl-C's).
func runErr(ctx context.Context, err error) error {
	var e *exitError
	switch {
	case errors.As(err, &e):
		return err
	case errors.Is(err, safego.ErrPanic):
		return panicExit(err)
	case errors.Is(err, workload.ErrPrefixInUse):
		return flagErr("prefix", err)
	case errors.Is(err, sales.ErrTablesInUse):
		return flagErr("mysql-dsn", err)
	case errors.Is(err, faults.ErrUnavailable), errors.Is(err, faults.ErrParam):
		return flagErr("faults", err)
	case errors.Is(err, harness.ErrPlan):
		return usageErr("%s", plain(err))
	}
	return infraErr(ctx, err)
}

// finish writes the result where it was asked for and turns the verdicts
// into the exit code.
//
// The summary is printed before result.json is written, so that a file
// that cannot be written (a disk filled during the run) still leaves the
// verdicts on the terminal.
func finish(ctx context.Context, result *reports.Result, out string, asJSON bool, detail reports.Detail, stdout io.Writer) error {
	if err := printResult(result, asJSON, detail, stdout); err != nil {
		return err
	}
	if out != "" {
		if err := reports.WriteFile(filepath.Join(out, "result.json"), result); err != nil {
			return &exitError{code: exitInfra, err: fmt.Errorf("--out: %w", err)}
		}
	}
	if ctx.Err() != nil {
		return &exitError{code: exitInterrupted, err: errors.New("interrupted: the sale in progress was cut short and checked as recorded")}
	}
	return verdictExit(result.Runs)
}

// verdictExit is the exit of runs' verdicts: a failure (1) over an
// inconclusive run (4) over a pass (0).
func verdictExit(runs []reports.Run) error {
	var why string
	for _, r := range runs {
		switch r.Verdict {
		case reports.Pass:
		case reports.Interrupted:
			why = "interrupted: a run was cut short before its end (an interrupt, or a server lost), so its liveness could not be judged (see above)"
		case reports.Inconclusive:
			if len(r.NotFired) > 0 {
				why = cmp.Or(why, reports.NotFiredLine(&r)+" (see above)")
			}
			why = cmp.Or(why, "inconclusive: the harness was saturated and liveness could not be judged (see above)")
		default:
			return &exitError{code: exitFail}
		}
	}
	if why != "" {
		return &exitError{code: exitInconclusive, err: errors.New(why)}
	}
	return nil
}

// detailOf is the summary's detail that -v asks for.
func detailOf(verbose bool) reports.Detail {
	if verbose {
		return reports.Full
	}
	return reports.Brief
}

// printResult writes the result on stdout: its JSON, or the summary table
// with the backend and the reproduce line.
func printResult(result *reports.Result, asJSON bool, detail reports.Detail, stdout io.Writer) error {
	if asJSON {
		if err := reports.WriteJSON(stdout, result); err != nil {
			return err
		}
	} else {
		writeWhere(stdout, result.Config)
		if err := reports.WriteTable(stdout, result.Runs, detail); err != nil {
			return err
		}
		if len(result.NotRun) > 0 {
			fmt.Fprintf(stdout, "\nnever ran: %s (the run ended before %s turn)\n", strings.Join(result.NotRun, ", "), words.Plural(int64(len(result.NotRun)), "its", "their"))
		}
		if result.Command != "" {
			fmt.Fprintf(stdout, "\nreproduce: %s\n", result.Command)
		}
	}
	return nil
}

// The backends --backend accepts.
const (
	backendEmbedded = backends.BackendEmbedded
	backendRedis    = backends.BackendRedis
	backendDocker   = backends.BackendDocker
)

// resolveBackend checks --backend against --redis and --redis-image and
// fills in its default.
func (o *runOpts) resolveBackend(fs *pflag.FlagSet) error {
	if err := o.resolveSentinel(fs); err != nil {
		return err
	}
	switch o.backendKind {
	case "":
		o.backendKind = backendEmbedded
		if o.redis != "" {
			o.backendKind = backendRedis
		}
	case backendRedis:
		if o.redis == "" {
			return usageErr("--backend=redis needs --redis ADDR, the address of the Redis to run against")
		}
	case backendEmbedded, backendDocker, backendSentinel:
		if o.redis != "" {
			return usageErr("--redis applies to --backend=redis, not --backend=%s: drop one of them", o.backendKind)
		}
	default:
		return usageErr("--backend: unknown backend %q; accepts embedded, redis, docker or sentinel", o.backendKind)
	}
	if fs.Changed("redis-image") && o.backendKind != backendDocker && !o.sentinelDocker {
		return usageErr("--redis-image applies to --backend=docker and --sentinel-docker")
	}
	if o.redisImage == "" {
		return usageErr("--redis-image must not be empty")
	}
	return o.resolveImages(fs)
}

// command rebuilds the command line that reproduces the run, or the
// matrix when sub is "matrix": every flag that was set, and the seed.
func (o *runOpts) command(sub string) string {
	return o.commandLine(sub, nil, nil, o.secretArgs(o.needs))
}

// notReproduced are the flags no reproduce line carries: the seed comes
// last on its own, secrets are never printed (a DSN is written masked
// by secretArgs), and outputs belong to the run that wrote them. The instances'
// process ids and containers are carried: without them the line cannot
// run, and a process id that names another process by then is refused
// (listensOn).
var notReproduced = []string{"seed", "redis-password", "json", "out", "sign-key", "cpuprofile"}

// commandLine makes the reproduce lines of the run, the matrix and each
// cell with harness.CommandLine: Program and the subcommand sub (none
// for run), then set (flags the line must carry with these values, in
// order), then every other flag given on the command line (o.flags) that
// skip does not name nor carries a secret, then secret (a server's
// secret flags, masked: secretArgs), then the seed.
func (o *runOpts) commandLine(sub string, set [][2]string, skip []string, secret [][2]string) string {
	program := Program
	if sub != "" {
		program += " " + sub
	}
	flags := slices.Clone(set)
	if o.flags != nil {
		o.flags.VisitAll(func(f *pflag.Flag) {
			if !f.Changed || slices.Contains(notReproduced, f.Name) || slices.Contains(skip, f.Name) || slices.Contains(kindFlagNames(true), f.Name) ||
				slices.ContainsFunc(set, func(kv [2]string) bool { return kv[0] == f.Name }) {
				return
			}
			sv, ok := f.Value.(pflag.SliceValue)
			switch {
			case ok && f.Value.Type() == "stringArray": // given once per value
				for _, v := range sv.GetSlice() {
					flags = append(flags, [2]string{f.Name, v})
				}
			case ok:
				flags = append(flags, [2]string{f.Name, strings.Join(sv.GetSlice(), ",")})
			default:
				flags = append(flags, [2]string{f.Name, f.Value.String()})
			}
		})
	}
	flags = append(flags, secret...)
	return harness.CommandLine(program, flags, o.seed)
}

func (o *runOpts) config(impls []harness.Impl) reports.Config {
	names := make([]string, 0, len(impls))
	for _, im := range impls {
		names = append(names, im.Name)
	}
	ramp := o.ramp
	if o.rate.perSecond > 0 {
		ramp = 0 // not in force
	}
	return reports.Config{
		Impls:    names,
		Backend:  o.servers.Names(),
		MySQL:    o.mysqlName(),
		Nodes:    o.nodes,
		NodeMode: o.nodeModeName(),
		Clients:  o.clients,
		Stock:    o.stock,
		Attempts: o.attempts,
		Ramp:     reports.Duration(ramp),
		Rate:     o.rate.perSecond,
		TTL:      reports.Duration(harness.Lease(o.workload(), o.specs)),
		Hold:     reports.Duration(o.hold),
		Workers:  o.workers,
		Pipeline: o.pipeline,
		Seed:     int64(o.seed),
		Timeout:  reports.Duration(o.timeout),
		Faults:   specStrings(o.specs),
		Items:    oneIsZero(o.items),
		Cart:     oneIsZero(o.cart),
		Reads:    o.reads,
	}
}

// mysqlName names the run's MySQL, "" when it has none.
func (o *runOpts) mysqlName() string {
	if m := o.servers.Get(servers.KindMySQL); m != nil {
		return m.Name()
	}
	return ""
}

// oneIsZero leaves out of the result a count that is the default one.
func oneIsZero(n int) int {
	if n == 1 {
		return 0
	}
	return n
}

func specStrings(specs []faults.Spec) []string {
	var out []string
	for _, s := range specs {
		out = append(out, s.String())
	}
	return out
}

// rateFlag is --rate: buyers per second of an open arrival model, given
// per second or per minute (500/s, 500, 30000/m).
type rateFlag struct {
	perSecond float64
	text      string // as given, with its unit: the reproduce line's
}

// rateUnits are the units --rate accepts, in seconds.
var rateUnits = map[string]float64{"s": 1, "m": 60, "h": 3600}

// String is the rate as given, with its unit; empty when unset.
func (r *rateFlag) String() string { return r.text }

// Type names the flag's value in --help.
func (r *rateFlag) Type() string { return "rate" }

// Set reads a rate: a positive number of buyers, per second unless a unit
// (/s, /m, /h) says otherwise.
func (r *rateFlag) Set(s string) error {
	num, unit, _ := strings.Cut(strings.TrimSpace(s), "/")
	unit = cmp.Or(strings.TrimSpace(unit), "s")
	per, ok := rateUnits[unit]
	v, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
	if !ok || err != nil {
		return fmt.Errorf("%q is not a rate: give buyers per second or per minute, as 500/s, 500 or 30000/m", s)
	}
	if !(v > 0) || math.IsInf(v, 0) {
		return fmt.Errorf("the rate must be positive, got %q", s)
	}
	r.perSecond, r.text = v/per, strings.TrimSpace(num)+"/"+unit
	return nil
}

// span is how long the rate takes to bring n buyers: the last one's
// arrival.
func (r *rateFlag) span(n int) time.Duration {
	return workload.Rate(r.perSecond).At(n-1, n)
}
