package loopback

import (
	"context"
	"errors"
	"net"
	"strconv"
	"testing"
)

func TestFreePort(t *testing.T) {
	port, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		t.Fatalf("port %d is not free: %v", port, err)
	}
	l.Close()
}

func TestRetry(t *testing.T) {
	exited := errors.New("exited before it served")
	other := errors.New("no such image")
	tests := []struct {
		name      string
		errs      []error // what each start returns, nil for success
		cancel    bool    // ctx ends during the first start
		wantCalls int
		wantErr   error // nil for success
	}{
		{"first start serves", []error{nil}, false, 1, nil},
		{"exits twice, then serves", []error{exited, exited, nil}, false, 3, nil},
		{"exits every time", []error{exited, exited, exited}, false, 3, exited},
		{"another error stops it", []error{other, nil}, false, 1, other},
		{"ctx ending stops it", []error{exited, nil}, true, 1, context.Canceled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			calls := 0
			v, err := Retry(ctx, exited, func(port int, addr string) (int, error) {
				calls++
				if port <= 0 || addr != net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) {
					t.Errorf("try %d on port %d, address %s: want a free port and its 127.0.0.1 address", calls, port, addr)
				}
				if tt.cancel {
					cancel()
				}
				if e := tt.errs[calls-1]; e != nil {
					return 0, e
				}
				return 42, nil
			})
			if calls != tt.wantCalls || !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && (err != nil || v != 42)) {
				t.Errorf("Retry: %d calls, %v, %v; want %d calls, error %v", calls, v, err, tt.wantCalls, tt.wantErr)
			}
		})
	}
}
