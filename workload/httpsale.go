package workload

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/lockbench/lockbench/history"
	"github.com/redis/go-redis/v9"
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

// ErrTarget means a service under test broke the protocol: an answer
// lockbench cannot read where one was due (reset, state).
var ErrTarget = errors.New("workload: the service broke the protocol")

// Endpoints are the running instances of a service under test (--target),
// one base URL each (http://127.0.0.1:8081): node i drives instance i.
type Endpoints []*url.URL

// ParseEndpoints reads a comma list of base URLs. Each must be http on this
// machine's loopback (127.0.0.1, ::1 or localhost): lockbench talks to
// nothing else.
func ParseEndpoints(s string) (Endpoints, error) {
	var out Endpoints
	for _, raw := range strings.Split(s, ",") {
		if raw = strings.TrimSpace(raw); raw == "" {
			continue
		}
		u, err := url.Parse(raw)
		if err != nil || u.Scheme != "http" || u.Host == "" {
			return nil, fmt.Errorf("%w: %q is not an http://host:port URL", ErrTarget, raw)
		}
		switch u.Hostname() {
		case "127.0.0.1", "::1", "localhost":
		default:
			return nil, fmt.Errorf("%w: %q is not on this machine's loopback (127.0.0.1, ::1): lockbench talks to nothing else", ErrTarget, raw)
		}
		u.Path = strings.TrimSuffix(u.Path, "/")
		out = append(out, u)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: no URL", ErrTarget)
	}
	return out, nil
}

// String lists the URLs as ParseEndpoints reads them.
func (t Endpoints) String() string {
	s := make([]string, len(t))
	for i, u := range t {
		s[i] = u.String()
	}
	return strings.Join(s, ",")
}

// Name implements Server: the service is what the run's faults act on.
func (t Endpoints) Name() string {
	return fmt.Sprintf("service at %s", t.String())
}

// Version implements Server: a service does not say.
func (t Endpoints) Version() string { return "" }

// Close implements Server; the service is not lockbench's to stop.
func (t Endpoints) Close() error { return nil }

// HTTPSale is the black-box sale: each node's buyers buy from one
// instance of a running service over HTTP, and what it answers is the
// history. When the service reports the stock each purchase read, the
// inventory is checked for linearizability as any other; when it does
// not, the audits alone judge, and the history says so (Header.Unread).
func HTTPSale() Sale { return httpSale{} }

type httpSale struct{}

func (httpSale) Needs() Needs               { return NeedsTarget }
func (httpSale) describe(h *history.Header) { h.Lockless = true }
func (httpSale) scripts() []*redis.Script   { return nil }

// inventory starts the relays of the instances' Redis links first: the
// reset already goes through them.
func (httpSale) inventory(r *run) (inventory, error) {
	if len(r.cfg.Servers.Endpoints) == 0 {
		return nil, ErrMissingServer
	}
	for i, via := range r.cfg.Servers.TargetVia {
		relay, ok := r.cfg.Injector.(Relay)
		if !ok || r.cfg.Servers.Redis == nil {
			return nil, fmt.Errorf("%w: relaying %s to the service's Redis needs the fault injector and the Redis", ErrUnsupported, via)
		}
		if err := relay.Relay(i, via, r.cfg.Servers.Redis.Options().Addr); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrUnreachable, err)
		}
	}
	return &httpInventory{t: r.cfg.Servers.Endpoints, c: &http.Client{}, bound: r.lostAfter()}, nil
}

// startNode gives node n its own HTTP client of its instance, with a pool
// of the run's size.
func (httpSale) startNode(_ context.Context, r *run, n *node) error {
	t := r.cfg.Servers.Endpoints
	n.target = t[n.id%len(t)]

	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxConnsPerHost, tr.MaxIdleConnsPerHost = r.cfg.Pool, r.cfg.Pool
	n.http = &http.Client{Transport: tr}
	return nil
}

// buyAnswer is the protocol's answer to a buy.
type buyAnswer struct {
	Outcome string `json:"outcome"`
	Stock   *int64 `json:"stock"`
	Token   uint64 `json:"token"`
}

