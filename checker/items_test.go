package checker

import (
	"reflect"
	"testing"

	"github.com/lockbench/lockbench/history"
)

// on puts op on item.
func on(item int32, op history.Op) history.Op {
	op.Item = item
	return op
}

// view is a product-page read of item at t ms that saw stock, under a
// shared (read) lock when shared, else with no lock at all.
func view(client int32, item int32, t, stock int64, shared bool) history.Op {
	op := attempt(client, 0, t*ms, ms, stock, history.NoWrite, history.Viewed)
	op.Item, op.Shared = item, shared
	if !shared {
		op.AcquireCall, op.Acquired, op.ReleaseCall, op.Released = 0, 0, 0, 0
	}
	return op
}

// cartOf is one buyer's attempt at several items at t ms: one op per item,
// each reading its stock and answered out.
func cartOf(client int32, t int64, items []int32, stocks []int64, outs []history.Outcome) []history.Op {
	ops := make([]history.Op, len(items))
	for i, it := range items {
		w := history.NoWrite
		if outs[i] == history.Sold {
			w = history.Applied
		}
		ops[i] = on(it, attempt(client, 0, t*ms, ms, stocks[i], w, outs[i]))
	}
	return ops
}

// itemsHeader is the header of a fixture sale of n items with carts of up
// to cart items.
func itemsHeader(impl string, stock int64, clients, n, cart int) history.Header {
	h := header(impl, stock, clients)
	h.Items, h.Cart = n, cart
	return h
}

// finals adds per-item final states up, as the workload's audit does.
func finals(items ...history.Final) history.Final {
	f := history.Final{Items: items}
	for _, it := range items {
		f.Stock += it.Stock
		f.Orders += it.Orders
	}
	return f
}

// itemFixtures are the fixtures of sales of several items, carts and
// readers, in testdata/ beside the others.
var itemFixtures = map[string]func() *history.History{
	// multi on two items: two buyers of different items inside at once
	// (different locks), a cart of both, a reader, and a cart refused
	// because one of its items was gone.
	"ok-items.jsonl": func() *history.History {
		h := &history.History{
			Header: itemsHeader("multi", 3, 5, 2, 2),
			Final:  finals(history.Final{Stock: 0, Orders: 3}, history.Final{Stock: 1, Orders: 2}),
		}
		h.Header.Reads = 20
		h.Ops = append(h.Ops, on(0, sold(0, 10, 3)), on(1, sold(1, 10, 3)), on(0, sold(5, 20, 2)))
		h.Ops = append(h.Ops, cartOf(2, 30, []int32{0, 1}, []int64{1, 2}, []history.Outcome{history.Sold, history.Sold})...)
		h.Ops = append(h.Ops, view(3, 0, 50, 0, false))
		h.Ops = append(h.Ops, cartOf(4, 60, []int32{0, 1}, []int64{0, 1}, []history.Outcome{history.SoldOut, history.CartRefused})...)
		h.Header.Clients = 6
		return h
	},
	// Item 1's lock let two holders in: both read 2 and wrote 1. Item 0
	// is clean.
	"bad-item-oversell.jsonl": func() *history.History {
		a := on(1, stale(0, 2, 0, history.Applied, history.Sold))
		return &history.History{
			Header: itemsHeader("lua", 2, 3, 2, 1),
			Final:  finals(history.Final{Stock: 1, Orders: 1}, history.Final{Stock: 1, Orders: 2}),
			Ops:    []history.Op{a, on(1, sold(1, 20, 2)), on(0, sold(2, 20, 2))},
		}
	},
	// A product page read after a sale took item 0 from 2 to 1 and
	// returned, showing 2: a stock already gone.
	"bad-stale-read.jsonl": func() *history.History {
		return &history.History{
			Header: itemsHeader("watchdog", 2, 3, 2, 1),
			Final:  finals(history.Final{Stock: 1, Orders: 1}, history.Final{Stock: 2}),
			Ops:    []history.Op{on(0, sold(0, 10, 2)), view(1, 0, 30, 2, false), view(2, 1, 30, 2, false)},
		}
	},
	// rw: two readers inside at once (shared), then a writer alone.
	"ok-shared-readers.jsonl": func() *history.History {
		return &history.History{
			Header: header("rw", 1, 3),
			Final:  history.Final{Stock: 0, Orders: 1},
			Ops:    []history.Op{view(0, 0, 10, 1, true), view(1, 0, 11, 1, true), sold(2, 30, 1)},
		}
	},
	// rw: a writer that entered while a reader held the lock.
	"bad-reader-writer.jsonl": func() *history.History {
		return &history.History{
			Header: header("rw", 1, 2),
			Final:  history.Final{Stock: 0, Orders: 1},
			Ops:    []history.Op{view(0, 0, 10, 1, true), sold(1, 12, 1)},
		}
	},
	// A cart that sold one item and was refused the other, though both
	// had stock.
	"bad-broken-cart.jsonl": func() *history.History {
		h := &history.History{
			Header: itemsHeader("multi", 2, 1, 2, 2),
			Final:  finals(history.Final{Stock: 1, Orders: 1}, history.Final{Stock: 2}),
			Ops:    cartOf(0, 10, []int32{0, 1}, []int64{2, 2}, []history.Outcome{history.Sold, history.CartRefused}),
		}
		return h
	},
}

