#!/usr/bin/env bash
# Sets up and starts pmcached on 127.0.0.1:11211 with the default engine and pool
# (data/pmcached.pool). Extra arguments are passed to pmcached and override these defaults,
# e.g. scripts/run.sh -p 11311 -vv
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh
dir="$(scripts/build.sh --type Release --dir build --no-tests --target pmcached)"
mkdir -p data
exec "$dir/server/pmcached" -l 127.0.0.1 -p 11211 "$@"
