// Package monoclock reads the machine's one monotonic clock,
// CLOCK_MONOTONIC, in nanoseconds. Go's own monotonic readings (time.Now,
// time.Since) count from the start of each process, so they cannot be
// compared across processes; two processes on one machine that read
// CLOCK_MONOTONIC read the same clock, so a node process and its parent
// can stamp one history without any correction.
package monoclock

import (
	_ "unsafe" // for go:linkname

	"golang.org/x/sys/unix"
)

// nanotime is the Go runtime's raw clock: on Linux, clock_gettime of
// CLOCK_MONOTONIC through the vDSO (no system call, about 20 ns; a
// clock_gettime through a system call costs some 170 ns here, and a sale
// reads the clock several times per attempt). The runtime keeps it
// reachable by linkname for packages such as this one; TestSameClock
// checks that it is CLOCK_MONOTONIC.
//
//go:linkname nanotime runtime.nanotime
func nanotime() int64

// Now is CLOCK_MONOTONIC, in nanoseconds since an unspecified instant
// (the machine's boot), the same in every process of the machine and in
// its containers.
func Now() int64 { return nanotime() }

// Syscall reads CLOCK_MONOTONIC with clock_gettime itself: slower than
// Now, and the reference Now is checked against.
func Syscall() int64 {
	var ts unix.Timespec
	// clock_gettime cannot fail for CLOCK_MONOTONIC on Linux.
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return ts.Nano()
}
