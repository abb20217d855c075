package faults

import (
	"errors"
	"slices"
	"testing"
	"time"
)

func TestParseSweep(t *testing.T) {
	tests := []struct {
		in     string
		lease  time.Duration
		labels []string
		durs   []time.Duration
		back   string
	}{
		{"for=0.25x..3x/6", 200 * time.Millisecond,
			[]string{"0.25x", "0.8x", "1.35x", "1.9x", "2.45x", "3x"},
			[]time.Duration{50 * time.Millisecond, 160 * time.Millisecond, 270 * time.Millisecond, 380 * time.Millisecond, 490 * time.Millisecond, 600 * time.Millisecond},
			"for=0.25x..3x/6"},
		{"for=0x..1x/3", time.Second, []string{"0x", "0.5x", "1x"},
			[]time.Duration{0, 500 * time.Millisecond, time.Second}, "for=0x..1x/3"},
		// Absolute values ignore the lease.
		{"every=100ms..400ms/4", time.Minute, []string{"100ms", "200ms", "300ms", "400ms"},
			[]time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 300 * time.Millisecond, 400 * time.Millisecond}, "every=100ms..400ms/4"},
		{"for=1x..2x", time.Second, []string{"1x", "1.143x", "1.286x", "1.429x", "1.571x", "1.714x", "1.857x", "2x"}, nil, "for=1x..2x/8"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			sw, err := ParseSweep(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			var labels []string
			var durs []time.Duration
			for _, v := range sw.Values(tt.lease) {
				labels = append(labels, v.Label)
				durs = append(durs, v.Duration)
			}
			if !slices.Equal(labels, tt.labels) {
				t.Errorf("labels %v, want %v", labels, tt.labels)
			}
			if tt.durs != nil && !slices.Equal(durs, tt.durs) {
				t.Errorf("durations %v, want %v", durs, tt.durs)
			}
			if got := sw.String(); got != tt.back {
				t.Errorf("String() = %q, want %q", got, tt.back)
			}
		})
	}
}

func TestParseSweepRefuses(t *testing.T) {
	for _, in := range []string{
		"", "for", "for=", "=1x..2x", "for=1x", "for=1x..", "for=2x..1x", "for=1x..1x",
		"for=1x..2s", "for=50ms..2x", "for=-1x..2x", "for=ax..2x", "for=1x..2x/1", "for=1x..2x/x",
		"for=1..2",
	} {
		if sw, err := ParseSweep(in); !errors.Is(err, ErrSweep) {
			t.Errorf("ParseSweep(%q) = %v, %v; want ErrSweep", in, sw, err)
		}
	}
}

func TestSweepApplies(t *testing.T) {
	sw, err := ParseSweep("for=1x..2x")
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]bool{"pause-holder": true, "pause-before-release": true, "crash-holder": false} {
		f, _ := Lookup(name)
		if got := sw.Applies(f); got != want {
			t.Errorf("%s: Applies = %v, want %v", name, got, want)
		}
	}
	// count is a parameter, but not a duration.
	count, _ := ParseSweep("count=1x..2x")
	if f, _ := Lookup("pause-holder"); count.Applies(f) {
		t.Error("a sweep of count applies to pause-holder")
	}
}

func TestSweepSet(t *testing.T) {
	sw, _ := ParseSweep("for=1x..2x")
	for in, want := range map[string]string{
		"pause-holder":                     "pause-holder:for=300ms",
		"pause-holder:for=2s:until=next":   "pause-holder:until=next:for=300ms",
		"pause-holder:count=all:for=100ms": "pause-holder:count=all:for=300ms",
	} {
		got := sw.Set(in, 300*time.Millisecond)
		if got != want {
			t.Errorf("Set(%q) = %q, want %q", in, got, want)
		}
		if _, err := Parse(got); err != nil {
			t.Errorf("Set(%q) = %q does not parse: %v", in, got, err)
		}
	}
}
