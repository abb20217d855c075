package sales

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/lockbench/lockbench/locks"
	"github.com/lockbench/lockbench/servers"
	"github.com/lockbench/lockbench/workload"
)

// PGKind is how a PGSale guards the sale.
type PGKind uint8

// The PostgreSQL sales.
const (
	// PGAdvisory takes a session-level pg_advisory_lock on a connection
	// of its own and sells through another (the lock held across the
	// sale's statements, as a service that keeps one session for its
	// locks does); pg_advisory_unlock releases it.
	PGAdvisory PGKind = iota + 1
	// PGAdvisoryXact takes pg_advisory_xact_lock inside the sale's own
	// transaction: the lock goes with the COMMIT.
	PGAdvisoryXact
	// PGForUpdate reads the row with SELECT ... FOR UPDATE in the sale's
	// transaction: the row lock is the lock.
	PGForUpdate
)

// The statements of the PostgreSQL sales; the stock is read plainly and
// written as read-1, so that only the lock keeps two buyers apart.
const (
	pgStock       = "SELECT stock FROM " + inventoryTable + " WHERE id = 1"
	pgStockLocked = pgStock + " FOR UPDATE"
	pgWriteStock  = "UPDATE " + inventoryTable + " SET stock = $1 WHERE id = 1"
	pgOrder       = "INSERT INTO " + ordersTable + " (buyer) VALUES ($1)"
	pgLock        = "SELECT pg_advisory_lock($1)"
	pgUnlock      = "SELECT pg_advisory_unlock($1)"
	pgXactLock    = "SELECT pg_advisory_xact_lock($1)"
)

// pgUniqueViolation is PostgreSQL's unique_violation: the buyer already
// has an order.
const pgUniqueViolation = "23505"

// PGSale is a sale whose inventory lives in PostgreSQL tables, guarded as
// kind says.
func PGSale(kind PGKind) workload.Sale { return pgSale{kind: kind} }

type pgSale struct{ kind PGKind }

func (pgSale) Needs() servers.Needs { return servers.Needs{servers.KindPostgres} }

// Guard implements workload.Sale: the advisory locks are locks whose
// holders the checker audits; the row lock is the database's own.
func (s pgSale) Guard() workload.Guard { return workload.Guard{Lock: s.kind != PGForUpdate} }

func postgresOf(set *servers.Set) (*servers.Postgres, error) {
	p, ok := set.Get(servers.KindPostgres).(*servers.Postgres)
	if !ok {
		return nil, fmt.Errorf("%w: PostgreSQL", servers.ErrMissing)
	}
	return p, nil
}

func (pgSale) Inventory(env workload.Env) (workload.Inventory, error) {
	p, err := postgresOf(env.Servers)
	if err != nil {
		return nil, err
	}
	cfg, err := pgxpool.ParseConfig(p.DSN())
	if err != nil {
		return nil, err
	}
	cfg.MaxConns = 2
	db, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		return nil, err
	}
	return &tableInventory{db: pgDB{pgQuerier{db}}, sql: pgTables}, nil
}

// StartNode gives node n its own pools, of the run's pool size, through
// the node's fault proxy when a fault routes it: one for the sale's
// statements, and for pg-advisory one for its lock sessions, whose
// --ttl, when given, is each lock session's idle_session_timeout.
func (s pgSale) StartNode(ctx context.Context, n *workload.Node) (workload.Seller, error) {
	p, err := postgresOf(n.Servers())
	if err != nil {
		return nil, err
	}
	// The store's address as the node dials it: through its fault proxy.
	env, err := n.LockEnv(locks.Uses(servers.KindPostgres))
	if err != nil {
		return nil, err
	}
	addr := p.Addr()
	if env.Remote != nil && len(env.Remote.Addrs) > 0 {
		addr = env.Remote.Addrs[0]
	}
	w := n.Workload()
	seller := &pgSeller{kind: s.kind, n: n, timeout: commandTimeout(w), key: pgLockKey(env.Key)}
	if seller.data, err = pgPool(ctx, p, addr, w.DatabasePool(), 0); err != nil {
		return nil, err
	}
	if s.kind == PGAdvisory {
		if seller.locks, err = pgPool(ctx, p, addr, w.DatabasePool(), env.TTL); err != nil {
			seller.data.Close()
			return nil, err
		}
	}
	return seller, nil
}

