#!/usr/bin/env bash
# Configures every combination of CTSHARD_BUILD_TESTS / _EXAMPLES / _BENCHMARKS into a scratch
# directory and, with --build, builds each one's default target: a combination that configures
# must also build. The other options do not choose targets: CTSHARD_BUILD_PYTHON is what
# `pip install .` sets, CTSHARD_BUILD_FUZZERS refuses to configure without clang, and
# CTSHARD_SANITIZE / CTSHARD_WERROR only change flags.
# Usage: scripts/check_option_combos.sh [--build] [scratch dir, default /tmp/ctshard-combos]
set -euo pipefail
build=0
if [[ "${1:-}" == "--build" ]]; then build=1; shift; fi
root=$(cd "$(dirname "$0")/.." && pwd)
scratch=${1:-/tmp/ctshard-combos}
mkdir -p "$scratch"
status=0
for tests in OFF ON; do
  for examples in OFF ON; do
    for benchmarks in OFF ON; do
      dir="$scratch/t${tests}-e${examples}-b${benchmarks}"
      flags=(-DCTSHARD_BUILD_TESTS=$tests -DCTSHARD_BUILD_EXAMPLES=$examples -DCTSHARD_BUILD_BENCHMARKS=$benchmarks)
      if ! cmake -S "$root" -B "$dir" -DCMAKE_BUILD_TYPE=Release "${flags[@]}" >"$dir.configure.log" 2>&1; then
        echo "configure FAILED: ${flags[*]} (see $dir.configure.log)"; status=1; continue
      fi
      if [[ $build == 1 ]] && ! cmake --build "$dir" -j"${JOBS:-2}" >"$dir.build.log" 2>&1; then
        echo "build FAILED: ${flags[*]} (see $dir.build.log)"; status=1; continue
      fi
      echo "ok: ${flags[*]}"
    done
  done
done
exit $status
