package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockbench/lockbench/checker"
	"github.com/lockbench/lockbench/internal/redistest"
	"github.com/lockbench/lockbench/reports"
)

// lockbench runs the CLI in-process and returns its exit code, stdout and
// stderr.
func lockbench(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := exitCode(dispatch(args, &stdout, &stderr), &stderr)
	return code, stdout.String(), stderr.String()
}

// runJSON runs the sale with --json and decodes its result.
func runJSON(t *testing.T, args ...string) (int, *reports.Result) {
	t.Helper()
	code, out, errOut := lockbench(t, append(args, "--json")...)
	if code == exitUsage || code == exitInfra {
		t.Fatalf("lockbench %s: exit %d: %s", strings.Join(args, " "), code, errOut)
	}
	res, err := reports.ReadJSON(strings.NewReader(out))
	if err != nil {
		t.Fatalf("lockbench %s: result: %v\n%s", strings.Join(args, " "), err, out)
	}
	return code, res
}

// backend is the flags that select a backend under test, or why it is
// skipped.
type backend struct {
	args []string
	skip string
}

// backendsUnderTest returns each backend under test: the embedded server, and a
// real redis-server started for the test (skipped, visibly, in each of
// its subtests when redis-server is missing, unless
// LOCKBENCH_REQUIRE_REDIS=1 makes that fatal).
func backendsUnderTest(t *testing.T) map[string]backend {
	t.Helper()
	b := map[string]backend{"embedded": {}}
	if os.Getenv(redistest.RequireEnv) == "1" || redistest.Available() {
		b["redis"] = backend{args: []string{"--redis=" + redistest.Start(t)}}
	} else {
		b["redis"] = backend{skip: "redis-server not on PATH: real-Redis case skipped (" + redistest.RequireEnv + "=1 makes this fatal)"}
	}
	return b
}

// saleCase is one end-to-end sale of TestSaleVerdicts.
type saleCase struct {
	name     string
	args     []string
	embedded bool // also run on the embedded server (the others are too slow there at this size)
	short    bool // runs under -short too, on the embedded server
	wantExit int
	check    func(t *testing.T, r reports.Run)
}

// oversells checks that r's oversell was caught.
func oversells(t *testing.T, r reports.Run) {
	t.Helper()
	if r.Oversold == 0 || r.Data.Status == "ok" {
		t.Errorf("oversold %d, data safety %s: want an oversell caught", r.Oversold, r.Data.Status)
	}
}

// sellsExactly checks that r sold exactly its stock, cleanly.
func sellsExactly(t *testing.T, r reports.Run) {
	t.Helper()
	if r.Sold != r.Stock || r.Oversold != 0 || r.Lock.Overlaps != 0 || r.Linearizability.Status != "ok" {
		t.Errorf("sold %d/%d, oversold %d, overlaps %d, linearizability %s: want exactly the stock, clean",
			r.Sold, r.Stock, r.Oversold, r.Lock.Overlaps, r.Linearizability.Status)
	}
}

// sellsSafely checks that r sold no more than its stock, cleanly: what a
// run whose liveness went unjudged must still show.
func sellsSafely(t *testing.T, r reports.Run) {
	t.Helper()
	if r.Sold > r.Stock || r.Oversold != 0 || r.Lock.Overlaps != 0 || r.Linearizability.Status != "ok" {
		t.Errorf("sold %d/%d, oversold %d, overlaps %d, linearizability %s: want no more than the stock, clean",
			r.Sold, r.Stock, r.Oversold, r.Lock.Overlaps, r.Linearizability.Status)
	}
}

// saturated reports whether r is inconclusive for the reason the product
// gives: nothing failed, liveness went unjudged, and the harness measured
// itself saturated. A correct lock's sale on a busy machine may end so;
// never without the measurement.
func saturated(r reports.Run) bool {
	return r.Verdict == reports.Inconclusive && len(r.Reasons) == 0 && len(r.Unjudged) > 0 && len(r.Saturation) > 0
}

