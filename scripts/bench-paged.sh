#!/usr/bin/env bash
# A BENCHMARK, not a test (issue 18): a data set 10x the DRAM budget on pmcached, Debian's
# memcached and memcached with extstore, in one invocation: hit ratio, GET ops/s and
# p50/p99/p99.9 per server, 100-byte and 4 KiB values, uniform and Zipf keys. Builds the Release
# pmcached and bench/mc_load in build/ if they are missing, then runs scripts/bench_paged.py with
# the same arguments (see its --help), e.g.
#
#   scripts/bench-paged.sh --quick
#   scripts/bench-paged.sh --engine bptree --pmcached-args "--page-table swizzle" \
#     --markdown docs/results/paged_server.md --csv docs/results/paged_server.csv
#
# docs/EVALUATION.md shows docs/results/paged_server.md inside the reading kept by hand in
# docs/results/paged_notes.md (scripts/evaluate_report.py).
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ ! -x build/server/pmcached || ! -x build/bench/mc_load ]] &&
   [[ " $* " != *" --pmcached-bin "* ]]; then
  echo "bench-paged.sh: building pmcached and mc_load (Release, build/) ..." >&2
  scripts/build.sh --type Release --dir build --target pmcached --target mc_load \
    -- -DPMCACHED_BENCH=ON >/dev/null
fi
# Debian's python3, not whatever python3 comes first on PATH.
exec /usr/bin/python3 scripts/bench_paged.py "$@"
