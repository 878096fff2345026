"""The "B2-tree" section of docs/EVALUATION.md from the CSVs of scripts/evaluate_b2tree.py:
section(res, rel, w), called by evaluate_report.py (through evaluate_b2tree.section)."""
import os
import re
import statistics

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from report_markdown import read, table, yes  # noqa: E402

SETS = ("url", "title", "random")
SET_NAMES = {"url": "URL", "title": "title", "random": "Random"}
BARS = {"url": (1.6, False), "title": (1.6, False), "random": (1.0, True)}
ORDER = ("b2tree", "bptree", "dram", "woart")


def cell(values, digits):
    """median [min–max], or the median alone when the repetitions agree to `digits`."""
    if not values:
        return "-"
    m, lo, hi = statistics.median(values), min(values), max(values)
    text = f"{m:,.{digits}f}"
    if f"{lo:.{digits}f}" != f"{hi:.{digits}f}":
        text += f" [{lo:,.{digits}f}–{hi:,.{digits}f}]"
    return text


def engine_key(label):
    base = label.split(":")[0]
    return (ORDER.index(base) if base in ORDER else len(ORDER), label)


def bar_cells(key_set, ratios):
    """The issue's bar for `key_set` and whether the median of `ratios` meets it."""
    bar, strict = BARS[key_set]
    med = statistics.median(ratios) if ratios else 0
    return [f"{'>' if strict else '≥'} {bar}", yes(med > bar if strict else med >= bar)]


def tree_lookup_cells(key_set, base, mine):
    """tree_bench rows of bptree (`base`) and b2tree (`mine`), repetition by repetition: their
    lookup ns, the throughput ratio per repetition, the bar and whether it is met."""
    look = [float(b["lookup_ns"]) / float(m["lookup_ns"]) for b, m in zip(base, mine)]
    return [cell([float(r["lookup_ns"]) for r in base], 0),
            cell([float(r["lookup_ns"]) for r in mine], 0), cell(look, 2),
            *bar_cells(key_set, look)]


class Runs:
    """b2tree_runs.csv: values per (experiment, key set, page size, engine, phase) by rep."""

    def __init__(self, rows):
        self.rows = rows

    def select(self, experiment, key_set, page_size, engine, phase, pool=None):
        return sorted((r for r in self.rows if r["experiment"] == experiment
                       and r["key_set"] == key_set and int(r["page_size"]) == page_size
                       and r["engine"] == engine and r["phase"] == phase
                       and (pool is None or r["pool_percent"] == str(pool))),
                      key=lambda r: int(r["rep"]))

    def values(self, *args, column="cpu_ns_per_op", **kw):
        return [float(r[column]) for r in self.select(*args, **kw)]

    def engines(self, experiment, key_set=None, page_size=None):
        return sorted({r["engine"] for r in self.rows if r["experiment"] == experiment
                       and (key_set is None or r["key_set"] == key_set)
                       and (page_size is None or int(r["page_size"]) == page_size)},
                      key=engine_key)

    def ratio(self, experiment, key_set, page_size, phase, num, den, **kw):
        """Per repetition, den's ns / num's ns: num's throughput over den's."""
        a = self.values(experiment, key_set, page_size, num, phase, **kw)
        b = self.values(experiment, key_set, page_size, den, phase, **kw)
        return [y / x for x, y in zip(a, b) if x > 0]


