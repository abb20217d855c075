#!/usr/bin/env python3
"""Issue 27's figures, each as a ratio against its anchor measured in the same run.

Called by scripts/bench.sh (make bench) with lockbench's binary and the port of a
redis-server it started. Every pair (a figure and its anchor) is measured side by
side, REPEATS times (default 3), the order alternated from one repeat to the next;
each line gives min/median/max of the ratio over the repeats, the raw figures, and
the load average (1 min) before and after. Absolute rates on a shared 2-core machine
drift by 2x between days; the ratios are what to compare.

Environment: REPEATS (default 3), CLIENTS (default 20000), BIG (buyers of the
schedule and check figures, default 1000000; 0 skips them), BIG_REPEATS (default 1),
CHECK_HISTORY (a history for the check figure, instead of recording one of BIG buyers),
FIGURES (the figures to measure, comma-separated, of script, embedded, process,
schedule, check; default all), SCRIPTBENCH (the go-redis anchor of the script figure,
default scriptbench beside BIN: make bench builds it from internal/scriptbench),
PROCESS_IMPLS (the process figure's implementations, default lua,watchdog,atomic),
PIPELINE (lockbench's --pipeline in the figures that measure it, default 64).
"""
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

BIN, PORT = sys.argv[1], sys.argv[2]
REDIS = f"--redis=127.0.0.1:{PORT}"
REPEATS = int(os.environ.get("REPEATS", "3"))
CLIENTS = int(os.environ.get("CLIENTS", "20000"))
BIG = int(os.environ.get("BIG", "1000000"))
BIG_REPEATS = int(os.environ.get("BIG_REPEATS", "1"))
CHECK_HISTORY = os.environ.get("CHECK_HISTORY", "")
FIGURES = os.environ.get("FIGURES", "script,embedded,process,schedule,check").split(",")
SCRIPT = os.path.join(os.path.dirname(__file__), "..", "sales", "scripts", "atomic_sale.lua")
PIPELINE = int(os.environ.get("PIPELINE", "64"))
PROCESS_IMPLS = os.environ.get("PROCESS_IMPLS", "lua,watchdog,atomic").split(",")
SCRIPTBENCH = os.environ.get("SCRIPTBENCH", os.path.join(os.path.dirname(BIN), "scriptbench"))


def load():
    return os.getloadavg()[0]


def timed(cmd):
    """Runs cmd under /usr/bin/time; returns its stdout, wall s, CPU s, peak RSS MiB."""
    with tempfile.NamedTemporaryFile("r", suffix=".time") as t:
        p = subprocess.run(["/usr/bin/time", "-o", t.name, "-f", "%e %U %S %M"] + cmd,
                           capture_output=True, text=True)
        wall, user, sys_, rss = t.read().split()[-4:]
    return p.stdout, float(wall), float(user) + float(sys_), int(rss) / 1024


def lockbench(*args):
    """One lockbench run; returns its first run's JSON with wall, cpu and rss added."""
    out, wall, cpu, rss = timed([BIN, *args, "--json"])
    run = json.loads(out)["runs"][0]
    run.update(wall=wall, cpu=cpu, rss=rss)
    return run


def cli(*args):
    return subprocess.run(["redis-cli", "-p", PORT, *args], capture_output=True, text=True, check=True).stdout.strip()


def benchmark(n, *cmd):
    """redis-benchmark with 400 connections (lockbench's 2 nodes x 200 workers);
    returns requests/s and client CPU s per request."""
    out, _, cpu, _ = timed(["redis-benchmark", "-p", PORT, "-c", "400", "-n", str(n), "-r", "100000000",
                            "-q", *cmd])
    rate = float(re.findall(r"([0-9.]+) requests per second", out.replace("\r", "\n"))[-1])
    return rate, cpu / n


def summary(label, ratios, detail, loads):
    lo, med, hi = min(ratios), statistics.median(ratios), max(ratios)
    print(f"{label:52} {lo:.2f}/{med:.2f}/{hi:.2f}  {detail}  load {min(loads):.1f}-{max(loads):.1f}", flush=True)


