package workload

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/lockbench/lockbench/history"
)

// ErrNoMySQL means an implementation that keeps its inventory in MySQL
// was asked for and no MySQL server was given.
var ErrNoMySQL = errors.New("workload: no MySQL server (give --mysql-dsn or $LOCKBENCH_MYSQL_DSN)")

// ErrTablesInUse means lockbench's tables already exist in the database
// and --force was not given.
var ErrTablesInUse = errors.New("workload: lockbench's tables already exist in the database")

// DefaultMySQLDatabase is the database lockbench uses when the DSN names
// none; it is created when missing and dropped again on Close.
const DefaultMySQLDatabase = "lockbench"

// The tables of a run, created before the sale and dropped after it.
const (
	inventoryTable = "lockbench_inventory"
	ordersTable    = "lockbench_orders"
)

// MySQL is a MySQL or MariaDB server that holds the inventory of the
// SQL sales (SQLSale).
type MySQL struct {
	cfg     *mysql.Config // with the database lockbench uses
	version string
	created bool // the database was created by DialMySQL: Close drops it

	mu   sync.Mutex
	host Host // nil unless RunsIn gave one
}

// Host is what runs a server lockbench started or controls, a container
// or a process: it says where the server runs, and it can pause it.
type Host interface {
	Pauser
	// Where says where the server runs, for the server's Name: "in docker
	// (mariadb:11)"; "" adds nothing.
	Where() string
}

// DialMySQL checks that a MySQL server answers at dsn (go-sql-driver's
// format, user:password@tcp(host:port)/database), makes sure its database
// exists (DefaultMySQLDatabase when the DSN names none) and reads the
// server's version. It fails with ErrUnreachable within a few seconds when
// the server does not answer.
func DialMySQL(ctx context.Context, dsn string) (*MySQL, error) {
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return nil, fmt.Errorf("%w: --mysql-dsn: %v", ErrUnreachable, err)
	}
	if cfg.DBName == "" {
		cfg.DBName = DefaultMySQLDatabase
	}
	// Arguments are interpolated on the client so that each statement is
	// one round trip, not a prepare, an execute and a close.
	cfg.InterpolateParams = true
	if cfg.Timeout == 0 {
		cfg.Timeout = 2 * time.Second
	}
	server := cfg.Clone()
	server.DBName = ""
	db, err := openMySQL(server, 1)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	m := &MySQL{cfg: cfg}
	if err := db.QueryRowContext(ctx, "SELECT VERSION()").Scan(&m.version); err != nil {
		return nil, fmt.Errorf("%w: mysql at %s: %v", ErrUnreachable, cfg.Addr, err)
	}
	var n int
	if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = ?", cfg.DBName).Scan(&n); err != nil {
		return nil, fmt.Errorf("%w: mysql at %s: %v", ErrUnreachable, cfg.Addr, err)
	}
	if n == 0 {
		if _, err := db.ExecContext(ctx, "CREATE DATABASE "+quoteIdent(cfg.DBName)); err != nil {
			return nil, fmt.Errorf("%w: mysql at %s: creating database %s: %v", ErrUnreachable, cfg.Addr, cfg.DBName, err)
		}
		m.created = true
	}
	return m, nil
}

func openMySQL(cfg *mysql.Config, pool int) (*sql.DB, error) {
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, fmt.Errorf("%w: mysql: %v", ErrUnreachable, err)
	}
	db := sql.OpenDB(conn)
	db.SetMaxOpenConns(pool)
	db.SetMaxIdleConns(pool)
	return db, nil
}

func quoteIdent(s string) string { return "`" + strings.ReplaceAll(s, "`", "``") + "`" }

// Name says what the server is and where, for the summary and the report:
// its address and database, and where its host runs it.
func (m *MySQL) Name() string {
	flavor := "MySQL"
	if strings.Contains(strings.ToLower(m.version), "mariadb") {
		flavor = "MariaDB"
	}
	name := fmt.Sprintf("%s %s at %s/%s", flavor, m.version, m.cfg.Addr, m.cfg.DBName)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.host != nil && m.host.Where() != "" {
		name += " " + m.host.Where()
	}
	return name
}

// Version is the server's SELECT VERSION().
func (m *MySQL) Version() string { return m.version }

// Database is the database lockbench's tables live in.
func (m *MySQL) Database() string { return m.cfg.DBName }

// RunsIn says that h runs the server (a container lockbench started, a
// process a test started): Name says where, and the server-pause fault
// pauses h for the SQL sales.
func (m *MySQL) RunsIn(h Host) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.host = h
}

