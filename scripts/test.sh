#!/usr/bin/env bash
# Sets up, builds everything, and runs the whole test suite with ctest; then repeats the summary
# lines of the reference-case and simulated-mesh checks from the test log.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bash "$root/scripts/build.sh" || exit 1
build=${CTSHARD_BUILD_DIR:-$root/build}
ctest --test-dir "$build" --output-on-failure -j "$(nproc)"
rc=$?
grep -hE "reference cases matched|^sim: [a-z]+: rows checked|^sim: [0-9]+ registered ops" "$build/Testing/Temporary/LastTest.log" 2>/dev/null | sort -u
exit $rc
