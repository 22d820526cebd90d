"""ctshard spec text <-> DTensor placement objects: the conversions ``ctshard.torch`` exports and
``ctshard._run`` uses (both import them from here, so neither imports the other back)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import torch  # noqa: F401  (torch.distributed needs torch imported first)
from torch.distributed.tensor import Partial, Replicate, Shard
from torch.distributed.tensor.placement_types import Placement, _StridedShard

from . import _ext

__all__ = ["to_placements", "to_spec", "plan_placements"]


def to_placements(spec: str) -> tuple[Placement, ...]:
    """DTensor placements of a spec, one per mesh dim: ``R`` -> ``Replicate()``, ``S(d)`` ->
    ``Shard(d)``, ``_S(d, sf)`` -> ``_StridedShard(d, split_factor=sf)``, ``P(op)`` ->
    ``Partial(op)`` (op: sum, avg, max, min). Raises ValueError for malformed text."""
    out: list[Placement] = []
    for kind, dim, split_factor, reduce_op in _ext.spec_placements(spec):
        if kind == "R":
            out.append(Replicate())
        elif kind == "S":
            out.append(Shard(dim))
        elif kind == "_S":
            out.append(_StridedShard(dim, split_factor=split_factor))
        else:
            out.append(Partial(reduce_op))
    return tuple(out)


def _placement_text(p: Placement) -> str:
    if isinstance(p, _StridedShard):
        return f"_S({p.dim}, {p.split_factor})"
    if isinstance(p, Shard):
        return f"S({p.dim})"
    if isinstance(p, Replicate):
        return "R"
    if isinstance(p, Partial):
        if p.reduce_op not in ("sum", "avg", "max", "min"):
            raise ValueError(f"ctshard.torch.to_spec: Partial reduce op {p.reduce_op!r} has no ctshard spelling")
        return f"P({p.reduce_op})"
    raise ValueError(f"ctshard.torch.to_spec: unsupported placement {p!r}")


def to_spec(placements: Any) -> str:
    """ctshard spec text of DTensor placements (a sequence of placements, a DTensor or a
    DTensorSpec): ``(Shard(0), Partial("sum"))`` -> ``"S(0)P(sum)"``. Raises ValueError for a
    placement ctshard cannot express (e.g. ``Partial("product")``)."""
    if hasattr(placements, "placements"):
        placements = placements.placements
    if not isinstance(placements, Sequence):
        raise ValueError(f"ctshard.torch.to_spec: expected a sequence of placements, got {type(placements).__name__}")
    return "".join(_placement_text(p) for p in placements)


def plan_placements(plan: Mapping[str, Any], program: Any = None) -> dict[str, list[tuple[Placement, ...]]]:
    """The DTensor placements of a ``ctshard.plan`` result, ready for ``distribute_tensor`` or
    ``redistribute``: op node name -> one placement tuple per output of the node
    (``{"addmm": [(Shard(0), Shard(1))], ...}``), and for the inputs the plan places (``place``'s,
    or with ``algo="global"`` every input's ``input_placements``) input name -> its one tuple
    (``{"p_up_weight": [(Replicate(), Shard(0))]}``; an input not listed is Replicate). With
    ``program`` (the ``torch.export`` ``ExportedProgram`` the plan was made from) a lifted
    parameter, buffer or constant is keyed by its FQN (``"up.weight"``) instead of its
    placeholder's name. Raises ValueError when ``plan`` has no ``nodes`` list."""
    nodes = plan.get("nodes") if isinstance(plan, Mapping) else None
    if not isinstance(nodes, list):
        raise ValueError("ctshard.torch.plan_placements: plan must be a result of ctshard.plan (a dict with 'nodes')")
    fqn_of: dict[str, str] = {}
    for spec in getattr(getattr(program, "graph_signature", None), "input_specs", None) or ():
        if isinstance(getattr(spec, "target", None), str) and hasattr(spec.arg, "name"):
            fqn_of[spec.arg.name] = spec.target
    inputs = plan.get("input_placements") or plan.get("placements") or {}
    out = {fqn_of.get(name, name): [to_placements(spec)] for name, spec in inputs.items()}
    out.update({fqn_of.get(n["name"], n["name"]): [to_placements(o) for o in n["outputs"]] for n in nodes})
    return out
