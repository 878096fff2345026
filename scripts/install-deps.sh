#!/usr/bin/env bash
# Installs the Debian bookworm packages pmcached needs to build, test and benchmark.
# Idempotent: checks with dpkg-query first; runs `apt-get update` + install only when something
# is missing, so a second run is fast and needs no network. Uses sudo when not root.
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(
  build-essential cmake ninja-build pkg-config clang-format
  libboost-dev libspdlog-dev libxxhash-dev libpmem-dev libgtest-dev libgmock-dev libbenchmark-dev
  libcli11-dev libabsl-dev
  memcached libmemcached-tools netcat-openbsd nutcracker gdb
  python3 python3-pymemcache python3-pytest python3-matplotlib
  wamerican wbritish
)

missing=()
for pkg in "${PACKAGES[@]}"; do
  status="$(dpkg-query -W -f='${db:Status-Status}' "$pkg" 2>/dev/null || true)"
  if [[ "$status" != "installed" ]]; then
    missing+=("$pkg")
  fi
done

if [[ ${#missing[@]} -eq 0 ]]; then
  echo "install-deps: all ${#PACKAGES[@]} packages are installed"
  exit 0
fi

SUDO=()
if [[ "$(id -u)" -ne 0 ]]; then
  if ! command -v sudo >/dev/null; then
    echo "install-deps: missing packages (${missing[*]}); run as root or install sudo" >&2
    exit 1
  fi
  SUDO=(sudo)
fi

echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${SUDO[@]}" apt-get update -q
"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive \
  apt-get install -y -q --no-install-recommends "${missing[@]}"
