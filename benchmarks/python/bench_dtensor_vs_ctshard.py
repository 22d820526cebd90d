#!/usr/bin/env python3
"""DTensor 2.13 vs ctshard: sharding-choice latency side by side, in one process run.

For every case (op, shapes, mesh, input placements) the same question is answered by

1. DTensor: ``DTensor._op_dispatcher.sharding_propagator.propagate_op_sharding_non_cached(schema)``
   in this process, on a fake process group (world size = mesh size, re-initialised per mesh),
   with every cache that could make a repeated call cheaper cleared before each timed call
   (see ``clear_dtensor_caches``);
2. ctshard from Python: ``ctshard.choose(...)`` (the chosen row only) and ``ctshard.table(...)``
   (the whole table as dicts);
3. ctshard's C++ API timed inside C++: ``ctshard._ext._bench_choose(...)`` (``cold_ns``: rule
   built + new StrategyEnumerator + choose(); ``warm_ns``: kept enumerator, alternating inputs;
   ``repeat_ns``: identical query).

and the choices (output and input placements) of DTensor and ctshard are compared. Whole graphs
(FX printouts) are propagated node by node through DTensor and planned by ``ctshard.plan``.

    python3 benchmarks/python/bench_dtensor_vs_ctshard.py                 # full run (~15 min)
    python3 benchmarks/python/bench_dtensor_vs_ctshard.py --quick         # smoke run (~20 s)
    python3 benchmarks/python/bench_dtensor_vs_ctshard.py --markdown docs/benchmarks.md

``--markdown FILE`` writes (or replaces) the section ``SECTION_TITLE`` in FILE and keeps the
file's other sections.
"""

from __future__ import annotations

import argparse
import ast
import datetime
import gc
import math
import os
import platform
import re
import statistics
import sys
import time
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.distributed as dist
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.distributed.device_mesh import DeviceMesh
from torch.distributed.tensor import DTensor, Replicate
from torch.distributed.tensor import _collective_utils as dt_collective_utils
from torch.distributed.tensor import _redistribute as dt_redistribute
from torch.distributed.tensor._dtensor_spec import DTensorSpec, TensorMeta
from torch.distributed.tensor._op_schema import OpSchema
from torch.testing._internal.distributed.fake_pg import FakeStore

import ctshard
import ctshard.torch as ct_torch

SECTION_TITLE = "## DTensor 2.13 vs ctshard, side by side (one run)"
BUILD = ""
TARGET_CPP = 1000.0
TARGET_PY = 100.0
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GRAPHS = os.environ.get("CTSHARD_GRAPHS", os.path.join(os.path.dirname(REPO), "shared", "graphs"))

aten = torch.ops.aten
PROPAGATOR = DTensor._op_dispatcher.sharding_propagator


# ---- DTensor side ---------------------------------------------------------------------------

# What is cleared before every timed DTensor call, with the reason. Found by reading
# torch/distributed/tensor/{_sharding_prop,_collective_utils,_redistribute}.py and
# _ops/single_dim_strategy.py of torch 2.13.0.
CLEARED_CACHES = [
    ("ShardingPropagator.propagate_op_sharding (LocalLRUCache around the non-cached call)",
     "not used by propagate_op_sharding_non_cached; cleared anyway"),
    ("ShardingPropagator._propagate_tensor_meta_cached (lru_cache)",
     "not used by the non-cached call (it calls _propagate_tensor_meta_non_cached); cleared anyway"),
    ("torch._C._clear_DTensor_sharding_propagator_cache() (C++ dispatch fast-path cache)",
     "not used by the non-cached call; cleared anyway"),
    ("MeshTopoInfo.build_from_mesh (lru_cache, mesh bandwidth/latency table used by redistribute_cost)",
     "used: built once per mesh otherwise"),
    ("_redistribute._gen_transform_infos (functools.cache of redistribution plans per (src, dst) spec)",
     "used: redistribute_cost reads it for every candidate row"),
    ("_redistribute._planner_cache (DTensorRedistributePlanner per (mesh, tensor meta))",
     "used by _gen_transform_infos_non_cached"),
    ("FakeTensorMode.cache (class-level fake-tensor dispatch cache)",
     "used: output tensor meta is computed by running the op under a new FakeTensorMode"),
]
NOT_CLEARED_NOTE = (
    "The single-dim expansion's `functools.lru_cache` (`_cached_create_expanded_strategy` in "
    "`_expand_single_dim_strategy_to_mesh`) is created inside each call, so it never outlives one "
    "propagation and needs no clearing; `OpSchema`/`DTensorSpec` cache hashes and properties per "
    "object, and every timed call gets freshly built `DTensorSpec`s and `OpSchema`."
)


def clear_dtensor_caches() -> None:
    PROPAGATOR.propagate_op_sharding.cache_clear()
    PROPAGATOR._propagate_tensor_meta_cached.cache_clear()
    torch._C._clear_DTensor_sharding_propagator_cache()
    dt_collective_utils.MeshTopoInfo.build_from_mesh.cache_clear()
    dt_redistribute._gen_transform_infos.cache_clear()
    dt_redistribute._planner_cache.clear()
    FakeTensorMode.cache_clear()


_current_world: int | None = None


def make_mesh(sizes: tuple[int, ...]) -> DeviceMesh:
    """A CPU DeviceMesh of `sizes` on a fake process group of world size prod(sizes); the group is
    destroyed and re-initialised when the world size changes (meshes of an older world become
    unusable)."""
    global _current_world
    n = math.prod(sizes)
    if _current_world != n:
        if dist.is_initialized():
            dist.destroy_process_group()
        dist.init_process_group("fake", rank=0, world_size=n, store=FakeStore())
        _current_world = n
    return DeviceMesh("cpu", torch.arange(n).reshape(sizes))


DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16, "int64": torch.int64,
          "int32": torch.int32, "bool": torch.bool}


def contiguous_meta(shape: list[int], dtype: torch.dtype) -> TensorMeta:
    stride, acc = [], 1
    for s in reversed(shape):
        stride.append(acc)
        acc *= max(s, 1)
    return TensorMeta(torch.Size(shape), tuple(reversed(stride)), dtype)


