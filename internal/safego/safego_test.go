package safego

import (
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// TestGo: a panic in a goroutine started by Go reaches report as a Panic
// that names it and carries its stack, matches ErrPanic, and leaves the
// process running; f's deferred calls have run; a goroutine that ends
// without panicking reports nothing.
func TestGo(t *testing.T) {
	tests := []struct {
		name string
		f    func()
		want string // in the error; "" for no report
	}{
		{"index out of range", func() {
			var s []int
			_ = s[len(s)+1]
		}, "index out of range"},
		{"a value", func() { panic("the lock broke") }, "the lock broke"},
		{"nil", func() { panic(nil) }, "panic called with nil"},
		{"no panic", func() {}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var wg sync.WaitGroup
			got := make(chan error, 1)
			deferred := false
			wg.Add(1)
			Go(func(err error) { got <- err }, func() {
				defer wg.Done()
				defer func() { deferred = true }()
				tt.f()
			})
			wg.Wait()
			if !deferred {
				t.Fatal("f's deferred calls did not run")
			}
			if tt.want == "" {
				select {
				case err := <-got:
					t.Fatalf("reported %v", err)
				default:
				}
				return
			}
			err := <-got
			var p *Panic
			if !errors.Is(err, ErrPanic) || !errors.As(err, &p) {
				t.Fatalf("got %v, want a *Panic matching ErrPanic", err)
			}
			if msg := err.Error(); !strings.Contains(msg, tt.want) || !strings.Contains(msg, "safego_test.go") {
				t.Errorf("the error does not name the panic %q and its place:\n%s", tt.want, msg)
			}
		})
	}
}

// TestCall: a panic in f reaches report, and Call returns to its caller.
func TestCall(t *testing.T) {
	var got error
	Call(func(err error) { got = err }, func() { panic("in the caller's goroutine") })
	if !errors.Is(got, ErrPanic) || !strings.Contains(got.Error(), "in the caller's goroutine") {
		t.Fatalf("got %v", got)
	}
}

// TestGoGroupReportsBeforeDone: whoever waits on the group and then asks
// whether a goroutine panicked is told, every time: the panic is reported
// before the group's Done.
func TestGoGroupReportsBeforeDone(t *testing.T) {
	for range 100 {
		var wg sync.WaitGroup
		var got atomic.Pointer[error]
		wg.Add(1)
		GoGroup(&wg, func(err error) { got.Store(&err) }, func() { panic("boom") })
		wg.Wait()
		if p := got.Load(); p == nil || !errors.Is(*p, ErrPanic) {
			t.Fatalf("after Wait the panic was not reported: %v", p)
		}
	}
}
