"""``ctshard.torch.auto_parallel``: plan a module's training step with the whole-graph planner and
apply the plan with DTensor.

The joint training graph (forward and backward of ``model(*example_inputs)``, parameters,
buffers, the example inputs and one output gradient ("tangent") per model output as inputs; the
model outputs and the parameter gradients as outputs) is traced with ``make_fx`` on fake tensors
and planned with ``ctshard.plan(..., algo="global", free_inputs=True)``: every parameter, input and
tangent placement is a variable, each gradient is tied to its parameter and each tangent to its
output. ``ParallelPlan.apply`` then distributes the parameters and, by default, runs the joint
graph itself with the plan's placements (forward and backward, one ``torch.autograd.Function``),
so the collectives issued are the priced ones; ``execute="propagate"`` runs the module with
DTensor's own propagation instead. docs/auto_parallel.md, "What apply does", has the details.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from typing import Any

import torch
import torch.utils._pytree as pytree
from torch import nn
from torch.overrides import TorchFunctionMode

from ._args import GraphNames, MeshLike, PlacementLike, mesh_sizes, place_specs
from ._placements import to_placements

__all__ = ["auto_parallel", "ParallelPlan"]

_OPTIMIZER_STATES = {"adam": 2, "sgd": 0, "sgd_momentum": 1}  # optimizer state tensors per parameter
_GIB = 1024**3
_MEMORY_KEYS = ("parameters", "gradients", "optimizer", "activations", "total")
_EXECUTE = ("plan", "propagate")  # ParallelPlan.apply's ways of running a call


# ---------------------------------------------------------------------------------------------
# mesh


def _world_size() -> int | None:
    import torch.distributed as dist

    return dist.get_world_size() if dist.is_available() and dist.is_initialized() else None


def _device_mesh(sizes: Sequence[int], where: str = "ctshard.torch.auto_parallel"):
    """A DeviceMesh of ``sizes`` over the current world (ValueError when there is none or when its
    size differs from the product of ``sizes``)."""
    import torch.distributed as dist
    from torch.distributed.device_mesh import init_device_mesh

    world = _world_size()
    if world is None:
        raise ValueError(f"{where}: mesh {list(sizes)} needs an initialized process group "
                         "(torch.distributed.init_process_group) to build its DeviceMesh")
    if math.prod(sizes) != world:
        raise ValueError(f"{where}: mesh {list(sizes)} has {math.prod(sizes)} devices, "
                         f"the world size is {world}")
    device = "cuda" if dist.get_backend() == "nccl" else "cpu"
    return init_device_mesh(device, tuple(sizes))


def _mesh_sizes(mesh: Any) -> tuple[list[int], Any]:
    """(mesh sizes, DeviceMesh or None): a DeviceMesh as given, a sequence of sizes checked (and
    its DeviceMesh built now when a process group exists, else at ``apply``)."""
    from torch.distributed.device_mesh import DeviceMesh

    sizes = mesh_sizes(mesh, "ctshard.torch.auto_parallel")
    if isinstance(mesh, DeviceMesh):
        return sizes, mesh
    return sizes, (_device_mesh(sizes) if _world_size() is not None else None)


# ---------------------------------------------------------------------------------------------
# capture


@dataclasses.dataclass
class _Capture:
    """The joint graph and what its placeholders and outputs stand for."""

    gm: torch.fx.GraphModule
    params: dict[str, str]  # trainable parameter FQN -> placeholder
    buffers: dict[str, str]  # buffer (and frozen parameter) FQN -> placeholder
    inputs: list[str | None]  # placeholder of example input i (None: not a tensor)
    tangents: list[str]  # placeholder of each output's gradient
    outputs: list[str]  # node of each model output
    grads: dict[str, str]  # trainable parameter FQN -> gradient node (unused parameters: absent)
    module_outputs: dict[str, str]  # module FQN -> node of its (tensor) output, modules called once
    module_nodes: dict[str, list[str]]  # module FQN -> forward nodes traced inside it (innermost)
    backward_nodes: set[str]  # nodes that depend on a tangent
    out_spec: Any = None  # pytree spec of the model's output (its leaves: ``outputs``)
    examples: list[tuple] = dataclasses.field(default_factory=list)  # per example input: ("tensor", shape, dtype) or ("value", v)
    training: bool = True  # the model's ``training`` flag when it was traced
    differentiable: list[bool] = dataclasses.field(default_factory=list)  # per output: it required grad when traced


def _capture(model: nn.Module, example_inputs: tuple) -> _Capture:
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.experimental.proxy_tensor import get_proxy_mode, get_proxy_slot, make_fx
    from torch.func import functional_call

    trainable = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    frozen = [(n, p) for n, p in model.named_parameters() if not p.requires_grad] + list(model.named_buffers())
    pnames, bnames = [n for n, _ in trainable], [n for n, _ in frozen]

    def forward(params, buffers, inputs):
        state = dict(zip(pnames, params))
        state.update(zip(bnames, buffers))
        return functional_call(model, state, tuple(inputs))

    try:
        with FakeTensorMode(allow_non_fake_inputs=True) as fake, torch.no_grad():
            conv = lambda t: fake.from_tensor(t) if isinstance(t, torch.Tensor) else t  # noqa: E731
            out = forward([conv(p) for _, p in trainable], [conv(b) for _, b in frozen], [conv(x) for x in example_inputs])
    except Exception as e:
        raise ValueError(f"ctshard.torch.auto_parallel: cannot trace the model {type(model).__name__}: "
                         f"{type(e).__name__}: {e}") from e
    flat_out, out_spec = pytree.tree_flatten(out)
    if not flat_out or not all(isinstance(o, torch.Tensor) for o in flat_out):
        raise TypeError(f"ctshard.torch.auto_parallel: {type(model).__name__} must return tensors (or a tuple of them)")

    calls: dict[str, int] = {}
    marks: dict[str, str] = {}
    stack: list[tuple[str, int]] = []

    def _nodes_now() -> int:
        mode = get_proxy_mode()
        return len(mode.tracer.graph.nodes) if mode is not None else 0

    def pre(fqn):
        def hook(mod, args):
            calls[fqn] = calls.get(fqn, 0) + 1
            stack.append((fqn, _nodes_now()))
        return hook

    def post(fqn):
        def hook(mod, args, result):
            mode = get_proxy_mode()
            stack.pop()
            if mode is None:
                return
            if isinstance(result, torch.Tensor):
                try:
                    marks[fqn] = get_proxy_slot(result, mode.tracer).proxy.node.name
                except Exception:  # an output the tracer does not know (a constant)
                    pass
        return hook

    handles = []
    for fqn, m in model.named_modules():
        handles.append(m.register_forward_pre_hook(pre(fqn)))
        handles.append(m.register_forward_hook(post(fqn)))

    # every forward node goes to the innermost module that was running when it was created
    owner: dict[str, str] = {}

    class _Owner(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            before = _nodes_now()
            r = func(*args, **(kwargs or {}))
            mode = get_proxy_mode()
            if mode is not None and stack:
                for node in list(mode.tracer.graph.nodes)[before:]:
                    owner.setdefault(node.name, stack[-1][0])
            return r

    differentiable: list[bool] = []  # per model output: it requires grad (set while tracing)

    def step(params, buffers, inputs, tangents):
        with _Owner():
            result = forward(params, buffers, inputs)
        outs = pytree.tree_leaves(result)
        # only the outputs that require grad are differentiated; the others' tangents go unused
        diff = [(o, t) for o, t in zip(outs, tangents) if isinstance(o, torch.Tensor) and o.requires_grad]
        if diff and params:
            grads = torch.autograd.grad([o for o, _ in diff], params, grad_outputs=[t for _, t in diff], allow_unused=True)
        else:
            grads = (None,) * len(params)
        differentiable[:] = [isinstance(o, torch.Tensor) and o.requires_grad for o in outs]
        return (*outs, *grads)

    args = ([p.detach().clone().requires_grad_() for _, p in trainable],
            [b.detach().clone() for _, b in frozen], list(example_inputs),
            [torch.zeros(o.shape, dtype=o.dtype) for o in flat_out])
    try:
        gm = make_fx(step, tracing_mode="fake")(*args)
    except Exception as e:
        raise ValueError(f"ctshard.torch.auto_parallel: cannot trace the model {type(model).__name__}: "
                         f"{type(e).__name__}: {e}") from e
    finally:
        for h in handles:
            h.remove()

    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    leaves, _ = pytree.tree_flatten(args)
    if len(leaves) != len(placeholders):
        raise ValueError(f"ctshard.torch.auto_parallel: {type(model).__name__}: the traced graph has "
                         f"{len(placeholders)} inputs for {len(leaves)} arguments")
    names = iter(p.name for p in placeholders)
    params = {n: next(names) for n in pnames}
    buffers = {n: next(names) for n in bnames}
    inputs = [next(names) for _ in example_inputs]
    inputs = [name if isinstance(x, torch.Tensor) else None for name, x in zip(inputs, example_inputs)]
    tangents = [next(names) for _ in flat_out]
    out_args = list(next(n for n in gm.graph.nodes if n.op == "output").args[0])
    outputs = [a.name for a in out_args[: len(flat_out)]]
    grads = {n: a.name for n, a in zip(pnames, out_args[len(flat_out):]) if a is not None}

    backward: set[str] = set(tangents)
    for node in gm.graph.nodes:
        if node.op != "placeholder" and any(a.name in backward for a in node.all_input_nodes):
            backward.add(node.name)
    module_nodes: dict[str, list[str]] = {}
    for node in gm.graph.nodes:
        if node.name in owner and node.name not in backward:
            module_nodes.setdefault(owner[node.name], []).append(node.name)
    once = {fqn: node for fqn, node in marks.items() if calls.get(fqn) == 1}
    examples = [("tensor", tuple(x.shape), x.dtype) if isinstance(x, torch.Tensor) else ("value", x) for x in example_inputs]
    return _Capture(gm, params, buffers, inputs, tangents, outputs, grads, once, module_nodes, backward,
                    out_spec=out_spec, examples=examples, training=model.training,
                    differentiable=list(differentiable) or [True] * len(outputs))


# ---------------------------------------------------------------------------------------------
# memory (per device, GiB). One place: when ctshard.plan reports "memory" itself, read it there.


def _local_bytes(shape: Sequence[int], spec: str, sizes: Sequence[int], itemsize: int) -> int:
    """Bytes of the largest local shard of a tensor of global ``shape`` at ``spec``, as the
    planner's memory model counts it: a Shard splits its dim in ceil-sized chunks, a
    ``_StridedShard(d, sf)`` in ``sf * n`` of them, ``sf`` per rank (at most ``sf * ceil(size /
    (sf * n))``); Replicate and Partial keep it whole."""
    local = list(shape)
    for mesh_dim, p in enumerate(to_placements(spec)):
        dim = getattr(p, "dim", None)
        if dim is not None and dim < len(local):
            n, groups = sizes[mesh_dim], getattr(p, "split_factor", 1)
            local[dim] = min(local[dim], groups * -(-local[dim] // (groups * n))) if groups > 1 else -(-local[dim] // n)
    return math.prod(local) * itemsize


def _node_type(node: torch.fx.Node) -> tuple[list[int], int] | None:
    val = node.meta.get("val")
    if isinstance(val, torch.Tensor):
        return [int(s) for s in val.shape], val.element_size()
    return None


def _memory_gib(plan_json: Mapping[str, Any]) -> dict[str, float]:
    """Per-device memory of the plan (GiB): parameters, gradients, optimizer state, activations
    saved for the backward and the total, as the planner's training-step model counts them
    (docs/global_plan.md, "Training step")."""
    return {k: float(plan_json["memory"][k]) for k in _MEMORY_KEYS}


def _plan_memory_options(cap: _Capture, budget_gib: float | None, optimizer: str) -> dict[str, Any]:
    """The ``ctshard.plan`` keywords of the training step: the optimizer, each gradient's
    parameter, each output's gradient tied to the output, and the budget (GiB per device)."""
    opts: dict[str, Any] = {"optimizer": optimizer, "gradients": {g: cap.params[p] for p, g in cap.grads.items()},
                            "ties": list(zip(cap.tangents, cap.outputs))}
    if budget_gib is not None:
        opts["memory_budget_gib"] = float(budget_gib)
    return opts


