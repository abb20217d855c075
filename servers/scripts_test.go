package servers

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// scriptSteps are commands sent in order, each a test of the embedded
// server's kept Lua state against miniredis's own script engine.
var scriptSteps = []struct {
	name string
	cmds [][]any
}{
	{"replies of each type", [][]any{
		{"EVAL", "return 1.9", 0},
		{"EVAL", "return -3", 0},
		{"EVAL", "return 'text'", 0},
		{"EVAL", "return true", 0},
		{"EVAL", "return false", 0},
		{"EVAL", "return nil", 0},
		{"EVAL", "return", 0},
		{"EVAL", "return {1, 'two', {3, false}, true}", 0},
		{"EVAL", "return {1, nil, 3}", 0},
		{"EVAL", "return {err = 'MYERR custom'}", 0},
		{"EVAL", "return {ok = 'FINE'}", 0},
		{"EVAL", "return redis.error_reply('BAD thing')", 0},
		{"EVAL", "return redis.error_reply('-BAD thing')", 0},
		{"EVAL", "return redis.error_reply('plain')", 0},
		{"EVAL", "return redis.status_reply('DONE')", 0},
		{"EVAL", "return redis.sha1hex('abc')", 0},
		{"EVAL", "return cjson.encode({a = {1, 2}})", 0},
		{"EVAL", "return cjson.decode('[1,\"x\"]')[2]", 0},
		{"EVAL", "return redis.LOG_WARNING", 0},
	}},
	{"keys and arguments", [][]any{
		{"EVAL", "return {KEYS[1], KEYS[2], ARGV[1], ARGV[2], #KEYS, #ARGV}", 2, "k1", "k2", "a1", "a2"},
		{"EVAL", "return #KEYS + #ARGV", 0},
		{"EVAL", "return {KEYS[1], ARGV[1]}", 1, "only"},
	}},
	{"calls and their replies", [][]any{
		{"EVAL", "return redis.call('SET', KEYS[1], ARGV[1])", 1, "s:k", "v"},
		{"EVAL", "return redis.call('GET', KEYS[1])", 1, "s:k"},
		{"EVAL", "return redis.call('GET', KEYS[1])", 1, "s:missing"},
		{"EVAL", "return redis.call('INCRBY', KEYS[1], 2.5)", 1, "s:n"},
		{"EVAL", "return redis.call('INCRBY', KEYS[1], 7)", 1, "s:n"},
		{"EVAL", "redis.call('RPUSH', KEYS[1], 'a', 'b'); return redis.call('LRANGE', KEYS[1], 0, -1)", 1, "s:l"},
		{"EVAL", "return redis.call('PEXPIRE', KEYS[1], 60000)", 1, "s:k"},
		{"EVAL", "return redis.call('PING')", 0},
		{"EVAL", "return redis.call('TYPE', KEYS[1])", 1, "s:l"},
		{"EVAL", "return redis.call('HGETALL', KEYS[1])", 1, "s:h"},
		{"EVAL", "return redis.pcall('INCR', KEYS[1])", 1, "s:l"},
		{"EVAL", "return redis.call('INCR', KEYS[1])", 1, "s:l"},
		{"EVAL", "local r = redis.pcall('INCR', KEYS[1]); return r['err']", 1, "s:l"},
		{"EVAL", "return redis.call('NOSUCHCOMMAND')", 0},
		{"EVAL", "return redis.pcall('NOSUCHCOMMAND')", 0},
		{"EVAL", "return redis.call()", 0},
		{"EVAL", "return redis.call('GET', {})", 0},
		{"EVAL", "return redis.call('EVAL', 'return 1', 0)", 0},
		{"EVAL", "return redis.call('MULTI')", 0},
		{"GET", "s:k"},
		{"PTTL", "s:k"},
	}},
	{"errors in scripts", [][]any{
		{"EVAL", "x = 1", 0},
		{"EVAL", "return undefined_global", 0},
		{"EVAL", "error('raised')", 0},
		{"EVAL", "return 1 +", 0},
		{"EVAL", "return 1", "notanumber"},
		{"EVAL", "return 1", -1},
		{"EVAL", "return 1", 3, "k"},
		{"EVAL", "return 1"},
		{"EVAL", "redis.setresp(4)", 0},
		{"EVAL", "redis.setresp(3); return redis.call('PING')", 0},
		{"EVAL", "return 2", 0},
	}},
	{"script cache", [][]any{
		{"EVALSHA", "e0e1f9fabfc9d4800c877a703b823ac0578ff8db", 0},
		{"EVAL", "return 'cached'", 0},
		{"EVALSHA", "0b6d0e6b8de1dbd1e1f3ac8dbc7a8e6b6f8d7bd7", 0},
		{"SCRIPT", "LOAD", "return ARGV[1]"},
		{"EVALSHA", "e5d8c9a7b7f2a8eaf6d8d4d14e4e4bd2fa8a3a26", 0, "x"},
		{"SCRIPT", "EXISTS", "e5d8c9a7b7f2a8eaf6d8d4d14e4e4bd2fa8a3a26"},
		{"SCRIPT", "FLUSH"},
		{"EVALSHA", "e5d8c9a7b7f2a8eaf6d8d4d14e4e4bd2fa8a3a26", 0, "x"},
		{"SCRIPT", "LOAD", "return 1 +"},
	}},
	{"scripts in a transaction", [][]any{
		{"MULTI"},
		{"EVAL", "return redis.call('INCR', KEYS[1])", 1, "t:n"},
		{"EVAL", "return redis.call('INCR', KEYS[1])", 1, "t:n"},
		{"EXEC"},
		{"GET", "t:n"},
	}},
	{"another database", [][]any{
		{"SELECT", "1"},
		{"EVAL", "return redis.call('SET', KEYS[1], 'in 1')", 1, "d:k"},
		{"SELECT", "0"},
		{"GET", "d:k"},
		{"EVAL", "return redis.call('GET', KEYS[1])", 1, "d:k"},
		{"EVAL", "redis.call('SELECT', 0); return redis.call('GET', KEYS[1])", 1, "d:k"},
	}},
}

