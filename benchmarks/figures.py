#!/usr/bin/env python3
"""The figures of docs/benchmarks.md (docs/figures/*.png), all from one script.

- compile_time.png: the compile-time sweeps — mesh expansion of a 5-row rule (g++ / clang++) and
  DTensor's 8-row mm rule over <ctshard/ctshard.hpp> — read from their tables in
  docs/benchmarks.md (benchmarks/compile/compile_time.py measures them and prints those tables).
- dtensor_vs_ctshard.png: one op's sharding choice, DTensor 2.13's propagation vs ctshard (C++
  cold and Python ``choose``) per mesh, read from the table of
  benchmarks/python/bench_dtensor_vs_ctshard.py in docs/benchmarks.md.
- plan_example.png: ``ctshard.plot`` of a shared graph's greedy and global plans (needs the
  ctshard package installed).
- solver_scaling.png and greedy_vs_global.png: ``ctshard plan GRAPH --mesh M --data-parallel
  --global --json`` over every graph of ../shared/graphs and graphs/more on meshes 2x4 and
  2x2x2: solve and cost-graph build times against the number of op nodes, and the greedy plan's
  communication against the global optimum's. ``--measure`` runs the tool and writes the runs to
  benchmarks/figures_data/solver_runs.json; without it the figures come from that file.

Usage: benchmarks/figures.py [--measure] [--tool build/examples/ctshard] [--time-limit-ms 10000]
Needs matplotlib (pip install 'ctshard[plot]' or matplotlib).
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import re
import subprocess
import sys
import time
from typing import Any

ROOT = pathlib.Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs" / "benchmarks.md"
FIGURES = ROOT / "docs" / "figures"
RUNS = ROOT / "benchmarks" / "figures_data" / "solver_runs.json"
SHARED = pathlib.Path(os.environ.get("CTSHARD_SHARED_DIR", ROOT.parent / "shared"))
MESHES = ("2x4", "2x2x2")
# input settings: data-parallel inputs pinned (greedy and global from the same inputs), or every
# input a variable with the compute term (--free-inputs: auto-parallel's problem, the solver's real work)
SETTINGS = {"data-parallel": ["--data-parallel"], "free-inputs": ["--free-inputs"]}


# ---------------------------------------------------------------------------------------------
# tables of docs/benchmarks.md


def _section(title_start: str) -> list[str]:
    """The lines of the docs/benchmarks.md section whose heading starts with ``title_start``."""
    lines = DOCS.read_text().splitlines()
    start = next(i for i, l in enumerate(lines) if l.startswith("## " + title_start))
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")), len(lines))
    return lines[start:end]


def _tables(lines: list[str]) -> list[list[list[str]]]:
    """Every Markdown table in ``lines``: rows of cells (header row first, separator dropped)."""
    tables: list[list[list[str]]] = []
    current: list[list[str]] = []
    for line in lines + [""]:
        if line.startswith("|"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if not all(re.fullmatch(r":?-+:?", c) for c in cells):
                current.append(cells)
        elif current:
            tables.append(current)
            current = []
    return tables


def _num(text: str) -> float:
    """'+0.15 s' -> 0.15, '−0.08 s' -> -0.08, '2,475' -> 2475, '**4.54 µs**' -> 4.54."""
    t = text.replace("**", "").replace("−", "-").replace(",", "")
    m = re.search(r"[-+]?\d+(\.\d+)?", t)
    if m is None:
        raise ValueError(f"no number in {text!r}")
    return float(m.group(0))


# ---------------------------------------------------------------------------------------------
# measurement


def _graphs() -> list[pathlib.Path]:
    graphs = sorted((SHARED / "graphs").glob("*.fx.txt")) + sorted((SHARED / "graphs" / "more").glob("*.fx.txt"))
    if not graphs:
        sys.exit(f"figures.py --measure: no graphs in {SHARED}/graphs (clone ../shared beside the repository)")
    return graphs


def measure(tool: str, time_limit_ms: float) -> list[dict[str, Any]]:
    """One ``plan --global --data-parallel --json`` per graph and mesh: sizes, times, costs."""
    runs = []
    for g in _graphs():
        for (setting, flags), mesh in ((sf, m) for sf in SETTINGS.items() for m in MESHES):
            cmd = [tool, "plan", str(g), "--mesh", mesh, *flags, "--global", "--json", "--quiet",
                   "--time-limit-ms", str(time_limit_ms)]
            t0 = time.perf_counter()
            p = subprocess.run(cmd, capture_output=True, text=True)
            wall = time.perf_counter() - t0
            if p.returncode != 0:
                print(f"{g.name} {mesh}: failed: {p.stderr.strip()[:200]}", file=sys.stderr)
                continue
            d = json.loads(p.stdout)
            s = d["solver"]
            run = {"graph": g.name.removesuffix(".fx.txt"), "mesh": mesh, "setting": setting, "op_nodes": d["nodes_with_rule"] + d["nodes_fallback"],
                   "variables": s["variables"], "candidates": s["candidates"], "solve_ms": s["solve_ms"], "build_ms": s["build_ms"],
                   "wall_s": wall, "greedy_us": d["greedy_total_cost_us"], "global_us": d["total_cost_us"],
                   "greedy_objective_us": d["greedy_objective_us"], "objective_us": d["objective_us"],
                   "lower_bound_us": d["lower_bound_us"], "proven_optimal": d["proven_optimal"], "status": d["status"]}
            print(f"{run['graph']:24} {mesh:6} {setting:13} {run['op_nodes']:5} nodes  solve {run['solve_ms']:9.1f} ms  build {run['build_ms']:8.1f} ms  "
                  f"greedy {run['greedy_us']:12.1f}  global {run['global_us']:12.1f}  {run['status']}", flush=True)
            runs.append(run)
    return runs


# ---------------------------------------------------------------------------------------------
# figures


def _save(fig: Any, name: str) -> None:
    FIGURES.mkdir(parents=True, exist_ok=True)
    path = FIGURES / name
    fig.savefig(path, format="png", dpi=90)
    print(f"wrote {path.relative_to(ROOT)} ({path.stat().st_size / 1024:.0f} KB)")


def compile_time_figure(Figure: Any) -> None:
    expansion = _tables(_section("Compile time and memory of mesh expansion"))[0]
    mm = _tables(_section("Umbrella headers and the 8-row mm rule"))[1]
    fig = Figure(figsize=(10, 3.8), layout="constrained")
    a, b = fig.subplots(1, 2)
    n = [int(r[0]) for r in expansion[1:]]
    a.plot(n, [_num(r[2]) for r in expansion[1:]], "o-", label="g++ 12 wall (s)")
    a.plot(n, [_num(r[4]) for r in expansion[1:]], "s-", label="clang++ 14 wall (s)")
    a2 = a.twinx()
    a2.plot(n, [_num(r[3]) for r in expansion[1:]], "o--", color="tab:green", label="g++ peak (MiB)")
    a2.plot(n, [_num(r[5]) for r in expansion[1:]], "s--", color="tab:red", label="clang++ peak (MiB)")
    a.set_title("mesh expansion of a 5-row rule (5^N rows), over a headers-only baseline", fontsize=9)
    a.set_xlabel("mesh dims N")
    a.set_ylabel("extra wall time (s)")
    a2.set_ylabel("extra peak memory (MiB)")
    a.set_xticks(n)
    a.axhline(0, color="grey", linewidth=0.5)
    h1, l1 = a.get_legend_handles_labels()
    h2, l2 = a2.get_legend_handles_labels()
    a.legend(h1 + h2, l1 + l2, fontsize=7, loc="upper left")
    rows = [r for r in mm[1:] if r[1] != "–"]
    n = [int(r[0]) for r in rows]
    b.plot(n, [_num(r[2]) for r in rows], "o-", label="CPU (s)")
    b2 = b.twinx()
    b2.plot(n, [_num(r[4]) for r in rows], "s--", color="tab:red", label="peak memory (MiB)")
    b.axhline(_num(mm[1][2]), color="tab:blue", linewidth=0.6, linestyle=":", label="<ctshard/ctshard.hpp> alone")
    b.set_title("DTensor's mm rule expanded to N mesh dims (8^N rows), g++ 12", fontsize=9)
    b.set_xlabel("mesh dims N")
    b.set_ylabel("CPU time (s)")
    b2.set_ylabel("peak memory (MiB)")
    b.set_xticks(n)
    h1, l1 = b.get_legend_handles_labels()
    h2, l2 = b2.get_legend_handles_labels()
    b.legend(h1 + h2, l1 + l2, fontsize=7, loc="upper left")
    _save(fig, "compile_time.png")


def dtensor_figure(Figure: Any) -> None:
    table = _tables(_section("DTensor 2.13 vs ctshard"))[0]
    head = table[0]
    col = {name: head.index(name) for name in ("case", "mesh", "kind", "DTensor µs", "ctshard C++ cold µs", "Python choose µs")}
    rows = table[1:]
    meshes = list(dict.fromkeys(r[col["mesh"]] for r in rows))
    fig = Figure(figsize=(10, 4.2), layout="constrained")
    ax = fig.subplots()
    width = 0.27
    labels = []
    for i, r in enumerate(rows):
        for k, (name, colour) in enumerate((("DTensor µs", "#7f7f7f"), ("Python choose µs", "#ff7f0e"), ("ctshard C++ cold µs", "#1f77b4"))):
            ax.bar(i + (k - 1) * width, _num(r[col[name]]), width=width, color=colour,
                   label={"DTensor µs": "DTensor 2.13 propagation", "Python choose µs": "ctshard.choose (Python)",
                          "ctshard C++ cold µs": "ctshard C++, cold"}[name] if i == 0 else None)
        case = r[col["case"]].replace("1024x512 @ 512x2048", "").replace("[8,16,32,64] + ", "").replace(" (broadcast)", " bc")
        labels.append(f"{case.strip()} {r[col['kind']][:5]}")
    ax.set_yscale("log")
    ax.set_ylabel("µs per choice (log)")
    ax.set_xticks(range(len(rows)), labels, rotation=70, fontsize=6)
    per = len(rows) // len(meshes)
    for j, m in enumerate(meshes):
        ax.axvline(j * per - 0.5, color="grey", linewidth=0.5)
        ax.text(j * per + per / 2 - 0.5, ax.get_ylim()[1] * 0.5, f"mesh {m}", ha="center", fontsize=8)
    ax.set_title("one op's sharding choice: DTensor 2.13 vs ctshard (docs/benchmarks.md, one run)", fontsize=9)
    fig.legend(fontsize=7, loc="outside lower center", ncol=3)  # below the axes: no bar hidden
    _save(fig, "dtensor_vs_ctshard.png")


def solver_figures(Figure: Any, runs: list[dict[str, Any]]) -> None:
    styles = {("data-parallel", "2x4"): ("o", "tab:blue"), ("data-parallel", "2x2x2"): ("s", "tab:cyan"),
              ("free-inputs", "2x4"): ("^", "tab:red"), ("free-inputs", "2x2x2"): ("D", "tab:orange")}
    fig = Figure(figsize=(10, 4), layout="constrained")
    a, b = fig.subplots(1, 2)
    floor = 1e-2  # a solve that took under 0.01 ms (every node fixed by the reductions) is drawn at 0.01
    for (setting, mesh), (marker, colour) in styles.items():
        rs = [r for r in runs if r["mesh"] == mesh and r.get("setting", "data-parallel") == setting]
        label = f"{setting}, {mesh}"
        a.scatter([r["op_nodes"] for r in rs], [max(r["solve_ms"], floor) for r in rs], marker=marker, color=colour, label=label, s=18)
        b.scatter([r["op_nodes"] for r in rs], [max(r["build_ms"], floor) for r in rs], marker=marker, color=colour, label=label, s=18)
    limited = [r for r in runs if not r["proven_optimal"]]
    if limited:
        a.scatter([r["op_nodes"] for r in limited], [r["solve_ms"] for r in limited], s=90, facecolors="none", edgecolors="black",
                  label="stopped at the time limit: " + ", ".join(sorted({r["graph"] for r in limited})))
    for ax, what in ((a, "solve (ms)"), (b, "cost-graph build (ms)")):
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("op nodes of the graph (log)")
        ax.set_ylabel(what + " (log)")
        ax.legend(fontsize=7, loc="upper left")
        ax.set_ylim(top=ax.get_ylim()[1] * 300)  # room for the legend above the points
    graphs = len({r["graph"] for r in runs})
    a.set_title(f"whole-graph solve: {graphs} shared graphs, 2 input settings, 2 meshes", fontsize=9)
    b.set_title("building the cost graph (greedy plan, candidates, edges)", fontsize=9)
    _save(fig, "solver_scaling.png")

    settings = [s for s in SETTINGS if any(r.get("setting", "data-parallel") == s for r in runs)]
    fig = Figure(figsize=(11, 3.2 * len(settings) + 0.6), layout="constrained")
    axes = fig.subplots(len(settings), len(MESHES), squeeze=False)
    for row, setting in enumerate(settings):
        key = ("greedy_us", "global_us") if setting == "data-parallel" else ("greedy_objective_us", "objective_us")
        what = "communication" if setting == "data-parallel" else "communication + compute"
        for ax, mesh in zip(axes[row], MESHES):
            rs = sorted((r for r in runs if r["mesh"] == mesh and r.get("setting", "data-parallel") == setting and r[key[0]] > 0),
                        key=lambda r: r["op_nodes"])
            y = range(len(rs))
            ax.barh([i + 0.2 for i in y], [r[key[0]] for r in rs], height=0.4, color="#7f7f7f", label="greedy (DTensor's choice per node)")
            ax.barh([i - 0.2 for i in y], [max(r[key[1]], 1e-2) for r in rs], height=0.4, color="#1f77b4", label="global (optimum or best found)")
            ax.set_yticks(list(y), [r["graph"] + ("" if r["proven_optimal"] else " *") for r in rs], fontsize=6)
            ax.set_xscale("log")
            ax.set_xlabel(f"{what}, µs (log)", fontsize=8)
            ax.set_title(f"{setting} inputs, mesh {mesh} ({len(rs)} graphs with a nonzero greedy plan)", fontsize=8)
            ax.tick_params(axis="x", labelsize=7)
    axes[0][0].legend(fontsize=7, loc="lower right")
    fig.suptitle("greedy vs global over the shared graphs: data-parallel inputs compare communication,\nfree inputs the "
                 "planner's objective (communication + compute); * = not proven optimal within the time limit", fontsize=9)
    _save(fig, "greedy_vs_global.png")


def plan_figure() -> None:
    """ctshard.plot of one shared graph: the greedy plan from replicated inputs (DTensor with no
    plan) beside the global plan with free inputs (what auto_parallel solves)."""
    try:
        import ctshard
    except ImportError:
        print("plan_example.png: skipped (the ctshard package is not installed)")
        return
    graph = SHARED / "graphs" / "gpt_megatron_l1_fw.fx.txt"
    if not graph.exists():
        print(f"plan_example.png: skipped ({graph} not found)")
        return
    greedy = ctshard.plan(str(graph), mesh=(2, 4), summary=True)
    best = ctshard.plan(str(graph), mesh=(2, 4), algo="global", free_inputs=True, summary=True)
    FIGURES.mkdir(parents=True, exist_ok=True)
    path = ctshard.plot([greedy, best], FIGURES / "plan_example.png",
                        title=f"gpt_megatron_l1_fw on 2x4: greedy from replicated inputs (objective {best['greedy_objective_us']:,.0f} µs) "
                              f"vs global with free inputs ({best['objective_us']:,.0f} µs, communication + compute)")
    print(f"wrote {pathlib.Path(path).relative_to(ROOT)} ({pathlib.Path(path).stat().st_size / 1024:.0f} KB)")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--measure", action="store_true", help="run the tool over the shared graphs (else: read the recorded runs)")
    ap.add_argument("--tool", default=os.environ.get("CTSHARD_TOOL", str(ROOT / "build" / "examples" / "ctshard")))
    ap.add_argument("--time-limit-ms", type=float, default=10000)
    args = ap.parse_args()
    try:
        from matplotlib.figure import Figure
    except ImportError:
        sys.exit("figures.py needs matplotlib: pip install 'ctshard[plot]' (or matplotlib)")
    if args.measure:
        t0 = time.perf_counter()
        runs = measure(args.tool, args.time_limit_ms)
        RUNS.parent.mkdir(parents=True, exist_ok=True)
        meta = {"tool": os.path.relpath(args.tool, ROOT), "time_limit_ms": args.time_limit_ms, "date": time.strftime("%Y-%m-%d"),
                "total_s": round(time.perf_counter() - t0, 1), "command": "plan GRAPH --mesh M (--data-parallel | --free-inputs) --global --json --quiet"}
        RUNS.write_text(json.dumps({"meta": meta, "runs": runs}, indent=1) + "\n")
        print(f"wrote {RUNS.relative_to(ROOT)}: {len(runs)} runs in {meta['total_s']} s")
    runs = json.loads(RUNS.read_text())["runs"]
    compile_time_figure(Figure)
    dtensor_figure(Figure)
    solver_figures(Figure, runs)
    plan_figure()
    return 0


if __name__ == "__main__":
    sys.exit(main())
