#!/usr/bin/env python3
"""The B2-tree step of scripts/evaluate.sh (issue 19, seed 004 §4; a BENCHMARK, not a test):
makes the URL, title and Random key sets (scripts/make-keysets.py), runs bench/store_bench on
them single-threaded and writes its CSVs; section() writes the "B2-tree" part of
docs/EVALUATION.md and its plots (evaluate_report.py calls it).

  evaluate_b2tree.py --mode quick|full|smoke --build BUILD_DIR --results DIR
                     [--engines b2tree,bptree,dram,woart]

Experiments:
  tree   bench/tree_bench: the trees alone (no store, no redo log, 8-byte payloads, seed 004
         §4.3's measure), bptree and b2tree with thresholds 8/16/32/64/128, every key set and
         page size, fully resident, on key sets of 1M keys in every mode but smoke: lookup and
         insert ns and the embedded trees' size per page
  swizzle  the trees alone again, bptree and b2tree (threshold 32), the first page size, with
         the buffer manager's pointer swizzling (tree_bench --page-table swizzle) instead of its
         hash page table: seed 004's trees ran on Umbra's buffer manager, which swizzles (§1)
  scale  the trees alone again, bptree and b2tree (threshold 32), on key sets of 4M keys, 64
         KiB pages, the looked-up keys scattered and streamed (tree_bench --stream-keys)
The rest through the store (store_bench, one thread, every engine of a run open at once and the
GETs in rotated rounds, so the machine's noise falls on all alike):
  main   every engine on every key set, fully resident, at each page size of the mode (64 KiB,
         the seed's, first): GET and SET ns, GET Mops/s, buffer misses during GETs
  sweep  b2tree with thresholds 8/16/32/64/128 beside bptree, fully resident (first page size)
  pool   the paged engines with the buffer pool at 50% and 10% of the pages the data needs
         (store_bench --buffer-pool-percent), so that lookups miss (seed 004 §4.5)
  instr  `perf stat -e instructions` per lookup: two runs per engine and key set that differ only
         in the number of GETs, the difference divided by the extra GETs; only where the machine
         exposes the counter (checked first; most virtual machines do not)
Engines of --engines that this build does not register (`pmcached --list-engines`) are left out
and named in the section, so the step runs before b2tree exists.

Writes b2tree_keysets.csv (seed 004's Table 1 of our sets), b2tree_tree.csv and
b2tree_tree_scale.csv (tree_bench's rows), b2tree_runs.csv (store_bench's rows
with experiment, key set and page size), b2tree_stats.csv (every engine's `stats engine` after
the GETs), b2tree_instructions.csv (with counters) and b2tree_run.csv (machine, command, load).
"""
import argparse
import csv
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pmcached_engines  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
SETS = ("url", "title", "random")
THRESHOLDS = (8, 16, 32, 64, 128)
POOLS = (50, 10)
PAGED = ("b2tree", "bptree")
# Acceptance (issue 19): lookup throughput b2tree / bptree per key set, and whether strictly.
BARS = {"url": (1.6, False), "title": (1.6, False), "random": (1.0, True)}
DEFAULT_ENGINES = "b2tree,bptree,dram,woart"
MODES = {
    # n keys per set (the store experiments), measured GETs, repetitions, page sizes (main),
    # sets of the pool experiment, GETs with a small pool (each miss reads a page: far slower),
    # GETs for perf's two runs; tree_n keys per set for the trees alone.
    "full": dict(n=1_000_000, gets=2_000_000, reps=3, page_sizes=(65536, 16384),
                 pool_sets=SETS, pool_gets=200_000, instr_gets=(200_000, 1_200_000),
                 tree_n=1_000_000, tree_lookups=2_000_000, tree_reps=5,
                 scale=dict(n=4_000_000, page_size=65536, lookups=2_000_000, reps=3)),
    "quick": dict(n=1_000_000, gets=1_000_000, reps=3, page_sizes=(65536, 16384),
                  pool_sets=("url",), pool_gets=200_000, instr_gets=(100_000, 600_000),
                  tree_n=1_000_000, tree_lookups=1_000_000, tree_reps=5,
                  scale=dict(n=4_000_000, page_size=65536, lookups=2_000_000, reps=3)),
    # Seconds, to check the pipeline; the numbers mean little.
    "smoke": dict(n=3000, gets=3000, reps=1, page_sizes=(65536,), pool_sets=("url",),
                  pool_gets=1000, instr_gets=(1000, 3000), tree_n=4000, tree_lookups=3000,
                  tree_reps=1, scale=dict(n=6000, page_size=65536, lookups=3000, reps=1)),
}
# The trees and the stores run on 1M keys per set even in quick mode: seed 004's sets are real
# URL and Wikipedia-title sets of millions of keys, and a set of 200k keys largely fits this
# machine's caches, where the cache misses that the embedded tree saves matter least (the ratio
# grows with the data: docs/B2TREE.md). The stores stayed at 200k until a paged SET stopped
# logging whole pages (the double-write buffer, stop 39: 26 -> 5 us per SET); quick mode differs
# from full now in GETs, the pool experiment's sets and perf's runs. "scale": once more on 4M
# keys (about 500 MB of key files, 6 minutes to make them and 10 to run), with the keys looked up
# read from scattered strings and streamed from one buffer (tree_bench --stream-keys).