# ---------------------------------------------------------------------------------------------
# the plan


@dataclasses.dataclass
class ParallelPlan:
    """What ``auto_parallel`` returns.

    parameter_placements: parameter FQN -> spec (``"S(0)R"``), buffers included (Replicate).
    input_placements: spec of each example input (None for non-tensor inputs).
    output_placements: spec of each model output (flattened).
    module_output_placements: module FQN -> the planned spec of its output (modules called once
        per forward that return one tensor; ``""`` is the model itself).
    step_time_us: the planned time of one training step (µs): communication (redistributions and
        the collectives inside ops, DTensor's cost model) plus the compute term of the planner.
    communication_us: the communication part of ``step_time_us`` (µs).
    memory_gib: per device, GiB: ``parameters``, ``gradients``, ``optimizer``, ``activations``
        (forward values read by the backward), ``total``.
    proven_optimal, optimality_gap: the planner's proof (gap 0 = optimal within its model).
    hand_plans: with ``auto_parallel(..., hand_plans=True)``, the planner's hand plans priced in
        the same model (docs/global_plan.md, "Training step"): name (``"ddp"``, ``"fsdp"``,
        ``"megatron_tp_fsdp"``) -> ``place`` (parameter FQN / ``"inputs[i]"`` -> spec: pass it
        as ``auto_parallel(..., place=...)`` to get that plan as a ``ParallelPlan``),
        ``step_time_us``, ``communication_us`` (its redistributions), ``memory_gib``, ``status``;
        empty otherwise.
    mesh: the mesh sizes. plan: ``ctshard.plan``'s JSON; graph: the joint training graph.
    """

    parameter_placements: dict[str, str]
    input_placements: list[str | None]
    output_placements: list[str]
    module_output_placements: dict[str, str]
    step_time_us: float
    communication_us: float
    memory_gib: dict[str, float]
    proven_optimal: bool
    optimality_gap: float
    mesh: list[int]
    optimizer: str
    plan: dict = dataclasses.field(repr=False)
    graph: torch.fx.GraphModule = dataclasses.field(repr=False)
    _capture: _Capture = dataclasses.field(repr=False)
    _device_mesh: Any = dataclasses.field(repr=False, default=None)
    hand_plans: dict[str, dict[str, Any]] = dataclasses.field(default_factory=dict)

    def priced_collectives(self) -> list[dict[str, Any]]:
        """The collectives the plan prices for one training step, one dict per step: ``phase``
        (``"forward"``, ``"backward"`` or ``"gradient"``: the reduction of a gradient to its
        parameter's placement), ``node`` (the joint graph's node; for ``"gradient"`` the
        parameter's FQN), ``input`` (the node's tensor input index; -1 for ``"gradient"``),
        ``from`` / ``to`` (specs), ``collective`` (``all_gather``, ``reduce_scatter``,
        ``all_reduce``, ``all_to_all``), ``mesh_dim``, ``bytes`` (per rank, ``ctshard.cost``'s
        convention: an all-gather's gathered output, a reduce-scatter's full input) and
        ``cost_us``. Every move is priced from the planned spec of the value to the spec the
        node reads it at (``ctshard.cost`` with the plan's cost model, devices_per_host 8 as
        ``ctshard.plan``'s default); the ``cost_us`` of the forward and backward steps sum to
        ``communication_us``, those of the gradient steps to the plan's
        ``gradient_reduction_us``."""
        from ._run import _op_nodes, _priced_steps, _tensor_refs

        cap = self._capture
        specs = _specs(cap.gm, self.plan)
        pricing = {"devices_per_host": int(self.plan.get("devices_per_host", 8)),
                   "cost_model": self.plan.get("cost_model", "dtensor")}
        out: list[dict[str, Any]] = []
        for node, rec in zip(_op_nodes(cap.gm), self.plan["nodes"]):
            phase = "backward" if node.name in cap.backward_nodes else "forward"
            for i, (ref, dst) in enumerate(zip(_tensor_refs(node), rec["inputs"])):
                src = (specs.get(ref.name) or [None])[0]
                if src is None or src == dst:
                    continue
                for step in _priced_steps(ref.meta.get("val"), self.mesh, src, dst, pricing):
                    out.append({"phase": phase, "node": node.name, "input": i, "from": src, "to": dst, **step})
        nodes = {n.name: n for n in cap.gm.graph.nodes}
        for fqn, grad in cap.grads.items():
            src, dst = specs[grad][0], specs[cap.params[fqn]][0]
            if src != dst:
                for step in _priced_steps(nodes[grad].meta.get("val"), self.mesh, src, dst, pricing):
                    out.append({"phase": "gradient", "node": fqn, "input": -1, "from": src, "to": dst, **step})
        return out

    def dtensor_placements(self) -> dict[str, tuple[Any, ...]]:
        """``parameter_placements`` as DTensor placements: parameter / buffer FQN -> a tuple of
        ``Shard`` / ``Replicate`` / ``Partial`` / ``_StridedShard``, one per mesh dim, ready for
        ``distribute_tensor(param, mesh, placements)``."""
        return {fqn: to_placements(spec) for fqn, spec in self.parameter_placements.items()}

    def summary(self) -> str:
        """A per-layer table: layer (the FQN prefix of its parameters), the communication of the
        forward nodes traced inside it and not inside a deeper layer (µs; the rows, the forward
        nodes outside every layer and the backward's row add up to the communication), the per-device
        memory of its parameters, gradients and optimizer state (MiB) and its placements."""
        cap = self._capture
        cost = {n["name"]: float(n.get("cost_us", 0) or 0) for n in self.plan["nodes"]}
        layers: dict[str, list[str]] = {}
        for fqn in self.parameter_placements:
            layers.setdefault(fqn.rpartition(".")[0], []).append(fqn)
        nodes = {n.name: n for n in cap.gm.graph.nodes}
        specs = _specs(cap.gm, self.plan)
        factor = 2 + _OPTIMIZER_STATES[self.optimizer]
        rows = [("layer", "comm us", "memory MiB", "placements")]
        claimed: set[str] = set()
        # each module's forward nodes go to the innermost layer holding it (a layer's submodules
        # without parameters of their own count in it; the root layer: only its own nodes)
        owner: dict[str, list[str]] = {}
        for m, ns in cap.module_nodes.items():
            holders = [layer for layer in layers if m == layer or (layer and m.startswith(layer + "."))]
            if holders:
                owner.setdefault(max(holders, key=len), []).extend(ns)
        for layer, fqns in layers.items():
            inside = owner.get(layer, [])
            comm = sum(cost.get(n, 0.0) for n in inside)
            claimed.update(inside)
            mem = 0
            for f in fqns:
                ph = cap.params.get(f) or cap.buffers.get(f)
                t = _node_type(nodes[ph])
                mem += (factor if f in cap.grads else 1) * _local_bytes(t[0], specs[ph][0], self.mesh, t[1]) if t else 0
            rows.append((layer or "(root)", f"{comm:.3f}", f"{mem / 2**20:.4f}",
                         " ".join(f"{f.rpartition('.')[2]}={self.parameter_placements[f]}" for f in fqns)))
        rest = sum(c for n, c in cost.items() if n not in claimed and n not in cap.backward_nodes)
        back = sum(c for n, c in cost.items() if n in cap.backward_nodes)
        rows.append(("(other forward)", f"{rest:.3f}", "", ""))
        rows.append(("(backward)", f"{back:.3f}", "", ""))
        widths = [max(len(r[i]) for r in rows) for i in range(4)]
        lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
        m = self.memory_gib
        lines.append(f"mesh {'x'.join(map(str, self.mesh))}: step {self.step_time_us:.3f} us "
                     f"(communication {self.communication_us:.3f} us), "
                     f"{'proven optimal' if self.proven_optimal else f'gap {self.optimality_gap:.3g}'}; memory per device "
                     + ", ".join(f"{k} {m[k] * 1024:.4f} MiB" for k in _MEMORY_KEYS))
        return "\n".join(lines)

    def apply(self, model: nn.Module, *, execute: str = "plan") -> nn.Module:
        """Distribute ``model``'s parameters and buffers per the plan and make its forward and
        backward run with DTensor; returns ``model`` itself (changed in place, as
        ``parallelize_module``; its class becomes a subclass whose ``forward`` wraps the original,
        as FSDP2's ``fully_shard`` does).

        Always: each parameter is a DTensor at its planned placements (``distribute_tensor``, each
        rank keeping its own shard of the same global value), each gradient is redistributed to
        its parameter's placements as it is computed (a tensor hook), buffers are Replicate; tensor
        inputs may be plain tensors (the same on every rank) or DTensors; the model outputs are
        DTensors at ``output_placements``.

        execute: ``"plan"`` (default): a call runs the captured joint graph with the plan's
            placements (``ctshard.torch.run_plan``'s ``"local"`` execution: every op on the local
            shards at the planned placements, every planned move a DTensor redistribute) inside one
            ``torch.autograd.Function``: its forward runs the forward nodes and saves for backward
            exactly the forward values the backward nodes read (``save_for_backward``, so
            ``saved_tensors_hooks`` see them), its backward moves each output gradient to its
            tangent's planned placements and runs the backward nodes, giving every parameter its
            gradient node's value. The collectives issued are then the ones
            ``priced_collectives`` lists. The original ``forward`` and the submodules' hooks do
            not run. A call the graph cannot serve falls back to ``"propagate"`` for that call,
            with a ``UserWarning`` naming the difference (once per model): keyword arguments,
            another number of positional inputs, a tensor input of another shape or dtype than the
            traced example (a different batch size) or that requires grad, a non-tensor input
            other than the example's, the model in another train / eval mode than when traced,
            autocast enabled. An op that writes a moved input in place (BatchNorm's running
            statistics read sharded) updates the original too: a write-back the plan does not
            price (issued = priced + the write-backs). Higher-order gradients
            (``torch.autograd.grad(..., create_graph=True)``) are not supported: the backward
            is ``once_differentiable``.
            ``"propagate"``: the original ``forward`` runs on DTensors; the inputs, the outputs of
            the modules the plan names (``module_output_placements``, Partial ones excepted) and
            the model outputs are redistributed to their planned placements and every other
            placement is DTensor's own sharding propagation (plain tensors meeting a DTensor in a
            call, such as a causal mask created in forward, become Replicate DTensors; a plain
            input requiring grad becomes a DTensor differentiably, so its gradient reaches it;
            ``F.batch_norm`` in training updates DTensor running statistics itself).

        Tied parameters stay tied (one DTensor Parameter per shared Parameter, at its first
        FQN's placements); a parameter a call does not use keeps ``grad`` None.

        Random ops under ``"plan"`` draw on each rank's local shard from that rank's generator: a
        Replicate random value (dropout's mask, as ctshard plans it) is the single-process value
        when every rank's generator is in the same state, a sharded one is not
        (docs/auto_parallel.md, "Random ops").

        Raises ValueError when ``execute`` is neither ``"plan"`` nor ``"propagate"``, the model's
        parameters differ from the planned ones (names, shapes or dtypes) or no process group of the
        mesh's size exists."""
        from torch.distributed.tensor import DTensor, Replicate, distribute_tensor

        if execute not in _EXECUTE:
            raise ValueError(f"ctshard.torch.ParallelPlan.apply: execute must be one of "
                             f"{', '.join(map(repr, _EXECUTE))}, got {execute!r}")
        names = {n for n, _ in model.named_parameters()} | {n for n, _ in model.named_buffers()}
        if names != set(self.parameter_placements):
            raise ValueError(f"ctshard.torch.ParallelPlan.apply: model {type(model).__name__} has other parameters "
                             f"than the plan: {sorted(names ^ set(self.parameter_placements))[:5]}")
        traced = {n.name: n.meta.get("val") for n in self.graph.graph.nodes if n.op == "placeholder"}
        placeholder = {**self._capture.params, **self._capture.buffers}
        for fqn, t in [*model.named_parameters(), *model.named_buffers()]:
            val = traced.get(placeholder.get(fqn, ""))
            if isinstance(val, torch.Tensor) and (tuple(val.shape) != tuple(t.shape) or val.dtype != t.dtype):
                raise ValueError(f"ctshard.torch.ParallelPlan.apply: {fqn} of model {type(model).__name__} is "
                                 f"{list(t.shape)} {t.dtype}, the plan's was {list(val.shape)} {val.dtype} "
                                 "(plan the model apply is given)")
        if self._device_mesh is None:
            self._device_mesh = _device_mesh(self.mesh, "ctshard.torch.ParallelPlan.apply")
        mesh = self._device_mesh
        replicate = [Replicate()] * mesh.ndim
        # every owner of a shared (tied) parameter or buffer gets the same DTensor, at the spec of
        # its canonical FQN (the first, as named_parameters() de-duplicates)
        canonical = {id(t): fqn for fqn, t in [*model.named_parameters(), *model.named_buffers()]}
        done: dict[int, Any] = {}
        for fqn, p in list(model.named_parameters(remove_duplicate=False)):
            owner_name, _, attr = fqn.rpartition(".")
            if id(p) not in done:
                placements = list(to_placements(self.parameter_placements[canonical[id(p)]]))
                local = p.detach() if not isinstance(p, DTensor) else p.detach().full_tensor()
                d = nn.Parameter(distribute_tensor(local, mesh, placements, src_data_rank=None), requires_grad=p.requires_grad)
                if d.requires_grad:
                    d.register_hook(_grad_hook(mesh, placements))
                done[id(p)] = d
            model.get_submodule(owner_name)._parameters[attr] = done[id(p)]
        for fqn, b in list(model.named_buffers(remove_duplicate=False)):
            owner_name, _, attr = fqn.rpartition(".")
            if id(b) not in done:
                done[id(b)] = b if isinstance(b, DTensor) else distribute_tensor(b, mesh, replicate, src_data_rank=None)
            model.get_submodule(owner_name)._buffers[attr] = done[id(b)]
        for fqn, spec in self.module_output_placements.items():
            if fqn and "P" not in spec:
                model.get_submodule(fqn).register_forward_hook(_output_hook(mesh, list(to_placements(spec))))
        _wrap_forward(model, mesh, self, _PlanStep(self, mesh) if execute == "plan" else None)
        return model


