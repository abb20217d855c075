package reports

import (
	"cmp"
	"maps"
	"math"
	"slices"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/lockbench/lockbench/history"
)

// The histograms' geometry: microseconds from 1 µs to one hour, three
// significant figures (values below 2048 µs are exact, larger ones within
// 0.1%).
const (
	lowestUS  = 1
	highestUS = 3600 * 1000 * 1000
	sigFigs   = 3
	// spectrumTicks is HdrHistogram's ticks per half distance for the
	// spectrum: 2 gives a point at 0, 25, 50, 62.5, 75, … and about two per
	// halving of the tail, a few dozen points for a real run.
	spectrumTicks = 2
)

// The sales series' buckets: 100 ms wide unless that makes more than
// maxSeriesPoints of them, then the next width in a 1-2-5 sequence.
const (
	baseBucket      = 100_000_000 // ns
	maxSeriesPoints = 200
)

// Summary describes one latency distribution. All durations are whole
// microseconds as HdrHistogram reports them: the highest value equivalent
// to the recorded ones at three significant figures, exact below 2048 µs.
type Summary struct {
	// Count is how many latencies were recorded.
	Count int64 `json:"count"`
	// Min is the smallest latency, in microseconds (its lowest equivalent
	// value).
	Min int64 `json:"min"`
	// P50 is the median latency, in microseconds.
	P50 int64 `json:"p50"`
	// P90 is the 90th percentile latency, in microseconds.
	P90 int64 `json:"p90"`
	// P99 is the 99th percentile latency, in microseconds.
	P99 int64 `json:"p99"`
	// P999 is the 99.9th percentile latency, in microseconds.
	P999 int64 `json:"p99_9"`
	// Max is the largest latency, in microseconds.
	Max int64 `json:"max"`
	// Mean is the mean latency in microseconds, rounded to 0.01 µs; a
	// float because a mean of whole microseconds rarely is one.
	Mean float64 `json:"mean"`
	// Spectrum is HdrHistogram's percentile distribution, a few dozen
	// points ordered by percentile and ending at 100, for plotting against
	// a log axis of 1/(1-percentile/100). It is empty when Count is zero.
	Spectrum []Point `json:"spectrum"`
}

// Point is one point of a latency spectrum.
type Point struct {
	// Percentile is in [0, 100].
	Percentile float64 `json:"percentile"`
	// ValueUS is the latency at that percentile, in microseconds.
	ValueUS int64 `json:"value_us"`
}

// Latency holds a run's latency distributions.
type Latency struct {
	// Purchase runs from each attempt's scheduled arrival to the answer its
	// buyer got, over every attempt that got one, whatever the answer.
	// Counting from the arrival rather than from when a worker picked the
	// attempt up keeps queueing in the figure (no coordinated omission).
	Purchase Summary `json:"purchase"`
	// Acquire runs from the call that asked for the lock to the moment it
	// was granted, over the attempts that obtained it. It is nil (absent
	// from JSON) for implementations without a lock.
	Acquire *Summary `json:"acquire,omitempty"`
}

// Series is the units sold over the run, bucketed by the instant each
// buyer was told the unit was theirs.
type Series struct {
	// BucketMS is each bucket's width in milliseconds: 100, or the next
	// width of a 1-2-5 sequence (200, 500, 1000, …) that keeps the series
	// at 200 buckets or fewer.
	BucketMS int64 `json:"bucket_ms"`
	// Sold holds the units sold in each bucket; bucket i covers
	// [i×BucketMS, (i+1)×BucketMS) ms since the run's start, and the
	// buckets span the whole run.
	Sold []int64 `json:"sold"`
	// P50MS and P99MS are the median and 99th percentile latency (from
	// scheduled arrival to answer, ms) of the attempts answered in each
	// bucket; 0 for a bucket with none. An attempt counts where it was
	// answered, as k6's and Jepsen's latency plots put it, so that what a
	// fault did shows while it lasted and after.
	P50MS []float64 `json:"p50_ms,omitempty"`
	P99MS []float64 `json:"p99_ms,omitempty"`
	// Scatter is every answered attempt, binned: each entry is [the
	// instant its cell starts, ms since the run's start; the cell's
	// latency, ms; how many attempts fell in it]. A cell is one of
	// scatterColumns spans of the run by the instant of the answer, and
	// one of scatterRowsPerDecade rows a decade of latency (the row's
	// geometric middle is given), so the scatter shows every attempt's
	// place at a bounded size whatever the run's length.
	Scatter [][3]float64 `json:"scatter,omitempty"`
}