def load_average():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def perf_counts_instructions():
    """True if `perf stat -e instructions` counts here (a VM often says <not supported>)."""
    if shutil.which("perf") is None:
        return False, "perf is not installed"
    out = subprocess.run(["perf", "stat", "-x", ",", "-e", "instructions", "true"],
                         capture_output=True, text=True)
    line = next((x for x in out.stderr.splitlines() if "instructions" in x), "")
    if out.returncode != 0 or not line or not line.split(",")[0].isdigit():
        return False, (f"`perf stat -e instructions` reports "
                       f"`{line.split(',')[0] if line else out.stderr.strip()[:80]}` here")
    return True, "perf counts instructions"


class Runner:
    def __init__(self, build, results, work, mode):
        self.bench = os.path.join(build, "bench", "store_bench")
        self.results, self.work, self.m = results, work, MODES[mode]
        self.tree = os.path.join(build, "bench", "tree_bench")
        self.rows, self.stats, self.tree_rows, self.scale_rows = [], [], [], []
        self.commands = []
        with open(os.path.join(results, "b2tree_keysets.csv"), newline="") as f:
            self.mean_length = {r["set"]: float(r["mean_length"]) for r in csv.DictReader(f)}

    def store_bench(self, experiment, key_set, engines, page_size, extra=(), pool=100):
        csv_path = os.path.join(self.work, "run.csv")
        stats_path = os.path.join(self.work, "stats.csv")
        gets = self.m["gets"] if pool >= 100 else self.m["pool_gets"]
        # With a small pool a burst takes seconds: shorter ones let the engines take turns often.
        burst = min(gets, 50_000 if pool >= 100 else 10_000)
        cmd = [self.bench, "--engines", ",".join(engines), "--threads", "1",
               "--key-file", os.path.join(self.work, f"{key_set}.keys"),
               "--gets", str(gets), "--burst", str(burst),
               "--repetitions", str(self.m["reps"]), "--page-size", str(page_size),
               "--csv", csv_path, "--stats-csv", stats_path, *extra]
        print(f"[evaluate_b2tree {time.strftime('%H:%M:%S')}] {experiment} {key_set} "
              f"{page_size // 1024} KiB: {' '.join(cmd)}", flush=True)
        out = subprocess.run(cmd, capture_output=True, text=True)
        if out.returncode not in (0, 3):  # 3: not fully resident, recorded from the misses
            sys.exit(f"store_bench failed ({out.returncode}):\n{out.stdout}\n{out.stderr}")
        # store_bench must have run on the set's keys (their mean length as make-keysets said).
        said = re.search(r"\.keys, mean ([0-9.]+) B", out.stdout)
        if not said or abs(float(said.group(1)) - self.mean_length[key_set]) > 0.1:
            sys.exit(f"store_bench did not run on {key_set}.keys:\n{out.stdout[:2000]}")
        # The key sets' and CSVs' temporary directory shown as $TMP.
        self.commands.append(" ".join(c.replace(self.work, "$TMP") if c.startswith(self.work)
                                      else os.path.relpath(c) if os.path.isabs(c) else c
                                      for c in cmd))
        extra_cols = {"experiment": experiment, "key_set": key_set, "page_size": page_size}
        with open(csv_path, newline="") as f:
            rows = list(csv.DictReader(f))
        # GETs that wrote to the redo log did more than look up (stop 51's pool and sweep runs
        # patched access times into their pages): such a run does not measure what it says.
        writing = [f"{r['engine']} repetition {r['rep']}: {r['log_units']}" for r in rows
                   if r["phase"] == "get" and r["log_units"] not in ("", "0")]
        if writing:
            sys.exit("store_bench's GETs wrote log units (" + "; ".join(writing) + ")")
        self.rows += [{**r, **extra_cols} for r in rows]
        with open(stats_path, newline="") as f:
            self.stats += [{**r, **extra_cols, "pool_percent": pool} for r in csv.DictReader(f)
                           if r["engine"].split(":")[0] in PAGED]

    def tree_bench(self, key_set, page_size, thresholds, keys_dir=None, lookups=None, reps=None,
                   stream=False, into=None, page_table="hash"):
        csv_path = os.path.join(self.work, "tree.csv")
        cmd = [self.tree, "--key-file", os.path.join(keys_dir or self.work, f"{key_set}.keys"),
               "--page-size", str(page_size), "--thresholds", ",".join(map(str, thresholds)),
               "--lookups", str(lookups or self.m["tree_lookups"]), "--repetitions",
               str(reps or self.m["tree_reps"]), "--page-table", page_table, "--csv", csv_path]
        if stream:
            cmd.append("--stream-keys")
        print(f"[evaluate_b2tree {time.strftime('%H:%M:%S')}] tree {key_set} "
              f"{page_size // 1024} KiB: {' '.join(cmd)}", flush=True)
        subprocess.run(cmd, check=True, capture_output=True)
        rows = self.tree_rows if into is None else into
        with open(csv_path, newline="") as f:
            rows += [{**r, "key_set": key_set, "key_layout": "streamed" if stream else "scattered",
                      "page_table": page_table} for r in csv.DictReader(f)]

    def instructions(self, key_set, engine, page_size):
        """Instructions per GET from two perf runs that differ only in the GETs."""
        counts = []
        for gets in self.m["instr_gets"]:
            cmd = ["perf", "stat", "-x", ",", "-e", "instructions", "-o",
                   os.path.join(self.work, "perf.txt"), "--", self.bench, "--engines", engine,
                   "--threads", "1", "--key-file", os.path.join(self.work, f"{key_set}.keys"),
                   "--gets", str(gets), "--burst", str(gets), "--repetitions", "1",
                   "--page-size", str(page_size)]
            subprocess.run(cmd, check=True, capture_output=True)
            with open(os.path.join(self.work, "perf.txt")) as f:
                line = next(x for x in f if ",instructions" in x)
            counts.append(int(line.split(",")[0]))
        g = self.m["instr_gets"]
        return (counts[1] - counts[0]) / (g[1] - g[0])


