#!/usr/bin/env python3
"""pmcached against Debian's memcached, in the same invocation (a BENCHMARK, not a test).

  bench_server.py [--client mc_load|memcaslap] [--engines E1,E2] [--server-threads 1,2,4]
                  [--pin no|yes|both] [--reps N] [--memory MB] [--client-threads N]
                  [--connections N] [--requests N] [--value-size B] [--pipeline N]
                  [--protocol text|meta|binary]
                  [--key-size B] [--get-ratio R] [--duration SECS] [--pmcached-bin PATH]
                  [--mc-load PATH] [--csv FILE] [--pool-dir DIR]

Every cell of the matrix (server threads x pinning) runs memcached and pmcached on every engine
named, each run on a fresh server on its own loopback port, in an order rotated by one per
repetition (so a drift of the machine favours no server). Pinned: the server on the first CPU
and the load generator on the second (taskset), so every server gets the same one core.

Clients:
  mc_load    bench/mc_load (mc-benchmark shaped): --requests SETs then as many GETs of random
             keys, --connections connections with one request in flight each (--pipeline
             N: N at a time), in --protocol's requests. Latency of every request, exact
             percentiles.
  memcaslap  libmemcached's memcaslap: a --get-ratio mix for --duration seconds. memcaslap
             reports latency only as a log2 histogram, so its percentiles are the upper bounds
             of power-of-two buckets (a factor of 2 apart).

Prints the machine, build, workload and every run, then per cell and phase: medians of ops/s,
p50, p99 and p99.9 with their spreads (min-max over repetitions), the ratio of pmcached's median
ops/s to memcached's, and whether pmcached's median p99 is at or below memcached's.
"""
import argparse
import csv
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

import loopback_server

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MEMCACHED = "/usr/bin/memcached"
MC_LINE = loopback_server.MC_LOAD_LINE


def fail(message, code=1):
    print(f"bench_server: {message}", file=sys.stderr)
    sys.exit(code)


def positive_int(text):
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive integer, not {text!r}")
    return value


def int_list(text):
    return [positive_int(part) for part in text.split(",")]


def ratio_arg(text):
    try:
        value = float(text)
    except ValueError:
        value = -1
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"must be a number in [0, 1], not {text!r}")
    return value


def parse_args():
    parser = argparse.ArgumentParser(
        description="pmcached against memcached in the same invocation (a benchmark)")
    parser.add_argument("--client", choices=["mc_load", "memcaslap"], default="mc_load")
    parser.add_argument("--engines", default="wort",
                        help="comma-separated pmcached engines (default wort)")
    parser.add_argument("--server-threads", type=int_list, default=[2],
                        help="-t of both servers, comma-separated (default 2)")
    parser.add_argument("--pin", choices=["no", "yes", "both"], default="no")
    parser.add_argument("--reps", type=positive_int, default=3)
    parser.add_argument("--memory", type=positive_int, default=1024, help="-m of both, MB")
    parser.add_argument("--client-threads", type=positive_int, default=2)
    parser.add_argument("--connections", type=positive_int,
                        help="connections (default: 50 for mc_load, 64 for memcaslap)")
    parser.add_argument("--requests", type=positive_int, default=300_000,
                        help="mc_load: requests per phase (and the key space)")
    parser.add_argument("--value-size", type=positive_int, default=100)
    parser.add_argument("--pipeline", type=positive_int, default=1,
                        help="mc_load: requests sent at once on each connection")
    parser.add_argument("--protocol", choices=["text", "meta", "binary"], default="text",
                        help="mc_load: text set/get, meta ms/mg or binary SET/GET")
    parser.add_argument("--key-size", type=positive_int, default=16, help="memcaslap only")
    parser.add_argument("--get-ratio", type=ratio_arg, default=0.9, help="memcaslap only")
    parser.add_argument("--duration", type=positive_int, default=10, help="memcaslap: seconds")
    parser.add_argument("--pmcached-bin", default=os.path.join(ROOT, "build/server/pmcached"))
    parser.add_argument("--mc-load", default=os.path.join(ROOT, "build/bench/mc_load"),
                        help="the mc_load client (default build/bench/mc_load)")
    parser.add_argument("--csv", help="also write every run to this CSV file")
    parser.add_argument("--pool-dir", default="/dev/shm" if os.path.isdir("/dev/shm") else None,
                        help="where the pools go (default /dev/shm); e.g. a tmpfs mounted "
                             "with huge=always, to map them with 2 MiB pages as DAX on real "
                             "PM does (docs/TAIL_LATENCY.md, stop 43)")
    try:
        args = parser.parse_args()
    except SystemExit as e:
        sys.exit(0 if e.code == 0 else 2)
    args.engines = [e for e in args.engines.split(",") if e]
    if not args.engines:
        parser.print_usage(sys.stderr)
        fail("--engines needs at least one engine", 2)
    if args.connections is None:
        args.connections = 50 if args.client == "mc_load" else 64
    if args.connections < args.client_threads:
        fail("--connections must be at least --client-threads", 2)
    if args.client == "memcaslap" and (args.pipeline != 1 or args.protocol != "text"):
        fail("--pipeline and --protocol are mc_load's", 2)
    return args


