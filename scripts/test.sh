#!/usr/bin/env bash
# Sets up and runs every pmcached test; stops at the first failure with a non-zero exit.
#
#   scripts/test.sh [--quick] [--skip-asan] [--skip-tsan] [--jobs N]
#
# Passes (all by default), after a formatting check (scripts/check-format.sh):
#   release  Release build in build/, every test:                ctest -j2
#   asan     ASan+UBSan build (RelWithDebInfo at -O1 -g1) in build-asan/, every test but the
#            engine-independent wire checks on more than one engine of each kind and the paged
#            protocol test beyond two engine/page-table pairs (label "engine-matrix";
#            tests/integration/CMakeLists.txt)
#   tsan     TSan build (RelWithDebInfo at -O1 -g1) in build-tsan/, the tests labelled "tsan"
#            (server and integration tests) except the crash-point enumerations and the
#            single-threaded StorePmTest tests;
#            fails if no test carries the label.
# --quick runs the release pass only.
set -euo pipefail
script="$(cd "$(dirname "$0")" && pwd)/$(basename "$0")"
cd "$(dirname "$0")/.."

usage() { sed -n '2,16s/^# \{0,1\}//p' "$script" >&2; exit "${1:-2}"; }

run_asan=1
run_tsan=1
jobs=2
while [[ $# -gt 0 ]]; do
  case "$1" in
    --quick) run_asan=0; run_tsan=0; shift ;;
    --skip-asan) run_asan=0; shift ;;
    --skip-tsan) run_tsan=0; shift ;;
    --jobs) jobs="${2:?--jobs needs a value}"; shift 2 ;;
    -h|--help) usage 0 ;;
    *) echo "test.sh: unknown argument: $1" >&2; usage ;;
  esac
done

start=$SECONDS
step() { printf '\n==== test.sh: %s (%ds elapsed)\n' "$*" "$((SECONDS - start))"; }

step "installing dependencies"
scripts/install-deps.sh

step "formatting check (.clang-format)"
scripts/check-format.sh

# Every pass compiles the test executables as unity builds (tests/CMakeLists.txt says why).
unity_tests="-DPMCACHED_UNITY_TESTS=ON"

step "release build (build/)"
# The benchmarks are built (and the evaluation pipeline smoke-tested) in this pass only.
dir="$(scripts/build.sh --type Release --dir build --jobs "$jobs" -- -DPMCACHED_BENCH=ON \
  "$unity_tests")"
step "release tests"
ctest --test-dir "$dir" --output-on-failure --no-tests=error -j "$jobs"

# The sanitizer builds compile at -O1 with line tables only (what the sanitizers' documentation
# suggests): 43% (ASan+UBSan) and 36% (TSan) less compile time than -O2 -g, tests as fast within
# a few seconds, stack traces still with file:line.
sanitizer_flags="-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG"

if [[ $run_asan -eq 1 ]]; then
  step "ASan+UBSan build (build-asan/)"
  dir="$(scripts/build.sh --type RelWithDebInfo --sanitize address,undefined --dir build-asan \
    --jobs "$jobs" -- "$sanitizer_flags" "$unity_tests")"
  step "ASan+UBSan tests"
  ASAN_OPTIONS="abort_on_error=1:detect_leaks=1:strict_string_checks=1" \
  UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1" \
    ctest --test-dir "$dir" --output-on-failure --no-tests=error -j "$jobs" -LE engine-matrix
fi

if [[ $run_tsan -eq 1 ]]; then
  step "TSan build (build-tsan/)"
  dir="$(scripts/build.sh --type RelWithDebInfo --sanitize thread --dir build-tsan --jobs "$jobs" \
    -- "$sanitizer_flags" "$unity_tests")"
  step "TSan tests (label tsan)"
  # Kernels with high mmap randomisation break TSan's memory layout; run without ASLR when the
  # machine allows it (a default container seccomp profile may not).
  norandom=()
  if setarch "$(uname -m)" -R true 2>/dev/null; then
    norandom=(setarch "$(uname -m)" -R)
  fi
  # The crash-simulator tests (names with Crash or Repair) enumerate crash points on one thread,
  # and StorePmTest's tests other than its Concurrent ones fill a pool one set at a time on one
  # thread: nothing for TSan to find, and half of this pass's time. The other passes run them.
  TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1" \
    "${norandom[@]}" ctest --test-dir "$dir" --output-on-failure --no-tests=error -j "$jobs" -L tsan \
    -E 'Crash|Repair|StorePmTest\.[^C]'
fi

step "all test passes succeeded"
