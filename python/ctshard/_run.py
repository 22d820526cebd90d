"""Executing a ctshard plan with PyTorch DTensor (``ctshard.torch.run_plan``).

A plan from ``ctshard.plan(gm, ...)`` names, for every op node of an aten-level FX graph, the spec
ctshard chose for each tensor input and the specs it predicts for the outputs. ``run_plan`` runs
the graph node by node on a real ``DeviceMesh``: it moves every tensor argument to ctshard's input
spec with DTensor's own ``redistribute`` and runs the op, either through DTensor's dispatch
(``mode="dtensor"``: DTensor's sharding rule decides the output placements) or on the local
shards (``mode="local"``: the local result is wrapped with ctshard's predicted placements, so
ctshard's rule is what executes). Every collective is logged with DTensor's ``CommDebugMode``.

Everything here runs on every rank of the mesh (SPMD); the global inputs must be the same on every
rank (seed your generator).
"""

from __future__ import annotations

import functools
import operator
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
from torch.overrides import TorchFunctionMode
from torch.distributed.tensor import DeviceMesh, DTensor, Partial, Replicate, Shard, distribute_tensor
from torch.distributed.tensor._utils import compute_local_shape_and_global_offset, compute_local_stride
from torch.distributed.tensor.debug import CommDebugMode
from torch.distributed.tensor.placement_types import Placement, _StridedShard

from . import _ext
from ._graph import target_name
from ._placements import to_placements, to_spec

__all__ = ["run_plan", "PlanRun", "planned_specs", "collective_kind", "CollectiveLog"]

_MODES = ("dtensor", "local")

# Collective op packets (native and legacy functional collectives, DTensor's shard_dim_alltoall,
# c10d ops) -> ctshard's step names (`ctshard.cost(...)["steps"][i]["collective"]`).
_KINDS = {
    "all_gather_into_tensor": "all_gather",
    "all_gather_into_tensor_coalesced": "all_gather",
    "allgather_": "all_gather",
    "_allgather_base_": "all_gather",
    "allgather_into_tensor_coalesced_": "all_gather",
    "reduce_scatter_tensor": "reduce_scatter",
    "reduce_scatter_tensor_coalesced": "reduce_scatter",
    "_reduce_scatter_base_": "reduce_scatter",
    "reduce_scatter_": "reduce_scatter",
    "all_reduce": "all_reduce",
    "all_reduce_coalesced": "all_reduce",
    "allreduce_": "all_reduce",
    "allreduce_coalesced_": "all_reduce",
    "all_to_all_single": "all_to_all",
    "shard_dim_alltoall": "all_to_all",
    "alltoall_": "all_to_all",
    "alltoall_base_": "all_to_all",
    "broadcast": "broadcast",
    "broadcast_": "broadcast",
    "scatter_": "scatter",
    "gather_": "gather",
    "reduce_": "reduce",
}

_COLLECTIVE_NAMESPACES = {"_c10d_functional", "c10d_functional", "_c10d_functional_autograd", "c10d", "_dtensor"}

def collective_kind(func: Any) -> str:
    """ctshard's name (``all_gather``, ``reduce_scatter``, ``all_reduce``, ``all_to_all``, ...) of a
    collective op overload or packet as CommDebugMode sees it; the op's own name if unknown."""
    name = getattr(getattr(func, "_overloadpacket", func), "__name__", str(func))
    return _KINDS.get(name, name)


def _nbytes(t: Any) -> int:
    if isinstance(t, torch.Tensor):
        return t.numel() * t.element_size()
    if isinstance(t, (list, tuple)):
        return sum(_nbytes(x) for x in t)
    return 0


class _CollectiveLog(CommDebugMode):
    """DTensor's CommDebugMode that also keeps each collective's kind, mesh dim and size.

    CommDebugMode counts collectives per op (``get_comm_counts``) but does not report bytes or
    groups, so this subclass records, for every collective it sees, the process group (mapped to
    the mesh dim whose group it is) and the per-rank bytes: the larger of the collective's local
    input and output (an all-gather's gathered output, a reduce-scatter's full input, an
    all-reduce's tensor, an all-to-all's local shard), the convention of ``ctshard.cost`` steps.
    """

    def __init__(self, group_dims: Mapping[str, int]):
        super().__init__()
        self._group_dims = group_dims
        self.log: list[dict] = []

    def _mesh_dim(self, args: Sequence[Any], kwargs: Mapping[str, Any]) -> int | None:
        for a in list(args) + list(kwargs.values()):
            if isinstance(a, str) and a in self._group_dims:
                return self._group_dims[a]
            if hasattr(a, "group_name") and a.group_name in self._group_dims:
                return self._group_dims[a.group_name]
        return None

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = super().__torch_dispatch__(func, types, args, kwargs)
        by = self._calls.outer if getattr(self, "_calls", None) is not None else None
        if by is not None and by.rpartition(".")[2] in _KINDS:  # the collective called itself: a redistribute
            by = None
        node = torch._C._current_autograd_node() if hasattr(torch._C, "_current_autograd_node") else None
        if node is not None:  # in the backward: the autograd node running (MmBackward0, ...)
            by = f"{by or 'backward'}: {node.name()}"
        if out is NotImplemented or isinstance(func, torch._ops.HigherOrderOperator):
            return out
        packet = func._overloadpacket
        namespace = getattr(packet, "_qualified_op_name", "").split("::")[0]
        if namespace in _COLLECTIVE_NAMESPACES and packet.__name__ in _KINDS:
            kwargs = kwargs or {}
            self.log.append({
                "collective": collective_kind(packet),
                "op": str(func),
                "mesh_dim": self._mesh_dim(args, kwargs),
                "bytes": max(_nbytes(args[0]) if args else 0, _nbytes(out)),
                "by": by,
            })
        return out


