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