def build_type(binary):
    cache = os.path.join(os.path.dirname(binary), "..", "CMakeCache.txt")
    try:
        with open(cache) as f:
            text = f.read()
    except OSError:
        return "unknown (no CMakeCache.txt next to the binary)"
    kind = re.search(r"^CMAKE_BUILD_TYPE:\w+=(.*)$", text, re.M)
    sanitize = re.search(r"^PMCACHED_SANITIZE:\w+=(.+)$", text, re.M)
    name = (kind.group(1) if kind and kind.group(1) else "Release (project default)")
    return name + (f" + sanitize={sanitize.group(1)}" if sanitize else "")


class Bench:
    def __init__(self, args, workdir):
        self.args = args
        self.workdir = workdir
        self.cpus = sorted(os.sched_getaffinity(0))
        self.mc_load = args.mc_load
        if args.client == "memcaslap":
            self.workload = os.path.join(workdir, "workload.cfg")
            with open(self.workload, "w") as f:
                f.write(f"key\n{args.key_size} {args.key_size} 1\n"
                        f"value\n{args.value_size} {args.value_size} 1\n"
                        f"cmd\n0 {1 - args.get_ratio:g}\n1 {args.get_ratio:g}\n")

    def pinned(self, cmd, pin, which):
        return ["taskset", "-c", str(self.cpus[which]), *cmd] if pin else cmd

    def start(self, server, threads, pin, run_id):
        port = loopback_server.free_port()
        common = ["-l", "127.0.0.1", "-p", str(port), "-t", str(threads),
                  "-m", str(self.args.memory)]
        if server == "memcached":
            user = ["-u", "nobody"] if os.geteuid() == 0 else []
            cmd = [MEMCACHED, "-U", "0", *user, *common]
        else:
            cmd = [self.args.pmcached_bin, *common, "--engine", server,
                   "--pool", self.pool(run_id)]
        log = open(os.path.join(self.workdir, f"server-{run_id}.log"), "w")
        proc = subprocess.Popen(self.pinned(cmd, pin, 0), stdout=log, stderr=log)
        error = loopback_server.wait_ready(proc, port)
        if error:
            proc.kill()
            fail(f"{server}: {error}; its log: {log.name}")
        return proc, port

    def pool(self, run_id):
        return os.path.join(self.workdir, f"pool-{run_id}")

    def stop(self, proc, server, run_id):
        if proc.poll() is not None:
            fail(f"{server} died during the run (status {proc.returncode})")
        proc.terminate()
        proc.wait(timeout=120)
        if os.path.exists(self.pool(run_id)):
            os.remove(self.pool(run_id))

    def load(self, server, port, pin):
        """One run of the client; returns [(phase, ops/s, p50, p99, p99.9)]."""
        a = self.args
        if a.client == "mc_load":
            cmd = [self.mc_load, "--port", str(port), "--connections", str(a.connections),
                   "--requests", str(a.requests), "--keyspace", str(a.requests),
                   "--value-size", str(a.value_size), "--threads", str(a.client_threads),
                   "--pipeline", str(a.pipeline), "--protocol", a.protocol, "--label", server]
            out = self.run_client(cmd, pin, 1800)
            rows = [(m.group(2), int(m.group(5)), *map(int, m.group(6, 7, 8)))
                    for m in map(MC_LINE.match, out.splitlines()) if m]
            if len(rows) != 2:
                fail(f"unexpected mc_load output:\n{out}")
            return rows
        cmd = ["memcaslap", "-s", f"127.0.0.1:{port}", "-F", self.workload,
               "-T", str(a.client_threads), "-c", str(a.connections), "-t", f"{a.duration}s",
               "-S", f"{a.duration}s"]
        out = self.run_client(cmd, pin, a.duration + 60)
        tps = re.findall(r"TPS: (\d+)", out)
        if not tps:
            fail(f"no TPS figure in memcaslap's output:\n{out}")
        return [("MIX", int(tps[-1]), *memcaslap_percentiles(out))]

    def run_client(self, cmd, pin, timeout):
        result = subprocess.run(self.pinned(cmd, pin, 1), capture_output=True, text=True,
                                timeout=timeout)
        if result.returncode != 0:
            fail(f"{cmd[0]} failed (status {result.returncode}):\n{result.stdout}"
                 f"{result.stderr}")
        return result.stdout + result.stderr


