package cli

import (
	"cmp"
	"os"

	"github.com/lockbench/lockbench/containers"
	"github.com/spf13/pflag"
)

// dockerFlags adds the images of the servers --backend=docker starts
// besides Redis.
func dockerFlags(fs *pflag.FlagSet, o *runOpts) {
	fs.StringVar(&o.zkImage, "zk-image", cmp.Or(os.Getenv(containers.ZooKeeperImageEnv), containers.ZooKeeperImage), "ZooKeeper image of --backend=docker for the zookeeper implementations when --zk is not given (default $"+containers.ZooKeeperImageEnv+", else the official "+containers.ZooKeeperImage+"); scripts/docker-images.sh builds lockbench/zookeeper:local")
	fs.StringVar(&o.mysqlImage, "mysql-image", cmp.Or(os.Getenv(containers.MySQLImageEnv), containers.MySQLImage), "MySQL/MariaDB image of --backend=docker for the mysql implementations when --mysql-dsn is not given (default $"+containers.MySQLImageEnv+", else the official "+containers.MySQLImage+"); scripts/docker-images.sh builds lockbench/mariadb:local")
	fs.StringVar(&o.etcdImage, "etcd-image", cmp.Or(os.Getenv(containers.EtcdImageEnv), containers.EtcdImage), "etcd image of --backend=docker for the etcd implementations when --etcd is not given: three members, a container each (default $"+containers.EtcdImageEnv+", else etcd's own "+containers.EtcdImage+"); scripts/docker-images.sh builds lockbench/etcd:local")
	fs.StringVar(&o.pgImage, "pg-image", cmp.Or(os.Getenv(containers.PostgresImageEnv), containers.PostgresImage), "PostgreSQL image of --backend=docker for the pg implementations when --pg-dsn is not given (default $"+containers.PostgresImageEnv+", else the official "+containers.PostgresImage+"); scripts/docker-images.sh builds lockbench/postgres:local")
}

// resolveImages checks the images of the servers besides Redis against
// --backend.
func (o *runOpts) resolveImages(fs *pflag.FlagSet) error {
	images := []struct{ flag, image string }{
		{"zk-image", o.zkImage}, {"mysql-image", o.mysqlImage}, {"etcd-image", o.etcdImage}, {"pg-image", o.pgImage},
	}
	for _, im := range images {
		if fs.Changed(im.flag) && o.backendKind != backendDocker {
			return usageErr("--%s applies to --backend=docker", im.flag)
		}
		if o.backendKind == backendDocker && im.image == "" {
			return usageErr("--%s must not be empty", im.flag)
		}
	}
	return nil
}
