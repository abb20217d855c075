package checker

import (
	"slices"
	"strings"
	"testing"

	"github.com/lockbench/lockbench/history"
)

// TestUnordered: every buyer told "sold" must have an order in the final
// state, checked buyer by buyer where the state lists who has one
// (issue 23, point 6): orders that unknown outcomes landed for other
// buyers do not make up for a lost one, as they do in the count.
func TestUnordered(t *testing.T) {
	sold := func(c int32) history.Op {
		return history.Op{Client: c, Stock: history.NoStock, Write: history.Applied, Outcome: history.Sold}
	}
	unknown := func(c int32) history.Op {
		return history.Op{Client: c, Stock: history.NoStock, Write: history.Indeterminate, Outcome: history.Unknown}
	}
	ops := []history.Op{sold(0), sold(1), sold(2), sold(3), unknown(4), unknown(5)}
	tests := []struct {
		name    string
		ordered []int32
		want    []int32 // the buyers named
	}{
		{"every sold buyer has an order", []int32{0, 1, 2, 3, 5}, nil},
		{"two lost, made up for by two unknowns that landed", []int32{0, 2, 4, 5}, []int32{1, 3}},
		{"the state does not list the users", nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			orders := int64(len(tt.ordered))
			if tt.ordered == nil {
				orders = 4
			}
			h := &history.History{
				Header: history.Header{Lockless: true, Unread: true, Stock: 10, Clients: 6, Attempts: 1},
				Final:  history.Final{Stock: 10 - orders, Orders: orders, Ordered: tt.ordered},
				Ops:    ops,
			}
			rep := Check(h, Options{})
			if got := rep.Data.UnorderedBuyers; !slices.Equal(got, tt.want) || rep.Data.Unordered != int64(len(tt.want)) {
				t.Fatalf("unordered %d %v, want %v", rep.Data.Unordered, got, tt.want)
			}
			if rep.Data.LostOrders != 0 {
				t.Errorf("lost orders %d: the count sees none, by design of this case", rep.Data.LostOrders)
			}
			if rep.Pass != (tt.want == nil) {
				t.Errorf("pass %v with %v unordered: %v", rep.Pass, tt.want, rep.Reasons)
			}
			if tt.want != nil && !slices.Contains(rep.Reasons, `2 buyers told "sold" have no order in the store (buyers 1, 3)`) {
				t.Errorf("reasons %q do not name the buyers", strings.Join(rep.Reasons, "; "))
			}
		})
	}
}