// TestSaleVerdicts runs whole sales through the command line and checks
// their verdicts and exit codes. A sale that must pass may instead be
// inconclusive (exit 4) only where every run of it was measured saturated
// (a busy machine: see saturated), and must then still be safe; a sale
// that must fail fails on safety, which saturation does not touch.
// Under -short only the small sales on the embedded server run.
func TestSaleVerdicts(t *testing.T) {
	cases := []saleCase{
		{"none oversells", []string{"--impl=none", "--clients=4000", "--stock=1000"}, true, true, exitFail, oversells},
		{"local fails on two nodes", []string{"--impl=local", "--nodes=2", "--clients=4000", "--stock=1000"}, true, false, exitFail, func(t *testing.T, r reports.Run) {
			if r.Lock.Overlaps == 0 {
				t.Errorf("no lock overlaps across two nodes")
			}
			oversells(t, r)
		}},
		{"local passes on one node", []string{"--impl=local", "--nodes=1", "--clients=4000", "--stock=1000"}, true, false, exitPass, sellsExactly},
		{"watchdog at 20000", []string{"--impl=watchdog", "--clients=20000"}, true, false, exitPass, sellsExactly},
		{"atomic at 20000", []string{"--impl=atomic", "--clients=20000"}, true, false, exitPass, sellsExactly},
		{"lua at 20000", []string{"--impl=lua", "--clients=20000"}, false, false, exitPass, sellsExactly},
		{"reentrant at 20000", []string{"--impl=reentrant", "--clients=20000"}, false, false, exitPass, sellsExactly},
		{"fenced at 20000", []string{"--impl=fenced", "--clients=20000"}, false, false, exitPass, sellsExactly},
		{"lua, reentrant, fenced small", []string{"--impl=lua,reentrant,fenced", "--clients=2000", "--stock=500"}, true, false, exitPass, sellsExactly},
		// The pass that -short keeps: watchdog hands the lock over by
		// pub/sub instead of spinning, cheap on a busy machine.
		{"watchdog small", []string{"--impl=watchdog", "--clients=1000", "--stock=300"}, true, true, exitPass, sellsExactly},
		{"nested acquisition", []string{"--impl=reentrant,watchdog", "--reentry=3", "--clients=2000", "--stock=500"}, true, false, exitPass, sellsExactly},
	}
	for bname, b := range backendsUnderTest(t) {
		for _, c := range cases {
			if bname == "embedded" && !c.embedded {
				continue
			}
			t.Run(bname+"/"+c.name, func(t *testing.T) {
				if testing.Short() && (!c.short || bname != "embedded") {
					t.Skip("-short: the larger end-to-end sales take tens of seconds each")
				}
				if b.skip != "" {
					t.Skip(b.skip)
				}
				args := append(append([]string{}, c.args...), b.args...)
				// The timeout bounds the test on a busy machine: a sale
				// cut short by it there is inconclusive (saturated), and
				// on a quiet one each ends in seconds, far inside it.
				args = append(args, "--timeout=90s", "--seed=7")
				code, res := runJSON(t, args...)
				inconclusive := c.wantExit == exitPass && code == exitInconclusive
				for _, r := range res.Runs {
					switch {
					case r.Verdict == reports.Pass && c.wantExit == exitPass, r.Verdict == reports.Fail && c.wantExit == exitFail:
						c.check(t, r)
					case c.wantExit == exitPass && saturated(r):
						t.Logf("%s: inconclusive on a saturated harness (%v): %v", r.Impl, r.Saturation, r.Unjudged)
						sellsSafely(t, r)
					default:
						t.Errorf("%s: verdict %s, reasons %v, unjudged %v, saturation %v", r.Impl, r.Verdict, r.Reasons, r.Unjudged, r.Saturation)
						inconclusive = false
					}
				}
				if code != c.wantExit && !inconclusive {
					t.Errorf("exit %d, want %d", code, c.wantExit)
				}
			})
		}
	}
}

