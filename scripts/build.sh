#!/usr/bin/env bash
# Configures (CMake + Ninja, warnings as errors) and builds pmcached.
#
#   scripts/build.sh [--type Release|Debug|RelWithDebInfo] [--sanitize address,undefined|thread]
#                    [--dir DIR] [--jobs N] [--no-tests] [--target T]... [-- EXTRA_CMAKE_ARGS...]
#
# The default directory is build/ (build-asan/ with address,undefined, build-tsan/ with thread).
# Build output goes to stderr; the absolute build directory is the only line printed on stdout,
# so callers can write: dir="$(scripts/build.sh --sanitize thread)".
set -euo pipefail
script="$(cd "$(dirname "$0")" && pwd)/$(basename "$0")"
cd "$(dirname "$0")/.."
root="$(pwd)"

usage() { sed -n '2,9s/^# \{0,1\}//p' "$script" >&2; exit "${1:-2}"; }

type="Release"
sanitize=""
dir=""
jobs=""
tests="ON"
targets=()
extra=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --type) type="${2:?--type needs a value}"; shift 2 ;;
    --sanitize) sanitize="${2:?--sanitize needs a value}"; shift 2 ;;
    --dir) dir="${2:?--dir needs a value}"; shift 2 ;;
    --jobs) jobs="${2:?--jobs needs a value}"; shift 2 ;;
    --no-tests) tests="OFF"; shift ;;
    --target) targets+=("${2:?--target needs a value}"); shift 2 ;;
    --) shift; extra=("$@"); break ;;
    -h|--help) usage 0 ;;
    *) echo "build.sh: unknown argument: $1" >&2; usage ;;
  esac
done

case "$type" in
  Release|Debug|RelWithDebInfo) ;;
  *) echo "build.sh: --type must be Release, Debug or RelWithDebInfo, not '$type'" >&2; exit 2 ;;
esac
case "$sanitize" in
  ""|address|undefined|address,undefined|undefined,address|thread) ;;
  *) echo "build.sh: --sanitize must be address,undefined or thread, not '$sanitize'" >&2; exit 2 ;;
esac

if [[ -z "$dir" ]]; then
  case "$sanitize" in
    "") dir="build" ;;
    thread) dir="build-tsan" ;;
    *) dir="build-asan" ;;
  esac
fi
[[ "$dir" = /* ]] || dir="$root/$dir"

{
  cmake -S "$root" -B "$dir" -G Ninja \
    -DCMAKE_BUILD_TYPE="$type" \
    -DPMCACHED_WERROR=ON \
    -DPMCACHED_TESTS="$tests" \
    -DPMCACHED_SANITIZE="$sanitize" \
    "${extra[@]}"
  build_args=()
  [[ -n "$jobs" ]] && build_args+=(--parallel "$jobs")
  for t in "${targets[@]}"; do build_args+=(--target "$t"); done
  cmake --build "$dir" "${build_args[@]}"
} >&2

echo "$dir"