def lookup_plot(path, runs, page_size):
    engines = runs.engines("main", page_size=page_size)
    fig, ax = plt.subplots(figsize=(9, 4.2))
    width = 0.8 / max(1, len(engines))
    for i, e in enumerate(engines):
        meds = [statistics.median(runs.values("main", s, page_size, e, "get", column="mops") or
                                  [0]) for s in SETS]
        ax.bar([x + i * width for x in range(len(SETS))], meds, width, label=e)
    ax.set_xticks([x + width * (len(engines) - 1) / 2 for x in range(len(SETS))],
                  [SET_NAMES[s] for s in SETS])
    ax.set_ylabel("GET Mops/s, 1 thread (median)")
    ax.set_title(f"Lookups, fully resident, {page_size // 1024} KiB pages")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def sweep_plot(path, runs, page_size, thresholds):
    fig, ax = plt.subplots(figsize=(8, 4.2))
    for s in SETS:
        ys = [statistics.median(runs.values("sweep", s, page_size, f"b2tree:t{t}", "get",
                                            column="mops") or [float("nan")])
              for t in thresholds]
        line, = ax.plot(thresholds, ys, marker="o", label=f"b2tree, {SET_NAMES[s]}")
        ref = runs.values("sweep", s, page_size, "bptree", "get", column="mops")
        if ref:
            ax.axhline(statistics.median(ref), color=line.get_color(), linestyle="--",
                       linewidth=1, label=f"bptree, {SET_NAMES[s]}")
    ax.set_xscale("log", base=2)
    ax.set_xticks(thresholds, [str(t) for t in thresholds])
    ax.set_xlabel("threshold (slots per range)")
    ax.set_ylabel("GET Mops/s, 1 thread (median)")
    ax.set_title("b2tree threshold sweep")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def pool_plot(path, runs, page_size, sets, engines, pools):
    fig, ax = plt.subplots(figsize=(8, 4.2))
    for s in sets:
        for e in engines:
            xs, ys = [], []
            for p in pools:
                exp, kw = ("main", {}) if p == 100 else ("pool", {"pool": p})
                v = runs.values(exp, s, page_size, e, "get", column="mops", **kw)
                if v:
                    xs.append(p)
                    ys.append(statistics.median(v))
            ax.plot(xs, ys, marker="o", label=f"{e}, {SET_NAMES[s]}")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xticks(pools, [f"{p:g}" for p in pools])
    ax.set_xlabel("buffer pool (% of the data's pages)")
    ax.set_ylabel("GET Mops/s, 1 thread (median)")
    ax.set_title(f"Lookups with a smaller buffer pool, {page_size // 1024} KiB pages")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def tree_stats(stats, page_size):
    """Rows of the embedded-tree statistics b2tree reports (names with embedded/range/rebuild)."""
    wanted = re.compile(r"embedded|tree_bytes|range|rebuild|b2")
    by = {}
    for r in stats:
        if (r["experiment"] == "main" and int(r["page_size"]) == page_size
                and r["engine"].startswith("b2tree") and wanted.search(r["stat"])):
            by.setdefault((r["key_set"], r["stat"]), []).append(r["value"])
    return by


