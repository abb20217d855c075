package servers_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/lockbench/lockbench/internal/servertest"
	"github.com/lockbench/lockbench/servers"
)

func pgConnect(t *testing.T, p *servers.Postgres) *pgx.Conn {
	t.Helper()
	c, err := pgx.Connect(t.Context(), p.DSN())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

func TestPostgres(t *testing.T) {
	p := servertest.Postgres.Own(t)
	if !strings.HasPrefix(p.Addr(), "127.0.0.1:") {
		t.Errorf("server on %s, not on loopback", p.Addr())
	}
	if !strings.HasPrefix(p.Version(), "15") {
		t.Errorf("version %q, want Debian's 15", p.Version())
	}
	c := pgConnect(t, p)
	if _, err := c.Exec(t.Context(), "CREATE TABLE t (v int); INSERT INTO t VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	// A session-level advisory lock, to see it go with the restart.
	if _, err := c.Exec(t.Context(), "SELECT pg_advisory_lock(7)"); err != nil {
		t.Fatal(err)
	}

	// Paused: a statement waits and fails at its deadline, then the
	// server answers again.
	resume, err := servers.HoldPostgres(p)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
	_, err = c.Exec(ctx, "SELECT 1")
	cancel()
	resume()
	if err == nil {
		t.Fatal("a paused server answered")
	}

	// Restarted: the session and its lock are gone, the committed row is
	// kept.
	if err := p.Restart(t.Context()); err != nil {
		t.Fatalf("Restart: %v", err)
	}
	if err := c.Ping(t.Context()); err == nil {
		t.Error("the session survived a crash of the server")
	}
	c2 := pgConnect(t, p)
	var v int
	if err := c2.QueryRow(t.Context(), "SELECT v FROM t").Scan(&v); err != nil || v != 1 {
		t.Errorf("after the restart t holds %d (%v), want the committed 1", v, err)
	}
	var got bool
	if err := c2.QueryRow(t.Context(), "SELECT pg_try_advisory_lock(7)").Scan(&got); err != nil || !got {
		t.Errorf("advisory lock 7 after the restart: %v, %v; want free", got, err)
	}
}

func TestDialPostgres(t *testing.T) {
	p := servertest.Postgres.Start(t)
	d, err := servers.DialPostgres(t.Context(), p.DSN())
	if err != nil {
		t.Fatalf("DialPostgres: %v", err)
	}
	if d.Version() != p.Version() || d.Addr() != p.Addr() {
		t.Errorf("dialed %s %s, started %s %s", d.Addr(), d.Version(), p.Addr(), p.Version())
	}
	if err := d.Pause(t.Context(), time.Millisecond); !errors.Is(err, servers.ErrPostgresNotStarted) {
		t.Errorf("Pause of a dialed server: %v, want ErrPostgresNotStarted", err)
	}
	if err := d.Restart(t.Context()); !errors.Is(err, servers.ErrPostgresNotStarted) {
		t.Errorf("Restart of a dialed server: %v, want ErrPostgresNotStarted", err)
	}
	if err := d.Close(); err != nil {
		t.Errorf("Close of a dialed server: %v", err)
	}
	if _, err := servers.DialPostgres(t.Context(), p.DSN()); err != nil {
		t.Errorf("the server no longer answers after a dialed handle's Close: %v", err)
	}
}

func TestParsePostgresDSN(t *testing.T) {
	tests := []struct {
		dsn, want string
	}{
		{dsn: "postgres://u@127.0.0.1:5433/db", want: "127.0.0.1:5433"},
		{dsn: "host=db.example port=6000 user=u", want: "db.example:6000"},
		{dsn: "postgres://u@h/db", want: "h:5432"},
		{dsn: "host=/var/run/postgresql"},
		{dsn: "postgres://u@h:notaport/db"},
		{dsn: "not a dsn"},
		{dsn: "postgres://u@h/" + strings.Repeat("x", 5000)},
	}
	for _, tt := range tests {
		t.Run(tt.dsn[:min(len(tt.dsn), 40)], func(t *testing.T) {
			got, err := servers.ParsePostgresDSN(tt.dsn)
			if tt.want == "" {
				if !errors.Is(err, servers.ErrPostgresDSN) {
					t.Errorf("ParsePostgresDSN(%q) = %q, %v; want ErrPostgresDSN", tt.dsn, got, err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("ParsePostgresDSN(%q) = %q, %v; want %q", tt.dsn, got, err, tt.want)
			}
		})
	}
}

func TestRedactPostgresDSN(t *testing.T) {
	tests := []struct{ in, want string }{
		{"postgres://u:secret@h:5432/db", "postgres://u:PASSWORD@h:5432/db"},
		{"postgres://u@h/db", "postgres://u@h/db"},
		{"host=h user=u password=secret dbname=db", "host=h user=u password=PASSWORD dbname=db"},
		{"host=h password='a b' user=u", "host=h password=PASSWORD user=u"},
	}
	for _, tt := range tests {
		if got := servers.RedactPostgresDSN(tt.in); got != tt.want {
			t.Errorf("RedactPostgresDSN(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestPostgresSpecAt: the spec a node rebuilds a user's PostgreSQL from
// keeps the DSN whole (user, password, database, options) with the
// fault proxy's address in place of the server's, whichever form the DSN
// takes; an address that is no host:port is refused.
func TestPostgresSpecAt(t *testing.T) {
	info, _ := servers.Lookup(servers.KindPostgres)
	tests := []struct {
		name, dsn, at string
		bad           bool
	}{
		{name: "url", dsn: "postgres://shop:s3cret@db.example:6000/orders?sslmode=disable&application_name=lb", at: "127.0.0.1:41000"},
		{name: "url with several hosts", dsn: "postgresql://shop:s3cret@a:1,b:2/orders?sslmode=disable&application_name=lb", at: "127.0.0.1:41000"},
		{name: "url with a host parameter", dsn: "postgres://shop:s3cret@/orders?host=db.example&port=6000&sslmode=disable&application_name=lb", at: "127.0.0.1:41000"},
		{name: "key=value", dsn: "host=db.example port=6000 user=shop password='s3cret' dbname=orders sslmode=disable application_name=lb", at: "127.0.0.1:41000"},
		{name: "not an address", dsn: "postgres://shop:s3cret@db.example:6000/orders", at: "nowhere", bad: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, err := info.Node(tt.dsn)
			if err != nil {
				t.Fatalf("Node(%s): %v", servers.RedactPostgresDSN(tt.dsn), err)
			}
			spec, err := srv.(servers.Routable).SpecAt([]string{tt.at})
			if tt.bad {
				if !errors.Is(err, servers.ErrBadAddress) {
					t.Errorf("SpecAt(%q) = %v, want ErrBadAddress", tt.at, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			cfg, err := pgx.ParseConfig(spec)
			if err != nil {
				t.Fatalf("the spec does not parse: %v", err)
			}
			got := fmt.Sprintf("%s:%d %s/%s@%s %s fallbacks=%d", cfg.Host, cfg.Port, cfg.User, cfg.Password, cfg.Database, cfg.RuntimeParams["application_name"], len(cfg.Fallbacks))
			if want := tt.at + " shop/s3cret@orders lb fallbacks=0"; got != want {
				t.Errorf("SpecAt gives %s, want %s", got, want)
			}
			if again, err := info.Node(spec); err != nil || again.(servers.Addressed).Addrs()[0] != tt.at {
				t.Errorf("a node rebuilds the server from the spec at %v (%v), want %s", again, err, tt.at)
			}
		})
	}
}
