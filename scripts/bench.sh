#!/usr/bin/env bash
# Measures lockbench's speed and memory on this machine (make bench):
#  1. the default run on the embedded server: wall time and peak RSS;
#  2. against a real redis-server on loopback: watchdog at 20,000 clients,
#     atomic with --ramp=0;
#  3. the checker on recorded histories: atomic with 1,000,000 buyers over
#     10 s, watchdog with 100,000, lua and atomic under server-pause
#     (unknown outcomes), none with 100,000 (illegal), each sale's figures,
#     then `lockbench check` of its history, then the check alone
#     (BenchmarkRecorded, the history already read), then reading each
#     history alone (history's BenchmarkRead) as a ratio of its check;
#  4. every seed spin variant at 20,000 clients, with the default workers
#     and with --workers=0 (each bounded by --timeout);
#  5. issue 27's figures, each a ratio against an anchor measured beside it
#     in the same run, min/median/max over repeats (scripts/bench-ratios.py;
#     RATIOS=0 skips them, RATIOS=only runs nothing else).
# Prints one line per measurement, and the load average. Needs /usr/bin/time
# and redis-server; redis-benchmark and redis-cli (Debian's redis-tools)
# for the ratios.
set -uo pipefail
cd "$(dirname "$0")/.."
bin=bin/lockbench
spin_timeout=${SPIN_TIMEOUT:-60s}

measure() { # label, args...
  local label=$1; shift
  local out
  out=$( { /usr/bin/time -f "wall=%es rss=%MKB" "$bin" "$@" --json > /tmp/lockbench-bench.json; } 2>&1 | tail -1)
  python3 - "$label" "$out" <<'PY'
import json, sys
label, timing = sys.argv[1], sys.argv[2]
r = json.load(open("/tmp/lockbench-bench.json"))
for run in r["runs"]:
    print(f"{label:38} {run['impl']:13} {run['verdict']:5} sold={run['sold']}/{run['stock']} "
          f"sales/s={run['sales_per_sec']:.0f} cmd/sale={run['commands_per_sale']} cmd/attempt={run['commands_per_attempt']} "
          f"cut_short={run['cut_short']} {timing}")
PY
}

echo "== $(date -u '+%F %H:%M UTC'), $(uptime | sed 's/.*load/load/')"
ratios=${RATIOS:-1}
if [ "$ratios" != only ]; then
  echo "== default run, embedded server"
  measure "default (embedded)" --impl=watchdog --clients=20000
fi

command -v redis-server >/dev/null || { echo "redis-server not found: skipping real-Redis figures"; exit 0; }
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no --daemonize no >/dev/null &
rpid=$!
trap 'kill $rpid 2>/dev/null' EXIT
sleep 0.5
r="--redis=127.0.0.1:$port"

if [ "$ratios" != 0 ]; then
  if command -v redis-benchmark >/dev/null && command -v redis-cli >/dev/null; then
    python3 scripts/bench-ratios.py "$bin" "$port"
  else
    echo "redis-benchmark or redis-cli not found (apt-get install redis-tools): skipping the ratios"
  fi
  [ "$ratios" = only ] && exit 0
fi

echo "== real redis-server on loopback"
# The lock-guarded sale needs four round trips in series (acquire, GET,
# SET, release and its hand-off), so one hot lock cannot sell faster than
# 1 / (4 x RTT). Measure this machine's serial round trip first.
if command -v redis-benchmark >/dev/null; then
  rtt=$(redis-benchmark -p "$port" -c 1 -n 50000 -t get -q 2>/dev/null | tr '\r' '\n' | grep -o 'p50=[0-9.]*' | tail -1 | cut -d= -f2)
  python3 -c "import sys; r=float(sys.argv[1])*1000; print(f'serial GET round trip p50 {r:.0f} us: four-round-trip limit {1e6/(4*r):.0f} sales/s')" "$rtt"
fi
measure "watchdog 20000 (redis)" --impl=watchdog --clients=20000 "$r"
measure "atomic --ramp=0 (redis)" --impl=atomic --clients=20000 --ramp=0 "$r"

echo "== the checker on recorded histories (lockbench check, wall and peak RSS)"
# Each sale is recorded with --out, then checked offline: the run's own
# figures, then the check's.
hist=$(mktemp -d)
trap 'kill $rpid 2>/dev/null; rm -rf "$hist"' EXIT
record() { # label, dir, args...
  local label=$1 dir=$2; shift 2
  measure "$label" "$@" --out="$hist/$dir"
  local t
  t=$( { /usr/bin/time -f "wall=%es rss=%MKB" "$bin" check "$hist/$dir" --json > /tmp/lockbench-check.json; } 2>&1 | tail -1)
  python3 - "check $label" "$t" <<'PY'
import json, sys
label, timing = sys.argv[1], sys.argv[2]
for run in json.load(open("/tmp/lockbench-check.json"))["runs"]:
    print(f"{label:38} {run['impl']:13} {run['verdict']:5} ops={run['attempts']} linearizability={run['linearizability']} {timing}")
PY
}
record "atomic 1000000 over 10s (redis)" atomic1m --impl=atomic --clients=1000000 --stock=250000 --ramp=10s "$r"
record "watchdog 100000 (redis)" watchdog100k --impl=watchdog --clients=100000 --stock=25000 "$r"
record "lua,atomic server-pause 20000 (redis)" pause --impl=lua,atomic --clients=20000 --faults=server-pause:count=3 --command-timeout=300ms "$r"
record "none 100000 (redis)" none100k --impl=none --clients=100000 --stock=25000 "$r"
LOCKBENCH_BENCH_HISTORIES="$(ls "$hist"/*/*.history.jsonl | tr '\n' ' ')" \
  go test -run '^$' -bench BenchmarkRecorded -benchtime 3x -benchmem ./checker/ | grep '^Benchmark' | tee /tmp/lockbench-bench-check.txt
# Reading a history costs less than checking it (issue 27): the same
# histories read (history.BenchmarkRead), as a ratio of the check's time
# measured just before, per history (the anchor); below 1 is the target.
LOCKBENCH_BENCH_HISTORIES="$(ls "$hist"/*/*.history.jsonl | tr '\n' ' ')" \
  go test -run '^$' -bench BenchmarkRead -benchtime 3x -benchmem ./history/ | grep '^Benchmark' | tee /tmp/lockbench-bench-read.txt
python3 - /tmp/lockbench-bench-check.txt /tmp/lockbench-bench-read.txt <<'PY'
import re, sys
def times(path, prefix):
    out = {}
    for line in open(path):
        m = re.match(prefix + r"/(\S+?)(-\d+)?\s+\d+\s+(\d+) ns/op", line)
        if m:
            out[m.group(1)] = int(m.group(3))
    return out
check, read = times(sys.argv[1], "BenchmarkRecorded"), times(sys.argv[2], "BenchmarkRead")
for name, ns in read.items():
    if name in check:
        print(f"{'read/check ' + name:38} read={ns/1e6:.0f}ms check={check[name]/1e6:.0f}ms ratio={ns/check[name]:.2f}")
PY

echo "== seed spin variants, 20000 clients, timeout $spin_timeout"
for im in setnx setnx-expire set-nx-ex owner-check lua getset reentrant renew-naive; do
  measure "$im workers=200 (redis)" --impl=$im --clients=20000 --timeout="$spin_timeout" "$r"
  measure "$im workers=0 (redis)" --impl=$im --clients=20000 --workers=0 --timeout="$spin_timeout" "$r"
done
echo "== done, $(uptime | sed 's/.*load/load/')"
