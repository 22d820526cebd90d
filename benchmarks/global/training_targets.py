"""The training-step targets of docs/benchmarks.md ("Training step: targets"): GPT-2 small
(12 layers) and a 4-layer Llama-3-8B-shaped decoder, one training step each (gpt2.py, llama.py),
planned by `ctshard plan --global --free-inputs` with Adam, every parameter free, under a budget
of half the replicated footprint, on 2x4, 2x2x2 (and 2x2x2x2 for Llama), with the hand plans
(DDP, FSDP, Megatron TP + FSDP) priced in the same model.

    python3 benchmarks/global/training_targets.py [--tool build/examples/ctshard] [--time-limit-ms 10000]
        [--work DIR] [--mesh 2x4 ...] [--model gpt2 --model llama]

The replicated footprint is the plan's `memory.total` with every input pinned Replicate. Columns:
model, mesh, budget (GiB per device), status, step time of the plan (µs), lower bound, gap, the
plan's memory (GiB), the greedy plan's step time, each hand plan's step time / memory (a hand plan
over the budget marked so), cost-graph build and solve times (ms) and the process's wall time (s).
"""
from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).resolve().parent))

MODELS = {"gpt2": ("gpt2", ["--layers", "12"], ["2x4", "2x2x2"]),
          "llama": ("llama", ["--layers", "4"], ["2x4", "2x2x2", "2x2x2x2"])}


def graph_of(model: str, work: Path) -> Path:
    """The model's training-step printout, traced once into `work`."""
    script, args, _ = MODELS[model]
    out = work / f"{model}_step.fx.txt"
    if not out.exists():
        subprocess.run([sys.executable, str(ROOT / "benchmarks/global" / f"{script}.py"), str(out), *args], check=True)
    return out


def inputs_and_gradients(path: Path) -> tuple[list[str], list[tuple[str, str]]]:
    """The graph's inputs and its (gradient, parameter) pairs: outputs (loss, grads...) with
    gradient i that of input i (training_step.py's layout)."""
    text = path.read_text()
    inputs = re.search(r"\n        (arg[^\n]*?), = fx_pytree", text).group(1).split(", ")
    outputs = re.findall(r"return pytree.tree_unflatten\(\[([^\]]*)\]", text)[-1].split(", ")
    return inputs, [(g, p) for g, p in zip(outputs[1:], inputs) if g != "None"]


def run(cmd: list[str]) -> tuple[dict, float]:
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        raise RuntimeError((p.stderr or p.stdout).strip()[-300:])
    return json.loads(p.stdout), wall


def measure(tool: str, path: Path, mesh: str, limit_ms: float) -> dict:
    inputs, grads = inputs_and_gradients(path)
    base = [tool, "plan", str(path), "--mesh", mesh, "--global", "--free-inputs", "--optimizer", "adam", "--json", "--quiet"]
    base += [a for g, p in grads for a in ("--gradient", f"{g}={p}")]
    rep = "R" * len(mesh.split("x"))
    # the footprint with every input Replicate (given 120 s: its build alone can take the plan's limit)
    pinned = base + [a for name in inputs for a in ("--place", f"{name}={rep}")] + ["--time-limit-ms", "120000"]
    replicated, _ = run(pinned)
    if "memory" not in replicated:
        raise RuntimeError(f"the replicated plan has no memory figure (status {replicated['status']}, cost graph "
                           f"{'built' if replicated['solver']['build_complete'] else 'unfinished'})")
    budget = replicated["memory"]["total"] / 2
    plan, wall = run(base + ["--memory-budget-gib", repr(budget), "--hand-plans", "--time-limit-ms", str(limit_ms)])
    s = plan["solver"]
    row = {"mesh": mesh, "replicated_gib": replicated["memory"]["total"], "budget_gib": budget, "status": plan["status"],
           "step_time_us": plan.get("step_time_us"), "lower_bound_us": plan["lower_bound_us"], "gap": plan["optimality_gap"],
           "memory_gib": plan["memory"]["total"] if "memory" in plan else None, "greedy_step_time_us": plan.get("greedy_objective_us"),
           "build_ms": s["build_ms"], "solve_ms": s["solve_ms"], "wall_s": wall, "candidates": s["candidates"],
           "hand_plans": [{"name": h["name"], "step_time_us": h["step_time_us"], "memory_gib": h["memory"]["total"]}
                          for h in plan.get("hand_plans", [])]}
    return row


def fmt(x: float | None, digits: int = 1) -> str:
    return "–" if x is None else f"{x:,.{digits}f}"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tool", default=str(ROOT / "build/examples/ctshard"))
    ap.add_argument("--time-limit-ms", type=float, default=10000)
    ap.add_argument("--work", type=Path, default=ROOT / "build")
    ap.add_argument("--model", action="append", choices=sorted(MODELS))
    ap.add_argument("--mesh", action="append")
    ap.add_argument("--out", type=Path, help="results JSON")
    a = ap.parse_args(argv)
    a.work.mkdir(parents=True, exist_ok=True)
    rows = []
    print("| model | mesh | budget GiB (half of replicated) | status | step µs | bound µs | gap | memory GiB | greedy µs "
          "| DDP µs / GiB | FSDP µs / GiB | Megatron TP + FSDP µs / GiB | build ms | solve ms | wall s |")
    print("|---|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for model in a.model or ["gpt2", "llama"]:
        path = graph_of(model, a.work)
        for mesh in a.mesh or MODELS[model][2]:
            try:
                r = measure(a.tool, path, mesh, a.time_limit_ms)
            except RuntimeError as e:
                print(f"| {model} | {mesh} | error: {e} |")
                continue
            r["model"] = model
            rows.append(r)
            hands = {h["name"]: h for h in r["hand_plans"]}

            def hand(name: str) -> str:
                h = hands.get(name)
                if h is None:
                    return "–"
                over = " (over budget)" if h["memory_gib"] > r["budget_gib"] else ""
                return f"{fmt(h['step_time_us'])} / {h['memory_gib']:.2f}{over}"
            print(f"| {model} | {mesh} | {r['budget_gib']:.2f} | {r['status']} | {fmt(r['step_time_us'])} | {fmt(r['lower_bound_us'])} "
                  f"| {r['gap']:.4f} | {fmt(r['memory_gib'], 2)} | {fmt(r['greedy_step_time_us'])} | {hand('ddp')} | {hand('fsdp')} "
                  f"| {hand('megatron_tp_fsdp')} | {fmt(r['build_ms'], 0)} | {fmt(r['solve_ms'], 0)} | {r['wall_s']:.1f} |", flush=True)
    if a.out:
        a.out.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
