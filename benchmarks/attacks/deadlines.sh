#!/usr/bin/env bash
# Time-limit adherence of the whole-graph entry points (docs/robustness.md, "One deadline"):
# each request pinned to one core (taskset -c ${CPU:-1}), its wall time and peak memory
# (/usr/bin/time) beside the limit, the status it returned and the load average before it.
#   bash benchmarks/attacks/deadlines.sh [TOOL]      (default build/examples/ctshard)
# The inputs: the contest instances A, B, G (../shared/iopddl), staircases written by
# staircase_iopddl.py, the 5-dim chain of issue 22, Swin-B on 2x2x2 with FSDP inputs.
# ULIMIT_KB (default 8000000) caps each run's address space so a runaway cannot take the machine.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
tool=${1:-$root/build/examples/ctshard}
cpu=${CPU:-1}
shared=${CTSHARD_SHARED_DIR:-$root/../shared}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
py=${PYTHON:-python3}
"$py" "$root/benchmarks/attacks/staircase_iopddl.py" "$work/stair_93k.json"
for n in 8000 16000; do "$py" "$root/benchmarks/attacks/staircase_iopddl.py" "$work/stair_$n.json" --nodes $n --no-edges; done
cat >"$work/chain5.fx.txt" <<'FX'
def forward(self, x: "f32[32, 32, 32]", y: "f32[32, 32, 32]"):
    add: "f32[32, 32, 32]" = torch.ops.aten.add.Tensor(x, y)
    mul: "f32[32, 32, 32]" = torch.ops.aten.mul.Tensor(add, y)
    sub: "f32[32, 32, 32]" = torch.ops.aten.sub.Tensor(mul, add)
    return (sub,)
FX
printf '%-36s %8s %9s %9s %-40s %s\n' request limit wall peakMB status load
run() {  # name limit_s args...
  local name=$1 limit=$2
  shift 2
  local load
  load=$(cut -d' ' -f1 /proc/loadavg)
  (ulimit -v "${ULIMIT_KB:-8000000}"; /usr/bin/time -o "$work/time" -f '%e %M' taskset -c "$cpu" "$tool" "$@" >"$work/out" 2>"$work/err")
  local wall mem status
  wall=$(awk 'END {print $1}' "$work/time")
  mem=$(awk 'END {printf "%.0f", $2 / 1024}' "$work/time")
  status=$("$py" -c "import json, sys
try:
    j = json.load(open(sys.argv[1]))
    print(j['status'] + ('' if j.get('feasible', True) else ', no plan') + ('' if j.get('solver', {}).get('build_complete', True) else ', greedy'))
except Exception:
    print(open(sys.argv[2]).read().strip()[:60] or 'no output')" "$work/out" "$work/err")
  printf '%-36s %8s %9s %9s %-40s %s\n' "$name" "$limit" "$wall" "$mem" "${status:0:40}" "$load"
}
for c in B:1 G:1 A:1 A:3; do
  f="$shared/iopddl/asplos-2025-iopddl-${c%%:*}.json.gz"
  [ -f "$f" ] && run "iopddl ${c%%:*}" "${c##*:}" iopddl "$f" --time-limit-s "${c##*:}" --json
done
run "iopddl staircase 2060 (93 KB)" 3 iopddl "$work/stair_93k.json" --time-limit-s 3 --json
for n in 8000 16000; do run "iopddl staircase $n" 3 iopddl "$work/stair_$n.json" --time-limit-s 3 --json; done
for ms in 1000 20000; do
  run "chain5 --every-candidate" "$((ms / 1000))" plan "$work/chain5.fx.txt" --mesh 2x2x2x2x2 --global --every-candidate --time-limit-ms "$ms" --json
done
swin="$shared/graphs/more/swin_b_fw.fx.txt"
if [ -f "$swin" ]; then
  mapfile -t place < <("$py" -c "import sys; sys.path.insert(0, '$root/benchmarks/global'); from placements import place_args; print('\n'.join(place_args('$swin', [2, 2, 2], 'fsdp')))")
  run "swin_b_fw 2x2x2 fsdp (default limit)" 10 plan "$swin" --mesh 2x2x2 --global --json "${place[@]}"
fi
