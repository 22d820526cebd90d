#!/usr/bin/env bash
# Sets up (Debian and Python packages), builds everything, runs the C++ suite with ctest, installs
# the Python package from this checkout and runs the Python suites (API, DTensor conformance) with
# pytest; then repeats the summary lines of the reference-case, simulated-mesh and conformance
# checks. CTSHARD_CI_EXTRA=1 adds the clang -Werror, ASan+UBSan and fuzz-smoke builds (below).
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
py=${PYTHON:-python3}
bash "$root/scripts/setup-python.sh" || exit 1
bash "$root/scripts/build.sh" || exit 1
build=${CTSHARD_BUILD_DIR:-$root/build}
ctest --test-dir "$build" --output-on-failure -j "$(nproc)" -LE slow  # slow runs: scripts/bench-global.sh
rc=$?
echo "== Python package (pip install $root) =="
PIP_BREAK_SYSTEM_PACKAGES=1 PIP_ROOT_USER_ACTION=ignore "$py" -m pip install -q --no-build-isolation "$root" || exit 1
pylog="$build/pytest.log"
(cd "$root" && CTSHARD_TOOL="$build/examples/ctshard" "$py" -m pytest -q -rs -p no:cacheprovider tests/python 2>&1) | tee "$pylog"
prc=${PIPESTATUS[0]}
grep -hE "reference cases matched|^sim: [a-z]+: rows checked|^sim: [0-9]+ registered ops" "$build/Testing/Temporary/LastTest.log" 2>/dev/null | sort -u
grep -hE "^(python API|conformance|sim\(py\))" "$pylog" 2>/dev/null
# Extra builds (opt-in: CTSHARD_CI_EXTRA=1; they do not fit CI's 30 minutes on 2 cores next to the
# suite above, see docs/robustness.md): clang++ with warnings as errors, and g++ with
# AddressSanitizer + UndefinedBehaviorSanitizer, each followed by its ctest run; then the
# libFuzzer smoke runs (clang).
erc=0
if [ "${CTSHARD_CI_EXTRA:-0}" = 1 ]; then
  jobs=$(nproc)
  echo "== extra: clang++ -Wall -Wextra -Wpedantic -Wconversion -Werror ($root/build-clang) =="
  { cmake -S "$root" -B "$root/build-clang" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER=clang++ -DCTSHARD_BUILD_BENCHMARKS=OFF >/dev/null &&
    cmake --build "$root/build-clang" -j "$jobs" >/dev/null &&
    ctest --test-dir "$root/build-clang" --output-on-failure -j "$jobs" -LE slow | tail -3; } || erc=1
  echo "== extra: g++ AddressSanitizer + UndefinedBehaviorSanitizer ($root/build-asan) =="
  { cmake -S "$root" -B "$root/build-asan" -DCMAKE_BUILD_TYPE=Release -DCTSHARD_SANITIZE=ON -DCTSHARD_BUILD_BENCHMARKS=OFF >/dev/null &&
    cmake --build "$root/build-asan" -j "$jobs" >/dev/null &&
    ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
      ctest --test-dir "$root/build-asan" --output-on-failure -j "$jobs" -LE "compile_fail|consumer|slow" | tail -3; } || erc=1
  echo "== extra: libFuzzer smoke runs ($root/build-fuzz) =="
  { cmake -S "$root" -B "$root/build-fuzz" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++ -DCTSHARD_BUILD_FUZZERS=ON \
      -DCTSHARD_BUILD_TESTS=OFF -DCTSHARD_BUILD_BENCHMARKS=OFF -DCTSHARD_BUILD_EXAMPLES=OFF >/dev/null &&
    cmake --build "$root/build-fuzz" -j "$jobs" --target fuzzers >/dev/null &&
    ctest --test-dir "$root/build-fuzz" --output-on-failure -j "$jobs" | tail -3; } || erc=1
fi
[ $rc -eq 0 ] && [ $prc -eq 0 ] && [ $erc -eq 0 ]
