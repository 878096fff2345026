#!/usr/bin/env bash
# The evaluation of seed 002 ch. 5 and its Memcached experiment, in one command (BENCHMARKS, not
# tests):
#
#   scripts/evaluate.sh [--quick]
#
#   --quick   1M keys per distribution, 3 runs per index cell, short server runs (under 7
#             minutes on 2 cores); without it 16M keys, one run per index cell and longer,
#             repeated server runs (about 50 minutes on 2 cores)
#
# Installs the Debian packages it needs, builds Release (pmcached, bench/index_bench,
# bench/mc_load, bench/buffer_bench), runs the in-process index benchmark over every engine
# (Dense/Sparse/Clustered, insert/search/range, the PM write-latency sweep), the
# mc-benchmark-shaped server benchmark and the memcaslap mix against pmcached on every engine and
# Debian's memcached in the same invocation, the tail-latency matrix (dram, wort, artcow and
# memcached, -t 1/2/4, pinned and unpinned), and the buffer benchmark (scripts/evaluate_buffer.py:
# replacement-policy miss rates and eviction cost, fix cost hash vs swizzle, miss rates through
# the real buffer manager; about 2 minutes, 1 with --quick), the B2-tree experiment
# (scripts/evaluate_b2tree.py: the URL, title and Random key sets, b2tree against bptree, dram and
# woart single-threaded, the threshold sweep, buffer pools at 50% and 10%; the trees alone on 1M
# keys per set and once more on 4M, the stores on 1M keys per set; the full mode runs more GETs
# and the buffer-pool experiment on every key set), then writes
# docs/results/*.csv, docs/results/*.png and docs/EVALUATION.md.
set -euo pipefail
script="$(cd "$(dirname "$0")" && pwd)/$(basename "$0")"
cd "$(dirname "$0")/.."

usage() { sed -n '5,10s/^# \{0,1\}//p' "$script" >&2; exit "${1:-2}"; }

mode="full"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --quick) mode="quick"; shift ;;
    -h|--help) usage 0 ;;
    *) echo "evaluate.sh: unknown argument: $1" >&2; usage ;;
  esac
done

scripts/install-deps.sh
build_dir="$(scripts/build.sh --type Release --dir build-bench --no-tests \
  --target pmcached --target index_bench --target mc_load --target buffer_bench \
  --target store_bench --target tree_bench \
  -- -DPMCACHED_BENCH=ON)"
# Debian's python3 (with matplotlib), not whatever python3 comes first on PATH.
/usr/bin/python3 scripts/evaluate.py --mode "$mode" --build "$build_dir" --results docs/results
/usr/bin/python3 scripts/evaluate_buffer.py --mode "$mode" --build "$build_dir" \
  --results docs/results
/usr/bin/python3 scripts/evaluate_b2tree.py --mode "$mode" --build "$build_dir" \
  --results docs/results
/usr/bin/python3 scripts/evaluate_report.py --results docs/results --report docs/EVALUATION.md