def sale_vs_script():
    """Figure 1: atomic's sale against redis-benchmark running atomic's own script
    (EVALSHA, 400 connections) and EVAL DECR; client CPU per command against
    redis-benchmark's. Each runs the script CLIENTS times, as the sale does once
    per buyer. Beside them, the same script through go-redis alone (scriptbench:
    lockbench's client options, 2 clients of 200 connections, nothing else), which
    splits the figure into go-redis's share and lockbench's. Then the sale with
    --pipeline=PIPELINE, against redis-benchmark unpipelined and with -P PIPELINE."""
    sha = cli("SCRIPT", "LOAD", open(SCRIPT).read())
    rate, cpu_cmd, sale_cmd, decr, rb_rate, rb_cpu, loads = [], [], [], [], [], [], []
    gr_rate, gr_cpu, lb_gr_rate, lb_gr_cpu = [], [], [], []
    pipe_rate, pipe_cpu, pipe_p = [], [], []
    floor = os.access(SCRIPTBENCH, os.X_OK)
    if not floor:
        print(f"{SCRIPTBENCH} not found (go build -o bin/scriptbench ./internal/scriptbench): "
              "skipping the go-redis anchor", flush=True)
    for i in range(REPEATS):
        loads.append(load())
        steps = ["lockbench", "script", "decr", "pipelined", "script-P"] + (["go-redis"] if floor else [])
        if i % 2:
            steps.reverse()
        for s in steps:
            if s == "lockbench":
                r = lockbench("--impl=atomic", f"--clients={CLIENTS}", f"--stock={CLIENTS}", "--ramp=0", REDIS)
                run_rate, run_cpu = r["attempts"] / (r["duration_ms"] / 1000), r["cpu"] / r["commands"]
                # The sale alone: the process's CPU while the health monitor
                # watched it, without start-up, the checks and the files.
                h = r["health"]
                sale_cpu = h["cpu_use"] * h["cpus"] * h["elapsed_ns"] / 1e9 / r["commands"]
            elif s == "script":
                cli("SET", "lockbench-bench:stock", "1000000000")
                b_rate, b_cpu = benchmark(CLIENTS, "EVALSHA", sha, "2", "lockbench-bench:stock",
                                          "lockbench-bench:orders", "__rand_int__")
                cli("DEL", "lockbench-bench:stock", "lockbench-bench:orders")
            elif s == "pipelined":
                r = lockbench("--impl=atomic", f"--clients={CLIENTS}", f"--stock={CLIENTS}", "--ramp=0",
                              f"--pipeline={PIPELINE}", REDIS)
                p_rate, p_cpu = r["attempts"] / (r["duration_ms"] / 1000), r["cpu"] / r["commands"]
            elif s == "script-P":
                cli("SET", "lockbench-bench:stock", "1000000000")
                bp_rate, _ = benchmark(CLIENTS, "-P", str(PIPELINE), "EVALSHA", sha, "2", "lockbench-bench:stock",
                                       "lockbench-bench:orders", "__rand_int__")
                cli("DEL", "lockbench-bench:stock", "lockbench-bench:orders")
            elif s == "go-redis":
                cli("SET", "lockbench-bench:stock", "1000000000")
                out, _, cpu, _ = timed([SCRIPTBENCH, f"--redis=127.0.0.1:{PORT}", f"--script={SCRIPT}",
                                        f"--requests={CLIENTS}"])
                g = json.loads(out)
                g_rate, g_cpu = g["rate"], cpu / g["requests"]
                cli("DEL", "lockbench-bench:stock", "lockbench-bench:orders")
            else:
                d_rate, _ = benchmark(CLIENTS, "EVAL", "return redis.call('decr', KEYS[1])", "1",
                                      "lockbench-bench:decr")
                cli("DEL", "lockbench-bench:decr")
        if floor:
            gr_rate.append(g_rate / b_rate)
            gr_cpu.append(g_cpu / b_cpu)
            lb_gr_rate.append(run_rate / g_rate)
            lb_gr_cpu.append(run_cpu / g_cpu)
        pipe_rate.append(p_rate / b_rate)
        pipe_cpu.append(p_cpu / b_cpu)
        pipe_p.append(p_rate / bp_rate)
        rate.append(run_rate / b_rate)
        decr.append(run_rate / d_rate)
        cpu_cmd.append(run_cpu / b_cpu)
        sale_cmd.append(sale_cpu / b_cpu)
        rb_rate.append(b_rate)
        rb_cpu.append(b_cpu)
        loads.append(load())
    summary(f"atomic {CLIENTS} --ramp=0 / redis-benchmark EVALSHA", rate,
            f"(target >= 0.85; redis-benchmark {min(rb_rate):.0f}-{max(rb_rate):.0f}/s)", loads)
    summary(f"atomic {CLIENTS} --ramp=0 / redis-benchmark EVAL DECR", decr, "", loads)
    summary("client CPU per command / redis-benchmark's", cpu_cmd,
            f"(target <= 1.5; redis-benchmark {min(rb_cpu) * 1e6:.1f}-{max(rb_cpu) * 1e6:.1f} us)", loads)
    summary("  the same, the sale alone (health's CPU use)", sale_cmd, "", loads)
    if floor:
        summary("go-redis alone (scriptbench) / redis-benchmark: rate", gr_rate, "", loads)
        summary("  the same: client CPU per command", gr_cpu, "", loads)
        summary(f"atomic {CLIENTS} --ramp=0 / go-redis alone: rate", lb_gr_rate, "", loads)
        summary("  the same: client CPU per command", lb_gr_cpu, "", loads)
    summary(f"atomic {CLIENTS} --ramp=0 --pipeline={PIPELINE} / redis-benchmark EVALSHA: rate", pipe_rate,
            "(target >= 0.85)", loads)
    summary("  the same: client CPU per command", pipe_cpu, "(target <= 1.5)", loads)
    summary(f"  the same sale / redis-benchmark -P {PIPELINE}: rate", pipe_p, "", loads)


