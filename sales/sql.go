package sales

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/lockbench/lockbench/internal/ctxtime"
	"github.com/lockbench/lockbench/locks"
	"github.com/lockbench/lockbench/servers"
	"github.com/lockbench/lockbench/workload"
)

// ErrTablesInUse means lockbench's tables already exist in the database
// and --force was not given.
var ErrTablesInUse = errors.New("sales: lockbench's tables already exist in the database")

// The tables of a run, created before the sale and dropped after it.
const (
	inventoryTable = "lockbench_inventory"
	ordersTable    = "lockbench_orders"
)

// The statements of the SQL sales. Arguments are interpolated by the
// driver, so each is one round trip.
const (
	sqlBegin          = "START TRANSACTION"
	sqlCommit         = "COMMIT"
	sqlRollback       = "ROLLBACK"
	sqlConditional    = "UPDATE " + inventoryTable + " SET stock = stock - 1 WHERE id = 1 AND stock >= 1"
	sqlStockLocked    = "SELECT stock FROM " + inventoryTable + " WHERE id = 1 FOR UPDATE"
	sqlStockVersion   = "SELECT stock, version FROM " + inventoryTable + " WHERE id = 1"
	sqlWriteStock     = "UPDATE " + inventoryTable + " SET stock = ? WHERE id = 1"
	sqlWriteIfVersion = "UPDATE " + inventoryTable + " SET stock = ?, version = version + 1 WHERE id = 1 AND version = ?"
	sqlOrder          = "INSERT INTO " + ordersTable + " (user) VALUES (?)"
)

// erDupEntry is MySQL's ER_DUP_ENTRY: the user already has an order.
const erDupEntry = 1062

// sqlSeller is one node's side of a SQL sale: its own connection pool to
// MySQL. Every statement waits out the node's pause and is counted, as
// every Redis command is, and is bounded by the command timeout.
type sqlSeller struct {
	kind    SQLKind
	n       *workload.Node
	db      *sql.DB
	timeout time.Duration
}

// conn takes a connection from the node's pool for one sale. Nothing is
// sent to the server, so a failure here leaves nothing behind.
func (s *sqlSeller) conn(ctx context.Context) (*sql.Conn, error) {
	return s.db.Conn(ctx)
}

// done gives the connection back to the pool when the sale ended cleanly
// (committed or rolled back), and otherwise closes it: the server then
// rolls back whatever transaction was open, as it does for a client that
// died. A pooled connection must never carry an open transaction.
func (s *sqlSeller) done(c *sql.Conn, clean bool) {
	if !clean {
		c.Raw(func(any) error { return driver.ErrBadConn })
	}
	c.Close()
}

// send admits one statement past the node's pause and counts it; the
// returned context bounds it by the command timeout.
func (s *sqlSeller) send(ctx context.Context) (context.Context, context.CancelFunc, error) {
	if err := s.n.Admit(ctx, 1); err != nil {
		return nil, nil, err
	}
	sctx, cancel := context.WithTimeout(ctx, s.timeout)
	return sctx, cancel, nil
}