def memcaslap_percentiles(out):
    """p50, p99 and p99.9 of memcaslap's 'Total Statistics' log2 histogram: the upper bound
    (2^(i+1) us) of the bucket that holds each percentile."""
    block = out[out.rindex("Total Statistics ("):]
    counts = {}
    for row, values in re.findall(r"^\s+(\d+):((?:\s+\d+)+)\s*$", block, re.M):
        for offset, count in enumerate(values.split()):
            counts[int(row) + offset] = int(count)
    total = sum(counts.values())
    result = []
    for q in (0.5, 0.99, 0.999):
        seen = 0
        for bucket in sorted(counts):
            seen += counts[bucket]
            if seen >= q * total:
                result.append(2 ** (bucket + 1))
                break
    return result


def summary(values):
    return statistics.median(values), min(values), max(values)


def report(args, runs, cells, servers):
    """runs: (threads, pin, server, rep, phase, ops, p50, p99, p999) tuples."""
    print()
    for threads, pin in cells:
        phases = sorted({r[4] for r in runs if r[:2] == (threads, pin)},
                        key=["SET", "GET", "MIX"].index)
        for phase in phases:
            print(f"-t {threads}, {'pinned' if pin else 'unpinned'}, {phase} "
                  f"(medians over {args.reps} runs, spread min-max):")
            print(f"  {'server':10} {'ops/s':>22} {'p50 us':>16} {'p99 us':>18} "
                  f"{'p99.9 us':>18} {'ops ratio':>9} {'p99 <= memcached':>16}")
            base = None
            for server in servers:
                rows = [r for r in runs if r[:3] == (threads, pin, server) and r[4] == phase]
                cols = [summary([r[i] for r in rows]) for i in (5, 6, 7, 8)]
                if server == "memcached":
                    base = cols
                ratio = cols[0][0] / base[0][0] if base and base[0][0] else 0
                p99_ok = "-" if server == "memcached" else (
                    "yes" if cols[2][0] <= base[2][0] else "no")
                cells_text = [f"{m:.0f} ({lo:.0f}-{hi:.0f})" for m, lo, hi in cols]
                print(f"  {server:10} {cells_text[0]:>22} {cells_text[1]:>16} "
                      f"{cells_text[2]:>18} {cells_text[3]:>18} {ratio:>9.2f} {p99_ok:>16}")
            print()


