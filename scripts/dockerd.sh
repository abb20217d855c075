#!/usr/bin/env bash
# Starts dockerd for the docker backend, unless one already answers: its
# default bridge and iptables off (containers use the host's network, so
# every connection stays on loopback), in the background, logging to
# ${DOCKERD_LOG:-/var/log/dockerd.log}. Waits until `docker info` answers.
# Needs root and Debian's docker.io.
set -euo pipefail
if docker info >/dev/null 2>&1; then
  exit 0
fi
command -v dockerd >/dev/null 2>&1 || { echo "dockerd not found: apt-get install docker.io" >&2; exit 1; }
log=${DOCKERD_LOG:-/var/log/dockerd.log}
# A pid file left by a dockerd that did not stop cleanly (a machine
# restarted) names a pid another process may hold now: dockerd then
# refuses to start. No dockerd answers, so a pid file that does not name
# a running dockerd is stale.
pidfile=/var/run/docker.pid
if [ -f "$pidfile" ] && [ "$(cat "/proc/$(cat "$pidfile")/comm" 2>/dev/null)" != dockerd ]; then
  rm -f "$pidfile"
fi
nohup dockerd --bridge=none --iptables=false >"$log" 2>&1 &
for _ in $(seq 60); do
  if docker info >/dev/null 2>&1; then
    echo "dockerd started (pid $!, log $log)"
    exit 0
  fi
  if ! kill -0 $! 2>/dev/null; then
    echo "dockerd exited; its log ($log):" >&2
    tail -20 "$log" >&2
    exit 1
  fi
  sleep 0.5
done
echo "dockerd did not answer within 30s; its log ($log):" >&2
tail -20 "$log" >&2
exit 1