// exec sends one statement and returns the rows it changed.
func (s *sqlSeller) exec(ctx context.Context, c *sql.Conn, q string, args ...any) (int64, error) {
	sctx, cancel, err := s.send(ctx)
	if err != nil {
		return 0, err
	}
	defer cancel()
	res, err := c.ExecContext(sctx, q, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// query sends one statement that answers one row and scans it.
func (s *sqlSeller) query(ctx context.Context, c *sql.Conn, q string, dest ...any) error {
	sctx, cancel, err := s.send(ctx)
	if err != nil {
		return err
	}
	defer cancel()
	return c.QueryRowContext(sctx, q).Scan(dest...)
}

// rollback ends a transaction that must not commit; it reports whether
// the connection is clean again.
func (s *sqlSeller) rollback(ctx context.Context, c *sql.Conn) bool {
	_, err := s.exec(ctx, c, sqlRollback)
	return err == nil
}

func isDuplicate(err error) bool {
	var me *mysql.MySQLError
	return errors.As(err, &me) && me.Number == erDupEntry
}

// SQLKind is how a SQLSale sells one unit.
type SQLKind uint8

// The SQL sales.
const (
	// SQLConditional is the sources' single conditional UPDATE:
	// stock = stock - 1 WHERE id = ? AND stock >= 1 (001, 002).
	SQLConditional SQLKind = iota + 1
	// SQLForUpdate reads the row with SELECT ... FOR UPDATE in a
	// transaction, then writes stock-1: a pessimistic row lock held
	// across the business step.
	SQLForUpdate
	// SQLVersion reads stock and version without a lock, then writes
	// stock-1 WHERE version is still the one read, retrying on a
	// conflict: optimistic locking (source 001 names it).
	SQLVersion
)

// SQLSale is a sale without a lock whose inventory lives in MySQL or
// MariaDB tables, the database guarding it as kind says.
func SQLSale(kind SQLKind) workload.Sale { return sqlSale{kind: kind} }

type sqlSale struct{ kind SQLKind }

func (sqlSale) Needs() servers.Needs  { return servers.Needs{servers.KindMySQL} }
func (sqlSale) Guard() workload.Guard { return workload.Guard{} }

func (sqlSale) Inventory(env workload.Env) (workload.Inventory, error) {
	m, ok := env.Servers.Get(servers.KindMySQL).(*servers.MySQL)
	if !ok {
		return nil, fmt.Errorf("%w: MySQL", servers.ErrMissing)
	}
	db, err := m.Open(2)
	if err != nil {
		return nil, err
	}
	return &tableInventory{db: sqlDB{sqlQuerier{db}}, sql: mysqlTables}, nil
}

// StartNode gives node n its own MySQL pool, of the run's pool size.
func (s sqlSale) StartNode(_ context.Context, n *workload.Node) (workload.Seller, error) {
	w := n.Workload()
	m, ok := n.Servers().Get(servers.KindMySQL).(*servers.MySQL)
	if !ok {
		return nil, fmt.Errorf("%w: MySQL", servers.ErrMissing)
	}
	db, err := m.Open(w.DatabasePool())
	if err != nil {
		return nil, err
	}
	return &sqlSeller{kind: s.kind, n: n, db: db, timeout: commandTimeout(w)}, nil
}

// Close closes the node's pool.
func (s *sqlSeller) Close() error { return s.db.Close() }

// Sell is one attempt of a SQL sale. Only a COMMIT that was sent and not
// answered has an unknown outcome: every earlier statement belongs to a
// transaction that cannot commit without it, and a connection that fails
// is closed, which rolls it back.
func (s *sqlSeller) Sell(ctx context.Context, a *workload.Attempt) {
	rec := a.Rec()
	c, err := s.conn(ctx)
	if err != nil {
		rec.Fail()
		return
	}
	clean := false
	defer func() { s.done(c, clean) }()
	switch s.kind {
	case SQLConditional:
		clean = s.conditional(ctx, c, rec, a.Client)
	case SQLForUpdate:
		clean = s.forUpdate(ctx, c, rec, a.Client)
	case SQLVersion:
		clean = s.version(ctx, c, rec, a.Client)
	}
}

// commit sends COMMIT and records what became of the write sent before.
// It reports whether the connection is clean.
func (s *sqlSeller) commit(ctx context.Context, c *sql.Conn, rec workload.Recorder) bool {
	if _, err := s.exec(ctx, c, sqlCommit); err != nil {
		if errors.Is(err, workload.ErrNotSent) {
			rec.NotSent()
			return false
		}
		// Sent and not answered: the transaction may have committed.
		rec.Unknown()
		return false
	}
	rec.Applied()
	return true
}

// conditional is the sources' conditional UPDATE. The SELECT after it
// reads, under the row lock the UPDATE took, the stock it left: the sale
// read one more.
func (s *sqlSeller) conditional(ctx context.Context, c *sql.Conn, rec workload.Recorder, user int32) bool {
	if _, err := s.exec(ctx, c, sqlBegin); err != nil {
		rec.ReadFailed()
		return false
	}
	rec.Reading()
	rows, err := s.exec(ctx, c, sqlConditional)
	if err != nil {
		rec.ReadFailed()
		return false
	}
	var stock int64
	if err := s.query(ctx, c, sqlStockLocked, &stock); err != nil {
		rec.ReadFailed()
		return false
	}
	if rows == 0 {
		rec.Read(stock)
		rec.SoldOut()
		return s.rollback(ctx, c)
	}
	rec.Read(stock + 1)
	if ok, done := s.order(ctx, c, rec, user); !ok {
		return done
	}
	rec.WritingWithRead()
	return s.commit(ctx, c, rec)
}

// order records user's order in the open transaction, as every SQL sale
// does before it commits. ok is true when the sale goes on; otherwise the
// attempt is over (a second order by the user, rolled back; or a failed
// statement) and done is what the sale returns.
func (s *sqlSeller) order(ctx context.Context, c *sql.Conn, rec workload.Recorder, user int32) (ok, done bool) {
	_, err := s.exec(ctx, c, sqlOrder, user)
	if err == nil {
		return true, false
	}
	if isDuplicate(err) {
		rec.Duplicate()
		return false, s.rollback(ctx, c)
	}
	rec.NotSent()
	return false, false
}

// forUpdate reads the stock with SELECT ... FOR UPDATE and writes
// stock-1 in the same transaction: the row lock is held across the
// business step, where pause and slow faults strike.
func (s *sqlSeller) forUpdate(ctx context.Context, c *sql.Conn, rec workload.Recorder, user int32) bool {
	if _, err := s.exec(ctx, c, sqlBegin); err != nil {
		rec.ReadFailed()
		return false
	}
	rec.Reading()
	var stock int64
	if err := s.query(ctx, c, sqlStockLocked, &stock); err != nil {
		rec.ReadFailed()
		return false
	}
	rec.Read(stock)
	if stock <= 0 {
		rec.SoldOut()
		return s.rollback(ctx, c)
	}
	if ok, done := s.order(ctx, c, rec, user); !ok {
		return done
	}
	if !s.n.Business(ctx) {
		rec.NotSent()
		return false
	}
	rec.Writing()
	if _, err := s.exec(ctx, c, sqlWriteStock, stock-1); err != nil {
		rec.NotSent()
		return false
	}
	return s.commit(ctx, c, rec)
}

// version reads stock and version without a lock, then writes stock-1
// only if the version is still the one read, retrying from the read on a
// conflict after a jittered exponential pause (locks.Backoff: retrying
// within a millisecond or two made 40 buyers on one row spin the server).
// The history keeps the last try.
func (s *sqlSeller) version(ctx context.Context, c *sql.Conn, rec workload.Recorder, user int32) bool {
	for try := 0; ; try++ {
		rec.Reading()
		var stock, version int64
		if err := s.query(ctx, c, sqlStockVersion, &stock, &version); err != nil {
			rec.ReadFailed()
			return false
		}
		rec.Read(stock)
		if stock <= 0 {
			rec.SoldOut()
			return true
		}
		if !s.n.Business(ctx) {
			rec.NotSent()
			return false
		}
		if _, err := s.exec(ctx, c, sqlBegin); err != nil {
			rec.NotSent()
			return false
		}
		rec.Writing()
		rows, err := s.exec(ctx, c, sqlWriteIfVersion, stock-1, version)
		if err != nil {
			rec.NotSent()
			return false
		}
		if rows == 0 {
			// Someone wrote since the read: nothing was changed here.
			rec.Conflict()
			if !s.rollback(ctx, c) {
				rec.NotSent()
				return false
			}
			if err := ctxtime.Sleep(ctx, locks.Backoff(try)); err != nil {
				rec.NotSent()
				return true
			}
			continue
		}
		if ok, done := s.order(ctx, c, rec, user); !ok {
			return done
		}
		return s.commit(ctx, c, rec)
	}
}

// commandTimeout bounds each request of a sale to its store:
// Workload.CommandTimeout, 3 s when zero, as go-redis's default.
func commandTimeout(w workload.Workload) time.Duration {
	if w.CommandTimeout > 0 {
		return w.CommandTimeout
	}
	return 3 * time.Second
}