func (httpSale) buy(ctx context.Context, r *run, n *node, rec *recorder, user, _ string) {
	body, _ := json.Marshal(map[string]string{"user": user})
	if err := (hook{n}).admit(ctx, 1); err != nil {
		rec.fail()
		return
	}
	rctx, cancel := context.WithTimeout(ctx, cmp.Or(r.cfg.CommandTimeout, 3*time.Second))
	defer cancel()
	req, _ := http.NewRequestWithContext(rctx, http.MethodPost, n.target.String()+pathBuy, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	rec.reading()
	resp, err := n.http.Do(req)
	if err != nil {
		if refused(err) {
			r.badAnswer(fmt.Sprintf("POST %s%s: connection refused", n.target, pathBuy))
			rec.readFailed() // never reached the service: nothing happened
			return
		}
		if ctx.Err() == nil {
			r.badAnswer(fmt.Sprintf("POST %s%s: %s", n.target, pathBuy, failure(rctx, err, cmp.Or(r.cfg.CommandTimeout, 3*time.Second))))
		}
		rec.writingWithRead()
		rec.unknown()
		return
	}
	defer resp.Body.Close()
	var a buyAnswer
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	if resp.StatusCode != http.StatusOK || json.Unmarshal(raw, &a) != nil || !slices.Contains(outcomes, a.Outcome) {
		r.badAnswer(fmt.Sprintf("POST %s%s answered %s: %q", n.target, pathBuy, resp.Status, snippet(raw)))
		rec.writingWithRead()
		rec.unknown()
		return
	}
	r.answered.Add(1)
	if a.Stock != nil {
		rec.read(*a.Stock)
	} else {
		r.unread.Store(true)
		rec.answered()
	}
	if a.Token > 0 {
		rec.token(a.Token)
	}
	switch a.Outcome {
	case outcomeSold:
		rec.appliedWithRead()
	case outcomeSoldOut:
		rec.soldOut()
	case outcomeDuplicate:
		rec.duplicate()
	case outcomeError:
		rec.readFailed()
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

// badAnswer keeps the first purchase a service under test did not answer
// in the protocol: an answer that broke it, none in time, or a refused
// connection.
func (r *run) badAnswer(s string) { r.firstBad.CompareAndSwap(nil, &s) }

// protocolError is the error of a run in which buyers tried and the
// service under test answered no purchase in the protocol: nothing it did
// can be judged, and a sale that sold nothing because nothing was
// answered or understood is no pass.
func (r *run) protocolError() error {
	bad := r.firstBad.Load()
	if bad == nil || r.answered.Load() > 0 {
		return nil
	}
	return fmt.Errorf("%w: %s answered no purchase in lockbench's protocol (docs/target-protocol.md); the first: %s", ErrTarget, r.cfg.Servers.Endpoints, *bad)
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
	t Endpoints
	c *http.Client
	// bound is how long a reset or a state read may take: the run's
	// lostAfter (two command timeouts, 5 s at least), within the caller's
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

// prepare resets the stock through the first instance, then reads the
// state of every instance: each must answer before the sale, or the buyers
// of a dead one would be refused and the sale judged without it.
func (v *httpInventory) prepare(ctx context.Context, stock int64, _ bool) error {
	body, _ := json.Marshal(map[string]int64{"stock": stock})
	rctx, cancel, d := v.within(ctx)
	defer cancel()
	req, _ := http.NewRequestWithContext(rctx, http.MethodPost, v.t[0].String()+pathReset, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := v.c.Do(req)
	if err != nil {
		return fmt.Errorf("%w: service at %s: POST %s: %s", ErrUnreachable, v.t[0], pathReset, failure(rctx, err, d))
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<10))
		return fmt.Errorf("%w: %s: POST %s answered %s: %q (docs/target-protocol.md)", ErrTarget, v.t[0], pathReset, resp.Status, snippet(raw))
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

func (v *httpInventory) audit(ctx context.Context) (history.Final, error) {
	var f history.Final
	s, err := v.state(ctx, v.t[0])
	if err != nil {
		return f, err
	}
	f.Stock = *s.Stock
	countOrders(&f, s.Orders)
	return f, nil
}

// state reads the state of the instance at u, within v's bound.
func (v *httpInventory) state(ctx context.Context, u *url.URL) (stateAnswer, error) {
	var s stateAnswer
	rctx, cancel, d := v.within(ctx)
	defer cancel()
	req, _ := http.NewRequestWithContext(rctx, http.MethodGet, u.String()+pathState, nil)
	resp, err := v.c.Do(req)
	if err != nil {
		return s, fmt.Errorf("%w: service at %s: GET %s: %s", ErrUnreachable, u, pathState, failure(rctx, err, d))
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if resp.StatusCode != http.StatusOK || json.Unmarshal(raw, &s) != nil || s.Stock == nil {
		return s, fmt.Errorf("%w: %s: GET %s answered %s without a stock and orders lockbench can read: %q (docs/target-protocol.md)", ErrTarget, u, pathState, resp.Status, snippet(raw))
	}
	return s, nil
}

// clear leaves the service as it is: its state is the run's evidence.
func (v *httpInventory) clear(context.Context) error { return nil }

// ping dials the first instance: a service that accepts connections is
// there.
func (v *httpInventory) ping(ctx context.Context) error {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", v.t[0].Host)
	if err != nil {
		return err
	}
	return c.Close()
}
