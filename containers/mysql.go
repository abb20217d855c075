package containers

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/lockbench/lockbench/internal/loopback"
	"github.com/lockbench/lockbench/servers"
	"github.com/testcontainers/testcontainers-go"
)

// MySQLImage is the image StartMySQL runs when given none: the official
// MariaDB 11 image. MariaDB rather than mysql:8 because it is what Debian
// ships (mariadb-server), so that the local image scripts/docker-images.sh
// builds and the official one run the same server.
const MySQLImage = "mariadb:11"

// MySQLImageEnv names the environment variable that overrides MySQLImage
// (--mysql-image's default), for machines that cannot pull it.
const MySQLImageEnv = "LOCKBENCH_MYSQL_IMAGE"

// mysqlStartTimeout bounds the start until the server answers: the
// official image initialises its data directory on first start.
const mysqlStartTimeout = 90 * time.Second

// MySQL is a MariaDB (or MySQL) server in a Docker container that
// lockbench started, listening on 127.0.0.1 with the host's network. It
// is the servers.Host of the server lockbench dials at its DSN: it says
// where that runs, and pauses it (docker pause), for the server-pause
// fault of the SQL sales.
type MySQL struct {
	image   string
	addr    string
	dsn     string
	version string
	ctr     *testcontainers.DockerContainer
	frozen  freezer // docker pause, with the Docker client
}

// StartMySQL starts image (MySQLImage when empty) with host networking and
// the server on a free 127.0.0.1 port, root without a password (the
// official image is told MARIADB_ALLOW_EMPTY_ROOT_PASSWORD; the local
// image's data directory has no password), no binary log and small
// buffers, and returns once it answers a query. The arguments go to the
// server: the official image's entrypoint passes arguments that start
// with "-" on to mariadbd, the local image's entrypoint is mariadbd. As
// StartRedis, it leaves nothing running on an error and does not let a
// cancelled ctx interrupt a start.
func StartMySQL(ctx context.Context, image string) (*MySQL, error) {
	if image == "" {
		image = MySQLImage
	}
	cli, err := client(ctx)
	if err != nil {
		return nil, err
	}
	m, err := loopback.Retry(ctx, errExited, func(port int, addr string) (*MySQL, error) {
		return startMySQL(ctx, image, port, addr)
	})
	if err != nil {
		cli.Close()
		return nil, err
	}
	m.frozen.cli, m.frozen.id = cli, m.ContainerID()
	return m, nil
}

func startMySQL(ctx context.Context, image string, port int, addr string) (*MySQL, error) {
	cfg := mysql.NewConfig()
	cfg.User, cfg.Net, cfg.Addr = "root", "tcp", addr
	cfg.Timeout = 2 * time.Second
	dsn := cfg.FormatDSN()
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrDocker, err)
	}
	defer db.Close()
	m := &MySQL{image: image, addr: addr, dsn: dsn}
	m.ctr, err = runServer(ctx, server{
		kind:  "mysql",
		image: image,
		flag:  "--mysql-image",
		local: "lockbench/mariadb:local",
		cmd: []string{
			"--port=" + strconv.Itoa(port), "--bind-address=127.0.0.1",
			"--skip-name-resolve", "--skip-log-bin", "--innodb-buffer-pool-size=32M",
			"--innodb-log-file-size=16M", "--innodb-flush-log-at-trx-commit=2", "--max-connections=1000",
		},
		env: map[string]string{"MARIADB_ALLOW_EMPTY_ROOT_PASSWORD": "1"},
		ready: func(ctx context.Context) error {
			return db.QueryRowContext(ctx, "SELECT VERSION()").Scan(&m.version)
		},
		timeout: mysqlStartTimeout,
	})
	if err != nil {
		return nil, err
	}
	return m, nil
}

// DSN reaches the server as root, with no database named: lockbench's
// servers.DialMySQL then creates its own and drops it after.
func (m *MySQL) DSN() string { return m.dsn }

// Addr is the server's address on the host's loopback.
func (m *MySQL) Addr() string { return m.addr }

// Version is the server's SELECT VERSION().
func (m *MySQL) Version() string { return m.version }

// Name says what the server is, for the summary and the report.
func (m *MySQL) Name() string {
	flavor := "MySQL"
	if strings.Contains(strings.ToLower(m.version), "mariadb") {
		flavor = "MariaDB"
	}
	return fmt.Sprintf("%s %s in docker (%s)", flavor, m.version, m.image)
}

// ContainerID is the Docker ID of the server's container.
func (m *MySQL) ContainerID() string { return m.ctr.GetContainerID() }

// Where implements servers.Host: the server runs in docker, in its
// image.
func (m *MySQL) Where() string { return "in docker (" + m.image + ")" }

// Pause implements servers.Pauser with docker pause, as Redis's does.
func (m *MySQL) Pause(ctx context.Context, d time.Duration) error {
	return m.frozen.pause(ctx, d)
}

// Close thaws the container if paused, then stops and removes it.
func (m *MySQL) Close() error {
	m.frozen.end()
	err := closeServer(m.ctr)
	m.frozen.cli.Close()
	return err
}

// Image is the image the server runs.
func (m *MySQL) Image() string { return m.image }

// Interface checks.
var _ servers.Host = (*MySQL)(nil)
