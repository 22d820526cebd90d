#!/usr/bin/env bash
# Installs the Python packages ctshard's package and tests need, into the environment of
# ${PYTHON:-python3}: torch 2.13.0 (the CPU build; pinned, so that pip never resolves a newer
# torch, which would download a multi-GB CUDA build), pytest, the package's build tools
# (scikit-build-core, nanobind), PuLP and highspy (the ILP side-by-side test and benchmark,
# benchmarks/global/ilp_side_by_side.py), and matplotlib (ctshard.plot, the `plot` extra, and
# benchmarks/figures.py); with CTSHARD_FUZZ=1 also atheris. Installs nothing when everything
# is already there.
set -euo pipefail
py=${PYTHON:-python3}
export PIP_BREAK_SYSTEM_PACKAGES=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_ROOT_USER_ACTION=ignore
need=()
"$py" - <<'PY' || need+=("torch==2.13.0")
import importlib.metadata as m, sys
sys.exit(0 if m.version("torch").split("+")[0] == "2.13.0" else 1)
PY
for spec in "pytest>=7" "scikit-build-core>=0.10" "nanobind>=2.0" "pulp>=3.0" "highspy>=1.7" "matplotlib>=3.7"; do
  "$py" - "$spec" <<'PY' || need+=("$spec")
import importlib.metadata as m, re, sys
name, low = re.match(r"([\w-]+)>=([\d.]+)", sys.argv[1]).groups()
try:
    have = tuple(int(x) for x in re.findall(r"\d+", m.version(name))[:2])
except m.PackageNotFoundError:
    sys.exit(1)
sys.exit(0 if have >= tuple(int(x) for x in low.split("."))[:2] else 1)
PY
done
# atheris (the Python fuzz target tests/fuzz/python/fuzz_api.py) only when asked: CTSHARD_FUZZ=1.
if [ "${CTSHARD_FUZZ:-0}" = 1 ]; then
  "$py" -c "import atheris" 2>/dev/null || need+=("atheris==2.3.0")
fi
if [ ${#need[@]} -gt 0 ]; then
  echo "pip installing: ${need[*]}"
  "$py" -m pip install -q "${need[@]}"
fi
