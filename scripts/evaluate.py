#!/usr/bin/env python3
"""The benchmark runs of scripts/evaluate.sh (BENCHMARKS, not tests); writes CSVs under --results.

  evaluate.py --mode quick|full|smoke --build BUILD_DIR --results DIR

1. bench/index_bench: every engine in-process, Dense/Sparse/Clustered, then the PM write-latency
   sweep (seed 002 Fig. 5.2) -> index.csv
2. bench/mc_load (mc-benchmark shaped, seed 002 §5.5): Debian's memcached and pmcached on every
   engine, each run on a fresh server, the order rotated by one every repetition (a drift of
   the machine then favours no server) -> server_mcbench.csv
3. scripts/bench_server.py --client memcaslap (a 90% GET mix, every engine and memcached in the
   same invocation) -> server_memcaslap.csv
4. scripts/bench_server.py (mc_load): the tail-latency matrix of issue 16, dram, wort and artcow
   against memcached with 1, 2 and 4 server threads, pinned and unpinned -> server_tail.csv
plus machine.csv (the machine, build and command).
"""
import argparse
import csv
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import loopback_server

MODES = {
    "quick": dict(n=1_000_000, sweep_n=1_000_000, range_queries=1000, index_reps=3,
                  sweep_reps=1, mc_requests=200_000, reps=3, memcaslap_reps=2,
                  memcaslap_duration=3, memory_mb=1024, tail_requests=200_000, tail_reps=1),
    # A minute-long run of the whole pipeline, for checking the scripts themselves.
    "smoke": dict(n=20_000, sweep_n=20_000, range_queries=100, index_reps=1, sweep_reps=1,
                  mc_requests=5_000, reps=1, memcaslap_reps=1, memcaslap_duration=1,
                  memory_mb=64, tail_requests=5_000, tail_reps=1),
    # One run per index cell: a 16M-key cell takes 1-2 minutes (the quick mode repeats its cells).
    "full": dict(n=16_000_000, sweep_n=4_000_000, range_queries=2000, index_reps=1,
                 sweep_reps=1, mc_requests=500_000, reps=9, memcaslap_reps=3, memcaslap_duration=10,
                 memory_mb=1024, tail_requests=300_000, tail_reps=3),
}
LATENCIES = "100,300,600"
MEMCACHED = "/usr/bin/memcached"
# Pools go to tmpfs where there is one: emulated PM is DRAM, and a disk-backed file system would
# add its page-cache bookkeeping to every first write of a fresh pool.
POOL_DIR = "/dev/shm" if os.path.isdir("/dev/shm") else None


def log(message):
    print(f"[evaluate {time.strftime('%H:%M:%S')}] {message}", flush=True)


def wait_ready(port, proc):
    error = loopback_server.wait_ready(proc, port)
    if error:
        sys.exit(error)


# With two CPUs or more, the server runs on CPU 0 and the load generator on CPU 1 (taskset), so
# that every server gets the same one core and the scheduler does not move the four busy threads
# between the cores in the middle of a run.
PIN = shutil.which("taskset") is not None and len(os.sched_getaffinity(0)) >= 2
CPUS = sorted(os.sched_getaffinity(0))


def pinned(cmd, which):
    return ["taskset", "-c", str(CPUS[which]), *cmd] if PIN else cmd


