"""ctshard spec text <-> DTensor placement objects: the conversions ``ctshard.torch`` exports and
``ctshard._run`` uses (both import them from here, so neither imports the other back)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch  # noqa: F401  (torch.distributed needs torch imported first)
from torch.distributed.tensor import Partial, Replicate, Shard
from torch.distributed.tensor.placement_types import Placement, _StridedShard

from . import _ext

__all__ = ["to_placements", "to_spec"]


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
