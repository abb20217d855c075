package redistest

import (
	"net"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestStart(t *testing.T) {
	var addr string
	t.Run("serves", func(t *testing.T) {
		addr = Start(t)
		c := Client(t, addr)
		if err := c.Set(t.Context(), "k", "v", 0).Err(); err != nil {
			t.Fatalf("SET: %v", err)
		}
		got, err := c.Get(t.Context(), "k").Result()
		if err != nil || got != "v" {
			t.Fatalf("GET = %q, %v; want %q", got, err, "v")
		}
		if got, want := c.Options().Protocol, 2; got != want {
			t.Errorf("Protocol = %d, want %d", got, want)
		}
	})
	if addr == "" {
		return // skipped
	}
	// The subtest's cleanup stopped the server.
	if conn, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		conn.Close()
		t.Errorf("the server at %s still accepts connections after its test ended", addr)
	}
}

func TestStartTwice(t *testing.T) {
	a, b := Start(t), Start(t)
	if a == b {
		t.Fatalf("two servers on one address %s", a)
	}
	ca, cb := Client(t, a), Client(t, b)
	if err := ca.Set(t.Context(), "k", "a", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if n, err := cb.Exists(t.Context(), "k").Result(); err != nil || n != 0 {
		t.Errorf("EXISTS k on the second server = %d, %v; want 0: servers must not share data", n, err)
	}
}

// fakeTB records how Start gives up. Its Fatalf and Skipf end the calling
// goroutine as the real ones do.
type fakeTB struct {
	*testing.T
	mu   sync.Mutex
	how  string
	msg  string
	done chan struct{}
}

func (f *fakeTB) Helper() {}

func (f *fakeTB) end(how, format string, args ...any) {
	f.mu.Lock()
	f.how, f.msg = how, format
	f.mu.Unlock()
	close(f.done)
	runtime.Goexit()
}

func (f *fakeTB) Fatalf(format string, args ...any) { f.end("fatal", format, args...) }
func (f *fakeTB) Skipf(format string, args ...any)  { f.end("skip", format, args...) }

func TestStartWithoutServer(t *testing.T) {
	tests := []struct {
		require string
		want    string
	}{
		{require: "", want: "skip"},
		{require: "0", want: "skip"},
		{require: "1", want: "fatal"},
	}
	for _, tt := range tests {
		t.Run("require="+tt.require, func(t *testing.T) {
			t.Setenv("PATH", t.TempDir()) // no redis-server here
			t.Setenv(RequireEnv, tt.require)
			f := &fakeTB{T: t, done: make(chan struct{})}
			go func() {
				Start(f)
				close(f.done)
			}()
			<-f.done
			f.mu.Lock()
			defer f.mu.Unlock()
			if f.how != tt.want {
				t.Errorf("Start without redis-server: %q, want %q", f.how, tt.want)
			}
			if !strings.Contains(f.msg, "redis-server") {
				t.Errorf("message %q does not name redis-server", f.msg)
			}
		})
	}
}