def schedule():
    """Figure 2: BIG buyers over a 10 s ramp, with --pipeline=PIPELINE and without;
    the sale's duration against the ramp, its peak RSS against 600 MiB."""
    if BIG <= 0:
        return
    for extra in ([f"--pipeline={PIPELINE}"], []):
        ratio, rss, loads = [], [], []
        for _ in range(BIG_REPEATS):
            loads.append(load())
            r = lockbench("--impl=atomic", f"--clients={BIG}", f"--stock={BIG // 4}", "--ramp=10s", *extra, REDIS)
            ratio.append(r["duration_ms"] / 10000)
            rss.append(r["rss"])
            loads.append(load())
        summary(f"atomic {BIG} over 10s {' '.join(extra)}: sale / ramp", ratio,
                f"(target <= 1.1; peak RSS {min(rss):.0f}-{max(rss):.0f} MiB, target <= 600)", loads)


def embedded_vs_server():
    """Figure 4: the default run on the embedded server, its wall time, and the same
    run on redis-server measured beside it."""
    ratio, walls, loads = [], [], []
    for i in range(REPEATS):
        loads.append(load())
        order = [[], [REDIS]] if i % 2 == 0 else [[REDIS], []]
        got = {}
        for extra in order:
            got[bool(extra)] = lockbench("--impl=watchdog", f"--clients={CLIENTS}", *extra)["wall"]
        ratio.append(got[False] / got[True])
        walls.append(got[False])
        loads.append(load())
    summary(f"default run {CLIENTS} embedded / on redis-server (wall)", ratio,
            f"(embedded {min(walls):.1f}/{statistics.median(walls):.1f}/{max(walls):.1f} s, target <= 4 s)", loads)


