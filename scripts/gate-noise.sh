#!/usr/bin/env bash
# Measures the noise of the figures the regression gate compares, and how
# often a gate against its own baseline would fail on this machine: one
# baseline, then RUNS gated runs of the same workload (default 20), single
# runs and medians of REPEAT (default 3). For every run taken as the
# baseline in turn, it counts how many of the others each set of
# thresholds would fail: the worst baseline is what a CI gate may draw.
# Needs bin/lockbench (make build) and python3.
set -uo pipefail
cd "$(dirname "$0")/.."
bin=bin/lockbench
runs=${RUNS:-20}
repeat=${REPEAT:-3}
work=${WORKLOAD:---impl=watchdog,lua,fenced,atomic --clients=4000 --stock=1000 --seed=1}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
for r in 1 "$repeat"; do
  for i in $(seq 0 "$runs"); do
    # shellcheck disable=SC2086
    "$bin" $work --repeat="$r" --json > "$dir/r$r-$i.json" 2>/dev/null
  done
done
python3 - "$dir" "$repeat" <<'PY'
import glob, json, sys
d, repeat = sys.argv[1], sys.argv[2]
def load(pattern):
    out = []
    for f in sorted(glob.glob(pattern)):
        r = json.load(open(f))
        out.append({x["impl"]: (x["latency_us"]["purchase"]["p99"], x["sales_per_sec"], x["commands_per_sale"]) for x in r["runs"]})
    return out
for name, runs in [("single runs", load(d + "/r1-*.json")), (f"medians of {repeat}", load(d + f"/r{repeat}-*.json"))]:
    print(f"{name} ({len(runs)}):")
    impls = list(runs[0])
    for impl in impls:
        rs = [r[impl] for r in runs]
        p, s, c = [x[0] for x in rs], [x[1] for x in rs], [x[2] for x in rs]
        print(f"  {impl:10} p99 {min(p)/1e3:.0f}-{max(p)/1e3:.0f} ms (x{max(p)/min(p):.2f})  sales/s {min(s):.0f}-{max(s):.0f} (x{max(s)/min(s):.2f})  cmd/sale {min(c):.1f}-{max(c):.1f} (x{max(c)/min(c):.2f})")
    for th in [(1.5, 0.8, 1.25), (4, 0.6, 1.75)]:
        worst = []
        for impl in impls:
            rs = [r[impl] for r in runs]
            n = max(sum(1 for j, b in enumerate(rs) if j != i and (b[0] > th[0] * a[0] or b[1] < th[1] * a[1] or b[2] > th[2] * a[2])) for i, a in enumerate(rs))
            worst.append(f"{impl} {n}")
        print(f"  p99 x{th[0]}, sales/s x{th[1]}, cmd/sale x{th[2]}: worst baseline fails " + ", ".join(worst) + f" of {len(runs)-1}")
PY
