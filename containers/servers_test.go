package containers_test

import (
	"database/sql"
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"
	"github.com/go-zookeeper/zk"
	"github.com/lockbench/lockbench/containers"
	"github.com/lockbench/lockbench/internal/dockertest"
)

// TestZooKeeper starts ZooKeeper in a container: it answers on loopback
// with its version, grants a session as short as a second (the lease of
// the faults), and Close leaves no container.
func TestZooKeeper(t *testing.T) {
	image := dockertest.ZooKeeperImage(t)
	z, err := containers.StartZooKeeper(t.Context(), image)
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	t.Cleanup(func() {
		if !closed {
			z.Close()
		}
	})
	if !strings.HasPrefix(z.Addr(), "127.0.0.1:") {
		t.Errorf("Addr() = %q, want loopback", z.Addr())
	}
	if got, want := z.Name(), "in docker ("+image+")"; !strings.HasPrefix(got, "zookeeper 3.") || !strings.HasSuffix(got, want) {
		t.Errorf("Name() = %q, want zookeeper 3.x ... %q", got, want)
	}

	// The server took lockbench's zoo.cfg: short ticks, sessions from 200 ms.
	conf := fourLetter(t, z.Addr(), "conf")
	for _, want := range []string{"tickTime=100", "minSessionTimeout=200"} {
		if !strings.Contains(conf, want) {
			t.Errorf("conf lacks %s:\n%s", want, conf)
		}
	}
	c, _, err := zk.Connect([]string{z.Addr()}, time.Second, zk.WithLogInfo(false), zk.WithLogger(nopLog{}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Create("/lockbench-test", []byte("x"), zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}

	closed = true
	if err := z.Close(); err != nil {
		t.Fatal(err)
	}
	if ids := dockertest.Leftovers(t, os.Getpid()); len(ids) > 0 {
		t.Errorf("containers left after Close: %v", ids)
	}
}

// TestMySQL starts MariaDB in a container: its DSN reaches it as root on
// loopback, it takes a table, and Close leaves no container.
func TestMySQL(t *testing.T) {
	image := dockertest.MySQLImage(t)
	ctx := t.Context()
	m, err := containers.StartMySQL(ctx, image)
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	t.Cleanup(func() {
		if !closed {
			m.Close()
		}
	})
	if !strings.HasPrefix(m.Addr(), "127.0.0.1:") || !strings.Contains(m.DSN(), "tcp("+m.Addr()+")") {
		t.Errorf("Addr() = %q, DSN() = %q, want loopback", m.Addr(), m.DSN())
	}
	if got, want := m.Name(), "in docker ("+image+")"; !strings.HasPrefix(got, "MariaDB ") || !strings.HasSuffix(got, want) {
		t.Errorf("Name() = %q, want MariaDB ... %q", got, want)
	}
	db, err := sql.Open("mysql", m.DSN())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range []string{"CREATE DATABASE t", "CREATE TABLE t.s (id INT PRIMARY KEY, stock INT)", "INSERT INTO t.s VALUES (1, 5)"} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	var stock int
	if err := db.QueryRowContext(ctx, "SELECT stock FROM t.s WHERE id = 1").Scan(&stock); err != nil || stock != 5 {
		t.Errorf("stock %d, %v; want 5", stock, err)
	}
	db.Close()

	closed = true
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if ids := dockertest.Leftovers(t, os.Getpid()); len(ids) > 0 {
		t.Errorf("containers left after Close: %v", ids)
	}
}

// TestMissingServerImages: a missing ZooKeeper, MySQL, etcd or PostgreSQL image is an error
// that names the flag and the local image to build, and leaves nothing.
func TestMissingServerImages(t *testing.T) {
	dockertest.RedisImage(t)
	tests := []struct {
		name  string
		start func() error
		want  string
	}{
		{"zookeeper", func() error {
			_, err := containers.StartZooKeeper(t.Context(), "lockbench/no-such-image:local")
			return err
		}, "--zk-image=lockbench/zookeeper:local"},
		{"mysql", func() error {
			_, err := containers.StartMySQL(t.Context(), "lockbench/no-such-image:local")
			return err
		}, "--mysql-image=lockbench/mariadb:local"},
		{"etcd", func() error {
			_, err := containers.StartEtcd(t.Context(), "lockbench/no-such-image:local")
			return err
		}, "--etcd-image=lockbench/etcd:local"},
		{"postgres", func() error {
			_, err := containers.StartPostgres(t.Context(), "lockbench/no-such-image:local")
			return err
		}, "--pg-image=lockbench/postgres:local"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.start()
			if !errors.Is(err, containers.ErrDocker) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("start of a missing image: %v, want ErrDocker naming %s", err, tt.want)
			}
		})
	}
	if ids := dockertest.Leftovers(t, os.Getpid()); len(ids) > 0 {
		t.Errorf("containers left: %v", ids)
	}
}

// nopLog keeps go-zookeeper's connection log out of the test output.
type nopLog struct{}

func (nopLog) Printf(string, ...any) {}

// fourLetter sends cmd to the ZooKeeper at addr and returns its answer.
func fourLetter(t *testing.T, addr, cmd string) string {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := io.WriteString(c, cmd); err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(c)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
