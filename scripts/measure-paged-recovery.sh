#!/usr/bin/env bash
# A MEASUREMENT, not a test: how long a paged engine (bptree, b2tree) takes to come back after a crash.
#
#   scripts/measure-paged-recovery.sh [--items N] [--engine NAME] [--buffer-pool-mb MB]
#                                     [--page-table hash|swizzle] [--eviction POLICY]
#                                     [--log-mb MB] [--page-size BYTES] [--b2-threshold N] [--dir DIR]
#                                     [--pmcached-bin PATH] [--keep]
#
#   --items N            items to load (default 1000000): 16-byte keys, 100-byte values
#   --engine NAME        a paged engine (default bptree)
#   --buffer-pool-mb MB  the DRAM buffer pool (default 16: about a tenth of 1M items' pages)
#   --page-table, --eviction, --log-mb, --page-size, --b2-threshold: passed on (defaults: the
#                        server's)
#   --dir DIR            where the pool and page file go (default a new directory under ${TMPDIR:-/tmp})
#   --pmcached-bin PATH  the pmcached to measure (default build/server/pmcached)
#   --keep               keep the pool and page file afterwards
#
# Like scripts/measure-recovery.sh, for a pool (the redo log) plus a page file (the items):
# starts pmcached on new files, loads the items with a pipelined loader (batches of 1000 sets,
# every reply read), then (a) SIGKILLs it and restarts: the log since the last checkpoint is
# replayed; (b) stops that one with SIGTERM (a checkpoint) and restarts: nothing to replay. For
# each start it prints the wall time from exec to the first `version` reply, the server's STAT
# recovery_time_us (replay plus the store's scan of every record), the engine's replay and
# buffer counters, and checks items_recovered and a sample of values.
set -euo pipefail
script="$(cd "$(dirname "$0")" && pwd)/$(basename "$0")"
cd "$(dirname "$0")/.."
root="$(pwd)"

usage() { sed -n '4,17s/^# \{0,1\}//p' "$script" >&2; exit "${1:-2}"; }

items=1000000
engine="bptree"
flags=(--buffer-pool-mb 16)
dir=""
keep=0
pmcached_bin="$root/build/server/pmcached"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --items) items="${2:?}"; shift 2 ;;
    --engine) engine="${2:?}"; shift 2 ;;
    --buffer-pool-mb|--page-table|--eviction|--log-mb|--page-size|--b2-threshold)
      flags+=("$1" "${2:?}"); shift 2 ;;
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
  dir="$(mktemp -d "${TMPDIR:-/tmp}/pmcached-paged-recovery.XXXXXX")"
  [[ $keep == 1 ]] || trap 'rm -rf "$dir"' EXIT
else
  mkdir -p "$dir"
  [[ $keep == 1 ]] || trap 'rm -f "$dir/recovery.pool" "$dir/recovery.pool.pages"' EXIT
fi
pool="$dir/recovery.pool"
rm -f "$pool" "$pool.pages"

/usr/bin/python3 scripts/measure_recovery.py --binary "$pmcached_bin" --engine "$engine" \
  --pool "$pool" --items "$items" --logdir "$dir" --restarts sigkill,sigterm --paged \
  --figures log_units_replayed,checkpoints,log_used_bytes,buffer_frames,buffer_misses,buffer_evictions,page_file_pages,page_file_reads,page_file_direct_io,tree_height \
  -- "${flags[@]}"
