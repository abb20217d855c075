package servers

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
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
		{"EVALSHA", shaOf("return 'cached'"), 0},
		{"EVAL", "return 'cached'", 0},
		{"EVALSHA", shaOf("return 'cached'"), 0},
		{"SCRIPT", "EXISTS", shaOf("return 'cached'")},
		{"SCRIPT", "LOAD", "return ARGV[1]"},
		{"EVALSHA", shaOf("return ARGV[1]"), 0, "x"},
		{"SCRIPT", "EXISTS", shaOf("return ARGV[1]"), shaOf("return 'never'")},
		{"EVAL", "error('boom')", 0},
		{"SCRIPT", "EXISTS", shaOf("error('boom')")},
		{"EVALSHA", shaOf("error('boom')"), 0},
		{"SCRIPT", "FLUSH"},
		{"EVALSHA", shaOf("return ARGV[1]"), 0, "x"},
		{"EVALSHA", shaOf("return 'cached'"), 0},
		{"SCRIPT", "EXISTS", shaOf("return 'cached'")},
		{"SCRIPT", "FLUSH", "NOW"},
		{"SCRIPT", "LOAD", "return 1 +"},
		{"EVALSHA", shaOf("return 1 +"), 0},
	}},
	{"state left by a script", [][]any{
		{"EVAL", "setmetatable(_G, nil); return 1", 0},
		{"EVAL", "leak = 'x'; return leak", 0},
		{"EVAL", "getmetatable(_G).__newindex = nil; return 1", 0},
		{"EVAL", "leak = 'y'; return leak", 0},
		{"EVAL", "KEYS = nil; ARGV = nil; redis = nil; return 1", 0},
		{"EVAL", "return {KEYS[1], ARGV[1], redis.call('PING')}", 1, "k", "a"},
		{"EVAL", "redis.call = function() return 'forged' end; return 1", 0},
		{"EVAL", "return redis.call('ECHO', 'real')", 0},
		{"EVAL", "local t = {} for i = 1, 300000 do t[i] = i end return select('#', unpack(t))", 0},
		{"EVAL", "return coroutine.yield(1)", 0},
		{"EVAL", "local function f() return f() + 1 end return f()", 0},
		{"EVAL", "return 9", 0},
	}},
	{"a subscribed client", [][]any{
		{"SUBSCRIBE", "ch"},
		{"EVAL", "return 1", 0},
	}},
	{"RESP3 asked by a script", [][]any{
		{"EVAL", "redis.setresp(3); return redis.call('HGETALL', KEYS[1])", 1, "h"},
		{"HSET", "h", "f", "v"},
		{"HGETALL", "h"},
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
		{"SELECT", "1"},
		{"MULTI"},
		{"SELECT", "0"},
		{"DISCARD"},
		{"EVAL", "return redis.call('SET', KEYS[1], 'still in 1')", 1, "d:j"},
		{"GET", "d:j"},
		{"SELECT", "0"},
		{"GET", "d:j"},
		{"EVAL", "return redis.call('GET', KEYS[1])", 1, "d:j"},
	}},
}

// shaOf is the SHA1 digest EVALSHA names src by.
func shaOf(src string) string {
	h := sha1.Sum([]byte(src))
	return hex.EncodeToString(h[:])
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

// both sends cmd on k (the kept state's server) and on f (miniredis's
// engine), and says whether the replies are the same.
func both(ctx context.Context, k, f *redis.Conn, cmd []any) (got, want reply, same bool) {
	got, want = do(ctx, k, cmd), do(ctx, f, cmd)
	return got, want, reflect.DeepEqual(got, want)
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
				if got, want, same := both(ctx, k, f, cmd); !same {
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
			// As go-redis's Script sends them: EVALSHA, once loaded; and EVAL.
			load := []any{"SCRIPT", "LOAD", string(src)}
			if got, want, same := both(ctx, k, f, load); !same {
				t.Fatalf("SCRIPT LOAD: kept state %#v, miniredis %#v", got, want)
			}
			var keys []any
			for _, call := range []any{"EVALSHA", "EVAL"} {
				script := any(shaOf(string(src)))
				if call == "EVAL" {
					script = string(src)
				}
				these := []any{name + ":a:" + call.(string), name + ":b:" + call.(string), name + ":c:" + call.(string), name + ":d:" + call.(string)}
				keys = append(keys, these...)
				for round, argv := range [][]any{{"30000", "owner:1", "5", "7"}, {"30000", "owner:1", "5", "7"}, {"10", "owner:2", "1", "2"}} {
					cmd := append(append([]any{call, script, len(these)}, these...), argv...)
					if got, want, same := both(ctx, k, f, cmd); !same {
						t.Errorf("%s round %d: kept state %#v, miniredis %#v", call, round, got, want)
					}
				}
			}
			for _, key := range keys {
				dump := []any{"EVAL", "local t = redis.call('TYPE', KEYS[1])['ok']; if t == 'string' then return redis.call('GET', KEYS[1]) elseif t == 'hash' then return redis.call('HGETALL', KEYS[1]) elseif t == 'zset' then return redis.call('ZRANGE', KEYS[1], 0, -1) elseif t == 'list' then return redis.call('LRANGE', KEYS[1], 0, -1) end return t", 1, key}
				if got, want, same := both(ctx, k, f, dump); !same {
					t.Errorf("key %s after: kept state %#v, miniredis %#v", key, got, want)
				}
			}
		})
	}
}

// keptServer starts an embedded server as lockbench runs it and returns
// a client of it; both are closed when the test ends.
func keptServer(t *testing.T) *redis.Client {
	t.Helper()
	e, err := StartEmbedded()
	if err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(e.Options())
	t.Cleanup(func() {
		c.Close()
		e.Close()
	})
	return c
}

// TestScriptsAtomic has scripts that read a counter and write it back
// one more, beside clients that INCR it, on the kept state: no update is
// lost only if nothing runs between a script's calls.
func TestScriptsAtomic(t *testing.T) {
	ctx := context.Background()
	c := keptServer(t)
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

// TestScriptsBlockingCall: a script waiting in a blocking command lets
// the server's lock go (as miniredis does); another script then runs
// meanwhile, and each gets its own reply. Script A waits for an element
// that script B pushes (when A is not yet waiting, A finds it at once:
// the replies are the same).
func TestScriptsBlockingCall(t *testing.T) {
	ctx := context.Background()
	c := keptServer(t)
	var a any
	var aErr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		a, aErr = c.Eval(ctx, "local r = redis.call('BLPOP', KEYS[1], '30'); return {ARGV[1], r}", []string{"q"}, "A").Result()
	}()
	time.Sleep(100 * time.Millisecond) // A waits by now, most likely
	b, bErr := c.Eval(ctx, "redis.call('RPUSH', KEYS[1], 'x'); return {ARGV[1], 'b'}", []string{"q"}, "B").Result()
	<-done
	if want := []any{"A", []any{"q", "x"}}; aErr != nil || !reflect.DeepEqual(a, want) {
		t.Errorf("the waiting script: %#v, %v; want %#v", a, aErr, want)
	}
	if want := []any{"B", "b"}; bErr != nil || !reflect.DeepEqual(b, want) {
		t.Errorf("the script run meanwhile: %#v, %v; want %#v", b, bErr, want)
	}
}
