package containers_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/lockbench/lockbench/containers"
	"github.com/lockbench/lockbench/internal/dockertest"
	"github.com/lockbench/lockbench/internal/servertest"
	"github.com/lockbench/lockbench/servers"
)

// longPause is how long the levers' pauses last in these tests: far
// longer than the checks made while they last, so that no stall of a
// busy machine can end one before its check; Close waits for its end.
const longPause = 20 * time.Second

// TestEtcd starts etcd's three members in containers: they serve on
// loopback with a leader and say where they run; a paused leader answers
// nobody while the others elect a leader and take writes; a restarted
// member keeps what was committed; Close leaves no container.
func TestEtcd(t *testing.T) {
	image := dockertest.EtcdImage(t)
	ctx := t.Context()
	e, err := containers.StartEtcd(ctx, image)
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	t.Cleanup(func() {
		if !closed {
			e.Close()
		}
	})
	if got := len(e.Endpoints()); got != servers.EtcdMembers {
		t.Fatalf("%d endpoints, want %d", got, servers.EtcdMembers)
	}
	for _, ep := range e.Endpoints() {
		if !strings.HasPrefix(ep, "127.0.0.1:") {
			t.Errorf("endpoint %q, want loopback", ep)
		}
	}
	if got, want := e.Name(), "in docker ("+image+")"; !strings.HasPrefix(got, "etcd cluster of 3 members") || !strings.HasSuffix(got, want) {
		t.Errorf("Name() = %q, want an etcd cluster of 3 members ... %q", got, want)
	}
	if e.Version() == "" {
		t.Error("no version")
	}
	c := servertest.EtcdClient(t, e.Endpoints()...)
	servertest.EtcdPut(t, c, "/lockbench-test/a", "1")

	// Restart the leader: it serves again, with what was committed.
	leader, err := e.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.RestartMember(ctx, leader); err != nil {
		t.Fatalf("restart of member %d: %v", leader, err)
	}
	if err := servers.EtcdServes(ctx, e.Endpoints()[leader]); err != nil {
		t.Errorf("member %d after its restart: %v", leader, err)
	}
	one := servertest.EtcdClient(t, e.Endpoints()[leader])
	if got := servertest.EtcdGet(t, one, "/lockbench-test/a"); got != "1" {
		t.Errorf("after the restart member %d has a=%q, want 1", leader, got)
	}

	// Pause the leader: it answers nothing, the others serve writes.
	leader, err = e.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Pause(ctx, longPause); err != nil {
		t.Fatal(err)
	}
	sctx, cancel := context.WithTimeout(ctx, time.Second)
	_, err = c.Status(sctx, e.Endpoints()[leader])
	cancel()
	if err == nil {
		t.Errorf("the paused leader %d answered a status request", leader)
	}
	other := servertest.EtcdClient(t, e.Endpoints()[(leader+1)%servers.EtcdMembers])
	servertest.EtcdPut(t, other, "/lockbench-test/b", "2")

	closed = true
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if ids := dockertest.Leftovers(t, os.Getpid()); len(ids) > 0 {
		t.Errorf("containers left after Close: %v", ids)
	}
}

// TestPostgres starts PostgreSQL in a container: it answers on loopback
// as postgres, says where it runs, takes a table; paused, it answers
// nothing; restarted (a crash), it keeps what was committed; Close
// leaves no container.
func TestPostgres(t *testing.T) {
	image := dockertest.PostgresImage(t)
	ctx := t.Context()
	p, err := containers.StartPostgres(ctx, image)
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	t.Cleanup(func() {
		if !closed {
			p.Close()
		}
	})
	if !strings.HasPrefix(p.Addr(), "127.0.0.1:") {
		t.Errorf("Addr() = %q, want loopback", p.Addr())
	}
	if got, want := p.Name(), "in docker ("+image+")"; !strings.HasPrefix(got, "PostgreSQL 15") || !strings.HasSuffix(got, want) {
		t.Errorf("Name() = %q, want PostgreSQL 15... %q", got, want)
	}
	exec(t, p.DSN(), "CREATE TABLE s (id INT PRIMARY KEY, stock INT)", "INSERT INTO s VALUES (1, 5)")

	if err := p.Restart(ctx); err != nil {
		t.Fatalf("restart: %v", err)
	}
	if got := stock(t, p.DSN()); got != 5 {
		t.Errorf("stock %d after the restart, want 5", got)
	}

	if err := p.Pause(ctx, longPause); err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithTimeout(ctx, time.Second)
	if c, err := pgx.Connect(cctx, p.DSN()); err == nil {
		c.Close(ctx)
		t.Error("the paused server took a connection")
	}
	cancel()

	closed = true
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if ids := dockertest.Leftovers(t, os.Getpid()); len(ids) > 0 {
		t.Errorf("containers left after Close: %v", ids)
	}
}

// exec runs each statement on the server at dsn.
func exec(t *testing.T, dsn string, stmts ...string) {
	t.Helper()
	c, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	for _, q := range stmts {
		if _, err := c.Exec(t.Context(), q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

// stock reads the row exec wrote.
func stock(t *testing.T, dsn string) int {
	t.Helper()
	c, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	var n int
	if err := c.QueryRow(t.Context(), "SELECT stock FROM s WHERE id = 1").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