def tree_section(res, rel, w, info):
    """The trees alone (bench/tree_bench): seed 004 §4.3's measure, and the space of §4.6."""
    path = os.path.join(res, "b2tree_tree.csv")
    if not os.path.exists(path) or os.path.getsize(path) == 0:
        return
    every = read(path)
    # The hash page table everywhere; the swizzled run (one page size) in a table of its own.
    rows = [r for r in every if r.get("page_table", "hash") == "hash"]
    swizzled = [r for r in every if r.get("page_table") == "swizzle"]
    page_sizes = sorted({int(r["page_size"]) for r in rows}, reverse=True)
    thresholds = sorted({int(r["threshold"]) for r in rows if int(r["threshold"]) > 0})

    def runs(key_set, page_size, threshold):
        return sorted((r for r in rows if r["key_set"] == key_set
                       and int(r["page_size"]) == page_size and int(r["threshold"]) == threshold),
                      key=lambda r: int(r["rep"]))

    def ratios(key_set, page_size, threshold, column):
        base = runs(key_set, page_size, 0)
        mine = runs(key_set, page_size, threshold)
        return [float(b[column]) / float(m[column]) for b, m in zip(base, mine)]

    w("\n### The trees alone: lookups, inserts and embedded-tree space (seed 004 §4.3, §4.6)\n\n")
    tree_keys = max((int(r["keys"]) for r in rows), default=0)
    w(f"`bench/tree_bench`: bptree and b2tree without the store — no item records, no redo log, "
      f"each key mapped to an 8-byte payload, as seed 004 measures its trees — built from the "
      f"key set ({tree_keys:,} keys per set, made as above; seed 004's sets have millions, and a "
      f"set small enough to stay in the machine's caches hides the cache misses the embedded "
      f"tree saves) in one shuffled order, then {int(info['tree_lookups']):,} random lookups, "
      f"fully resident, one thread, {info['tree_repetitions']} repetition(s) with fresh trees, all "
      f"resident at once and taking turns (each phase in 40 turns, the trees' order rotated per "
      f"repetition), so a slow spell of the machine falls on every tree alike. ns are the thread's CPU time; ratios (bptree ns / b2tree ns = throughput "
      f"ratio) are taken per repetition. Tree bytes: the embedded-tree area per page (with its "
      f"4-byte header) from a walk of every page after the lookups.\n\n")
    if not thresholds:
        w("b2tree is not registered in this build: only bptree ran.\n")
        return
    main = 32 if 32 in thresholds else thresholds[0]
    for page_size in page_sizes:
        w(f"{page_size // 1024} KiB pages, b2tree with threshold {main}:\n\n")
        out = []
        for s in SETS:
            base, mine = runs(s, page_size, 0), runs(s, page_size, main)
            if not base or not mine:
                continue
            mean_bytes = statistics.median(float(r["tree_bytes_mean"]) for r in mine)
            out.append([SET_NAMES[s], *tree_lookup_cells(s, base, mine),
                        cell(ratios(s, page_size, main, "insert_ns"), 2),
                        f"{mean_bytes:.0f} ({100 * mean_bytes / page_size:.2f}%) / "
                        f"{max(int(r['tree_bytes_max']) for r in mine)}",
                        f"{statistics.median(float(r['ranges_mean']) for r in mine):.1f}",
                        f"{int(mine[-1]['pages']):,} / {int(base[-1]['pages']):,}"])
        w(table(["keys", "bptree lookup ns", "b2tree lookup ns", "lookup b2tree / bptree", "bar",
                 "met", "insert b2tree / bptree", "tree bytes per page: mean (% of page) / max",
                 "ranges per page", "pages b2tree / bptree"], out))
        w("\n")
        if page_size == 65536:
            means = [statistics.median(float(r["tree_bytes_mean"]) for r in runs(s, 65536, main))
                     for s in SETS if runs(s, 65536, main)]
            if means:
                w(f"Seed 004 §4.6's bar, the embedded tree ≤ 0.5% of a 64 KiB page on average "
                  f"(328 B): {yes(max(means) <= 0.005 * 65536)} (largest key-set mean "
                  f"{max(means):.0f} B).\n\n")
    swizzle_table(swizzled, w)
    # The threshold sweep at the tree level
    plot = "b2tree_tree_threshold.png"
    fig, axes = plt.subplots(1, len(page_sizes), figsize=(5.5 * len(page_sizes), 3.8),
                             squeeze=False)
    for ax, page_size in zip(axes[0], page_sizes):
        for s in SETS:
            ys = [statistics.median(ratios(s, page_size, t, "lookup_ns")) for t in thresholds
                  if runs(s, page_size, t)]
            if len(ys) == len(thresholds):
                ax.plot(thresholds, ys, marker="o", label=SET_NAMES[s])
        ax.axhline(1.0, color="grey", linewidth=0.8)
        ax.set_xscale("log", base=2)
        ax.set_xticks(thresholds, [str(t) for t in thresholds])
        ax.set_xlabel("threshold (slots per range)")
        ax.set_ylabel("lookups, b2tree / bptree")
        ax.set_title(f"tree_bench, {page_size // 1024} KiB pages")
        ax.legend()
    fig.tight_layout()
    fig.savefig(os.path.join(res, plot), dpi=100)
    plt.close(fig)
    w(f"![b2tree threshold sweep, trees alone]({rel}/{plot})\n\n")
    w("Threshold sweep, lookup b2tree / bptree (insert b2tree / bptree):\n\n")
    out = []
    for page_size in page_sizes:
        for s in SETS:
            out.append([f"{page_size // 1024} KiB", SET_NAMES[s]] + [
                f"{statistics.median(ratios(s, page_size, t, 'lookup_ns')):.2f} "
                f"({statistics.median(ratios(s, page_size, t, 'insert_ns')):.2f})"
                if runs(s, page_size, t) else "-" for t in thresholds])
    w(table(["page", "keys"] + [f"t{t}" for t in thresholds], out))


def swizzle_table(rows, w):
    """The trees alone with pointer swizzling instead of the hash page table."""
    if not rows:
        return

    def runs(key_set, threshold):
        return sorted((r for r in rows if r["key_set"] == key_set
                       and int(r["threshold"]) == threshold), key=lambda r: int(r["rep"]))

    page_size = int(rows[0]["page_size"])
    w(f"The same, {page_size // 1024} KiB pages, with the buffer manager's pointer swizzling "
      f"(`tree_bench --page-table swizzle`) instead of its hash page table: a page's children "
      f"are fixed through the frame their parent's slot names, without a page-table lookup. "
      f"Seed 004's trees ran on Umbra's buffer manager, which swizzles (its §1); the fixes cost "
      f"both trees alike, so the cheaper they are, the more of a lookup is the search in the "
      f"pages that the embedded tree speeds up.\n\n")
    out = []
    for s in SETS:
        base, mine = runs(s, 0), runs(s, 32)
        if not base or not mine:
            continue
        out.append([SET_NAMES[s], *tree_lookup_cells(s, base, mine)])
    w(table(["keys", "bptree lookup ns", "b2tree lookup ns", "lookup b2tree / bptree", "bar",
             "met"], out))
    w("\n")


