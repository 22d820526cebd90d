"""``ctshard.summary``: a plan read per layer and per parameter.

The figures come from the C++ report (``report::plan_summary_json``, the document's ``"summary"``
that ``ctshard.plan(..., summary=True)`` and ``ctshard plan --summary --json`` add); this module
only renders them, as ``ctshard plan --summary`` prints them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

_MIB = 1024.0 * 1024.0


def _table(rows: Sequence[Sequence[str]]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]


def _module_name(fqn: str) -> str:
    """A module path as ``nn_module_stack`` records it, as an FQN: Dynamo's ``L['self'].layers.0``
    (or ``L__self___layers_0``, kept) -> ``layers.0``; the root module -> ``""``."""
    for prefix in ("L['self'].", "L['self']"):
        if fqn.startswith(prefix):
            return fqn[len(prefix):]
    return fqn


def node_modules(gm: Any) -> dict[str, str]:
    """Op node name -> the FQN of the innermost module it was traced in (``""``: the root), from
    each node's ``meta["nn_module_stack"]`` (``torch.export`` and Dynamo graphs carry it;
    ``make_fx`` graphs do not: then empty, and the summary groups by contraction runs)."""
    out: dict[str, str] = {}
    for node in gm.graph.nodes:
        stack = node.meta.get("nn_module_stack") if node.op == "call_function" else None
        if stack:
            value = list(stack.values())[-1]
            out[node.name] = _module_name(str(value[0] if isinstance(value, tuple) else value))
    return out


def summary_text(doc: Mapping[str, Any]) -> str:
    """The text of a summary document (a plan's ``"summary"``): the layer table (comm and compute
    µs, memory MiB per device, parameter placements), the totals, then the parameter table; the
    same text as the command line's ``plan --summary`` after its first line."""
    rows = [("layer", "nodes", "comm us", "compute us", "memory MiB", "parameters")]
    for layer in doc["layers"]:
        params = " ".join(f"{name}={spec}" for name, spec in sorted(layer["parameters"].items()))
        rows.append((layer["name"], str(layer["nodes"]), f"{layer['comm_us']:.3f}", f"{layer['compute_us']:.3f}",
                     f"{layer['memory_bytes'] / _MIB:.3f}", params))
    nodes = sum(layer["nodes"] for layer in doc["layers"])
    rows.append(("total", str(nodes), f"{doc['comm_us']:.3f}", f"{doc['compute_us']:.3f}", f"{doc['memory_bytes'] / _MIB:.3f}", ""))
    prows = [("parameter", "layer", "shape", "placement", "MiB/device")]
    for p in doc["parameters"]:
        prows.append((p["name"], p["layer"], "[" + ", ".join(str(d) for d in p["shape"]) + "]", p["placement"],
                      f"{p['bytes_per_device'] / _MIB:.3f}"))
    grouping = ("modules (the innermost module of each op node)" if doc["grouping"] == "module" else
                "runs of op nodes ending at a contraction or weighted op (the graph has no module structure)")
    head = (f"layers: {grouping}; compute at {doc['device_tflops']:.0f} TFLOP/s, {doc['device_gbps']:.0f} GB/s "
            "per device; memory MiB per device: parameters and every value produced (none freed: not a peak):")
    return "\n".join([head, *_table(rows), "parameters (graph inputs and constants):", *_table(prows)])


