package reports

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/lockbench/lockbench/history"
)

const (
	us = int64(1_000)
	ms = 1_000 * us
	s  = 1_000 * ms
)

// answered is an attempt that arrived at arrival, was picked up at start
// and answered at end with outcome.
func answered(arrival, start, end int64, outcome history.Outcome) history.Op {
	return history.Op{Arrival: arrival, Start: start, End: end, Stock: history.NoStock, Outcome: outcome}
}

// locked is an attempt that asked for the lock at call and got it at got,
// answered at end.
func locked(call, got, end int64, outcome history.Outcome) history.Op {
	return history.Op{Arrival: call, Start: call, AcquireCall: call, Acquired: got, End: end, Stock: history.NoStock, Outcome: outcome}
}

// equivalent reports whether got is the value HdrHistogram reports for
// want at three significant figures: want itself below 2048 µs, otherwise
// at most 0.1% above it.
func equivalent(got, want int64) bool {
	return got >= want && got <= want+want/1000
}

func TestPurchaseLatency(t *testing.T) {
	var tenOps []history.Op
	for i := int64(1); i <= 10; i++ {
		// Latencies of 1, 2, …, 10 ms.
		tenOps = append(tenOps, answered(i*s, i*s, i*s+i*ms, history.Sold))
	}
	var tailOps []history.Op
	for i := int64(1); i <= 1000; i++ {
		// 999 latencies of 100 µs and one of 2 s.
		lat := 100 * us
		if i == 1000 {
			lat = 2 * s
		}
		tailOps = append(tailOps, answered(i*ms, i*ms, i*ms+lat, history.SoldOut))
	}
	tests := []struct {
		name string
		ops  []history.Op
		want Summary // Spectrum is not compared
	}{
		{
			name: "ten latencies from 1ms to 10ms",
			ops:  tenOps,
			want: Summary{Count: 10, Min: 1000, P50: 5000, P90: 9000, P99: 10000, P999: 10000, Max: 10000, Mean: 5500},
		},
		{
			name: "one slow outlier in a thousand",
			ops:  tailOps,
			want: Summary{Count: 1000, Min: 100, P50: 100, P90: 100, P99: 100, P999: 100, Max: 2_000_000, Mean: 2099.9},
		},
		{
			// Queued for 900 ms before a worker picked it up: the latency
			// is the second the buyer waited, not the 100 ms of service.
			name: "latency counts from arrival, not start",
			ops:  []history.Op{answered(1*ms, 901*ms, 1001*ms, history.Sold)},
			want: Summary{Count: 1, Min: 1_000_000, P50: 1_000_000, P90: 1_000_000, P99: 1_000_000, P999: 1_000_000, Max: 1_000_000, Mean: 1_000_000},
		},
		{
			name: "unanswered attempts are left out, every answer counts",
			ops: []history.Op{
				answered(1*ms, 1*ms, 0, history.Pending),
				answered(1*ms, 1*ms, 1*ms+300*us, history.GaveUp),
				answered(1*ms, 1*ms, 1*ms+500*us, history.Failed),
			},
			want: Summary{Count: 2, Min: 300, P50: 300, P90: 500, P99: 500, P999: 500, Max: 500, Mean: 400},
		},
		{
			name: "sub-microsecond latency counts as 1µs",
			ops:  []history.Op{answered(1*ms, 1*ms, 1*ms+300, history.Sold)},
			want: Summary{Count: 1, Min: 1, P50: 1, P90: 1, P99: 1, P999: 1, Max: 1, Mean: 1},
		},
		{
			name: "no answers",
			ops:  []history.Op{answered(1*ms, 0, 0, history.Pending)},
			want: Summary{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := measure(&history.History{Ops: tt.ops}).latency.Purchase
			checkSummary(t, got, tt.want)
		})
	}
}

