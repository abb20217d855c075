package sales_test

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockbench/lockbench/checker"
	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/sales"
	"github.com/lockbench/lockbench/servers"
	"github.com/lockbench/lockbench/workload"
)

// shop is a minimal correct service of the black-box protocol
// (docs/target-protocol.md): one mutex guards the stock and the orders,
// and each sale hands out the next fencing token.
type shop struct {
	mu     sync.Mutex
	stock  int64
	orders map[string]int64
	token  uint64
}

func (s *shop) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch r.URL.Path {
	case "/lockbench/reset":
		var in struct{ Stock int64 }
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		s.stock, s.orders, s.token = in.Stock, map[string]int64{}, 0
		w.Write([]byte("{}"))
	case "/lockbench/buy":
		var in struct{ User string }
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		out := map[string]any{"stock": s.stock}
		switch {
		case s.orders[in.User] > 0:
			out["outcome"] = "duplicate"
		case s.stock <= 0:
			out["outcome"] = "sold-out"
		default:
			s.token++
			s.stock--
			s.orders[in.User]++
			out["outcome"], out["token"] = "sold", s.token
		}
		json.NewEncoder(w).Encode(out)
	case "/lockbench/state":
		json.NewEncoder(w).Encode(map[string]any{"stock": s.stock, "orders": s.orders})
	default:
		http.NotFound(w, r)
	}
}

// serve starts h on a loopback port for the test and returns its base URL.
func serve(t *testing.T, h http.Handler) *url.URL {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	u, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// httpConfig is a sale of clients buyers on two nodes, each driving the
// service at u.
func httpConfig(u *url.URL, clients int, stock int64) workload.Config {
	return workload.Config{
		Name: "service", Sale: sales.HTTPSale(), Servers: &servers.Set{Endpoints: servers.Endpoints{u, u}},
		Workload: workload.Workload{Clients: clients, Nodes: 2, Workers: 10, Pool: 10, Stock: stock, Attempts: 1,
			Ramp: 50 * time.Millisecond, Timeout: time.Minute, CommandTimeout: 5 * time.Second},
	}
}

// TestHTTPSale: a correct service sells exactly min(stock, buyers); its
// answers are the history (the stock each purchase read, its token), the
// audit reads its state, and the checker passes it.
func TestHTTPSale(t *testing.T) {
	tests := []struct {
		name    string
		clients int
		stock   int64
	}{
		{"sold out", 120, 80},
		{"stock left", 50, 80},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u := serve(t, &shop{})
			h, err := workload.Run(t.Context(), httpConfig(u, tt.clients, tt.stock))
			if err != nil {
				t.Fatal(err)
			}
			want := min(tt.stock, int64(tt.clients))
			if got := sold(h); got != want {
				t.Errorf("sold %d, want %d", got, want)
			}
			if h.Final.Stock != tt.stock-want || h.Final.Orders != want {
				t.Errorf("final stock %d, orders %d; want %d, %d", h.Final.Stock, h.Final.Orders, tt.stock-want, want)
			}
			tokens := map[uint64]bool{}
			for _, op := range h.Ops {
				if op.Outcome == history.Sold && (op.Stock == history.NoStock || op.Token == 0 || tokens[op.Token]) {
					t.Errorf("client %d sold with stock %d, token %d: want the stock read and a token of its own", op.Client, op.Stock, op.Token)
				}
				tokens[op.Token] = true
			}
			if h.Header.Unread {
				t.Error("the service said what every purchase read, yet the history says it did not")
			}
			if rep := checker.Check(h, checker.Options{Timeout: 30 * time.Second}); !rep.Pass || rep.Data.Linearizability.Status != checker.OK {
				t.Errorf("checker: pass %v, linearizability %s: %v", rep.Pass, rep.Data.Linearizability.Status, rep.Reasons)
			}
		})
	}
}

// TestHTTPSaleProtocolError: a service that answers its purchases with
// something else than the protocol is a protocol error (ErrTarget), and
// every purchase has an unknown outcome: it was sent, and may have
// happened.
func TestHTTPSaleProtocolError(t *testing.T) {
	s := &shop{}
	u := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/lockbench/buy" {
			w.Write([]byte("<html>hello</html>"))
			return
		}
		s.ServeHTTP(w, r)
	}))
	h, err := workload.Run(t.Context(), httpConfig(u, 10, 5))
	if !errors.Is(err, workload.ErrTarget) {
		t.Fatalf("Run: error %v, want ErrTarget", err)
	}
	if h == nil || len(h.Ops) != 10 {
		t.Fatalf("history %v: want the 10 purchases recorded", h)
	}
	for _, op := range h.Ops {
		if op.Outcome != history.Unknown || op.Write != history.Indeterminate || op.WriteReturn != 0 {
			t.Errorf("client %d: outcome %s, write %s, write return %d; want unknown, indeterminate, none", op.Client, op.Outcome, op.Write, op.WriteReturn)
		}
	}
}

// TestHTTPSaleDeadInstance: every instance must answer before the sale;
// one that does not stops the run with no history, naming its URL.
func TestHTTPSaleDeadInstance(t *testing.T) {
	u := serve(t, &shop{})
	dead, err := url.Parse("http://127.0.0.1:1")
	if err != nil {
		t.Fatal(err)
	}
	cfg := httpConfig(u, 10, 5)
	cfg.Servers.Endpoints = servers.Endpoints{u, dead}
	h, err := workload.Run(t.Context(), cfg)
	if !errors.Is(err, servers.ErrUnreachable) || !strings.Contains(err.Error(), dead.String()) {
		t.Fatalf("Run: error %v, want ErrUnreachable naming %s", err, dead)
	}
	if h != nil {
		t.Errorf("a sale ran: %d operations", len(h.Ops))
	}
}

// TestHTTPSaleNoAnswer: a service whose purchases never answer sold
// nothing anyone saw: a protocol error (ErrTarget) that says how long
// each purchase waited, not a verdict.
func TestHTTPSaleNoAnswer(t *testing.T) {
	s := &shop{}
	u := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/lockbench/buy" {
			io.Copy(io.Discard, r.Body) // to see the client hang up
			<-r.Context().Done()
			return
		}
		s.ServeHTTP(w, r)
	}))
	cfg := httpConfig(u, 10, 5)
	cfg.CommandTimeout = 200 * time.Millisecond
	h, err := workload.Run(t.Context(), cfg)
	if !errors.Is(err, workload.ErrTarget) || !strings.Contains(err.Error(), "no answer in 200ms") {
		t.Fatalf("Run: error %v, want ErrTarget saying no answer in 200ms", err)
	}
	if h == nil || len(h.Ops) != 10 {
		t.Fatalf("history %v: want the 10 purchases recorded", h)
	}
}