def _grad_hook(mesh, placements):
    def hook(grad):
        if grad is None:  # a parameter the call did not use: no gradient, as in plain torch
            return None
        return grad.redistribute(mesh, placements) if tuple(grad.placements) != tuple(placements) else grad
    return hook


def _output_hook(mesh, placements):
    from torch.distributed.tensor import DTensor

    def hook(module, args, out):
        if isinstance(out, DTensor) and tuple(out.placements) != tuple(placements):
            return out.redistribute(mesh, placements)
        return None
    return hook


class _ReplicatePlain(TorchFunctionMode):
    """During forward: plain tensors passed to a torch function together with a DTensor become
    Replicate DTensors first, so that autograd saves DTensors and backward needs no context."""

    def __init__(self, mesh):
        super().__init__()
        self.mesh = mesh

    def __torch_function__(self, func, types, args=(), kwargs=None):
        from torch.distributed.tensor import DTensor, Replicate

        kwargs = kwargs or {}
        flat, spec = pytree.tree_flatten((args, kwargs))
        if any(isinstance(a, DTensor) for a in flat) and any(type(a) is torch.Tensor for a in flat):
            rep = [Replicate()] * self.mesh.ndim
            flat = [DTensor.from_local(a, self.mesh, rep, run_check=False) if type(a) is torch.Tensor else a for a in flat]
            args, kwargs = pytree.tree_unflatten(flat, spec)
        if func is torch.nn.functional.batch_norm:
            return _batch_norm_updating(func, *args, **kwargs)
        return func(*args, **kwargs)


