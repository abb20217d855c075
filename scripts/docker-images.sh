#!/usr/bin/env bash
# Builds local images of the servers the docker backend starts, from the
# host's Debian packages, for machines that cannot pull from a registry:
#
#   lockbench/redis:local      Debian's redis-server (apt-get install redis-server)
#   lockbench/zookeeper:local  Debian's ZooKeeper jars and OpenJDK (apt-get install zookeeperd)
#   lockbench/mariadb:local    Debian's mariadbd (apt-get install mariadb-server)
#   lockbench/etcd:local       Debian's etcd (apt-get install etcd-server)
#   lockbench/postgres:local   Debian's PostgreSQL 15 (apt-get install postgresql)
#   lockbench/node:local       Debian's libc and its loader only: --node-mode=docker
#                              bind-mounts lockbench's own binary into it and runs
#                              that as the node (containers.NodeImage)
#
# Each image is FROM scratch: the binary and the libraries ldd lists for it,
# with the binary as the entrypoint, so that the backend's arguments go
# straight to it, as they do through the official image's entrypoint:
#
#   redis      --port, --bind, ... go to redis-server.
#   zookeeper  java -cp <the jars> ZooKeeperServerMain /conf/zoo.cfg; the
#              backend copies its zoo.cfg to /conf/zoo.cfg, where the
#              official image's entrypoint also takes it from.
#   mariadb    mariadbd with the image's paths (--datadir=/var/lib/mysql,
#              ...), then --port, --bind-address, ... as the official
#              image passes arguments that start with "-" on. Its data
#              directory is initialised here, at build time, with
#              mariadb-install-db: root without a password (the backend
#              starts the official image with MARIADB_ALLOW_EMPTY_ROOT_PASSWORD).
#   etcd       no entrypoint, etcd at /usr/local/bin/etcd and /var/lib/etcd
#              for its data, as in etcd's own image: the backend runs
#              /usr/local/bin/etcd with its flags in either.
#   postgres   postgres -D /var/lib/postgresql/data as the user postgres
#              (uid 65534: PostgreSQL refuses to run as root), then -p,
#              -h, -c ... as the official image passes arguments that
#              start with "-" on. Its data directory is initialised here,
#              at build time, with initdb: the user postgres trusted
#              without a password (the backend starts the official image
#              with POSTGRES_HOST_AUTH_METHOD=trust).
#
# Use them with --redis-image, --zk-image, --mysql-image, --etcd-image and
# --pg-image, or LOCKBENCH_REDIS_IMAGE, LOCKBENCH_ZK_IMAGE,
# LOCKBENCH_MYSQL_IMAGE, LOCKBENCH_ETCD_IMAGE and LOCKBENCH_PG_IMAGE; the
# node image is --node-image's default.
# An image whose label lockbench.source already names the host's package
# versions is kept, so that a second run takes a second; FORCE=1 rebuilds.
# Needs a running dockerd (scripts/dockerd.sh).
set -euo pipefail

# libs ROOTFS FILE...: copies every library ldd resolves for FILEs, and the
# dynamic loader, into ROOTFS at their paths.
libs() {
  local root=$1
  shift
  ldd "$@" 2>/dev/null | awk '/=> \// { print $3 } /^\t\// { print $1 }' | sort -u | while read -r lib; do
    cp -L --parents "$lib" "$root/"
  done
}

# fresh NAME SOURCE: true when NAME exists, built from SOURCE.
fresh() {
  [ "${FORCE:-}" != 1 ] &&
    [ "$(docker image inspect -f '{{ index .Config.Labels "lockbench.source" }}' "$1" 2>/dev/null)" = "$2" ]
}

# build NAME SOURCE DIR: builds NAME from DIR (a Dockerfile and rootfs/).
build() {
  local name=$1 source=$2 dir=$3 out
  echo "LABEL lockbench.source=\"$source\"" >>"$dir/Dockerfile"
  if ! out=$(docker build -q -t "$name" "$dir" 2>&1); then
    echo "$out" >&2
    return 1
  fi
  echo "built $name from $source"
}

