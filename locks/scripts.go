package locks

import (
	"embed"

	"github.com/redis/go-redis/v9"
)

//go:embed scripts/*.lua
var scriptFiles embed.FS

func script(name string) *redis.Script {
	src, err := scriptFiles.ReadFile("scripts/" + name + ".lua")
	if err != nil {
		panic("locks: missing script " + name) // a build defect, not a runtime condition
	}
	return redis.NewScript(string(src))
}

// The scripts, one per file in scripts/, each naming the source it reproduces.
var (
	luaUnlock       = script("lua_unlock")
	fencedLock      = script("fenced_lock")
	reentrantLock   = script("reentrant_lock")
	reentrantUnlock = script("reentrant_unlock")
	watchdogLock    = script("watchdog_lock")
	watchdogUnlock  = script("watchdog_unlock")
	watchdogRenew   = script("watchdog_renew")
	spinUnlock      = script("spin_unlock")
	fairLock        = script("fair_lock")
	fairUnlock      = script("fair_unlock")
	fairCancel      = script("fair_cancel")
	rwReadLock      = script("rw_read_lock")
	rwReadUnlock    = script("rw_read_unlock")
	rwReadRenew     = script("rw_read_renew")
	rwWriteLock     = script("rw_write_lock")
	rwWriteUnlock   = script("rw_write_unlock")
	naiveLock       = script("naive_lock")
	naiveRenew      = script("naive_renew")
	naiveUnlock     = script("naive_unlock")
)
