package workload

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// ErrTarget means a service under test broke the protocol: an answer
// lockbench cannot read where one was due (reset, state).
var ErrTarget = errors.New("workload: the service broke the protocol")

// Endpoints are the running instances of a service under test (--target),
// one base URL
// each (http://127.0.0.1:8081): node i drives instance i.
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

// relay starts the relays of a service's Redis links (Servers.TargetVia)
// before its inventory is made: the reset already goes through them.
func (r *run) relay() error {
	if !r.cfg.Sale.Needs().Has(NeedsTarget) {
		return nil
	}
	for i, via := range r.cfg.Servers.TargetVia {
		relay, ok := r.cfg.Injector.(Relay)
		if !ok || r.cfg.Servers.Redis == nil {
			return fmt.Errorf("%w: relaying %s to the service's Redis needs the fault injector and the Redis", ErrUnsupported, via)
		}
		if err := relay.Relay(i, via, r.cfg.Servers.Redis.Options().Addr); err != nil {
			return fmt.Errorf("%w: %v", ErrUnreachable, err)
		}
	}
	return nil
}
