package servers

import (
	"bufio"
	"bytes"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/alicebob/miniredis/v2"
	luajson "github.com/alicebob/miniredis/v2/gopher-json"
	"github.com/alicebob/miniredis/v2/server"
	lua "github.com/yuin/gopher-lua"
	"github.com/yuin/gopher-lua/parse"
)

// scripts runs the embedded server's EVAL and EVALSHA on one Lua state
// kept from script to script, where miniredis builds a new state for
// each (seven libraries, the JSON module, the global guard: two thirds
// of the default run's CPU time). A script runs under the server's lock,
// as miniredis runs it, so one state serves them all, one at a time;
// KEYS and ARGV are new for every script, the redis table's entries and
// the global guard set again.
//
// Its redis.call and redis.pcall pass a command to miniredis with the
// context miniredis gives a script's own calls (taken from one script
// miniredis runs at start), so that they run under the lock the script
// holds. Whatever this engine does not take (EVAL_RO, a client in
// MULTI, subscribed, on another database, a script that does not
// compile, bad arguments, an EVALSHA it does not know, a script that
// comes while one of the engine's waits in a blocking command) goes on
// to miniredis as before.
//
// Kept state differs from a new one in one way: a script that changes a
// library's table (string, math, ...), adds to the redis table, or sets a
// global with rawset changes it for the scripts after it. Scripts cannot
// create globals otherwise, as on Redis.
type scripts struct {
	m      *miniredis.Miniredis
	server func() *server.Server // m's server, nil while it restarts or once closed

	mu      sync.Mutex                    // guards srcs, protos and flushes
	srcs    map[string]string             // sha1 -> source, of every script a client loaded or ran without error
	protos  map[string]*lua.FunctionProto // sha1 -> compiled
	flushes int                           // SCRIPT FLUSHes so far: a script run across one is not kept
	nested  atomic.Value                  // miniredis's context of a script's call (any), for ours
	bootSHA string                        // the script nested was taken from (its errors name it)
	own     sync.Map                      // *server.Peer this engine dispatches on: the hook passes them

	// Used only under the server's lock, by one script at a time.
	running  bool          // a script runs (and may have let the lock go, waiting in a blocking command)
	guard    *lua.LTable   // the globals' metatable, set again before each script
	guardFns [2]lua.LValue // its __newindex and __index
	l        *lua.LState
	out      bytes.Buffer
	wr       *bufio.Writer
	rd       *bufio.Reader
	sha      string                // the running script's
	srv      *server.Server        // the running script's server
	peer     *server.Peer          // the running script's client
	funcs    map[string]lua.LValue // the redis table's functions and constants
	redis    *lua.LTable           // the redis table, its entries set again for each script
}

// clientState is what the hook knows of a client connection, read and
// written only by that connection's goroutine (miniredis serves each
// connection's commands one at a time, on one goroutine).
type clientState struct {
	multi      bool // between MULTI and EXEC or DISCARD: scripts are queued, miniredis's job
	subscribed bool // in pub/sub mode: miniredis refuses scripts
	otherDB    bool // may be on another database than 0 (SELECT, kept until a SELECT 0 outside MULTI): miniredis's job
}

// bootScript is run by miniredis once, so that its call of PING shows
// the hook the context miniredis gives a script's calls.
const bootScript = "return redis.call('PING')"

// guardGlobals makes a script's global assignment, or read of a global
// that does not exist, an error, as on Redis; code in Go (the libraries)
// may still set globals. debug is kept from scripts.
const guardGlobals = `
local getinfo = debug.getinfo
local function fromScript() local i = getinfo(3, "S") return i and i.what ~= "C" end
setmetatable(_G, {
  __newindex = function(t, name, v)
    if fromScript() then error("Script attempted to create global variable '" .. tostring(name) .. "'", 2) end
    rawset(t, name, v)
  end,
  __index = function(t, name)
    if fromScript() then error("Script attempted to access nonexistent global variable '" .. tostring(name) .. "'", 2) end
    return rawget(t, name)
  end,
})
debug = nil
`

