"""ctshard: DTensor sharding strategy tables, redistribution costs and placement plans.

Every function returns plain Python dicts and lists with exactly the fields of the command line's
``--json`` output, releases the GIL while the C++ core works, and raises ``ValueError`` with the
library's message on bad input (unknown op, malformed spec, shapes that do not fit the op, ...).

Specs are DTensor's short form, one placement per mesh dim: ``"S(0)R"``, ``"_S(0, 2)P(sum)"``.
Costs are microseconds (DTensor's cost model, ``torch/distributed/tensor/_collective_utils.py``);
infinite costs are the string ``"inf"``. ``ctshard.torch`` converts specs to DTensor placement
objects and back (it imports torch; ``import ctshard`` alone does not).
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import os
import warnings
from collections.abc import Mapping, Sequence
from typing import Any, Callable, TypeVar

from . import _ext
from ._args import MeshLike, PlacementLike, graph_names, mesh_sizes, place_specs, spec_list, spec_text
from ._plot import plot
from ._rules import register_rule, registered_rules, unregister_rule
from ._summary import summary

__all__ = ["table", "choose", "cost", "plan", "GlobalOptions", "FallbackWarning", "UnboundSymbolWarning", "ops", "format_spec",
           "include_dir", "cmake_dir", "register_rule", "unregister_rule", "registered_rules", "check_rule", "summary", "plot", "__version__"]
__version__: str = _ext.__version__  # the CMake project version (CMakeLists.txt), as `ctshard --version`


def table(
    op: str,
    shapes: Sequence[Sequence[int]],
    mesh: MeshLike,
    inputs: Sequence[PlacementLike],
    args: Sequence[Any] | None = None,
    kwargs: Mapping[str, Any] | None = None,
    dtype: str | Sequence[str] = "float32",
    devices_per_host: int = 8,
    einsum_linearity: str = "dtensor",
    cost_model: str = "dtensor",
    algo: str = "enumerate",
    partial_passthrough: str = "ctshard",
    rule_set: str = "ctshard",
) -> dict[str, Any]:
    """One op's strategy table, as ``ctshard table --json``.

    op: ``mm``, ``bmm``, ``addmm``, ``baddbmm``, ``dot``, ``einsum:EQ``, ``pointwise:NAME`` or an op
        overload name that ``ops()`` lists (``aten.view.default``).
    shapes: global shape of each tensor input (``[]`` for a 0-d tensor).
    mesh: the mesh: a ``DeviceMesh`` (its shape), sizes with mesh dim 0 first (``[2, 4]``), one
        size (``8``) or text (``"2x4"``); TypeError / ValueError for anything else.
    inputs: the current placement of each tensor input: spec text (``["S(0)R", "RS(1)"]``) or
        DTensor placements (``[(Shard(0), Replicate()), ...]``).
    args: non-tensor positional arguments after the tensors (``[[24, 8]]`` for a view); a string
        ``"$i"`` anywhere in args/kwargs stands for tensor input i, and then ``args`` is the whole
        argument list (``["$0", 1, "$1"]``, ``[["$0", "$1"], 0]`` for ``cat``).
    kwargs: keyword arguments (``{"keepdim": True}``).
    dtype: one dtype name for every tensor, or one per tensor (``["float32", "int64"]``).
    devices_per_host: cost model: devices per host (DTensor on CPU meshes uses 1).
    einsum_linearity: ``"dtensor"`` (DTensor's rows exactly) or ``"sound"``.
    cost_model: ``"dtensor"`` (DTensor's ``redistribute_cost``, the default) or ``"consistent"``
        (the cheapest sequence of the same collectives: additive, triangle inequality, nothing
        charged on a size-1 mesh dim; see docs/semantics.md).
    algo: ``"enumerate"`` (every surviving row; tables of at most 2^20 candidate rows) or
        ``"search"`` (the same dict with only the chosen row in ``strategies``, found by the
        exact search on any table; ``choice["index"]`` and ``plain_min_index`` still count
        surviving rows).
    partial_passthrough: ``"ctshard"`` (default: a Partial input passes through the ops linear in
        it — clone, casts, the activation backwards' gradient, native_layer_norm_backward) or
        ``"dtensor"`` (those ops take no Partial input and fill their placeholders as DTensor 2.13
        does: for plans that DTensor's own op dispatch executes, e.g.
        ``ctshard.torch.run_plan(..., mode="dtensor")``).
    rule_set: ``"ctshard"`` (default: ctshard's rules — DTensor's semantics with sound extra
        rows, without DTensor's unsound ones) or ``"dtensor"`` (exactly DTensor 2.13's rows for every
        op DTensor has a rule for, its unsound ones included; for the ops DTensor implements as
        op-strategy functions, only the rows that follow the current inputs, as DTensor lists them;
        implies ``einsum_linearity="dtensor"`` and ``partial_passthrough="dtensor"``, whatever those
        say). For plans that DTensor's own op dispatch executes
        (``ctshard.torch.run_plan(..., mode="dtensor")``); docs/conformance.md compares it with
        DTensor 2.13 op by op.

    Returns the dict with ``rules_raw``, ``rules``, ``placeholder_fill`` (``"dtensor"`` for the
    einsum and pointwise ops, ``"shard_from_partial"`` for the others: a Partial input also reaches
    the Shard rows, by reduce-scatter), ``num_combinations``, ``filtered``, ``strategies``
    (``out``, ``in``, ``cost``, ``total``), ``choice`` (``index``, ``rule``) and
    ``plain_min_index``. Raises ValueError on bad input.
    """
    mesh = mesh_sizes(mesh, "ctshard.table")
    inputs = spec_list(inputs, "ctshard.table", "inputs")
    return _ext.table(op, shapes, mesh, inputs, args, kwargs, dtype, devices_per_host, einsum_linearity, cost_model, algo, partial_passthrough, rule_set)


def choose(
    op: str,
    shapes: Sequence[Sequence[int]],
    mesh: MeshLike,
    inputs: Sequence[PlacementLike],
    args: Sequence[Any] | None = None,
    kwargs: Mapping[str, Any] | None = None,
    dtype: str | Sequence[str] = "float32",
    devices_per_host: int = 8,
    einsum_linearity: str = "dtensor",
    cost_model: str = "dtensor",
    algo: str = "search",
    partial_passthrough: str = "ctshard",
    rule_set: str = "ctshard",
) -> dict[str, Any]:
    """Only the strategy DTensor's selection picks, without listing the table (arguments as
    ``table``): ``{"out", "in", "cost", "total", "choice": {"rule", "index"}}`` — the row
    ``table(...)["strategies"][choice["index"]]``, found by an exact search (``algo="search"``,
    any mesh up to 8 dims) or by pricing every row (``algo="enumerate"``). ``choice["index"]``
    is given when the table has at most 2^20 candidate rows (always with ``"enumerate"``).
    ``rule_set`` as for ``table``. Raises ValueError on bad input."""
    mesh = mesh_sizes(mesh, "ctshard.choose")
    inputs = spec_list(inputs, "ctshard.choose", "inputs")
    return _ext.choose(op, shapes, mesh, inputs, args, kwargs, dtype, devices_per_host, einsum_linearity, cost_model, algo, partial_passthrough, rule_set)


def cost(
    shape: Sequence[int],
    mesh: MeshLike,
    src: PlacementLike,
    dst: PlacementLike,
    dtype: str = "float32",
    devices_per_host: int = 8,
    cost_model: str = "dtensor",
) -> dict[str, Any]:
    """Price one redistribution of a tensor of global ``shape`` from spec ``src`` to ``dst``, as
    ``ctshard cost --json``: ``steps`` (``mesh_dim``, ``from``, ``to``, ``collective``, ``bytes``,
    ``cost_us``) and the total ``cost_us`` (µs; DTensor's ``redistribute_cost``, or with
    ``cost_model="consistent"`` the cheapest step sequence). ``src`` and ``dst`` are spec text or
    DTensor placements; ``mesh`` as for ``table``. Raises ValueError (TypeError for an argument of
    the wrong type).
    """
    mesh = mesh_sizes(mesh, "ctshard.cost")
    src, dst = spec_text(src, "ctshard.cost", "src"), spec_text(dst, "ctshard.cost", "dst")
    return _ext.cost(shape, mesh, src, dst, dtype, devices_per_host, cost_model)


@dataclasses.dataclass(frozen=True)
class GlobalOptions:
    """The options of the whole-graph plan (``plan(..., algo="global")``), as one value:
    ``plan(graph, algo="global", global_options=GlobalOptions(time_limit_ms=2000, free_inputs=True))``.
    Each field is the ``plan`` keyword of the same name, with the same default; the numbers are
    checked by ``plan``, by the command line's rules (docs/robustness.md): NaN or negative time
    limits, rates that are not finite and positive, budgets out of range raise ValueError naming
    the option and the value.

    time_limit_ms: bound on the whole call (reading the graph, the greedy plan, the cost graph and
        the search; at most 10^9 ms): the best plan so far is returned with its gap; when it runs
        out while the cost graph is built, the greedy plan comes back with ``status``
        ``"time_limit"`` and ``solver["build_complete"]`` False; when it runs out before the
        greedy plan is complete (a limit of a few ms), there is no plan: RuntimeError.
    free_inputs: unpinned inputs become variables; the objective adds each op's compute time at
        ``device_tflops`` / ``device_gbps``, and ``memory_budget_gib`` bounds the per-device bytes
        of the inputs.
    device_tflops, device_gbps: the device's compute and memory rates for ``free_inputs``.
    memory_budget_gib: per-device bound on the inputs' bytes with ``free_inputs`` (0: none).
    ties: pairs of value names that must share a placement, e.g. a parameter and its gradient.
    every_candidate: offer every candidate row, also those whose input needs a StridedShard or
        Partial that no producer delivers: the "delivered placements" rule of docs/global_plan.md
        off, as ``--every-candidate``; a larger, slower problem with, on the shared graphs, the
        same optimum (``solver["undelivered_rows"]`` counts the rows the rule leaves out).
    max_memory_mib: memory budget of the cost graph and the solver (0: a quarter of the machine's
        memory); a cost graph over three tenths of it (or too slow to build in the time left) is solved
        over restricted candidates (``status`` ``"restricted"``, or ``"restricted_infeasible"`` when
        none meets the budget or the ties; the full problem's bound,
        ``solver["restricted_candidates"]``; docs/global_plan.md); with ``every_candidate``, or
        when even the restriction does not fit, it raises ValueError.
    training: the training-step model with ``free_inputs`` (docs/global_plan.md, "Training
        step"): each gradient reduced to its parameter's placement, ``memory_budget_gib`` bounding
        parameters + gradients + optimizer state + saved activations. None (default): on for an
        AOT joint graph (``primals_*`` then ``tangents_*``) or when ``gradients`` is given; True:
        on (a graph without gradients raises ValueError); False: only with ``gradients``.
    optimizer: ``"adam"`` (2 states per parameter element), ``"sgd_momentum"`` (1) or ``"sgd"``
        (0), at the parameter's dtype; another name raises ValueError naming it.
    gradients: ``{gradient value name: parameter input name}`` (a graph signature's mapping);
        None: the AOT joint format's.
    hand_plans: also price DDP, FSDP and Megatron TP + FSDP (``"hand_plans"`` in the result).
    """

    time_limit_ms: float = 10000
    free_inputs: bool = False
    device_tflops: float = 100
    device_gbps: float = 1000
    memory_budget_gib: float = 0
    ties: Sequence[tuple[str, str]] | None = None
    every_candidate: bool = False
    max_memory_mib: float = 0
    training: bool | None = None
    optimizer: str = "adam"
    gradients: Mapping[str, str] | None = None
    hand_plans: bool = False


class FallbackWarning(UserWarning):
    """``plan`` warns with this when more than 5 % of the graph's op nodes have no sharding rule
    and fall back to Replicate (the command line prints the same text on stderr): usually a
    graph that is not at the aten level (a Dynamo backend's or ``symbolic_trace``'s graph)."""


class UnboundSymbolWarning(UserWarning):
    """``plan`` warns with this, once per call, when the plan has symbolic sizes without a value
    (no ``sym`` entry and no ShapeEnv hint): they are priced at prime hints (8191, ...)."""


def _caller_level() -> int:
    """The ``warnings.warn`` stacklevel of ``plan``'s caller (past ``plan``'s own wrapper)."""
    frame, level = inspect.currentframe(), 1
    while frame is not None and frame.f_globals.get("__name__") == __name__:
        frame, level = frame.f_back, level + 1
    return level - 1


_GLOBAL_FIELDS = tuple(f.name for f in dataclasses.fields(GlobalOptions))

_F = TypeVar("_F", bound=Callable[..., Any])


def _global_option_values(options: Any) -> dict[str, Any]:
    """The fields ``global_options`` gives: all of a GlobalOptions, the keys of a dict."""
    if isinstance(options, GlobalOptions):
        return {name: getattr(options, name) for name in _GLOBAL_FIELDS}
    if isinstance(options, Mapping):
        unknown = sorted((k for k in options if k not in _GLOBAL_FIELDS), key=str)
        if unknown:
            raise ValueError(f"ctshard.plan: global_options has no field {', '.join(map(repr, unknown))} "
                             f"(fields: {', '.join(_GLOBAL_FIELDS)})")
        return dict(options)
    raise TypeError(f"ctshard.plan: global_options must be a ctshard.GlobalOptions or a dict of its fields, "
                    f"got {type(options).__name__}")


def _merges_global_options(fn: _F) -> _F:
    """``plan`` with ``global_options`` turned into the keywords it stands for, after checking
    that none of them is also given as a keyword (or positionally). Calls without it go to
    ``fn`` unchanged."""
    signature = inspect.signature(fn)

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if kwargs.get("global_options") is None:
            return fn(*args, **kwargs)
        try:
            given = signature.bind(*args, **kwargs).arguments  # only the arguments the caller gave
        except TypeError:
            return fn(*args, **kwargs)  # raises the call's own TypeError
        values = _global_option_values(given.pop("global_options"))
        both = [name for name in _GLOBAL_FIELDS if name in values and name in given]
        if both:
            raise ValueError(f"ctshard.plan: {', '.join(both)} given both as an argument and in global_options")
        return fn(**given, **values)

    return wrapper  # type: ignore[return-value]


@_merges_global_options
def plan(
    graph: Any = None,
    mesh: MeshLike = (2, 4),
    place: Mapping[str, PlacementLike] | None = None,
    devices_per_host: int = 8,
    einsum_linearity: str = "sound",
    sym: Mapping[str, int] | None = None,
    cost_model: str = "dtensor",
    algo: str = "search",
    partial_passthrough: str = "ctshard",
    rule_set: str = "ctshard",
    time_limit_ms: float = 10000,
    free_inputs: bool = False,
    device_tflops: float = 100,
    device_gbps: float = 1000,
    memory_budget_gib: float = 0,
    ties: Sequence[tuple[str, str]] | None = None,
    every_candidate: bool = False,
    data_parallel: bool = False,
    batch_size: int | None = None,
    repair_time_limit_ms: float = 10000,
    max_memory_mib: float = 0,
    training: bool | None = None,
    optimizer: str = "adam",
    gradients: Mapping[str, str] | None = None,
    hand_plans: bool = False,
    *,
    global_options: GlobalOptions | Mapping[str, Any] | None = None,
    verbose: bool = False,
    symbol_hints: bool = True,
    example_inputs: Any = None,
    summary: bool = False,
) -> dict[str, Any]:
    """Propagate placements through an aten-level FX graph, as ``ctshard plan --json``.

    graph: FX printout text (``GraphModule.print_readable()`` or an AOT dump), a path to such a
        file, a ``torch.fx.GraphModule`` whose nodes carry shapes in ``meta["val"]`` or
        ``meta["tensor_meta"]`` (``make_fx``, ``aot_function``, ``torch.export`` graphs), a
        ``torch.export.ExportedProgram`` (its ``graph_module``, with FQN names for ``place``), or None
        for the embedded default transformer block (with its default data + tensor parallel
        placements unless ``place`` is given).
    mesh: a ``DeviceMesh`` (its shape), sizes with mesh dim 0 first (``[2, 4]``), one size
        (``8``) or text (``"2x4"``); TypeError / ValueError for anything else.
    place: input -> placement; other inputs start Replicate. Keys: a placeholder name, or for a
        ``torch.export`` ``ExportedProgram`` (planned as its ``graph_module``) also a parameter,
        buffer or constant FQN from its graph signature (``"tok.weight"``). Values: spec text
        (``"S(0)R"``) or DTensor placements (``(Shard(0), Replicate())``, a single placement on a
        1-d mesh). For a GraphModule or program a name that is not an input raises ValueError
        listing the valid names; a value of another type TypeError.
    einsum_linearity: ``"sound"`` (default, as ``plan``) or ``"dtensor"``.
    sym: symbol name -> value for graphs with symbolic shapes (``{"s77": 1024}``, as
        ``--sym s77=1024``). An unbound symbol is never assumed divisible by a mesh dim: it takes
        a prime hint (8191, 8209, ... in order of first appearance; ``docs/semantics.md``) and
        ``plan`` warns (``ctshard.UnboundSymbolWarning``, once per call, naming the symbols). A
        GraphModule traced with dynamic shapes (``make_fx(f, tracing_mode="symbolic")``,
        ``torch.export`` with ``Dim``) keeps its sizes symbolic (``str(SymInt)``), exactly like
        its printout.
    example_inputs: for a GraphModule above the aten level (a Dynamo backend's graph,
        ``torch.fx.symbolic_trace``: ``call_module`` / ``call_method`` nodes, ``torch.relu``), its
        inputs: the graph is exported and decomposed here
        (``torch.export.export(graph, example_inputs).run_decompositions()``, ``place`` then takes
        the program's names). Without them such a graph raises ValueError saying how to capture
        it. An ``ExportedProgram`` with ops outside the core ATen IR (``linear``, ``layer_norm``)
        is decomposed (``run_decompositions()``) before planning.
    symbol_hints: for a GraphModule or ExportedProgram, bind each symbol ``sym`` does not name to
        its ShapeEnv hint (the size of the example input it was traced from; listed in
        ``symbols`` as bound). False: such symbols stay unbound, as in the printout.
    summary: also return the per-layer and per-parameter figures as ``"summary"`` (the command
        line's ``plan --summary --json``), which ``ctshard.summary`` renders and ``ctshard.plot``
        draws: per layer its communication, compute and memory per device and its parameters'
        placements; per graph input its layer, placement and bytes per device.
    algo: ``"search"`` (default; also ``"greedy"``) or ``"enumerate"``: node by node, as DTensor at
        run time, each node's choice by exact search (any mesh up to 8 dims) or by pricing every row
        (an op whose table exceeds 2^20 rows falls back); or ``"global"`` (every
        node's strategy chosen jointly: the exact optimum of the whole graph with its proof, as
        ``ctshard plan --global --json``; see docs/global_plan.md).
    time_limit_ms, free_inputs, device_tflops, device_gbps, memory_budget_gib, ties,
    every_candidate, max_memory_mib, training, optimizer, gradients, hand_plans: the options of ``algo="global"`` only (ignored by the other
        algos), documented as the fields of ``GlobalOptions``; give them here or together as
        ``global_options``.
    verbose: ``algo="global"`` only: progress lines on the process's stderr while the solve runs
        over 1 s (elapsed time, lower bound, incumbent, gap; as ``ctshard plan --global`` without
        ``--quiet``). Off by default.
    global_options: the global plan's options as one ``GlobalOptions`` (every field, defaults
        included, counts as given: none of the twelve keywords above may be given with it) or a
        dict of some of its fields (the others come from the keywords). A field given both ways
        raises ValueError naming it, a dict key that is not a field ValueError, anything else
        TypeError; these checks hold for every ``algo``, but the values, as the keywords', are
        used by ``algo="global"`` only.
    data_parallel: data-parallel inputs, as ``--data-parallel``: every tensor input whose dim 0 is
        the batch size starts ``S(0)`` on mesh dim 0 (Replicate on the others; ``place`` wins for
        the inputs it names). The batch size is ``batch_size``, or inferred: the most common dim 0
        of the graph's tensors of rank >= 3 (docs/semantics.md, "Data-parallel inputs"); the
        result's ``data_parallel`` says which and lists the inputs.
    repair_time_limit_ms: budget of the exact checks that repair a dead end of the greedy plan
        (a node with no finite row; docs/semantics.md, "Dead ends"). A repaired node has
        ``repaired: True`` and a ``repair`` text; when no finite plan exists, ValueError names the
        node and why.
    partial_passthrough: ``"ctshard"`` (default: a Partial input passes through the ops linear in
        it — clone, casts, the activation backwards' gradient, native_layer_norm_backward) or
        ``"dtensor"`` (those ops take no Partial input, as in DTensor 2.13: for plans that
        DTensor's own op dispatch executes, e.g. ``ctshard.torch.run_plan(..., mode="dtensor")``).
    rule_set: ``"ctshard"`` (default: ctshard's rules — DTensor's semantics with sound extra
        rows, without DTensor's unsound ones) or ``"dtensor"`` (exactly DTensor 2.13's rows for every
        op DTensor has a rule for, its unsound ones included; for the ops DTensor implements as
        op-strategy functions, only the rows that follow the current inputs, as DTensor lists them;
        implies ``einsum_linearity="dtensor"`` and ``partial_passthrough="dtensor"``, whatever those
        say). For plans that DTensor's own op dispatch executes
        (``ctshard.torch.run_plan(..., mode="dtensor")``); docs/conformance.md compares it with
        DTensor 2.13 op by op.

    Returns the dict with ``nodes`` (``name``, ``op``, ``inputs``, ``outputs``, ``cost_us``,
    ``fallback``; ``repaired`` and ``repair`` on repaired nodes), ``total_cost_us``, ``nodes_with_rule``, ``nodes_fallback``,
    ``fallback_ops``, ``nodes_repaired``, ``mesh``, ``placements`` and ``symbols`` (``name``,
    ``value``, ``bound``), with ``data_parallel`` also ``data_parallel`` (``batch_size``,
    ``batch_size_text``, ``inferred``, ``inputs``, ``note``); with
    ``algo="global"`` also ``lower_bound_us``, ``optimality_gap`` (0 = proven optimal),
    ``proven_optimal``, ``greedy_total_cost_us``, ``nodes_changed``, ``changes`` (per changed
    node: the greedy and the global strategy), a ``changed`` flag per node, ``input_placements``
    and ``solver`` statistics; with a training step ``training``, ``optimizer``, ``gradients``,
    ``gradient_reduction_us``, ``step_time_us``, ``memory`` and ``greedy_memory`` (GiB per device:
    ``parameters``, ``gradients``, ``optimizer``, ``activations``, ``total``), with
    ``hand_plans=True`` ``hand_plans`` (``name``, ``step_time_us``, ``memory``, ...), and for an
    impossible ``memory_budget_gib`` ``status`` ``"infeasible"`` with ``min_memory_gib``. Raises ValueError for unreadable graphs, bad placements, an
    unknown ``algo``, or a ``sym`` name that is not a symbol of the graph or whose value is not
    a positive integer, for an unknown ``rule_set``, and when the graph has no finite plan
    (docs/semantics.md, "Dead ends"). With ``rule_set="dtensor"`` and
    ``algo="global"``, the ops whose DTensor rows follow the current input offer the rows DTensor
    runs unchanged for any input (moved there first, DTensor's dispatch adds no collective).
    Warns ``ctshard.FallbackWarning`` (the command line's stderr warning) when more than 5 % of
    the op nodes have no rule and fall back, naming the ops.
    """
    if algo not in ("search", "enumerate", "greedy", "global"):
        raise ValueError(f"ctshard.plan: algo must be 'search', 'enumerate', 'greedy' or 'global', got {algo!r}")
    if rule_set not in ("ctshard", "dtensor"):
        raise ValueError(f"ctshard.plan: rule_set must be 'ctshard' or 'dtensor', got {rule_set!r}")
    # global_options never reaches here: @_merges_global_options passed its fields as the keywords
    greedy_algo = "enumerate" if algo == "enumerate" else "search"
    glob = None
    if algo == "global":
        # numbers as given: the extension checks them by the command line's rules
        glob = {
            "time_limit_ms": time_limit_ms,
            "free_inputs": bool(free_inputs),
            "every_candidate": bool(every_candidate),
            "device_tflops": device_tflops,
            "device_gbps": device_gbps,
            "memory_budget_gib": memory_budget_gib,
            "max_memory_mib": max_memory_mib,
            "ties": list(ties or []),
            "verbose": bool(verbose),
            "training": None if training is None else bool(training),
            "optimizer": optimizer,
            "gradients": dict(gradients or {}),
            "hand_plans": bool(hand_plans),
        }
    if batch_size is not None and not data_parallel:
        raise ValueError("ctshard.plan: batch_size needs data_parallel=True")
    extra = {"data_parallel": bool(data_parallel), "batch_size": batch_size, "repair_time_limit_ms": float(repair_time_limit_ms)}
    if summary:  # the per-layer figures, as ``ctshard plan --summary --json``
        extra["summary"] = True
    mesh = mesh_sizes(mesh, "ctshard.plan")
    names = None
    if hasattr(graph, "graph") and hasattr(graph.graph, "nodes") and not hasattr(graph, "graph_signature"):
        from ._graph import to_aten, torch_level_nodes

        above = torch_level_nodes(graph)
        if above and example_inputs is None:
            raise ValueError(
                f"ctshard.plan: the {type(graph).__name__} is not an aten-level graph ({', '.join(above[:6])}"
                f"{', ...' if len(above) > 6 else ''}: a Dynamo backend's or symbolic_trace's graph), and ctshard's rules are "
                "for ATen ops; pass example_inputs=(...) to export and decompose it here, or capture it with make_fx, "
                "AOT autograd or torch.export.export(...).run_decompositions()")
        if above:
            graph = to_aten(graph, example_inputs)
    if hasattr(graph, "graph_signature") and hasattr(graph, "graph_module"):  # a torch.export ExportedProgram
        from ._graph import needs_decomposition

        if needs_decomposition(graph.graph_module):  # linear, layer_norm, ...: to the core ATen IR the rules cover
            graph = graph.run_decompositions()
        names = graph_names(graph.graph_module, graph.graph_signature)
        graph = graph.graph_module
    elif hasattr(graph, "graph") and hasattr(graph.graph, "nodes"):
        names = graph_names(graph)
    place = place_specs(place, "ctshard.plan", names, ndim=len(mesh))
    if sym is not None and not isinstance(sym, Mapping):
        raise ValueError(f"ctshard.plan: sym must map symbol names to integers, got {sym!r}")
    sym = dict(sym) if sym is not None else {}
    common = (mesh, place, devices_per_host, einsum_linearity, sym, cost_model, glob, greedy_algo, partial_passthrough, rule_set, extra)
    if graph is None:
        result = _ext.plan_default(*common)
    elif isinstance(graph, os.PathLike):
        result = _ext.plan_file(os.fspath(graph), *common)
    elif isinstance(graph, str):
        if "def forward" in graph:
            result = _ext.plan_text(graph, "<text>", *common)
        elif "\n" not in graph and os.path.exists(graph):
            result = _ext.plan_file(graph, *common)
        else:
            raise ValueError(
                "ctshard.plan: graph is neither FX graph text (no 'def forward') nor an existing file: "
                + repr(graph[:200])
            )
    elif hasattr(graph, "graph") and hasattr(graph.graph, "nodes"):
        from ._graph import node_records
        from ._graph import symbol_hints as hints_of

        records = node_records(graph)
        if summary:  # layers by module where the graph records them (torch.export, Dynamo)
            from ._summary import node_modules

            modules = node_modules(graph)
            if modules:
                extra["layers"] = modules
        if symbol_hints:  # the example inputs' sizes, for the symbols ``sym`` leaves unbound
            sym.update({k: v for k, v in hints_of(graph, records).items() if k not in sym})
        result = _ext.plan_records(records, type(graph).__name__, *common)
    else:
        raise ValueError(
            "ctshard.plan: graph must be FX graph text, a path, a torch.fx.GraphModule, a torch.export.ExportedProgram "
            "or None, got " + type(graph).__name__
        )
    # the command line's warning, as a Python warning: over 5 % of the op nodes without a rule
    fallback = _ext.fallback_warning(result["nodes_with_rule"], result["nodes_fallback"], result["fallback_ops"])
    if fallback:
        warnings.warn(f"ctshard.plan: {fallback}", FallbackWarning, stacklevel=_caller_level())
    unbound = [s for s in result.get("symbols", ()) if not s["bound"]]
    if unbound:
        first = unbound[0]["name"]
        warnings.warn(
            f"ctshard.plan: unbound symbolic size{'s' if len(unbound) > 1 else ''} "
            + ", ".join(f"{s['name']} (priced as {s['value']})" for s in unbound)
            + ": a prime hint, never divisible by a mesh dim, so the plan's sizes and costs are not the real ones; "
            f"bind with sym={{{first!r}: N}} (command line: --sym {first}=N), or plan the GraphModule traced from "
            "example inputs (its ShapeEnv hints bind them)",
            UnboundSymbolWarning, stacklevel=_caller_level())
    return result


def ops() -> dict[str, Any]:
    """The op overloads that have a sharding rule, as ``ctshard ops --json``: ``{"ops": [...],
    "count": n}``."""
    return _ext.ops()


def format_spec(spec: str) -> str:
    """A spec in canonical short form (``"S(0) R"`` -> ``"S(0)R"``). Raises ValueError."""
    return _ext.format_spec(spec)


def include_dir() -> str:
    """The directory of the C++ headers installed with the package (``<site-packages>/ctshard/include``,
    holding ``ctshard/ctshard.hpp``): ``-I$(python -c 'import ctshard; print(ctshard.include_dir())')``.
    Raises FileNotFoundError when the package was not installed with them (a source tree)."""
    return _package_path("include", "C++ headers")


def cmake_dir() -> str:
    """The directory of the CMake package installed with the package (``ctshardConfig.cmake``,
    targets ``ctshard::ctshard`` and ``ctshard::registry``):
    ``cmake -Dctshard_DIR=$(python -c 'import ctshard; print(ctshard.cmake_dir())')``, then
    ``find_package(ctshard)``. Raises FileNotFoundError when the package was not installed with it."""
    return _package_path(os.path.join("share", "cmake", "ctshard"), "CMake package")


def _package_path(relative: str, what: str) -> str:
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), relative)
    if not os.path.isdir(path):
        raise FileNotFoundError(f"ctshard: no {what} in this installation ({path}); `pip install` the package to get them")
    return path


def __getattr__(name: str) -> Any:
    # `ctshard.torch` and `check_rule` import torch, so they load on first use only.
    if name == "check_rule":
        from ._check import check_rule

        return check_rule
    if name == "torch":
        import importlib

        return importlib.import_module(".torch", __name__)
    raise AttributeError(f"module 'ctshard' has no attribute {name!r}")