// The binned scatter's grid (Series.Scatter).
const (
	scatterColumns       = 400
	scatterRowsPerDecade = 20
)

// metrics is what the history alone says of a run's performance.
type metrics struct {
	latency        Latency
	sold           int64
	attempts       int64
	salesPerSec    float64
	cmdsPerSale    float64
	cmdsPerAttempt float64
	sales          Series
}

// measure computes the performance figures of h.
func measure(h *history.History) metrics {
	purchase := newHistogram()
	var acquire *hdrhistogram.Histogram
	if !h.Header.Lockless {
		acquire = newHistogram()
	}
	var (
		m          metrics
		firstArr   int64 = math.MaxInt64
		lastSoldAt int64
	)
	for i := range h.Ops {
		op := &h.Ops[i]
		if op.Arrival > 0 && op.Arrival < firstArr {
			firstArr = op.Arrival
		}
		if op.Start > 0 {
			m.attempts++
		}
		if op.End > 0 {
			record(purchase, op.End-op.Arrival)
		}
		if acquire != nil && op.Acquired > 0 {
			record(acquire, op.Acquired-op.AcquireCall)
		}
		if op.Outcome == history.Sold {
			m.sold++
			lastSoldAt = max(lastSoldAt, op.End)
		}
	}
	m.latency.Purchase = summarize(purchase)
	if acquire != nil {
		s := summarize(acquire)
		m.latency.Acquire = &s
	}
	if m.sold > 0 && lastSoldAt > firstArr {
		m.salesPerSec = round2(float64(m.sold) / (float64(lastSoldAt-firstArr) / 1e9))
	}
	m.cmdsPerSale = ratio(h.Header.Commands, m.sold)
	m.cmdsPerAttempt = ratio(h.Header.Commands, m.attempts)
	m.sales = salesSeries(h)
	return m
}

// newHistogram returns an empty latency histogram.
func newHistogram() *hdrhistogram.Histogram {
	return hdrhistogram.New(lowestUS, highestUS, sigFigs)
}

// record adds a latency given in nanoseconds, rounded to the nearest
// microsecond and clamped to the histogram's range so that no value is
// lost: a sub-microsecond latency counts as 1 µs, one beyond an hour as an
// hour.
func record(h *hdrhistogram.Histogram, ns int64) {
	us := min(max((ns+500)/1000, lowestUS), highestUS)
	// The value is within range, so RecordValue cannot fail.
	_ = h.RecordValue(us)
}

// summarize reads the figures of Summary from h.
func summarize(h *hdrhistogram.Histogram) Summary {
	s := Summary{Spectrum: []Point{}}
	if h.TotalCount() == 0 {
		return s
	}
	s.Count = h.TotalCount()
	s.Min = h.Min()
	s.P50 = h.ValueAtPercentile(50)
	s.P90 = h.ValueAtPercentile(90)
	s.P99 = h.ValueAtPercentile(99)
	s.P999 = h.ValueAtPercentile(99.9)
	s.Max = h.Max()
	s.Mean = round2(h.Mean())
	for _, b := range h.CumulativeDistributionWithTicks(spectrumTicks) {
		s.Spectrum = append(s.Spectrum, Point{Percentile: b.Quantile, ValueUS: b.ValueAt})
	}
	return s
}

