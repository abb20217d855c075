package workload

import (
	"errors"

	"github.com/lockbench/lockbench/locks"
)

// Sentinel errors of the engine, matched with errors.Is; a server that
// cannot be reached is servers.ErrUnreachable, one that is missing
// servers.ErrMissing.
var (
	// ErrPrefixInUse means the key prefix already holds keys on a real
	// server and --force was not given.
	ErrPrefixInUse = errors.New("workload: key prefix already holds keys")
	// ErrCrashed is the cause a fault gives when it kills a client.
	// It is locks.ErrCrashed, so that a lock can tell a dead client (which
	// cleans nothing up) from one that gave up.
	ErrCrashed = locks.ErrCrashed
)