// newScripts makes the engine of m, whose server is server(); boot
// readies it.
func newScripts(m *miniredis.Miniredis, server func() *server.Server) (*scripts, error) {
	s := &scripts{m: m, server: server, srcs: map[string]string{}, protos: map[string]*lua.FunctionProto{}, bootSHA: sha1Hex(bootScript)}
	s.wr = bufio.NewWriter(&s.out)
	s.rd = bufio.NewReader(&s.out)
	l, err := s.newState()
	if err != nil {
		return nil, err
	}
	s.l = l
	return s, nil
}

// boot has miniredis run bootScript on srv, whose hook shows the engine
// its script's call (seeCall).
func (s *scripts) boot(srv *server.Server) error {
	reply, err := s.dispatch(srv, "EVAL", bootScript, "0")
	if err != nil || reply != server.Simple("PONG") || s.nested.Load() == nil {
		return fmt.Errorf("embedded server: its scripts' calls were not seen (%v, %v)", reply, err)
	}
	return nil
}

// seeCall is shown every script's call the hook sees: the first is
// bootScript's, whose context the engine's calls use.
func (s *scripts) seeCall(p *server.Peer) {
	if s.nested.Load() == nil {
		s.nested.CompareAndSwap(nil, p.Ctx)
	}
}

// isOwn says whether p is a connection the engine made (dispatch).
func (s *scripts) isOwn(p *server.Peer) bool {
	_, ok := s.own.Load(p)
	return ok
}

// dispatch sends a command to srv on a connection of the engine's own
// and returns miniredis's reply (an error reply as the error).
func (s *scripts) dispatch(srv *server.Server, args ...string) (any, error) {
	var out bytes.Buffer
	w := bufio.NewWriter(&out)
	p := server.NewPeer(w)
	s.own.Store(p, struct{}{})
	defer s.own.Delete(p)
	srv.Dispatch(p, args)
	if err := w.Flush(); err != nil {
		return nil, err
	}
	return server.ParseReply(bufio.NewReader(&out))
}

// newState opens the libraries a Redis script has: Lua's base, package,
// coroutine, table, string, math, cjson, and os.clock, as miniredis's.
func (s *scripts) newState() (*lua.LState, error) {
	l := lua.NewState(lua.Options{SkipOpenLibs: true})
	for _, lib := range []struct {
		name string
		open lua.LGFunction
	}{
		{lua.LoadLibName, lua.OpenPackage},
		{lua.BaseLibName, lua.OpenBase},
		{lua.CoroutineLibName, lua.OpenCoroutine},
		{lua.TabLibName, lua.OpenTable},
		{lua.StringLibName, lua.OpenString},
		{lua.MathLibName, lua.OpenMath},
		{lua.DebugLibName, lua.OpenDebug},
	} {
		if err := l.CallByParam(lua.P{Fn: l.NewFunction(lib.open), Protect: true}, lua.LString(lib.name)); err != nil {
			l.Close()
			return nil, fmt.Errorf("embedded server: Lua library %s: %v", lib.name, err)
		}
	}
	luajson.Preload(l)
	if err := l.DoString(`cjson = require("json")`); err != nil {
		l.Close()
		return nil, fmt.Errorf("embedded server: Lua cjson: %v", err)
	}
	l.RegisterModule("os", map[string]lua.LGFunction{"clock": func(l *lua.LState) int {
		l.Push(lua.LNumber(42)) // miniredis's: no CPU time is measured
		return 1
	}})
	s.funcs = s.redisFuncs(l)
	s.redis = l.CreateTable(0, len(s.funcs))
	if err := l.DoString(guardGlobals); err != nil {
		l.Close()
		return nil, fmt.Errorf("embedded server: Lua global guard: %v", err)
	}
	guard, ok := l.GetMetatable(l.G.Global).(*lua.LTable)
	if !ok {
		l.Close()
		return nil, fmt.Errorf("embedded server: Lua global guard: no metatable")
	}
	s.guard = guard
	s.guardFns = [2]lua.LValue{guard.RawGetString("__newindex"), guard.RawGetString("__index")}
	return l, nil
}

