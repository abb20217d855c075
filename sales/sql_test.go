package sales_test

import (
	"database/sql"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/lockbench/lockbench/checker"
	"github.com/lockbench/lockbench/faults"
	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/internal/mysqltest"
	"github.com/lockbench/lockbench/internal/redistest"
	"github.com/lockbench/lockbench/internal/servertest"
	"github.com/lockbench/lockbench/sales"
	"github.com/lockbench/lockbench/servers"
	"github.com/lockbench/lockbench/workload"
)

// TestMain stops the MariaDB, PostgreSQL and etcd servers the tests
// share, if they started.
func TestMain(m *testing.M) { os.Exit(servertest.Main(mysqlRun{m})) }

// mysqlRun runs the tests through mysqltest.Main.
type mysqlRun struct{ m *testing.M }

func (r mysqlRun) Run() int { return mysqltest.Main(r.m) }

var mysqlImpls = []string{"mysql", "mysql-for-update", "mysql-version"}

// saleConfig is a small two-node sale with many concurrent buyers.
func saleConfig(t *testing.T, impl string, m *servers.MySQL, clients int, stock int64) workload.Config {
	t.Helper()
	kinds := map[string]sales.SQLKind{"mysql": sales.SQLConditional, "mysql-for-update": sales.SQLForUpdate, "mysql-version": sales.SQLVersion}
	kind, ok := kinds[impl]
	if !ok {
		t.Fatalf("no SQL sale %s", impl)
	}
	// A SQL sale runs on MySQL alone: no Redis is given.
	return workload.Config{
		Name: impl, Sale: sales.SQLSale(kind), Servers: (&servers.Set{}).With(servers.KindMySQL, m),
		Workload: workload.Workload{Prefix: "test:", Clients: clients, Nodes: 2, Workers: 20, Pool: 16, Stock: stock, Attempts: 1,
			Ramp: 200 * time.Millisecond, Timeout: 60 * time.Second, CommandTimeout: 5 * time.Second},
	}
}

