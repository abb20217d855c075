package cli

import (
	"database/sql"
	"slices"
	"strings"
	"testing"

	"github.com/go-sql-driver/mysql"
	"github.com/lockbench/lockbench/internal/mysqltest"
	"github.com/lockbench/lockbench/reports"
	"github.com/lockbench/lockbench/servers"
)

// TestMySQLNeedsDSN: a MySQL implementation named without a server is a
// usage error that says what to give; never a silent skip.
func TestMySQLNeedsDSN(t *testing.T) {
	t.Setenv(kindEnv(servers.KindMySQL), "")
	for _, args := range [][]string{
		{"--impl=mysql"},
		{"--impl=atomic,mysql-for-update"},
		{"matrix", "--impl=mysql-version"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			code, _, errOut := lockbench(t, args...)
			if code != exitUsage || !strings.Contains(errOut, "--mysql-dsn") {
				t.Errorf("exit %d, message %q; want %d naming --mysql-dsn", code, errOut, exitUsage)
			}
		})
	}
}

// TestMySQLRun runs the three implementations through the CLI against a
// real MariaDB: every sale passes, the result names the server and its
// version, and the tool's database is gone afterwards.
func TestMySQLRun(t *testing.T) {
	srv := mysqltest.Start(t)
	code, res := runJSON(t, "--impl=mysql,mysql-for-update,mysql-version", "--clients=200", "--stock=120", "--ramp=200ms",
		"--workers=20", "--mysql-dsn="+srv.DSN)
	if code != 0 {
		t.Fatalf("exit %d, want 0", code)
	}
	if !strings.HasPrefix(res.Config.MySQL, "MariaDB 10") && !strings.HasPrefix(res.Config.MySQL, "MariaDB 1") {
		t.Errorf("result names MySQL %q, want the MariaDB server and its version", res.Config.MySQL)
	}
	for _, r := range res.Runs {
		if r.Verdict != reports.Pass || r.Sold != 120 || r.Backend != res.Config.MySQL {
			t.Errorf("%s: verdict %s, sold %d, backend %q; want pass, 120, %q", r.Impl, r.Verdict, r.Sold, r.Backend, res.Config.MySQL)
		}
	}
	db, err := sql.Open("mysql", srv.DSN)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRowContext(t.Context(), "SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = ?", servers.DefaultMySQLDatabase).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("database %s left behind", servers.DefaultMySQLDatabase)
	}

	code, out, errOut := lockbench(t, "--impl=mysql", "--clients=20", "--stock=10", "--mysql-dsn="+srv.DSN)
	if code != 0 || !strings.Contains(out, "mysql: MariaDB") {
		t.Errorf("exit %d, summary does not name the MySQL server:\n%s%s", code, out, errOut)
	}
	// A MySQL-only run opens no Redis, and names none.
	if strings.Contains(out, "backend:") || strings.Contains(out, "miniredis") || res.Config.Backend != "" {
		t.Errorf("a MySQL-only run names a Redis (config backend %q):\n%s", res.Config.Backend, out)
	}
	// The reproduce line runs as printed (the shell's quotes aside).
	_, line, _ := strings.Cut(out, "reproduce: ")
	args := strings.Fields(strings.ReplaceAll(line, "'", ""))
	if len(args) < 2 || args[0] != "lockbench" || !slices.Contains(args, "--mysql-dsn="+srv.DSN) {
		t.Fatalf("reproduce line %q lacks --mysql-dsn", line)
	}
	if code, _, errOut := lockbench(t, args[1:]...); code != 0 {
		t.Errorf("the reproduce line %q: exit %d: %s", line, code, errOut)
	}
	for _, fault := range []string{"server-pause", "restart", "partition", "latency"} {
		code, _, errOut = lockbench(t, "--impl=mysql", "--faults="+fault, "--mysql-dsn="+srv.DSN)
		if code != exitUsage || !strings.Contains(errOut, fault) {
			t.Errorf("%s on a MySQL reached by DSN: exit %d, %q; want %d", fault, code, errOut, exitUsage)
		}
	}
}

// TestMySQLForce: lockbench's tables left in the database (by a run that
// was killed) stop the next run with exit 2 and a pointer to --force;
// with --force the tables are dropped and the sale runs.
func TestMySQLForce(t *testing.T) {
	cfg, err := mysql.ParseDSN(mysqltest.Start(t).DSN)
	if err != nil {
		t.Fatal(err)
	}
	mysqltest.Start(t).Dial(t, "lockbench_force") // the database, dropped after the test
	cfg.DBName = "lockbench_force"
	dsn := cfg.FormatDSN()
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.ExecContext(t.Context(), "CREATE TABLE lockbench_inventory (id INT)"); err != nil {
		t.Fatal(err)
	}
	sale := []string{"--impl=mysql", "--clients=20", "--stock=10", "--mysql-dsn=" + dsn}
	code, _, errOut := lockbench(t, sale...)
	if code != exitUsage || !strings.Contains(errOut, "--force") {
		t.Fatalf("tables in use: exit %d, %q; want %d naming --force", code, errOut, exitUsage)
	}
	code, res := runJSON(t, append(sale, "--force")...)
	if code != exitPass || res.Runs[0].Sold != 10 {
		t.Errorf("--force: exit %d, runs %+v; want a pass selling 10", code, res.Runs)
	}
}

// TestSecretArgs: a reproduce line carries --mysql-dsn when a MySQL
// implementation runs and the DSN did not come from the environment, and
// never prints a password.
func TestSecretArgs(t *testing.T) {
	t.Setenv(kindEnv(servers.KindMySQL), "env:secret@tcp(127.0.0.1:3306)/lockbench")
	tests := []struct {
		dsn       string
		wantMySQL bool
		want      string
	}{
		{"root@tcp(127.0.0.1:3306)/", true, "root@tcp(127.0.0.1:3306)/"},
		{"lb:secret@tcp(127.0.0.1:3306)/lockbench", true, "lb:PASSWORD@tcp(127.0.0.1:3306)/lockbench"},
		{"lb:secret@tcp(127.0.0.1:3306)/lockbench", false, ""},
		{"env:secret@tcp(127.0.0.1:3306)/lockbench", true, ""},
		{"", true, ""},
	}
	for _, tt := range tests {
		dsn := tt.dsn
		o := runOpts{addrs: map[servers.Kind]*string{servers.KindMySQL: &dsn}}
		needs := servers.Needs{servers.KindRedis}
		if tt.wantMySQL {
			needs = servers.Needs{servers.KindMySQL}
		}
		var got string
		if args := o.secretArgs(needs); len(args) == 1 && args[0][0] == "mysql-dsn" {
			got = args[0][1]
		} else if len(args) > 0 {
			t.Errorf("secretArgs(%q, MySQL %v) = %q, want at most --mysql-dsn", tt.dsn, tt.wantMySQL, args)
		}
		if got != tt.want {
			t.Errorf("secretArgs(%q, MySQL %v) = %q, want %q", tt.dsn, tt.wantMySQL, got, tt.want)
		}
	}
}