// usageCase is a command line that must exit 2 with want in its message.
type usageCase struct {
	args []string
	want string
}

// checkUsage runs each case in-process and checks its exit code and
// message.
func checkUsage(t *testing.T, cases []usageCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			code, _, errOut := lockbench(t, c.args...)
			if code != exitUsage {
				t.Errorf("exit %d, want %d", code, exitUsage)
			}
			if !strings.Contains(errOut, c.want) {
				t.Errorf("message %q does not name %q", errOut, c.want)
			}
		})
	}
}

func TestUsageErrors(t *testing.T) {
	checkUsage(t, []usageCase{
		{[]string{"--impl=bogus"}, "--impl"},
		{[]string{"--clients=0"}, "--clients"},
		{[]string{"--nodes=0"}, "--nodes"},
		{[]string{"--stock=-1"}, "--stock"},
		{[]string{"--attempts=0"}, "--attempts"},
		{[]string{"--ttl=5us"}, "--ttl"},
		{[]string{"--timeout=0s"}, "--timeout"},
		{[]string{"--impl=lua", "--reentry=2"}, "not reentrant"},
		{[]string{"--force"}, "give --redis or --mysql-dsn"},
		{[]string{"--backend=redis"}, "--backend=redis needs --redis"},
		{[]string{"--backend=bogus"}, "--backend"},
		{[]string{"--backend=docker", "--redis=127.0.0.1:6379"}, "--redis"},
		{[]string{"--backend=embedded", "--redis=127.0.0.1:6379"}, "--redis"},
		{[]string{"--redis-image=redis:7"}, "--redis-image"},
		{[]string{"matrix", "--backend=bogus"}, "--backend"},
		{[]string{"--clients=many"}, "clients"},
		{[]string{"bogus-command"}, "unknown command"},
		{[]string{"check"}, "check"},
		{[]string{"--faults=gc"}, "--faults"},
		{[]string{"--faults=pause-holder:for=soon"}, "pause-holder:for=soon"},
		{[]string{"--faults=clock-skew:node=5", "--clients=10"}, "only 2 nodes"},
		{[]string{"--command-timeout=0s"}, "--command-timeout"},
		{[]string{"--impl=lua", "--pipeline=8"}, "--pipeline: lua"},
		{[]string{"--impl=atomic", "--pipeline=-1"}, "--pipeline: atomic"},
		{[]string{"--impl=atomic", "--pipeline=8", "--faults=server-pause"}, "--pipeline: a pipeline runs without faults"},
		// Remote nodes prove the run's secret: the coordinator needs it
		// given, a node too, never on the command line.
		{[]string{"--node-mode=remote", "--coordinator-listen=127.0.0.1:7070", "--redis=127.0.0.1:6379"}, "--node-secret-file"},
		{[]string{"--node-mode=process", "--node-secret-file=x"}, "--node-secret-file is for --node-mode=remote"},
		{[]string{"--node-mode=remote", "--coordinator-listen=127.0.0.1:7070", "--redis=127.0.0.1:6379", "--node-secret-file=testdata"}, "--node-secret-file"},
		{[]string{"node", "--coordinator=127.0.0.1:7070"}, "LOCKBENCH_NODE_SECRET"},
		{[]string{"matrix", "--faults=gc"}, "--faults"},
		{[]string{"matrix", "--pipeline=8"}, "--pipeline applies to runs"},
		{[]string{"matrix", "--impl=none", "--faults=expire"}, "no cell"},
		// Malformed server addresses are bad input (2), not unreachable
		// servers (3), and the message names the flag.
		{[]string{"--redis=notahost"}, "--redis"},
		{[]string{"--redis=:6379"}, "--redis"},
		{[]string{"--redis=127.0.0.1:99999"}, "--redis"},
		{[]string{"--impl=mysql", "--mysql-dsn=garbage"}, "--mysql-dsn"},
		{[]string{"--impl=zookeeper", "--zk=zk"}, "--zk"},
		{[]string{"matrix", "--redis=notahost"}, "--redis"},
		// A history that cannot be trusted is bad input, never judged.
		{[]string{"check", "../history/testdata/bad-truncated.jsonl"}, "incomplete: no trailer"},
		{[]string{"check", "../history/testdata/bad-header-only.jsonl"}, "incomplete"},
		{[]string{"check", "../history/testdata/bad-read-before-call.jsonl"}, "read_return 21500000 is before read_call"},
		{[]string{"check", "../history/testdata/bad-unknown-field.jsonl"}, `unknown field "stok"`},
	})
}

