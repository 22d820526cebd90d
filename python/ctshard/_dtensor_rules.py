"""``ctshard.torch.import_dtensor_rule``: the sharding function a program registered with DTensor's
``register_sharding`` for an op, registered with ctshard (``ctshard.register_rule(op, fn=...)``), so
that ctshard plans the op as DTensor would run it."""

from __future__ import annotations

import functools
from typing import Any

import torch
from torch.distributed.tensor import DTensor

from ._placements import _placement_text
from ._rules import register_rule

__all__ = ["import_dtensor_rule"]


class _TensorLike:
    """What the sharding function sees of a tensor input: ``shape`` and ``ndim`` (DTensor passes its
    DTensorSpec, which has these too; a function that reads the mesh or the input placements
    cannot be imported)."""

    def __init__(self, shape: list[int]):
        self.shape = torch.Size(shape)
        self.ndim = len(shape)

    def dim(self) -> int:
        return self.ndim


def _overload_name(op: Any) -> str:
    return f"{op.namespace}.{op._schema.name.split('::', 1)[1]}.{op._overloadname}"


def import_dtensor_rule(op: torch._ops.OpOverload) -> str:
    """Registers with ctshard the sharding function DTensor has for ``op`` from
    ``torch.distributed.tensor.experimental.register_sharding``; returns the op's ctshard name
    (``"mylib.rope.default"``). Each call of the op's rule calls the function with the tensor
    inputs as shape-only stand-ins (``shape``, ``ndim``) and the other arguments as given, and
    reads its ``(output placements, input placements)`` pairs as single-dim rows (``None`` entries,
    DTensor's marks for non-tensor arguments, dropped; the all-Replicate pair too). DTensor's
    plain ``Shard(d)`` stays ``S(d)`` (not ``S?(d)``), as DTensor expands it. Raises ValueError when
    ``op`` has no ``register_sharding`` function."""
    if not isinstance(op, torch._ops.OpOverload):
        raise ValueError(f"ctshard.torch.import_dtensor_rule: op must be an OpOverload (torch.ops.mylib.rope.default), got {op!r}")
    strategy = DTensor._op_dispatcher.sharding_propagator.op_strategy_funcs.get(op)
    if not (isinstance(strategy, functools.partial) and getattr(strategy.func, "__name__", "") == "custom_strategy" and strategy.args):
        raise ValueError(f"ctshard.torch.import_dtensor_rule: {op} has no sharding function from register_sharding")
    sharding_fn = strategy.args[0]
    name = _overload_name(op)
    outputs = len(op._schema.returns)

    def rows(shapes: list, args: list, kwargs: dict) -> list[list[str]]:
        tensors = [_TensorLike(s) for s in shapes]

        def sub(v: Any) -> Any:
            if isinstance(v, str) and v.startswith("$") and v[1:].isdigit():
                return tensors[int(v[1:])]
            if isinstance(v, list):
                return [sub(x) for x in v]
            return v

        out = []
        for out_placements, in_placements in sharding_fn(*[sub(a) for a in args], **{k: sub(v) for k, v in kwargs.items()}):
            row = [_placement_text(p) for p in list(out_placements) + [p for p in in_placements if p is not None]]
            if any(t != "R" for t in row):
                out.append(row)
        return out

    register_rule(name, fn=rows, outputs=outputs)
    return name
