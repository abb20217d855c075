// Package safego starts the engine's goroutines so that a panic in one
// ends the work it belongs to with an error, not the whole process with
// Go's exit 2: the run that owns the goroutine is told (its report
// function), cuts itself short, stops what it started and returns what
// it recorded, and the command line exits 70, an internal error, never
// bad usage. The goroutines that run a run's work (its workers, its
// coordinator's, its faults', its nodes', a lock's through locks.Env.Go)
// start through Go. A few of the engine's own helpers do not, as none
// has a run to report to: a node pause's timer (workload's nodePause), a
// dropped node's link closing, the renewal of a run's key-prefix claim,
// and the reaping of child processes; a panic there still ends the
// process with Go's exit 2.
package safego

import (
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
)

// ErrPanic is what the error of a recovered panic wraps (errors.Is).
var ErrPanic = errors.New("safego: a goroutine panicked")

// Panic is a panic recovered in a goroutine: its value and the stack of
// the goroutine where it happened.
type Panic struct {
	// Value is what was passed to panic, or the runtime's error.
	Value any
	// Stack is the panicking goroutine's stack (runtime/debug.Stack).
	Stack []byte
}

// Error names the panic, then its stack.
func (p *Panic) Error() string { return fmt.Sprintf("panic: %v\n\n%s", p.Value, p.Stack) }

// Unwrap makes a Panic match ErrPanic.
func (p *Panic) Unwrap() error { return ErrPanic }

// Go runs f in a goroutine of its own. A panic in f is recovered and
// handed to report as a *Panic, and the goroutine ends; f's own deferred
// calls have run by then, so a goroutine a WaitGroup waits for starts
// with GoGroup.
func Go(report func(error), f func()) {
	go func() {
		defer Recover(report)
		f()
	}()
}

// GoGroup is Go for a goroutine a WaitGroup waits for (wg.Add done by
// the caller): wg.Done runs after report, so that whoever waits on wg and
// then asks whether a goroutine panicked is told. A Done deferred inside f
// would run before the panic is reported.
func GoGroup(wg *sync.WaitGroup, report func(error), f func()) {
	go func() {
		defer wg.Done()
		defer Recover(report)
		f()
	}()
}

// Call runs f in the calling goroutine; a panic in f is recovered and
// handed to report as Go does: for a callback the run also calls from a
// goroutine of its own (a progress callback's last call).
func Call(report func(error), f func()) {
	defer Recover(report)
	f()
}

// Recover, deferred itself (defer safego.Recover(report)), recovers a
// panic of the goroutine it is deferred in and hands it to report as a
// *Panic: for a goroutine that is not started by Go, as a node's reading
// loop.
func Recover(report func(error)) {
	if v := recover(); v != nil {
		report(&Panic{Value: v, Stack: debug.Stack()})
	}
}
