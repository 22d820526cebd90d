"""Exports the whole-graph sharding problems of ilp_side_by_side.py: each graph on a 2x4 mesh with
`--free-inputs` and a per-device memory budget that binds, as IOPDDL JSON.

    python3 benchmarks/global/export_ilp_problems.py OUTDIR [GRAPH.fx.txt ...] [--tool build/examples/ctshard]

The budget: the graph is exported without a budget and solved by `ctshard iopddl`; with R the
input bytes all replicated, M the least possible and U those of the unconstrained optimum, the
budget is R / 2 when U > R / 2, else (M + U) / 2 -- below U, so it binds, and at least M, so a
plan exists. Writes OUTDIR/NAME.json.gz and OUTDIR/budgets.json (the bytes and the budget).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import ilp_side_by_side as ilp  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
SHARED = Path(os.environ.get("CTSHARD_SHARED_DIR", ROOT.parent / "shared"))
GRAPHS = ["graphs/bart_layer_fw", "graphs/bart_layer_bw", "graphs/vit_b16_fw", "graphs/gpt_megatron_l1_fw", "graphs/more/dlrm_fw",
          "graphs/more/t5_small_bw", "graphs/more/llama3_8b_block_fw", "graphs/more/gpt_tp2_joint"]


def export(tool: str, graph: Path, out: Path, budget_gib: float) -> None:
    subprocess.run([tool, "plan", str(graph), "--mesh", "2x4", "--global", "--free-inputs", "--memory-budget-gib", repr(budget_gib),
                    "--export-costgraph", str(out), "--time-limit-ms", "60000", "--json"], check=True, capture_output=True)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("outdir", type=Path)
    ap.add_argument("graphs", nargs="*", type=Path)
    ap.add_argument("--tool", default=str(ROOT / "build/examples/ctshard"))
    a = ap.parse_args(argv)
    a.outdir.mkdir(parents=True, exist_ok=True)
    graphs = a.graphs or [SHARED / f"{g}.fx.txt" for g in GRAPHS]
    budgets = {}
    for g in graphs:
        name = g.name.removesuffix(".fx.txt")
        free = a.outdir / f"{name}_free.json.gz"
        export(a.tool, g, free, 1e6)
        prob = ilp.load(free)
        usages = prob["nodes"]["usages"]
        live = [u for u, (s, e) in enumerate(prob["nodes"]["intervals"]) if s < e]
        rep = sum(usages[u][0] for u in live)  # each input's all-Replicate spec is its first strategy
        least = sum(min(usages[u]) for u in live)
        j = json.loads(subprocess.run([a.tool, "iopddl", str(free), "--time-limit-s", "60", "--json"], check=True, capture_output=True,
                                      text=True).stdout)
        opt = sum(usages[u][j["strategies"][u]] for u in live)
        budget = rep / 2 if opt > rep / 2 else (least + opt) / 2
        gib = budget / 2**30
        export(a.tool, g, a.outdir / f"{name}.json.gz", gib)
        free.unlink()
        budgets[name] = {"replicated_bytes": rep, "least_bytes": least, "unconstrained_optimum_bytes": opt, "budget_gib": gib,
                         "binds": opt > budget}
        print(name, budgets[name], flush=True)
    (a.outdir / "budgets.json").write_text(json.dumps(budgets, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
