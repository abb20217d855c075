#!/usr/bin/env bash
# Proves that lockbench's verdicts hold on a busy machine (make hog-proof):
# the same commands, once on the machine as it is and once with a CPU hog
# beside them (stress-ng --cpu $HOG_CPUS, 8 by default, on every core),
# then counts
#   - verdicts that differ between the two (goal 0; inconclusive aside),
#   - inconclusive runs and cells (goal at most 5%),
#   - runs thrown away: a command that wrote no result (goal 0).
# The commands: the default run on the embedded server; the truth table on
# the embedded server and on a redis-server on loopback, for each seed of
# $SEEDS ($REDIS_SEEDS for redis-server); a gate run against its own baseline; the customlock example's
# README command. QUICK=1 runs a small part (one seed, the embedded
# server's truth table only for the holder faults): what CI runs.
# Prints one line per command and phase, then the counts; exits 1 when a
# verdict differs or a run was thrown away. Needs stress-ng, python3 and
# redis-server (the redis-server part is skipped without it).
set -uo pipefail
cd "$(dirname "$0")/.."
SEEDS=${SEEDS:-1 2 3}
REDIS_SEEDS=${REDIS_SEEDS:-$SEEDS}
HOG_CPUS=${HOG_CPUS:-8}
QUICK=${QUICK:-0}
out=${OUT:-$(mktemp -d /tmp/lockbench-hog.XXXXXX)}
mkdir -p "$out"
command -v stress-ng >/dev/null || { echo "stress-ng not found (apt-get install stress-ng)"; exit 2; }
go build -o bin/lockbench ./cmd/lockbench || exit 2
go build -o bin/customlock ./examples/customlock || exit 2

pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; }
trap cleanup EXIT
redis=()
if command -v redis-server >/dev/null && [ "$QUICK" != 1 ]; then
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no --daemonize no >/dev/null &
  pids+=($!)
  sleep 0.5
  redis=("--redis=127.0.0.1:$port")
fi

# run NAME PHASE CMD...: runs one command with --out=$out/PHASE/NAME and
# notes its exit code beside it.
run() {
  local name=$1 phase=$2; shift 2
  local dir="$out/$phase/$name"
  rm -rf "$dir"; mkdir -p "$dir"
  local t0=$SECONDS
  "$@" --out="$dir" >"$dir/stdout" 2>"$dir/stderr"
  local rc=$?
  echo "$rc" >"$dir/exit"
  printf '%-6s %-28s exit %-3s %4ss  load %s\n' "$phase" "$name" "$rc" "$((SECONDS - t0))" "$(cut -d' ' -f1-3 /proc/loadavg)"
}

phase() {
  local p=$1
  local seeds=$SEEDS
  [ "$QUICK" = 1 ] && seeds=${SEEDS%% *}
  run default "$p" bin/lockbench --impl=watchdog --clients=20000
  run customlock "$p" bin/customlock --impl=example-correct --clients=20000
  run gate "$p" bin/lockbench --impl=lua,watchdog --clients=5000 --stock=1000 --baseline="$out/baseline/result.json"
  for s in $seeds; do
    if [ "$QUICK" = 1 ]; then
      run "matrix-embedded-$s" "$p" bin/lockbench matrix --seed="$s" --faults=pause-holder,crash-holder,slow-holder
    else
      run "matrix-embedded-$s" "$p" bin/lockbench matrix --seed="$s"
    fi
  done
  if [ ${#redis[@]} -gt 0 ]; then
    for s in $REDIS_SEEDS; do
      run "matrix-redis-$s" "$p" bin/lockbench matrix --seed="$s" "${redis[@]}"
    done
  fi
}

echo "results in $out"
mkdir -p "$out/baseline"
bin/lockbench --impl=lua,watchdog --clients=5000 --stock=1000 --out="$out/baseline" >/dev/null 2>&1
phase quiet
stress-ng --cpu "$HOG_CPUS" --timeout 3h >/dev/null 2>&1 &
hog=$!
pids+=($hog)
sleep 5
phase hog
kill "$hog" 2>/dev/null

python3 - "$out" <<'PY'
import json, os, sys
out = sys.argv[1]

def outcomes(path):
    """Each run's verdict or each matrix cell's outcome, by name."""
    try:
        r = json.load(open(os.path.join(path, "result.json")))
    except (OSError, ValueError):
        return None
    got = {}
    for c in r.get("matrix") or []:
        run = c.get("run") or {}
        if run.get("verdict") == "inconclusive" or c.get("inconclusive"):
            got[c["cell"]] = "inconclusive"
        else:
            got[c["cell"]] = "as expected" if c.get("match") else "differs"
    if not r.get("matrix"):
        for run in r.get("runs") or []:
            got[run["impl"]] = run["verdict"]
    return got

differ = inconclusive = total = thrown = 0
for name in sorted(os.listdir(os.path.join(out, "quiet"))):
    q = outcomes(os.path.join(out, "quiet", name))
    h = outcomes(os.path.join(out, "hog", name))
    for phase, got in (("quiet", q), ("hog", h)):
        if got is None:
            thrown += 1
            print(f"thrown away: {phase} {name} wrote no result.json")
    if q is None or h is None:
        continue
    for k in sorted(h):
        total += 1
        if h[k] == "inconclusive":
            inconclusive += 1
            print(f"inconclusive under the hog: {name} {k}")
        elif k in q and q[k] != "inconclusive" and q[k] != h[k]:
            differ += 1
            print(f"differs: {name} {k}: quiet {q[k]}, hog {h[k]}")
        if q.get(k) == "inconclusive":
            print(f"inconclusive on the quiet machine: {name} {k}")
print(f"verdicts compared: {total}; differing from the quiet machine's: {differ}; "
      f"inconclusive under the hog: {inconclusive} ({100*inconclusive/max(total,1):.1f}%); thrown away: {thrown}")
sys.exit(1 if differ or thrown else 0)
PY