def dspec(mesh: DeviceMesh, spec: str, meta: TensorMeta) -> DTensorSpec:
    return DTensorSpec(mesh, ct_torch.to_placements(spec), meta)


def spec_text(s: Any) -> str:
    return "None" if s is None else ct_torch.to_spec(s.placements)


def dtensor_choice(op_schema: OpSchema, out) -> tuple[list[str], list[str], bool]:
    """(output specs, input specs DTensor runs the op on, needs redistribution) of an OutputSharding."""
    outs = out.output_spec
    outs = [spec_text(s) for s in outs] if isinstance(outs, (tuple, list)) else [spec_text(outs)]
    src = out.redistribute_schema if out.redistribute_schema is not None else op_schema
    ins = [spec_text(s) for s in src.args_spec]
    return outs, ins, out.redistribute_schema is not None


# ---- timing helpers -------------------------------------------------------------------------


def median_ns(fn, repeats: int, warmup: int) -> float:
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter_ns()
        fn()
        times.append(time.perf_counter_ns() - t0)
    return statistics.median(times)


def fmt_us(ns: float) -> str:
    us = ns / 1e3
    if us >= 100:
        return f"{us:,.0f}"
    if us >= 10:
        return f"{us:.1f}"
    return f"{us:.2f}"


def fmt_ratio(r: float) -> str:
    if r >= 100:
        return f"{r:,.0f}×"
    if r >= 10:
        return f"{r:.1f}×"
    return f"{r:.2f}×"


# ---- single-op cases ------------------------------------------------------------------------


@dataclass
class Case:
    name: str  # short label
    dt_op: Any  # aten OpOverload for DTensor
    ct_op: str  # ctshard op name
    shapes: list[list[int]]
    mesh: tuple[int, ...]
    inputs: list[str]
    kind: str  # "match" (inputs fit a rule) or "redistribute"
    result: dict = field(default_factory=dict)


def mesh_text(mesh: tuple[int, ...]) -> str:
    return "x".join(map(str, mesh))


def build_cases(meshes: list[tuple[int, ...]]) -> list[Case]:
    cases = []
    mm_shapes = [[1024, 512], [512, 2048]]
    add_shapes = [[8, 16, 32, 64], [8, 16, 32, 64]]
    bcast_shapes = [[8, 16, 32, 64], [16, 1, 64]]
    for mesh in meshes:
        n = len(mesh)

        def spec(first: str, rest: str, last: str | None = None) -> str:
            # `first` on mesh dim 0, `last` on the last mesh dim (if n > 1), `rest` elsewhere
            parts = [first] + [rest] * (n - 1)
            if last is not None and n > 1:
                parts[-1] = last
            return "".join(parts)

        # mm: data parallel on mesh dim 0 (A S(0)), tensor parallel on the last dim (B S(1)):
        # DTensor's rule S(0),R -> S(0) on dim 0 and R,S(1) -> S(1) on the last one; no redistribution.
        cases.append(Case("mm 1024x512 @ 512x2048", aten.mm.default, "mm", mm_shapes, mesh,
                          [spec("S(0)", "R"), spec("R", "R", "S(1)")], "match"))
        # mm: A S(0) on every mesh dim, B P(sum) on every mesh dim: no rule fits, rows are priced.
        cases.append(Case("mm 1024x512 @ 512x2048", aten.mm.default, "mm", mm_shapes, mesh,
                          ["S(0)" * n, "P(sum)" * n], "redistribute"))
        # add, same shapes, both S(0) on mesh dim 0 and S(1) on the last: fits the pointwise rule.
        cases.append(Case("add [8,16,32,64] + [8,16,32,64]", aten.add.Tensor, "aten.add.Tensor", add_shapes, mesh,
                          [spec("S(0)", "R", "S(1)")] * 2, "match"))
        # add: P(sum) vs S(1) on every mesh dim: needs redistribution.
        cases.append(Case("add [8,16,32,64] + [8,16,32,64]", aten.add.Tensor, "aten.add.Tensor", add_shapes, mesh,
                          ["P(sum)" * n, "S(1)" * n], "redistribute"))
        # broadcasting add: [8,16,32,64] + [16,1,64]; S(3) of A is S(2) of B (the last dim).
        cases.append(Case("add [8,16,32,64] + [16,1,64] (broadcast)", aten.add.Tensor, "aten.add.Tensor", bcast_shapes, mesh,
                          [spec("S(0)", "R", "S(3)"), spec("R", "R", "S(2)")], "match"))
        # broadcasting add: A S(2) everywhere, B S(0) everywhere (B's dim 0 is A's dim 1): redistribution.
        cases.append(Case("add [8,16,32,64] + [16,1,64] (broadcast)", aten.add.Tensor, "aten.add.Tensor", bcast_shapes, mesh,
                          ["S(2)" * n, "S(0)" * n], "redistribute"))
    return cases


