#!/usr/bin/env bash
# Checks that every C++ file matches .clang-format; lists the files that do not and exits 1.
#
#   scripts/check-format.sh [--fix]
#
# --fix rewrites those files in place instead. Uses Debian's clang-format (14 on bookworm):
# another version may format a few constructs differently, so the check pins the major version.
set -euo pipefail
script="$(cd "$(dirname "$0")" && pwd)/$(basename "$0")"
cd "$(dirname "$0")/.."

fix=0
case "${1:-}" in
  "") ;;
  --fix) fix=1 ;;
  -h|--help) sed -n '2,7s/^# \{0,1\}//p' "$script"; exit 0 ;;
  *) echo "check-format.sh: unknown argument: $1" >&2; exit 2 ;;
esac

if ! command -v clang-format >/dev/null; then
  echo "check-format: clang-format is not installed (scripts/install-deps.sh installs it)" >&2
  exit 2
fi
version="$(clang-format --version | sed -n 's/.*version \([0-9]*\)\..*/\1/p')"
if [[ "$version" != 14 ]]; then
  echo "check-format: clang-format $version found, 14 expected (Debian bookworm)" >&2
  exit 2
fi

# Tracked sources when this is a git checkout, every source below the tree otherwise.
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  mapfile -t files < <(git ls-files -- '*.h' '*.cc')
else
  mapfile -t files < <(find . -path './build*' -prune -o \( -name '*.h' -o -name '*.cc' \) \
    -type f -print | sed 's|^\./||' | sort)
fi

if [[ $fix -eq 1 ]]; then
  clang-format -i "${files[@]}"
  echo "check-format: formatted ${#files[@]} files"
  exit 0
fi

bad=()
for f in "${files[@]}"; do
  if ! clang-format --dry-run --Werror "$f" >/dev/null 2>&1; then bad+=("$f"); fi
done
if [[ ${#bad[@]} -gt 0 ]]; then
  echo "check-format: ${#bad[@]} of ${#files[@]} files differ from .clang-format" \
    "(scripts/check-format.sh --fix rewrites them):" >&2
  printf '  %s\n' "${bad[@]}" >&2
  exit 1
fi
echo "check-format: ${#files[@]} files match .clang-format"
