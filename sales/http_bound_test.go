package sales_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockbench/lockbench/checker"
	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/workload"
)

// answering is a correct shop whose purchases are answered by answer
// instead, when it says so (handled); the reset and state stay the
// shop's.
func answering(s *shop, answer func(w http.ResponseWriter, r *http.Request, user string) bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/lockbench/buy" {
			var in struct{ User string }
			if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			if answer(w, r, in.User) {
				return
			}
			body, _ := json.Marshal(map[string]string{"user": in.User})
			r.Body = readCloser{strings.NewReader(string(body))}
		}
		s.ServeHTTP(w, r)
	})
}

type readCloser struct{ *strings.Reader }

func (readCloser) Close() error { return nil }

// TestHTTPSaleOutsideProtocol: an answer outside the protocol is the
// service's protocol error (ErrAnswer) naming the buyer and the field,
// however many others were answered well (issue 23, point 6): an outcome
// word the protocol does not define, a stock of the wrong type, a
// missing outcome, a status that is no failure, a redirect (issue 24,
// row 11). On today's main each was an unknown outcome, and the sale
// passed.
func TestHTTPSaleOutsideProtocol(t *testing.T) {
	elsewhere := serve(t, &shop{}) // a service that would answer, were the redirect followed
	tests := []struct {
		name   string
		answer string // the body of buyer 7's answer, or a status line below
		status int
		want   []string
	}{
		{"outcome soldout", `{"outcome": "soldout", "stock": 0}`, 200, []string{"buyer 7", `"outcome": "soldout" is not one of sold, sold-out, duplicate, error`}},
		{"stock a string", `{"outcome": "sold", "stock": "500"}`, 200, []string{"buyer 7", `"stock": "500" is not a whole number`}},
		{"outcome missing", `{"stock": 3}`, 200, []string{"buyer 7", `the field "outcome" is missing`}},
		{"outcome a number", `{"outcome": 1}`, 200, []string{"buyer 7", `"outcome": 1 is not a string`}},
		{"token negative", `{"outcome": "sold", "token": -1}`, 200, []string{"buyer 7", `"token": -1 is not a whole number from 0`}},
		{"not JSON", `sold`, 200, []string{"buyer 7", "the body is not a JSON object"}},
		{"404", `no such page`, 404, []string{"buyer 7", "404 Not Found, not 200"}},
		{"redirect", "", 307, []string{"buyer 7", "307 Temporary Redirect to " + elsewhere.String(), "follows no redirect"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u := serve(t, answering(&shop{}, func(w http.ResponseWriter, r *http.Request, user string) bool {
				if user != "7" {
					return false
				}
				if tt.status == 307 {
					http.Redirect(w, r, elsewhere.String()+"/lockbench/buy", http.StatusTemporaryRedirect)
					return true
				}
				w.WriteHeader(tt.status)
				fmt.Fprint(w, tt.answer)
				return true
			}))
			h, err := workload.Run(t.Context(), httpConfig(u, 20, 10))
			if !errors.Is(err, workload.ErrAnswer) {
				t.Fatalf("Run: error %v, want ErrAnswer", err)
			}
			for _, w := range append(tt.want, "outside the protocol (docs/target-protocol.md): 1 answer from") {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if h == nil || len(h.Ops) != 20 {
				t.Fatalf("history %v: want the 20 purchases recorded", h)
			}
		})
	}
}

// TestHTTPSaleRedirectNotFollowed: an instance that redirects its reset
// or state elsewhere is refused before the sale, naming where it
// pointed; the service elsewhere is never reached (issue 24, row 11:
// the whole sale moved there, and passed).
func TestHTTPSaleRedirectNotFollowed(t *testing.T) {
	var reached atomic.Int64
	target := &shop{}
	elsewhere := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached.Add(1)
		target.ServeHTTP(w, r)
	}))
	for _, path := range []string{"/lockbench/reset", "/lockbench/state", "/lockbench/buy"} {
		t.Run(path, func(t *testing.T) {
			reached.Store(0)
			s := &shop{}
			u := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == path {
					http.Redirect(w, r, elsewhere.String()+path, http.StatusTemporaryRedirect)
					return
				}
				s.ServeHTTP(w, r)
			}))
			_, err := workload.Run(t.Context(), httpConfig(u, 20, 10))
			if !(errors.Is(err, workload.ErrTarget) || errors.Is(err, workload.ErrAnswer)) || !strings.Contains(err.Error(), "to "+elsewhere.String()+path) {
				t.Errorf("Run: error %v, want ErrTarget (a reset, a state) or ErrAnswer (a purchase) naming the redirect's location", err)
			}
			if n := reached.Load(); n > 0 {
				t.Errorf("the service the redirect pointed to was reached %d times", n)
			}
		})
	}
}