def start_server(name, build, workdir, memory_mb):
    port = loopback_server.free_port()
    common = ["-l", "127.0.0.1", "-p", str(port), "-t", "2", "-m", str(memory_mb)]
    if name == "memcached":
        user = ["-u", "nobody"] if os.geteuid() == 0 else []
        cmd = [MEMCACHED, "-U", "0", *user, *common]
    else:
        pool = os.path.join(workdir, f"{name}.pool")
        if os.path.exists(pool):
            os.remove(pool)
        cmd = [os.path.join(build, "server", "pmcached"), *common, "--engine", name,
               "--pool", pool]
    proc = subprocess.Popen(pinned(cmd, 0), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    wait_ready(port, proc)
    return proc, port


def stop_server(proc):
    proc.terminate()
    proc.wait(timeout=120)


def engines(build):
    out = subprocess.run([os.path.join(build, "server", "pmcached"), "--engine", "?"],
                         capture_output=True, text=True).stderr
    match = re.search(r"valid: ([a-z0-9, ]+)", out)
    if not match:
        sys.exit(f"cannot read the engine list from pmcached: {out!r}")
    return [e.strip() for e in match.group(1).split(",")]


def index_benchmark(build, results, cfg):
    path = os.path.join(results, "index.csv")
    if os.path.exists(path):
        os.remove(path)
    bench = os.path.join(build, "bench", "index_bench")
    reps, sweep_reps = cfg["index_reps"], cfg["sweep_reps"]
    log(f"index_bench: {cfg['n']:,} keys per distribution, every engine, {reps} repetition(s)")
    subprocess.run([bench, "--n", str(cfg["n"]), "--range-queries", str(cfg["range_queries"]),
                    "--repetitions", str(reps), "--csv", path], check=True)
    log(f"index_bench: write-latency sweep {LATENCIES} ns, {cfg['sweep_n']:,} Dense keys, "
        f"{sweep_reps} repetition(s)")
    subprocess.run([bench, "--n", str(cfg["sweep_n"]), "--distributions", "dense",
                    "--pm-write-latency-ns", LATENCIES, "--repetitions", str(sweep_reps),
                    "--csv", path], check=True)


MC_LINE = loopback_server.MC_LOAD_LINE


def server_cpu_seconds(pid):
    """User + system CPU time of a process and all its threads, from /proc."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def mc_benchmark(build, results, cfg, names, workdir):
    """Also samples the server's CPU time at the end of each phase (mc_load flushes its line
    then): server CPU per request is far steadier than throughput on a shared 2-core VM."""
    rows = []
    servers = ["memcached", *names]
    for rep in range(1, cfg["reps"] + 1):
        shift = (rep - 1) % len(servers)
        for name in servers[shift:] + servers[:shift]:
            proc, port = start_server(name, build, workdir, cfg["memory_mb"])
            lines = []
            try:
                started = server_cpu_seconds(proc.pid)
                load = subprocess.Popen(
                    pinned([os.path.join(build, "bench", "mc_load"), "--port", str(port),
                            "--connections", "50", "--requests", str(cfg["mc_requests"]),
                            "--keyspace", str(cfg["mc_requests"]), "--value-size", "100",
                            "--threads", "2", "--label", name], 1),
                    stdout=subprocess.PIPE, text=True)
                for line in load.stdout:
                    m = MC_LINE.match(line)
                    if m:
                        now = server_cpu_seconds(proc.pid)
                        cpu_us = (now - started) / int(m.group(3)) * 1e6
                        started = now
                        rows.append([m.group(1), m.group(2), rep, *m.groups()[2:],
                                     f"{cpu_us:.2f}"])
                    lines.append(line.rstrip())
                if load.wait(timeout=1800) != 0:
                    sys.exit(f"mc_load against {name} failed (status {load.returncode})")
            finally:
                stop_server(proc)
            log(f"mc_load rep {rep}: {' | '.join(lines)}")
    with open(os.path.join(results, "server_mcbench.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["server", "phase", "rep", "requests", "seconds", "ops_per_s", "p50_us",
                    "p99_us", "p999_us", "server_cpu_us_per_op"])
        w.writerows(rows)


def memcaslap_mix(build, results, cfg, names):
    """memcaslap's 90% GET mix: every engine and memcached in one bench_server.py invocation."""
    runs = os.path.join(results, "server_memcaslap_runs.csv")
    subprocess.run(
        ["/usr/bin/python3", "scripts/bench_server.py", "--client", "memcaslap",
         "--engines", ",".join(names), "--reps", str(cfg["memcaslap_reps"]),
         "--duration", str(cfg["memcaslap_duration"]), "--memory", str(cfg["memory_mb"]),
         "--pmcached-bin", os.path.join(build, "server", "pmcached"), "--csv", runs],
        check=True, stdout=subprocess.DEVNULL)
    with open(runs) as f:
        by_server = {}
        for r in csv.DictReader(f):
            by_server.setdefault(r["server"], []).append(r)
    os.remove(runs)

    def median(server, column):
        return statistics.median(float(r[column]) for r in by_server[server])

    rows = []
    for name in names:
        ratio = median(name, "ops_per_s") / median("memcached", "ops_per_s")
        rows.append([name, f"{median(name, 'ops_per_s'):.0f}",
                     f"{median('memcached', 'ops_per_s'):.0f}", f"{ratio:.3f}"] +
                    [f"{median(s, c):.0f}" for s in (name, "memcached")
                     for c in ("p50_us", "p99_us", "p999_us")])
        log(f"memcaslap {name}: {rows[-1][1:]}")
    with open(os.path.join(results, "server_memcaslap.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["engine", "pmcached_ops_per_s", "memcached_ops_per_s", "ratio",
                    "pmcached_p50_us", "pmcached_p99_us", "pmcached_p999_us",
                    "memcached_p50_us", "memcached_p99_us", "memcached_p999_us"])
        w.writerows(rows)