// hook takes a client's EVAL or EVALSHA when it can (see scripts), and
// keeps its clientState; it returns whether it answered the command.
func (s *scripts) hook(p *server.Peer, st *clientState, cmd string, args []string) bool {
	switch cmd {
	case "MULTI":
		st.multi = true
	case "EXEC", "DISCARD":
		if len(args) == 0 { // with arguments, refused: the transaction goes on
			st.multi = false
		}
	case "SUBSCRIBE", "PSUBSCRIBE", "SSUBSCRIBE":
		st.subscribed = true
	case "SELECT":
		// A SELECT in MULTI may be discarded: only one outside it is
		// sure to take the client back to 0.
		if len(args) != 1 || args[0] != "0" {
			st.otherDB = true
		} else if !st.multi {
			st.otherDB = false
		}
	case "SCRIPT":
		if !st.multi {
			return s.scriptCmd(p, args)
		}
	case "EVAL", "EVALSHA":
		if st.multi || st.subscribed || st.otherDB || len(args) < 2 {
			return false
		}
		return s.eval(p, cmd == "EVAL", args)
	}
	return false
}

// scriptCmd follows a client's SCRIPT LOAD, which miniredis answers, and
// runs its SCRIPT FLUSH: miniredis's first, then the engine's, so that
// no script the client flushed is left here (a script run across the
// flush is not kept). It returns whether it answered the command.
func (s *scripts) scriptCmd(p *server.Peer, args []string) bool {
	if len(args) == 0 {
		return false
	}
	switch strings.ToUpper(args[0]) {
	case "LOAD":
		if len(args) == 2 {
			s.mu.Lock()
			s.srcs[sha1Hex(args[1])] = args[1]
			s.mu.Unlock()
		}
	case "FLUSH":
		srv := s.server()
		if srv == nil || len(args) > 2 || len(args) == 2 && !strings.EqualFold(args[1], "SYNC") && !strings.EqualFold(args[1], "ASYNC") {
			return false // miniredis says what is wrong
		}
		if _, err := s.dispatch(srv, append([]string{"SCRIPT"}, args...)...); err != nil {
			p.WriteError(err.Error())
			return true
		}
		s.mu.Lock()
		s.srcs, s.protos = map[string]string{}, map[string]*lua.FunctionProto{}
		s.flushes++
		s.mu.Unlock()
		p.WriteOK()
		return true
	}
	return false
}

// eval runs a client's script, when it compiles and its arguments are
// good; otherwise it leaves the command to miniredis (false).
func (s *scripts) eval(p *server.Peer, isEval bool, args []string) bool {
	sha, src := args[0], args[0]
	if isEval {
		sha = sha1Hex(src)
	}
	s.mu.Lock()
	if !isEval {
		var ok bool
		if src, ok = s.srcs[sha]; !ok {
			s.mu.Unlock()
			return false
		}
	}
	proto := s.protos[sha]
	_, known := s.srcs[sha]
	flushes := s.flushes
	s.mu.Unlock()
	if proto == nil {
		chunk, err := parse.Parse(strings.NewReader(src), "<string>")
		if err != nil {
			return false
		}
		if proto, err = lua.Compile(chunk, ""); err != nil {
			return false
		}
	}
	nkeys, err := strconv.Atoi(args[1])
	if err != nil || nkeys < 0 || nkeys > len(args)-2 {
		return false
	}
	srv := s.server()
	if srv == nil {
		return false // closed, or restarting
	}
	s.mu.Lock()
	s.protos[sha] = proto
	s.mu.Unlock()

	s.m.Lock()
	if s.running {
		// A script of the engine waits in a blocking command, which let
		// the lock go: this one goes to miniredis, on a state of its own.
		s.m.Unlock()
		return false
	}
	s.running = true
	ok := s.run(p, srv, sha, proto, args[2:2+nkeys], args[2+nkeys:])
	s.running = false
	s.m.Unlock()

	if ok && isEval && !known {
		// As miniredis, a script run without error is kept, for EVALSHA
		// and SCRIPT EXISTS; miniredis is given it too.
		if _, err := s.dispatch(srv, "SCRIPT", "LOAD", src); err != nil {
			return true
		}
		s.mu.Lock()
		if s.flushes == flushes {
			s.srcs[sha] = src
		}
		s.mu.Unlock()
	}
	return true
}

