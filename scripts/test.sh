#!/usr/bin/env bash
# Sets up (Debian and Python packages), builds everything, runs the C++ suite with ctest, installs
# the Python package from this checkout and runs the Python suites (API, DTensor conformance) with
# pytest; then repeats the summary lines of the reference-case, simulated-mesh and conformance
# checks.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
py=${PYTHON:-python3}
bash "$root/scripts/setup-python.sh" || exit 1
bash "$root/scripts/build.sh" || exit 1
build=${CTSHARD_BUILD_DIR:-$root/build}
ctest --test-dir "$build" --output-on-failure -j "$(nproc)"
rc=$?
echo "== Python package (pip install $root) =="
PIP_BREAK_SYSTEM_PACKAGES=1 PIP_ROOT_USER_ACTION=ignore "$py" -m pip install -q --no-build-isolation "$root" || exit 1
pylog="$build/pytest.log"
(cd "$root" && CTSHARD_TOOL="$build/examples/ctshard" "$py" -m pytest -q -rs -p no:cacheprovider tests/python 2>&1) | tee "$pylog"
prc=${PIPESTATUS[0]}
grep -hE "reference cases matched|^sim: [a-z]+: rows checked|^sim: [0-9]+ registered ops" "$build/Testing/Temporary/LastTest.log" 2>/dev/null | sort -u
grep -hE "^(python API|conformance|sim\(py\))" "$pylog" 2>/dev/null
[ $rc -eq 0 ] && [ $prc -eq 0 ]