// pausable reports whether RunsIn gave a host that can pause the server.
func (m *MySQL) pausable() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.host != nil
}

// Pause implements Pauser by pausing the server's host; without one
// (RunsIn) it fails with ErrUnsupported.
func (m *MySQL) Pause(ctx context.Context, d time.Duration) error {
	m.mu.Lock()
	h := m.host
	m.mu.Unlock()
	if h == nil {
		return fmt.Errorf("%w: %s cannot be paused", ErrUnsupported, m.Name())
	}
	return h.Pause(ctx, d)
}

// Close drops the database if DialMySQL created it.
func (m *MySQL) Close() error {
	if !m.created {
		return nil
	}
	server := m.cfg.Clone()
	server.DBName = ""
	db, err := openMySQL(server, 1)
	if err != nil {
		return err
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err = db.ExecContext(ctx, "DROP DATABASE IF EXISTS "+quoteIdent(m.cfg.DBName))
	return err
}

// mysqlInventory is the inventory of a SQL sale: one row of
// lockbench_inventory (id 1, seed 003's inventory001) and one row of
// lockbench_orders per order, unique per user.
type mysqlInventory struct {
	db *sql.DB // the run's own connection: set-up, audit, removal
}

func (m *MySQL) inventory() (*mysqlInventory, error) {
	db, err := openMySQL(m.cfg, 2)
	if err != nil {
		return nil, err
	}
	return &mysqlInventory{db: db}, nil
}

// prepare refuses a database that already holds lockbench's tables
// (unless force), then creates them and sets the stock.
func (v *mysqlInventory) prepare(ctx context.Context, stock int64, force bool) error {
	var n int
	err := v.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME IN (?, ?)", inventoryTable, ordersTable).Scan(&n)
	if err != nil {
		return fmt.Errorf("%w: mysql: %v", ErrUnreachable, err)
	}
	if n > 0 && !force {
		return fmt.Errorf("%w: %s or %s exists; pass --force to drop them, or choose another database in --mysql-dsn", ErrTablesInUse, inventoryTable, ordersTable)
	}
	for _, q := range []string{
		"DROP TABLE IF EXISTS " + inventoryTable + ", " + ordersTable,
		// No CHECK on the stock: an oversell must be able to show.
		"CREATE TABLE " + inventoryTable + " (id INT PRIMARY KEY, stock BIGINT NOT NULL, version BIGINT NOT NULL DEFAULT 0) ENGINE=InnoDB",
		// One order per user (seed 000's 一人一单) is the unique key.
		"CREATE TABLE " + ordersTable + " (id BIGINT AUTO_INCREMENT PRIMARY KEY, user INT NOT NULL, UNIQUE KEY one_per_user (user)) ENGINE=InnoDB",
	} {
		if _, err := v.db.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("%w: mysql: %v", ErrUnreachable, err)
		}
	}
	if _, err := v.db.ExecContext(ctx, "INSERT INTO "+inventoryTable+" (id, stock) VALUES (1, ?)", stock); err != nil {
		return fmt.Errorf("%w: mysql: %v", ErrUnreachable, err)
	}
	return nil
}

// audit reads the final stock and the orders. The unique key makes a
// second order for a user impossible; the count is read all the same.
func (v *mysqlInventory) audit(ctx context.Context) (history.Final, error) {
	var f history.Final
	if err := v.db.QueryRowContext(ctx, "SELECT stock FROM "+inventoryTable+" WHERE id = 1").Scan(&f.Stock); err != nil {
		return f, err
	}
	if err := v.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+ordersTable).Scan(&f.Orders); err != nil {
		return f, err
	}
	rows, err := v.db.QueryContext(ctx, "SELECT user, COUNT(*) FROM "+ordersTable+" GROUP BY user HAVING COUNT(*) > 1 ORDER BY user")
	if err != nil {
		return f, err
	}
	defer rows.Close()
	for rows.Next() {
		var user int32
		var n int64
		if err := rows.Scan(&user, &n); err != nil {
			return f, err
		}
		f.DuplicateUsers = append(f.DuplicateUsers, user)
		f.DuplicateOrders += n - 1
	}
	return f, rows.Err()
}

// clear drops the tables and closes the run's connection.
func (v *mysqlInventory) ping(ctx context.Context) error { return v.db.PingContext(ctx) }

func (v *mysqlInventory) clear(ctx context.Context) error {
	defer v.db.Close()
	_, err := v.db.ExecContext(ctx, "DROP TABLE IF EXISTS "+inventoryTable+", "+ordersTable)
	return err
}
