package main

import (
	"cmp"
	"context"
	"os"

	"github.com/lockbench/lockbench/containers"
	"github.com/lockbench/lockbench/workload"
	"github.com/spf13/pflag"
)

// dockerFlags adds the images of the servers --backend=docker starts
// besides Redis.
func dockerFlags(fs *pflag.FlagSet, o *runOpts) {
	fs.StringVar(&o.zkImage, "zk-image", cmp.Or(os.Getenv(containers.ZooKeeperImageEnv), containers.ZooKeeperImage), "ZooKeeper image of --backend=docker for the zookeeper implementations when --zk is not given (default $"+containers.ZooKeeperImageEnv+", else the official "+containers.ZooKeeperImage+"); scripts/docker-images.sh builds lockbench/zookeeper:local")
	fs.StringVar(&o.mysqlImage, "mysql-image", cmp.Or(os.Getenv(containers.MySQLImageEnv), containers.MySQLImage), "MySQL/MariaDB image of --backend=docker for the mysql implementations when --mysql-dsn is not given (default $"+containers.MySQLImageEnv+", else the official "+containers.MySQLImage+"); scripts/docker-images.sh builds lockbench/mariadb:local")
}

// resolveImages checks --zk-image and --mysql-image against --backend.
func (o *runOpts) resolveImages(fs *pflag.FlagSet) error {
	for _, name := range []string{"zk-image", "mysql-image"} {
		if fs.Changed(name) && o.backendKind != backendDocker {
			return usageErr("--%s applies to --backend=docker", name)
		}
	}
	if o.backendKind == backendDocker && (o.zkImage == "" || o.mysqlImage == "") {
		return usageErr("--zk-image and --mysql-image must not be empty")
	}
	return nil
}

// dockerServers starts, on --backend=docker, the ZooKeeper and the MySQL
// that the implementations to run need and that --zk and --mysql-dsn do
// not give, and reaches them as start reaches external ones (o.zkServer,
// o.mysql). stop removes what it started, the MySQL database first; on an
// error nothing is left running.
func (o *runOpts) dockerServers(ctx context.Context) (stop func(), err error) {
	var undo []func()
	stop = func() {
		for i := len(undo) - 1; i >= 0; i-- {
			undo[i]()
		}
	}
	if o.backendKind != backendDocker {
		return stop, nil
	}
	fail := func(err error) (func(), error) {
		stop()
		return nil, infraErr(ctx, err)
	}
	if o.wantZK && o.zk == "" {
		z, err := containers.StartZooKeeper(ctx, o.zkImage)
		if err != nil {
			return fail(err)
		}
		undo = append(undo, func() { z.Close() })
		o.zkContainer = z
		o.zkServer = &workload.ZooKeeper{Addr: z.Addr(), Version: z.Version()}
	}
	if o.wantMySQL && o.mysqlDSN == "" {
		m, err := containers.StartMySQL(ctx, o.mysqlImage)
		if err != nil {
			return fail(err)
		}
		undo = append(undo, func() { m.Close() })
		o.mysqlContainer = m
		if o.mysql, err = workload.DialMySQL(ctx, m.DSN()); err != nil {
			return fail(err)
		}
		undo = append(undo, func() { o.mysql.Close() })
	}
	return stop, nil
}

// mysqlName names the run's MySQL for the summary and the report, with
// its container's image when lockbench started it.
func (o *runOpts) mysqlName() string {
	switch {
	case o.mysql == nil:
		return ""
	case o.mysqlContainer != nil:
		return o.mysql.Name() + " in docker (" + o.mysqlContainer.Image() + ")"
	}
	return o.mysql.Name()
}
