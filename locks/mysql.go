package locks

// Store is where an implementation keeps the inventory and the orders.
type Store uint8

// The stores.
const (
	// StoreRedis keeps them in Redis, next to the locks.
	StoreRedis Store = iota
	// StoreMySQL keeps them in MySQL or MariaDB tables; the database
	// itself guards the sale (Impl.SQL says how).
	StoreMySQL
)

// SQLSale is how a StoreMySQL implementation sells one unit.
type SQLSale uint8

// The SQL sales.
const (
	// SaleNone marks an implementation that keeps its inventory in Redis.
	SaleNone SQLSale = iota
	// SaleConditional is the seeds' single conditional UPDATE:
	// stock = stock - 1 WHERE id = ? AND stock >= 1 (001, 002).
	SaleConditional
	// SaleForUpdate reads the row with SELECT ... FOR UPDATE in a
	// transaction, then writes stock-1: a pessimistic row lock held
	// across the business step.
	SaleForUpdate
	// SaleVersion reads stock and version without a lock, then writes
	// stock-1 WHERE version is still the one read, retrying on a
	// conflict: optimistic locking (seed 001 names it).
	SaleVersion
)
