#!/usr/bin/env python3
"""A data set 10x the DRAM budget: pmcached, memcached and memcached with extstore, in the same
invocation (a BENCHMARK, not a test; issue 18).

  bench_paged.py [--budget-mb 16] [--data-factor 10] [--value-sizes 100,4096]
                 [--distributions uniform,zipf] [--servers memcached,extstore,pmcached]
                 [--engine bptree] [--pmcached-args ARGS] [--extstore-options OPTS] [--reps 3]
                 [--get-requests 200000] [--connections 50] [--load-connections 4]
                 [--client-threads 2] [--server-threads 2] [--pin no|yes] [--fill-on-miss]
                 [--quick] [--dir DIR] [--markdown FILE] [--csv FILE]
                 [--pmcached-bin PATH] [--mc-load PATH]

For every value size and key distribution, every server is started fresh (its files in a
temporary directory under /tmp, or under --dir), given the same DRAM budget B (--budget-mb), and
loaded with every key of a data set of --data-factor x B MB of values (keys = that / value size),
SET once each in order; then it answers --get-requests GETs of keys drawn uniformly or from a
Zipf (0.99) distribution. Reported per server: the GETs' hit ratio (a reply END without VALUE is
a miss), ops/s and p50/p99/p99.9 latency, the load's ops/s and the server's anonymous memory
(RssAnon) after the load; medians and min-max over --reps runs, the order of the servers rotated
by one per repetition.

Servers (all on loopback, -t --server-threads):
  memcached  /usr/bin/memcached -m B.
  extstore   memcached -m B -o <--extstore-options>,ext_path=FILE:SIZE, the file 4x the data.
             The default options make extstore hold what it can (see EXTSTORE_OPTIONS). After
             the load, `stats` must show items on the file (extstore_objects_used > 0).
  pmcached   build/server/pmcached --engine <--engine> -m B --buffer-pool-mb B --page-file FILE
             --page-file-mb 4x the data, --pool FILE, then --pmcached-args (e.g. "--page-table
             swizzle --eviction car"). With `--engine bptree` every key must stay readable: the
             summary says whether pmcached's hit ratio was 1 in every run.

The load uses --load-connections (default 4) connections from one client thread: memcached's
extstore writes items to its file from one background thread, and a load over 50 connections
outruns it (it then evicts most 4 KiB items instead of storing them). Before the GETs, every
server's data files are written back and dropped from the page cache (fsync, then
POSIX_FADV_DONTNEED), so the first reads of a page come from the file; the page cache is not
otherwise limited during the GETs (memcached's extstore reads through it; pmcached's page file
uses O_DIRECT where the file system allows it).
"""
import argparse
import csv
import os
import re
import shlex
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

import loopback_server
from bench_server import build_type, int_list, positive_int

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MEMCACHED = "/usr/bin/memcached"
MB = 1 << 20

# memcached 1.6.18's extstore, tuned to keep as much of the data set as it can (found by trying
# them on this workload; `memcached -h` lists them):
#   ext_item_size=64      store items larger than 64 bytes (default 512: a 100-byte value would
#                         never leave RAM);
#   ext_item_age=0        write an item to the file as soon as it reaches the cold LRU's tail,
#                         not only once memory is short;
#   ext_max_sleep=1000    background threads sleep at most 1 ms (default 1 s), so the writer
#                         keeps up with a load;
#   slab_automove=2, slab_automove_freeratio=0.1
#                         move slab pages to where they are needed at once and keep 10% free:
#                         without it the 1 MB slab page first given to the item headers left in
#                         RAM stays their only one, and the headers (so the items on the file)
#                         are evicted after ~11k items;
#   ext_page_size=16, ext_wbuf_size=2
#                         16 MB file pages; 2 MB write buffers (the least allowed; extstore's
#                         write buffers are DRAM beyond -m).
EXTSTORE_OPTIONS = ("ext_page_size=16,ext_wbuf_size=2,ext_threads=1,ext_item_size=64,"
                    "ext_item_age=0,ext_max_sleep=1000,slab_automove=2,"
                    "slab_automove_freeratio=0.1")
EXT_PAGE_MB = 16

LOAD_LINE = re.compile(
    r"^(\S+)\s+(LOAD|GET) requests (\d+) in ([\d.]+) s: (\d+) ops/s, p50 (\d+) us, "
    r"p99 (\d+) us, p99.9 (\d+) us, (?:hit ratio [\d.]+ \(hits (\d+), misses (\d+), "
    r"errors (\d+)\)|stored (\d+), errors (\d+))$")


def fail(message, code=1):
    print(f"bench_paged: {message}", file=sys.stderr)
    sys.exit(code)


