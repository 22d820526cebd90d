#!/usr/bin/env bash
# Sets up (Debian and Python packages), builds everything, runs the C++ suite with ctest, installs
# the Python package from this checkout and runs the Python suites (API, DTensor conformance) with
# pytest; then repeats the summary lines of the reference-case, simulated-mesh and conformance
# checks; then builds again with clang++ under the sanitizers and runs the suites there (below).
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
# The second build: clang++ with warnings as errors, AddressSanitizer + UndefinedBehaviorSanitizer
# (libFuzzer's coverage instrumentation on the fuzz targets' own sources), at -O1 (build type Sanitize). Its CTest run covers the
# C++ suite (compile-fail and install-consumer tests already ran with both compilers above, the
# `slow` label is left to scripts/bench-global.sh), the libFuzzer smoke runs, and the Python suite
# against the instrumented extension (python_extension_sanitized; tests marked torch_bound, whose
# time is PyTorch's, ran above). CTSHARD_SANITIZER_BUILD=0 skips it (quick local runs).
src=0
if [ "${CTSHARD_SANITIZER_BUILD:-1}" = 1 ]; then
  san=${CTSHARD_SANITIZER_BUILD_DIR:-$root/build-san}
  echo "== clang++ -Werror, ASan + UBSan + libFuzzer ($san) =="
  start=$(date +%s)
  { cmake -S "$root" -B "$san" -DCMAKE_BUILD_TYPE=Sanitize -DCMAKE_CXX_COMPILER=clang++ -DCTSHARD_BUILD_FUZZERS=ON -DCTSHARD_FUZZ_INSTRUMENT_ALL=OFF \
      -DCTSHARD_BUILD_TESTS=ON -DCTSHARD_BUILD_EXAMPLES=ON -DCTSHARD_BUILD_PYTHON=ON -DCTSHARD_BUILD_BENCHMARKS=OFF \
      -DPython_EXECUTABLE="$(command -v "$py")" >/dev/null &&
    cmake --build "$san" -j "$(nproc)" >"$san/build.log" 2>&1 || { grep -E "error|Error" "$san/build.log" | head -40; false; } } || src=1
  echo "sanitizer build: $(( $(date +%s) - start )) s"
  if [ $src -eq 0 ]; then
    ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
      ctest --test-dir "$san" --output-on-failure -j "$(nproc)" -LE "slow|compile_fail|consumer" >"$san/ctest.log" 2>&1 || src=1
    grep -E "tests passed|Total Test time|\*\*\*|Failed|Timeout" "$san/ctest.log"
    [ $src -eq 0 ] || tail -150 "$san/ctest.log"
  fi
fi
[ $rc -eq 0 ] && [ $prc -eq 0 ] && [ $src -eq 0 ]