def _batch_norm_updating(func, input, running_mean=None, running_var=None, weight=None, bias=None, training=False,
                         momentum=0.1, eps=1e-5):
    """``F.batch_norm`` on DTensors whose running statistics are updated: DTensor's propagation
    may run the op on a redistributed copy of a Replicate running statistic, losing the in-place
    update, so in training the op runs without them and they are updated here from the batch's
    mean and unbiased variance (moved to each statistic's placements)."""
    from torch.distributed.tensor import DTensor

    stats = [t for t in (running_mean, running_var) if t is not None]
    if not (training and stats and all(isinstance(t, DTensor) for t in stats)):
        return func(input, running_mean, running_var, weight, bias, training, momentum, eps)
    out = func(input, None, None, weight, bias, True, momentum, eps)
    with torch.no_grad():
        x = input.detach()
        dims = [d for d in range(x.ndim) if d != 1]
        for buf, stat in ((running_mean, lambda: x.mean(dims)), (running_var, lambda: x.var(dims, correction=1))):
            if buf is not None:
                new = buf * (1 - momentum) + stat().to(buf.dtype) * momentum
                if tuple(new.placements) != tuple(buf.placements):
                    new = new.redistribute(buf.device_mesh, buf.placements)
                buf._local_tensor.copy_(new._local_tensor)
    return out