redis_image() {
  local name=lockbench/redis:local bin source dir
  command -v redis-server >/dev/null 2>&1 || { echo "redis-server not found: apt-get install redis-server" >&2; return 1; }
  bin=$(command -v redis-server)
  source=$("$bin" --version | head -1)
  if fresh "$name" "$source"; then
    echo "kept $name ($source)"
    return
  fi
  dir=$(mktemp -d)
  trap 'rm -rf "$dir"' RETURN
  mkdir -p "$dir/rootfs/tmp" "$dir/rootfs/data"
  chmod 1777 "$dir/rootfs/tmp"
  # The binary under its own name: Debian's redis-server is a symlink to
  # redis-check-rdb, and the program picks its role from argv[0].
  install -D -m 0755 "$(readlink -f "$bin")" "$dir/rootfs$bin"
  libs "$dir/rootfs" "$bin"
  cat >"$dir/Dockerfile" <<DOCKERFILE
FROM scratch
COPY rootfs/ /
WORKDIR /data
ENTRYPOINT ["$bin"]
DOCKERFILE
  build "$name" "$source" "$dir"
}

zookeeper_image() {
  local name=lockbench/zookeeper:local jar=/usr/share/java/zookeeper.jar java jvm source dir cp
  [ -f "$jar" ] || { echo "$jar not found: apt-get install zookeeperd" >&2; return 1; }
  java=$(readlink -f "$(command -v java)") || { echo "java not found: apt-get install zookeeperd" >&2; return 1; }
  jvm=${java%/bin/java}
  source="zookeeper $(dpkg-query -W -f '${Version}' zookeeper 2>/dev/null || echo unknown), $("$java" -version 2>&1 | head -1)"
  source=${source//\"/}
  if fresh "$name" "$source"; then
    echo "kept $name ($source)"
    return
  fi
  dir=$(mktemp -d)
  trap 'rm -rf "$dir"' RETURN
  mkdir -p "$dir/rootfs/tmp" "$dir/rootfs/data" "$dir/rootfs/conf" "$dir/rootfs/usr/share/java" "$dir/rootfs$jvm"
  chmod 1777 "$dir/rootfs/tmp"
  # The JVM without what a headless server never loads: its symlinks
  # (conf/, security/cacerts into /etc) followed.
  (cd "$jvm" && tar -chf - --exclude=./legal --exclude=./man --exclude=./include \
    --exclude=./jmods --exclude=./lib/src.zip --exclude=./docs . 2>/dev/null) | tar -xf - -C "$dir/rootfs$jvm"
  libs "$dir/rootfs" "$jvm/bin/java" "$jvm/lib/server/libjvm.so" \
    "$jvm"/lib/lib{java,jli,jimage,net,nio,zip,verify,management,extnet}.so
  # The server jar, the jars its manifest's Class-Path names, and
  # slf4j-simple so that the server logs to the container's stderr.
  cp="$jar:/usr/share/java/slf4j-simple.jar"
  for j in $jar /usr/share/java/slf4j-simple.jar $(unzip -p "$jar" META-INF/MANIFEST.MF | tr -d '\r' |
    awk '/^Class-Path:/ { on = 1; sub(/^Class-Path: /, ""); printf "%s", $0; next }
         on && /^ / { sub(/^ /, ""); printf "%s", $0; next } { on = 0 }'); do
    [ -e "$j" ] && cp -L "$j" "$dir/rootfs/usr/share/java/"
  done
  cat >"$dir/Dockerfile" <<DOCKERFILE
FROM scratch
COPY rootfs/ /
WORKDIR /data
ENTRYPOINT ["$jvm/bin/java", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Dorg.slf4j.simpleLogger.logFile=System.err", "-cp", "$cp", "org.apache.zookeeper.server.ZooKeeperServerMain"]
CMD ["/conf/zoo.cfg"]
DOCKERFILE
  build "$name" "$source" "$dir"
}

mariadb_image() {
  local name=lockbench/mariadb:local bin install source dir out
  bin=$(command -v mariadbd || echo /usr/sbin/mariadbd)
  install=$(command -v mariadb-install-db || echo /usr/bin/mariadb-install-db)
  [ -x "$bin" ] && [ -x "$install" ] || { echo "mariadbd not found: apt-get install mariadb-server" >&2; return 1; }
  source=$("$bin" --version | head -1)
  if fresh "$name" "$source"; then
    echo "kept $name ($source)"
    return
  fi
  dir=$(mktemp -d)
  trap 'rm -rf "$dir"' RETURN
  mkdir -p "$dir/rootfs/tmp" "$dir/rootfs/var/lib/mysql" "$dir/rootfs/etc" "$dir/rootfs/usr/share"
  chmod 1777 "$dir/rootfs/tmp"
  install -D -m 0755 "$(readlink -f "$bin")" "$dir/rootfs$bin"
  libs "$dir/rootfs" "$bin"
  # errmsg.sys, charsets and the rest mariadbd reads at run time.
  cp -rL /usr/share/mysql "$dir/rootfs/usr/share/"
  echo "root:x:0:0:root:/root:/bin/false" >"$dir/rootfs/etc/passwd"
  echo "root:x:0:" >"$dir/rootfs/etc/group"
  # The data directory, initialised now: root@localhost and root@127.0.0.1
  # without a password, no test database.
  if ! out=$("$install" --no-defaults --datadir="$dir/rootfs/var/lib/mysql" --user="$(id -un)" \
    --auth-root-authentication-method=normal --skip-test-db --skip-name-resolve 2>&1); then
    echo "mariadb-install-db: $out" >&2
    return 1
  fi
  cat >"$dir/Dockerfile" <<DOCKERFILE
FROM scratch
COPY rootfs/ /
WORKDIR /var/lib/mysql
ENTRYPOINT ["$bin", "--no-defaults", "--user=root", "--datadir=/var/lib/mysql", "--basedir=/usr", "--lc-messages-dir=/usr/share/mysql", "--character-sets-dir=/usr/share/mysql/charsets", "--socket=/tmp/mysqld.sock", "--pid-file=/tmp/mysqld.pid", "--skip-name-resolve", "--skip-log-bin"]
DOCKERFILE
  build "$name" "$source" "$dir"
}

etcd_image() {
  local name=lockbench/etcd:local bin source dir
  bin=$(command -v etcd || echo /usr/bin/etcd)
  [ -x "$bin" ] || { echo "etcd not found: apt-get install etcd-server" >&2; return 1; }
  source="etcd-server $(dpkg-query -W -f '${Version}' etcd-server 2>/dev/null || "$bin" --version | head -1)"
  if fresh "$name" "$source"; then
    echo "kept $name ($source)"
    return
  fi
  dir=$(mktemp -d)
  trap 'rm -rf "$dir"' RETURN
  mkdir -p "$dir/rootfs/tmp" "$dir/rootfs/var/lib/etcd"
  chmod 1777 "$dir/rootfs/tmp"
  install -D -m 0755 "$(readlink -f "$bin")" "$dir/rootfs/usr/local/bin/etcd"
  libs "$dir/rootfs" "$bin"
  cat >"$dir/Dockerfile" <<DOCKERFILE
FROM scratch
COPY rootfs/ /
WORKDIR /var/lib/etcd
CMD ["/usr/local/bin/etcd"]
DOCKERFILE
  build "$name" "$source" "$dir"
}

postgres_image() {
  local name=lockbench/postgres:local bin=/usr/lib/postgresql/15 share=/usr/share/postgresql/15 source dir out
  [ -x "$bin/bin/postgres" ] && [ -x "$bin/bin/initdb" ] || { echo "$bin/bin/postgres not found: apt-get install postgresql" >&2; return 1; }
  source=$("$bin/bin/postgres" --version | head -1)
  if fresh "$name" "$source"; then
    echo "kept $name ($source)"
    return
  fi
  dir=$(mktemp -d)
  trap 'rm -rf "$dir"' RETURN
  mkdir -p "$dir/rootfs/tmp" "$dir/rootfs/etc" "$dir/rootfs$bin/lib" "$dir/rootfs/usr/share/zoneinfo/Etc" \
    "$dir/rootfs/usr/share/postgresql" "$dir/pg/home/data" "$dir/pg/run"
  chmod 1777 "$dir/rootfs/tmp"
  install -D -m 0755 "$bin/bin/postgres" "$dir/rootfs$bin/bin/postgres"
  libs "$dir/rootfs" "$bin/bin/postgres"
  # The modules a server may load (plpgsql, the encodings), without the
  # JIT's (LLVM, and the server runs with jit=off); the share directory
  # (timezone sets, the extensions' scripts) and the zone the data
  # directory names.
  find "$bin/lib" -maxdepth 1 -name '*.so' ! -name 'llvmjit*' -exec cp {} "$dir/rootfs$bin/lib/" \;
  cp -rL "$share" "$dir/rootfs/usr/share/postgresql/"
  cp -L /usr/share/zoneinfo/UTC "$dir/rootfs/usr/share/zoneinfo/"
  cp -L /usr/share/zoneinfo/Etc/UTC "$dir/rootfs/usr/share/zoneinfo/Etc/"
  # PostgreSQL refuses to run as root and looks its user up by uid.
  echo "postgres:x:65534:65534:postgres:/var/lib/postgresql:/bin/false" >"$dir/rootfs/etc/passwd"
  echo "postgres:x:65534:" >"$dir/rootfs/etc/group"
  # The data directory (its mode, 0700, kept by copying its parent's
  # contents), initialised now as that uid: the user postgres,
  # trusted, UTF8 in the C locale; the socket directory the server's
  # default names.
  chown -R 65534:65534 "$dir/pg"
  chmod 0755 "$dir"
  if ! out=$(setpriv --reuid=65534 --regid=65534 --clear-groups env TZ=UTC \
    "$bin/bin/initdb" -D "$dir/pg/home/data" -U postgres -A trust -E UTF8 --locale=C --no-sync 2>&1); then
    echo "initdb: $out" >&2
    return 1
  fi
  cat >"$dir/Dockerfile" <<DOCKERFILE
FROM scratch
COPY rootfs/ /
COPY --chown=65534:65534 pg/home/ /var/lib/postgresql/
COPY --chown=65534:65534 pg/run/ /var/run/postgresql/
USER 65534:65534
WORKDIR /var/lib/postgresql
ENTRYPOINT ["$bin/bin/postgres", "-D", "/var/lib/postgresql/data"]
DOCKERFILE
  build "$name" "$source" "$dir"
}

# node_image: the libc a lockbench binary built on this host links to
# (a Go binary built with cgo needs libc.so.6 and the loader, nothing
# else), no entrypoint: the node's container runs the mounted binary.
node_image() {
  local name=lockbench/node:local source dir
  source="libc6 $(dpkg-query -W -f '${Version}' libc6 2>/dev/null || ldd --version | head -1)"
  if fresh "$name" "$source"; then
    echo "kept $name ($source)"
    return
  fi
  dir=$(mktemp -d)
  trap 'rm -rf "$dir"' RETURN
  mkdir -p "$dir/rootfs/tmp"
  chmod 1777 "$dir/rootfs/tmp"
  libs "$dir/rootfs" "$(type -P true)"
  cat >"$dir/Dockerfile" <<DOCKERFILE
FROM scratch
COPY rootfs/ /
WORKDIR /tmp
DOCKERFILE
  build "$name" "$source" "$dir"
}

redis_image
zookeeper_image
mariadb_image
etcd_image
postgres_image
node_image