class CollectiveLog(_CollectiveLog):
    """``CommDebugMode`` on a ``DeviceMesh`` that also records every collective's kind, mesh dim
    and bytes per rank: ``log`` is a list of dicts ``collective`` (``all_gather``,
    ``reduce_scatter``, ``all_reduce``, ``all_to_all``, ...), ``op``, ``mesh_dim`` (None for a
    group that is no single mesh dim's) and ``bytes`` (the larger of the local input and output,
    ``ctshard.cost``'s convention). Use it as a context manager around any DTensor code:
    ``with CollectiveLog(mesh) as log: loss.backward()``. ValueError unless ``mesh`` is a
    ``DeviceMesh``."""

    def __init__(self, mesh: DeviceMesh):
        if not isinstance(mesh, DeviceMesh):
            raise ValueError(f"ctshard.torch.CollectiveLog: mesh must be a DeviceMesh, got {type(mesh).__name__}")
        super().__init__({mesh.get_group(d).group_name: d for d in range(mesh.ndim)})
        self._calls = None

    def __enter__(self):
        self._calls = _OuterCall()
        self._calls.__enter__()
        return super().__enter__()

    def __exit__(self, *exc):
        try:
            return super().__exit__(*exc)
        finally:
            self._calls.__exit__(*exc)
            self._calls = None


class _OuterCall(TorchFunctionMode):
    """The outermost torch function running now (``outer``: its name, None outside any)."""

    def __init__(self):
        super().__init__()
        self.outer: str | None = None

    def __torch_function__(self, func, types, args=(), kwargs=None):
        if self.outer is not None:
            return func(*args, **(kwargs or {}))
        name = getattr(func, "__qualname__", None) or getattr(func, "__name__", None) or str(func)
        self.outer = name if "pybind11" not in name else getattr(func, "__name__", name)
        try:
            return func(*args, **(kwargs or {}))
        finally:
            self.outer = None


@dataclass
class PlanRun:
    """What ``run_plan`` returns.

    outputs: the graph's outputs in the order of its ``return`` (DTensors; None where the graph
        returns None; other values as computed).
    nodes: one record per op node of the plan, in graph order (dicts; see ``run_plan``).
    inputs: one record per placeholder: ``name``, ``spec`` (the plan's), ``collectives`` (moving an
        input that was already a DTensor to that spec; empty for global tensors, which are split
        locally).
    mode: ``"dtensor"`` or ``"local"``.
    mesh: the mesh sizes.
    """

    outputs: tuple
    nodes: list[dict] = field(default_factory=list)
    inputs: list[dict] = field(default_factory=list)
    mode: str = "dtensor"
    mesh: list[int] = field(default_factory=list)

    def disagreements(self) -> list[dict]:
        """The node records whose DTensor output placements differ from ctshard's prediction."""
        return [n for n in self.nodes if not n["agree"]]

    def agreement(self) -> tuple[int, int]:
        """(nodes whose actual output placements equal ctshard's prediction, nodes)."""
        return sum(1 for n in self.nodes if n["agree"]), len(self.nodes)

    def collectives(self) -> list[dict]:
        """Every collective issued while running the nodes (redistributions and inside ops), each
        with the node's name and ``phase`` (``"redistribute"``, ``"op"`` or ``"write_back"``: an
        in-place op's input moved back to its own placements, not priced by the plan)."""
        out = []
        for n in self.nodes:
            for r in n["redistributions"]:
                out += [dict(c, node=n["name"], phase="redistribute", input=r["input"]) for c in r["collectives"]]
            out += [dict(c, node=n["name"], phase="op") for c in n["op_collectives"]]
            for r in n.get("write_backs", []):
                out += [dict(c, node=n["name"], phase="write_back", input=r["input"]) for c in r["collectives"]]
        return out


# ---------------------------------------------------------------------------------------------
# helpers


def _is_sym(value: Any) -> bool:
    return isinstance(value, (torch.SymInt, torch.SymFloat, torch.SymBool))


def _op_nodes(gm: torch.fx.GraphModule) -> list[torch.fx.Node]:
    """The nodes ctshard plans: call_function nodes except getitem and symbolic-integer nodes."""
    return [
        n for n in gm.graph.nodes
        if n.op == "call_function" and n.target is not operator.getitem and not _is_sym(n.meta.get("val"))
    ]


def _tensor_refs(node: torch.fx.Node) -> list[torch.fx.Node]:
    """The node references among ``node``'s arguments in ctshard's order (positional arguments
    depth first, then keyword arguments), skipping symbolic-integer nodes: one per tensor input of
    the plan's record."""
    refs: list[torch.fx.Node] = []

    def visit(a: Any) -> None:
        if isinstance(a, torch.fx.Node):
            if not _is_sym(a.meta.get("val")):
                refs.append(a)
        elif isinstance(a, (list, tuple)):
            for x in a:
                visit(x)

    for a in node.args:
        visit(a)
    for a in node.kwargs.values():
        visit(a)
    return refs


def _metas(node: torch.fx.Node) -> list[Any]:
    """The fake tensors (or tensor metas) of a node's results, one per output."""
    val = node.meta.get("val", node.meta.get("tensor_meta"))
    if isinstance(val, (list, tuple)) and not hasattr(val, "dtype"):
        return list(val)
    return [val]


def _spec_of(value: Any) -> str | None:
    return to_spec(value.placements) if isinstance(value, DTensor) else None


def _same(a: Sequence[Placement], b: Sequence[Placement]) -> bool:
    return tuple(a) == tuple(b)


def _partial_parts(t: torch.Tensor, reduce_op: str, n: int, gen: torch.Generator) -> list[torch.Tensor]:
    """n tensors whose reduction (``reduce_op``) is ``t``: random parts of both signs for sum and avg,
    ``t`` on the first rank and smaller (max) / larger (min) values elsewhere."""
    if n == 1:
        return [t.clone()]
    if not t.is_floating_point():
        raise ValueError(f"ctshard.torch.run_plan: a Partial({reduce_op}) input must be floating point, got {t.dtype}")
    rand = [torch.randn(t.shape, generator=gen, dtype=t.dtype) for _ in range(n - 1)]
    if reduce_op == "sum":
        return rand + [t - sum(rand)]
    if reduce_op == "avg":
        return rand + [t * n - sum(rand)]
    if reduce_op == "max":
        return [t.clone()] + [t - 1 - r.abs() for r in rand]
    if reduce_op == "min":
        return [t.clone()] + [t + 1 + r.abs() for r in rand]
    raise ValueError(f"ctshard.torch.run_plan: cannot split an input into Partial({reduce_op}) parts")


