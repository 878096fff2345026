#!/usr/bin/env bash
# A MEASUREMENT, not a test: how long pmcached takes to come back on a full pool.
#
#   scripts/measure-recovery.sh [--items N] [--engine NAME] [--memory MB] [--dir DIR]
#                               [--pmcached-bin PATH] [--keep]
#
#   --items N            items to load (default 1000000): 16-byte keys, 100-byte values
#   --engine NAME        a persistent engine (default wort)
#   --memory MB          -m, the size of the new pool (default 1024)
#   --dir DIR            where the pool file goes (default a new directory under ${TMPDIR:-/tmp})
#   --pmcached-bin PATH  the pmcached to measure (default build/server/pmcached)
#   --keep               keep the pool file afterwards
#
# Starts pmcached on a fresh pool, loads the items with a pipelined loader (batches of 1000
# sets, every reply read), then restarts it twice on the same pool: (a) after SIGTERM (clean
# shutdown) and (b) after SIGKILL (crash). For each start it prints the wall time from exec to
# the first successful `version` reply and the server's own STAT recovery_time_us, and checks
# that items_recovered equals the number loaded and that a sample of values is intact. Engines that
# rebuild volatile nodes at start-up (fptree, nvtree) also report that rebuild (startup_rebuild_us).
set -euo pipefail
script="$(cd "$(dirname "$0")" && pwd)/$(basename "$0")"
cd "$(dirname "$0")/.."
root="$(pwd)"

usage() { sed -n '4,12s/^# \{0,1\}//p' "$script" >&2; exit "${1:-2}"; }

items=1000000
engine="wort"
memory_mb=1024
dir=""
keep=0
pmcached_bin="$root/build/server/pmcached"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --items) items="${2:?}"; shift 2 ;;
    --engine) engine="${2:?}"; shift 2 ;;
    --memory) memory_mb="${2:?}"; shift 2 ;;
    --dir) dir="${2:?}"; shift 2 ;;
    --pmcached-bin) pmcached_bin="$(realpath "${2:?}")"; shift 2 ;;
    --keep) keep=1; shift ;;
    -h|--help) usage 0 ;;
    *) echo "unknown argument: $1" >&2; usage ;;
  esac
done

[[ -x "$pmcached_bin" ]] || { echo "no pmcached at $pmcached_bin (build it, or --pmcached-bin)" >&2
                               exit 1; }
if [[ -z "$dir" ]]; then
  dir="$(mktemp -d "${TMPDIR:-/tmp}/pmcached-recovery.XXXXXX")"
  [[ $keep == 1 ]] || trap 'rm -rf "$dir"' EXIT
else
  mkdir -p "$dir"
  [[ $keep == 1 ]] || trap 'rm -f "$dir/recovery.pool"' EXIT
fi
pool="$dir/recovery.pool"
rm -f "$pool"

/usr/bin/python3 scripts/measure_recovery.py --binary "$pmcached_bin" --engine "$engine" \
  --pool "$pool" --items "$items" --logdir "$dir" --restarts sigterm,sigkill \
  --figures startup_rebuild_us,inner_rebuilds,log_replays -- -m "$memory_mb"
