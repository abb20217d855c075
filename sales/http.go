package sales

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"time"

	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/servers"
	"github.com/lockbench/lockbench/workload"
)

// The black-box protocol a service speaks to be tested by lockbench
// (docs/target-protocol.md), under each instance's base URL:
//
//	POST /lockbench/reset  {"stock": 5000}              set the stock, delete every order
//	POST /lockbench/buy    {"user": "17"}               one purchase, answered
//	                       {"outcome": "sold", "stock": 4213, "token": 88}
//	GET  /lockbench/state  {"stock": 0, "orders": {"17": 1}}
//
// outcome is sold, sold-out, duplicate or error (nothing was written);
// stock, the stock the purchase read, and token, its fencing token, are
// optional. A request that fails or is answered otherwise (a 5xx, a
// timeout, a body lockbench cannot read) has an unknown outcome.
const (
	pathReset = "/lockbench/reset"
	pathBuy   = "/lockbench/buy"
	pathState = "/lockbench/state"
)

// The outcomes of the protocol's buy.
const (
	outcomeSold      = "sold"
	outcomeSoldOut   = "sold-out"
	outcomeDuplicate = "duplicate"
	outcomeError     = "error"
)

// HTTPSale is the black-box sale: each node's buyers buy from one
// instance of a running service over HTTP, and what it answers is the
// history. When the service reports the stock each purchase read, the
// inventory is checked for linearizability as any other; when it does
// not, the audits alone judge, and the history says so (Header.Unread).
func HTTPSale() workload.Sale { return httpSale{} }

type httpSale struct{}

func (httpSale) Needs() servers.Needs  { return servers.Needs{servers.KindTarget} }
func (httpSale) Guard() workload.Guard { return workload.Guard{} }

// Inventory is the service's own store, reached through its protocol (the
// run has started the relays of the instances' Redis links already: the
// reset goes through them).
func (httpSale) Inventory(env workload.Env) (workload.Inventory, error) {
	if env.Servers == nil || len(env.Servers.Endpoints) == 0 {
		return nil, servers.ErrMissing
	}
	return &httpInventory{t: env.Servers.Endpoints, c: &http.Client{}, bound: env.Workload.LostAfter()}, nil
}

// StartNode gives node n its own HTTP client of its instance, with a pool
// of the run's size.
func (httpSale) StartNode(_ context.Context, n *workload.Node) (workload.Seller, error) {
	t, w := n.Servers().Endpoints, n.Workload()
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxConnsPerHost, tr.MaxIdleConnsPerHost = w.Pool, w.Pool
	return &httpSeller{n: n, target: t[n.ID()%len(t)], http: &http.Client{Transport: tr}, timeout: commandTimeout(w)}, nil
}

// httpSeller is one node's side of the black-box sale: the instance it
// drives and its client of it.
type httpSeller struct {
	n       *workload.Node
	target  *url.URL
	http    *http.Client
	timeout time.Duration
}

// Close closes the client's idle connections.
func (s *httpSeller) Close() error {
	s.http.CloseIdleConnections()
	return nil
}

// buyAnswer is the protocol's answer to a buy.
type buyAnswer struct {
	Outcome string `json:"outcome"`
	Stock   *int64 `json:"stock"`
	Token   uint64 `json:"token"`
}

