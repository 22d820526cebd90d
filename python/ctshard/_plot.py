"""``ctshard.plot``: a picture of a plan (matplotlib, the optional extra ``ctshard[plot]``)."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from typing import Any

_EXTENSIONS = (".png", ".svg", ".pdf")
_PLACEMENT = re.compile(r"_S\(\s*\d+\s*,\s*\d+\s*\)|S\(\s*\d+\s*\)|P\(\s*\w+\s*\)|R")
# colours: Replicate grey, Shard(d) one colour per tensor dim, StridedShard purple, Partial red
_SHARD_COLOURS = ["#1f77b4", "#2ca02c", "#ff7f0e", "#17becf", "#bcbd22", "#8c564b", "#e377c2", "#7f7f7f"]
_REPLICATE, _PARTIAL, _STRIDED, _NONE = "#d9d9d9", "#d62728", "#9467bd", "#ffffff"


def placements_of(spec: str) -> list[str]:
    """``"S(0)P(sum)R"`` -> ``["S(0)", "P(sum)", "R"]``: one placement per mesh dim."""
    return [m.group(0).replace(" ", "") for m in _PLACEMENT.finditer(spec)]


def _category(placement: str) -> str:
    if placement == "R":
        return "R"
    if placement.startswith("P"):
        return "P"
    if placement.startswith("_S"):
        return "_S"
    return placement  # S(d)


def _colour(category: str) -> str:
    if category == "R":
        return _REPLICATE
    if category == "P":
        return _PARTIAL
    if category == "_S":
        return _STRIDED
    if category.startswith("S("):
        return _SHARD_COLOURS[int(category[2:-1]) % len(_SHARD_COLOURS)]
    return _NONE


def _plan_dict(plan: Any) -> Mapping[str, Any]:
    if hasattr(plan, "parameter_placements") and isinstance(getattr(plan, "plan", None), Mapping):
        plan = plan.plan  # a ParallelPlan: its ctshard.plan document
    if not isinstance(plan, Mapping) or not isinstance(plan.get("nodes"), list) or "mesh" not in plan:
        raise ValueError("ctshard.plot: plan must be the dict ctshard.plan returns (with 'nodes' and 'mesh') or a "
                         f"ParallelPlan, got {type(plan).__name__}")
    return plan


def _label(plan: Mapping[str, Any]) -> str:
    name = "global" if plan.get("algo") == "global" else "greedy"
    mesh = "x".join(str(m) for m in plan["mesh"])
    return f"{name}, mesh {mesh}: communication {plan.get('total_cost_us', 0):,.1f} µs"


def plot(plan: Any, path: str | os.PathLike[str], compare: Any = None, title: str | None = None) -> str:
    """Draw a plan (or plans side by side) to ``path`` and return the path written.

    plan: the dict of ``ctshard.plan(...)`` (greedy or ``algo="global"``), a
        ``ctshard.torch.ParallelPlan``, or a sequence of them (drawn side by side, e.g.
        ``[greedy, global]``: the same graph planned two ways).
    path: the file to write; its extension picks the format: ``.png``, ``.svg`` or ``.pdf``.
    compare: one more plan drawn beside ``plan`` (``plot(greedy, path, compare=global_plan)``).
    title: the figure's title (default: the plan's source).

    Each plan is a column: one colour strip per mesh dim along the op nodes in graph order (the
    placement of each node's first output: Replicate grey, Shard(d) a colour per tensor dim,
    StridedShard purple, Partial red), then bars of the communication and the compute per layer
    (µs) when every plan has the per-layer data (``ctshard.plan(..., summary=True)``), else of
    the communication per node. Needs matplotlib (``pip install ctshard[plot]``): ImportError
    with that hint when it is absent; ValueError for an unknown extension or something that is not
    a plan.
    """
    plans = list(plan) if isinstance(plan, (list, tuple)) else [plan]
    if compare is not None:
        plans += list(compare) if isinstance(compare, (list, tuple)) else [compare]
    if not plans:
        raise ValueError("ctshard.plot: no plan given")
    docs = [_plan_dict(p) for p in plans]
    out = os.fspath(path)
    ext = os.path.splitext(out)[1].lower()
    if ext not in _EXTENSIONS:
        raise ValueError(f"ctshard.plot: path {out!r} must end in {', '.join(_EXTENSIONS)} (the format is taken from it)")
    try:
        from matplotlib.figure import Figure
        from matplotlib.patches import Patch
    except ImportError as e:
        raise ImportError("ctshard.plot needs matplotlib: pip install 'ctshard[plot]' (or pip install matplotlib)") from e

    sources = sorted({str(d["source"]) for d in docs if "source" in d})
    if len(sources) > 1:
        raise ValueError(f"ctshard.plot: plans side by side must be of the same graph, got {', '.join(sources)}")
    parent = os.path.dirname(os.path.abspath(out))
    if os.path.isdir(out) or not os.path.isdir(parent):
        raise ValueError(f"ctshard.plot: cannot write {out!r} ({'a directory' if os.path.isdir(out) else 'no directory ' + repr(parent)})")
    try:
        _draw(docs, out, ext, title, Figure, Patch)
    except (KeyError, TypeError, AttributeError, IndexError) as e:
        raise ValueError(f"ctshard.plot: the plan is malformed ({type(e).__name__}: {e}); pass the dict of ctshard.plan") from None
    return out


def _draw(docs: Sequence[Mapping[str, Any]], out: str, ext: str, title: str | None, Figure: Any, Patch: Any) -> None:
    ndim = max(len(d["mesh"]) for d in docs)
    per_layer = all(d.get("summary") for d in docs)
    heights = [0.45 * ndim + 0.3, 1.8] + ([1.8] if per_layer else [])
    fig = Figure(figsize=(6.4 * len(docs), 1.2 + sum(heights)), dpi=100, layout="constrained")
    grid = fig.add_gridspec(len(heights), len(docs), height_ratios=heights)
    used: set[str] = set()
    for col, doc in enumerate(docs):
        nodes = doc["nodes"]
        strip = fig.add_subplot(grid[0, col])
        for d in range(ndim):
            cats = []
            for n in nodes:
                ps = placements_of(n["outputs"][0]) if n.get("outputs") else []
                cats.append(_category(ps[d]) if d < len(ps) else "")
            used.update(c for c in cats if c)
            strip.bar(range(len(nodes)), [0.9] * len(nodes), bottom=d, width=1.0, color=[_colour(c) for c in cats], linewidth=0,
                      align="edge")
        strip.set_xlim(0, max(1, len(nodes)))
        strip.set_ylim(ndim, 0)
        strip.set_yticks([d + 0.45 for d in range(ndim)], [f"mesh dim {d}" for d in range(ndim)], fontsize=8)
        strip.set_xlabel(f"op node (graph order, {len(nodes)} nodes): placement of its output", fontsize=8)
        strip.tick_params(axis="x", labelsize=7)
        strip.set_title(_label(doc), fontsize=9)
        if per_layer:
            layers = doc["summary"]["layers"]
            names = [layer["name"] for layer in layers]
            for row, (key, colour, what) in enumerate((("comm_us", "#d62728", "communication µs"),
                                                       ("compute_us", "#1f77b4", "compute µs per device")), start=1):
                ax = fig.add_subplot(grid[row, col])
                values = [layer[key] for layer in layers]
                ax.bar(range(len(layers)), values, color=colour)
                ax.set_ylim(0, max(values, default=0) * 1.05 or 1.0)  # all zero: an empty axis from 0, not around it
                ax.set_ylabel(what, fontsize=8)
                if len(layers) <= 40:
                    ax.set_xticks(range(len(layers)), names, rotation=60, ha="right", fontsize=6)
                else:
                    ax.tick_params(axis="x", labelsize=7)
                ax.tick_params(axis="y", labelsize=7)
            kind = "modules" if doc["summary"].get("grouping") == "module" else "runs of op nodes ending at a contraction"
            ax.set_xlabel(f"layer (graph order; {len(layers)} {kind})", fontsize=8)
        else:
            ax = fig.add_subplot(grid[1, col])
            values = [float(n.get("cost_us", 0) or 0) for n in nodes]
            ax.bar(range(len(nodes)), values, width=1.0, color="#d62728", align="edge")
            ax.set_ylim(0, max(values, default=0) * 1.05 or 1.0)
            ax.set_xlim(0, max(1, len(nodes)))
            ax.set_xlabel("op node (graph order)", fontsize=8)
            ax.set_ylabel("communication µs", fontsize=8)
            ax.tick_params(labelsize=7)
    order = sorted(used, key=lambda c: (c != "R", c.startswith("P"), c))
    fig.legend(handles=[Patch(color=_colour(c), label=c.replace("_S", "StridedShard")) for c in order],
               loc="outside lower center", ncol=min(8, max(1, len(order))), fontsize=7)
    fig.suptitle(title if title is not None else str(docs[0].get("source", "")), fontsize=10)
    fig.savefig(out, format=ext[1:])
