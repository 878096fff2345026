#!/usr/bin/env bash
# A BENCHMARK, not a test: memcaslap against pmcached and against Debian's memcached, in the
# same invocation, with the same workload and server settings, each server started fresh on
# its own free loopback port for every run. Runs alternate memcached, pmcached, memcached, ...
#
#   scripts/bench-server.sh [--engine NAME] [--threads N] [--concurrency N] [--key-size B]
#                           [--value-size B] [--get-ratio R] [--duration SECS] [--reps N]
#                           [--server-threads N] [--memory MB]
#
#   --engine NAME        pmcached's --engine (default wort, the server's default)
#   --threads N          memcaslap client threads, -T (default 2)
#   --concurrency N      memcaslap concurrent connections, -c (default 64)
#   --key-size B         key length in bytes (default 16)
#   --value-size B       value length in bytes (default 100)
#   --get-ratio R        fraction of gets, the rest are sets (default 0.9)
#   --duration SECS      length of each run, memcaslap -t (default 10)
#   --reps N             runs per server (default 3)
#   --server-threads N   -t for both servers (default 2)
#   --memory MB          -m for both servers (default 1024, so neither evicts)
#   --pmcached-bin PATH  the pmcached to measure (default build/server/pmcached)
#
# Prints the machine, build type, engine and workload, each run's ops/s (memcaslap's final TPS),
# the median and min-max of each server, and the ratio pmcached/memcached of the medians.
# pmcached is build/server/pmcached, built (Release) if missing.
set -euo pipefail
script="$(cd "$(dirname "$0")" && pwd)/$(basename "$0")"
cd "$(dirname "$0")/.."
root="$(pwd)"

usage() { sed -n '5,20s/^# \{0,1\}//p' "$script" >&2; exit "${1:-2}"; }

engine="wort"
client_threads=2
concurrency=64
key_size=16
value_size=100
get_ratio=0.9
duration=10
reps=3
server_threads=2
memory_mb=1024
# Development hook: a command that stands in for pmcached (it gets -l -p -t -m but not
# --engine/--pool), e.g. --pmcached-cmd "/usr/bin/memcached -U 0 -u nobody".
pmcached_cmd=""
pmcached_bin="$root/build/server/pmcached"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --engine) engine="${2:?}"; shift 2 ;;
    --threads) client_threads="${2:?}"; shift 2 ;;
    --concurrency) concurrency="${2:?}"; shift 2 ;;
    --key-size) key_size="${2:?}"; shift 2 ;;
    --value-size) value_size="${2:?}"; shift 2 ;;
    --get-ratio) get_ratio="${2:?}"; shift 2 ;;
    --duration) duration="${2:?}"; shift 2 ;;
    --reps) reps="${2:?}"; shift 2 ;;
    --server-threads) server_threads="${2:?}"; shift 2 ;;
    --memory) memory_mb="${2:?}"; shift 2 ;;
    --pmcached-cmd) pmcached_cmd="${2:?}"; shift 2 ;;
    --pmcached-bin) pmcached_bin="$(realpath "${2:?}")"; shift 2 ;;
    -h|--help) usage 0 ;;
    *) echo "bench-server.sh: unknown argument: $1" >&2; usage ;;
  esac
done

die() { echo "bench-server.sh: $*" >&2; exit 1; }
is_uint() { [[ "$1" =~ ^[0-9]+$ ]] && [[ "$1" -gt 0 ]]; }
duration="${duration%s}"
for pair in "threads:$client_threads" "concurrency:$concurrency" "key-size:$key_size" \
            "value-size:$value_size" "duration:$duration" "reps:$reps" \
            "server-threads:$server_threads" "memory:$memory_mb"; do
  is_uint "${pair#*:}" || die "--${pair%%:*} must be a positive integer, not '${pair#*:}'"