// TestFaultUnavailableOnBackend: a fault the backend cannot do is refused
// with exit 2 before anything runs, never skipped in silence.
func TestFaultUnavailableOnBackend(t *testing.T) {
	if !redistest.Available() && os.Getenv("LOCKBENCH_REQUIRE_REDIS") != "1" {
		t.Skip("redis-server not on PATH (LOCKBENCH_REQUIRE_REDIS=1 makes this fatal)")
	}
	addr := redistest.Start(t)
	code, out, errOut := lockbench(t, "--impl=lua", "--faults=restart", "--redis="+addr, "--clients=10")
	if code != exitUsage || !strings.Contains(errOut, "restart") || out != "" {
		t.Errorf("restart on a real Redis: exit %d, stderr %q, stdout %q; want exit 2 naming restart, nothing run", code, errOut, out)
	}
}

// TestFaultsRecordedAndReproducible runs a fault end to end: the
// injection is in the result, the reproduce line carries --faults and the
// seed, and the same seed arms the same schedule.
func TestFaultsRecordedAndReproducible(t *testing.T) {
	args := []string{"--impl=lua", "--faults=pause-holder:count=1", "--clients=400", "--stock=300", "--ramp=500ms", "--ttl=150ms", "--workers=50", "--seed=5"}
	code, res := runJSON(t, args...)
	if code != exitFail {
		t.Errorf("lua under pause-holder: exit %d, want %d", code, exitFail)
	}
	r := res.Runs[0]
	if len(r.Faults) != 1 || r.Faults[0].Name != "pause-holder" || r.Faults[0].End <= r.Faults[0].Start {
		t.Fatalf("faults recorded: %+v, want one pause-holder with its window", r.Faults)
	}
	if !strings.Contains(res.Command, "--faults=pause-holder:count=1") || !strings.Contains(res.Command, "--seed=5") {
		t.Errorf("reproduce line %q lacks the faults or the seed", res.Command)
	}
	if r.Lock.Status != "violated" {
		t.Errorf("lock safety %s, want violated: a pause past the lease lets a second holder in", r.Lock.Status)
	}
	if res.Config.TTL != reports.Duration(150*time.Millisecond) || len(res.Config.Faults) != 1 {
		t.Errorf("config ttl %v, faults %v", res.Config.TTL, res.Config.Faults)
	}
}

func TestUnreachableRedisFailsFast(t *testing.T) {
	start := time.Now()
	code, _, errOut := lockbench(t, "--redis=127.0.0.1:1", "--clients=10")
	if code != exitInfra {
		t.Errorf("exit %d, want %d (%s)", code, exitInfra, errOut)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("took %v to report an unreachable server", d)
	}
}