def choice_list(choices):
    def parse(text):
        items = [part for part in text.split(",") if part]
        bad = [i for i in items if i not in choices]
        if bad or not items:
            raise argparse.ArgumentTypeError(
                f"must be a comma-separated list of {', '.join(choices)}, not {text!r}")
        return items
    return parse


def parse_args():
    p = argparse.ArgumentParser(
        description="pmcached, memcached and memcached+extstore on a data set 10x the DRAM "
                    "budget (a benchmark)")
    p.add_argument("--budget-mb", type=positive_int, help="DRAM budget B in MB (default 16)")
    p.add_argument("--data-factor", type=positive_int, default=10,
                   help="data set = this x B MB of values (default 10)")
    p.add_argument("--value-sizes", type=int_list, default=[100, 4096])
    p.add_argument("--distributions", type=choice_list(["uniform", "zipf"]),
                   default=["uniform", "zipf"])
    p.add_argument("--servers", type=choice_list(["memcached", "extstore", "pmcached"]),
                   default=["memcached", "extstore", "pmcached"])
    p.add_argument("--engine", default="bptree",
                   help="pmcached's --engine (default bptree)")
    p.add_argument("--pmcached-args", default="",
                   help="more pmcached flags, one string (e.g. '--page-table swizzle')")
    p.add_argument("--extstore-options", default=EXTSTORE_OPTIONS,
                   help="memcached -o options before ext_path (default: the tuned set)")
    p.add_argument("--reps", type=positive_int, help="repetitions (default 3)")
    p.add_argument("--get-requests", type=positive_int, help="GETs per run (default 200000)")
    p.add_argument("--connections", type=positive_int, default=50, help="GET connections")
    p.add_argument("--load-connections", type=positive_int, default=4)
    p.add_argument("--client-threads", type=positive_int, default=2, help="GET client threads")
    p.add_argument("--server-threads", type=positive_int, default=2)
    p.add_argument("--pin", choices=["no", "yes"], default="no",
                   help="yes: server on the first CPU, client on the second")
    p.add_argument("--fill-on-miss", action="store_true",
                   help="the client SETs a key after its GET missed (cache-aside; untimed)")
    p.add_argument("--quick", action="store_true",
                   help="B = 4 MB, 1 repetition, 50000 GETs (unless given)")
    p.add_argument("--dir", help="where the data files go (default a new directory in /tmp)")
    p.add_argument("--markdown", help="also write the summary as a markdown table to FILE")
    p.add_argument("--csv", help="also write every run to this CSV file")
    p.add_argument("--pmcached-bin", default=os.path.join(ROOT, "build/server/pmcached"))
    p.add_argument("--mc-load", default=os.path.join(ROOT, "build/bench/mc_load"))
    try:
        args = p.parse_args()
    except SystemExit as e:
        sys.exit(0 if e.code == 0 else 2)
    quick = {"budget_mb": 4, "reps": 1, "get_requests": 50_000}
    full = {"budget_mb": 16, "reps": 3, "get_requests": 200_000}
    for key, value in (quick if args.quick else full).items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    if args.connections < args.client_threads:
        fail("--connections must be at least --client-threads", 2)
    return args


def server_name(args, server):
    return f"pmcached-{args.engine}" if server == "pmcached" else server


