package sales

import (
	"context"
	"strconv"
	"sync"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
)

// TestAuditIsOneSnapshot: writes that still land while the audit reads (a
// paused server releasing a buyer's write it held, after the buyer gave
// up) never make the final state contradict itself. Each write takes a
// unit and records its order at once; every audit must see as many orders
// as units gone. Read in two commands, an audit between a write's stock
// and its order saw a unit's order without the unit gone: an oversell
// that never happened.
func TestAuditIsOneSnapshot(t *testing.T) {
	srv := miniredis.RunT(t)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { c.Close() })
	ctx := context.Background()
	k := itemKeys{stock: "audit:stock", orders: "audit:orders"}
	const stock = 2000
	if err := c.Set(ctx, k.stock, stock, 0).Err(); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := range stock {
			// The store's writes are atomic; the audit must be too.
			c.TxPipelined(ctx, func(p redis.Pipeliner) error {
				p.Decr(ctx, k.stock)
				p.HSet(ctx, k.orders, strconv.Itoa(i), 1)
				return nil
			})
		}
	}()
	for range 500 {
		f, err := auditItem(ctx, c, k)
		if err != nil {
			t.Fatal(err)
		}
		if f.Orders+f.Stock != stock {
			t.Fatalf("an audit read %d orders and %d units left of %d: not one instant of the store", f.Orders, f.Stock, stock)
		}
	}
	wg.Wait()
}