// TestItemFixtures keeps the item fixtures in testdata/ in step with their
// builders; run it with -update to rewrite the files.
func TestItemFixtures(t *testing.T) {
	writeFixtures(t, itemFixtures, "TestItemFixtures")
}

// TestCheckItems: each item's history is judged on its own, holders of
// different items' locks never overlap, a read is held to the counter's
// value at some instant of it, readers share, and carts are all or none.
func TestCheckItems(t *testing.T) {
	tests := []struct {
		file string
		want summary
	}{
		{"ok-items.jsonl", summary{
			Pass: true, Data: OK, Lin: OK, Segments: 8, Lock: OK, Live: OK,
		}},
		{"bad-item-oversell.jsonl", summary{
			Data: Violated, Lin: Illegal, Segments: 2, FirstIllegal: &Window{12 * ms, 41 * ms},
			Oversold: 1, Lock: Violated, Overlaps: 1, Live: OK,
			Reasons: []string{
				"item 1: inventory history not linearizable (first violation between 0.012s and 0.041s)",
				"item 1: oversold 1 unit: 2 orders, but the stock fell only from 2 to 1 (1 unit)",
				"item 1: mutual exclusion broken: 1 overlapping critical section (1 with no lease recorded to judge by)",
			},
		}},
		{"bad-stale-read.jsonl", summary{
			Data: Violated, Lin: Illegal, Segments: 3, FirstIllegal: &Window{32 * ms, 33 * ms},
			Lock: OK, Live: OK,
			Reasons: []string{"item 0: inventory history not linearizable (first violation between 0.032s and 0.033s)"},
		}},
		{"ok-shared-readers.jsonl", summary{
			Pass: true, Data: OK, Lin: OK, Segments: 2, Lock: OK, Live: OK,
		}},
		{"bad-reader-writer.jsonl", summary{
			Data: OK, Lin: OK, Segments: 2, Lock: Violated, Overlaps: 1, Live: OK,
			Reasons: []string{"mutual exclusion broken: 1 overlapping critical section (1 with no lease recorded to judge by)"},
		}},
		{"bad-broken-cart.jsonl", summary{
			Data: Violated, Lin: OK, Segments: 2, Lock: OK, Live: OK,
			Reasons: []string{"1 cart was not all or none (first: buyer 0 attempt 0)"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			got := summarize(Check(load(t, tt.file), Options{}))
			got.Notes = nil // fairness notes, per item: not what this test is about
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

// TestItemsIndexWholeHistory: the operations a report names are the whole
// history's, not an item's.
func TestItemsIndexWholeHistory(t *testing.T) {
	h := load(t, "bad-item-oversell.jsonl")
	r := Check(h, Options{})
	for _, p := range r.Lock.Pairs {
		for _, ref := range []OpRef{p.A, p.B} {
			if op := h.Ops[ref.Index]; op.Item != 1 || op.Client != ref.Client {
				t.Errorf("pair names operation %d (client %d, item %d), want a client %d of item 1", ref.Index, op.Client, op.Item, ref.Client)
			}
		}
	}
}