func TestHelpListVersion(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"run", "--help"}, {"check", "--help"}} {
		code, out, _ := lockbench(t, args...)
		if code != exitPass || !strings.Contains(out, "Examples:") {
			t.Errorf("%v: exit %d, output without examples:\n%s", args, code, out)
		}
	}
	code, out, _ := lockbench(t, "list")
	for _, name := range []string{"none", "local", "setnx", "setnx-expire", "set-nx-ex", "owner-check", "lua", "getset", "reentrant", "watchdog", "spin", "fair", "renew-naive", "atomic", "fenced", "redsync", "redislock"} {
		if code != exitPass || !strings.Contains(out, name+" ") {
			t.Errorf("list misses %s", name)
		}
	}
	if code, out, _ := lockbench(t, "version"); code != exitPass || !strings.HasPrefix(out, "lockbench ") {
		t.Errorf("version: exit %d, %q", code, out)
	}
}

// TestOutAndOfflineCheck saves a failing and a passing run, then re-checks
// the saved histories offline and expects the same verdicts.
func TestOutAndOfflineCheck(t *testing.T) {
	dir := t.TempDir()
	code, _, errOut := lockbench(t, "--impl=none,atomic", "--clients=2000", "--stock=500", "--out="+dir, "--seed=3")
	if code != exitFail {
		t.Fatalf("exit %d, want %d: %s", code, exitFail, errOut)
	}
	res, err := reports.ReadFile(filepath.Join(dir, "result.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Runs) != 2 || res.Runs[0].History == "" || !strings.Contains(res.Command, "--seed=3") {
		t.Fatalf("result.json: %d runs, history %q, command %q", len(res.Runs), res.Runs[0].History, res.Command)
	}
	raw, _ := os.ReadFile(filepath.Join(dir, "result.json"))
	var fields map[string]any
	json.Unmarshal(raw, &fields)
	if _, ok := fields["runs"]; !ok {
		t.Errorf("result.json has no runs")
	}

	code, out, errOut := lockbench(t, "check", dir, "--json")
	if code != exitFail {
		t.Fatalf("check: exit %d, want %d: %s", code, exitFail, errOut)
	}
	again, err := reports.ReadJSON(strings.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	verdicts := map[string]string{}
	for _, r := range again.Runs {
		verdicts[r.Impl] = r.Verdict
	}
	for _, r := range res.Runs {
		if verdicts[r.Impl] != r.Verdict {
			t.Errorf("%s: offline verdict %s, online %s", r.Impl, verdicts[r.Impl], r.Verdict)
		}
	}

	html := filepath.Join(t.TempDir(), "none.html")
	lockbench(t, "check", filepath.Join(dir, "none.history.jsonl"), "--visualize="+html)
	if b, err := os.ReadFile(html); err != nil || !bytes.Contains(b, []byte("<html")) {
		t.Errorf("--visualize wrote no HTML: %v", err)
	}
}

// TestInterrupt: Ctrl-C exits 130 wherever it lands. During the sale, what
// was recorded is still checked and written (result and history); before
// the sale begins, on a server that does not answer yet (a real
// redis-server under CLIENT PAUSE), the cut-short call is an interruption,
// not an unreachable server.
func TestInterrupt(t *testing.T) {
	paused := func(t *testing.T) string {
		addr := redistest.Start(t)
		if err := redistest.Client(t, addr).Do(t.Context(), "CLIENT", "PAUSE", "60000", "ALL").Err(); err != nil {
			t.Fatal(err)
		}
		return addr
	}
	tests := []struct {
		name    string
		args    func(t *testing.T, out string) []string
		written bool          // result.json and the history are in --out
		after   time.Duration // when Ctrl-C comes; 0: at the sale's first progress line
	}{
		{"during the sale", func(t *testing.T, out string) []string {
			return []string{"--impl=lua,watchdog", "--clients=20000", "--stock=20000", "--ramp=60s", "--out=" + out}
		}, true, 0}, // the sale lasts a minute: well into it, watchdog's never begun
		{"before the sale", func(t *testing.T, out string) []string {
			return []string{"--impl=lua", "--redis=" + paused(t), "--out=" + out}
		}, false, time.Second}, // the server is asked at once and answers no sooner than its 3 s read timeout
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := t.TempDir()
			cmd := exec.CommandContext(t.Context(), os.Args[0], tt.args(t, out)...)
			cmd.Env = append(os.Environ(), "LOCKBENCH_TEST_MAIN=1")
			var buf syncBuffer
			cmd.Stdout, cmd.Stderr = &buf, &buf
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			ended := make(chan struct{})
			go func() {
				cmd.Wait()
				close(ended)
			}()
			if tt.after > 0 {
				time.Sleep(tt.after)
			} else if !waitFor(t, ended, func() bool { return strings.Contains(buf.String(), "progress: ") }) {
				t.Fatalf("the sale never reported its progress:\n%s", buf.String())
			}
			cmd.Process.Signal(syscall.SIGINT)
			<-ended
			if code := cmd.ProcessState.ExitCode(); code != exitInterrupted {
				t.Fatalf("exit %d, want %d:\n%s", code, exitInterrupted, buf.String())
			}
			if !strings.Contains(buf.String(), "interrupted") {
				t.Errorf("output does not say it was interrupted:\n%s", buf.String())
			}
			res, err := reports.ReadFile(filepath.Join(out, "result.json"))
			if !tt.written {
				if err == nil {
					t.Errorf("a result was written for a sale that never began: %+v", res.Runs)
				}
				return
			}
			if err != nil {
				t.Fatalf("result: %v\n%s", err, buf.String())
			}
			r := res.Runs[0]
			if !r.CutShort || r.CutBy != "interrupt" || r.Attempts == 0 || r.Attempts >= 20000 {
				t.Errorf("cut short %v by %q after %d attempts; want a sale interrupted part way", r.CutShort, r.CutBy, r.Attempts)
			}
			if r.Liveness.Status != checker.Unknown {
				t.Errorf("liveness %s after an interrupt, want %s (not judged)", r.Liveness.Status, checker.Unknown)
			}
			// Interrupted is neither a pass nor a failure, and the
			// implementation that never ran is named.
			if r.Verdict != reports.Interrupted || len(r.Reasons) > 0 {
				t.Errorf("verdict %s, reasons %q; want %s and none", r.Verdict, r.Reasons, reports.Interrupted)
			}
			if !slices.Equal(res.NotRun, []string{"watchdog"}) || !strings.Contains(buf.String(), "never ran: watchdog") {
				t.Errorf("not run %q; want watchdog, named in the output:\n%s", res.NotRun, buf.String())
			}
			if code, stdout, stderr := lockbench(t, "check", out); code != exitInconclusive || !strings.Contains(stderr, "interrupted") {
				t.Errorf("check of an interrupted run: exit %d, want %d saying interrupted:\n%s%s", code, exitInconclusive, stdout, stderr)
			}
			if _, err := os.Stat(filepath.Join(out, r.History)); r.History == "" || err != nil {
				t.Errorf("history %q not written: %v", r.History, err)
			}
		})
	}
}