// pgPool is a pool of size connections to p at addr; idle, when above
// zero, is each session's idle_session_timeout.
func pgPool(ctx context.Context, p *servers.Postgres, addr string, size int, idle time.Duration) (*pgxpool.Pool, error) {
	cc, err := p.ConfigAt(addr)
	if err != nil {
		return nil, err
	}
	cfg, err := pgxpool.ParseConfig("")
	if err != nil {
		return nil, err
	}
	cfg.ConnConfig = cc
	cfg.MaxConns = int32(max(1, size))
	if idle > 0 {
		cfg.ConnConfig.RuntimeParams["idle_session_timeout"] = fmt.Sprint(max(1, idle.Milliseconds()))
	}
	return pgxpool.NewWithConfig(ctx, cfg)
}

// pgLockKey is the advisory lock's 64-bit key: a hash of the run's lock
// key, so that two runs' locks differ.
func pgLockKey(key string) int64 {
	h := fnv.New64a()
	h.Write([]byte(key))
	return int64(h.Sum64())
}

// pgSeller is one node's side of a PostgreSQL sale: its pools. Every
// statement waits out the node's pause and is counted, and is bounded by
// the command timeout, but the wait for a lock, bounded by the buyer's
// deadline only.
type pgSeller struct {
	kind    PGKind
	n       *workload.Node
	data    *pgxpool.Pool
	locks   *pgxpool.Pool // pg-advisory's lock sessions
	timeout time.Duration
	key     int64
}

// Close closes the node's pools.
func (s *pgSeller) Close() error {
	s.data.Close()
	if s.locks != nil {
		s.locks.Close()
	}
	return nil
}

// admit lets one statement past the node's pause and counts it; the
// context it returns bounds the statement by the command timeout unless
// wait (a lock's wait, bounded by the buyer's own deadline).
func (s *pgSeller) admit(ctx context.Context, wait bool) (context.Context, context.CancelFunc, error) {
	if err := s.n.Admit(ctx, 1); err != nil {
		return nil, nil, err
	}
	if wait {
		c, cancel := context.WithCancel(ctx)
		return c, cancel, nil
	}
	c, cancel := context.WithTimeout(ctx, s.timeout)
	return c, cancel, nil
}

func (s *pgSeller) exec(ctx context.Context, c *pgxpool.Conn, q string, args ...any) (int64, error) {
	return s.execWait(ctx, c, false, q, args...)
}

// execWait is exec, unbounded by the command timeout when wait (a lock's
// wait).
func (s *pgSeller) execWait(ctx context.Context, c *pgxpool.Conn, wait bool, q string, args ...any) (int64, error) {
	sctx, cancel, err := s.admit(ctx, wait)
	if err != nil {
		return 0, err
	}
	defer cancel()
	tag, err := c.Exec(sctx, q, args...)
	return tag.RowsAffected(), err
}

func (s *pgSeller) query(ctx context.Context, c *pgxpool.Conn, wait bool, q string, args []any, dest ...any) error {
	sctx, cancel, err := s.admit(ctx, wait)
	if err != nil {
		return err
	}
	defer cancel()
	return c.QueryRow(sctx, q, args...).Scan(dest...)
}

// done gives a connection back when the sale left it clean, and
// otherwise closes it: the server rolls back its transaction and frees
// its locks, as it does for a client that died.
func done(c *pgxpool.Conn, clean bool) {
	if !clean {
		c.Conn().Close(context.Background())
	}
	c.Release()
}

func isPGDuplicate(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == pgUniqueViolation
}

// Sell is one attempt of a PostgreSQL sale.
func (s *pgSeller) Sell(ctx context.Context, a *workload.Attempt) {
	rec := a.Rec()
	if s.kind == PGAdvisory {
		s.advisory(ctx, a)
		return
	}
	c, err := s.data.Acquire(ctx)
	if err != nil {
		rec.Fail()
		return
	}
	if _, err := s.exec(ctx, c, "BEGIN"); err != nil {
		done(c, false)
		rec.Fail()
		return
	}
	if s.kind == PGForUpdate {
		done(c, s.sale(ctx, c, rec, a.Client, true, func() {}))
		return
	}
	// pg-advisory-xact: the lock goes with the transaction's end, the
	// COMMIT or ROLLBACK sent, or the connection closed.
	rec.Acquiring()
	if _, err := s.execWait(ctx, c, true, pgXactLock, s.key); err != nil {
		done(c, false)
		rec.Fail()
		return
	}
	rec.Acquired(0)
	ending := false
	end := func() {
		if !ending {
			ending = true
			rec.Releasing()
		}
	}
	clean := false
	if err := s.n.Probe(ctx, locks.Acquired); err != nil {
		rec.Fail()
	} else {
		clean = s.sale(ctx, c, rec, a.Client, false, end)
	}
	if errors.Is(context.Cause(ctx), workload.ErrCrashed) {
		done(c, false)
		rec.Crashed()
		return
	}
	end()
	done(c, clean)
	rec.Released(false)
}

