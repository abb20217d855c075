package faults

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// ErrSweep is returned for a malformed sweep.
var ErrSweep = errors.New("faults: bad sweep")

// Sweep runs one duration parameter of a fault over a range, to find the
// smallest value that breaks a lock: `for=0.25x..3x/6` is six pause
// lengths from a quarter of the lease to three leases; `for=50ms..1s/4`
// is four lengths in absolute time. A value relative to the lease (the x
// suffix) follows each cell's own lease.
type Sweep struct {
	// Param is the parameter swept, a duration parameter of the fault.
	Param string
	// From and To are the range's ends: lease multiples when Relative,
	// nanoseconds otherwise.
	From, To float64
	// Relative says the ends are multiples of the lease.
	Relative bool
	// Steps is the number of values, both ends included.
	Steps int
}

// DefaultSweepSteps is the number of values when a sweep does not say.
const DefaultSweepSteps = 8

// SweepValue is one value of a sweep for one lease: its label in the
// sweep's own terms (0.5x, 200ms) and the duration it stands for.
type SweepValue struct {
	Label    string
	Duration time.Duration
}

// ParseSweep reads a --sweep value, PARAM=FROM..TO[/STEPS], the ends
// both durations (50ms) or both lease multiples (0.5x).
func ParseSweep(s string) (Sweep, error) {
	bad := func(format string, a ...any) (Sweep, error) {
		return Sweep{}, fmt.Errorf("%w %q: %s", ErrSweep, s, fmt.Sprintf(format, a...))
	}
	name, rng, ok := strings.Cut(s, "=")
	if !ok || name == "" || rng == "" {
		return bad("want PARAM=FROM..TO[/STEPS], for example for=0.25x..3x/6")
	}
	sw := Sweep{Param: name, Steps: DefaultSweepSteps}
	if r, steps, ok := strings.Cut(rng, "/"); ok {
		n, err := strconv.Atoi(steps)
		if err != nil || n < 2 {
			return bad("steps %q: want a whole number of 2 or more", steps)
		}
		sw.Steps, rng = n, r
	}
	from, to, ok := strings.Cut(rng, "..")
	if !ok {
		return bad("want a range FROM..TO, for example 0.25x..3x")
	}
	var rel [2]bool
	for i, end := range []string{from, to} {
		v, r, err := sweepEnd(end)
		if err != nil {
			return bad("%s", err)
		}
		rel[i] = r
		if i == 0 {
			sw.From = v
		} else {
			sw.To = v
		}
	}
	if rel[0] != rel[1] {
		return bad("both ends must be durations (50ms) or both multiples of the lease (0.5x)")
	}
	sw.Relative = rel[0]
	if sw.To <= sw.From {
		return bad("the range must rise: %s is not more than %s", to, from)
	}
	return sw, nil
}

// sweepEnd reads one end of a range: a lease multiple (0.5x) or a
// duration (50ms).
func sweepEnd(s string) (float64, bool, error) {
	if m, ok := strings.CutSuffix(s, "x"); ok {
		v, err := strconv.ParseFloat(m, 64)
		if err != nil || v < 0 {
			return 0, false, fmt.Errorf("%q: want a multiple of the lease of zero or more, such as 0.5x", s)
		}
		return v, true, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, false, fmt.Errorf("%q: want a duration of zero or more (50ms) or a multiple of the lease (0.5x)", s)
	}
	return float64(d), false, nil
}

// String gives the sweep back in --sweep syntax.
func (s Sweep) String() string {
	return fmt.Sprintf("%s=%s..%s/%d", s.Param, s.label(s.From), s.label(s.To), s.Steps)
}

// label renders a value of the range in the sweep's own terms.
func (s Sweep) label(v float64) string {
	if s.Relative {
		return strconv.FormatFloat(v, 'f', -1, 64) + "x"
	}
	return time.Duration(v).String()
}

// Applies reports whether f has the swept parameter, as a duration.
func (s Sweep) Applies(f Fault) bool {
	p, ok := param(f, s.Param)
	return ok && p.kind == durationKind
}

// Values lists the sweep's values, rising, for a cell whose lease is
// lease.
func (s Sweep) Values(lease time.Duration) []SweepValue {
	out := make([]SweepValue, s.Steps)
	for i := range out {
		v := s.From + (s.To-s.From)*float64(i)/float64(s.Steps-1)
		if !s.Relative {
			d := round(time.Duration(v))
			out[i] = SweepValue{Label: d.String(), Duration: d}
			continue
		}
		// Three decimals, so that labels read 0.25x, not 0.2500001x.
		v = math.Round(v*1000) / 1000
		out[i] = SweepValue{Label: s.label(v), Duration: round(time.Duration(v * float64(lease)))}
	}
	return out
}

// Set returns the cell's fault entry (a --faults value) with the swept
// parameter set to d, replacing a value the entry gives it.
func (s Sweep) Set(entry string, d time.Duration) string {
	fields := strings.Split(entry, ":")
	kept := fields[:1]
	for _, kv := range fields[1:] {
		if k, _, _ := strings.Cut(kv, "="); k != s.Param {
			kept = append(kept, kv)
		}
	}
	return strings.Join(append(kept, s.Param+"="+d.String()), ":")
}
