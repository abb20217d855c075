package servers

import (
	"fmt"
	"net/url"
	"strings"
)

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
			return nil, fmt.Errorf("%w: %q is not an http://host:port URL", ErrBadAddress, raw)
		}
		switch u.Hostname() {
		case "127.0.0.1", "::1", "localhost":
		default:
			return nil, fmt.Errorf("%w: %q is not on this machine's loopback (127.0.0.1, ::1): lockbench talks to nothing else", ErrBadAddress, raw)
		}
		u.Path = strings.TrimSuffix(u.Path, "/")
		out = append(out, u)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: no URL", ErrBadAddress)
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
