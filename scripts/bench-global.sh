#!/usr/bin/env bash
# The long global-plan runs kept out of the default suite, and the figures of docs/benchmarks.md
# ("Whole-graph plans"): the slow ctests (every real graph on 2x4 / 2x2x2, every small graph's
# export against CBC and toulbar2), IOPDDL B and G within the contest's limits, the greedy-vs-global
# tables of every graph (replicated / fsdp inputs; data-parallel inputs, whose section of
# docs/benchmarks.md greedy_vs_global.py rewrites), and GPT-2 small (12 layers, forward + backward) on 2x4 when torch is there.
# Assumes a build in ${CTSHARD_BUILD_DIR:-./build} (scripts/build.sh).
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${CTSHARD_BUILD_DIR:-$root/build}
py=${PYTHON:-python3}
tool="$build/examples/ctshard"
status=0
ctest --test-dir "$build" --output-on-failure -L slow || status=1
for c in B:60 G:120; do
  f="$root/../shared/iopddl/asplos-2025-iopddl-${c%%:*}.json.gz"
  [ -f "$f" ] && { "$tool" iopddl "$f" --time-limit-s "${c##*:}" || status=1; }
done
"$py" "$root/benchmarks/global/graphs.py" --tool "$tool" || status=1
"$py" "$root/benchmarks/global/greedy_vs_global.py" --tool "$tool" || status=1   # rewrites its section of docs/benchmarks.md
if "$py" -c "import torch" 2>/dev/null; then
  gpt2="$build/gpt2_12.fx.txt"
  [ -f "$gpt2" ] || "$py" "$root/benchmarks/global/gpt2.py" "$gpt2" || status=1
  "$py" "$root/benchmarks/global/graphs.py" --tool "$tool" --mesh 2x4 --setting replicated --setting fsdp --setting dp "$gpt2" || status=1
fi
exit $status