def process_vs_inproc():
    """Figure 5: process nodes against in-process ones, sales/s on redis-server;
    and the CPU (user+sys, the nodes' processes included) per attempt, which a
    shared machine's load moves far less than a rate. The issue names lua and
    watchdog; atomic, one command per attempt, is where the nodes' link weighs
    most."""
    for impl in PROCESS_IMPLS:
        ratio, cpu, loads = [], [], []
        for i in range(REPEATS):
            loads.append(load())
            modes = ["process", "inproc"] if i % 2 == 0 else ["inproc", "process"]
            got = {m: lockbench(f"--impl={impl}", f"--clients={CLIENTS}", f"--node-mode={m}", REDIS) for m in modes}
            ratio.append(got["process"]["sales_per_sec"] / got["inproc"]["sales_per_sec"])
            per = {m: r["cpu"] / r["attempts"] for m, r in got.items()}
            cpu.append(per["process"] / per["inproc"])
            loads.append(load())
        summary(f"{impl} {CLIENTS} process nodes / in-process (sales/s)", ratio, "(target >= 0.9)", loads)
        summary(f"{impl} {CLIENTS} process nodes / in-process (CPU per attempt)", cpu, "", loads)


def go_bench(test_bin, name, history):
    """One run of a Go benchmark of test_bin on history; returns its ns/op."""
    out = subprocess.run([test_bin, "-test.run=^$", f"-test.bench=^{name}$", "-test.benchtime=1x"],
                         capture_output=True, text=True, check=True,
                         env={**os.environ, "LOCKBENCH_BENCH_HISTORIES": history}).stdout
    return int(re.search(r"\s(\d+) ns/op", out).group(1))


def check():
    """Figure 3: `lockbench check` of the BIG history, its wall and CPU time against
    1.5 s and peak RSS against 400 MiB; and reading the history (history's
    BenchmarkRead) as a ratio of checking it (checker's BenchmarkRecorded, the history
    already read), each measured beside the other, the order alternated."""
    with tempfile.TemporaryDirectory() as tmp:
        hist = CHECK_HISTORY
        if not hist:
            if BIG <= 0:
                return
            lockbench("--impl=atomic", f"--clients={BIG}", f"--stock={BIG // 4}", "--ramp=10s", REDIS,
                      f"--out={tmp}/out")
            hist = f"{tmp}/out/atomic.history.jsonl"
        root = os.path.join(os.path.dirname(__file__), "..")
        tests = {}
        for pkg in ("history", "checker"):
            tests[pkg] = f"{tmp}/{pkg}.test"
            subprocess.run(["go", "test", "-c", "-o", tests[pkg], f"./{pkg}/"], cwd=root, check=True)
        ratio, wall, cpu, rss, loads = [], [], [], [], []
        for i in range(REPEATS):
            loads.append(load())
            _, w, c, r = timed([BIN, "check", hist])
            wall.append(w)
            cpu.append(c)
            rss.append(r)
            steps = [("history", "BenchmarkRead"), ("checker", "BenchmarkRecorded")]
            if i % 2:
                steps.reverse()
            got = {pkg: go_bench(tests[pkg], name, hist) for pkg, name in steps}
            ratio.append(got["history"] / got["checker"])
            loads.append(load())
    summary("check of the big history: wall / 1.5 s", [w / 1.5 for w in wall],
            f"(wall {min(wall):.2f}-{max(wall):.2f} s, CPU {min(cpu):.2f}-{max(cpu):.2f} s, "
            f"peak RSS {min(rss):.0f}-{max(rss):.0f} MiB, target <= 400)", loads)
    summary("reading the big history / checking it", ratio, "(target < 1)", loads)


print(f"== issue 27's figures, ratio to an anchor run beside it: min/median/max of {REPEATS}", flush=True)
for name, figure in (("script", sale_vs_script), ("embedded", embedded_vs_server),
                     ("process", process_vs_inproc), ("schedule", schedule), ("check", check)):
    if name in FIGURES:
        figure()