def run_case(case: Case, mesh: DeviceMesh, cfg: argparse.Namespace) -> None:
    metas = [contiguous_meta(s, torch.float32) for s in case.shapes]

    def fresh_schema() -> OpSchema:
        return OpSchema(case.dt_op, tuple(dspec(mesh, sp, m) for sp, m in zip(case.inputs, metas)), {})

    # --- DTensor: fresh schema + cleared caches before each timed call
    def one_dtensor_call():
        schema = fresh_schema()
        clear_dtensor_caches()
        t0 = time.perf_counter_ns()
        out = PROPAGATOR.propagate_op_sharding_non_cached(schema)
        return time.perf_counter_ns() - t0, schema, out

    for _ in range(cfg.dt_warmup):
        one_dtensor_call()
    dt_times = []
    for _ in range(cfg.dt_repeats):
        ns, schema, out = one_dtensor_call()
        dt_times.append(ns)
    dt_out, dt_in, dt_redist = dtensor_choice(schema, out)

    # the part of it that is fake-tensor output-meta propagation
    meta_times = []
    for _ in range(cfg.dt_repeats):
        schema = fresh_schema()
        clear_dtensor_caches()
        t0 = time.perf_counter_ns()
        PROPAGATOR._propagate_tensor_meta_non_cached(schema)
        meta_times.append(time.perf_counter_ns() - t0)

    # --- ctshard from Python
    args = (case.ct_op, case.shapes, list(case.mesh), case.inputs)
    kw = dict(dtype="float32", devices_per_host=1)
    choice = ctshard.choose(*args, **kw)
    est = median_ns(lambda: ctshard.choose(*args, **kw), 5, 2)
    n_py = int(max(cfg.py_min, min(cfg.py_max, cfg.py_budget_ns / max(est, 1.0))))
    py_choose = median_ns(lambda: ctshard.choose(*args, **kw), n_py, max(3, n_py // 10))
    table = ctshard.table(*args, **kw)
    est = median_ns(lambda: ctshard.table(*args, **kw), 3, 1)
    n_tab = int(max(cfg.py_min_table, min(cfg.py_max, cfg.py_budget_ns / max(est, 1.0))))
    py_table = median_ns(lambda: ctshard.table(*args, **kw), n_tab, max(2, n_tab // 10))

    # --- ctshard C++ (timed inside C++): calibrate the inner repeat to ~cpp_budget per call
    def bench(rep: int) -> dict:
        return ctshard._ext._bench_choose(case.ct_op, case.shapes, list(case.mesh), case.inputs, None, None,
                                          "float32", 1, "dtensor", rep)

    est = bench(4)["cold_ns"]
    rep = int(max(2, min(100000, cfg.cpp_budget_ns / max(est, 1.0))))
    # Even: _bench_choose's warm loop alternates two inputs and its repeat loop asks the second
    # one; with an odd count the warm loop ends on the first, so the first "repeat" call reprices
    # and inflates repeat_ns by cold/rep.
    rep += rep % 2
    runs = [bench(rep) for _ in range(cfg.cpp_calls)]
    cpp = {k: statistics.median(r[k] for r in runs) for k in ("cold_ns", "warm_ns", "repeat_ns")}

    ct_out = [ctshard.format_spec(choice["out"])]
    ct_in = [ctshard.format_spec(s) for s in choice["in"]]
    trow = table["strategies"][table["choice"]["index"]]
    table_agrees = trow["out"] == choice["out"] and trow["in"] == choice["in"]
    agree = ct_out == dt_out and ct_in == dt_in
    case.result = dict(
        dt_ns=statistics.median(dt_times), dt_meta_ns=statistics.median(meta_times), dt_runs=len(dt_times),
        py_choose_ns=py_choose, py_table_ns=py_table, py_runs=n_py, table_runs=n_tab,
        cpp_cold_ns=cpp["cold_ns"], cpp_warm_ns=cpp["warm_ns"], cpp_repeat_ns=cpp["repeat_ns"], cpp_inner=rep,
        cpp_calls=cfg.cpp_calls, rows=len(table["strategies"]), num_combinations=table.get("num_combinations"),
        dt_out=dt_out, dt_in=dt_in, dt_redistributes=dt_redist, ct_out=ct_out, ct_in=ct_in,
        ct_rule=choice["choice"]["rule"], agree=agree, table_agrees=table_agrees,
    )
    r = case.result
    print(f"  {case.name:42s} {mesh_text(case.mesh):8s} {' / '.join(case.inputs):28s} DTensor {fmt_us(r['dt_ns']):>10s} µs"
          f"  C++ cold {fmt_us(r['cpp_cold_ns']):>7s} µs  py choose {fmt_us(r['py_choose_ns']):>7s} µs"
          f"  table {fmt_us(r['py_table_ns']):>7s} µs  agree={agree}", flush=True)
    if not agree:
        print(f"    DISAGREE: DTensor out {dt_out} in {dt_in}; ctshard out {ct_out} in {ct_in}", flush=True)


# ---- FX graph reader (print_readable / AOT dump format) -------------------------------------

FX_DTYPES = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16, "f64": torch.float64,
             "i64": torch.int64, "i32": torch.int32, "i16": torch.int16, "i8": torch.int8, "u8": torch.uint8,
             "b8": torch.bool}
_TYPE_RE = re.compile(r'^(\w+)\[(.*)\]$')
_LINE_RE = re.compile(r'^\s*(\w+)(?:\s*:\s*"([^"]*)")?\s*=\s*(.*)$')


def parse_type(text: str) -> tuple[torch.dtype, list[int]] | None:
    m = _TYPE_RE.match(text.strip()) if text else None
    if not m or m.group(1) not in FX_DTYPES:
        return None
    dims = [int(x) for x in m.group(2).split(",") if x.strip()]
    return FX_DTYPES[m.group(1)], dims


@dataclass
class FxNode:
    name: str
    kind: str  # "placeholder", "call", "getitem"
    type: tuple[torch.dtype, list[int]] | None
    op: Any = None
    op_name: str = ""
    call: ast.Call | None = None
    src: str = ""
    index: int = 0


def _strip_trailer(rhs: str) -> str:
    # `expr;  a = b = None` -> `expr`
    depth, quote = 0, None
    for i, c in enumerate(rhs):
        if quote:
            if c == quote:
                quote = None
        elif c in "'\"":
            quote = c
        elif c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif c == ";" and depth == 0:
            return rhs[:i]
    return rhs


def _dotted(node: ast.AST) -> str | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def read_fx(path: str) -> list[FxNode]:
    text = open(path, encoding="utf-8").read()
    nodes: list[FxNode] = []
    sig = re.search(r"def forward\(self,?(.*?)\):", text, re.S)
    if sig:
        for m in re.finditer(r'(\w+)\s*:\s*"([^"]*)"', sig.group(1)):
            nodes.append(FxNode(m.group(1), "placeholder", parse_type(m.group(2))))
    body = text[sig.end():] if sig else text
    for line in body.splitlines():
        s = line.strip()
        if not s or s.startswith("#") or s.startswith("return"):
            continue
        m = _LINE_RE.match(line)
        if not m:
            continue
        name, typ, rhs = m.group(1), m.group(2), _strip_trailer(m.group(3)).strip()
        expr = ast.parse(rhs, mode="eval").body
        if isinstance(expr, ast.Subscript) and isinstance(expr.value, ast.Name):
            idx = expr.slice
            nodes.append(FxNode(name, "getitem", parse_type(typ), src=expr.value.id,
                                index=ast.literal_eval(idx)))
            continue
        if isinstance(expr, ast.Call):
            target = _dotted(expr.func)
            if target == "operator.getitem":
                nodes.append(FxNode(name, "getitem", parse_type(typ), src=expr.args[0].id,
                                    index=ast.literal_eval(expr.args[1])))
                continue
            if target and target.startswith("torch.ops."):
                op = torch
                for part in target.split(".")[1:]:
                    op = getattr(op, part)
                nodes.append(FxNode(name, "call", parse_type(typ), op=op, op_name=target[len("torch.ops."):], call=expr))
                continue
        raise ValueError(f"{path}: cannot read line {line.strip()[:120]!r}")
    return nodes


_CONSTS = {"inf": math.inf, "nan": math.nan}


def fx_value(node: ast.AST, env: dict[str, Any]) -> Any:
    """An FX argument as a Python value; node names become their current DTensorSpec(s)."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        if node.id in env:
            return env[node.id]
        if node.id in _CONSTS:
            return _CONSTS[node.id]
        raise KeyError(f"unknown name {node.id}")
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -fx_value(node.operand, env)
    if isinstance(node, ast.List):
        return [fx_value(x, env) for x in node.elts]
    if isinstance(node, ast.Tuple):
        return tuple(fx_value(x, env) for x in node.elts)
    if isinstance(node, ast.Attribute):
        dotted = _dotted(node)
        if dotted and dotted.startswith("torch."):
            v = torch
            for part in dotted.split(".")[1:]:
                v = getattr(v, part)
            return v
    if isinstance(node, ast.Call) and _dotted(node.func) == "device":
        return torch.device("cpu")  # the graphs were traced on cuda; DTensor meshes here are CPU
    raise ValueError(f"unsupported FX argument {ast.dump(node)[:120]}")


def _has_spec(v: Any) -> bool:
    if isinstance(v, DTensorSpec):
        return True
    if isinstance(v, (list, tuple)):
        return any(_has_spec(x) for x in v)
    return False


def _output_metas(node: FxNode, getitems: dict[str, dict[int, FxNode]]) -> TensorMeta | list[TensorMeta | None] | None:
    if node.type is not None:
        return contiguous_meta(node.type[1], node.type[0])
    children = getitems.get(node.name)
    if children:
        n = max(children) + 1
        return [contiguous_meta(children[i].type[1], children[i].type[0]) if i in children and children[i].type else None
                for i in range(n)]
    return None


def _replicate(mesh: DeviceMesh, meta) -> Any:
    if meta is None:
        return None
    if isinstance(meta, list):
        return tuple(None if m is None else DTensorSpec(mesh, (Replicate(),) * mesh.ndim, m) for m in meta)
    return DTensorSpec(mesh, (Replicate(),) * mesh.ndim, meta)


def dtensor_graph(nodes: list[FxNode], mesh: DeviceMesh, place: dict[str, str]) -> dict:
    """Propagate placements through the graph node by node with DTensor (caches cleared before
    every call); returns timing and per-node output specs."""
    env: dict[str, Any] = {}
    getitems: dict[str, dict[int, FxNode]] = {}
    for n in nodes:
        if n.kind == "getitem":
            getitems.setdefault(n.src, {})[n.index] = n
    total_ns, handled, failed, no_tensor = 0, 0, 0, 0
    failed_ops: dict[str, int] = {}
    failed_nodes: set[str] = set()
    first_error: dict[str, str] = {}
    outputs: dict[str, list[str]] = {}
    per_node_ns: list[tuple[int, str]] = []
    for n in nodes:
        if n.kind == "placeholder":
            meta = contiguous_meta(n.type[1], n.type[0])
            env[n.name] = dspec(mesh, place.get(n.name, "R" * mesh.ndim), meta)
            continue
        if n.kind == "getitem":
            parent = env[n.src]
            env[n.name] = parent[n.index] if isinstance(parent, (tuple, list)) else None
            continue
        args = tuple(fx_value(a, env) for a in n.call.args)
        kwargs = {k.arg: fx_value(k.value, env) for k in n.call.keywords}
        if not (_has_spec(args) or _has_spec(kwargs)):
            # a factory (empty, zeros, arange, ...): no DTensor input, not sharding-propagated in DTensor
            no_tensor += 1
            env[n.name] = _replicate(mesh, _output_metas(n, getitems))
            outputs[n.name] = _spec_list(env[n.name])
            continue
        schema_info = PROPAGATOR.op_to_schema_info.get(n.op) or PROPAGATOR.op_to_schema_info_for_single_dim_strategy.get(n.op)
        schema = OpSchema(n.op, args, kwargs, schema_info=schema_info)
        clear_dtensor_caches()
        t0 = time.perf_counter_ns()
        try:
            out = PROPAGATOR.propagate_op_sharding_non_cached(schema)
            ok = True
        except Exception as e:  # DTensor cannot handle this op/input: Replicate outputs, counted
            ok = False
            err = f"{type(e).__name__}: {str(e).splitlines()[0][:160] if str(e) else ''}"
        dt = time.perf_counter_ns() - t0
        total_ns += dt
        per_node_ns.append((dt, n.name))
        if ok and out.output_spec is not None:
            handled += 1
            env[n.name] = out.output_spec
        else:
            failed += 1
            failed_ops[n.op_name] = failed_ops.get(n.op_name, 0) + 1
            failed_nodes.add(n.name)
            first_error.setdefault(n.op_name, err if not ok else "no output spec")
            env[n.name] = _replicate(mesh, _output_metas(n, getitems))
        outputs[n.name] = _spec_list(env[n.name])
    texts = {name: _spec_list(v) for name, v in env.items()}
    return dict(total_ns=total_ns, handled=handled, failed=failed, no_tensor=no_tensor, failed_ops=failed_ops, failed_nodes=failed_nodes, texts=texts,
                first_error=first_error, outputs=outputs, calls=len(per_node_ns),
                slowest=sorted(per_node_ns, reverse=True)[:3])


def _spec_list(v: Any) -> list[str]:
    if isinstance(v, (tuple, list)):
        return [spec_text(s) for s in v]
    return [spec_text(v)]


@dataclass
class GraphCase:
    label: str
    path: str
    mesh: tuple[int, ...]
    place: dict[str, str]
    result: dict = field(default_factory=dict)


def run_graph(g: GraphCase, nodes: list[FxNode], cfg: argparse.Namespace, warmup: bool) -> None:
    mesh = make_mesh(g.mesh)
    text = open(g.path, encoding="utf-8").read()
    plan_kw = dict(mesh=list(g.mesh), place=g.place, devices_per_host=1, einsum_linearity="dtensor")
    plan = ctshard.plan(text, **plan_kw)
    n_plan = cfg.plan_repeats
    plan_ns = median_ns(lambda: ctshard.plan(text, **plan_kw), n_plan, 2)
    plan_sound = ctshard.plan(text, mesh=list(g.mesh), place=g.place, devices_per_host=1)  # default: sound

    t0 = time.perf_counter()
    if warmup:
        dtensor_graph(nodes, mesh, g.place)  # untimed pass: first-call overheads (lazy imports, op registration)
    d = dtensor_graph(nodes, mesh, g.place)
    wall = time.perf_counter() - t0
    ct_nodes = {n["name"]: n for n in plan["nodes"]}
    # ctshard's placement of every value: placeholders from `place` (else Replicate), op nodes'
    # outputs, getitem = the parent's output at that index
    nd = len(g.mesh)
    ct_env: dict[str, list[str]] = {}
    for n in nodes:
        if n.kind == "placeholder":
            ct_env[n.name] = [ctshard.format_spec(g.place.get(n.name, "R" * nd))]
        elif n.kind == "getitem":
            parent = ct_env.get(n.src, [])
            ct_env[n.name] = [parent[n.index]] if n.index < len(parent) else ["None"]
        elif n.name in ct_nodes:
            ct_env[n.name] = [ctshard.format_spec(s) if s not in ("None", None) else "None" for s in ct_nodes[n.name]["outputs"]]
    agree = compared = same_in = same_in_agree = 0
    mismatch_ops: dict[str, int] = {}
    none_only: dict[str, int] = {}
    first_mismatch: list[str] = []
    first_divergence = None
    same_in_why: dict[str, int] = {}
    for n in nodes:
        if n.kind != "call" or n.name not in ct_nodes or n.name not in d["outputs"]:
            continue
        cn, dt_out, ct_out = ct_nodes[n.name], d["outputs"][n.name], ct_env[n.name]
        compared += 1
        # DTensor gives no spec (None) for some non-DTensor outputs (e.g. the philox seed/offset of
        # _scaled_dot_product_efficient_attention) where ctshard says Replicate: those positions
        # are not compared, only counted.
        if len(ct_out) == len(dt_out):
            none_pos = [i for i, x in enumerate(dt_out) if x == "None" and ct_out[i] != "None"]
            if none_pos:
                none_only[cn["op"]] = none_only.get(cn["op"], 0) + 1
            dt_cmp = [x for i, x in enumerate(dt_out) if i not in none_pos]
            ct_cmp = [x for i, x in enumerate(ct_out) if i not in none_pos]
        else:
            dt_cmp, ct_cmp = dt_out, ct_out
        ok = ct_cmp == dt_cmp
        refs = [x.id for x in ast.walk(n.call) if isinstance(x, ast.Name) and x.id in d["texts"]]
        inputs_same = all(d["texts"][r] == ct_env.get(r) for r in refs)
        if inputs_same:
            same_in += 1
            same_in_agree += ok
        if ok:
            agree += 1
        else:
            mismatch_ops[cn["op"]] = mismatch_ops.get(cn["op"], 0) + 1
            why = ("ctshard fallback (no rule)" if cn.get("fallback") else
                   "DTensor failed" if n.name in d["failed_nodes"] else "different choice")
            if inputs_same:
                same_in_why[why] = same_in_why.get(why, 0) + 1
                if why == "different choice" and len(first_mismatch) < 3:
                    first_mismatch.append(f"`{n.name}` ({cn['op']}, inputs {', '.join(d['texts'][r][0] for r in refs)}): "
                                          f"DTensor {', '.join(dt_cmp)}, ctshard {', '.join(ct_cmp)}")
            if first_divergence is None:
                first_divergence = f"`{n.name}` ({cn['op']}: {why}; DTensor {', '.join(dt_cmp)}, ctshard {', '.join(ct_cmp)})"
    sound_agree = sum(1 for n in plan_sound["nodes"] if n["outputs"] == ct_nodes[n["name"]]["outputs"])
    g.result = dict(d, plan_ns=plan_ns, plan_runs=n_plan, plan_nodes=len(plan["nodes"]),
                    plan_rule=plan["nodes_with_rule"], plan_fallback=plan["nodes_fallback"],
                    plan_fallback_ops=plan["fallback_ops"], agree=agree, compared=compared,
                    mismatch_ops=mismatch_ops, none_only=none_only, first_mismatch=first_mismatch, wall_s=wall,
                    same_in=same_in, same_in_agree=same_in_agree, same_in_why=same_in_why, first_divergence=first_divergence,
                    sound_same=sound_agree)
    r = g.result
    print(f"  {g.label:12s} {mesh_text(g.mesh):6s} DTensor {r['total_ns'] / 1e9:8.2f} s over {r['calls']} calls "
          f"({r['handled']} handled, {r['failed']} failed, {r['no_tensor']} no tensor input); "
          f"ctshard.plan {r['plan_ns'] / 1e6:.2f} ms; outputs agree {agree}/{compared}; "
          f"same inputs {same_in}, of which agree {same_in_agree}", flush=True)


# ---- report ---------------------------------------------------------------------------------


def machine_text() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        for line in open("/proc/cpuinfo", encoding="utf-8"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{cpu}, {os.cpu_count()} cores, {platform.system()} {platform.release()}, Python {platform.python_version()}"


def build_text() -> str:
    """Which ctshard build was measured: the extension's file date and the checkout's HEAD."""
    so = ctshard._ext.__file__
    when = datetime.datetime.fromtimestamp(os.path.getmtime(so), datetime.timezone.utc)
    text = f"ctshard {ctshard.__version__} (extension built {when:%Y-%m-%d %H:%M} UTC"
    try:
        import subprocess

        head = subprocess.run(["git", "-C", REPO, "log", "-1", "--format=%h %cd", "--date=format:%Y-%m-%d %H:%M"],
                              capture_output=True, text=True, timeout=10).stdout.strip()
        if head:
            text += f"; checkout at commit {head}"
    except (OSError, subprocess.SubprocessError):
        pass
    return text + ")"


def markdown(cases: list[Case], graphs: list[GraphCase], cfg: argparse.Namespace, started: datetime.datetime,
             elapsed_s: float) -> str:
    L: list[str] = []
    L.append(SECTION_TITLE)
    L.append("")
    L.append(f"Generated by `python3 benchmarks/python/bench_dtensor_vs_ctshard.py{' --quick' if cfg.quick else ''} "
             f"--markdown docs/benchmarks.md` on {started:%Y-%m-%d} ({machine_text()}); torch {torch.__version__}, "
             f"{BUILD}. **All figures are from one run on a shared 2-core machine** "
             f"(the run took {elapsed_s / 60:.0f} min); expect ±20 % noise between runs, more on the DTensor side.")
    L.append("")
    L.append("Method, per case, all in one process:")
    L.append("")
    L.append("- **DTensor**: `DTensor._op_dispatcher.sharding_propagator.propagate_op_sharding_non_cached(OpSchema)` "
             "with `DTensorSpec`s carrying `TensorMeta`, on `DeviceMesh(\"cpu\", arange(N).reshape(mesh))` over a "
             "fake process group (`init_process_group(\"fake\", world_size=N)`, destroyed and re-initialised when N "
             "changes). DTensor's CPU meshes price with one device per host, so ctshard runs with "
             f"`devices_per_host=1`. Median of {cfg.dt_repeats} timed calls after {cfg.dt_warmup} warm-up call(s); "
             "a new `OpSchema` (new `DTensorSpec`s) is built and these caches are cleared before every call "
             "(outside the timed region):")
    for what, why in CLEARED_CACHES:
        L.append(f"  - {what} — {why};")
    L.append(f"  - {NOT_CLEARED_NOTE}")
    L.append("  The column *of which fake meta* is `_propagate_tensor_meta_non_cached` alone (DTensor runs the op "
             "on fake tensors to get the output's shape and strides; ctshard derives them from the rule), timed the "
             "same way.")
    L.append("- **ctshard C++ cold**: `ctshard._ext._bench_choose`, timed inside C++ with `steady_clock`: the op's rule "
             "built by its factory from shapes and arguments, a new `StrategyEnumerator`, `choose()` — nothing "
             f"cached. Each call averages an inner loop sized to ~{cfg.cpp_budget_ns / 1e6:.0f} ms; median of "
             f"{cfg.cpp_calls} calls. *warm*: a kept enumerator, inputs alternating between two metas so every call "
             "reprices; *repeat*: the identical query again (remembered answer).")
    L.append("- **ctshard Python**: `ctshard.choose(...)` (only the chosen row) and `ctshard.table(...)` (every row "
             "as dicts), `time.perf_counter_ns` around each call, median of many calls (argument conversion and "
             "dict building included).")
    L.append("- **ratio C++** = DTensor / ctshard C++ cold (the fair pair: nothing cached on either side); "
             "**ratio Python** = DTensor / `ctshard.choose`. Targets: C++ ≥ 1,000×, Python ≥ 100×.")
    L.append("- **agree**: DTensor's chosen output placements and the input placements it runs on "
             "(`redistribute_schema`, or the given inputs when it needs none) equal `ctshard.choose`'s `out`/`in`.")
    L.append("")
    L.append("| case | mesh | inputs | kind | rows | DTensor µs | of which fake meta µs | ctshard C++ cold µs | "
             "C++ warm µs | C++ repeat µs | Python choose µs | Python table µs | ratio C++ | ratio Python | "
             "choices agree |")
    L.append("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for c in cases:
        r = c.result
        if not r:
            continue
        agree = "yes" if r["agree"] else (f"**no**: DTensor `{r['dt_out'][0]}` ← {', '.join('`%s`' % s for s in r['dt_in'])}; "
                                          f"ctshard `{r['ct_out'][0]}` ← {', '.join('`%s`' % s for s in r['ct_in'])}")
        L.append(f"| {c.name} | {mesh_text(c.mesh)} | {' , '.join('`%s`' % s for s in c.inputs)} | {c.kind} | "
                 f"{r['rows']} | {fmt_us(r['dt_ns'])} | {fmt_us(r['dt_meta_ns'])} | {fmt_us(r['cpp_cold_ns'])} | "
                 f"{fmt_us(r['cpp_warm_ns'])} | {fmt_us(r['cpp_repeat_ns'])} | {fmt_us(r['py_choose_ns'])} | "
                 f"{fmt_us(r['py_table_ns'])} | {fmt_ratio(r['dt_ns'] / r['cpp_cold_ns'])} | "
                 f"{fmt_ratio(r['dt_ns'] / r['py_choose_ns'])} | {agree} |")
    L.append("")
    done = [c for c in cases if c.result]
    if done:
        rc = [c.result["dt_ns"] / c.result["cpp_cold_ns"] for c in done]
        rp = [c.result["dt_ns"] / c.result["py_choose_ns"] for c in done]
        rt = [c.result["dt_ns"] / c.result["py_table_ns"] for c in done]
        L.append(f"Ratio ranges over the {len(done)} cases: DTensor / C++ cold **{fmt_ratio(min(rc))} – {fmt_ratio(max(rc))}**; "
                 f"DTensor / Python `choose` **{fmt_ratio(min(rp))} – {fmt_ratio(max(rp))}**; "
                 f"DTensor / Python `table` {fmt_ratio(min(rt))} – {fmt_ratio(max(rt))}.")
        L.append("")
        below_c = [(c, r) for c, r in zip(done, rc) if r < TARGET_CPP]
        below_p = [(c, r) for c, r in zip(done, rp) if r < TARGET_PY]
        L.append("Targets:")
        L.append("")
        if below_c:
            L.append(f"- C++ ≥ {TARGET_CPP:,.0f}×: **missed in {len(below_c)} of {len(done)} cases**: " + "; ".join(
                f"{c.name} on {mesh_text(c.mesh)}, {c.kind} ({fmt_ratio(r)}, {r / TARGET_CPP:.2f} of target)" for c, r in below_c) + ".")
        else:
            L.append(f"- C++ ≥ {TARGET_CPP:,.0f}×: met in all {len(done)} cases.")
        if below_p:
            L.append(f"- Python ≥ {TARGET_PY:,.0f}×: **missed in {len(below_p)} of {len(done)} cases**: " + "; ".join(
                f"{c.name} on {mesh_text(c.mesh)}, {c.kind} ({fmt_ratio(r)}, {r / TARGET_PY:.2f} of target)" for c, r in below_p) + ".")
        else:
            L.append(f"- Python ≥ {TARGET_PY:,.0f}×: met in all {len(done)} cases.")
        dis = [c for c in done if not c.result["agree"]]
        L.append(f"- Choices: DTensor and ctshard agree in {len(done) - len(dis)} of {len(done)} cases"
                 + ("." if not dis else "; disagreements: " + "; ".join(
                     f"{c.name} on {mesh_text(c.mesh)} with {', '.join(c.inputs)}" for c in dis) + "."))
        odd = [c for c in done if (c.kind == "match") == c.result["dt_redistributes"]]
        if odd:
            L.append("- Case kind not as intended (DTensor redistributes in a `match` case or not in a `redistribute` "
                     "case): " + "; ".join(f"{c.name} on {mesh_text(c.mesh)} ({c.kind})" for c in odd) + ".")
        else:
            L.append("- DTensor needed no redistribution in every `match` case (ctshard rule "
                     + "/".join(sorted({c.result['ct_rule'] for c in done if c.kind == 'match'}))
                     + ") and redistributed in every `redistribute` case (ctshard rule "
                     + "/".join(sorted({c.result['ct_rule'] for c in done if c.kind != 'match'})) + ").")
        tab_bad = [c for c in done if not c.result["table_agrees"]]
        if tab_bad:
            L.append(f"- `ctshard.table`'s chosen row differs from `ctshard.choose` in {len(tab_bad)} cases.")
        slow = {}
        for c in done:
            slow.setdefault(mesh_text(c.mesh), []).append(c.result["dt_ns"])
        L.append("- DTensor's time per call by mesh (min – max over the cases): " + "; ".join(
            f"{m}: {fmt_us(min(v))} – {fmt_us(max(v))} µs" for m, v in slow.items()) + ".")
        L.append("")
    if graphs:
        L.append("Whole graphs: DTensor propagated node by node (the FX printout read in Python; each op node's "
                 "`OpSchema` built from the specs DTensor chose for earlier nodes, placeholders from `place`, others "
                 "Replicate; caches cleared before every call; on an error the node's outputs become Replicate and "
                 "it is counted as failed; factory nodes without a tensor input are Replicate and not propagated, "
                 "as in eager DTensor) vs `ctshard.plan(text, mesh, place, devices_per_host=1, "
                 "einsum_linearity=\"dtensor\")` on the same text (graph parsing included; median of "
                 f"{cfg.plan_repeats} runs). DTensor time is the sum of the timed propagation calls of one pass"
                 + (", after one untimed warm-up pass over the whole graph on the graph's first mesh (first-call overheads)" if cfg.graph_warmup else "") + ". "
                 "*outputs agree*: op nodes whose output placements are the same in both; *same inputs → agree*: among "
                 "the op nodes whose input placements are the same in both propagations (so the per-node choice is "
                 "compared on equal terms even after the two propagations have diverged), how many choose the same "
                 "outputs.")
        L.append("")
        L.append("| graph | mesh | place | op nodes | DTensor total | DTensor per call | DTensor handled / failed / no tensor input | "
                 "ctshard.plan | ctshard per op node | ratio | ctshard rule / fallback | outputs agree | same inputs → agree |")
        L.append("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
        for g in graphs:
            r = g.result
            if not r:
                continue
            place = ", ".join(f"`{k}`={v}" for k, v in g.place.items())
            L.append(f"| {g.label} | {mesh_text(g.mesh)} | {place} | {r['plan_nodes']} | {r['total_ns'] / 1e9:.2f} s | "
                     f"{r['total_ns'] / max(r['calls'], 1) / 1e3:,.0f} µs | {r['handled']} / {r['failed']} / {r['no_tensor']} | "
                     f"{r['plan_ns'] / 1e6:.2f} ms | {r['plan_ns'] / max(r['plan_nodes'], 1) / 1e3:.1f} µs | "
                     f"{fmt_ratio(r['total_ns'] / r['plan_ns'])} | {r['plan_rule']} / {r['plan_fallback']} | "
                     f"{r['agree']} / {r['compared']} | {r['same_in_agree']} / {r['same_in']} |")
        L.append("")
        for g in graphs:
            r = g.result
            if not r:
                continue
            notes = []
            if r["failed_ops"]:
                notes.append("DTensor failed on " + ", ".join(
                    f"`{op}` ×{k} ({r['first_error'][op]})" for op, k in sorted(r["failed_ops"].items())))
            if r["plan_fallback_ops"]:
                notes.append("ctshard fell back on " + ", ".join(f"`{op}` ×{k}" for op, k in sorted(r["plan_fallback_ops"].items())))
            if r["none_only"]:
                notes.append("DTensor gives no spec (None) for some outputs where ctshard says Replicate, not compared: "
                             + ", ".join(f"`{op}` ×{k}" for op, k in sorted(r["none_only"].items())))
            if r["first_divergence"]:
                notes.append("the propagations first diverge at " + r["first_divergence"])
            if r["mismatch_ops"]:
                top = sorted(r["mismatch_ops"].items(), key=lambda x: -x[1])
                notes.append("outputs differ at " + ", ".join(f"`{op}` ×{k}" for op, k in top[:8])
                             + (f" and {len(top) - 8} more ops" if len(top) > 8 else ""))
            if r["same_in_why"]:
                notes.append("on equal inputs the outputs differ at " + ", ".join(
                    f"{k} nodes ({why})" for why, k in sorted(r["same_in_why"].items())))
            if r["first_mismatch"]:
                notes.append("**different choices on equal inputs, both with a rule**: " + "; ".join(r["first_mismatch"]))
            notes.append(f"slowest DTensor calls: " + ", ".join(f"`{name}` {ns / 1e6:.0f} ms" for ns, name in r["slowest"]))
            if r["sound_same"] != r["plan_nodes"]:
                notes.append(f"ctshard's default `einsum_linearity=\"sound\"` changes the outputs of {r['plan_nodes'] - r['sound_same']} nodes")
            L.append(f"- {g.label} on {mesh_text(g.mesh)}: " + "; ".join(notes) + ".")
        L.append("")
    return "\n".join(L).rstrip("\n") + "\n"


def write_section(path: str, section: str) -> None:
    """Replace the section titled SECTION_TITLE in `path` (up to the next `## ` heading) or append it."""
    old = open(path, encoding="utf-8").read() if os.path.exists(path) else "# Benchmarks\n"
    lines = old.splitlines(keepends=True)
    start = next((i for i, l in enumerate(lines) if l.rstrip("\n") == SECTION_TITLE), None)
    if start is None:
        new = old.rstrip("\n") + "\n\n" + section
    else:
        end = next((j for j in range(start + 1, len(lines)) if lines[j].startswith("## ")), len(lines))
        tail = "".join(lines[end:])
        new = "".join(lines[:start]) + section + ("\n" + tail if tail else "")
    with open(path, "w", encoding="utf-8") as f:
        f.write(new)


# ---- main -----------------------------------------------------------------------------------


def parse_mesh(text: str) -> tuple[int, ...]:
    return tuple(int(x) for x in text.lower().split("x"))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="short smoke run: meshes 8 and 2x4, fewer repeats, ViT on 2x4 only")
    ap.add_argument("--markdown", metavar="FILE", help="write the result section into FILE (other sections kept)")
    ap.add_argument("--meshes", help="op-case meshes, comma separated (default 8,2x4,2x2x2,2x2x2x2)")
    ap.add_argument("--graph-meshes", help="graph meshes, comma separated (default 2x4,2x2x2)")
    ap.add_argument("--graphs", default="vit,swin", help="graphs to run: vit, swin, t5 (comma separated; '' for none)")
    ap.add_argument("--graphs-dir", default=GRAPHS, help=f"directory of the FX printouts (default {GRAPHS})")
    ap.add_argument("--dt-repeats", type=int, help="timed DTensor calls per case (default 7; quick 5)")
    cfg = ap.parse_args(argv)
    q = cfg.quick
    meshes = [parse_mesh(m) for m in (cfg.meshes or ("8,2x4" if q else "8,2x4,2x2x2,2x2x2x2")).split(",")]
    gmeshes = [parse_mesh(m) for m in (cfg.graph_meshes or ("2x4" if q else "2x4,2x2x2")).split(",")]
    cfg.dt_repeats = cfg.dt_repeats or (5 if q else 7)
    cfg.dt_warmup = 1
    cfg.py_min, cfg.py_max, cfg.py_min_table = (30, 300, 10) if q else (100, 3000, 20)
    cfg.py_budget_ns = (0.3 if q else 1.5) * 1e9
    cfg.cpp_calls = 5 if q else 15
    cfg.cpp_budget_ns = (5 if q else 20) * 1e6
    cfg.plan_repeats = 5 if q else 15
    cfg.graph_warmup = not q

    started = datetime.datetime.now()
    t_start = time.perf_counter()
    global BUILD
    BUILD = build_text()  # read at start: a re-install during the run does not change the loaded extension
    print(f"torch {torch.__version__}, {BUILD}; {machine_text()}", flush=True)
    cases = build_cases(meshes)
    print(f"{len(cases)} op cases on meshes {', '.join(map(mesh_text, meshes))}", flush=True)
    for c in cases:
        run_case(c, make_mesh(c.mesh), cfg)

    graph_defs = {
        "vit": ("ViT-B/16 fw", os.path.join(cfg.graphs_dir, "vit_b16_fw.fx.txt"), "arg152_1"),
        "swin": ("Swin-B fw", os.path.join(cfg.graphs_dir, "more", "swin_b_fw.fx.txt"), "primals_365"),
        "t5": ("T5-small bw", os.path.join(cfg.graphs_dir, "more", "t5_small_bw.fx.txt"), None),
    }
    graphs: list[GraphCase] = []
    wanted = [g for g in cfg.graphs.split(",") if g]
    if q:
        wanted = wanted[:1]
    for key in wanted:
        label, path, first_input = graph_defs[key]
        if not os.path.exists(path):
            print(f"  (skipping {label}: {path} not found)", flush=True)
            continue
        nodes = read_fx(path)
        for i, gm in enumerate(gmeshes):
            place = {first_input: "S(0)" + "R" * (len(gm) - 1)} if first_input else {}
            g = GraphCase(label, path, gm, place)
            run_graph(g, nodes, cfg, warmup=cfg.graph_warmup and i == 0)
            graphs.append(g)
            gc.collect()

    elapsed = time.perf_counter() - t_start
    md = markdown(cases, graphs, cfg, started, elapsed)
    print()
    print(md)
    if cfg.markdown:
        write_section(cfg.markdown, md)
        print(f"wrote section {SECTION_TITLE!r} to {cfg.markdown}")
    if dist.is_initialized():
        dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