def _distribute_global(t: torch.Tensor, mesh: DeviceMesh, placements: Sequence[Placement], seed: int) -> DTensor:
    """A global tensor (the same on every rank) as a DTensor with ``placements``: Shard/Replicate by
    ``distribute_tensor`` (split locally, no communication); each Partial mesh dim by a split into
    parts that reduce to the tensor (the same random split on every rank), then
    ``DTensor.from_local``."""
    if not any(isinstance(p, Partial) for p in placements):
        return distribute_tensor(t, mesh, placements, src_data_rank=None)
    gen = torch.Generator().manual_seed(seed)
    y = t
    for d, p in enumerate(placements):
        if isinstance(p, Partial):
            y = _partial_parts(y, p.reduce_op, mesh.size(d), gen)[mesh.get_local_rank(d)]
    local_shape, offset = compute_local_shape_and_global_offset(t.shape, mesh, placements)
    local = y[tuple(slice(o, o + s) for o, s in zip(offset, local_shape))] if t.dim() else y
    if any(isinstance(p, _StridedShard) for p in placements):
        raise ValueError("ctshard.torch.run_plan: a global input cannot be split as both _StridedShard and Partial")
    return DTensor.from_local(local.contiguous(), mesh, placements, run_check=False, shape=t.shape, stride=t.stride())


def _redistribute(value: DTensor, mesh: DeviceMesh, placements: Sequence[Placement]) -> DTensor:
    """``_move`` followed by ``_strided_as_views_make_it``: every StridedShard the move produces is
    in the form DTensor's view ops produce. A StridedShard on a tensor dim that an earlier mesh dim
    shards too (``S(0)_S(0, 2)``: what a view gives when several mesh dims split one group, the
    local-size rows of docs/semantics.md) has no such re-wrap (the two forms chunk differently), so
    when no later mesh dim shards that dim the move goes to Replicate there and each rank then takes
    its strided chunk of its local tensor (ctshard's price of ``R -> _S``: a local chunk), wrapped
    in the view form."""
    local = _locally_strided_mesh_dims(placements)
    if not local:
        return _strided_as_views_make_it(_move(value, mesh, placements))
    from torch.distributed.tensor._dtensor_spec import DTensorSpec

    staged = [Replicate() if m in local else p for m, p in enumerate(placements)]
    moved = value if _same(value.placements, staged) else _move(value, mesh, staged)
    piece = moved._local_tensor
    for m in local:
        pieces, _ = placements[m]._split_tensor(piece, mesh.size(m), with_padding=False, contiguous=True)
        piece = pieces[mesh.get_local_rank(m)]
    target = DTensorSpec(mesh, tuple(placements), tensor_meta=moved._spec.tensor_meta, use_strided_shard_as_shard_order=False)
    return DTensor(piece.contiguous(), target, requires_grad=moved.requires_grad)


def _locally_strided_mesh_dims(placements: Sequence[Placement]) -> list[int]:
    """The mesh dims (in order) whose placement is a StridedShard of a tensor dim that an earlier
    mesh dim also shards and no later mesh dim does; empty unless every StridedShard whose tensor
    dim another mesh dim shards is of that kind."""
    out = []
    for m, p in enumerate(placements):
        if not isinstance(p, _StridedShard):
            continue
        others = [k for k, q in enumerate(placements) if k != m and isinstance(q, (Shard, _StridedShard)) and q.dim == p.dim]
        if not others:
            continue
        if any(k > m for k in others):
            return []
        out.append(m)
    return out


def _strided_as_views_make_it(value: DTensor) -> DTensor:
    """``value`` with its StridedShards in the spec form DTensor 2.13's view ops give them: a
    StridedShard that is a plain strided shard (``use_strided_shard_as_shard_order=False``, an
    explicit ``shard_order``), which is what ctshard's ``_S(d, k)`` means. DTensor's own
    ``redistribute`` and ``distribute_tensor`` into a StridedShard give the other form
    (``use_strided_shard_as_shard_order=True``: StridedShards encode the order in which mesh dims
    shard a tensor dim), and DTensor 2.13's sharding propagation does not match two inputs whose
    StridedShards differ only in that form: ``bmm`` of two ``R_S(0, 4)`` inputs, one from a view
    and one redistributed, all-gathers both inside the op and returns Replicate, while two of the
    same form keep ``R_S(0, 4)``. When each tensor dim is sharded by at most one mesh dim the two
    forms chunk the tensor the same way, so only the spec changes; otherwise ``value`` is returned
    as it is."""
    from torch.distributed.tensor._dtensor_spec import DTensorSpec

    spec = value._spec
    if not spec.use_strided_shard_as_shard_order or not any(isinstance(p, _StridedShard) for p in spec.placements):
        return value
    dims = [p.dim for p in spec.placements if isinstance(p, (Shard, _StridedShard))]
    if len(dims) != len(set(dims)):
        return value
    target = DTensorSpec(spec.mesh, tuple(spec.placements), tensor_meta=spec.tensor_meta,
                         use_strided_shard_as_shard_order=False)
    return DTensor(value._local_tensor, target, requires_grad=value.requires_grad)


def _move(value: DTensor, mesh: DeviceMesh, placements: Sequence[Placement]) -> DTensor:
    """``value`` moved to ``placements`` by DTensor: its public ``redistribute``, or, when a mesh dim
    becomes Partial (ctshard prices Replicate -> Partial as free, as DTensor's rules do; the public
    API refuses it as "for internal use only"), the ``redistribute_local_tensor`` DTensor's op
    dispatcher calls for the same move."""
    if not any(isinstance(p, Partial) and p != q for p, q in zip(placements, value.placements)):
        try:
            return value.redistribute(mesh, placements)
        except RuntimeError:
            # DTensor 2.13 fails on some moves into a StridedShard (e.g. S(0)R -> R_S(0, 4) of
            # [16, 8, 8] on 2x2: its planner routes through a _StridedShard gather whose unpadding
            # check fails). The same collectives ctshard priced: all-gather the mesh dims that
            # change to Replicate, then each rank chunks its StridedShard locally.
            if not any(isinstance(p, _StridedShard) for p in list(placements) + list(value.placements)):
                raise
            full = value.redistribute(mesh, [Replicate()] * mesh.ndim)
            return distribute_tensor(full._local_tensor, mesh, placements, src_data_rank=None)
    from torch.distributed.tensor._dtensor_spec import DTensorSpec
    from torch.distributed.tensor._redistribute import redistribute_local_tensor

    if any(isinstance(p, Partial) and q.is_shard() for p, q in zip(placements, value.placements)):
        # Shard -> Partial has no collective (ctshard prices it +inf and never plans it; it happens
        # in "dtensor" mode when DTensor's rule returned a Shard where ctshard predicted the Partial
        # the plan goes on with): gather that mesh dim, then Replicate -> Partial is local.
        value = value.redistribute(mesh, [Replicate() if isinstance(p, Partial) and q.is_shard() else q
                                          for p, q in zip(placements, value.placements)])

    target = DTensorSpec(mesh, tuple(placements), tensor_meta=value._spec.tensor_meta)
    local = redistribute_local_tensor(value._local_tensor, value._spec, target)
    return DTensor(local, target, requires_grad=False)