// scan is one statement that answers one row, in the sale's transaction.
func (s *pgSeller) scan(ctx context.Context, c *pgxpool.Conn, q string, dest ...any) error {
	return s.query(ctx, c, false, q, nil, dest...)
}

// sale is the read-modify-write in the transaction open on c: read the
// stock (FOR UPDATE when locked), record the order, the business step,
// write stock-1, COMMIT; end is called just before the COMMIT or
// ROLLBACK is sent. It reports whether c is clean.
func (s *pgSeller) sale(ctx context.Context, c *pgxpool.Conn, rec workload.Recorder, user int32, locked bool, end func()) bool {
	q := pgStock
	if locked {
		q = pgStockLocked
	}
	rec.Reading()
	var stock int64
	if err := s.scan(ctx, c, q, &stock); err != nil {
		rec.ReadFailed()
		return false
	}
	rec.Read(stock)
	if stock <= 0 {
		rec.SoldOut()
		end()
		_, err := s.exec(ctx, c, "ROLLBACK")
		return err == nil
	}
	if _, err := s.exec(ctx, c, pgOrder, user); err != nil {
		if isPGDuplicate(err) {
			rec.Duplicate()
			end()
			_, err := s.exec(ctx, c, "ROLLBACK")
			return err == nil
		}
		rec.NotSent()
		return false
	}
	if !s.n.Business(ctx) {
		rec.NotSent()
		return false
	}
	rec.Writing()
	if _, err := s.exec(ctx, c, pgWriteStock, stock-1); err != nil {
		rec.NotSent()
		return false
	}
	end()
	if _, err := s.exec(ctx, c, "COMMIT"); err != nil {
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

// advisory is pg-advisory: the session-level lock on a lock session,
// the sale on a connection of the data pool, then pg_advisory_unlock on
// the lock session, which answers false when the session no longer holds
// the lock (it never does: a session that lost it is gone, and the
// statement fails).
func (s *pgSeller) advisory(ctx context.Context, a *workload.Attempt) {
	rec := a.Rec()
	l, err := s.locks.Acquire(ctx)
	if err != nil {
		rec.Fail()
		return
	}
	rec.Acquiring()
	if _, err := s.execWait(ctx, l, true, pgLock, s.key); err != nil {
		// A wait that ended may have been granted meanwhile: the session
		// is closed, which frees whatever it holds.
		done(l, false)
		rec.Fail()
		return
	}
	rec.Acquired(0)
	if err := s.n.Probe(ctx, locks.Acquired); err != nil {
		done(l, false)
		rec.Fail()
		return
	}
	c, err := s.data.Acquire(ctx)
	if err != nil {
		rec.Fail()
	} else {
		clean := false
		if _, err := s.exec(ctx, c, "BEGIN"); err != nil {
			rec.Fail()
		} else {
			clean = s.sale(ctx, c, rec, a.Client, false, func() {})
		}
		done(c, clean)
	}
	if err := s.n.Probe(ctx, locks.BeforeRelease); err != nil {
		rec.Stopped()
	}
	if errors.Is(context.Cause(ctx), workload.ErrCrashed) {
		// A dead process's connections close: the server frees its lock.
		done(l, false)
		rec.Crashed()
		return
	}
	rec.Releasing()
	var freed bool
	if err := s.query(ctx, l, false, pgUnlock, []any{s.key}, &freed); err != nil {
		// The session is gone (ended by the server, or cut): so is its lock.
		done(l, false)
		rec.Released(true)
		return
	}
	done(l, true)
	rec.Released(!freed)
	s.n.Probe(ctx, locks.Released)
}
