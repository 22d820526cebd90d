#!/usr/bin/env bash
# Sets up, builds, then runs the ctshard tool with the given arguments (default: `plan` on the
# embedded transformer block).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bash "$root/scripts/setup-python.sh" >&2  # torch 2.13.0 and the package's build tools, as the tests use them
bash "$root/scripts/build.sh" --target ctshard_tool >&2
build=${CTSHARD_BUILD_DIR:-$root/build}
if [ $# -eq 0 ]; then set -- plan; fi
exec "$build/examples/ctshard" "$@"