TAIL_ENGINES = "dram,wort,artcow"


def tail_matrix(build, results, cfg):
    """p50/p99/p99.9 beside ops/s, -t 1/2/4, pinned and unpinned: issue 16's three engines."""
    log(f"tail matrix: {TAIL_ENGINES} and memcached, -t 1,2,4, pinned and unpinned, "
        f"{cfg['tail_reps']} repetition(s)")
    subprocess.run(
        ["/usr/bin/python3", "scripts/bench_server.py", "--engines", TAIL_ENGINES,
         "--server-threads", "1,2,4", "--pin", "both" if PIN else "no",
         "--reps", str(cfg["tail_reps"]), "--requests", str(cfg["tail_requests"]),
         "--memory", str(cfg["memory_mb"]),
         "--pmcached-bin", os.path.join(build, "server", "pmcached"),
         "--mc-load", os.path.join(build, "bench", "mc_load"),
         "--csv", os.path.join(results, "server_tail.csv")],
        check=True, stdout=subprocess.DEVNULL)


def machine(results, mode, build, memory_mb):
    cpu = loopback_server.cpu_model()
    with open("/proc/meminfo") as f:
        mem_gib = int(f.readline().split()[1]) / (1 << 20)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip() or "unknown"
    memcached = subprocess.run([MEMCACHED, "-V"], capture_output=True, text=True).stdout.strip()
    with open(os.path.join(results, "machine.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["field", "value"])
        w.writerows([["date", time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())],
                     ["command", f"scripts/evaluate.sh{' --quick' if mode == 'quick' else ''}"],
                     ["mode", mode], ["commit", commit], ["cpus", os.cpu_count()], ["cpu", cpu],
                     ["memory_gib", f"{mem_gib:.1f}"], ["kernel", platform.release()],
                     ["build", f"Release ({build})"], ["baseline", memcached],
                     ["server_memory_mb", memory_mb], ["pool_dir", POOL_DIR or "/tmp"],
                     ["mc_load_pinning", f"server on CPU {CPUS[0]}, mc_load on CPU {CPUS[1]}"
                      if PIN else "none (fewer than 2 CPUs or no taskset)"]])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", choices=MODES, required=True)
    parser.add_argument("--build", required=True)
    parser.add_argument("--results", required=True)
    args = parser.parse_args()
    cfg = MODES[args.mode]
    os.makedirs(args.results, exist_ok=True)
    started = time.monotonic()
    machine(args.results, args.mode, args.build, cfg["memory_mb"])
    names = engines(args.build)
    index_benchmark(args.build, args.results, cfg)
    workdir = tempfile.mkdtemp(prefix="pmcached-evaluate.", dir=POOL_DIR)
    try:
        mc_benchmark(args.build, args.results, cfg, names, workdir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    memcaslap_mix(args.build, args.results, cfg, names)
    tail_matrix(args.build, args.results, cfg)
    log(f"benchmarks done in {time.monotonic() - started:.0f} s")


if __name__ == "__main__":
    main()