def scale_section(res, w):
    """The trees alone on a larger key set (4M keys), scattered and streamed lookups."""
    path = os.path.join(res, "b2tree_tree_scale.csv")
    if not os.path.exists(path) or os.path.getsize(path) == 0:
        return
    rows = read(path)

    def runs(n, key_set, layout, threshold):
        return sorted((r for r in rows if int(r["keys"]) == n and r["key_set"] == key_set
                       and r["key_layout"] == layout and int(r["threshold"]) == threshold),
                      key=lambda r: int(r["rep"]))

    sizes = sorted({int(r["keys"]) for r in rows})
    page_size = int(rows[0]["page_size"])
    reps = len({r["rep"] for r in rows})
    said = " and ".join(f"{n:,}" for n in sizes)
    w(f"\n### The trees alone at a larger scale: {said} keys per set\n\n")
    w(f"The same `bench/tree_bench` comparison on key sets of {said} keys, "
      f"{page_size // 1024} KiB pages, b2tree threshold 32, {reps} "
      f"repetition(s). Scattered: the keys looked up are read from one string each, scattered "
      f"over the heap (a cache miss or two per lookup that both trees pay); streamed "
      f"(`--stream-keys`): read front to back from one buffer in lookup order, as a server reads "
      f"them from its connections.\n\n")
    out = []
    for n in sizes:
        for layout in ("scattered", "streamed"):
            for s in SETS:
                base, mine = runs(n, s, layout, 0), runs(n, s, layout, 32)
                if not base or not mine:
                    continue
                out.append([f"{n:,}", SET_NAMES[s], layout, *tree_lookup_cells(s, base, mine)])
    w(table(["set size", "keys", "lookups", "bptree lookup ns", "b2tree lookup ns",
             "lookup b2tree / bptree", "bar", "met"], out))