def _wrap_replicated(t: Any, mesh: DeviceMesh) -> Any:
    if isinstance(t, torch.Tensor) and not isinstance(t, DTensor):
        return DTensor.from_local(t, mesh, [Replicate()] * mesh.ndim, run_check=False)
    if isinstance(t, (list, tuple)):
        return type(t)(_wrap_replicated(x, mesh) for x in t)
    return t


def _map_args(value: Any, fn) -> Any:
    """``value`` with every fx.Node replaced by ``fn(node)`` (lists and tuples rebuilt)."""
    if isinstance(value, torch.fx.Node):
        return fn(value)
    if isinstance(value, (list, tuple)):
        return type(value)(_map_args(v, fn) for v in value)
    if isinstance(value, dict):
        return {k: _map_args(v, fn) for k, v in value.items()}
    return value


def _flat_outputs(result: Any) -> list[Any]:
    if isinstance(result, (list, tuple)):
        return list(result)
    return [result]


def _localise_args(node: torch.fx.Node, args: list, kwargs: dict, out_placements: Sequence[Placement],
                   mesh: DeviceMesh, in_metas: list[Any]) -> tuple[Any, list, dict]:
    """Global size arguments rewritten for the local shards, as DTensor's
    ``ShardingPropagator._adjust_shape_and_stride_args`` does: the size argument of view / reshape /
    expand / new_* / *_backward ops (``op_to_shape_and_stride_idx``) becomes the local output shape
    when the output is sharded; squeeze becomes ``squeeze.dims`` over the globally size-1 dims."""
    op = node.target
    prop = DTensor._op_dispatcher.sharding_propagator
    idx = prop.op_to_shape_and_stride_idx.get(op)
    if idx is not None and any(isinstance(p, (Shard, _StridedShard)) for p in out_placements):
        meta = _metas(node)[0]
        shape_idx, stride_idx = idx if isinstance(idx, tuple) else (idx, None)
        local_shape, _ = compute_local_shape_and_global_offset(tuple(meta.shape), mesh, out_placements, skip_offset=True)
        args = list(args)
        args[shape_idx] = list(local_shape)
        if stride_idx is not None:
            args[stride_idx] = list(compute_local_stride(tuple(meta.stride()), local_shape))
    if op in prop.squeeze_op_to_dims_variant and in_metas and in_metas[0] is not None:
        shape = tuple(in_metas[0].shape)
        if op in (torch.ops.aten.squeeze.default, torch.ops.aten.squeeze_.default):
            dims = range(len(shape))
        else:
            dims = args[1] if isinstance(args[1], (list, tuple)) else [args[1]]
        keep = [d % max(len(shape), 1) for d in dims if shape and shape[d % len(shape)] == 1]
        op = prop.squeeze_op_to_dims_variant[op]
        args = [args[0], keep]
    return op, args, kwargs


def _check_plan(gm: torch.fx.GraphModule, plan: Mapping[str, Any], mesh: DeviceMesh) -> list[torch.fx.Node]:
    where = "ctshard.torch.run_plan: the plan does not match the graph"
    if not isinstance(plan, Mapping) or not isinstance(plan.get("nodes"), list):
        raise ValueError("ctshard.torch.run_plan: plan must be the dict ctshard.plan(gm, ...) returns (with 'nodes')")
    if list(plan.get("mesh", [])) != list(mesh.shape):
        raise ValueError(f"{where}: the plan is for mesh {plan.get('mesh')}, the DeviceMesh has shape {list(mesh.shape)}")
    nodes = _op_nodes(gm)
    if len(nodes) != len(plan["nodes"]):
        raise ValueError(f"{where}: the graph has {len(nodes)} op nodes, the plan {len(plan['nodes'])} "
                         "(was the plan made with ctshard.plan(gm) from this GraphModule?)")
    for i, (node, rec) in enumerate(zip(nodes, plan["nodes"])):
        op = target_name(node.target)
        if node.name != rec.get("name") or op != rec.get("op"):
            raise ValueError(f"{where}: op node #{i} is '{node.name}' ({op}) in the graph but "
                             f"'{rec.get('name')}' ({rec.get('op')}) in the plan")
        refs = _tensor_refs(node)
        if len(refs) != len(rec["inputs"]):
            raise ValueError(f"{where}: node '{node.name}' has {len(refs)} tensor inputs in the graph, "
                             f"{len(rec['inputs'])} in the plan")
        for s in list(rec["inputs"]) + list(rec["outputs"]):
            if len(to_placements(s)) != mesh.ndim:
                raise ValueError(f"{where}: node '{node.name}': spec {s!r} is not for a {mesh.ndim}-dim mesh")
    return nodes


