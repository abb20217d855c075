package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockbench/lockbench/checker"
	"github.com/lockbench/lockbench/internal/loopback"
)

// shop is a flash-sale service that speaks lockbench's black-box protocol,
// as a team's would: its instances share one store, as the sources' two
// Tomcats shared their Redis. guarded puts a lock around the
// read-check-write; reports makes it say which stock each purchase read.
type shop struct {
	guarded, reports bool

	lock   sync.Mutex // the service's lock, when guarded
	mu     sync.Mutex // the store's own consistency, one access at a time
	stock  int64
	orders map[string]int64
}

func (s *shop) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/lockbench/reset":
		var req struct{ Stock int64 }
		json.NewDecoder(r.Body).Decode(&req)
		s.mu.Lock()
		s.stock, s.orders = req.Stock, map[string]int64{}
		s.mu.Unlock()
	case "/lockbench/state":
		s.mu.Lock()
		defer s.mu.Unlock()
		json.NewEncoder(w).Encode(map[string]any{"stock": s.stock, "orders": s.orders})
	case "/lockbench/buy":
		var req struct{ User string }
		json.NewDecoder(r.Body).Decode(&req)
		json.NewEncoder(w).Encode(s.buy(req.User))
	default:
		http.NotFound(w, r)
	}
}

// buy is the sources' sale: read the stock and the user's orders, check,
// a business step, write stock-1 and the order.
func (s *shop) buy(user string) map[string]any {
	if s.guarded {
		s.lock.Lock()
		defer s.lock.Unlock()
	}
	s.mu.Lock()
	stock, orders := s.stock, s.orders[user]
	s.mu.Unlock()
	answer := map[string]any{}
	if s.reports {
		answer["stock"] = stock
	}
	switch {
	case stock <= 0:
		answer["outcome"] = "sold-out"
		return answer
	case orders > 0:
		answer["outcome"] = "duplicate"
		return answer
	}
	time.Sleep(200 * time.Microsecond)
	s.mu.Lock()
	s.stock = stock - 1
	s.orders[user]++
	s.mu.Unlock()
	answer["outcome"] = "sold"
	return answer
}

// instances starts two instances of the shop on loopback and returns
// their URLs as --target takes them.
func instances(t *testing.T, s *shop) string {
	t.Helper()
	a, b := httptest.NewServer(s), httptest.NewServer(s)
	t.Cleanup(a.Close)
	t.Cleanup(b.Close)
	return a.URL + "," + b.URL
}

// TestTarget drives running services through the black-box protocol: a
// guarded one passes, an unguarded one oversells and is caught; with the
// stock each purchase read the history is checked for linearizability,
// without it the audits judge and the summary says so.
func TestTarget(t *testing.T) {
	tests := []struct {
		name             string
		guarded, reports bool
		pass             bool
		lin              checker.Status
		note             string
	}{
		{"guarded, reporting", true, true, true, checker.OK, ""},
		{"unguarded, reporting", false, true, false, checker.Illegal, ""},
		{"guarded, silent", true, false, true, checker.NotApplicable, "did not say which stock"},
		{"unguarded, silent", false, false, false, checker.NotApplicable, "did not say which stock"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			targets := instances(t, &shop{guarded: tt.guarded, reports: tt.reports})
			code, res := runJSON(t, "--target="+targets, "--clients=400", "--stock=300", "--ramp=300ms", "--workers=20", "--seed=1")
			if len(res.Runs) != 1 {
				t.Fatalf("exit %d, %d runs", code, len(res.Runs))
			}
			r := res.Runs[0]
			if (code == 0) != tt.pass || r.Linearizability.Status != tt.lin || (r.Oversold > 0) == tt.pass || r.Nodes != 2 {
				t.Errorf("exit %d, linearizability %s, oversold %d, nodes %d; want pass %v, %s\n%s", code, r.Linearizability.Status, r.Oversold, r.Nodes, tt.pass, tt.lin, strings.Join(r.Reasons, "\n"))
			}
			if tt.note != "" && !strings.Contains(strings.Join(r.Notes, "\n"), tt.note) {
				t.Errorf("notes %q lack %q", r.Notes, tt.note)
			}
			if r.Commands != 0 || r.CommandsPerSale != 0 {
				t.Errorf("%d commands, %v a sale: a service's requests are not the lock's commands", r.Commands, r.CommandsPerSale)
			}
			if r.Impl != "service" || !strings.Contains(res.Config.Backend, "service at http://127.0.0.1:") {
				t.Errorf("impl %q, backend %q", r.Impl, res.Config.Backend)
			}
		})
	}
}

func TestTargetUsage(t *testing.T) {
	checkUsage(t, []usageCase{
		{[]string{"--target=http://192.0.2.1:8080"}, "loopback"},
		{[]string{"--target=127.0.0.1:8080"}, "--target"},
		{[]string{"--target=http://127.0.0.1:8080", "--impl=lua"}, "--impl does not apply"},
		{[]string{"--target=http://127.0.0.1:8080,http://127.0.0.1:8081", "--nodes=3"}, "--nodes=3"},
		{[]string{"--target=http://127.0.0.1:8080", "--faults=pause-holder"}, "service under test"},
		{[]string{"--target=http://127.0.0.1:8080", "--faults=pause-holder"}, "pause-instance"},
		{[]string{"--target=http://127.0.0.1:8080", "--faults=partition"}, "cut-link"},
		{[]string{"--target=http://127.0.0.1:8080", "--faults=partition"}, "--target-redis-via"},
		{[]string{"--target=http://127.0.0.1:8080", "--faults=server-pause"}, "server-pause"},
	})
}

