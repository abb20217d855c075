package reports

import (
	"fmt"
	"math"

	"github.com/lockbench/lockbench/history"
)

// maxResultSize bounds a result.json read: far above a matrix's with
// every cell (a few MB), far below what would exhaust a machine.
const maxResultSize = 256 << 20

// maxSeriesBuckets bounds the buckets of a run's sales series read from
// a file: the writer makes at most maxSeriesPoints.
const maxSeriesBuckets = 10 * maxSeriesPoints

// checkRuns checks what the report draws of every run of r, its own and
// its matrix cells', before anything is drawn from it: a series whose
// parts disagree in length, or whose buckets span more than any run, is
// a result no build of lockbench wrote, refused as ErrFormat naming the
// run.
func (r *Result) checkRuns() error {
	for i := range r.Runs {
		if err := checkRun(&r.Runs[i]); err != nil {
			return fmt.Errorf("%w: runs[%d] (%s): %v", ErrFormat, i, r.Runs[i].Impl, err)
		}
	}
	for i := range r.Matrix {
		if err := checkRun(&r.Matrix[i].Run); err != nil {
			return fmt.Errorf("%w: matrix[%d].run (%s): %v", ErrFormat, i, r.Matrix[i].Run.Impl, err)
		}
	}
	return nil
}

// maxMS is history.MaxDuration in milliseconds.
const maxMS = float64(history.MaxDuration / 1e6)

// checkRun checks one run's figures.
func checkRun(r *Run) error {
	s := &r.Sales
	switch {
	case !(r.DurationMS >= 0 && r.DurationMS <= maxMS):
		return fmt.Errorf("duration_ms %v is not a run's length", r.DurationMS)
	case s.BucketMS < 0 || float64(s.BucketMS)*float64(len(s.Sold)) > maxMS:
		return fmt.Errorf("sales: %d buckets of %d ms are not a run's length", len(s.Sold), s.BucketMS)
	case len(s.Sold) > maxSeriesBuckets:
		return fmt.Errorf("sales: %d buckets, at most %d", len(s.Sold), maxSeriesBuckets)
	case len(s.P50MS) != len(s.P99MS) || len(s.P99MS) != 0 && len(s.P99MS) != len(s.Sold):
		return fmt.Errorf("sales: p50_ms has %d buckets, p99_ms %d, sold %d: they are the same buckets", len(s.P50MS), len(s.P99MS), len(s.Sold))
	case len(s.Sold) > 0 && s.BucketMS == 0:
		return fmt.Errorf("sales: %d buckets of 0 ms", len(s.Sold))
	}
	for _, xs := range [][]float64{s.P50MS, s.P99MS} {
		for _, v := range xs {
			if !(v >= 0 && v <= maxMS) {
				return fmt.Errorf("sales: latency %v ms is not a latency", v)
			}
		}
	}
	for _, c := range s.Scatter {
		if !(c[0] >= 0 && c[0] <= maxMS && c[1] >= 0 && c[1] <= maxMS && c[2] >= 0 && c[2] <= math.MaxInt64) {
			return fmt.Errorf("sales: scatter cell %v is not an instant, a latency and a count", c)
		}
	}
	return nil
}