def _priced_steps(meta: Any, mesh_shape: list[int], src: str, dst: str, pricing: Mapping[str, Any]) -> list[dict]:
    """ctshard's steps for moving a tensor of ``meta``'s shape from ``src`` to ``dst``
    (``ctshard.cost`` with ``pricing``: devices_per_host, cost_model), without the local
    (communication-free) ones."""
    if src == dst or meta is None or not hasattr(meta, "shape"):
        return []
    # torch's own name ("float8_e4m3fn", "uint16", ...); one ctshard does not know is a ValueError
    dtype = str(getattr(meta, "dtype", torch.float32)).removeprefix("torch.")
    # ctshard.cost's call, made on the extension: this module never imports the package back
    c = _ext.cost([int(s) for s in meta.shape], mesh_shape, src, dst, dtype, pricing["devices_per_host"],
                  pricing.get("cost_model", "dtensor"))
    return [{"collective": s["collective"], "mesh_dim": s["mesh_dim"], "bytes": s["bytes"], "cost_us": s["cost_us"]}
            for s in c["steps"] if s["collective"] != "local"]


# ---------------------------------------------------------------------------------------------


def run_plan(
    gm: torch.fx.GraphModule,
    plan: Mapping[str, Any],
    mesh: DeviceMesh,
    inputs: Sequence[Any],
    mode: str = "dtensor",
    *,
    seed: int = 0,
    devices_per_host: int = 8,
) -> PlanRun:
    """Run an aten-level GraphModule on ``mesh`` with the placements of a ctshard plan.

    gm: the ``torch.fx.GraphModule`` the plan was made from (``ctshard.plan(gm, mesh=..., place=...)``;
        its nodes carry ``meta["val"]``, as make_fx / AOT autograd graphs do).
    plan: the dict ``ctshard.plan`` returned for ``gm`` and this mesh's shape. For ``mode="dtensor"``
        make it with ``rule_set="dtensor"`` (exactly DTensor 2.13's rows, as
        ``examples/python/run_with_dtensor.py`` does): DTensor's dispatch then runs every op with
        the row the plan priced and issues exactly the priced collectives; a plan with ctshard's
        rules (``plan["rule_set"] == "ctshard"``) may use rows DTensor lacks (eval batch norm's
        batch rows, Partial passthroughs), where DTensor redistributes inside the op
        (``op_collectives``) and its output placements differ from the prediction.
    mesh: a DTensor ``DeviceMesh`` (all ranks call ``run_plan``, SPMD).
    inputs: one value per placeholder, in placeholder order. A plain tensor is the *global* value,
        the same on every rank: it is laid out as the plan's placement for that input says
        (``plan["placements"]``, Replicate when absent) — Shard / Replicate by ``distribute_tensor``
        (split locally), Partial by a split into parts that reduce to it, then
        ``DTensor.from_local``. A DTensor is moved to that placement with ``redistribute``. Other
        values (ints, None) pass through.
    mode: ``"dtensor"``: every op runs through DTensor's dispatch on DTensor arguments, after the
        arguments were redistributed to ctshard's input specs, so DTensor's rule picks the output
        placements (and may redistribute again if it prefers other inputs: ``op_collectives``).
        ``"local"``: every op runs on the local shards (``to_local()``) after the same
        redistribution, and each result is wrapped back with ``DTensor.from_local(...,
        placements=ctshard's predicted output placements, run_check=False, shape=, stride=)``:
        ctshard's rule is what executes. Global size arguments (view / reshape / expand / new_* and
        the *_backward ops DTensor localises) are rewritten to the local output shape, squeeze to
        the globally size-1 dims, as DTensor's ``_adjust_shape_and_stride_args`` does.
    seed: seeds the random split of Partial inputs.
    devices_per_host: the value the plan was made with (``ctshard.plan(..., devices_per_host=)``):
        the ``priced`` / ``planned_steps`` of each record are ``ctshard.cost`` with it (and with
        the plan's ``cost_model``), so they add up to the plan's ``cost_us``.

    Nodes: ``getitem`` takes an element of its source's results (the plan has no record for it).
    Factory ops with no tensor input run on every rank and are wrapped as Replicate (``"local"``
    then moves them, communication-free, to ctshard's predicted placements). Nodes ctshard fell
    back on have all-Replicate input specs; in ``"dtensor"`` mode an op DTensor has no sharding
    strategy for runs on the replicated local tensors (``executed: "replicated"``) when every input
    is Replicate. None outputs stay None.

    Returns a ``PlanRun``: ``outputs`` (the graph's results, DTensors) and ``nodes``, one dict per
    op node in graph order:

    - ``name``, ``op``, ``fallback`` (ctshard fell back), ``executed`` (``"dtensor"``, ``"local"``,
      ``"factory"``, ``"replicated"``), ``cost_us`` (ctshard's price of the node's redistribution)
    - ``inputs``: ctshard's input specs; ``sources``: the specs the inputs actually had before the
      redistribution; ``planned_sources``: the specs ctshard's plan says they have there
    - ``predicted``: ctshard's output specs; ``actual``: the output DTensors' specs (None for a
      None or non-DTensor output); ``agree``: every DTensor output has its predicted spec
    - ``redistributions``: per input that moved, ``input`` (index), ``from``, ``to``, ``shape``,
      ``collectives`` (each ``collective`` — ctshard's names: all_gather, reduce_scatter,
      all_reduce, all_to_all — ``mesh_dim``, ``bytes`` per rank, ``op``), and ``priced`` (the
      steps ``ctshard.cost`` prices for the same move: ``collective``, ``mesh_dim``, ``bytes``,
      ``cost_us``)
    - ``planned_steps``: per input whose planned source spec differs from its input spec, the
      steps ``ctshard.cost`` prices from the planned source (what the plan's ``cost_us`` sums),
      ``{input, from, to, steps}``; equal to ``priced`` wherever ``sources == planned_sources``
    - ``redistribute_s``: wall time of the node's redistributions on this rank
    - ``op_collectives``: collectives issued while the op itself ran (DTensor redistributing for a
      different strategy than ctshard's; always empty in ``"local"`` mode)
    - ``write_backs`` (only for an op that writes an input in place: a ``Tensor(a!)`` argument,
      a batch norm's running statistics in training): per written input the op ran on a
      redistributed copy of, ``{input, from, to, collectives}``: the copy moved back to the
      original's placements and copied into it (not priced by the plan)

    Raises ValueError when the plan does not match the graph (node names, ops, tensor-input counts,
    mesh shape) or the inputs do not match the placeholders, and RuntimeError (naming the node)
    when, in ``"local"`` mode, an op's local result does not have the local shape ctshard's
    predicted placements imply.
    """
    if mode not in _MODES:
        raise ValueError(f"ctshard.torch.run_plan: mode must be 'dtensor' or 'local', got {mode!r}")
    if not (hasattr(gm, "graph") and hasattr(gm.graph, "nodes")):
        raise ValueError(f"ctshard.torch.run_plan: gm must be a torch.fx.GraphModule, got {type(gm).__name__}")
    op_nodes = _check_plan(gm, plan, mesh)
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    inputs = list(inputs)
    if len(inputs) != len(placeholders):
        raise ValueError(f"ctshard.torch.run_plan: the graph has {len(placeholders)} inputs (placeholders), "
                         f"got {len(inputs)} values")
    unknown = sorted(set(plan.get("placements", {})) - {p.name for p in placeholders})
    if unknown:
        raise ValueError(f"ctshard.torch.run_plan: the plan places {unknown}, which are not inputs of the graph")

    pricing = {"devices_per_host": devices_per_host}
    if "cost_model" in plan:
        pricing["cost_model"] = plan["cost_model"]
    run = PlanRun(outputs=(), mode=mode, mesh=list(mesh.shape))
    executor = _Executor(gm, plan, mesh, mode, seed=seed, pricing=pricing, run=run)
    env: dict[str, Any] = {}
    for node, value in zip(placeholders, inputs):
        executor.place(env, node, value)
    output = next((n for n in gm.graph.nodes if n.op == "output"), None)
    executor.execute(env, [n for n in gm.graph.nodes if n.op not in ("placeholder", "output")])
    if output is not None:
        run.outputs = tuple(_flat_outputs(_map_args(output.args[0], lambda n: env[n.name])))
    assert len(run.nodes) == len(op_nodes)
    return run