class _PlanStep:
    """The joint graph of a plan split at its tangents, run with the plan's placements by
    ``_run._Executor`` in ``"local"`` mode (``ParallelPlan.apply(..., execute="plan")``).

    primals: the placeholders of the parameters, buffers and inputs (the forward's arguments, in
    graph order); tangents: those of the output gradients; forward / backward: the other nodes,
    split by ``_Capture.backward_nodes``; saved: the forward values the backward reads (gradient
    nodes that are forward values included), graph order; grads: per primal, (gradient node,
    parameter placements) of a trainable parameter, else None."""

    def __init__(self, plan: ParallelPlan, mesh):
        from ._run import _check_plan, _Executor

        cap = plan._capture
        merged = dict(plan.plan)
        merged["placements"] = {**plan.plan.get("placements", {}), **plan.plan.get("input_placements", {})}
        _check_plan(cap.gm, merged, mesh)
        self.cap, self.mesh = cap, mesh
        self.executor = _Executor(cap.gm, merged, mesh, "local")
        nodes = list(cap.gm.graph.nodes)
        tangents = set(cap.tangents)
        self.primals = [n for n in nodes if n.op == "placeholder" and n.name not in tangents]
        self.tangents = [n for n in nodes if n.op == "placeholder" and n.name in tangents]
        body = [n for n in nodes if n.op not in ("placeholder", "output")]
        self.forward = [n for n in body if n.name not in cap.backward_nodes]
        self.backward = [n for n in body if n.name in cap.backward_nodes]
        read = {a.name for n in self.backward for a in n.all_input_nodes} | set(cap.grads.values())
        self.saved = [n.name for n in nodes if n.name in read and n.name not in cap.backward_nodes]
        by_placeholder = {ph: fqn for fqn, ph in cap.params.items()}
        self.grads = [(cap.grads[by_placeholder[n.name]], plan.dtensor_placements()[by_placeholder[n.name]])
                      if n.name in by_placeholder and by_placeholder[n.name] in cap.grads else None
                      for n in self.primals]

    def mismatch(self, model: nn.Module, args: tuple, kwargs: Mapping[str, Any]) -> str | None:
        """Why the captured graph cannot serve ``model(*args, **kwargs)`` (text), None when it can."""
        examples = self.cap.examples
        if kwargs:
            return f"keyword arguments {sorted(kwargs)} (the graph was traced with positional inputs only)"
        if len(args) != len(examples):
            return f"{len(args)} positional inputs (the graph was traced with {len(examples)})"
        devices = {a.device.type for a in args if isinstance(a, torch.Tensor)} | {"cpu"}
        devices |= {getattr(getattr(self, "mesh", None), "device_type", "cpu")}
        autocast = sorted(d for d in devices if torch.is_autocast_enabled(d))
        if autocast:
            return f"autocast enabled on {', '.join(autocast)} (the graph was traced without autocast)"
        if model.training != self.cap.training:
            return (f"the model in {'train' if model.training else 'eval'} mode (traced in "
                    f"{'train' if self.cap.training else 'eval'} mode)")
        for i, (a, (kind, *ex)) in enumerate(zip(args, examples)):
            if kind == "tensor":
                if not isinstance(a, torch.Tensor):
                    return f"input {i} a {type(a).__name__} (traced with a tensor)"
                shape = tuple(a.shape)  # a DTensor's global shape
                if shape != ex[0] or a.dtype != ex[1]:
                    return (f"input {i} of shape {list(shape)} and dtype {a.dtype} (traced with shape "
                            f"{list(ex[0])} and dtype {ex[1]})")
                if a.requires_grad and torch.is_grad_enabled():
                    return f"input {i} requiring grad (the planned graph computes parameter gradients only)"
            elif isinstance(a, torch.Tensor) or type(a) is not type(ex[0]) or not _equal(a, ex[0]):
                return f"input {i} = {a!r} (traced with {ex[0]!r})"
        return None

    def __call__(self, model: nn.Module, args: tuple) -> Any:
        """The model's output (its pytree) for positional inputs ``args`` (``mismatch`` is None)."""
        state = dict(model.named_parameters())
        state.update(model.named_buffers())
        values = [state[f] for f in self.cap.params] + [state[f] for f in self.cap.buffers] + list(args)
        outs = _PlanFunction.apply(self, *values)
        return pytree.tree_unflatten(list(outs), self.cap.out_spec)