// TestWrongPasswordNamesTheFlag: a real redis-server that refuses the
// password is exit 3 (the server is there, lockbench cannot use it), and
// the message says which flag to fix.
func TestWrongPasswordNamesTheFlag(t *testing.T) {
	if !redistest.Available() && os.Getenv("LOCKBENCH_REQUIRE_REDIS") != "1" {
		t.Skip("redis-server not on PATH (LOCKBENCH_REQUIRE_REDIS=1 makes this fatal)")
	}
	addr := redistest.Start(t)
	if err := redistest.Client(t, addr).ConfigSet(t.Context(), "requirepass", "right").Err(); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"--redis=" + addr, "--redis-password=wrong", "--clients=10"},
		{"--redis=" + addr, "--clients=10"},
	} {
		code, _, errOut := lockbench(t, args...)
		if code != exitInfra || !strings.Contains(errOut, "--redis-password") {
			t.Errorf("%v: exit %d, want %d naming --redis-password: %s", args, code, exitInfra, errOut)
		}
	}
}

// TestServerLost: a Redis that dies in the middle of a sale is noticed
// (the sale is cut short, not left to run to its --timeout), and what was
// recorded is still judged, printed and written, before exit 3 names the
// server.
func TestServerLost(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: waits for the lost server to be noticed")
	}
	if !redistest.Available() && os.Getenv("LOCKBENCH_REQUIRE_REDIS") != "1" {
		t.Skip("redis-server not on PATH (LOCKBENCH_REQUIRE_REDIS=1 makes this fatal)")
	}
	addr := redistest.Start(t)
	c := redistest.Client(t, addr)
	out := t.TempDir()
	type ended struct {
		code        int
		out, errOut string
	}
	done := make(chan ended, 1)
	go func() {
		// A sale of a minute (its buyers arrive over 60 s), bounded at two.
		code, o, e := lockbench(t, "--impl=lua", "--redis="+addr, "--clients=6000", "--stock=6000", "--ramp=60s", "--timeout=2m", "--out="+out)
		done <- ended{code, o, e}
	}()
	// Once the buyers have bought something, the server goes.
	for {
		n, err := c.Exists(t.Context(), "lockbench:lua:orders").Result()
		if err == nil && n > 0 {
			break
		}
		select {
		case e := <-done:
			t.Fatalf("the sale ended before the server was stopped: exit %d\n%s%s", e.code, e.out, e.errOut)
		case <-time.After(50 * time.Millisecond):
		}
	}
	c.Do(t.Context(), "SHUTDOWN", "NOSAVE")
	e := <-done
	if e.code != exitInfra || !strings.Contains(e.errOut, "stopped answering") || !strings.Contains(e.errOut, addr) {
		t.Errorf("exit %d, want %d naming the server %s:\n%s", e.code, exitInfra, addr, e.errOut)
	}
	if !strings.Contains(e.out, "IMPL") || !strings.Contains(e.out, "stopped answering during the sale") {
		t.Errorf("the summary is missing or does not say why:\n%s", e.out)
	}
	res, err := reports.ReadFile(filepath.Join(out, "result.json"))
	if err != nil {
		t.Fatalf("result: %v", err)
	}
	r := res.Runs[0]
	if r.CutBy != "server lost" || r.Liveness.Status != checker.Unknown || r.Attempts == 0 || r.Attempts >= 6000 {
		t.Errorf("cut by %q, liveness %s, %d attempts; want a sale cut part way by the lost server, liveness unknown", r.CutBy, r.Liveness.Status, r.Attempts)
	}
	if _, err := os.Stat(filepath.Join(out, r.History)); r.History == "" || err != nil {
		t.Errorf("history %q not written: %v", r.History, err)
	}
}

// TestFairness: the fair lock grants about in asking order, lua far from
// it; the result and the notes say so. (locks' TestFairOrder holds the
// fair lock to the exact order; here the client's own queueing, on a
// machine as busy as CI's, may swap two asks now and then.)
func TestFairness(t *testing.T) {
	code, res := runJSON(t, "--impl=fair,lua", "--clients=1000", "--stock=300", "--ramp=300ms", "--workers=20", "--seed=1")
	if code != exitPass || len(res.Runs) != 2 {
		t.Fatalf("exit %d, %d runs", code, len(res.Runs))
	}
	fair, lua := res.Runs[0], res.Runs[1]
	if lua.Overtakes < 1000 || fair.Overtakes*100 > lua.Overtakes {
		t.Errorf("overtakes: fair %d, lua %d; want lua's in the thousands and fair's a hundredth of them at most", fair.Overtakes, lua.Overtakes)
	}
	if !slices.ContainsFunc(lua.Notes, func(n string) bool { return strings.Contains(n, "fairness: ") && strings.Contains(n, "overtakes") }) {
		t.Errorf("lua's notes %q do not count its overtakes", lua.Notes)
	}
	t.Logf("overtakes: fair %d, lua %d", fair.Overtakes, lua.Overtakes)
}