class _Executor:
    """Runs nodes of a planned aten-level graph on a mesh, one at a time, with the plan's
    placements: the one node runner of ``run_plan`` and of ``ParallelPlan.apply``.

    gm / plan / mesh / mode as ``run_plan`` takes them (``plan["placements"]``: the placeholders'
    specs, Replicate when absent). seed: seeds the split of a global input into Partial parts
    (``seed + the placeholder's index``). pricing: ``devices_per_host`` and ``cost_model`` of
    ``ctshard.cost`` for the records. run: the ``PlanRun`` that collects one record per input and
    per op node, each move's collectives (``_CollectiveLog``) and prices; None runs the nodes
    without recording, logging or pricing anything (``apply``'s every step).

    The values live in an ``env`` (node name -> value) the caller owns, so one executor serves
    several calls and a graph can run in parts (the forward nodes, later the backward nodes).
    """

    def __init__(self, gm: torch.fx.GraphModule, plan: Mapping[str, Any], mesh: DeviceMesh, mode: str, *,
                 seed: int = 0, pricing: Mapping[str, Any] | None = None, run: PlanRun | None = None):
        self.gm, self.mesh, self.mode, self.seed, self.run = gm, mesh, mode, seed, run
        self.pricing = dict(pricing or {"devices_per_host": 8})
        self.records = {r["name"]: r for r in plan["nodes"]}
        self.placed = dict(plan.get("placements", {}))
        self.planned = planned_specs(gm, plan)  # node name -> the specs the plan gives its results
        self.index = {n.name: i for i, n in enumerate(n for n in gm.graph.nodes if n.op == "placeholder")}
        self.group_dims = {mesh.get_group(d).group_name: d for d in range(mesh.ndim)}
        self.mesh_shape = list(mesh.shape)
        self.replicate = [Replicate()] * mesh.ndim
        self._writes: dict[str, list[int]] = {}  # node name -> tensor inputs it writes in place

    def _log(self) -> Any:
        """The collective log of one move or op: a ``_CollectiveLog`` when recording, else none."""
        return _CollectiveLog(self.group_dims) if self.run is not None else _NoLog()

    def place(self, env: dict[str, Any], node: torch.fx.Node, value: Any) -> Any:
        """``env[node.name]`` = ``value`` at the plan's spec of placeholder ``node``: a DTensor
        redistributed, a plain tensor (the global value, the same on every rank) laid out
        (``_distribute_global``), other values as they are."""
        spec = self.placed.get(node.name, to_spec(self.replicate))
        placements = to_placements(spec)
        rec = {"name": node.name, "spec": spec, "collectives": []}
        with torch.no_grad():
            if isinstance(value, DTensor):
                if not _same(value.placements, placements):
                    with self._log() as log:
                        value = _redistribute(value, self.mesh, placements)
                    rec["collectives"] = log.log
            elif isinstance(value, torch.Tensor):
                value = _distribute_global(value, self.mesh, placements, self.seed + self.index.get(node.name, 0))
        env[node.name] = value
        if self.run is not None:
            self.run.inputs.append(rec)
        return value

    def execute(self, env: dict[str, Any], nodes: Sequence[torch.fx.Node]) -> None:
        """Run ``nodes`` (graph order; no placeholder, no output) into ``env``, without autograd.
        ValueError for a node kind an aten-level graph does not have (call_module, call_method)."""
        with torch.no_grad():
            for node in nodes:
                if node.op == "get_attr":
                    value = operator.attrgetter(node.target)(self.gm)
                    if isinstance(value, torch.Tensor) and not isinstance(value, DTensor):
                        value = distribute_tensor(value, self.mesh, self.replicate, src_data_rank=None)
                    env[node.name] = value
                elif node.op == "call_function" and node.target is operator.getitem:
                    src, k = node.args
                    env[node.name] = env[src.name][k]
                elif node.op == "call_function" and node.name in self.records:
                    env[node.name] = self._run_node(node, self.records[node.name], env)
                elif node.op == "call_function":  # a symbolic-integer node: plain Python arithmetic
                    env[node.name] = node.target(*_map_args(node.args, lambda n: env[n.name]),
                                                 **_map_args(dict(node.kwargs), lambda n: env[n.name]))
                else:
                    raise ValueError(f"ctshard.torch.run_plan: unsupported node kind {node.op!r} ({node.name}); "
                                     "pass an aten-level graph (make_fx / AOT autograd)")

    def _run_node(self, node: torch.fx.Node, rec: Mapping[str, Any], env: Mapping[str, Any]) -> Any:
        mesh, mode, pricing, recording = self.mesh, self.mode, self.pricing, self.run is not None
        refs = _tensor_refs(node)
        targets = [to_placements(s) for s in rec["inputs"]]
        predicted = [to_placements(s) for s in rec["outputs"]]
        record = {
            "name": node.name, "op": rec["op"], "fallback": bool(rec.get("fallback")), "cost_us": rec.get("cost_us", 0.0),
            "inputs": list(rec["inputs"]), "sources": [], "planned_sources": [], "predicted": list(rec["outputs"]),
            "actual": [], "agree": True, "redistributions": [], "planned_steps": [], "op_collectives": [],
            "executed": mode, "redistribute_s": 0.0,
        }
        # 1. every tensor input moved to ctshard's input spec with DTensor's redistribute
        moved: dict[int, Any] = {}
        for i, (ref, target) in enumerate(zip(refs, targets)):
            value = env[ref.name]
            if isinstance(value, torch.Tensor) and not isinstance(value, DTensor):
                value = DTensor.from_local(value, mesh, self.replicate, run_check=False)
            src = _spec_of(value)
            planned_src = (self.planned.get(ref.name) or [None])[0]
            meta = _metas(ref)[0]
            if recording:
                record["sources"].append(src)
                record["planned_sources"].append(planned_src)
                if planned_src is not None and planned_src != rec["inputs"][i]:
                    steps = _priced_steps(meta, self.mesh_shape, planned_src, rec["inputs"][i], pricing)
                    if steps:
                        record["planned_steps"].append({"input": i, "from": planned_src, "to": rec["inputs"][i],
                                                        "steps": steps})
            if isinstance(value, DTensor) and not _same(value.placements, target):
                t0 = time.perf_counter()
                with self._log() as log:
                    value = _redistribute(value, mesh, target)
                record["redistribute_s"] += time.perf_counter() - t0
                if recording:
                    record["redistributions"].append({
                        "input": i, "from": src, "to": rec["inputs"][i], "shape": list(value.shape),
                        "collectives": log.log,
                        "priced": _priced_steps(meta, self.mesh_shape, src, rec["inputs"][i], pricing),
                    })
            moved[i] = value

        # node references -> values (tensor inputs, met in _tensor_refs order, get their moved values)
        counter = iter(range(len(refs)))

        def value_of(n: torch.fx.Node) -> Any:
            if _is_sym(n.meta.get("val")):
                return env[n.name]
            return moved[next(counter)]

        args = list(_map_args(tuple(node.args), value_of))
        kwargs = _map_args(dict(node.kwargs), value_of)
        metas = _metas(node)

        if not refs:  # a factory: run on every rank, Replicate
            result = node.target(*args, **kwargs)
            out = _wrap_replicated(result, mesh)
            record["executed"] = "factory"
            if mode == "local":
                out = _move_outputs(out, predicted)
        elif mode == "dtensor":
            try:
                with self._log() as log:
                    out = node.target(*args, **kwargs)
                record["op_collectives"] = log.log
            except NotImplementedError:
                if not all(_same(t, self.replicate) for t in targets):
                    raise
                # DTensor has no sharding strategy for this op; its inputs are replicated (a ctshard
                # fallback): run it on the full local tensors, Replicate.
                local = node.target(*[_to_local(a) for a in args], **{k: _to_local(v) for k, v in kwargs.items()})
                out = _wrap_replicated(local, mesh)
                record["executed"] = "replicated"
        else:
            in_metas = [_metas(r)[0] for r in refs]
            op, args, kwargs = _localise_args(node, args, kwargs, predicted[0] if predicted else [], mesh, in_metas)
            local_args = [_to_local(a) for a in args]
            local_kwargs = {k: _to_local(v) for k, v in kwargs.items()}
            result = op(*local_args, **local_kwargs)
            out = _wrap_local(node, result, predicted, metas, mesh)

        writes = self._written(node)
        if writes:
            record["write_backs"] = self._write_back(env, refs, moved, writes)

        if recording:
            for k, o in enumerate(_flat_outputs(out)):
                record["actual"].append(_spec_of(o))
                if isinstance(o, DTensor) and k < len(predicted) and not _same(o.placements, predicted[k]):
                    record["agree"] = False
            self.run.nodes.append(record)
        return out


    def _written(self, node: torch.fx.Node) -> list[int]:
        """The tensor-input indices (``_tensor_refs`` order) ``node``'s op writes in place: its
        schema's ``Tensor(a!)`` arguments, and the running statistics of a batch norm in training
        (``native_batch_norm``, ``cudnn_batch_norm`` and ``miopen_batch_norm`` update them without
        the annotation)."""
        if node.name not in self._writes:
            self._writes[node.name] = _written_refs(node)
        return self._writes[node.name]

    def _write_back(self, env: Mapping[str, Any], refs: list[torch.fx.Node], moved: Mapping[int, Any],
                    writes: list[int]) -> list[dict]:
        """An in-place op ran on a redistributed copy of an input: the copy is moved back to the
        original's placements and copied into the original's local tensor (a collective the plan
        does not price). Returns one record per write-back: ``input``, ``from``, ``to``,
        ``collectives`` (when recording)."""
        out = []
        with torch.no_grad():
            for i in writes:
                orig, new = env[refs[i].name], moved.get(i)
                if new is orig or not isinstance(new, DTensor) or not isinstance(orig, torch.Tensor):
                    continue
                dst = orig.placements if isinstance(orig, DTensor) else self.replicate
                if isinstance(orig, DTensor) and new._local_tensor is orig._local_tensor:
                    continue
                with self._log() as log:
                    back = new if _same(new.placements, dst) else _redistribute(new, self.mesh, dst)
                target = orig._local_tensor if isinstance(orig, DTensor) else orig
                target.copy_(back._local_tensor)
                out.append({"input": i, "from": _spec_of(new), "to": to_spec(dst), "collectives": log.log})
        return out


