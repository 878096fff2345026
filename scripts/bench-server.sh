#!/usr/bin/env bash
# A BENCHMARK, not a test: pmcached against Debian's memcached in the same invocation, ops/s and
# p50/p99/p99.9 latency per server, over a matrix of server threads and CPU pinning. Builds the
# Release pmcached and bench/mc_load in build/ if they are missing, then runs
# scripts/bench_server.py with the same arguments (see its --help), e.g.
#
#   scripts/bench-server.sh --engines dram,wort,artcow --server-threads 1,2,4 --pin both
#   scripts/bench-server.sh --client memcaslap --engines wort --duration 10
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ ! -x build/server/pmcached || ! -x build/bench/mc_load ]] &&
   [[ " $* " != *" --pmcached-bin "* ]]; then
  echo "bench-server.sh: building pmcached and mc_load (Release, build/) ..." >&2
  scripts/build.sh --type Release --dir build --target pmcached --target mc_load \
    -- -DPMCACHED_BENCH=ON >/dev/null
fi
# Debian's python3, not whatever python3 comes first on PATH.
exec /usr/bin/python3 scripts/bench_server.py "$@"
