package cli

import (
	"strings"
	"testing"

	"github.com/lockbench/lockbench/internal/servertest"
)

// TestPostgresUserOnProcessNodes: a user's PostgreSQL, reached by a DSN
// with its own user, password and database (the server refuses any
// other), sells on nodes in processes of their own as it does in
// process: the nodes get the whole DSN, with their fault proxy's address
// in it, and the password appears in no output, not even the reproduce
// line (--pg-dsn's value is redacted).
func TestPostgresUserOnProcessNodes(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts a PostgreSQL and node processes")
	}
	const password = "s3cret-Pa55"
	p := servertest.Postgres.Own(t)
	dsn := servertest.PostgresUser(t, p, "shopkeeper", password, "shop")
	for _, mode := range []string{"inproc", "process"} {
		t.Run(mode, func(t *testing.T) {
			code, out, errOut := lockbench(t, "--impl=pg-for-update,pg-advisory-xact", "--pg-dsn="+dsn, "--node-mode="+mode,
				"--clients=60", "--stock=40", "--ramp=200ms", "--faults=latency:delay=2ms:jitter=1ms")
			if code != 0 {
				t.Fatalf("exit %d: %s\n%s", code, errOut, out)
			}
			if !strings.Contains(out, "40/40") {
				t.Errorf("every unit sold? want 40/40 in the summary:\n%s", out)
			}
			if strings.Contains(out+errOut, password) {
				t.Errorf("the password is in the output:\n%s\n%s", out, errOut)
			}
		})
	}
}