@functools.lru_cache(maxsize=None)
def _running_stats_ops() -> frozenset:
    aten = torch.ops.aten
    return frozenset(getattr(aten, n).default for n in ("native_batch_norm", "cudnn_batch_norm", "miopen_batch_norm")
                     if hasattr(aten, n))


def _written_refs(node: torch.fx.Node) -> list[int]:
    """See ``_Executor._written``."""
    schema = getattr(node.target, "_schema", None)
    if schema is None:
        return []
    arguments = list(schema.arguments)
    bound = {a.name: v for a, v in zip(arguments, node.args)}
    bound.update(node.kwargs)
    names = {a.name for a in arguments if a.alias_info is not None and a.alias_info.is_write}
    if node.target in _running_stats_ops() and bound.get("training") is True:
        names |= {"running_mean", "running_var"}
    if not names:
        return []
    written: list[int] = []
    index = [0]

    def visit(a: Any, name: str | None) -> None:
        if isinstance(a, torch.fx.Node):
            if not _is_sym(a.meta.get("val")):
                if name in names:
                    written.append(index[0])
                index[0] += 1
        elif isinstance(a, (list, tuple)):
            for x in a:
                visit(x, name)

    for j, a in enumerate(node.args):  # the order of _tensor_refs
        visit(a, arguments[j].name if j < len(arguments) else None)
    for k, a in node.kwargs.items():
        visit(a, k)
    return written


