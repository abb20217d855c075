package workload

import (
	"math/rand/v2"
	"slices"
)

// A sale of several items (Workload.Items) keeps a counter, orders and a
// lock key per item (the lock keys are the run's, Keys.Locks; the rest
// the inventory's). Each buyer's items are drawn from the seed: one item,
// or with Cart a cart of 1 to Cart distinct items, sorted, bought all or
// none; with Reads a share of the buyers only read one item's stock (the
// product page). A cart is one history Op per item, sharing the client
// and the attempt.

// cartOf draws client c's items, sorted, and whether it only reads.
func (r *run) cartOf(c int32) (items []int, reader bool) {
	rng := rand.New(rand.NewPCG(r.cfg.Seed, uint64(c)))
	reader = r.cfg.Reads > 0 && rng.IntN(100) < r.cfg.Reads
	k := len(r.keys.locks)
	if k == 1 {
		return []int{0}, reader
	}
	size := 1
	if !reader && r.cart > 1 {
		size = 1 + rng.IntN(r.cart)
	}
	items = rng.Perm(k)[:size]
	slices.Sort(items)
	return items, reader
}