def rss_anon_mb(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("RssAnon:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def server_stats(port):
    """`stats` as a dict of strings."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        s.sendall(b"stats\r\n")
        data = b""
        while not data.endswith(b"END\r\n"):
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    stats = {}
    for line in data.decode(errors="replace").splitlines():
        parts = line.split(" ", 2)
        if len(parts) == 3 and parts[0] == "STAT":
            stats[parts[1]] = parts[2]
    return stats


def drop_file_cache(paths):
    """Writes the files back and drops their pages from the page cache."""
    for path in paths:
        try:
            fd = os.open(path, os.O_RDONLY)
        except OSError:
            continue
        try:
            os.fsync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


class Bench:
    def __init__(self, args, workdir):
        self.args = args
        self.workdir = workdir
        self.cpus = sorted(os.sched_getaffinity(0))
        self.extra = shlex.split(args.pmcached_args)

    def pinned(self, cmd, which):
        return ["taskset", "-c", str(self.cpus[which]), *cmd] if self.args.pin == "yes" else cmd

    def files(self, run_id):
        base = os.path.join(self.workdir, f"run-{run_id}")
        return {"ext": base + ".extstore", "pool": base + ".pool", "pages": base + ".pages"}

    def start(self, server, run_id, data_mb):
        a = self.args
        port = loopback_server.free_port()
        files = self.files(run_id)
        common = ["-l", "127.0.0.1", "-p", str(port), "-t", str(a.server_threads),
                  "-m", str(a.budget_mb)]
        file_mb = 4 * data_mb
        user = ["-u", "nobody"] if os.geteuid() == 0 else []
        if server == "memcached":
            cmd = [MEMCACHED, "-U", "0", *user, *common]
        elif server == "extstore":
            size = -(-file_mb // EXT_PAGE_MB) * EXT_PAGE_MB
            options = f"{a.extstore_options},ext_path={files['ext']}:{size}m".lstrip(",")
            cmd = [MEMCACHED, "-U", "0", *user, *common, "-o", options]
        else:
            cmd = [a.pmcached_bin, *common, "--engine", a.engine, "--pool", files["pool"],
                   "--buffer-pool-mb", str(a.budget_mb), "--page-file", files["pages"],
                   "--page-file-mb", str(file_mb), *self.extra]
        log = open(os.path.join(self.workdir, f"server-{run_id}.log"), "w")
        proc = subprocess.Popen(self.pinned(cmd, 0), stdout=log, stderr=log)
        error = loopback_server.wait_ready(proc, port, timeout=60)
        if error:
            proc.kill()
            log.close()
            with open(log.name) as f:
                fail(f"{server}: {error}\n  {' '.join(cmd)}\n{f.read()[-2000:]}")
        log.close()
        return proc, port, cmd

    def stop(self, proc, server, run_id):
        if proc.poll() is not None:
            fail(f"{server} died during the run (status {proc.returncode}); its log: "
                 f"{os.path.join(self.workdir, f'server-{run_id}.log')}")
        proc.terminate()
        proc.wait(timeout=300)
        for path in self.files(run_id).values():
            if os.path.exists(path):
                os.remove(path)

    def client(self, port, label, phase, keys, value_size, distribution):
        a = self.args
        get = phase == "get"
        cmd = [a.mc_load, "--port", str(port), "--phases", phase, "--keyspace", str(keys),
               "--value-size", str(value_size), "--label", label, "--hits",
               "--connections", str(a.connections if get else a.load_connections),
               "--threads", str(a.client_threads if get else 1)]
        if get:
            cmd += ["--requests", str(a.get_requests), "--distribution", distribution]
            if a.fill_on_miss:
                cmd.append("--fill-on-miss")
        result = subprocess.run(self.pinned(cmd, 1), capture_output=True, text=True,
                                timeout=3600)
        if result.returncode != 0:
            fail(f"mc_load failed (status {result.returncode}):\n  {' '.join(cmd)}\n"
                 f"{result.stdout}{result.stderr}")
        for line in result.stdout.splitlines():
            m = LOAD_LINE.match(line)
            if m:
                g = m.groups()
                row = {"requests": int(g[2]), "ops": int(g[4]), "p50": int(g[5]),
                       "p99": int(g[6]), "p999": int(g[7])}
                if get:
                    row.update(hits=int(g[8]), misses=int(g[9]), errors=int(g[10]))
                else:
                    row.update(stored=int(g[11]), errors=int(g[12]))
                if result.stderr.strip():
                    print(f"  ({label} {phase}: {result.stderr.strip()})", flush=True)
                return row
        fail(f"unexpected mc_load output:\n{result.stdout}{result.stderr}")

    def run(self, server, run_id, value_size, distribution, keys, data_mb):
        name = server_name(self.args, server)
        proc, port, cmd = self.start(server, run_id, data_mb)
        try:
            load = self.client(port, name, "load", keys, value_size, distribution)
            rss = rss_anon_mb(proc.pid)
            stats = server_stats(port)
            if server == "extstore" and int(stats.get("extstore_objects_used", "0")) == 0:
                fail(f"extstore stored no item on its file after the load: {' '.join(cmd)}")
            files = self.files(run_id)
            drop_file_cache([files["ext"], files["pages"]])  # the pool is (emulated) PM
            get = self.client(port, name, "get", keys, value_size, distribution)
        finally:
            self.stop(proc, server, run_id)
        return {"load": load, "get": get, "rss_mb": rss, "stats": stats}


def summary(values):
    return statistics.median(values), min(values), max(values)


def fmt(triple, spec):
    m, lo, hi = (format(x, spec) for x in triple)
    return m if lo == hi else f"{m} ({lo}-{hi})"


def hit_ratio(run):
    g = run["get"]
    return g["hits"] / g["requests"] if g["requests"] else 0.0


def table_rows(args, runs, cells, servers):
    """One row per cell and server: the summary columns as text."""
    rows = []
    for value_size, distribution, keys in cells:
        base = None
        for server in servers:
            sel = [r for r in runs if (r["value_size"], r["distribution"], r["server"]) ==
                   (value_size, distribution, server)]
            if not sel:
                continue
            ops = summary([r["get"]["ops"] for r in sel])
            if server == "memcached":
                base = ops[0]
            rows.append([
                f"{value_size} B", distribution, f"{keys:,}", server_name(args, server),
                fmt(summary([hit_ratio(r) for r in sel]), ".4f"),
                fmt(ops, ".0f"),
                f"{ops[0] / base:.2f}" if base else "-",
                fmt(summary([r["get"]["p50"] for r in sel]), ".0f"),
                fmt(summary([r["get"]["p99"] for r in sel]), ".0f"),
                fmt(summary([r["get"]["p999"] for r in sel]), ".0f"),
                fmt(summary([r["load"]["ops"] for r in sel]), ".0f"),
                fmt(summary([r["rss_mb"] for r in sel]), ".1f"),
            ])
    return rows


HEADERS = ["values", "distribution", "keys", "server", "hit ratio", "GET ops/s",
           "ops/s vs memcached", "p50 us", "p99 us", "p99.9 us", "load ops/s", "RssAnon MB"]


def print_table(rows):
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(HEADERS)]
    for r in [HEADERS, *rows]:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip())


def hundred_percent_line(args, runs):
    sel = [r for r in runs if r["server"] == "pmcached"]
    if not sel:
        return None
    worst = min(hit_ratio(r) for r in sel)
    verdict = "yes" if worst == 1.0 else f"no (lowest {worst:.4f})"
    return f"pmcached-{args.engine} answered every GET with its value in every run: {verdict}"


def write_markdown(path, args, header, rows, verdict):
    with open(path, "w") as f:
        f.write("<!-- written by scripts/bench_paged.py -->\n")
        for line in header:
            if not line.startswith("files:"):  # a temporary directory, gone by now
                f.write(f"- {line}\n")
        f.write("\n| " + " | ".join(HEADERS) + " |\n")
        f.write("|" + "|".join("---" if i < 4 else "---:" for i in range(len(HEADERS))) + "|\n")
        for r in rows:
            f.write("| " + " | ".join(r) + " |\n")
        f.write(f"\nMedians over {args.reps} run(s), min-max in parentheses. Hit ratio: GETs "
                "answered with a value. RssAnon: the server's anonymous memory after the load "
                "(memcached's hash table and extstore's write buffers come on top of -m; "
                "pmcached's pool is emulated PM in a mapped file, not counted).\n")
        if verdict:
            f.write(f"\n{verdict}.\n")


def main():
    args = parse_args()
    if ("memcached" in args.servers or "extstore" in args.servers) and \
            not os.access(MEMCACHED, os.X_OK):
        fail(f"{MEMCACHED} not found (scripts/install-deps.sh installs it)")
    if "pmcached" in args.servers and not os.access(args.pmcached_bin, os.X_OK):
        fail(f"{args.pmcached_bin} is not an executable (scripts/build.sh --type Release "
             f"--dir build -- -DPMCACHED_BENCH=ON builds it)")
    if not os.access(args.mc_load, os.X_OK):
        fail(f"{args.mc_load} not found (build with -DPMCACHED_BENCH=ON)")
    if args.pin == "yes" and (len(os.sched_getaffinity(0)) < 2 or not shutil.which("taskset")):
        fail("--pin yes needs two CPUs and taskset", 2)
    data_mb = args.data_factor * args.budget_mb
    cells = [(v, d, data_mb * MB // v) for v in args.value_sizes for d in args.distributions]
    servers = args.servers

    parent = args.dir or "/tmp"
    os.makedirs(parent, exist_ok=True)
    workdir = tempfile.mkdtemp(prefix="pmcached-bench-paged.", dir=parent)
    if os.geteuid() == 0:
        os.chmod(workdir, 0o777)  # memcached opens its extstore file as -u nobody
    bench = Bench(args, workdir)
    versions = {}
    if "memcached" in servers or "extstore" in servers:
        versions["memcached"] = subprocess.run([MEMCACHED, "-V"], capture_output=True,
                                               text=True).stdout.strip()
    if "pmcached" in servers:
        versions["pmcached"] = subprocess.run([args.pmcached_bin, "-V"], capture_output=True,
                                              text=True).stdout.strip()
    pinning = (f"pinned (server CPU {bench.cpus[0]}, client CPU {bench.cpus[1]})"
               if args.pin == "yes" else "unpinned")
    header = [
        f"machine: {os.cpu_count()} CPUs, {loopback_server.cpu_model()}, "
        f"{os.uname().sysname} {os.uname().release}",
        f"command: {' '.join(sys.argv)}",
    ]
    if "pmcached" in versions:
        header.append(f"pmcached: {versions['pmcached']} ({args.pmcached_bin}), build "
                      f"{build_type(args.pmcached_bin)}, --engine {args.engine} -m "
                      f"{args.budget_mb} --buffer-pool-mb {args.budget_mb} --page-file-mb "
                      f"{4 * data_mb} {args.pmcached_args}".rstrip())
    if "memcached" in versions:
        header.append(f"baseline: {versions['memcached']} ({MEMCACHED}) -m {args.budget_mb}; "
                      f"extstore: -o {args.extstore_options},ext_path=FILE:"
                      f"{-(-4 * data_mb // EXT_PAGE_MB) * EXT_PAGE_MB}m")
    header += [
        f"budget: {args.budget_mb} MB of DRAM per server; data: {args.data_factor} x "
        f"{args.budget_mb} MB = {data_mb} MB of values per cell "
        f"({', '.join(f'{v} B: {data_mb * MB // v:,} keys' for v in args.value_sizes)})",
        f"workload: load every key once (SET, {args.load_connections} connections), then "
        f"{args.get_requests:,} GETs ({', '.join(args.distributions)}; zipf 0.99), "
        f"{args.connections} connections, {args.client_threads} client threads"
        f"{', a SET after each miss' if args.fill_on_miss else ''}; servers -t "
        f"{args.server_threads}, loopback, fresh per run, {pinning}",
        f"files: {workdir}; repetitions: {args.reps}",
    ]
    print("pmcached paged-storage server benchmark (a benchmark, not a test)")
    for line in header:
        print(line)
    print()
    print(f"{'values':>6} {'keys':8} {'run':>3} {'server':16} {'load ops/s':>10} {'hit ratio':>9} "
          f"{'GET ops/s':>9} {'p50':>6} {'p99':>6} {'p99.9':>6} {'RssAnon':>8}  server stats")
    runs = []
    run_id = 0
    started = time.monotonic()
    try:
        for value_size, distribution, keys in cells:
            for rep in range(1, args.reps + 1):
                shift = (rep - 1) % len(servers)
                for server in servers[shift:] + servers[:shift]:
                    run_id += 1
                    r = bench.run(server, run_id, value_size, distribution, keys, data_mb)
                    r.update(server=server, value_size=value_size, distribution=distribution,
                             keys=keys, rep=rep)
                    runs.append(r)
                    s = r["stats"]
                    notes = f"items {s.get('curr_items', '?')}, evictions {s.get('evictions', '?')}"
                    if server == "extstore":
                        notes += (f", on file {s.get('extstore_objects_used', '?')} objects "
                                  f"{int(s.get('extstore_bytes_used', 0)) / MB:.0f} MB")
                    g = r["get"]
                    print(f"{value_size:>6} {distribution:8} {rep:>3} "
                          f"{server_name(args, server):16} {r['load']['ops']:>10} "
                          f"{hit_ratio(r):>9.4f} {g['ops']:>9} {g['p50']:>6} {g['p99']:>6} "
                          f"{g['p999']:>6} {r['rss_mb']:>6.1f}MB  {notes}", flush=True)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    if args.csv:
        with open(args.csv, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["value_size", "distribution", "keys", "server", "rep", "load_ops_per_s",
                        "load_stored", "get_requests", "hits", "misses", "errors",
                        "get_ops_per_s", "p50_us", "p99_us", "p999_us", "rss_anon_mb",
                        "curr_items", "evictions", "extstore_objects_used"])
            for r in runs:
                g = r["get"]
                w.writerow([r["value_size"], r["distribution"], r["keys"],
                            server_name(args, r["server"]), r["rep"], r["load"]["ops"],
                            r["load"]["stored"], g["requests"], g["hits"], g["misses"],
                            g["errors"], g["ops"], g["p50"], g["p99"], g["p999"],
                            f"{r['rss_mb']:.1f}", r["stats"].get("curr_items", ""),
                            r["stats"].get("evictions", ""),
                            r["stats"].get("extstore_objects_used", "")])
    rows = table_rows(args, runs, cells, servers)
    verdict = hundred_percent_line(args, runs)
    print()
    print(f"Medians over {args.reps} run(s), min-max in parentheses "
          f"({time.monotonic() - started:.0f} s):")
    print_table(rows)
    if verdict:
        print(verdict)
    if args.markdown:
        write_markdown(args.markdown, args, header, rows, verdict)


if __name__ == "__main__":
    main()