def summary(plan: Any) -> str:
    """A plan per layer and per parameter, as text.

    plan: the dict of ``ctshard.plan(..., summary=True)`` (greedy or ``algo="global"``; the
        command line's ``plan --summary --json`` document), or a ``ctshard.torch.ParallelPlan``
        (``auto_parallel``'s: its own ``summary()``, layers by module FQN).

    Per layer (graph order): op nodes, communication (µs: the redistributions of its nodes'
    inputs; the layers' sum is the plan's ``total_cost_us``), compute per device (µs, roofline at
    the plan's device rates), memory per device (MiB: its parameters and the non-view values it
    produces) and its parameters' placements; then every graph input with its layer, shape,
    placement and bytes per device. A layer is a module (the innermost one each op node was
    traced in: a ``torch.export`` program's or a Dynamo graph's ``nn_module_stack``;
    ``"(root)"`` for the model's own ops) when the planned GraphModule carries that structure;
    otherwise (FX printouts, ``make_fx`` graphs) a run of op nodes ending at a contraction or
    weighted op (mm, addmm, bmm, matmul, linear, einsum, convolution, embedding, attention), named
    after it, the rest ``(tail)``.

    Raises ValueError for a plan without the per-layer data (planned without ``summary=True``)
    and TypeError for something that is not a plan.
    """
    if hasattr(plan, "summary") and callable(plan.summary) and hasattr(plan, "parameter_placements"):
        return str(plan.summary())  # ParallelPlan: layers by module FQN, from its capture
    if not isinstance(plan, Mapping):
        raise TypeError(f"ctshard.summary: plan must be the dict of ctshard.plan(..., summary=True) or a ParallelPlan, "
                        f"got {type(plan).__name__}")
    if "summary" not in plan:
        if "nodes" in plan:
            raise ValueError("ctshard.summary: this plan has no per-layer data; plan it with ctshard.plan(..., summary=True) "
                             "(command line: ctshard plan --summary)")
        raise ValueError(f"ctshard.summary: not a plan (a dict without 'nodes'; keys {sorted(plan)[:8]})")
    doc = plan["summary"]
    if not isinstance(doc, Mapping) or not isinstance(doc.get("layers"), list) or not isinstance(doc.get("parameters"), list):
        raise ValueError("ctshard.summary: the plan's 'summary' is not a summary document (a dict with 'layers' and "
                         "'parameters'); plan it again with ctshard.plan(..., summary=True)")
    try:
        return "\n".join([*header_lines(plan), summary_text(doc)])
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        raise ValueError(f"ctshard.summary: the plan's summary document is malformed ({type(e).__name__}: {e})") from None


def _is_number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def header_lines(plan: Mapping[str, Any]) -> list[str]:
    """The status lines above a summary, as ``plan --summary`` prints them: source, mesh, algo,
    communication and the proof (or status and gap); the training step (step time, memory per
    device), an infeasible budget's least footprint and each hand plan where the plan has them."""
    mesh = "x".join(str(m) for m in plan.get("mesh", []))
    head = f"plan {plan.get('algo', '?')} of {plan.get('source', '?')} on mesh {mesh}: communication {plan.get('total_cost_us', 0):g} us"
    if "proven_optimal" in plan:
        if plan["proven_optimal"]:
            head += ", proven optimal"
        else:
            head += f", not proven optimal ({plan.get('status', '?')}"
            if _is_number(plan.get("optimality_gap")):
                head += f", gap {plan['optimality_gap']:g}"
            head += ")"
    lines = [head]
    if _is_number(plan.get("min_memory_gib")):
        # every digit (repr): a budget of the printed value fits that footprint
        lines.append(f"infeasible memory budget: the smallest footprint of any plan is {plan['min_memory_gib']!r} GiB per device")

    def step(j: Mapping[str, Any]) -> str:
        out = f"step time {j['step_time_us']:g} us" if _is_number(j.get("step_time_us")) else ""
        mem = j.get("memory")
        if isinstance(mem, Mapping) and _is_number(mem.get("total")):
            out += f", memory per device {mem['total']:g} GiB"
        return out

    if plan.get("training"):
        line = f"training step ({plan.get('optimizer', '?')}): " + step(plan)
        if _is_number(plan.get("gradient_reduction_us")):
            line += f", gradient reductions {plan['gradient_reduction_us']:g} us"
        lines.append(line)
    for h in plan.get("hand_plans", []) or []:
        lines.append(f"hand plan {h.get('name', '?')}: " + step(h))
    return lines
