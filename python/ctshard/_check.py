"""``ctshard.check_rule``: a sharding rule checked numerically on a simulated mesh.

Every full-mesh row of the rule's expanded table (the rows ``ctshard.table`` lists) runs on a
simulated mesh: each global input is laid out on every rank as the row's input spec says, the
reference runs per rank on the local tensors, the local outputs are put back together as the
row's output specs say, and the result is compared with the reference on the global inputs.

Layouts follow DTensor (the simulated mesh of tests/python/conformance/simulate.py): ``Shard`` and
``_StridedShard`` by the placement's own ``_split_tensor`` (torch.chunk sizes, empty trailing
shards), mesh dims nested in order; ``Replicate`` a copy; ``Partial`` random parts of both signs
(sum: parts summing to the value; avg: parts whose mean is; max / min: the value on one random rank
per element, smaller / larger values of either sign on the others). Reassembly reduces the Partial
mesh dims (innermost first), scatters every rank's piece to its global positions, and asks that
replicated copies agree and every element be covered.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import torch
from torch.distributed.tensor.placement_types import Partial, Replicate, Shard, _StridedShard

from . import _ext

__all__ = ["check_rule"]


def _placement(kind: str, dim: int, split_factor: int, reduce_op: str):
    if kind == "R":
        return Replicate()
    if kind == "S":
        return Shard(dim)
    if kind == "_S":
        return _StridedShard(dim, split_factor=split_factor)
    return Partial(reduce_op)


def _placements(spec: str) -> list:
    return [_placement(*p) for p in _ext.spec_placements(spec)]


def _parts(x: torch.Tensor, k: int, op: str, gen: torch.Generator) -> list[torch.Tensor]:
    """k parts of x whose reduction by `op` is x, of both signs."""
    if op in ("sum", "avg"):
        noise = torch.randn((k,) + tuple(x.shape), generator=gen, dtype=torch.float64) * 2
        noise = noise - noise.mean(0)
        parts = [x / k + noise[j] for j in range(k)]
        return [p * k for p in parts] if op == "avg" else parts
    if op in ("max", "min"):
        holder = torch.randint(0, k, tuple(x.shape), generator=gen)
        parts = []
        for j in range(k):
            gap = 0.1 + 2 * torch.rand(tuple(x.shape), generator=gen, dtype=torch.float64)
            parts.append(torch.where(holder == j, x, x - gap if op == "max" else x + gap))
        return parts
    raise ValueError(f"ctshard.check_rule: Partial({op}) is not simulated")


def _shard(p, x: torch.Tensor, k: int) -> list[torch.Tensor]:
    pieces = list(p._split_tensor(x, k, with_padding=False)[0])
    while len(pieces) < k:  # torch.chunk may give fewer chunks
        shape = list(x.shape)
        shape[p.dim] = 0
        pieces.append(x.new_empty(shape))
    return [q.contiguous() for q in pieces]


def _layout(x: torch.Tensor, mesh: Sequence[int], placements, gen: torch.Generator | None) -> dict[tuple, torch.Tensor]:
    """Mesh coordinate -> local tensor."""
    level = {(): x}
    for md, p in enumerate(placements):
        nxt = {}
        for coord, t in level.items():
            if isinstance(p, Replicate):
                parts = [t] * mesh[md]
            elif isinstance(p, (Shard, _StridedShard)):
                parts = _shard(p, t, mesh[md])
            else:
                parts = _parts(t, mesh[md], p.reduce_op, gen)
            for j in range(mesh[md]):
                nxt[coord + (j,)] = parts[j]
        level = nxt
    return level


def _reduce(ts: list[torch.Tensor], op: str) -> torch.Tensor:
    st = torch.stack(ts)
    return {"sum": lambda: st.sum(0), "avg": lambda: st.mean(0), "max": lambda: st.max(0).values, "min": lambda: st.min(0).values}[op]()


def _assemble(locals_: dict[tuple, torch.Tensor], shape, mesh: Sequence[int], placements, tol: float) -> tuple[torch.Tensor | None, str]:
    """The global tensor the local outputs stand for under `placements`, or (None, why not)."""
    cur = dict(locals_)
    for md in reversed(range(len(mesh))):
        p = placements[md]
        if not isinstance(p, Partial):
            continue
        groups: dict[tuple, list] = {}
        for coord, t in cur.items():
            groups.setdefault(coord[:md] + coord[md + 1:], []).append((coord[md], t))
        nxt = {}
        for key, items in groups.items():
            items.sort(key=lambda it: it[0])
            ts = [t for _, t in items]
            if any(t.shape != ts[0].shape for t in ts):
                return None, f"Partial mesh dim {md}: local shapes differ {[tuple(t.shape) for t in ts]}"
            r = _reduce(ts, p.reduce_op)
            for j, _ in items:
                nxt[key[:md] + (j,) + key[md:]] = r
        cur = nxt
    numel = math.prod(shape)
    index = _layout(torch.arange(numel).reshape(tuple(shape)), mesh, [Replicate() if isinstance(p, Partial) else p for p in placements], None)
    out = torch.zeros(numel, dtype=torch.float64)
    seen = torch.zeros(numel, dtype=torch.bool)
    for coord, t in cur.items():
        ix = index[coord]
        if tuple(t.shape) != tuple(ix.shape):
            return None, f"rank {coord}: local output shape {tuple(t.shape)}, the spec asks for {tuple(ix.shape)}"
        flat, vals = ix.reshape(-1), t.reshape(-1).to(torch.float64)
        prev = seen[flat]
        if prev.any() and not torch.allclose(out[flat][prev], vals[prev], rtol=tol, atol=tol, equal_nan=True):
            return None, f"rank {coord}: replicated copies of the output differ between ranks"
        out[flat] = vals
        seen[flat] = True
    if not bool(seen.all()):
        return None, "some output elements are on no rank"
    return out.reshape(tuple(shape)), ""


def _outputs(result: Any) -> list[torch.Tensor]:
    if isinstance(result, torch.Tensor):
        return [result]
    return [r for r in result if isinstance(r, torch.Tensor)]


def _call(reference: Callable, tensors: list[torch.Tensor], args: Sequence[Any] | None, kwargs: Mapping[str, Any] | None) -> Any:
    def sub(v: Any) -> Any:
        if isinstance(v, str) and v.startswith("$") and v[1:].isdigit():
            return tensors[int(v[1:])]
        if isinstance(v, (list, tuple)):
            return type(v)(sub(x) for x in v)
        return v

    kw = {k: sub(v) for k, v in (kwargs or {}).items()}
    if args is not None and any(isinstance(a, str) and a.startswith("$") for a in _flat(args)):
        return reference(*[sub(a) for a in args], **kw)
    return reference(*tensors, *(args or []), **kw)


def _flat(v: Any):
    if isinstance(v, (list, tuple)):
        for x in v:
            yield from _flat(x)
    else:
        yield v


def _check_row(reference, shapes, mesh, ins: list[str], outs: list[str], args, kwargs, trials: int, seed: int, tol: float) -> str:
    """'' when the row is sound on `trials` random draws, else a counterexample."""
    gen = torch.Generator().manual_seed(seed)
    for trial in range(trials):
        tensors = [torch.randn(tuple(s), generator=gen, dtype=torch.float64) for s in shapes]
        expected = _outputs(_call(reference, tensors, args, kwargs))
        if len(expected) < len(outs):
            return f"the reference returns {len(expected)} tensor(s), the rule has {len(outs)} output(s)"
        per_input = [_layout(t, mesh, _placements(spec), gen) for t, spec in zip(tensors, ins)]
        local_outs: list[dict[tuple, torch.Tensor]] = [{} for _ in outs]
        for coord in per_input[0] if per_input else [tuple(0 for _ in mesh)]:
            try:
                res = _outputs(_call(reference, [p[coord] for p in per_input], args, kwargs))
            except Exception as e:  # the reference itself fails on the local shards
                return f"rank {coord}: the reference raises {type(e).__name__}: {e}"
            for k in range(len(outs)):
                local_outs[k][coord] = res[k]
        for k, spec in enumerate(outs):
            got, why = _assemble(local_outs[k], tuple(expected[k].shape), mesh, _placements(spec), tol)
            if got is None:
                return f"output {k} ({spec}): {why} (draw {trial})"
            want = expected[k].to(torch.float64)
            if not torch.allclose(got, want, rtol=tol, atol=tol, equal_nan=True):
                diff = (got - want).abs()
                at = tuple(int(i) for i in torch.unravel_index(torch.argmax(diff), diff.shape)) if diff.dim() else ()
                return (f"output {k} ({spec}) differs from the reference: |diff| {float(diff.max()):.4g} at {at} "
                        f"(reassembled {float(got[at]):.6g}, reference {float(want[at]):.6g}; draw {trial})")
    return ""


def check_rule(
    op: str,
    reference: Callable,
    shapes: Sequence[Sequence[int]],
    mesh: Sequence[int],
    *,
    rows: Sequence[Sequence[str]] | None = None,
    kind: str | None = None,
    outputs: int = 1,
    args: Sequence[Any] | None = None,
    kwargs: Mapping[str, Any] | None = None,
    trials: int = 2,
    seed: int = 0,
    tol: float = 1e-6,
) -> dict:
    """Checks the sharding rule of ``op`` numerically: every row of its expanded table on ``mesh``
    (the rows ``ctshard.table`` lists for ``shapes``) runs on a simulated mesh against
    ``reference`` (a callable on torch tensors: the op's global semantics), with Partial inputs
    of both signs, on ``trials`` random draws (float64).

    The rule checked is ``rows`` / ``kind`` / ``outputs`` when given (as ``register_rule`` takes
    them), else the op's registered or built-in rule. ``args`` / ``kwargs``: non-tensor arguments
    passed to ``reference`` after the tensors (with ``"$i"`` for tensor i, ``args`` is the whole
    argument list), and to the rule as ``table`` passes them.

    Returns ``{"ok": bool, "rows_checked": int, "wrong_rows": [{"row": [out..., in...],
    "mesh": [...], "counterexample": str}]}``; a wrong row is one whose reassembled output differs
    from the reference (or whose local outputs do not fit the output spec). Raises ValueError for
    a rule or arguments ctshard rejects.
    """
    from ._rules import register_rule, unregister_rule

    name = op
    if rows is not None or kind is not None:
        name = f"ctshard_check_rule.{op}"
        register_rule(name, rows, outputs=outputs, kind=kind)
    try:
        # current inputs that bring a plain Shard, so that every placeholder row is filled
        current = [("S(0)" if len(s) > 0 else "R") * len(mesh) for s in shapes]
        table = _ext.table(name, [list(s) for s in shapes], list(mesh), current, args, kwargs, "float32", 8, "dtensor")
    finally:
        if name != op:
            unregister_rule(name)
    wrong = []
    for st in table["strategies"]:
        outs = [st["out"]] if isinstance(st["out"], str) else list(st["out"])
        why = _check_row(reference, shapes, list(mesh), list(st["in"]), outs, args, kwargs, trials, seed, tol)
        if why:
            wrong.append({"row": outs + list(st["in"]), "mesh": list(mesh), "counterexample": why})
    return {"ok": not wrong, "rows_checked": len(table["strategies"]), "wrong_rows": wrong}
