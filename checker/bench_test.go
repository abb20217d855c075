package checker

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockbench/lockbench/history"
)

// BenchmarkCheck100k checks generated 100,000-attempt sales of 25,000
// units: lock-protected and sequential; with a few hundred attempts
// overlapping in groups of four; with a few unanswered writes near the end
// of the sale, and in its middle; and lock-free atomic with twenty
// unanswered scripts, spread through the run with one attempt at a time,
// and through the sale (while stock lasts) with hundreds in flight at once.
func BenchmarkCheck100k(b *testing.B) {
	const ops, stock = 100_000, 25_000
	specs := []struct {
		name string
		h    *history.History
	}{
		{"sequential", genSale(saleSpec{ops: ops, stock: stock, seed: 1})},
		{"overlapping", genSale(saleSpec{ops: ops, stock: stock, groups: 100, seed: 2})},
		{"unanswered-end", genSale(saleSpec{ops: ops, stock: stock, indeterminate: many(5, 80_000, 300), seed: 3})},
		{"unanswered-middle", genSale(saleSpec{ops: ops, stock: stock, indeterminate: many(5, 10_000, 300), seed: 4})},
		{"atomic-blind", genSale(saleSpec{ops: ops, stock: stock, atomic: true, blind: many(20, 2_500, 5_000), seed: 5})},
		{"atomic-blind-crowded", genCrowd(crowdSpec{ops: ops, stock: stock, width: 100, burst: 1000, blind: many(20, 1_250, 1_250), seed: 6})},
	}
	for _, s := range specs {
		b.Run(s.name, func(b *testing.B) {
			for b.Loop() {
				r := Check(s.h, Options{})
				if r.Data.Linearizability.Status != OK {
					b.Fatalf("got %s", r.Data.Linearizability.Status)
				}
			}
		})
	}
}

// BenchmarkRecorded checks the histories named in
// $LOCKBENCH_BENCH_HISTORIES (a space-separated list of files that
// `lockbench --out` wrote; make bench records them): the check alone,
// the history already read.
func BenchmarkRecorded(b *testing.B) {
	files := strings.Fields(os.Getenv("LOCKBENCH_BENCH_HISTORIES"))
	if len(files) == 0 {
		b.Skip("LOCKBENCH_BENCH_HISTORIES names no recorded history (make bench records them)")
	}
	for _, f := range files {
		h, err := history.ReadFile(f)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(filepath.Base(f), func(b *testing.B) {
			b.ReportMetric(float64(len(h.Ops)), "ops")
			for b.Loop() {
				r := Check(h, Options{Timeout: time.Minute})
				if r.Data.Linearizability.Status == Unknown {
					b.Fatalf("%s: linearizability unknown", f)
				}
			}
		})
	}
}
