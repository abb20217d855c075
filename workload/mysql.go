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

// MySQL is a MySQL or MariaDB server that holds the inventory of the
// SQL sales (sales.SQLSale).
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

// Open opens a pool of up to pool connections to the server's database,
// for a sale's node or its inventory; the caller closes it.
func (m *MySQL) Open(pool int) (*sql.DB, error) { return openMySQL(m.cfg, pool) }

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