// Sell is one purchase: a POST of the protocol's buy, whose answer says
// what happened; one the service broke, or never gave, has an unknown
// outcome.
func (s *httpSeller) Sell(ctx context.Context, a *workload.Attempt) {
	rec := a.Rec()
	body, _ := json.Marshal(map[string]string{"user": a.User})
	// Past the node's pause, counting nothing: a request is not a
	// command of the lock's, whose commands the service keeps to itself
	// (the summary's CMD/SALE is then "-").
	if err := s.n.Admit(ctx, 0); err != nil {
		rec.Fail()
		return
	}
	rctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	req, _ := http.NewRequestWithContext(rctx, http.MethodPost, s.target.String()+pathBuy, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	rec.Reading()
	resp, err := s.http.Do(req)
	if err != nil {
		if refused(err) {
			s.n.Unanswered(fmt.Sprintf("POST %s%s: connection refused", s.target, pathBuy))
			rec.ReadFailed() // never reached the service: nothing happened
			return
		}
		if ctx.Err() == nil {
			s.n.Unanswered(fmt.Sprintf("POST %s%s: %s", s.target, pathBuy, failure(rctx, err, s.timeout)))
		}
		rec.WritingWithRead()
		rec.Unknown()
		return
	}
	defer resp.Body.Close()
	var ans buyAnswer
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	if resp.StatusCode != http.StatusOK || json.Unmarshal(raw, &ans) != nil || !slices.Contains(outcomes, ans.Outcome) {
		s.n.Unanswered(fmt.Sprintf("POST %s%s answered %s: %q", s.target, pathBuy, resp.Status, snippet(raw)))
		rec.WritingWithRead()
		rec.Unknown()
		return
	}
	s.n.Answered()
	if ans.Stock != nil {
		rec.Read(*ans.Stock)
	} else {
		rec.ReadUntold()
	}
	if ans.Token > 0 {
		rec.Token(ans.Token)
	}
	switch ans.Outcome {
	case outcomeSold:
		rec.AppliedWithRead()
	case outcomeSoldOut:
		rec.SoldOut()
	case outcomeDuplicate:
		rec.Duplicate()
	case outcomeError:
		rec.ReadFailed()
	}
}

// outcomes are the protocol's outcomes of a buy.
var outcomes = []string{outcomeSold, outcomeSoldOut, outcomeDuplicate, outcomeError}

// snippet is the start of a bad answer, for the error that shows it.
func snippet(b []byte) string {
	const n = 200
	if len(b) > n {
		return string(b[:n]) + "..."
	}
	return string(b)
}

// failure says why a request sent under ctx, bounded by d, failed: "no
// answer in d" when the bound ran out, rather than Go's "context deadline
// exceeded".
func failure(ctx context.Context, err error, d time.Duration) string {
	var ne net.Error
	if errors.Is(ctx.Err(), context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout() {
		return fmt.Sprintf("no answer in %v", d)
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err // the method and URL are said already
	}
	return err.Error()
}

// refused reports whether a request failed before it reached the service:
// the connection was refused, so nothing was sent.
func refused(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// httpInventory is the inventory of a service under test: reset, state
// and a dial of its first instance to see that it answers.
type httpInventory struct {
	t servers.Endpoints
	c *http.Client
	// bound is how long a reset or a state read may take: the run's
	// workload.Workload.LostAfter (two command timeouts, 5 s at least), within the caller's
	// deadline.
	bound time.Duration
}

// within is ctx bounded by v.bound, or by ctx's own deadline when that
// comes first, and that bound, for the error that says it ran out.
func (v *httpInventory) within(ctx context.Context) (context.Context, context.CancelFunc, time.Duration) {
	d := v.bound
	if dl, ok := ctx.Deadline(); ok {
		d = min(d, time.Until(dl).Round(100*time.Millisecond))
	}
	c, cancel := context.WithTimeout(ctx, d)
	return c, cancel, d
}

// Prepare resets the stock through the first instance, then reads the
// state of every instance: each must answer before the sale, or the buyers
// of a dead one would be refused and the sale judged without it.
func (v *httpInventory) Prepare(ctx context.Context, stock int64, _ bool) error {
	body, _ := json.Marshal(map[string]int64{"stock": stock})
	rctx, cancel, d := v.within(ctx)
	defer cancel()
	req, _ := http.NewRequestWithContext(rctx, http.MethodPost, v.t[0].String()+pathReset, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := v.c.Do(req)
	if err != nil {
		return fmt.Errorf("%w: service at %s: POST %s: %s", servers.ErrUnreachable, v.t[0], pathReset, failure(rctx, err, d))
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<10))
		return fmt.Errorf("%w: %s: POST %s answered %s: %q (docs/target-protocol.md)", workload.ErrTarget, v.t[0], pathReset, resp.Status, snippet(raw))
	}
	for _, u := range v.t {
		if _, err := v.state(ctx, u); err != nil {
			return err
		}
	}
	return nil
}

// stateAnswer is the protocol's answer to a state.
type stateAnswer struct {
	Stock  *int64           `json:"stock"`
	Orders map[string]int64 `json:"orders"`
}

// Audit reads the state of the first instance.
func (v *httpInventory) Audit(ctx context.Context) (history.Final, error) {
	s, err := v.state(ctx, v.t[0])
	if err != nil {
		return history.Final{}, err
	}
	return CountOrders(*s.Stock, s.Orders), nil
}

// state reads the state of the instance at u, within v's bound.
func (v *httpInventory) state(ctx context.Context, u *url.URL) (stateAnswer, error) {
	var s stateAnswer
	rctx, cancel, d := v.within(ctx)
	defer cancel()
	req, _ := http.NewRequestWithContext(rctx, http.MethodGet, u.String()+pathState, nil)
	resp, err := v.c.Do(req)
	if err != nil {
		return s, fmt.Errorf("%w: service at %s: GET %s: %s", servers.ErrUnreachable, u, pathState, failure(rctx, err, d))
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if resp.StatusCode != http.StatusOK || json.Unmarshal(raw, &s) != nil || s.Stock == nil {
		return s, fmt.Errorf("%w: %s: GET %s answered %s without a stock and orders lockbench can read: %q (docs/target-protocol.md)", workload.ErrTarget, u, pathState, resp.Status, snippet(raw))
	}
	return s, nil
}

// Clear leaves the service as it is: its state is the run's evidence.
func (v *httpInventory) Clear(context.Context) error { return nil }

// Ping dials the first instance: a service that accepts connections is
// there.
func (v *httpInventory) Ping(ctx context.Context) error {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", v.t[0].Host)
	if err != nil {
		return err
	}
	return c.Close()
}
