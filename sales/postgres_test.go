package sales_test

import (
	"testing"
	"time"

	"github.com/lockbench/lockbench/checker"
	"github.com/lockbench/lockbench/internal/servertest"
	"github.com/lockbench/lockbench/locks"
	"github.com/lockbench/lockbench/sales"
	"github.com/lockbench/lockbench/servers"
	"github.com/lockbench/lockbench/workload"
)

// dbSaleConfig is a small two-node sale on a store other than Redis.
func dbSaleConfig(name string, sale workload.Sale, set *servers.Set, clients int, stock int64) workload.Config {
	return workload.Config{
		Name: name, Sale: sale, Servers: set,
		Workload: workload.Workload{Prefix: "test:", Clients: clients, Nodes: 2, Workers: 20, Pool: 16, Stock: stock, Attempts: 1,
			Ramp: 200 * time.Millisecond, Timeout: 60 * time.Second, CommandTimeout: 5 * time.Second},
	}
}

func TestPostgresSales(t *testing.T) {
	p := servertest.Postgres.Start(t)
	for _, tt := range []struct {
		name string
		kind sales.PGKind
	}{{"pg-advisory", sales.PGAdvisory}, {"pg-advisory-xact", sales.PGAdvisoryXact}, {"pg-for-update", sales.PGForUpdate}} {
		for _, c := range []struct {
			name    string
			clients int
			stock   int64
		}{{"sold out", 300, 200}, {"stock left", 150, 200}} {
			t.Run(tt.name+"/"+c.name, func(t *testing.T) {
				cfg := dbSaleConfig(tt.name, sales.PGSale(tt.kind), (&servers.Set{}).With(servers.KindPostgres, p), c.clients, c.stock)
				h, err := workload.Run(t.Context(), cfg)
				if err != nil {
					t.Fatalf("Run: %v", err)
				}
				wantSold := min(c.stock, int64(c.clients))
				rep := checker.Check(h, checker.Options{Timeout: 30 * time.Second})
				if rep.Data.Status != checker.OK || rep.Data.Linearizability.Status != checker.OK || rep.Liveness.Status != checker.OK {
					t.Errorf("data %s, linearizability %s, liveness %s, want ok: %v", rep.Data.Status, rep.Data.Linearizability.Status, rep.Liveness.Status, rep.Reasons)
				}
				if rep.Data.Sold != wantSold || h.Final.Orders != wantSold || h.Final.Stock != c.stock-wantSold {
					t.Errorf("sold %d, orders %d, final stock %d; want %d sold of %d", rep.Data.Sold, h.Final.Orders, h.Final.Stock, wantSold, c.stock)
				}
				wantLock := checker.OK
				if tt.kind == sales.PGForUpdate {
					wantLock = checker.NotApplicable
				}
				if rep.Lock.Status != wantLock {
					t.Errorf("lock safety %s, want %s", rep.Lock.Status, wantLock)
				}
			})
		}
	}
}

func TestEtcdTxnSale(t *testing.T) {
	e := servertest.Etcd.Start(t)
	lock, _ := locks.Lookup("etcd-fenced")
	cfg := dbSaleConfig("etcd-txn", sales.EtcdTxn(lock), (&servers.Set{}).With(servers.KindEtcd, e), 150, 100)
	h, err := workload.Run(t.Context(), cfg)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	rep := checker.Check(h, checker.Options{Timeout: 30 * time.Second})
	if rep.Data.Status != checker.OK || rep.Data.Linearizability.Status != checker.OK || rep.Liveness.Status != checker.OK || rep.Lock.Status != checker.OK {
		t.Errorf("data %s, linearizability %s, liveness %s, lock %s; want ok: %v", rep.Data.Status, rep.Data.Linearizability.Status, rep.Liveness.Status, rep.Lock.Status, rep.Reasons)
	}
	if rep.Data.Sold != 100 || h.Final.Orders != 100 || h.Final.Stock != 0 {
		t.Errorf("sold %d, orders %d, final stock %d; want 100 sold of 100", rep.Data.Sold, h.Final.Orders, h.Final.Stock)
	}
}
