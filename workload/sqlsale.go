package workload

import (
	"cmp"
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/internal/ctxtime"
	"github.com/lockbench/lockbench/locks"
	"github.com/redis/go-redis/v9"
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

// sqlNode is one node's own connection pool to MySQL. Every statement
// waits out the node's pause and is counted, as every Redis command is, and
// is bounded by the command timeout.
type sqlNode struct {
	n       *node
	db      *sql.DB
	timeout time.Duration
}

// conn takes a connection from the node's pool for one sale. Nothing is
// sent to the server, so a failure here leaves nothing behind.
func (s *sqlNode) conn(ctx context.Context) (*sql.Conn, error) {
	c, err := s.db.Conn(ctx)
	if err != nil {
		return nil, &notSentError{err}
	}
	return c, nil
}

// done gives the connection back to the pool when the sale ended cleanly
// (committed or rolled back), and otherwise closes it: the server then
// rolls back whatever transaction was open, as it does for a client that
// died. A pooled connection must never carry an open transaction.
func (s *sqlNode) done(c *sql.Conn, clean bool) {
	if !clean {
		c.Raw(func(any) error { return driver.ErrBadConn })
	}
	c.Close()
}

// send admits one statement past the node's pause and counts it; the
// returned context bounds it by the command timeout.
func (s *sqlNode) send(ctx context.Context) (context.Context, context.CancelFunc, error) {
	if err := (hook{s.n}).admit(ctx, 1); err != nil {
		return nil, nil, err
	}
	sctx, cancel := context.WithTimeout(ctx, s.timeout)
	return sctx, cancel, nil
}

// exec sends one statement and returns the rows it changed.
func (s *sqlNode) exec(ctx context.Context, c *sql.Conn, q string, args ...any) (int64, error) {
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
func (s *sqlNode) query(ctx context.Context, c *sql.Conn, q string, dest ...any) error {
	sctx, cancel, err := s.send(ctx)
	if err != nil {
		return err
	}
	defer cancel()
	return c.QueryRowContext(sctx, q).Scan(dest...)
}

// rollback ends a transaction that must not commit; it reports whether
// the connection is clean again.
func (s *sqlNode) rollback(ctx context.Context, c *sql.Conn) bool {
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
	// SQLConditional is the seeds' single conditional UPDATE:
	// stock = stock - 1 WHERE id = ? AND stock >= 1 (001, 002).
	SQLConditional SQLKind = iota + 1
	// SQLForUpdate reads the row with SELECT ... FOR UPDATE in a
	// transaction, then writes stock-1: a pessimistic row lock held
	// across the business step.
	SQLForUpdate
	// SQLVersion reads stock and version without a lock, then writes
	// stock-1 WHERE version is still the one read, retrying on a
	// conflict: optimistic locking (seed 001 names it).
	SQLVersion
)

// SQLSale is a sale without a lock whose inventory lives in MySQL or
// MariaDB tables, the database guarding it as kind says.
func SQLSale(kind SQLKind) Sale { return sqlSale{kind: kind} }

type sqlSale struct{ kind SQLKind }

func (sqlSale) Needs() Needs               { return NeedsMySQL }
func (sqlSale) describe(h *history.Header) { h.Lockless = true }
func (sqlSale) scripts() []*redis.Script   { return nil }

func (sqlSale) inventory(r *run) (inventory, error) {
	if r.cfg.Servers.MySQL == nil {
		return nil, ErrNoMySQL
	}
	return r.cfg.Servers.MySQL.inventory()
}

// startNode gives node n its own MySQL pool, of the run's pool size.
func (sqlSale) startNode(_ context.Context, r *run, n *node) error {
	db, err := openMySQL(r.cfg.Servers.MySQL.cfg, r.cfg.Pool)
	if err != nil {
		return err
	}
	n.sql = &sqlNode{n: n, db: db, timeout: cmp.Or(r.cfg.CommandTimeout, 3*time.Second)}
	return nil
}

// buy is one attempt of a SQL sale. Only a COMMIT that was sent and not
// answered has an unknown outcome: every earlier statement belongs to a
// transaction that cannot commit without it, and a connection that fails
// is closed, which rolls it back.
func (s sqlSale) buy(ctx context.Context, r *run, n *node, rec *recorder, _, _ string) {
	user := rec.op.Client
	c, err := n.sql.conn(ctx)
	if err != nil {
		rec.fail()
		return
	}
	clean := false
	defer func() { n.sql.done(c, clean) }()
	switch s.kind {
	case SQLConditional:
		clean = r.sqlConditional(ctx, n.sql, c, rec, user)
	case SQLForUpdate:
		clean = r.sqlForUpdate(ctx, n, c, rec, user)
	case SQLVersion:
		clean = r.sqlVersion(ctx, n, c, rec, user)
	}
}

// commit sends COMMIT and records what became of the write sent before.
// It reports whether the connection is clean.
func (r *run) commit(ctx context.Context, s *sqlNode, c *sql.Conn, rec *recorder) bool {
	if _, err := s.exec(ctx, c, sqlCommit); err != nil {
		if notSent(err) {
			rec.notSent()
			return false
		}
		// Sent and not answered: the transaction may have committed.
		rec.unknown()
		return false
	}
	rec.applied()
	return true
}

// sqlConditional is the seeds' conditional UPDATE. The SELECT after it
// reads, under the row lock the UPDATE took, the stock it left: the sale
// read one more.
func (r *run) sqlConditional(ctx context.Context, s *sqlNode, c *sql.Conn, rec *recorder, user int32) bool {
	if _, err := s.exec(ctx, c, sqlBegin); err != nil {
		rec.readFailed()
		return false
	}
	rec.reading()
	rows, err := s.exec(ctx, c, sqlConditional)
	if err != nil {
		rec.readFailed()
		return false
	}
	var stock int64
	if err := s.query(ctx, c, sqlStockLocked, &stock); err != nil {
		rec.readFailed()
		return false
	}
	if rows == 0 {
		rec.read(stock)
		rec.soldOut()
		return s.rollback(ctx, c)
	}
	rec.read(stock + 1)
	if ok, done := r.order(ctx, s, c, rec, user); !ok {
		return done
	}
	rec.writingWithRead()
	return r.commit(ctx, s, c, rec)
}

// order records user's order in the open transaction, as every SQL sale
// does before it commits. ok is true when the sale goes on; otherwise the
// attempt is over (a second order by the user, rolled back; or a failed
// statement) and done is what the sale returns.
func (r *run) order(ctx context.Context, s *sqlNode, c *sql.Conn, rec *recorder, user int32) (ok, done bool) {
	_, err := s.exec(ctx, c, sqlOrder, user)
	if err == nil {
		return true, false
	}
	if isDuplicate(err) {
		rec.duplicate()
		return false, s.rollback(ctx, c)
	}
	rec.notSent()
	return false, false
}

// business is the business step inside a sale, Redis or SQL: the
// Business probe point, then --hold, after which the buyer waits out the
// node's pause, if one began during the hold. It returns false when the
// client was stopped there.
func (r *run) business(ctx context.Context, n *node) bool {
	if err := r.probe(ctx, n, locks.Business); err != nil {
		return false
	}
	if r.cfg.Hold > 0 {
		if err := ctxtime.Sleep(ctx, r.cfg.Hold); err != nil {
			return false
		}
		if err := n.pause.wait(ctx); err != nil || ctx.Err() != nil {
			return false
		}
	}
	return true
}

// sqlForUpdate reads the stock with SELECT ... FOR UPDATE and writes
// stock-1 in the same transaction: the row lock is held across the
// business step, where pause and slow faults strike.
func (r *run) sqlForUpdate(ctx context.Context, n *node, c *sql.Conn, rec *recorder, user int32) bool {
	s := n.sql
	if _, err := s.exec(ctx, c, sqlBegin); err != nil {
		rec.readFailed()
		return false
	}
	rec.reading()
	var stock int64
	if err := s.query(ctx, c, sqlStockLocked, &stock); err != nil {
		rec.readFailed()
		return false
	}
	rec.read(stock)
	if stock <= 0 {
		rec.soldOut()
		return s.rollback(ctx, c)
	}
	if ok, done := r.order(ctx, s, c, rec, user); !ok {
		return done
	}
	if !r.business(ctx, n) {
		rec.notSent()
		return false
	}
	rec.writing()
	if _, err := s.exec(ctx, c, sqlWriteStock, stock-1); err != nil {
		rec.notSent()
		return false
	}
	return r.commit(ctx, s, c, rec)
}

// sqlVersion reads stock and version without a lock, then writes stock-1
// only if the version is still the one read, retrying from the read on a
// conflict after a jittered exponential pause (locks.Backoff: retrying
// within a millisecond or two made 40 buyers on one row spin the server).
// The history keeps the last try.
func (r *run) sqlVersion(ctx context.Context, n *node, c *sql.Conn, rec *recorder, user int32) bool {
	s := n.sql
	for try := 0; ; try++ {
		rec.reading()
		var stock, version int64
		if err := s.query(ctx, c, sqlStockVersion, &stock, &version); err != nil {
			rec.readFailed()
			return false
		}
		rec.read(stock)
		if stock <= 0 {
			rec.soldOut()
			return true
		}
		if !r.business(ctx, n) {
			rec.notSent()
			return false
		}
		if _, err := s.exec(ctx, c, sqlBegin); err != nil {
			rec.notSent()
			return false
		}
		rec.writing()
		rows, err := s.exec(ctx, c, sqlWriteIfVersion, stock-1, version)
		if err != nil {
			rec.notSent()
			return false
		}
		if rows == 0 {
			// Someone wrote since the read: nothing was changed here.
			rec.conflict()
			if !s.rollback(ctx, c) {
				rec.notSent()
				return false
			}
			if err := ctxtime.Sleep(ctx, locks.Backoff(try)); err != nil {
				rec.notSent()
				return true
			}
			continue
		}
		if ok, done := r.order(ctx, s, c, rec, user); !ok {
			return done
		}
		return r.commit(ctx, s, c, rec)
	}
}
