package checker

import (
	"cmp"
	"slices"
	"time"

	"github.com/lockbench/lockbench/history"
)

// FairnessMargin is how much earlier a waiter must have asked for the lock
// to count as ahead of a later one: two first tries closer than this may
// reach the server in either order (the client's scheduler and pool come
// between the ask and the server), and no lock can be blamed for that.
// Measured on the embedded server (1,000 buyers, 3 seeds): at 1 ms the
// fair lock showed 24 such swaps, at 5 ms 0-1, at 10 ms none, while lua
// showed about 20,000 overtakes and watchdog 2-138.
const FairnessMargin = 10 * time.Millisecond

// Overtake is the first of the overtakes: a buyer that asked for the lock
// later, by more than FairnessMargin, and got it before one that was still
// waiting.
type Overtake struct {
	// Ahead asked first and waited; its From and To are when it asked
	// for the lock and when it got it.
	Ahead OpRef `json:"ahead"`
	// Behind asked later and got the lock first, From and To as Ahead's.
	Behind OpRef `json:"behind"`
}

// checkFairness counts the overtakes in h: pairs of acquisitions where a
// asked for the lock more than FairnessMargin before b, and b got it
// first. a was then waiting when b asked, and b went ahead of it. A FIFO
// lock shows none; others show how far they are from arrival order. O(n
// log n): the acquisitions in asking order, and a Fenwick tree over the
// order in which they got the lock.
//
// With a clock error ε (h widened, see widen) both orders must hold
// whatever the clocks did: a asked more than FairnessMargin + 2ε before b
// (fairnessMargin), and a got the lock more than 2ε after b. Widening
// moves both calls alike and both grants alike, so the 2ε is added here.
func checkFairness(h *history.History, extra int64) (int64, *Overtake) {
	if h.Header.Lockless {
		return 0, nil
	}
	var acq []int
	for i := range h.Ops {
		if h.Ops[i].AcquireCall > 0 && h.Ops[i].Acquired > 0 {
			acq = append(acq, i)
		}
	}
	byCall := slices.Clone(acq)
	slices.SortFunc(byCall, func(a, b int) int {
		return cmp.Or(cmp.Compare(h.Ops[a].AcquireCall, h.Ops[b].AcquireCall), cmp.Compare(a, b))
	})
	// Each acquisition's rank in the order the lock was granted.
	byGrant := slices.Clone(acq)
	slices.SortFunc(byGrant, func(a, b int) int {
		return cmp.Or(cmp.Compare(h.Ops[a].Acquired, h.Ops[b].Acquired), cmp.Compare(a, b))
	})
	rank := make(map[int]int, len(byGrant))
	for r, i := range byGrant {
		rank[i] = r + 1
	}
	// notAfter(b) is how many acquisitions, counted in granting order,
	// may have got the lock no later than b: those not surely granted
	// after it. Without a clock error that is b's own rank; with one, the
	// grants up to 2ε after b's count too.
	grace := slack(h)
	notAfter := func(b int) int {
		if grace == 0 {
			return rank[b]
		}
		at := h.Ops[b].Acquired + grace
		n, _ := slices.BinarySearchFunc(byGrant, at, func(i int, at int64) int {
			if h.Ops[i].Acquired <= at {
				return -1
			}
			return 1
		})
		return n
	}
	tree := make([]int64, len(acq)+1)
	add := func(r int) {
		for ; r < len(tree); r += r & -r {
			tree[r]++
		}
	}
	upTo := func(r int) (n int64) {
		for ; r > 0; r -= r & -r {
			n += tree[r]
		}
		return n
	}
	margin := int64(fairnessMargin(h)) + extra
	var n, inserted int64
	var first *Overtake
	j := 0
	for _, b := range byCall {
		// Every acquisition that asked more than the margin before b.
		for j < len(byCall) && h.Ops[byCall[j]].AcquireCall < h.Ops[b].AcquireCall-margin {
			add(rank[byCall[j]])
			inserted++
			j++
		}
		th := notAfter(b)
		later := inserted - upTo(th) // asked earlier, granted after b
		if later > 0 && first == nil {
			for _, a := range byCall[:j] {
				if rank[a] > th {
					first = &Overtake{Ahead: *ref(h, a, h.Ops[a].AcquireCall, h.Ops[a].Acquired), Behind: *ref(h, b, h.Ops[b].AcquireCall, h.Ops[b].Acquired)}
					break
				}
			}
		}
		n += later
	}
	return n, first
}

// waited reports whether some acquisition in h surely waited for the lock
// longer than its fairness margin: whether there was a queue whose order
// to judge. (In a widened history a wait is 2ε longer than recorded.)
func waited(h *history.History) bool {
	for i := range h.Ops {
		if op := &h.Ops[i]; op.Acquired > 0 && op.Acquired-op.AcquireCall-slack(h) > int64(fairnessMargin(h)) {
			return true
		}
	}
	return false
}
