package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/lockbench/lockbench/internal/redistest"
	"github.com/lockbench/lockbench/servers"
	"github.com/redis/go-redis/v9"
)

const atomicScript = "../../sales/scripts/atomic_sale.lua"

func TestBadInput(t *testing.T) {
	empty := filepath.Join(t.TempDir(), "empty.lua")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string // in stderr
	}{
		{[]string{"--requests=0"}, "--requests: 0"},
		{[]string{"--nodes=-1"}, "--nodes: -1"},
		{[]string{"--workers=20000"}, "--workers: 20000"},
		{[]string{"--redis=nohost"}, `--redis: "nohost"`},
		{[]string{"--script=" + filepath.Join(t.TempDir(), "missing.lua")}, "--script:"},
		{[]string{"--script=" + empty}, "is empty"},
		{[]string{"extra"}, `unexpected argument "extra"`},
		{[]string{"--no-such-flag"}, "unknown flag"},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(context.Background(), tc.args, &stdout, &stderr); code != 2 {
			t.Errorf("%v: exit %d, want 2 (stderr %q)", tc.args, code, stderr.String())
		}
		if !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("%v: stderr %q does not name %q", tc.args, stderr.String(), tc.want)
		}
		if stdout.Len() > 0 {
			t.Errorf("%v: printed %q", tc.args, stdout.String())
		}
	}
}

// TestRunsTheScript runs the atomic sale's script against a fresh
// redis-server and checks from the server's side that it ran as many
// times as reported, and did what the script does.
func TestRunsTheScript(t *testing.T) {
	addr := redistest.Start(t)
	ctx := context.Background()
	c := redis.NewClient(servers.ClientOptions(addr, ""))
	defer c.Close()
	if err := c.Set(ctx, "t:stock", 1000, 0).Err(); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	args := []string{"--redis=" + addr, "--script=" + atomicScript, "--prefix=t:", "--requests=300", "--nodes=2", "--workers=4"}
	if code := run(ctx, args, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	var res result
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
		t.Fatalf("output %q: %v", stdout.String(), err)
	}
	if res.Requests != 300 || res.Seconds <= 0 || res.Rate <= 0 {
		t.Errorf("result %+v, want 300 requests over a positive time", res)
	}
	stats, err := c.Info(ctx, "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`cmdstat_evalsha:calls=(\d+)`).FindStringSubmatch(stats)
	if m == nil || m[1] != "300" {
		t.Errorf("the server ran EVALSHA %v times, want 300:\n%s", m, stats)
	}
	// Each user's first call sells one unit and records one order; a
	// user drawn twice (rare) is refused as a duplicate.
	stock, err := c.Get(ctx, "t:stock").Int64()
	if err != nil {
		t.Fatal(err)
	}
	orders, err := c.HLen(ctx, "t:orders").Result()
	if err != nil {
		t.Fatal(err)
	}
	if sold := 1000 - stock; sold != orders || sold < 290 {
		t.Errorf("stock %d and %d orders: sold %d, want one order per unit and about 300", stock, orders, sold)
	}
}

func TestFailedRequest(t *testing.T) {
	addr := redistest.Start(t)
	bad := filepath.Join(t.TempDir(), "bad.lua")
	if err := os.WriteFile(bad, []byte("return redis.call('incr', KEYS[2])"), 0o600); err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(servers.ClientOptions(addr, ""))
	defer c.Close()
	// KEYS[2] holds a hash: INCR fails on it.
	if err := c.HSet(context.Background(), "t:orders", "u", 1).Err(); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"--redis=" + addr, "--script=" + bad, "--prefix=t:", "--requests=10", "--workers=" + strconv.Itoa(2)}, &stdout, &stderr)
	if code != 1 || !strings.Contains(stderr.String(), "WRONGTYPE") || stdout.Len() > 0 {
		t.Errorf("exit %d, stderr %q, stdout %q: want 1 naming the server's WRONGTYPE and no result", code, stderr.String(), stdout.String())
	}
}
