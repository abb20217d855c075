package servers

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/go-sql-driver/mysql"
)

// KindMySQL is a MySQL or MariaDB, where the SQL sales keep their
// inventory.
const KindMySQL Kind = "mysql"

// mySQLEnv is the environment variable --mysql-dsn defaults to.
const mySQLEnv = "LOCKBENCH_MYSQL_DSN"

func init() {
	Register(KindInfo{
		Kind:   KindMySQL,
		Title:  "MySQL",
		Flag:   "mysql-dsn",
		Env:    mySQLEnv,
		Usage:  "MySQL/MariaDB of the mysql implementations, as user:password@tcp(127.0.0.1:3306)/database (default $" + mySQLEnv + "); lockbench creates its tables there (database " + DefaultMySQLDatabase + " when none is named) and drops them after",
		Secret: true,
		Hint:   "keeps its inventory in MySQL: give --mysql-dsn=user:password@tcp(127.0.0.1:3306)/ or $" + mySQLEnv + ", or run with --backend=docker (MariaDB in a container)",
		Check: func(dsn string) error {
			if _, err := mysql.ParseDSN(dsn); err != nil {
				return fmt.Errorf("%s; for example --mysql-dsn='user:password@tcp(127.0.0.1:3306)/lockbench'", strings.TrimPrefix(err.Error(), "invalid DSN: "))
			}
			return nil
		},
		Redact: func(dsn string) string {
			if cfg, err := mysql.ParseDSN(dsn); err == nil && cfg.Passwd != "" {
				cfg.Passwd = "PASSWORD"
				return cfg.FormatDSN()
			}
			return dsn
		},
		Dial: func(ctx context.Context, dsn string) (Server, error) { return DialMySQL(ctx, dsn) },
		Node: func(dsn string) (Server, error) {
			cfg, err := mysql.ParseDSN(dsn)
			if err != nil {
				return nil, fmt.Errorf("%w: mysql: %v", ErrBadAddress, err)
			}
			return &MySQL{cfg: cfg}, nil
		},
	})
}

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

// Spec implements Portable: the DSN, password and all, for the nodes
// lockbench runs.
func (m *MySQL) Spec() string { return m.cfg.FormatDSN() }

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

// CanPause reports whether RunsIn gave a host that can pause the server.
func (m *MySQL) CanPause() bool {
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