// salesSeries buckets the sold units of h by the instant each buyer got
// its answer. The buckets cover the run from its start to its last instant
// (the header's duration, or the last answer if that is later).
func salesSeries(h *history.History) Series {
	span := h.Header.Duration
	for i := range h.Ops {
		span = max(span, h.Ops[i].End)
	}
	width := bucketWidth(span)
	s := Series{BucketMS: width / 1_000_000, Sold: []int64{}}
	if span <= 0 {
		return s
	}
	n := (span + width - 1) / width
	s.Sold = make([]int64, n)
	lat := make([][]int64, n)
	cells := map[[2]int64]int64{}
	column := max((span+scatterColumns-1)/scatterColumns, 1)
	for i := range h.Ops {
		op := &h.Ops[i]
		if op.End > 0 && op.Outcome != history.Pending && op.Outcome != history.Crashed {
			d := max(op.End-op.Arrival, 1)
			lat[min(op.End/width, n-1)] = append(lat[min(op.End/width, n-1)], d)
			row := int64(math.Floor(math.Log10(float64(d)) * scatterRowsPerDecade))
			cells[[2]int64{min(op.End, span-1) / column, row}]++
		}
		if op.Outcome != history.Sold || op.End <= 0 {
			continue
		}
		// The run's last instant belongs to the last bucket.
		s.Sold[min(op.End/width, n-1)]++
	}
	s.P50MS, s.P99MS = make([]float64, n), make([]float64, n)
	for b, l := range lat {
		if len(l) == 0 {
			continue
		}
		slices.Sort(l)
		s.P50MS[b] = round2(float64(l[(len(l)-1)/2]) / 1e6)
		s.P99MS[b] = round2(float64(l[(len(l)*99-1)/100]) / 1e6)
	}
	keys := slices.Collect(maps.Keys(cells))
	slices.SortFunc(keys, func(a, b [2]int64) int { return cmp.Or(cmp.Compare(a[0], b[0]), cmp.Compare(a[1], b[1])) })
	for _, k := range keys {
		ms := math.Pow(10, (float64(k[1])+0.5)/scatterRowsPerDecade) / 1e6
		s.Scatter = append(s.Scatter, [3]float64{float64(k[0]*column) / 1e6, roundSig(ms), float64(cells[k])})
	}
	return s
}

// Recovery says, for each fault that ended, how long after its end the
// p99 of the attempts answered came back within twice what it was before
// the first fault (Series.P99MS): a fault's cost beyond its own window.
type Recovery struct {
	Fault string
	// After is the time from the fault's end to the first bucket back to
	// normal; Never is true when none came before the run ended, though
	// attempts were answered after the fault; Unseen is true when none
	// was answered after it (the sale was over): nothing to measure.
	After  time.Duration
	Never  bool
	Unseen bool
}

// Recoveries measures the recovery after each fault of r that ended; none
// without a baseline (a fault at the start, or no latency series).
func Recoveries(r *Run) []Recovery {
	s := r.Sales
	if len(s.P99MS) == 0 || len(r.Faults) == 0 || s.BucketMS <= 0 {
		return nil
	}
	width := s.BucketMS * int64(time.Millisecond)
	first := r.Faults[0].Start
	for _, f := range r.Faults {
		first = min(first, f.Start)
	}
	var before []float64
	for b, v := range s.P99MS {
		if int64(b+1)*width <= first && v > 0 {
			before = append(before, v)
		}
	}
	if len(before) == 0 {
		return nil
	}
	slices.Sort(before)
	normal := 2 * before[len(before)/2]
	var out []Recovery
	for _, f := range r.Faults {
		if f.End <= 0 {
			continue
		}
		rec := Recovery{Fault: f.Name, Unseen: true}
		for b := int(f.End / width); b < len(s.P99MS); b++ {
			v := s.P99MS[b]
			if v <= 0 {
				continue
			}
			rec.Unseen, rec.Never = false, true
			if v <= normal {
				rec.After, rec.Never = max(0, time.Duration(int64(b)*width-f.End)), false
				break
			}
		}
		out = append(out, rec)
	}
	return out
}

// bucketWidth returns the narrowest width of the sequence 100 ms, 200 ms,
// 500 ms, 1 s, 2 s, 5 s, … that cuts span (ns) into at most maxSeriesPoints
// buckets.
//
// It compares span/maxSeriesPoints with each width rather than the
// width's multiple with span, so that no span, however long, overflows:
// a width of 10^18 ns holds any int64 span in maxSeriesPoints buckets.
func bucketWidth(span int64) int64 {
	need := (max(span, 1)-1)/maxSeriesPoints + 1 // ceil(span / maxSeriesPoints)
	for decade := int64(baseBucket); ; decade *= 10 {
		for _, f := range [...]int64{1, 2, 5} {
			if w := decade * f; need <= w {
				return w
			}
		}
	}
}

// ratio returns n/d rounded to 0.01, or zero when d is zero.
func ratio(n, d int64) float64 {
	if d == 0 {
		return 0
	}
	return round2(float64(n) / float64(d))
}

// round2 rounds x to two decimals, enough for every ratio reported and
// short enough to read in result.json.
func round2(x float64) float64 { return math.Round(x*100) / 100 }

// roundSig rounds x (above zero) to three significant figures.
func roundSig(x float64) float64 {
	p := math.Pow(10, 2-math.Floor(math.Log10(x)))
	return math.Round(x*p) / p
}