// TestHTTPSaleDropsOrders: a service that answers "sold" and drops one
// order in a hundred fails, naming the buyers, even when unknown outcomes
// that landed make up the count (issue 23: "488/500 ... 543 writes had an
// unknown outcome" passed, users 319, 334, 511 and 522 told "sold" with
// no order in the state).
func TestHTTPSaleDropsOrders(t *testing.T) {
	s := &shop{}
	var sales atomic.Int64
	var dropped []string
	u := serve(t, answering(s, func(w http.ResponseWriter, r *http.Request, user string) bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.stock <= 0 || s.orders[user] > 0 {
			return false // the shop's own answer
		}
		n := sales.Add(1)
		switch {
		case n%100 == 50:
			// Told "sold", the order dropped; the stock taken.
			s.stock--
			s.token++
			dropped = append(dropped, user)
			json.NewEncoder(w).Encode(map[string]any{"outcome": "sold", "stock": s.stock + 1, "token": s.token})
		case n%20 == 0:
			// Written, and answered with a failure: an unknown outcome
			// that landed, which makes up the orders' count.
			s.stock--
			s.orders[user]++
			http.Error(w, "upstream timeout", http.StatusServiceUnavailable)
		default:
			return false
		}
		return true
	}))
	cfg := httpConfig(u, 400, 300)
	h, err := workload.Run(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(dropped) == 0 {
		t.Fatal("no order was dropped: the case tests nothing")
	}
	rep := checker.Check(h, checker.Options{Timeout: 30 * time.Second})
	if rep.Pass || rep.Data.Unordered != int64(len(dropped)) {
		t.Fatalf("pass %v, %d unordered, want %d (%v): %v", rep.Pass, rep.Data.Unordered, len(dropped), dropped, rep.Reasons)
	}
	reasons := strings.Join(rep.Reasons, "\n")
	for _, user := range dropped {
		if !strings.Contains(reasons, user) {
			t.Errorf("reasons do not name buyer %s:\n%s", user, reasons)
		}
	}
	t.Logf("%d sold, %d orders, lost orders counted %d, unordered %d: %s", rep.Data.Sold, rep.Data.Orders, rep.Data.LostOrders, rep.Data.Unordered, reasons)
}

// TestHTTPSaleFailedRequests: a correct service that fails a fifth of its
// purchases without writing anything (500s, stalls past the command
// timeout, reset connections) passes: those buyers have unknown outcomes
// and never "gave up", and the summary counts them (issue 24, row 13:
// "liveness: 60 units unsold while 80 buyers gave up", exit 1).
func TestHTTPSaleFailedRequests(t *testing.T) {
	var n atomic.Int64
	u := serve(t, answering(&shop{}, func(w http.ResponseWriter, r *http.Request, user string) bool {
		switch n.Add(1) % 15 {
		case 1:
			http.Error(w, "internal error", http.StatusInternalServerError)
		case 2:
			<-r.Context().Done() // a stall: no answer within the command timeout
		case 3:
			hj, ok := w.(http.Hijacker)
			if !ok {
				t.Error("no hijacker")
				return false
			}
			c, _, err := hj.Hijack()
			if err == nil {
				c.Close() // a reset connection
			}
		default:
			return false
		}
		return true
	}))
	cfg := httpConfig(u, 150, 150) // stock for every buyer: each one failed leaves a unit
	cfg.CommandTimeout = 300 * time.Millisecond
	h, err := workload.Run(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	unknown := 0
	for _, op := range h.Ops {
		if op.Outcome == history.Unknown {
			unknown++
		}
	}
	rep := checker.Check(h, checker.Options{Timeout: 30 * time.Second})
	if !rep.Pass || rep.Liveness.GaveUp != 0 || rep.Liveness.Unanswered != unknown || unknown == 0 {
		t.Fatalf("pass %v, gave up %d, unanswered %d of %d unknown: %v", rep.Pass, rep.Liveness.GaveUp, rep.Liveness.Unanswered, unknown, rep.Reasons)
	}
	want := fmt.Sprintf("liveness: %d buyers' requests failed without an answer", unknown)
	if !strings.Contains(strings.Join(rep.Notes, "\n"), want) {
		t.Errorf("notes lack %q: %q", want, rep.Notes)
	}
}

// TestHTTPSaleBadState: a state outside the protocol stops the run before
// the sale (ErrTarget), naming the field.
func TestHTTPSaleBadState(t *testing.T) {
	tests := []struct{ state, want string }{
		{`{"stock": "5", "orders": {}}`, `"stock": "5" is not a whole number`},
		{`{"stock": 5}`, `the field "orders" is missing`},
		{`{"orders": {}}`, `the field "stock" is missing`},
		{`{"stock": 5, "orders": null}`, `"orders": null is not an object of user ids`},
		{`{"stock": 5, "orders": {"bob": 1}}`, `"orders": "bob" is not a buyer's user id`},
		{`{"stock": 5, "orders": {"07": 1}}`, `"orders": "07" is not a buyer's user id`},
		{`{"stock": 5, "orders": {"1": -1}}`, `"orders": user 1 has -1 orders`},
		{`[5]`, `the body is not a JSON object`},
	}
	for _, tt := range tests {
		t.Run(tt.state, func(t *testing.T) {
			s := &shop{}
			u := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/lockbench/state" {
					fmt.Fprint(w, tt.state)
					return
				}
				s.ServeHTTP(w, r)
			}))
			h, err := workload.Run(t.Context(), httpConfig(u, 10, 5))
			if !errors.Is(err, workload.ErrTarget) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Run: %v, want ErrTarget saying %q", err, tt.want)
			}
			if h != nil {
				t.Errorf("a sale ran: %d operations", len(h.Ops))
			}
		})
	}
}