// tables lists lockbench's tables left in db.
func tables(t *testing.T, srv *mysqltest.Server, db string) int {
	t.Helper()
	c, err := sql.Open("mysql", srv.DSN)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var n int
	if err := c.QueryRowContext(t.Context(), "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME LIKE 'lockbench%'", db).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// checkSafe asserts that a sale sold exactly min(stock, clients), with no
// oversell, no duplicate order, a linearizable history and every buyer
// answered.
func checkSafe(t *testing.T, h *history.History, wantSold int64) checker.Report {
	t.Helper()
	rep := checker.Check(h, checker.Options{Timeout: 30 * time.Second})
	if rep.Data.Status != checker.OK || rep.Data.Linearizability.Status != checker.OK {
		t.Errorf("data safety %s, linearizability %s, want ok: %v", rep.Data.Status, rep.Data.Linearizability.Status, rep.Reasons)
	}
	if rep.Data.Oversold != 0 || rep.Data.DuplicateOrders != 0 || rep.Data.NegativeStock {
		t.Errorf("oversold %d, duplicate orders %d, negative stock %v; want none", rep.Data.Oversold, rep.Data.DuplicateOrders, rep.Data.NegativeStock)
	}
	if wantSold >= 0 && (rep.Data.Sold != wantSold || h.Final.Orders != wantSold || h.Final.Stock != h.Header.Stock-wantSold) {
		t.Errorf("sold %d, orders %d, final stock %d; want %d sold of %d", rep.Data.Sold, h.Final.Orders, h.Final.Stock, wantSold, h.Header.Stock)
	}
	if rep.Lock.Status != checker.NotApplicable {
		t.Errorf("lock safety %s, want n/a: the database guards the sale", rep.Lock.Status)
	}
	return rep
}

func TestMySQLSale(t *testing.T) {
	srv := mysqltest.Start(t)
	cases := []struct {
		name    string
		clients int
		stock   int64
	}{
		{name: "sold out", clients: 300, stock: 200},
		{name: "stock left", clients: 150, stock: 200},
	}
	for _, impl := range mysqlImpls {
		for _, c := range cases {
			t.Run(impl+"/"+c.name, func(t *testing.T) {
				db := "lbtest_sale"
				m := srv.Dial(t, db)
				cfg := saleConfig(t, impl, m, c.clients, c.stock)
				h, err := workload.Run(t.Context(), cfg)
				if err != nil {
					t.Fatalf("Run: %v", err)
				}
				rep := checkSafe(t, h, min(c.stock, int64(c.clients)))
				if rep.Liveness.Status != checker.OK {
					t.Errorf("liveness %s: %v", rep.Liveness.Status, rep.Reasons)
				}
				if h.Header.Backend != m.Name() {
					t.Errorf("history backend %q, want the MySQL server %q", h.Header.Backend, m.Name())
				}
				if n := tables(t, srv, db); n != 0 {
					t.Errorf("%d lockbench tables left after the run, want 0", n)
				}
			})
		}
	}
}

// TestMySQLStatementsCounted checks that every statement is counted: the
// conditional sale sends BEGIN, UPDATE, SELECT, INSERT, COMMIT for a
// unit sold and BEGIN, UPDATE, SELECT, ROLLBACK for a buyer who finds the
// stock gone.
func TestMySQLStatementsCounted(t *testing.T) {
	srv := mysqltest.Start(t)
	m := srv.Dial(t, "lbtest_count")
	h, err := workload.Run(t.Context(), saleConfig(t, "mysql", m, 60, 40))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := h.Header.Commands, int64(40*5+20*4); got != want {
		t.Errorf("statements counted %d, want %d", got, want)
	}
}

func TestMySQLTablesInUse(t *testing.T) {
	srv := mysqltest.Start(t)
	db := "lbtest_inuse"
	m := srv.Dial(t, db)
	c, err := sql.Open("mysql", srv.DSN)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.ExecContext(t.Context(), "CREATE TABLE "+db+".lockbench_orders (x INT)"); err != nil {
		t.Fatal(err)
	}
	cfg := saleConfig(t, "mysql", m, 10, 5)
	if _, err := workload.Run(t.Context(), cfg); !errors.Is(err, sales.ErrTablesInUse) {
		t.Fatalf("Run on a database holding lockbench's tables: error %v, want ErrTablesInUse", err)
	}
	if n := tables(t, srv, db); n != 1 {
		t.Errorf("refused run left %d tables, want the 1 that was there", n)
	}
	cfg.Force = true
	h, err := workload.Run(t.Context(), cfg)
	if err != nil {
		t.Fatalf("Run with Force: %v", err)
	}
	checkSafe(t, h, 5)
	if n := tables(t, srv, db); n != 0 {
		t.Errorf("%d tables left after a forced run, want 0", n)
	}
}

func TestMySQLNeedsServer(t *testing.T) {
	b := redistest.Embedded(t)
	_, err := workload.Run(t.Context(), workload.Config{Name: "mysql", Sale: sales.SQLSale(sales.SQLConditional), Servers: &servers.Set{Redis: b},
		Workload: workload.Workload{Clients: 1, Nodes: 1, Stock: 1, Attempts: 1, Timeout: time.Second}})
	if !errors.Is(err, servers.ErrMissing) {
		t.Errorf("Run without MySQL: error %v, want servers.ErrMissing", err)
	}
}

// TestMySQLUnderFaults makes each fault happen and checks that the data
// stays safe: a pause or a slow step inside for-update's row lock only
// stalls the others; inside version's read-write window it only costs a
// retry; a crashed buyer's transaction is rolled back; a server that
// stops answering past the command timeout leaves unknown outcomes that
// raise no false alarm.
func TestMySQLUnderFaults(t *testing.T) {
	srv := mysqltest.Start(t)
	cases := []struct {
		impl, fault string
		live        bool // every unit must be sold
	}{
		{"mysql-for-update", "pause-holder:until=for:count=2:for=400ms", true},
		{"mysql-for-update", "slow-holder:for=400ms", true},
		{"mysql-for-update", "crash-holder", false},
		{"mysql-version", "pause-holder:until=for:count=2:for=400ms", true},
		{"mysql-version", "slow-holder:for=400ms", true},
		{"mysql-version", "crash-holder", false},
		{"mysql", "server-pause:for=1s", false},
		{"mysql-for-update", "server-pause:for=1s", false},
		{"mysql-version", "server-pause:for=1s", false},
	}
	for _, c := range cases {
		t.Run(c.impl+"/"+c.fault, func(t *testing.T) {
			m := srv.Dial(t, "lbtest_faults")
			m.RunsIn(srv)
			cfg := saleConfig(t, c.impl, m, 300, 200)
			cfg.Ramp = time.Second
			cfg.CommandTimeout = 3 * time.Second
			if strings.HasPrefix(c.fault, "server-pause") {
				cfg.CommandTimeout = 500 * time.Millisecond
			}
			specs, err := faults.Parse(c.fault)
			if err != nil {
				t.Fatal(err)
			}
			// The pause goes to MySQL, the sale's store, through the pauser
			// set above.
			reach, err := workload.ReachOf(cfg.Servers, cfg.Sale)
			if err != nil {
				t.Fatal(err)
			}
			inj, err := faults.New(specs, faults.Env{Lease: 200 * time.Millisecond, CommandTimeout: cfg.CommandTimeout, Nodes: cfg.Nodes, Seed: 1}, reach)
			if err != nil {
				t.Fatal(err)
			}
			defer inj.Close()
			cfg.Injector = inj
			h, err := workload.Run(t.Context(), cfg)
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if len(h.Faults) == 0 {
				t.Fatalf("%s never fired", c.fault)
			}
			want := int64(-1)
			if c.live {
				want = 200
			}
			rep := checkSafe(t, h, want)
			outcomes := map[history.Outcome]int{}
			for _, op := range h.Ops {
				outcomes[op.Outcome]++
			}
			t.Logf("%s: sold %d, faults %d, indeterminate %d, liveness %s, outcomes %v", c.fault, rep.Data.Sold, len(h.Faults), rep.Data.Indeterminate, rep.Liveness.Status, outcomes)
			if h.Final.Orders != h.Header.Stock-h.Final.Stock {
				t.Errorf("orders %d, stock taken %d: every committed order must have taken one unit", h.Final.Orders, h.Header.Stock-h.Final.Stock)
			}
		})
	}
}