// run runs a compiled script under the server's lock and writes its
// reply to p; false when the script raised an error.
func (s *scripts) run(p *server.Peer, srv *server.Server, sha string, proto *lua.FunctionProto, keys, argv []string) bool {
	l := s.l
	s.sha = sha
	g := l.G.Global
	s.srv, s.peer = srv, p
	// The guard as made, whatever the last script did to it.
	s.guard.RawSetString("__newindex", s.guardFns[0])
	s.guard.RawSetString("__index", s.guardFns[1])
	if l.GetMetatable(g) != s.guard {
		l.SetMetatable(g, s.guard)
	}
	g.RawSetString("KEYS", stringsTable(l, keys))
	g.RawSetString("ARGV", stringsTable(l, argv))
	for name, f := range s.funcs {
		s.redis.RawSetString(name, f) // as made, whatever the last script did to them
	}
	g.RawSetString("redis", s.redis)
	g.RawSetString("server", s.redis)
	resp3 := p.Resp3
	l.Push(l.NewFunctionFromProto(proto))
	err := l.PCall(0, lua.MultRet, nil)
	p.Resp3, p.SwitchResp3 = resp3, nil
	if err != nil {
		l.SetTop(0)
		p.WriteError("ERR Error compiling script (new function): " + err.Error()) // miniredis's words
		return false
	}
	writeReply(l, p, l.Get(1))
	l.SetTop(0)
	return true
}

// stringsTable is a Lua array of ss.
func stringsTable(l *lua.LState, ss []string) *lua.LTable {
	t := l.CreateTable(len(ss), 0)
	for i, v := range ss {
		t.RawSetInt(i+1, lua.LString(v))
	}
	return t
}

// redisFuncs are the functions and constants of a script's redis table:
// call and pcall, through the engine to its server; the replies' and
// logging helpers; setresp, which (as miniredis's) changes nothing the
// script sees. They are made once, and set again before each script.
func (s *scripts) redisFuncs(l *lua.LState) map[string]lua.LValue {
	f := map[string]lua.LValue{
		"call":  l.NewFunction(s.redisCall(true)),
		"pcall": l.NewFunction(s.redisCall(false)),
		"error_reply": l.NewFunction(func(l *lua.LState) int {
			msg, ok := l.Get(1).(lua.LString)
			if !ok {
				l.Error(lua.LString("wrong number or type of arguments"), 1)
			}
			code, rest, found := strings.Cut(string(msg), " ")
			code = strings.TrimPrefix(code, "-")
			if !found {
				code, rest = "ERR", code
			}
			l.Push(replyTable(l, "err", code+" "+rest))
			return 1
		}),
		"status_reply": l.NewFunction(func(l *lua.LState) int {
			msg, ok := l.Get(1).(lua.LString)
			if !ok {
				l.Error(lua.LString("wrong number or type of arguments"), 1)
			}
			l.Push(replyTable(l, "ok", string(msg)))
			return 1
		}),
		"sha1hex": l.NewFunction(func(l *lua.LState) int {
			if l.GetTop() != 1 {
				l.Error(lua.LString("wrong number of arguments"), 1)
			}
			l.Push(lua.LString(sha1Hex(lua.LVAsString(l.Get(1)))))
			return 1
		}),
		"log": l.NewFunction(func(l *lua.LState) int {
			l.CheckInt(1)
			l.CheckString(2)
			return 0
		}),
		"replicate_commands": l.NewFunction(func(l *lua.LState) int {
			l.Push(lua.LTrue)
			return 1
		}),
		"set_repl": l.NewFunction(func(l *lua.LState) int {
			if l.GetTop() != 1 {
				l.Error(lua.LString("wrong number of arguments"), 1)
			}
			return 1
		}),
		"setresp": l.NewFunction(func(l *lua.LState) int {
			switch v := l.CheckInt(1); v {
			case 2, 3:
				resp3 := v == 3
				s.peer.SwitchResp3 = &resp3 // undone when the script ends (run)
			default:
				l.Error(lua.LString("RESP version must be 2 or 3"), 1)
			}
			return 0
		}),
	}
	for i, name := range []string{"LOG_DEBUG", "LOG_VERBOSE", "LOG_NOTICE", "LOG_WARNING"} {
		f[name] = lua.LNumber(i)
	}
	return f
}

