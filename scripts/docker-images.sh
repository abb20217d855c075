#!/usr/bin/env bash
# Builds local images of the servers the docker backend starts, from the
# host's Debian binaries, for machines that cannot pull from a registry:
#
#   lockbench/redis:local   Debian's redis-server (apt-get install redis-server)
#
# Each image is FROM scratch: the binary and the libraries ldd lists for it,
# with the binary as the entrypoint, so that the backend's arguments
# (--port, --bind, ...) go straight to it, as they do through the official
# image's entrypoint. Use it with
#
#   lockbench --backend=docker --redis-image=lockbench/redis:local
#
# or LOCKBENCH_REDIS_IMAGE=lockbench/redis:local. Needs a running dockerd
# (scripts/dockerd.sh).
set -euo pipefail

# image NAME BINARY: builds NAME from BINARY and its libraries.
image() {
  local name=$1 bin=$2
  local dir
  dir=$(mktemp -d)
  trap 'rm -rf "$dir"' RETURN
  mkdir -p "$dir/rootfs/tmp" "$dir/rootfs/data"
  chmod 1777 "$dir/rootfs/tmp"
  # The binary under its own name: Debian's redis-server is a symlink to
  # redis-check-rdb, and the program picks its role from argv[0].
  install -D -m 0755 "$(readlink -f "$bin")" "$dir/rootfs$bin"
  # Every library ldd resolves, and the dynamic loader, at their paths.
  ldd "$bin" | awk '/=> \// { print $3 } /^\t\// { print $1 }' | while read -r lib; do
    cp -L --parents "$lib" "$dir/rootfs/"
  done
  cat >"$dir/Dockerfile" <<DOCKERFILE
FROM scratch
COPY rootfs/ /
WORKDIR /data
ENTRYPOINT ["$bin"]
DOCKERFILE
  local out
  if ! out=$(docker build -q -t "$name" "$dir" 2>&1); then
    echo "$out" >&2
    return 1
  fi
  echo "built $name from $bin ($("$bin" --version | head -1))"
}

command -v redis-server >/dev/null 2>&1 || { echo "redis-server not found: apt-get install redis-server" >&2; exit 1; }
image lockbench/redis:local "$(command -v redis-server)"