def section(res, rel, w):
    """The "B2-tree" section, if evaluate_b2tree.py's CSVs are in `res`."""
    paths = {n: os.path.join(res, f"b2tree_{n}.csv") for n in ("run", "keysets", "runs", "stats")}
    if not all(os.path.exists(p) for p in paths.values()):
        return
    info = {r["field"]: r["value"] for r in read(paths["run"])}
    runs = Runs(read(paths["runs"]))
    stats = read(paths["stats"]) if os.path.getsize(paths["stats"]) else []
    page_sizes = [int(p) for p in info["page_sizes"].split(",")]
    main_page = page_sizes[0]
    engines = info["engines"].split(",")
    has_b2 = "b2tree" in engines and "bptree" in engines

    w("\n## B2-tree (issue 19): an embedded trie in every page\n\n")
    w(f"`bench/store_bench`, run by `{info['command']}` (the B2-tree step of "
      f"`scripts/evaluate.sh`), e.g. `{info['example']}`: {info['date']}, commit "
      f"{info['commit']}, {info['cpus']} × {info['cpu']}, kernel {info['kernel']}, "
      f"{info['build']}; load average {info['load_before']} before and {info['load_after']} "
      f"after ({info['seconds']} s, a shared 2-core machine). One thread; every engine of a run "
      f"open at once, the GETs in rotated rounds of the same keys; {info['repetitions']} "
      f"repetition(s) with fresh stores; {int(info['gets']):,} random GETs of existing keys "
      f"per engine and repetition, values of 100 B. ns per operation are CPU time of the "
      f"thread (the ratios use them: other processes' time is left out), Mops/s wall time. "
      f"Cells: median [min–max].\n\n")
    w("Which table is seed 004's experiment: its lookups (§4.1, §4.3) are those of the trees "
      "alone over a buffer manager, 64 KiB pages, fully resident, one thread: the first table "
      "of \"The trees alone\" below, and its swizzled twin (Umbra's page table). This report "
      "reads the issue's lookup bars as that experiment's. The other tables hold the same bars "
      "against configurations the seed did not measure (16 KiB pages, 4M keys, GETs through "
      "the whole store); a \"no\" there is a ratio below the bar, as measured.\n\n")
    if info["missing"]:
        w(f"**Not registered in this build, so not measured: {info['missing']}.** "
          + ("The b2tree/bptree ratios below are therefore missing. " if not has_b2 else "")
          + "\n\n")

    # Key sets
    w("### Key sets (seed 004 §4.2, Table 1)\n\n")
    w("Made by `scripts/make-keysets.py` (its header documents how), no downloads: URL-like "
      "keys from Debian word lists (`wamerican`, `wbritish`) and the file lists of installed "
      "packages (`/var/lib/dpkg/info/*.list`) with a skewed choice of hosts, so that many keys "
      "share long prefixes; Wikipedia-like titles from the word lists (`List_of_…`, "
      "`…_(film)`, names, phrases); Random strings (length normal with mean 24 and standard "
      "deviation 8, bytes uniform over the 222 a memcached key may hold). Distinct, shuffled, "
      "1–250 bytes. Mean common prefix: of each key with the next in sorted order.\n\n")
    w(table(["set", "keys", "mean length (B)", "max length (B)", "mean common prefix (B)"],
            [[SET_NAMES.get(r["set"], r["set"]), f"{int(r['keys']):,}", r["mean_length"],
              r["max_length"], r["mean_common_prefix"]] for r in read(paths["keysets"])]))

    tree_section(res, rel, w, info)
    scale_section(res, w)

    # Fully resident lookups and inserts
    w("\n### Through the store: GETs and SETs as a memcached client sees them\n\n"
      f"The key sets of the \"Key sets\" table ({int(info['n']):,} keys per set) through the "
      "whole store (item records of 100-byte values, the redo log for every SET), so a lookup "
      "also pays what the store and the engine do around the tree search. Where the stores hold "
      "fewer keys than the trees alone, their ratios are also those of a smaller data set.\n")
    for page_size in page_sizes:
        plot = f"b2tree_lookups_{page_size // 1024}k.png"
        lookup_plot(os.path.join(res, plot), runs, page_size)
        w(f"\n### Lookups and inserts, fully resident, {page_size // 1024} KiB pages\n\n")
        w(f"![b2tree lookups]({rel}/{plot})\n\n")
        rows = []
        for s in SETS:
            for e in runs.engines("main", s, page_size):
                get = runs.select("main", s, page_size, e, "get")
                misses = [int(r["buffer_misses"]) for r in get if r["buffer_misses"]]
                rows.append([SET_NAMES[s], e,
                             cell(runs.values("main", s, page_size, e, "get"), 0),
                             cell(runs.values("main", s, page_size, e, "get", column="mops"), 2),
                             cell(runs.values("main", s, page_size, e, "set"), 0),
                             str(max(misses)) if misses else "n/a",
                             f"{max(int(r['pages_in_use']) for r in get):,}"
                             if get and get[0]["pages_in_use"] else "n/a"])
        w(table(["keys", "engine", "GET ns", "GET Mops/s", "SET ns", "buffer misses in GETs",
                 "pages in use"], rows))
        if has_b2:
            w("\nb2tree against bptree in the same runs (throughput ratio = bptree ns / b2tree "
              "ns per repetition; the issue's bars: lookups ≥ 1.6 on URL and title keys, "
              "> 1.0 on Random):\n\n")
            rows = []
            for s in SETS:
                look = runs.ratio("main", s, page_size, "get", "b2tree", "bptree")
                ins = runs.ratio("main", s, page_size, "set", "b2tree", "bptree")
                rows.append([SET_NAMES[s], cell(look, 2), *bar_cells(s, look), cell(ins, 2)])
            w(table(["keys", "lookup b2tree / bptree", "bar", "met", "insert b2tree / bptree"],
                    rows))

    # Threshold sweep
    sweep = [r for r in runs.rows if r["experiment"] == "sweep"]
    w("\n### Threshold sweep\n\n")
    if not sweep:
        w("Not run: b2tree is not registered in this build.\n")
    else:
        thresholds = sorted({int(r["engine"].split(":t")[1]) for r in sweep
                             if r["engine"].startswith("b2tree:t")})
        plot = "b2tree_threshold.png"
        sweep_plot(os.path.join(res, plot), runs, main_page, thresholds)
        w(f"b2tree with each threshold (slots per range of the embedded tree) beside bptree, "
          f"one run per key set, {main_page // 1024} KiB pages, GET ns / SET ns:\n\n")
        w(f"![b2tree threshold sweep]({rel}/{plot})\n\n")
        rows = []
        for s in SETS:
            rows.append([SET_NAMES[s]] + [
                f"{cell(runs.values('sweep', s, main_page, e, 'get'), 0)} / "
                f"{cell(runs.values('sweep', s, main_page, e, 'set'), 0)}"
                for e in [f"b2tree:t{t}" for t in thresholds] + ["bptree"]])
        w(table(["keys"] + [f"t{t}" for t in thresholds] + ["bptree"], rows))

    # Embedded tree space
    w("\n### Embedded-tree statistics (`stats engine` after the GETs)\n\n")
    any_stats = False
    for page_size in page_sizes:
        by = tree_stats(stats, page_size)
        if not by:
            continue
        any_stats = True
        w(f"{page_size // 1024} KiB pages (the seed's bar: the embedded tree ≤ 0.5% of a 64 KiB "
          f"page on average, 328 B):\n\n")
        names = sorted({k[1] for k in by})
        w(table(["keys"] + names, [[SET_NAMES[s]] + [", ".join(sorted(set(by.get((s, n), ["-"]))))
                                                    for n in names] for s in SETS]))
        w("\n")
    if not any_stats:
        w("None: no b2tree in this run.\n")

    # Smaller buffer pools
    pool_rows = [r for r in runs.rows if r["experiment"] == "pool"]
    w("\n### Lookups with the buffer pool at 50% and 10% of the data\n\n")
    if not pool_rows:
        w("Not run: no paged engine.\n")
    else:
        sets = [s for s in SETS if any(r["key_set"] == s for r in pool_rows)]
        paged = runs.engines("pool")
        pools = sorted({int(float(r["pool_percent"])) for r in pool_rows}, reverse=True)
        plot = "b2tree_pool.png"
        pool_plot(os.path.join(res, plot), runs, main_page, sets, paged, [100] + pools)
        w(f"Each store loaded with a pool that holds everything, closed (a checkpoint) and "
          f"reopened with a pool of the given share of the pages it uses (the engine's minimum "
          f"of frames can make it more: the effective share is shown), then "
          f"{int(info['pool_gets']):,} GETs per repetition (each miss reads a page from the page "
          f"file in /dev/shm). 100%: the fully resident runs above. Seed 004 §4.5: the gap "
          f"narrows as I/O dominates.\n\n")
        w(f"![b2tree buffer pool]({rel}/{plot})\n\n")
        rows = []
        for s in sets:
            for p in pools:
                for e in paged:
                    get = runs.select("pool", s, main_page, e, "get", pool=p)
                    if not get:
                        continue
                    eff = 100 * int(get[0]["frames"]) / max(1, int(get[0]["pages_in_use"]))
                    per_get = [int(r["buffer_misses"]) / int(r["ops"]) for r in get]
                    ratio = (cell(runs.ratio("pool", s, main_page, "get", "b2tree", "bptree",
                                             pool=p), 2)
                             if e == "b2tree" and "bptree" in paged else "")
                    rows.append([SET_NAMES[s], f"{p} ({eff:.0f})", e,
                                 cell(runs.values("pool", s, main_page, e, "get", pool=p), 0),
                                 cell(runs.values("pool", s, main_page, e, "get", pool=p,
                                                  column="mops"), 3),
                                 cell(per_get, 3), ratio])
        w(table(["keys", "pool % (effective)", "engine", "GET ns", "GET Mops/s",
                 "misses per GET", "lookup b2tree / bptree"], rows))

    # Instructions
    w("\n### Instructions per lookup\n\n")
    instr_path = os.path.join(res, "b2tree_instructions.csv")
    if info["counters"] != "yes" or not os.path.exists(instr_path):
        w(f"Not measured: {info['counter_note']} (this virtual machine exposes no hardware "
          f"counters), so seed 004's Table 2 has no counterpart here.\n")
    else:
        instr = read(instr_path)
        w("`perf stat -e instructions` over two runs per engine that differ only in the "
          "number of GETs; the difference divided by the extra GETs (the load and the warm-up "
          "cancel out):\n\n")
        es = sorted({r["engine"] for r in instr}, key=engine_key)
        w(table(["keys"] + es, [[SET_NAMES[s]] + [next((r["instructions_per_get"] for r in instr
                                                        if r["key_set"] == s and r["engine"] == e),
                                                       "-") for e in es] for s in SETS]))