// reply is what a command got: its value and its error's text.
type reply struct {
	Val any
	Err string
}

// position is where in a chunk Lua raised an error: the global guard's
// lines differ between the two engines, and what the error says does not.
var position = regexp.MustCompile(`\S*:\d+:?`)

func do(ctx context.Context, c *redis.Conn, cmd []any) reply {
	v, err := c.Do(ctx, cmd...).Result()
	r := reply{Val: v}
	if err != nil && err != redis.Nil {
		r.Err = position.ReplaceAllString(err.Error(), "L")
	}
	return r
}

// twoServers starts an embedded server with the kept Lua state and one
// whose scripts miniredis runs, their clocks stopped at the same instant
// (a script's reply may depend on it), and a client of each.
func twoServers(t *testing.T) (kept, fresh *redis.Client) {
	t.Helper()
	now := time.Now()
	var clients []*redis.Client
	for _, keep := range []bool{true, false} {
		e, err := startEmbedded(keep)
		if err != nil {
			t.Fatal(err)
		}
		close(e.stop)
		e.done.Wait()
		e.m.SetTime(now)
		c := redis.NewClient(e.Options())
		t.Cleanup(func() {
			c.Close()
			e.m.Close()
		})
		clients = append(clients, c)
	}
	return clients[0], clients[1]
}

