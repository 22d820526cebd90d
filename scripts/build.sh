#!/usr/bin/env bash
# Configures and builds ctshard in ./build (Release, g++ by default; CXX=clang++ to switch).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bash "$root/scripts/setup-debian.sh"
build=${CTSHARD_BUILD_DIR:-$root/build}
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release ${CXX:+-DCMAKE_CXX_COMPILER=$CXX} >/dev/null
cmake --build "$build" -j "$(nproc)" "$@"
