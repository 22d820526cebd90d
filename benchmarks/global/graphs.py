"""Greedy vs global plans of FX graphs: `ctshard plan --global --json` per graph, mesh and input
setting (see placements.py), one markdown row each.

    python3 benchmarks/global/graphs.py [GRAPH.fx.txt ...] [--tool build/examples/ctshard]
        [--mesh 2x4 --mesh 2x2x2] [--setting replicated --setting fsdp] [--time-limit-ms 120000]

Without graphs: every *.fx.txt in ../shared/graphs and ../shared/graphs/more. Columns: greedy and
global total redistribution cost (µs, `plan`'s model), nodes whose strategy changed, the gap
(0 = proven optimal), the solver's time and the cost-graph build time (ms), the process's wall
time (s), and the candidate counts (all nodes / largest node).
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import placements  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


def run(tool: str, graph: Path, mesh: str, setting: str, limit_ms: float) -> dict:
    """One global plan; the JSON document plus the wall time ('wall_s')."""
    sizes = [int(x) for x in mesh.split("x")]
    cmd = [tool, "plan", str(graph), "--mesh", mesh, "--global", "--json", "--time-limit-ms", str(limit_ms)]
    cmd += placements.place_args(graph, sizes, setting)
    t0 = time.perf_counter()
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    j = json.loads(out)
    j["wall_s"] = time.perf_counter() - t0
    return j


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("graphs", nargs="*", type=Path)
    ap.add_argument("--tool", default=str(ROOT / "build/examples/ctshard"))
    ap.add_argument("--mesh", action="append")
    ap.add_argument("--setting", action="append")
    ap.add_argument("--time-limit-ms", type=float, default=120000)
    a = ap.parse_args(argv)
    graphs = a.graphs or sorted((ROOT.parent / "shared/graphs").glob("*.fx.txt")) + sorted((ROOT.parent / "shared/graphs/more").glob("*.fx.txt"))
    print("| graph | mesh | inputs | greedy µs | global µs | nodes changed | saving | gap | solve ms | build ms | wall s | candidates (max) |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for g in graphs:
        for mesh in a.mesh or ["2x4", "2x2x2"]:
            for setting in a.setting or ["replicated", "fsdp"]:
                try:
                    j = run(a.tool, g, mesh, setting, a.time_limit_ms)
                except subprocess.CalledProcessError as e:
                    print(f"| {g.name} | {mesh} | {setting} | error: {e.stderr.strip()[:80]} |||||||||")
                    continue
                s = j["solver"]
                greedy, total = j["greedy_total_cost_us"], j["total_cost_us"]
                saving = f"{100 * (greedy - total) / greedy:.1f} %" if greedy > 0 else "–"
                print(f"| {g.name.removesuffix('.fx.txt')} | {mesh} | {setting} | {greedy:,.1f} | {total:,.1f} | {j['nodes_changed']} / {len(j['nodes'])} "
                      f"| {saving} | {j['optimality_gap']:.3g} | {s['solve_ms']:.1f} | {s['build_ms']:.0f} | {j['wall_s']:.2f} "
                      f"| {s['candidates']:,} ({s['max_candidates']}) |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
