// Command scriptbench runs one Redis script as lockbench's atomic sale
// does, with nothing of lockbench around it: a go-redis client per node
// with lockbench's own client options (servers.ClientOptions), one
// connection per worker, each worker calling the script with two keys
// and a random user until the requests run out. It is make bench's
// second anchor beside redis-benchmark: the floor that any harness built
// on go-redis reaches on the same machine, so that a figure against
// redis-benchmark splits into go-redis's share and lockbench's.
//
//	go build -o bin/scriptbench ./internal/scriptbench
//	bin/scriptbench --redis=127.0.0.1:6379 --script=sales/scripts/atomic_sale.lua --requests=20000
//
// It prints one JSON line: {"requests":N,"seconds":S,"rate":R}; its CPU
// is measured from outside (scripts/bench-ratios.py runs it under
// /usr/bin/time, as it runs redis-benchmark and lockbench).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockbench/lockbench/servers"
	"github.com/redis/go-redis/v9"
	"github.com/spf13/pflag"
)

// maxScript bounds the script file read: lockbench's scripts are a few
// hundred bytes.
const maxScript = 1 << 20

// options are the command line's.
type options struct {
	redis, script, prefix    string
	requests, nodes, workers int
}

// result is the line printed at the end.
type result struct {
	Requests int64   `json:"requests"`
	Seconds  float64 `json:"seconds"`
	Rate     float64 `json:"rate"`
}

func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}

// run is the command: 0 when every request was answered, 1 when one
// failed, 2 for bad flags.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o, err := parse(args, stderr)
	if errors.Is(err, pflag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "scriptbench:", err)
		return 2
	}
	src, err := readScript(o.script)
	if err != nil {
		fmt.Fprintln(stderr, "scriptbench:", err)
		return 2
	}
	res, err := bench(ctx, o, redis.NewScript(src))
	if err != nil {
		fmt.Fprintln(stderr, "scriptbench:", err)
		return 1
	}
	json.NewEncoder(stdout).Encode(res)
	return 0
}

// parse reads and checks the flags.
func parse(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := pflag.NewFlagSet("scriptbench", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.redis, "redis", "127.0.0.1:6379", "the Redis server, host:port")
	fs.StringVar(&o.script, "script", "sales/scripts/atomic_sale.lua", "the Lua script: KEYS[1] and KEYS[2] are prefix+stock and prefix+orders, ARGV[1] a random user")
	fs.StringVar(&o.prefix, "prefix", "lockbench-bench:", "the keys' prefix (the caller sets and removes them)")
	fs.IntVar(&o.requests, "requests", 20000, "how many times the script runs in all")
	fs.IntVar(&o.nodes, "nodes", 2, "clients, each with its own pool, as lockbench's nodes")
	fs.IntVar(&o.workers, "workers", 200, "goroutines per client, each with a connection of its own")
	fs.Usage = func() {
		fmt.Fprint(stderr, "scriptbench runs a Redis script through go-redis with lockbench's client options, nothing else.\n\nUsage:\n  scriptbench --redis=127.0.0.1:6379 --script=sales/scripts/atomic_sale.lua --requests=20000\n\nFlags:\n")
		fmt.Fprint(stderr, fs.FlagUsages())
	}
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	switch {
	case fs.NArg() > 0:
		return o, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	case o.requests < 1 || o.requests > 1e9:
		return o, fmt.Errorf("--requests: %d is not between 1 and 1,000,000,000", o.requests)
	case o.nodes < 1 || o.nodes > 64:
		return o, fmt.Errorf("--nodes: %d is not between 1 and 64", o.nodes)
	case o.workers < 1 || o.workers > 10000:
		return o, fmt.Errorf("--workers: %d is not between 1 and 10,000", o.workers)
	}
	if err := servers.CheckHostPort(o.redis); err != nil {
		return o, fmt.Errorf("--redis: %q is not host:port (%v)", o.redis, err)
	}
	return o, nil
}

// readScript is the script file's text, bounded.
func readScript(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("--script: %v", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxScript+1))
	switch {
	case err != nil:
		return "", fmt.Errorf("--script: %v", err)
	case len(b) > maxScript:
		return "", fmt.Errorf("--script: %s is larger than %d bytes", path, maxScript)
	case len(b) == 0:
		return "", fmt.Errorf("--script: %s is empty", path)
	}
	return string(b), nil
}

// bench runs the script o.requests times from o.nodes clients of
// o.workers goroutines each and times it from the first request to the
// last answer, connections dialled on first use as lockbench's are.
func bench(ctx context.Context, o options, s *redis.Script) (result, error) {
	keys := []string{o.prefix + "stock", o.prefix + "orders"}
	clients := make([]*redis.Client, o.nodes)
	for i := range clients {
		opts := servers.ClientOptions(o.redis, "")
		opts.PoolSize = o.workers
		clients[i] = redis.NewClient(opts)
		defer clients[i].Close()
	}
	if err := s.Load(ctx, clients[0]).Err(); err != nil {
		return result{}, fmt.Errorf("loading the script into %s: %v", o.redis, err)
	}
	var left atomic.Int64
	left.Store(int64(o.requests))
	var failed atomic.Pointer[error]
	var wg sync.WaitGroup
	start := time.Now()
	for _, c := range clients {
		for range o.workers {
			wg.Go(func() {
				for left.Add(-1) >= 0 && failed.Load() == nil {
					user := strconv.FormatUint(rand.Uint64N(1e8), 10)
					if err := s.Run(ctx, c, keys, user).Err(); err != nil {
						failed.CompareAndSwap(nil, &err)
					}
				}
			})
		}
	}
	wg.Wait()
	d := time.Since(start)
	if err := failed.Load(); err != nil {
		return result{}, fmt.Errorf("a request failed: %v", *err)
	}
	return result{Requests: int64(o.requests), Seconds: d.Seconds(), Rate: float64(o.requests) / d.Seconds()}, nil
}