def _equal(a: Any, b: Any) -> bool:
    try:
        return bool(a == b)
    except Exception:  # a value without a plain equality
        return False


class _PlanFunction(torch.autograd.Function):
    """One call of a model applied with ``execute="plan"``: forward and backward nodes of the joint
    graph, each op on its local shards at the planned placements."""

    @staticmethod
    def forward(ctx, step: _PlanStep, *values):
        env: dict[str, Any] = {}
        for node, value in zip(step.primals, values):
            step.executor.place(env, node, value)
        step.executor.execute(env, step.forward)
        tensors = [n for n in step.saved if isinstance(env.get(n), torch.Tensor)]
        ctx.save_for_backward(*[env[n] for n in tensors])
        ctx.saved_names = tensors
        ctx.others = {n: env[n] for n in step.saved if n not in ctx.saved_names}  # ints, shapes
        ctx.step = step
        outs = tuple(env[o] for o in step.cap.outputs)
        diff = step.cap.differentiable or [True] * len(outs)
        fixed = [o for o, d in zip(outs, diff) if isinstance(o, torch.Tensor)
                 and not (d and (o.is_floating_point() or o.is_complex()))]
        if fixed:
            ctx.mark_non_differentiable(*fixed)
        return outs

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, *grad_outputs):
        from torch.distributed.tensor import DTensor

        from ._run import _redistribute

        step: _PlanStep = ctx.step
        env: dict[str, Any] = dict(zip(ctx.saved_names, ctx.saved_tensors))
        env.update(ctx.others)
        for node, grad in zip(step.tangents, grad_outputs):
            step.executor.place(env, node, grad)
        step.executor.execute(env, step.backward)
        result: list[Any] = [None]  # the step itself
        for target in step.grads:
            if target is None:
                result.append(None)
                continue
            g = env[target[0]]
            if isinstance(g, DTensor) and tuple(g.placements) != tuple(target[1]):
                with torch.no_grad():
                    g = _redistribute(g, step.mesh, target[1])
            result.append(g)
        return tuple(result)


def _wrap_forward(model: nn.Module, mesh, plan: ParallelPlan, step: _PlanStep | None) -> None:
    """``model``'s class becomes a subclass whose forward runs ``step`` (``execute="plan"``) or,
    for ``step`` None and for the calls ``step`` cannot serve, the original forward with DTensor's
    propagation."""
    import warnings

    from torch.distributed.tensor import DTensor, Replicate, distribute_tensor

    cls = type(model)
    if getattr(cls, "_ctshard_parallel", False):
        cls = cls.__mro__[1]
    inputs = [list(to_placements(s)) if s else None for s in plan.input_placements]
    outputs = [list(to_placements(s)) for s in plan.output_placements]
    warned: list[bool] = [False]

    def place(x, placements):
        if placements is None or not isinstance(x, torch.Tensor):
            return x
        if isinstance(x, DTensor):
            return x.redistribute(mesh, placements) if tuple(x.placements) != tuple(placements) else x
        if x.requires_grad:  # differentiably, so that the gradient reaches x (a leaf or not)
            d = DTensor.from_local(x, mesh, [Replicate()] * mesh.ndim, run_check=False)
            return d.redistribute(mesh, placements) if any(not p.is_replicate() for p in placements) else d
        return distribute_tensor(x, mesh, placements, src_data_rank=None)

    def forward(self, *args, **kwargs):
        if step is not None:
            why = step.mismatch(self, args, kwargs)
            if why is None:
                return step(self, args)
            if not warned[0]:
                warned[0] = True
                warnings.warn(f"ctshard.torch.ParallelPlan.apply: {cls.__name__} called with {why}: the planned graph "
                              "cannot run this call, it runs with DTensor's sharding propagation (execute='propagate'); "
                              "this warning is shown once per model", UserWarning, stacklevel=2)
        args = tuple(place(a, inputs[i] if i < len(inputs) else None) for i, a in enumerate(args))
        with _ReplicatePlain(mesh):
            out = cls.forward(self, *args, **kwargs)
        flat, spec = pytree.tree_flatten(out)
        flat = [place(o, outputs[i]) if i < len(outputs) and isinstance(o, DTensor) else o for i, o in enumerate(flat)]
        return pytree.tree_unflatten(flat, spec)

    model.__class__ = type(f"Parallel{cls.__name__}", (cls,), {"forward": forward, "_ctshard_parallel": True})