done
awk -v r="$get_ratio" 'BEGIN { exit !(r ~ /^(0|1)?(\.[0-9]+)?$/ && r != "" && r >= 0 && r <= 1) }' \
  || die "--get-ratio must be a number in [0, 1], not '$get_ratio'"
(( concurrency >= client_threads )) || die "--concurrency must be at least --threads"

command -v memcaslap >/dev/null || die "memcaslap not found (scripts/install-deps.sh installs it)"
memcached_bin=/usr/bin/memcached
[[ -x "$memcached_bin" ]] || die "$memcached_bin not found (scripts/install-deps.sh installs it)"
python=/usr/bin/python3
[[ -x "$python" ]] || python=python3

build_type="n/a"
if [[ -z "$pmcached_cmd" ]]; then
  if [[ ! -x "$pmcached_bin" && "$pmcached_bin" == "$root/build/server/pmcached" ]]; then
    echo "bench-server.sh: building pmcached (Release) ..." >&2
    scripts/build.sh --type Release --dir build --target pmcached >/dev/null
  fi
  [[ -x "$pmcached_bin" ]] || die "$pmcached_bin is not an executable"
  cache="$(dirname "$pmcached_bin")/../CMakeCache.txt"
  if [[ -f "$cache" ]]; then
    build_type="$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$cache")"
    build_type="${build_type:-Release (project default)}"
  else
    build_type="unknown (no CMakeCache.txt next to the binary)"
  fi
  sanitize="$(sed -n 's/^PMCACHED_SANITIZE:[A-Z]*=//p' "$cache" 2>/dev/null || true)"
  [[ -n "$sanitize" ]] && build_type="$build_type + sanitize=$sanitize"
  pmcached_version="$("$pmcached_bin" -V 2>/dev/null || echo "pmcached (version unknown)")"
else
  build_type="n/a (--pmcached-cmd)"
  pmcached_version="stand-in: $pmcached_cmd"
fi

workdir="$(mktemp -d "${TMPDIR:-/tmp}/pmcached-bench.XXXXXX")"
server_pid=""
cleanup() {
  if [[ -n "$server_pid" ]]; then kill "$server_pid" 2>/dev/null || true; fi
  rm -rf "$workdir"
}
trap cleanup EXIT

# memcaslap workload file: key, value and command distributions (cmd 0 = set, 1 = get).
set_ratio="$(awk -v r="$get_ratio" 'BEGIN { printf "%g", 1 - r }')"
cat > "$workdir/workload.cfg" <<CFG
key
$key_size $key_size 1
value
$value_size $value_size 1
cmd
0 $set_ratio
1 $get_ratio
CFG

free_port() {
  "$python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])'
}

# Waits until the server on port $1 answers "version"; fails if it exits or takes over 10 s.
wait_ready() {
  local port="$1" log="$2" reply
  for _ in $(seq 100); do
    kill -0 "$server_pid" 2>/dev/null || { cat "$log" >&2; die "server exited at start-up"; }
    reply="$(exec 2>/dev/null 3<>"/dev/tcp/127.0.0.1/$port" && printf 'version\r\n' >&3 &&
             read -r -t 2 line <&3 && echo "$line")" || true
    [[ "$reply" == VERSION* ]] && return 0
    sleep 0.1
  done
  cat "$log" >&2
  die "server on port $port did not answer 'version' within 10 s"
}