// checkSummary compares got with want within HdrHistogram's precision
// (the mean within 0.1%).
func checkSummary(t *testing.T, got, want Summary) {
	t.Helper()
	if got.Count != want.Count {
		t.Errorf("count = %d, want %d", got.Count, want.Count)
	}
	for _, c := range []struct {
		name      string
		got, want int64
	}{
		{"min", got.Min, want.Min},
		{"p50", got.P50, want.P50},
		{"p90", got.P90, want.P90},
		{"p99", got.P99, want.P99},
		{"p99.9", got.P999, want.P999},
		{"max", got.Max, want.Max},
	} {
		// Min is HdrHistogram's lowest equivalent value, the others its
		// highest: both within 0.1%.
		if !equivalent(c.got, c.want) && !equivalent(c.want, c.got) {
			t.Errorf("%s = %dµs, want %dµs", c.name, c.got, c.want)
		}
	}
	if d := got.Mean - want.Mean; d < -want.Mean/1000 || d > want.Mean/1000 {
		t.Errorf("mean = %vµs, want %vµs", got.Mean, want.Mean)
	}
	if got.Count == 0 {
		if len(got.Spectrum) != 0 || got.Spectrum == nil {
			t.Errorf("spectrum = %#v, want empty and not nil", got.Spectrum)
		}
		return
	}
	sp := got.Spectrum
	if len(sp) < 2 || sp[0].Percentile != 0 || sp[len(sp)-1].Percentile != 100 || sp[len(sp)-1].ValueUS != got.Max {
		t.Errorf("spectrum = %v, want points from 0 to 100 ending at max %d", sp, got.Max)
	}
	if !slices.IsSortedFunc(sp, func(a, b Point) int { return int(a.ValueUS - b.ValueUS) }) {
		t.Errorf("spectrum values are not ordered: %v", sp)
	}
}

func TestAcquireLatency(t *testing.T) {
	ops := []history.Op{
		locked(1*ms, 1*ms+200*us, 2*ms, history.Sold),
		locked(1*ms, 1*ms+400*us, 2*ms, history.Sold),
		locked(1*ms, 0, 3*ms, history.GaveUp), // never obtained
	}
	tests := []struct {
		name     string
		lockless bool
		want     *Summary
	}{
		{"lock held", false, &Summary{Count: 2, Min: 200, P50: 200, P90: 400, P99: 400, P999: 400, Max: 400, Mean: 300}},
		{"lockless", true, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := &history.History{Header: history.Header{Lockless: tt.lockless}, Ops: ops}
			got := measure(h).latency.Acquire
			if (got == nil) != (tt.want == nil) {
				t.Fatalf("acquire = %v, want %v", got, tt.want)
			}
			if got != nil {
				checkSummary(t, *got, *tt.want)
			}
		})
	}
}

func TestRates(t *testing.T) {
	tests := []struct {
		name     string
		commands int64
		ops      []history.Op
		want     metrics // sold, attempts and the three ratios
	}{
		{
			// The first arrival is the earliest, whatever the order, even
			// of an attempt never picked up; the span ends at the last sale,
			// not at the last answer.
			name:     "four sold over two seconds",
			commands: 40,
			ops: []history.Op{
				answered(2*s, 2*s, 2*s+500*ms, history.Sold),
				answered(1*s, 0, 0, history.Pending),
				answered(1500*ms, 1500*ms, 1600*ms, history.Sold),
				answered(1600*ms, 1600*ms, 3*s, history.Sold),
				answered(1700*ms, 1700*ms, 2*s, history.Sold),
				answered(1800*ms, 1800*ms, 9*s, history.SoldOut),
			},
			want: metrics{sold: 4, attempts: 5, salesPerSec: 2, cmdsPerSale: 10, cmdsPerAttempt: 8},
		},
		{
			name:     "nothing sold",
			commands: 9,
			ops: []history.Op{
				answered(1*s, 1*s, 2*s, history.SoldOut),
				answered(1*s, 1*s, 2*s, history.GaveUp),
			},
			want: metrics{sold: 0, attempts: 2, salesPerSec: 0, cmdsPerSale: 0, cmdsPerAttempt: 4.5},
		},
		{
			name:     "no attempt picked up",
			commands: 0,
			ops:      []history.Op{answered(1*s, 0, 0, history.Pending)},
			want:     metrics{},
		},
		{
			name:     "ratios are rounded to 0.01",
			commands: 10,
			ops: []history.Op{
				answered(1*s, 1*s, 4*s, history.Sold),
				answered(1*s, 1*s, 2*s, history.Sold),
				answered(1*s, 1*s, 2*s, history.Sold),
			},
			want: metrics{sold: 3, attempts: 3, salesPerSec: 1, cmdsPerSale: 3.33, cmdsPerAttempt: 3.33},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := &history.History{Header: history.Header{Commands: tt.commands}, Ops: tt.ops}
			got := measure(h)
			if got.sold != tt.want.sold || got.attempts != tt.want.attempts {
				t.Errorf("sold, attempts = %d, %d, want %d, %d", got.sold, got.attempts, tt.want.sold, tt.want.attempts)
			}
			if got.salesPerSec != tt.want.salesPerSec {
				t.Errorf("sales per second = %v, want %v", got.salesPerSec, tt.want.salesPerSec)
			}
			if got.cmdsPerSale != tt.want.cmdsPerSale || got.cmdsPerAttempt != tt.want.cmdsPerAttempt {
				t.Errorf("commands per sale, per attempt = %v, %v, want %v, %v",
					got.cmdsPerSale, got.cmdsPerAttempt, tt.want.cmdsPerSale, tt.want.cmdsPerAttempt)
			}
		})
	}
}