def _specs(gm: torch.fx.GraphModule, plan_json: Mapping[str, Any]) -> dict[str, list[str]]:
    from ._run import planned_specs

    merged = dict(plan_json)
    merged["placements"] = {**plan_json.get("placements", {}), **plan_json.get("input_placements", {})}
    return planned_specs(gm, merged)


def _plan_once(make_plan):
    """The plan, the same on every rank: with a process group, rank 0 plans and broadcasts its
    result (a time-limited search may stop at different plans on different ranks)."""
    import torch.distributed as dist

    if _world_size() is None:
        return make_plan()
    box: list[Any] = [None]
    if dist.get_rank() == 0:
        try:
            box[0] = make_plan()
        except ValueError as e:  # raised on every rank
            box[0] = e
    dist.broadcast_object_list(box, src=0)
    if isinstance(box[0], ValueError):
        raise ValueError(str(box[0]))
    return box[0]


def auto_parallel(model: nn.Module, example_inputs: Any, mesh: MeshLike, *, memory_budget_gib: float | None = None,
                  optimizer: str = "adam", place: Mapping[str, PlacementLike] | None = None,
                  time_limit_s: float = 10.0, hand_plans: bool = False) -> ParallelPlan:
    """Plan ``model``'s training step on ``mesh`` with ctshard's whole-graph planner.

    model: an ``nn.Module`` (plain tensors; not yet applied, else ValueError). Its outputs: a
        tensor or a pytree of tensors (no None: TypeError); those that do not require grad are
        returned and not differentiated. example_inputs: its positional inputs (a tensor, or a
        tuple or list of tensors and other values; global shapes); an input that is itself a
        tuple, list or dict raises ValueError (pass its tensors as separate inputs). mesh: a ``DeviceMesh``, or mesh sizes (a
        sequence, mesh dim 0 first; one int; text ``"2x4"``), then a DeviceMesh over the current
        world, whose size must equal their product, else ValueError; without a process group the
        plan is made and ``apply`` builds the mesh.
    memory_budget_gib: per-device bound (GiB, in (0, 2^30]) on parameters + gradients + optimizer
        state + saved activations (the planner's training-step memory, docs/global_plan.md); None:
        no bound.
    optimizer: ``"adam"`` (2 states per parameter), ``"sgd"`` (none) or ``"sgd_momentum"`` (1).
    place: pins, FQN of a parameter or ``"inputs[i]"`` (example input i) -> spec text or DTensor
        placements (``(Shard(0), Replicate())``); another name raises ValueError listing the valid ones.
    time_limit_s: the planner's time limit (s); the best plan so far comes with its gap (a limit
        that ends before the first, greedy, plan is complete, or before it is priced, raises
        RuntimeError).
    hand_plans: also price DDP, FSDP (ZeRO-3) and Megatron TP + FSDP in the same model, each
        with its own time limit (``ParallelPlan.hand_plans``; the request then takes up to four
        limits).

    Raises ValueError for an unknown optimizer, a budget below the least one (naming it), no
    plan within the budget among restricted candidates (a model whose cost graph is too large) or
    within ``time_limit_s`` (the greedy plan, all the time allowed, breaks the budget), a
    mesh whose size differs from the world size, a pin naming no parameter or input, a pin
    making a parameter Partial or sharding a dim its tensor lacks (naming the pin as given), a
    model no parameter of which gets a gradient, container inputs, an applied model, and a model that cannot be
    traced (naming its class); TypeError for a model that is not an
    ``nn.Module`` or a mesh of the wrong type."""
    import sys

    # the package is loaded before any of its modules; taken from sys.modules, not imported back
    # (ctshard/__init__.py loads ctshard.torch, which loads this module: no import cycle)
    ctshard_plan = sys.modules[__package__].plan

    if not isinstance(model, nn.Module):
        raise TypeError(f"ctshard.torch.auto_parallel: model must be a torch.nn.Module, got {type(model).__name__}")
    if optimizer not in _OPTIMIZER_STATES:
        raise ValueError(f"ctshard.torch.auto_parallel: optimizer must be one of {', '.join(map(repr, _OPTIMIZER_STATES))}, "
                         f"got {optimizer!r}")
    if memory_budget_gib is not None and not (isinstance(memory_budget_gib, (int, float)) and not isinstance(memory_budget_gib, bool)
                                              and 0 < memory_budget_gib <= 2**30):
        raise ValueError(f"ctshard.torch.auto_parallel: memory_budget_gib must be a number of GiB in (0, 2^30] (or None), "
                         f"got {memory_budget_gib!r}")
    if not (isinstance(time_limit_s, (int, float)) and not isinstance(time_limit_s, bool) and 0 < time_limit_s <= 1e6):
        raise ValueError(f"ctshard.torch.auto_parallel: time_limit_s must be a positive number of seconds, got {time_limit_s!r}")
    sizes, device_mesh = _mesh_sizes(mesh)
    if isinstance(example_inputs, torch.Tensor):
        example_inputs = (example_inputs,)
    if not isinstance(example_inputs, (tuple, list)):
        raise ValueError("ctshard.torch.auto_parallel: example_inputs must be a tuple or list of positional inputs "
                         f"(or one tensor), got a {type(example_inputs).__name__}")
    example_inputs = tuple(example_inputs)
    for i, x in enumerate(example_inputs):
        if isinstance(x, (tuple, list, Mapping)):
            raise ValueError(f"ctshard.torch.auto_parallel: example input {i} is a {type(x).__name__}; pass tensors "
                             "as separate positional inputs (model(x, y), not model((x, y)))")
    from torch.distributed.tensor import DTensor

    applied = [n for n, t in [*model.named_parameters(), *model.named_buffers()] if isinstance(t, DTensor)]
    if applied:
        raise ValueError(f"ctshard.torch.auto_parallel: {type(model).__name__} is already distributed (applied): "
                         f"{applied[:3]} are DTensors; plan the model with plain tensors (before apply)")
    cap = _capture(model, example_inputs)
    if not cap.grads:  # (the planner's training step is made of the gradients: without one it has no memory model)
        raise ValueError(f"ctshard.torch.auto_parallel: no parameter of {type(model).__name__} gets a gradient from its "
                         "outputs (none requires grad, or no output depends on one differentiably): a training step has "
                         "nothing to place")

    pinned = {ph: "R" * len(sizes) for ph in cap.buffers.values()}
    names = GraphNames([], {**cap.params, **{f"inputs[{i}]": ph for i, ph in enumerate(cap.inputs) if ph}})
    try:
        pinned.update(place_specs(place, "ctshard.torch.auto_parallel", names, ndim=len(sizes)))
    except ValueError as e:  # an unknown name: the same error, saying what the names are
        if "valid names" not in str(e):
            raise
        raise ValueError(f"{e} (trainable parameters of {type(model).__name__} and 'inputs[i]' of its tensor inputs)") from None
    partial = {fqn: pinned[ph] for fqn, ph in cap.params.items()
               if ph in pinned and any(q.is_partial() for q in to_placements(pinned[ph]))}
    if partial:
        raise ValueError(f"ctshard.torch.auto_parallel: a parameter cannot be Partial: place={partial}")
    if not isinstance(hand_plans, bool):
        raise ValueError(f"ctshard.torch.auto_parallel: hand_plans must be True or False, got {hand_plans!r}")
    memory_opts = _plan_memory_options(cap, memory_budget_gib, optimizer)
    if hand_plans:
        memory_opts["hand_plans"] = True
    try:
        result = _plan_once(lambda: ctshard_plan(cap.gm, mesh=sizes, algo="global", free_inputs=True, place=pinned,
                                                 time_limit_ms=float(time_limit_s) * 1000, **memory_opts))
    except ValueError as e:  # a pin the graph refuses (a dim the tensor lacks): named as the caller named it
        text = str(e)
        for name, ph in names.aliases.items():
            if f"--place {ph}:" in text:
                raise ValueError(text.replace(f"ctshard plan: --place {ph}:", f"ctshard.torch.auto_parallel: place[{name!r}]:")) from None
        raise
    if result.get("status") == "infeasible":
        least = result.get("min_memory_gib")
        if isinstance(least, (int, float)):
            raise ValueError(f"ctshard.torch.auto_parallel: memory_budget_gib={memory_budget_gib} is below the least "
                             f"budget of this model on mesh {sizes}: {float(least)!r} GiB")  # every digit: that budget fits
        # no least footprint: no plan meets the placements it must keep (place=, the gradient ties),
        # or the time limit ended the search for it
        raise ValueError(f"ctshard.torch.auto_parallel: no plan meets memory_budget_gib={memory_budget_gib} and the "
                         f"placements it must keep (place={place!r}) on mesh {sizes}, and the least footprint was not "
                         f"found within time_limit_s={time_limit_s}")
    if result.get("status") == "restricted_infeasible":
        full = result["solver"]["restricted_candidates"]
        why = "memory" if full["why"] == "memory" else "time limit"
        raise ValueError(f"ctshard.torch.auto_parallel: the full cost graph ({full['full_mib']:.0f} MiB) did not fit the "
                         f"planner's {why}, and no plan among the restricted candidates meets memory_budget_gib="
                         f"{memory_budget_gib} and the placements it must keep on mesh {sizes} (docs/global_plan.md, "
                         f"'Restricted candidates'); a larger budget or time_limit_s may find one")
    memory = _memory_gib(result)
    if memory_budget_gib is not None and memory["total"] > float(memory_budget_gib) * (1 + 1e-12):
        # the time limit ended before any plan within the budget was found: the plan returned is
        # the greedy one, which does not fit
        raise ValueError(f"ctshard.torch.auto_parallel: no plan within memory_budget_gib={memory_budget_gib} was found "
                         f"within time_limit_s={time_limit_s} on mesh {sizes} (status {result.get('status')!r}; the "
                         f"plan found needs {memory['total']:.6g} GiB per device); a larger time_limit_s may find one")
    step_us = result.get("objective_us")
    if not isinstance(step_us, (int, float)) or math.isnan(step_us):
        # the limit ended inside the cost-graph build: the greedy plan came back without the
        # objective's compute and gradient terms (the cost graph prices them)
        raise RuntimeError(f"ctshard.torch.auto_parallel: the time limit was reached before the plan was priced "
                           f"(time_limit_s={time_limit_s}, status {result.get('status')!r}, the cost graph unfinished); "
                           "a larger time_limit_s prices it")
    specs = _specs(cap.gm, result)
    placements = {fqn: specs[ph][0] for fqn, ph in {**cap.params, **cap.buffers}.items()}
    return ParallelPlan(
        parameter_placements=placements,
        input_placements=[specs[ph][0] if ph else None for ph in cap.inputs],
        output_placements=[specs[o][0] for o in cap.outputs],
        module_output_placements={fqn: specs[n][0] for fqn, n in cap.module_outputs.items() if n in specs},
        step_time_us=float(step_us),
        communication_us=float(result["total_cost_us"]),
        memory_gib=memory,
        proven_optimal=bool(result.get("proven_optimal", False)),
        optimality_gap=float(result.get("optimality_gap", 0.0)),
        mesh=sizes, optimizer=optimizer, plan=result, graph=cap.gm, _capture=cap, _device_mesh=device_mesh,
        hand_plans=_hand_plans(cap, result))


def _hand_plans(cap: _Capture, result: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """The plan's ``hand_plans`` keyed by name, their placements by parameter FQN and
    ``"inputs[i]"`` (buffers and tangents left out: buffers are pinned Replicate, tangents follow
    their outputs)."""
    names = {ph: fqn for fqn, ph in cap.params.items()}
    names.update({ph: f"inputs[{i}]" for i, ph in enumerate(cap.inputs) if ph})
    out: dict[str, dict[str, Any]] = {}
    for hp in result.get("hand_plans", []) or []:
        place = {names[ph]: spec for ph, spec in hp.get("input_placements", {}).items() if ph in names}
        memory = hp.get("memory")
        out[hp["name"]] = {"place": place, "step_time_us": float(hp.get("step_time_us", math.inf)),
                           "communication_us": float(hp.get("redistribution_us", math.inf)),
                           "memory_gib": {k: float(memory[k]) for k in _MEMORY_KEYS} if memory else None,
                           "status": hp.get("status")}
    return out