# run_once NAME REP: starts a fresh server, runs memcaslap, stops the server; sets $tps.
# (Not run in a subshell, so the EXIT trap can always stop the server it started.)
run_once() {
  local name="$1" rep="$2" port log out
  port="$(free_port)"
  log="$workdir/$name-$rep.log"
  local common=(-l 127.0.0.1 -p "$port" -t "$server_threads" -m "$memory_mb")
  if [[ "$name" == memcached ]]; then
    local user=()
    [[ "$(id -u)" -eq 0 ]] && user=(-u nobody)
    "$memcached_bin" -U 0 "${user[@]}" "${common[@]}" >"$log" 2>&1 &
  elif [[ -n "$pmcached_cmd" ]]; then
    # shellcheck disable=SC2086  # the stand-in command is meant to be word-split
    $pmcached_cmd "${common[@]}" >"$log" 2>&1 &
  else
    "$pmcached_bin" "${common[@]}" --engine "$engine" --pool "$workdir/pool-$rep" >"$log" 2>&1 &
  fi
  server_pid=$!
  wait_ready "$port" "$log"
  out="$workdir/$name-$rep.memcaslap"
  if ! timeout $((duration + 60)) memcaslap -s "127.0.0.1:$port" -F "$workdir/workload.cfg" \
      -T "$client_threads" -c "$concurrency" -t "${duration}s" >"$out" 2>&1; then
    cat "$out" >&2
    die "memcaslap failed against $name (run $rep)"
  fi
  kill -0 "$server_pid" 2>/dev/null || { cat "$log" >&2; die "$name died during run $rep"; }
  kill "$server_pid"
  wait "$server_pid" 2>/dev/null || true
  server_pid=""
  tps="$(awk '/TPS:/ { for (i = 1; i < NF; ++i) if ($i == "TPS:") v = $(i + 1) }
              END { print v }' "$out")"
  [[ "$tps" =~ ^[0-9]+$ ]] || { cat "$out" >&2; die "no TPS figure in memcaslap's output"; }
}

# summary VALUES...: "median min max" (median of an even count = mean of the middle two).
summary() {
  printf '%s\n' "$@" | sort -n | awk '{ v[NR] = $1 }
    END { m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2;
          printf "%d %d %d\n", m, v[1], v[NR] }'
}

cpu_model="$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)"
echo "pmcached server benchmark (memcaslap; a benchmark, not a test)"
echo "command:   scripts/bench-server.sh --engine $engine --threads $client_threads" \
  "--concurrency $concurrency --key-size $key_size --value-size $value_size" \
  "--get-ratio $get_ratio --duration $duration --reps $reps --server-threads $server_threads" \
  "--memory $memory_mb${pmcached_cmd:+ --pmcached-cmd \"$pmcached_cmd\"}" \
  "${pmcached_cmd:---pmcached-bin $pmcached_bin}"
echo "machine:   $(nproc) CPUs, ${cpu_model:-unknown CPU}, $(uname -sr)"
echo "pmcached:  $pmcached_version, build $build_type, engine $engine"
echo "baseline:  $("$memcached_bin" -V) ($memcached_bin)"
echo "servers:   -t $server_threads -m $memory_mb, loopback, each run on a fresh server"
echo "workload:  memcaslap -T $client_threads -c $concurrency -t ${duration}s;" \
  "key $key_size B, value $value_size B, get $get_ratio / set $set_ratio"
echo
printf '%-4s %-10s %12s\n' run server ops/s
memcached_runs=()
pmcached_runs=()
for rep in $(seq "$reps"); do
  run_once memcached "$rep"
  memcached_runs+=("$tps")
  printf '%-4s %-10s %12s\n' "$rep" memcached "$tps"
  run_once pmcached "$rep"
  pmcached_runs+=("$tps")
  printf '%-4s %-10s %12s\n' "$rep" pmcached "$tps"
done

read -r m_med m_min m_max <<<"$(summary "${memcached_runs[@]}")"
read -r p_med p_min p_max <<<"$(summary "${pmcached_runs[@]}")"
echo
printf '%-10s median %10s ops/s   spread %s - %s   (%s runs)\n' \
  memcached "$m_med" "$m_min" "$m_max" "$reps"
printf '%-10s median %10s ops/s   spread %s - %s   (%s runs)\n' \
  pmcached "$p_med" "$p_min" "$p_max" "$reps"
awk -v p="$p_med" -v m="$m_med" \
  'BEGIN { printf "ratio pmcached/memcached (medians): %.3f\n", (m > 0) ? p / m : 0 }'
