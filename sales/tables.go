package sales

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/servers"
)

// tableInventory is the inventory of a sale in SQL tables, MySQL's or
// PostgreSQL's: one row of lockbench_inventory (id 1, source 003's
// inventory001) and one row of lockbench_orders per order, unique per
// buyer (source 000's 一人一单).
type tableInventory struct {
	db  tableDB // the run's own connections: set-up, audit, removal
	sql tableSQL
}

// tableSQL is what the inventories' SQL differs in.
type tableSQL struct {
	server string   // the server, in errors: "mysql"
	flag   string   // the flag that names the database: "--mysql-dsn"
	exists string   // counts lockbench's tables in the current schema, given their names
	create []string // creates them, with no CHECK on the stock: an oversell must be able to show
	stock  string   // inserts the stock's row, given the stock
	buyer  string   // the orders' buyer column
}

// tableDB is what an inventory asks of its database, through its driver.
type tableDB interface {
	tableQuerier
	exec(ctx context.Context, q string, args ...any) error
	// snapshot runs read in one read-only REPEATABLE READ transaction:
	// its reads share one snapshot, so that a transaction whose buyer
	// gave up on its COMMIT (an unknown outcome) and that commits as the
	// audit reads is seen whole or not at all, never as an order without
	// its unit.
	snapshot(ctx context.Context, read func(tableQuerier) error) error
	ping(ctx context.Context) error
	close()
}

// tableQuerier reads: one row into dest, or rows of two integers.
type tableQuerier interface {
	row(ctx context.Context, q string, args []any, dest ...any) error
	pairs(ctx context.Context, q string) ([][2]int64, error)
}

// Prepare refuses a database that already holds lockbench's tables
// (unless force), then creates them and sets the stock.
func (v *tableInventory) Prepare(ctx context.Context, stock int64, force bool) error {
	var n int
	if err := v.db.row(ctx, v.sql.exists, []any{inventoryTable, ordersTable}, &n); err != nil {
		return fmt.Errorf("%w: %s: %v", servers.ErrUnreachable, v.sql.server, err)
	}
	if n > 0 && !force {
		return fmt.Errorf("%w: %s or %s exists; pass --force to drop them, or choose another database in %s", ErrTablesInUse, inventoryTable, ordersTable, v.sql.flag)
	}
	steps := append([]string{"DROP TABLE IF EXISTS " + inventoryTable + ", " + ordersTable}, v.sql.create...)
	for _, q := range steps {
		if err := v.db.exec(ctx, q); err != nil {
			return fmt.Errorf("%w: %s: %v", servers.ErrUnreachable, v.sql.server, err)
		}
	}
	if err := v.db.exec(ctx, v.sql.stock, stock); err != nil {
		return fmt.Errorf("%w: %s: %v", servers.ErrUnreachable, v.sql.server, err)
	}
	return nil
}

// Audit reads the final stock and the orders in one snapshot. The unique
// key makes a second order for a buyer impossible; the count is read all
// the same.
func (v *tableInventory) Audit(ctx context.Context) (history.Final, error) {
	var f history.Final
	err := v.db.snapshot(ctx, func(q tableQuerier) error {
		if err := q.row(ctx, "SELECT stock FROM "+inventoryTable+" WHERE id = 1", nil, &f.Stock); err != nil {
			return err
		}
		if err := q.row(ctx, "SELECT COUNT(*) FROM "+ordersTable, nil, &f.Orders); err != nil {
			return err
		}
		b := v.sql.buyer
		dups, err := q.pairs(ctx, "SELECT "+b+", COUNT(*) FROM "+ordersTable+" GROUP BY "+b+" HAVING COUNT(*) > 1 ORDER BY "+b)
		for _, d := range dups {
			f.DuplicateUsers = append(f.DuplicateUsers, int32(d[0]))
			f.DuplicateOrders += d[1] - 1
		}
		return err
	})
	return f, err
}

// Ping implements workload.Inventory.
func (v *tableInventory) Ping(ctx context.Context) error { return v.db.ping(ctx) }

// Clear drops the tables and closes the run's connections.
func (v *tableInventory) Clear(ctx context.Context) error {
	defer v.db.close()
	return v.db.exec(ctx, "DROP TABLE IF EXISTS "+inventoryTable+", "+ordersTable)
}

