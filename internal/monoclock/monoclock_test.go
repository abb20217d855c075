package monoclock_test

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/lockbench/lockbench/internal/monoclock"
)

// TestSharedAcrossProcesses reads the clock in a child process between two
// readings in this one: the child's reading lies between them, which it
// could not if each process counted from its own start (as Go's monotonic
// readings do).
func TestSharedAcrossProcesses(t *testing.T) {
	if os.Getenv("MONOCLOCK_CHILD") == "1" {
		os.Stdout.WriteString(strconv.FormatInt(monoclock.Now(), 10))
		os.Exit(0)
	}
	for range 3 {
		cmd := exec.Command(os.Args[0], "-test.run=^TestSharedAcrossProcesses$")
		cmd.Env = append(os.Environ(), "MONOCLOCK_CHILD=1")
		before := monoclock.Now()
		out, err := cmd.Output()
		after := monoclock.Now()
		if err != nil {
			t.Fatal(err)
		}
		child, err := strconv.ParseInt(strings.TrimSpace(string(out)), 10, 64)
		if err != nil {
			t.Fatalf("child printed %q: %v", out, err)
		}
		if child < before || child > after {
			t.Fatalf("child read %d, outside [%d, %d] read around it", child, before, after)
		}
	}
}

func TestMonotonic(t *testing.T) {
	last := monoclock.Now()
	for range 1000 {
		now := monoclock.Now()
		if now < last {
			t.Fatalf("clock went back: %d after %d", now, last)
		}
		last = now
	}
}

func BenchmarkNow(b *testing.B) {
	for b.Loop() {
		monoclock.Now()
	}
}

// TestSameClock reads Now between two readings of CLOCK_MONOTONIC by
// clock_gettime: it is that clock.
func TestSameClock(t *testing.T) {
	for range 1000 {
		a := monoclock.Syscall()
		n := monoclock.Now()
		b := monoclock.Syscall()
		if n < a || n > b {
			t.Fatalf("Now read %d, outside [%d, %d] of CLOCK_MONOTONIC", n, a, b)
		}
	}
}

func BenchmarkSyscall(b *testing.B) {
	for b.Loop() {
		monoclock.Syscall()
	}
}