// TestTargetBadInput: a target that does not answer, or whose reset or
// state speak something else, is an infrastructure failure (exit 3) that
// names it and shows what it said; one whose purchases are answered
// outside the protocol (another body, an outcome it does not define, a
// redirect) fails (exit 1) naming the buyer and the field; never a pass.
func TestTargetBadInput(t *testing.T) {
	port, err := loopback.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	silent := fmt.Sprintf("http://127.0.0.1:%d", port)
	notFound := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(notFound.Close)
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "hello from another service") }))
	t.Cleanup(other.Close)
	live := httptest.NewServer(&shop{guarded: true, reports: true})
	t.Cleanup(live.Close)
	// A service whose reset and state work and whose purchases never
	// answer: each hangs until lockbench gives up on it.
	hung := &shop{guarded: true}
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/lockbench/buy" {
			// The server sees the client hang up only once the body
			// is read.
			io.Copy(io.Discard, r.Body)
			<-r.Context().Done()
			return
		}
		hung.ServeHTTP(w, r)
	}))
	t.Cleanup(hang.Close)
	// A service whose purchases are answered in another protocol.
	garbled := &shop{guarded: true}
	garble := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/lockbench/buy" {
			fmt.Fprint(w, "hello from another protocol")
			return
		}
		garbled.ServeHTTP(w, r)
	}))
	t.Cleanup(garble.Close)
	// A service that answers one purchase in ten with an outcome the
	// protocol does not define, and one whose purchases redirect to
	// another service that would answer them (issue 24, row 11: the whole
	// sale moved there and passed).
	soldout := &shop{guarded: true, reports: true}
	var n atomic.Int64
	wordy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/lockbench/buy" && n.Add(1)%10 == 0 {
			fmt.Fprint(w, `{"outcome": "soldout", "stock": 0}`)
			return
		}
		soldout.ServeHTTP(w, r)
	}))
	t.Cleanup(wordy.Close)
	elsewhere := httptest.NewServer(&shop{guarded: true, reports: true})
	t.Cleanup(elsewhere.Close)
	moved := &shop{guarded: true, reports: true}
	mover := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/lockbench/buy" {
			http.Redirect(w, r, elsewhere.URL+r.URL.Path, http.StatusTemporaryRedirect)
			return
		}
		moved.ServeHTTP(w, r)
	}))
	t.Cleanup(mover.Close)
	tests := []struct {
		name, target string
		want         []string
		// fails: the sale ran and the service failed it, answering
		// outside the protocol (exit 1, the reason in the summary),
		// where otherwise it could not be judged (exit 3, on stderr).
		fails bool
	}{
		{"an outcome outside the protocol", wordy.URL, []string{"outside the protocol (docs/target-protocol.md): 5 answers from", "buyer ", `"outcome": "soldout" is not one of sold, sold-out, duplicate, error`}, true},
		{"purchases redirected", mover.URL, []string{"50 answers from", "307 Temporary Redirect to " + elsewhere.URL + "/lockbench/buy", "follows no redirect"}, true},
		{"nothing listening", silent, []string{silent}, false},
		{"nothing listening at the second", live.URL + "," + silent, []string{silent, "/lockbench/state", "connection refused"}, false},
		{"404 to the reset", notFound.URL, []string{notFound.URL, "/lockbench/reset", "404"}, false},
		{"another service", other.URL, []string{other.URL, "/lockbench/state", "hello from another service"}, false},
		{"purchases answered otherwise", garble.URL, []string{"50 answers from", "buyer ", "hello from another protocol"}, true},
		{"purchases never answered", hang.URL, []string{"answered no purchase", hang.URL + "/lockbench/buy", "no answer in 1s"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			code, out, errOut := lockbench(t, "--target="+tt.target, "--clients=50", "--stock=10", "--ramp=100ms", "--command-timeout=1s")
			want, said, where := exitInfra, errOut, "stderr"
			if tt.fails {
				want, said, where = exitFail, out, "the summary"
			}
			if code != want {
				t.Errorf("exit %d, want %d\n%s%s", code, want, out, errOut)
			}
			for _, w := range tt.want {
				if !strings.Contains(said, w) {
					t.Errorf("%s lacks %q:\n%s", where, w, said)
				}
			}
			if strings.Contains(out, " pass ") {
				t.Errorf("a pass printed:\n%s", out)
			}
			t.Logf("answered in %v", time.Since(start).Round(time.Millisecond))
		})
	}
}

// TestTargetPid: a --target-pid that does not listen on its instance's
// port is refused before anything is stopped (a process id from an
// earlier run may name another process by now), and a run's reproduce
// line carries the process ids it was given, so that it runs as it is.
func TestTargetPid(t *testing.T) {
	targets := instances(t, &shop{guarded: true, reports: true})
	other := exec.Command("sleep", "60")
	if err := other.Start(); err != nil {
		t.Skip("cannot start sleep:", err)
	}
	t.Cleanup(func() { other.Process.Kill(); other.Wait() })
	stranger := strconv.Itoa(other.Process.Pid)
	checkUsage(t, []usageCase{
		{[]string{"--target=" + targets, "--target-pid=" + stranger + "," + stranger, "--faults=pause-instance"}, "--target-pid: process " + stranger + " does not listen on port"},
		{[]string{"--target=" + targets, "--target-pid=999999999,999999999", "--faults=pause-instance"}, "--target-pid: no process 999999999"},
	})

	// The instances are this process's: the line may name it (no fault
	// stops anything here).
	self := strconv.Itoa(os.Getpid())
	_, res := runJSON(t, "--target="+targets, "--target-pid="+self+","+self, "--clients=20", "--stock=10", "--ramp=50ms", "--seed=1")
	if want := "--target-pid=" + self + "," + self; !strings.Contains(res.Command, want) {
		t.Errorf("reproduce line %q lacks %q", res.Command, want)
	}
}