def write_csv(path, rows):
    if not rows:
        return
    fields = list(dict.fromkeys(k for r in rows for k in r))
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        w.writerows(rows)


def run(mode, build, results, wanted):
    os.makedirs(results, exist_ok=True)
    m = MODES[mode]
    registered = {e.name for e in pmcached_engines.registered_engines(
        os.path.join(build, "server", "pmcached"))}
    engines = [e for e in wanted if e in registered]
    missing = [e for e in wanted if e not in registered]
    if missing:
        print(f"[evaluate_b2tree] not registered in this build, left out: {', '.join(missing)}",
              flush=True)
    if not engines:
        sys.exit("evaluate_b2tree: none of the engines is registered")
    paged = [e for e in engines if e in PAGED]
    counters, counter_note = perf_counts_instructions()
    before, started = load_average(), time.monotonic()
    work = tempfile.mkdtemp(prefix="evaluate_b2tree.",
                            dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
    try:
        subprocess.run(["/usr/bin/python3", os.path.join(HERE, "make-keysets.py"), "--n",
                        str(m["n"]), "--out", work, "--stats-csv",
                        os.path.join(results, "b2tree_keysets.csv")], check=True)
        r = Runner(build, results, work, mode)
        main_page = m["page_sizes"][0]
        tree_thresholds = [0] + (list(THRESHOLDS) if "b2tree" in engines else [])
        tree_dir = work
        if m["tree_n"] != m["n"]:
            tree_dir = os.path.join(work, "tree")
            subprocess.run(["/usr/bin/python3", os.path.join(HERE, "make-keysets.py"), "--n",
                            str(m["tree_n"]), "--out", tree_dir], check=True)
        for page_size in m["page_sizes"]:
            for key_set in SETS:
                r.tree_bench(key_set, page_size, tree_thresholds, tree_dir)
        if "b2tree" in engines:
            for key_set in SETS:
                r.tree_bench(key_set, main_page, [0, 32], tree_dir, page_table="swizzle")
        if tree_dir != work:
            shutil.rmtree(tree_dir, ignore_errors=True)
        scale = m.get("scale")
        if scale and "b2tree" in engines:
            scale_dir = os.path.join(work, "scale")
            subprocess.run(["/usr/bin/python3", os.path.join(HERE, "make-keysets.py"), "--n",
                            str(scale["n"]), "--out", scale_dir], check=True)
            for key_set in SETS:
                for stream in (False, True):
                    r.tree_bench(key_set, scale["page_size"], [0, 32], scale_dir,
                                 scale["lookups"], scale["reps"], stream, r.scale_rows)
            shutil.rmtree(scale_dir, ignore_errors=True)
        for page_size in m["page_sizes"]:
            for key_set in SETS:
                r.store_bench("main", key_set, engines, page_size)
        if "b2tree" in engines:
            for key_set in SETS:
                sweep = [f"b2tree:t{t}" for t in THRESHOLDS] + (
                    ["bptree"] if "bptree" in engines else [])
                r.store_bench("sweep", key_set, sweep, main_page)
        for key_set in m["pool_sets"]:
            for pool in POOLS:
                if paged:
                    r.store_bench("pool", key_set, paged, main_page,
                                  ["--buffer-pool-percent", str(pool)], pool)
        instr = []
        if counters:
            for key_set in SETS:
                for engine in engines:
                    instr.append({"engine": engine, "key_set": key_set, "page_size": main_page,
                                  "instructions_per_get":
                                      f"{r.instructions(key_set, engine, main_page):.0f}"})
    finally:
        shutil.rmtree(work, ignore_errors=True)
    write_csv(os.path.join(results, "b2tree_runs.csv"), r.rows)
    write_csv(os.path.join(results, "b2tree_stats.csv"), r.stats)
    write_csv(os.path.join(results, "b2tree_tree.csv"), r.tree_rows)
    scale_path = os.path.join(results, "b2tree_tree_scale.csv")
    if r.scale_rows:
        write_csv(scale_path, r.scale_rows)
    elif os.path.exists(scale_path):
        os.remove(scale_path)
    instr_path = os.path.join(results, "b2tree_instructions.csv")
    if instr:
        write_csv(instr_path, instr)
    elif os.path.exists(instr_path):
        os.remove(instr_path)
    seconds = time.monotonic() - started
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip() or "unknown"
    with open("/proc/cpuinfo") as f:
        cpu = next((line.split(":", 1)[1].strip() for line in f
                    if line.startswith("model name")), "unknown")
    with open(os.path.join(results, "b2tree_run.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["field", "value"])
        w.writerows([["date", time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())],
                     ["command", " ".join(["scripts/evaluate_b2tree.py", *sys.argv[1:]])],
                     ["mode", mode], ["commit", commit], ["cpus", os.cpu_count()], ["cpu", cpu],
                     ["kernel", platform.release()], ["build", f"Release ({build})"],
                     ["engines", ",".join(engines)], ["missing", ",".join(missing)],
                     ["n", m["n"]], ["gets", m["gets"]], ["pool_gets", m["pool_gets"]],
                     ["tree_n", m["tree_n"]], ["tree_lookups", m["tree_lookups"]],
                     ["tree_repetitions", m["tree_reps"]],
                     ["repetitions", m["reps"]],
                     ["page_sizes", ",".join(str(p) for p in m["page_sizes"])],
                     ["counters", "yes" if counters else "no"], ["counter_note", counter_note],
                     ["example", r.commands[0] if r.commands else ""],
                     ["load_before", before], ["load_after", load_average()],
                     ["seconds", f"{seconds:.0f}"]])
    print(f"[evaluate_b2tree] done in {seconds:.0f} s", flush=True)


# --- the report ---

from evaluate_b2tree_report import section  # noqa: E402,F401  (evaluate_report.py calls it)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", choices=MODES, required=True)
    parser.add_argument("--build", required=True)
    parser.add_argument("--results", required=True)
    parser.add_argument("--engines", default=DEFAULT_ENGINES)
    args = parser.parse_args()
    if not os.path.exists(os.path.join(args.build, "bench", "store_bench")):
        sys.exit(f"no bench/store_bench in {args.build} (configure with -DPMCACHED_BENCH=ON)")
    run(args.mode, args.build, args.results, [e for e in args.engines.split(",") if e])


if __name__ == "__main__":
    main()
