package checker

import "testing"

// BenchmarkCheck100k checks generated 100,000-attempt sales of 25,000
// units: lock-protected and sequential; with a few hundred attempts
// overlapping in groups of four; with a few unanswered writes near the end
// of the sale, and in its middle.
func BenchmarkCheck100k(b *testing.B) {
	const ops, stock = 100_000, 25_000
	specs := []struct {
		name string
		spec saleSpec
	}{
		{"sequential", saleSpec{ops: ops, stock: stock, seed: 1}},
		{"overlapping", saleSpec{ops: ops, stock: stock, groups: 100, seed: 2}},
		{"unanswered-end", saleSpec{ops: ops, stock: stock, indeterminate: many(5, 80_000, 300), seed: 3}},
		{"unanswered-middle", saleSpec{ops: ops, stock: stock, indeterminate: many(5, 10_000, 300), seed: 4}},
	}
	for _, s := range specs {
		h := genSale(s.spec)
		b.Run(s.name, func(b *testing.B) {
			for b.Loop() {
				r := Check(h, Options{})
				if r.Data.Linearizability.Status != OK {
					b.Fatalf("got %s", r.Data.Linearizability.Status)
				}
			}
		})
	}
}
