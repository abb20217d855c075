package workload_test

import (
	"math"
	"testing"
	"time"

	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/internal/redistest"
	"github.com/lockbench/lockbench/sales"
	"github.com/lockbench/lockbench/servers"
	"github.com/lockbench/lockbench/workload"
)

// TestArrivals checks each arrival process's schedule: its offsets, that
// the first is after the sale's start (a zero instant means "did not
// happen"), that none comes before the one before it, and a rate's
// spacing.
func TestArrivals(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		name string
		a    workload.Arrivals
		n    int
		want map[int]time.Duration // buyer → its arrival
		last time.Duration         // bound on the last arrival (exclusive); 0: none
	}{
		{"burst", workload.Burst(), 1000, map[int]time.Duration{0: ms, 1: ms, 999: ms}, 0},
		{"ramp zero is a burst", workload.Ramp(0), 10, map[int]time.Duration{0: ms, 9: ms}, 0},
		{"ramp over 1s", workload.Ramp(time.Second), 1000, map[int]time.Duration{0: ms, 1: 2 * ms, 500: 501 * ms, 999: 1000 * ms}, time.Second + ms},
		{"ramp over 1s, 3 buyers", workload.Ramp(time.Second), 3, map[int]time.Duration{0: ms, 1: ms + 333333333, 2: ms + 666666666}, time.Second + ms},
		{"ramp over a day, a million buyers", workload.Ramp(24 * time.Hour), 1_000_000, map[int]time.Duration{999_999: ms + 24*time.Hour - 86400000*time.Nanosecond}, 24*time.Hour + ms},
		{"rate 500/s", workload.Rate(500), 1000, map[int]time.Duration{0: ms, 1: 3 * ms, 500: time.Second + ms, 999: ms + 999*2*ms}, 0},
		{"rate 0.5/s", workload.Rate(0.5), 4, map[int]time.Duration{0: ms, 1: 2*time.Second + ms, 3: 6*time.Second + ms}, 0},
		{"rate 1e6/s, a million buyers", workload.Rate(1e6), 1_000_000, map[int]time.Duration{1: ms + time.Microsecond, 999_999: ms + 999_999*time.Microsecond}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prev := time.Duration(0)
			for i := 0; i < tt.n; i++ {
				got := tt.a.At(i, tt.n)
				if got < workload.FirstArrival {
					t.Fatalf("buyer %d arrives at %v, before the first arrival %v", i, got, workload.FirstArrival)
				}
				if got < prev {
					t.Fatalf("buyer %d arrives at %v, before buyer %d at %v", i, got, i-1, prev)
				}
				if want, ok := tt.want[i]; ok && got != want {
					t.Errorf("buyer %d arrives at %v, want %v", i, got, want)
				}
				if again := tt.a.At(i, tt.n); again != got {
					t.Fatalf("buyer %d arrives at %v, then at %v: the schedule must not change", i, got, again)
				}
				prev = got
			}
			if tt.last > 0 && prev >= tt.last {
				t.Errorf("last buyer arrives at %v, want before %v", prev, tt.last)
			}
		})
	}
}

// TestRateSpacing: consecutive buyers of a rate arrive 1/rate apart:
// exactly when that is a whole number of nanoseconds, within one
// otherwise.
func TestRateSpacing(t *testing.T) {
	tests := []struct {
		perSecond float64
		exact     bool
	}{{1, true}, {500, true}, {2000, true}, {1e9, true}, {3, false}, {7000, false}}
	for _, tt := range tests {
		a := workload.Rate(tt.perSecond)
		want := float64(time.Second) / tt.perSecond
		for i := 1; i < 10_000; i++ {
			got := float64(a.At(i, 10_000) - a.At(i-1, 10_000))
			if d := math.Abs(got - want); tt.exact && d != 0 || d >= 1 {
				t.Fatalf("rate %v: buyers %d and %d arrive %v ns apart, want %v", tt.perSecond, i-1, i, got, want)
			}
		}
	}
}

// TestRateRefusesNonRates: a rate that is not a positive number is a
// programming error, caught at once.
func TestRateRefusesNonRates(t *testing.T) {
	for _, r := range []float64{0, -1, math.NaN(), math.Inf(1)} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Rate(%v) did not panic", r)
				}
			}()
			workload.Rate(r)
		}()
	}
}

// TestWorkloadArrivals: the workload's fields choose the process; Rate
// takes Ramp's place.
func TestWorkloadArrivals(t *testing.T) {
	tests := []struct {
		name string
		w    workload.Workload
		want workload.Arrivals
	}{
		{"ramp", workload.Workload{Ramp: time.Second}, workload.Ramp(time.Second)},
		{"burst", workload.Workload{}, workload.Burst()},
		{"rate", workload.Workload{Rate: 250}, workload.Rate(250)},
		{"rate over ramp", workload.Workload{Ramp: time.Second, Rate: 250}, workload.Rate(250)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, i := range []int{0, 1, 7, 99} {
				if got, want := tt.w.Arrivals().At(i, 100), tt.want.At(i, 100); got != want {
					t.Errorf("buyer %d arrives at %v, want %v", i, got, want)
				}
			}
		})
	}
}

// TestRateSale runs a constant-rate sale on the embedded server: every
// buyer's first attempt records its scheduled arrival, 1/rate after the
// one before, whatever the system did.
func TestRateSale(t *testing.T) {
	b := redistest.Embedded(t)
	const clients, rate = 60, 2000 // 500 µs apart: the sale takes 30 ms
	h, err := workload.Run(t.Context(), workload.Config{
		Name: "atomic", Sale: sales.Atomic(), Servers: &servers.Set{Redis: b},
		Workload: workload.Workload{Prefix: "rate:", Clients: clients, Nodes: 2, Workers: 4, Pool: 4, Stock: 40, Attempts: 1,
			Ramp: time.Hour, Rate: rate, Timeout: time.Minute, CommandTimeout: 5 * time.Second},
	})
	if err != nil {
		t.Fatal(err)
	}
	arrivals := make([]int64, clients)
	for _, op := range h.Ops {
		if op.Attempt == 0 {
			arrivals[op.Client] = op.Arrival
		}
		if op.Outcome != history.Pending && op.End < op.Arrival {
			t.Errorf("client %d ended at %d, before its arrival %d", op.Client, op.End, op.Arrival)
		}
	}
	want := int64(time.Second / rate)
	for i, at := range arrivals {
		if i == 0 {
			if at != int64(workload.FirstArrival) {
				t.Errorf("client 0 arrived at %d, want %d", at, workload.FirstArrival)
			}
			continue
		}
		if got := at - arrivals[i-1]; got != want {
			t.Errorf("clients %d and %d arrived %d ns apart, want %d (1/rate; the ramp of an hour must not apply)", i-1, i, got, want)
		}
	}
	if h.Header.CutShort {
		t.Errorf("a 30 ms sale was cut short by %s", h.Header.CutBy)
	}
}