// TestScriptsAsMiniredis sends every step to an embedded server with the
// kept Lua state and to one whose scripts miniredis runs, each step on
// one connection per server, and asks for the same replies.
func TestScriptsAsMiniredis(t *testing.T) {
	ctx := context.Background()
	ck, cf := twoServers(t)
	// A function is nil to Redis; miniredis's engine panics on it. A
	// script's calls share one context, on database 0.
	if v, err := ck.Eval(ctx, "return function() end", nil).Result(); err != redis.Nil {
		t.Errorf("a returned function: %v, %v; want nil", v, err)
	}
	if v, err := ck.Eval(ctx, "return redis.call('SELECT', 1)", nil).Result(); err == nil || !strings.Contains(err.Error(), "database 0 only") {
		t.Errorf("SELECT 1 in a script: %v, %v; want an error that says database 0 only", v, err)
	}
	for _, tc := range scriptSteps {
		t.Run(tc.name, func(t *testing.T) {
			k, f := ck.Conn(), cf.Conn()
			defer k.Close()
			defer f.Close()
			for _, cmd := range tc.cmds {
				got, want := do(ctx, k, cmd), do(ctx, f, cmd)
				if !reflect.DeepEqual(got, want) {
					t.Errorf("%v: kept state %#v, miniredis %#v", cmd, got, want)
				}
			}
		})
	}
}

// TestScriptsOfLockbench runs each of lockbench's own scripts (the locks'
// and the sales') on both servers, three times with the same keys, and
// asks for the same replies and the same keys afterwards.
func TestScriptsOfLockbench(t *testing.T) {
	ctx := context.Background()
	var files []string
	for _, dir := range []string{"../locks/scripts", "../sales/scripts"} {
		m, err := filepath.Glob(filepath.Join(dir, "*.lua"))
		if err != nil || len(m) == 0 {
			t.Fatalf("no scripts in %s (%v)", dir, err)
		}
		files = append(files, m...)
	}
	ck, cf := twoServers(t)
	for _, file := range files {
		src, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		name := strings.TrimSuffix(filepath.Base(file), ".lua")
		t.Run(name, func(t *testing.T) {
			k, f := ck.Conn(), cf.Conn()
			defer k.Close()
			defer f.Close()
			keys := []any{name + ":a", name + ":b", name + ":c", name + ":d"}
			for round, argv := range [][]any{{"30000", "owner:1", "5", "7"}, {"30000", "owner:1", "5", "7"}, {"10", "owner:2", "1", "2"}} {
				cmd := append(append([]any{"EVAL", string(src), len(keys)}, keys...), argv...)
				got, want := do(ctx, k, cmd), do(ctx, f, cmd)
				if !reflect.DeepEqual(got, want) {
					t.Errorf("round %d: kept state %#v, miniredis %#v", round, got, want)
				}
			}
			for _, key := range keys {
				dump := []any{"EVAL", "local t = redis.call('TYPE', KEYS[1])['ok']; if t == 'string' then return redis.call('GET', KEYS[1]) elseif t == 'hash' then return redis.call('HGETALL', KEYS[1]) elseif t == 'zset' then return redis.call('ZRANGE', KEYS[1], 0, -1) elseif t == 'list' then return redis.call('LRANGE', KEYS[1], 0, -1) end return t", 1, key}
				got, want := do(ctx, k, dump), do(ctx, f, dump)
				if !reflect.DeepEqual(got, want) {
					t.Errorf("key %s after: kept state %#v, miniredis %#v", key, got, want)
				}
			}
		})
	}
}

// TestScriptsAtomic has scripts that read a counter and write it back
// one more, beside clients that INCR it, on the kept state: no update is
// lost only if nothing runs between a script's calls.
func TestScriptsAtomic(t *testing.T) {
	ctx := context.Background()
	e, err := StartEmbedded()
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	c := redis.NewClient(e.Options())
	defer c.Close()
	const workers, each = 16, 150
	bump := redis.NewScript("local v = tonumber(redis.call('GET', KEYS[1]) or '0'); for i = 1, 200 do v = v + 0 end; redis.call('SET', KEYS[1], v + 1); return v + 1")
	var wg sync.WaitGroup
	errs := make(chan error, 2*workers)
	for w := 0; w < workers; w++ {
		wg.Add(2)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				if err := bump.Run(ctx, c, []string{"n"}).Err(); err != nil {
					errs <- err
					return
				}
			}
		}()
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				if err := c.Incr(ctx, "n").Err(); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if n, err := c.Get(ctx, "n").Int(); err != nil || n != 2*workers*each {
		t.Fatalf("counter %d (%v); want %d: a script was not atomic", n, err, 2*workers*each)
	}
}
