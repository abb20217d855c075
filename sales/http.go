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
	"strconv"
	"strings"
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
// optional. A request that fails without an answer (a 5xx, 408 or 429, a
// timeout, a reset connection) has an unknown outcome; an answer outside
// the protocol (a redirect, another status, an outcome it does not
// define, a field of the wrong type, none) is the service's protocol
// error, naming the buyer and the field (Node.BrokeProtocol).
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
	return &httpInventory{t: env.Servers.Endpoints, c: &http.Client{CheckRedirect: noRedirect}, bound: env.Workload.LostAfter()}, nil
}

// StartNode gives node n its own HTTP client of its instance, with a pool
// of the run's size.
func (httpSale) StartNode(_ context.Context, n *workload.Node) (workload.Seller, error) {
	t, w := n.Servers().Endpoints, n.Workload()
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxConnsPerHost, tr.MaxIdleConnsPerHost = w.PoolSize(), w.PoolSize()
	return &httpSeller{n: n, target: t[n.ID()%len(t)], http: &http.Client{Transport: tr, CheckRedirect: noRedirect}, timeout: commandTimeout(w)}, nil
}

// noRedirect is every client's CheckRedirect: a redirect is not followed
// (lockbench talks to the instances it was given and to nothing else,
// whatever they answer), and the caller reads it as the protocol error
// it is, naming where it pointed.
func noRedirect(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

// redirect is what a 3xx answer says of itself: its status and where it
// points; "" for any other answer.
func redirect(resp *http.Response) string {
	if resp.StatusCode/100 != 3 {
		return ""
	}
	loc := resp.Header.Get("Location")
	if loc == "" {
		return fmt.Sprintf("%s with no Location (lockbench follows no redirect)", resp.Status)
	}
	return fmt.Sprintf("%s to %s (lockbench follows no redirect)", resp.Status, snippet([]byte(loc)))
}

// failedStatus reports whether an answer's status says the request
// failed without an answer from the sale (a 5xx, 408 Request Timeout,
// 429 Too Many Requests): its purchase has an unknown outcome, where any
// other status but 200 is outside the protocol.
func failedStatus(code int) bool {
	return code >= 500 || code == http.StatusRequestTimeout || code == http.StatusTooManyRequests
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
	Outcome string
	Stock   *int64 // nil when the service does not say
	Token   uint64
}

// parseBuy reads the body of a buy's 200 answer. Its error says what is
// outside the protocol, naming the field: a body that is no JSON object,
// an outcome missing, not a string or not one of the protocol's, a stock
// or token that is not a whole number. Fields the protocol does not name
// are let be; a stock or token of null is none.
func parseBuy(raw []byte) (buyAnswer, error) {
	var ans buyAnswer
	fields, err := jsonObject(raw)
	if err != nil {
		return ans, err
	}
	if err := required(fields, raw, "outcome", "a string", &ans.Outcome); err != nil {
		return ans, err
	}
	if !slices.Contains(outcomes, ans.Outcome) {
		return ans, fmt.Errorf(`"outcome": %q is not one of %s`, snippet([]byte(ans.Outcome)), strings.Join(outcomes, ", "))
	}
	if v, ok := fields["stock"]; ok && string(v) != "null" {
		var stock int64
		if err := json.Unmarshal(v, &stock); err != nil {
			return ans, fmt.Errorf(`"stock": %s is not a whole number`, snippet(v))
		}
		ans.Stock = &stock
	}
	if v, ok := fields["token"]; ok && string(v) != "null" {
		if err := json.Unmarshal(v, &ans.Token); err != nil {
			return ans, fmt.Errorf(`"token": %s is not a whole number from 0`, snippet(v))
		}
	}
	return ans, nil
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
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	var ans buyAnswer
	var broke error
	switch {
	case redirect(resp) != "":
		broke = errors.New(redirect(resp))
	case failedStatus(resp.StatusCode):
		// The service failed the request without answering it: what
		// became of the purchase is unknown, as for a timeout.
		s.n.Unanswered(fmt.Sprintf("POST %s%s answered %s: %q", s.target, pathBuy, resp.Status, snippet(raw)))
		rec.WritingWithRead()
		rec.Unknown()
		return
	case resp.StatusCode != http.StatusOK:
		broke = fmt.Errorf("%s, not 200: %q", resp.Status, snippet(raw))
	default:
		ans, broke = parseBuy(raw)
	}
	if broke != nil {
		// The service's error, which fails the run; the purchase is
		// recorded unknown, so that the checks on what else was
		// answered allow for it either way.
		s.n.BrokeProtocol(fmt.Sprintf("buyer %s: POST %s%s answered %v", a.User, s.target, pathBuy, broke))
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

// maxAnswer bounds what lockbench reads of an answer to a buy; a longer
// one is cut there, and is no longer the protocol's JSON.
const maxAnswer = 1 << 16

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
	if r := redirect(resp); r != "" {
		return fmt.Errorf("%w: %s: POST %s answered %s (docs/target-protocol.md)", workload.ErrTarget, v.t[0], pathReset, r)
	}
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
	Stock  int64
	Orders map[string]int64
}

// jsonObject reads an answer's body as a JSON object, its fields left
// raw for required to read one by one.
func jsonObject(raw []byte) (map[string]json.RawMessage, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil || fields == nil {
		return nil, fmt.Errorf("the body is not a JSON object: %q", snippet(raw))
	}
	return fields, nil
}

// required reads the field name of an answer (raw, read into fields) into
// into; its error names the field, missing or not of kind.
func required(fields map[string]json.RawMessage, raw []byte, name, kind string, into any) error {
	v, ok := fields[name]
	if !ok {
		return fmt.Errorf("the field %q is missing: %q", name, snippet(raw))
	}
	if json.Unmarshal(v, into) != nil {
		return fmt.Errorf("%q: %s is not %s", name, snippet(v), kind)
	}
	return nil
}

// parseState reads the body of a state's 200 answer. Its error says what
// is outside the protocol, naming the field: a body that is no JSON
// object, a stock missing or not a whole number, orders missing or not an
// object of buyers' user ids (whole numbers from 0) to counts from 0.
func parseState(raw []byte) (stateAnswer, error) {
	var st stateAnswer
	fields, err := jsonObject(raw)
	if err != nil {
		return st, err
	}
	if err := required(fields, raw, "stock", "a whole number", &st.Stock); err != nil {
		return st, err
	}
	const orders = "an object of user ids to whole numbers ({} for none)"
	if err := required(fields, raw, "orders", orders, &st.Orders); err != nil {
		return st, err
	}
	if st.Orders == nil {
		return st, fmt.Errorf(`"orders": null is not %s`, orders)
	}
	for user, n := range st.Orders {
		if id, err := strconv.ParseInt(user, 10, 32); err != nil || id < 0 || strconv.FormatInt(id, 10) != user {
			return st, fmt.Errorf(`"orders": %q is not a buyer's user id (lockbench's buyers are 0, 1, 2...)`, snippet([]byte(user)))
		}
		if n < 0 {
			return st, fmt.Errorf(`"orders": user %s has %d orders`, user, n)
		}
	}
	return st, nil
}

// Audit reads the state of the first instance.
func (v *httpInventory) Audit(ctx context.Context) (history.Final, error) {
	s, err := v.state(ctx, v.t[0])
	if err != nil {
		return history.Final{}, err
	}
	f := CountOrders(s.Stock, s.Orders)
	f.Ordered = ordered(s.Orders)
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
		return s, fmt.Errorf("%w: service at %s: GET %s: %s", servers.ErrUnreachable, u, pathState, failure(rctx, err, d))
	}
	defer resp.Body.Close()
	if r := redirect(resp); r != "" {
		return s, fmt.Errorf("%w: %s: GET %s answered %s (docs/target-protocol.md)", workload.ErrTarget, u, pathState, r)
	}
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if resp.StatusCode != http.StatusOK {
		return s, fmt.Errorf("%w: %s: GET %s answered %s without a stock and orders lockbench can read: %q (docs/target-protocol.md)", workload.ErrTarget, u, pathState, resp.Status, snippet(raw))
	}
	if s, err = parseState(raw); err != nil {
		return s, fmt.Errorf("%w: %s: GET %s answered %v (docs/target-protocol.md)", workload.ErrTarget, u, pathState, err)
	}
	return s, nil
}

// ordered lists the users with an order, sorted: the final state's
// Ordered, against which every buyer told "sold" is checked.
func ordered(orders map[string]int64) []int32 {
	out := make([]int32, 0, len(orders))
	for user, n := range orders {
		if n > 0 {
			id, _ := strconv.ParseInt(user, 10, 32) // parseState checked it
			out = append(out, int32(id))
		}
	}
	slices.Sort(out)
	return out
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