class _NoLog:
    """A context manager that logs nothing (``_Executor`` without a ``PlanRun``)."""

    log: list[dict] = []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def _to_local(a: Any) -> Any:
    if isinstance(a, DTensor):
        return a.to_local()
    if isinstance(a, (list, tuple)):
        return type(a)(_to_local(x) for x in a)
    return a


def _move_outputs(out: Any, predicted: list[Sequence[Placement]]) -> Any:
    """Replicate factory results moved (communication-free) to ctshard's predicted placements."""
    outs = _flat_outputs(out)
    moved = [_redistribute(o, o.device_mesh, predicted[k]) if isinstance(o, DTensor) and k < len(predicted) else o
             for k, o in enumerate(outs)]
    return type(out)(moved) if isinstance(out, (list, tuple)) else moved[0]


def _wrap_local(node, result, predicted, metas, mesh) -> Any:
    """Local results wrapped as DTensors with ctshard's predicted placements and the global
    shapes / strides of the node's meta; checks each local shape against the placements."""
    results = _flat_outputs(result)
    wrapped = []
    for k, r in enumerate(results):
        if not isinstance(r, torch.Tensor):
            wrapped.append(r)
            continue
        meta = metas[k] if k < len(metas) else None
        placements = predicted[k] if k < len(predicted) else [Replicate()] * mesh.ndim
        if meta is None or not hasattr(meta, "shape"):
            raise RuntimeError(f"ctshard.torch.run_plan: node '{node.name}' output {k} has no shape in meta['val']")
        shape = tuple(int(s) for s in meta.shape)
        expected, _ = compute_local_shape_and_global_offset(shape, mesh, placements, skip_offset=True)
        if tuple(r.shape) != tuple(expected):
            raise RuntimeError(
                f"ctshard.torch.run_plan: node '{node.name}' ({target_name(node.target)}) output {k}: ctshard's "
                f"placements {to_spec(placements)} of global shape {list(shape)} mean local shape {list(expected)} "
                f"on this rank, but the op produced {list(r.shape)}")
        stride = tuple(int(s) for s in meta.stride()) if hasattr(meta, "stride") else None
        wrapped.append(_from_local(r, mesh, placements, torch.Size(shape), stride))
    return type(result)(wrapped) if isinstance(result, (list, tuple)) else wrapped[0]


def _from_local(local: torch.Tensor, mesh: DeviceMesh, placements: Sequence[Placement], shape: torch.Size,
                stride: tuple[int, ...] | None) -> DTensor:
    """``local`` as the shard of a DTensor of global ``shape`` laid out as ctshard's
    ``placements`` say. With a StridedShard, the spec is DTensor's view form
    (``use_strided_shard_as_shard_order=False``: a StridedShard is a plain strided shard, what
    ctshard's ``_S(d, k)`` means, as ``_strided_as_views_make_it``); ``DTensor.from_local`` gives
    the other form, which chunks differently once two mesh dims shard one tensor dim: a ``[4, 8,
    32]`` activation at ``S(1)S(1)`` viewed as ``[32, 32]`` is ``_S(0, 4)_S(0, 4)`` on 2x2, and
    wrapped by ``from_local`` its all-gather reordered the rows (a LayerNorm -> Linear model
    trained 2.6e-2 off the single process). Not autograd-aware there: ``"local"`` mode runs the
    backward as graph nodes."""
    if not any(isinstance(p, _StridedShard) for p in placements):
        return DTensor.from_local(local, mesh, placements, run_check=False, shape=shape, stride=stride)
    from torch.distributed.tensor._dtensor_spec import DTensorSpec, TensorMeta

    meta = TensorMeta(shape, stride if stride is not None else torch.empty(shape, device="meta").stride(), local.dtype)
    spec = DTensorSpec(mesh, tuple(placements), tensor_meta=meta, use_strided_shard_as_shard_order=False)
    return DTensor(local, spec, requires_grad=local.requires_grad)


def planned_specs(gm: torch.fx.GraphModule, plan: Mapping[str, Any]) -> dict[str, list[str]]:
    """The specs a ctshard plan gives every value of ``gm``: node name -> one spec per result
    (placeholders: the plan's placement or Replicate; op nodes: the predicted outputs; getitem:
    its element of the source's outputs). Use it to place a backward graph's saved tensors where
    the forward plan leaves them: ``ctshard.plan(bw, place={n: specs[n][0] for n in saved})``."""
    records = {r["name"]: r for r in plan["nodes"]}
    ndim = len(plan.get("mesh", [])) or 1
    placed = dict(plan.get("placements", {}))
    specs: dict[str, list[str]] = {}
    for node in gm.graph.nodes:
        if node.op in ("placeholder", "get_attr"):
            specs[node.name] = [placed.get(node.name, "R" * ndim)]
        elif node.op == "call_function" and node.target is operator.getitem:
            src, k = node.args
            if isinstance(k, int) and k < len(specs.get(src.name, [])):
                specs[node.name] = [specs[src.name][k]]
        elif node.name in records:
            specs[node.name] = list(records[node.name]["outputs"])
    return specs