def main():
    args = parse_args()
    if not os.access(MEMCACHED, os.X_OK):
        fail(f"{MEMCACHED} not found (scripts/install-deps.sh installs it)")
    if not os.access(args.pmcached_bin, os.X_OK):
        fail(f"{args.pmcached_bin} is not an executable (scripts/build.sh --type Release "
             f"--dir build -- -DPMCACHED_BENCH=ON builds it)")
    if args.client == "mc_load" and not os.access(args.mc_load, os.X_OK):
        fail(f"{args.mc_load} not found (build with -DPMCACHED_BENCH=ON)")
    if args.client == "memcaslap" and not shutil.which("memcaslap"):
        fail("memcaslap not found (scripts/install-deps.sh installs it)")
    pins = {"no": [False], "yes": [True], "both": [False, True]}[args.pin]
    if True in pins and (len(os.sched_getaffinity(0)) < 2 or not shutil.which("taskset")):
        fail("--pin yes needs two CPUs and taskset", 2)
    cells = [(t, p) for t in args.server_threads for p in pins]
    servers = ["memcached", *args.engines]

    if args.pool_dir is not None and not os.path.isdir(args.pool_dir):
        fail(f"--pool-dir {args.pool_dir} is not a directory", 2)
    workdir = tempfile.mkdtemp(prefix="pmcached-bench.", dir=args.pool_dir)
    bench = Bench(args, workdir)
    memcached_version = subprocess.run([MEMCACHED, "-V"], capture_output=True,
                                       text=True).stdout.strip()
    pmcached_version = subprocess.run([args.pmcached_bin, "-V"], capture_output=True,
                                      text=True).stdout.strip()
    print("pmcached server benchmark (a benchmark, not a test)")
    print(f"command:   {' '.join(sys.argv)}")
    print(f"machine:   {os.cpu_count()} CPUs, {loopback_server.cpu_model()}, "
          f"{os.uname().sysname} {os.uname().release}")
    print(f"pmcached:  {pmcached_version} ({args.pmcached_bin}), build "
          f"{build_type(args.pmcached_bin)}, engines {', '.join(args.engines)}")
    print(f"baseline:  {memcached_version} ({MEMCACHED})")
    if args.client == "mc_load":
        print(f"workload:  mc_load, {args.requests} SETs then {args.requests} GETs of random "
              f"keys (key space {args.requests}), {args.value_size} B values, "
              f"{args.connections} connections, {args.client_threads} client threads"
              + (f", {args.pipeline} requests pipelined per connection" if args.pipeline > 1
                 else "")
              + (f", {args.protocol} protocol" if args.protocol != "text" else ""))
    else:
        print(f"workload:  memcaslap -T {args.client_threads} -c {args.connections} "
              f"-t {args.duration}s, key {args.key_size} B, value {args.value_size} B, "
              f"get {args.get_ratio:g}")
    print(f"servers:   -m {args.memory}, loopback, a fresh server (and pool in {workdir}) per run; "
          f"pinned cells: server on CPU {bench.cpus[0]}, client on CPU "
          f"{bench.cpus[1] if len(bench.cpus) > 1 else '-'}")
    print()
    print(f"{'-t':>2} {'pin':>3} {'run':>3} {'server':10} {'phase':5} {'ops/s':>8} "
          f"{'p50':>6} {'p99':>6} {'p99.9':>6} (us)")
    runs = []
    run_id = 0
    try:
        for threads, pin in cells:
            for rep in range(1, args.reps + 1):
                shift = (rep - 1) % len(servers)
                for server in servers[shift:] + servers[:shift]:
                    run_id += 1
                    proc, port = bench.start(server, threads, pin, run_id)
                    try:
                        rows = bench.load(server, port, pin)
                    finally:
                        bench.stop(proc, server, run_id)
                    for row in rows:
                        runs.append((threads, pin, server, rep, *row))
                        print(f"{threads:>2} {'yes' if pin else 'no':>3} {rep:>3} "
                              f"{server:10} {row[0]:5} {row[1]:>8} {row[2]:>6} {row[3]:>6} "
                              f"{row[4]:>6}", flush=True)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    if args.csv:
        with open(args.csv, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["server_threads", "pinned", "server", "rep", "phase", "ops_per_s",
                        "p50_us", "p99_us", "p999_us"])
            w.writerows(runs)
    report(args, runs, cells, servers)


if __name__ == "__main__":
    main()