func TestSalesSeries(t *testing.T) {
	sold := func(end int64) history.Op { return answered(1, 1, end, history.Sold) }
	tests := []struct {
		name     string
		duration int64
		ops      []history.Op
		want     Series
	}{
		{
			// The run's last instant falls in the last bucket.
			name:     "one second in 100ms buckets",
			duration: 1 * s,
			ops: []history.Op{
				sold(50 * ms), sold(150 * ms), sold(160 * ms), sold(999 * ms), sold(1 * s),
				answered(1, 1, 120*ms, history.SoldOut),
			},
			want: Series{BucketMS: 100, Sold: []int64{1, 2, 0, 0, 0, 0, 0, 0, 0, 2}},
		},
		{
			name:     "an answer after the header's duration extends the series",
			duration: 200 * ms,
			ops:      []history.Op{sold(250 * ms)},
			want:     Series{BucketMS: 100, Sold: []int64{0, 0, 1}},
		},
		{
			name:     "nothing sold still spans the run",
			duration: 300 * ms,
			want:     Series{BucketMS: 100, Sold: []int64{0, 0, 0}},
		},
		{
			name: "empty run",
			want: Series{BucketMS: 100, Sold: []int64{}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := &history.History{Header: history.Header{Duration: tt.duration}, Ops: tt.ops}
			got := salesSeries(h)
			if got.BucketMS != tt.want.BucketMS || !slices.Equal(got.Sold, tt.want.Sold) || got.Sold == nil {
				t.Errorf("series = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestBucketWidth(t *testing.T) {
	tests := []struct {
		span, want int64
	}{
		{0, 100 * ms},
		{1 * s, 100 * ms},
		{20 * s, 100 * ms},
		{20*s + 1, 200 * ms},
		{25 * s, 200 * ms},
		{60 * s, 500 * ms},
		{101 * s, 1 * s},
		{3600 * s, 20 * s},
		// A span near MaxInt64 (a history's header or an end claiming it)
		// once looped forever: the width's multiple overflowed.
		{math.MaxInt64, 50_000_000 * s},
	}
	for _, tt := range tests {
		got := bucketWidth(tt.span)
		if got != tt.want {
			t.Errorf("bucketWidth(%v) = %v, want %v", tt.span, got, tt.want)
		}
		if n := (max(tt.span, 1)-1)/got + 1; n > maxSeriesPoints {
			t.Errorf("bucketWidth(%v) makes %d buckets", tt.span, n)
		}
	}
}

// TestRecoveries: how long after each fault the p99 came back within
// twice its level before the first fault.
func TestRecoveries(t *testing.T) {
	ms := int64(time.Millisecond)
	fault := func(name string, from, to int64) history.Fault {
		return history.Fault{Name: name, Start: from * ms, End: to * ms}
	}
	// 100 ms buckets: 10 ms before the fault, 400 ms during, then back.
	run := func(p99 []float64, faults ...history.Fault) *Run {
		return &Run{Sales: Series{BucketMS: 100, P99MS: p99}, Faults: faults}
	}
	tests := []struct {
		name string
		r    *Run
		want []Recovery
	}{
		{"back one bucket after the end", run([]float64{10, 10, 400, 400, 30, 15, 10}, fault("pause-holder", 200, 400)),
			[]Recovery{{Fault: "pause-holder", After: 100 * time.Millisecond}}},
		{"back at once", run([]float64{10, 10, 400, 12, 10}, fault("server-pause", 200, 300)),
			[]Recovery{{Fault: "server-pause", After: 0}}},
		{"never back", run([]float64{10, 10, 400, 400, 400}, fault("crash-holder", 200, 300)),
			[]Recovery{{Fault: "crash-holder", Never: true}}},
		{"no baseline: a fault at the start", run([]float64{400, 10}, fault("latency", 0, 50)), nil},
		{"a fault that never ended", run([]float64{10, 10, 400}, history.Fault{Name: "latency", Start: 200 * ms}), nil},
	}
	for _, tt := range tests {
		if got := Recoveries(tt.r); !slices.Equal(got, tt.want) {
			t.Errorf("%s: %+v, want %+v", tt.name, got, tt.want)
		}
	}
}