// redisCall is redis.call (failFast: an error reply raises it) or
// redis.pcall (returns it as a table with err).
func (s *scripts) redisCall(failFast bool) lua.LGFunction {
	return func(l *lua.LState) int {
		top := l.GetTop()
		if top == 0 {
			l.Error(lua.LString(fmt.Sprintf("Please specify at least one argument for this redis lib call script: %s, &c.", s.sha)), 1)
		}
		args := make([]string, top)
		for i := range args {
			switch v := l.Get(i + 1).(type) {
			case lua.LNumber:
				args[i] = v.String()
			case lua.LString:
				args[i] = string(v)
			default:
				l.Error(lua.LString(fmt.Sprintf("Lua redis lib command arguments must be strings or integers script: %s, &c.", s.sha)), 1)
			}
		}
		if strings.EqualFold(args[0], "SELECT") {
			// The calls share one context, on database 0: SELECT 0 is
			// all it can do.
			if len(args) != 2 || args[1] != "0" {
				l.Error(lua.LString("ERR lockbench's embedded server runs a script on database 0 only: SELECT in a script must select 0"), 1)
			}
			l.Push(replyTable(l, "ok", "OK"))
			return 1
		}
		s.out.Reset()
		s.wr.Reset(&s.out)
		p := server.NewPeer(s.wr)
		p.Ctx = s.nested.Load()
		s.srv.Dispatch(p, args)
		_ = s.wr.Flush() // into a bytes.Buffer: no error
		s.rd.Reset(&s.out)
		res, err := server.ParseReply(s.rd)
		if err != nil {
			msg := strings.ReplaceAll(err.Error(), s.bootSHA, s.sha)
			unknown := strings.Contains(msg, "ERR unknown command")
			if failFast {
				if unknown {
					msg = fmt.Sprintf("Unknown Redis command called from script script: %s, &c.", s.sha)
				}
				l.Error(lua.LString(msg), 1)
			}
			if unknown {
				msg = "ERR Unknown Redis command called from script"
			}
			l.Push(replyTable(l, "err", msg))
			return 1
		}
		l.Push(toLua(l, res))
		return 1
	}
}

// toLua is a reply as Redis gives it to a script: nil as false, a status
// as a table with ok, an array as a table.
func toLua(l *lua.LState, res any) lua.LValue {
	switch r := res.(type) {
	case nil:
		return lua.LFalse
	case int:
		return lua.LNumber(r)
	case string:
		return lua.LString(r)
	case server.Simple:
		return replyTable(l, "ok", string(r))
	case []any:
		t := l.CreateTable(len(r), 0)
		for i, e := range r {
			t.RawSetInt(i+1, toLua(l, e))
		}
		return t
	default:
		return lua.LString(fmt.Sprint(r))
	}
}

// replyTable is {key = msg}: a script's error (err) or status (ok) reply.
func replyTable(l *lua.LState, key, msg string) *lua.LTable {
	t := l.CreateTable(0, 1)
	t.RawSetString(key, lua.LString(msg))
	return t
}

// writeReply writes a script's result as Redis does: a number as an
// integer (truncated), true as 1, false and nil as nil, a table with err
// or ok as an error or status, any other table as an array up to its
// first nil; anything else (a function) as nil.
func writeReply(l *lua.LState, p *server.Peer, v lua.LValue) {
	switch t := v.(type) {
	case lua.LBool:
		if t {
			p.WriteInt(1)
		} else {
			p.WriteNull()
		}
	case lua.LNumber:
		p.WriteInt(int(t))
	case lua.LString:
		p.WriteBulk(string(t))
	case *lua.LTable:
		if e := t.RawGetString("err"); e.Type() != lua.LTNil {
			p.WriteError(e.String())
			return
		}
		if ok := t.RawGetString("ok"); ok.Type() != lua.LTNil {
			p.WriteInline(ok.String())
			return
		}
		var items []lua.LValue
		for i := 1; ; i++ {
			e := l.GetTable(t, lua.LNumber(i))
			if e.Type() == lua.LTNil {
				break
			}
			items = append(items, e)
		}
		p.WriteLen(len(items))
		for _, e := range items {
			writeReply(l, p, e)
		}
	default:
		p.WriteNull()
	}
}

// sha1Hex is a script's SHA1 digest, as EVALSHA names it.
func sha1Hex(s string) string {
	h := sha1.Sum([]byte(s))
	return hex.EncodeToString(h[:])
}