// mysqlTables are the MySQL inventory's statements.
var mysqlTables = tableSQL{
	server: "mysql",
	flag:   "--mysql-dsn",
	exists: "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME IN (?, ?)",
	create: []string{
		"CREATE TABLE " + inventoryTable + " (id INT PRIMARY KEY, stock BIGINT NOT NULL, version BIGINT NOT NULL DEFAULT 0) ENGINE=InnoDB",
		"CREATE TABLE " + ordersTable + " (id BIGINT AUTO_INCREMENT PRIMARY KEY, user INT NOT NULL, UNIQUE KEY one_per_user (user)) ENGINE=InnoDB",
	},
	stock: "INSERT INTO " + inventoryTable + " (id, stock) VALUES (1, ?)",
	buyer: "user",
}

// pgTables are the PostgreSQL inventory's statements.
var pgTables = tableSQL{
	server: "postgres",
	flag:   "--pg-dsn",
	exists: "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = current_schema() AND table_name IN ($1, $2)",
	create: []string{
		"CREATE TABLE " + inventoryTable + " (id INT PRIMARY KEY, stock BIGINT NOT NULL)",
		"CREATE TABLE " + ordersTable + " (id BIGSERIAL PRIMARY KEY, buyer INT NOT NULL UNIQUE)",
	},
	stock: "INSERT INTO " + inventoryTable + " (id, stock) VALUES (1, $1)",
	buyer: "buyer",
}

// sqlDB is a tableDB on database/sql (MySQL).
type sqlDB struct{ sqlQuerier }

// sqlQuerier is a *sql.DB or a *sql.Tx.
type sqlQuerier struct {
	q interface {
		QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row
		QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error)
	}
}

func (s sqlQuerier) row(ctx context.Context, q string, args []any, dest ...any) error {
	return s.q.QueryRowContext(ctx, q, args...).Scan(dest...)
}

func (s sqlQuerier) pairs(ctx context.Context, q string) ([][2]int64, error) {
	rows, err := s.q.QueryContext(ctx, q)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out [][2]int64
	for rows.Next() {
		var p [2]int64
		if err := rows.Scan(&p[0], &p[1]); err != nil {
			return out, err
		}
		out = append(out, p)
	}
	return out, rows.Err()
}

func (s sqlDB) db() *sql.DB { return s.q.(*sql.DB) }

func (s sqlDB) exec(ctx context.Context, q string, args ...any) error {
	_, err := s.db().ExecContext(ctx, q, args...)
	return err
}

func (s sqlDB) snapshot(ctx context.Context, read func(tableQuerier) error) error {
	tx, err := s.db().BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true})
	if err != nil {
		return err
	}
	defer tx.Rollback()
	return read(sqlQuerier{tx})
}

func (s sqlDB) ping(ctx context.Context) error { return s.db().PingContext(ctx) }
func (s sqlDB) close()                         { s.db().Close() }

// pgDB is a tableDB on a pgx pool (PostgreSQL).
type pgDB struct{ pgQuerier }

// pgQuerier is a *pgxpool.Pool or a pgx.Tx.
type pgQuerier struct {
	q interface {
		QueryRow(ctx context.Context, q string, args ...any) pgx.Row
		Query(ctx context.Context, q string, args ...any) (pgx.Rows, error)
	}
}

func (p pgQuerier) row(ctx context.Context, q string, args []any, dest ...any) error {
	return p.q.QueryRow(ctx, q, args...).Scan(dest...)
}

func (p pgQuerier) pairs(ctx context.Context, q string) ([][2]int64, error) {
	// pgx's rows carry Query's error, which CollectRows returns.
	rows, _ := p.q.Query(ctx, q)
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) ([2]int64, error) {
		var p [2]int64
		err := r.Scan(&p[0], &p[1])
		return p, err
	})
}

func (p pgDB) pool() *pgxpool.Pool { return p.q.(*pgxpool.Pool) }

func (p pgDB) exec(ctx context.Context, q string, args ...any) error {
	_, err := p.pool().Exec(ctx, q, args...)
	return err
}

func (p pgDB) snapshot(ctx context.Context, read func(tableQuerier) error) error {
	tx, err := p.pool().BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return err
	}
	defer tx.Rollback(ctx)
	return read(pgQuerier{tx})
}

func (p pgDB) ping(ctx context.Context) error { return p.pool().Ping(ctx) }
func (p pgDB) close()                         { p.pool().Close() }
