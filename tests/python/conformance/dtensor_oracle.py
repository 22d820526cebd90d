"""DTensor (PyTorch 2.13) as an oracle for ctshard's strategy tables and choices.

One process, fake process group of world size = mesh size (re-initialised when the size
changes).  A *case* is a plain dict (see cases.py):

    {"op": "aten.mm.default", "mesh": [2, 2],
     "tensors": [{"shape": [6, 5], "dtype": "float32", "spec": "S(0)R"}, ...],
     "args": ["$0", "$1"], "kwargs": {}}

`args` / `kwargs` are the op's full call in schema order; a string "$i" stands for tensor i
(also inside lists: cat's ["$0", "$1"], index's [null, "$1"]); a string "torch.X" is
`getattr(torch, X)` (dtypes, memory formats).  Tensors are numbered in the order DTensor
flattens them (positional args depth-first, then kwargs), which is also the order of
DTensor's strategy input specs and of ctshard's `--shapes`/`--inputs`.

`DTensorOracle().run(case)` returns
    {"kind": "single_dim" | "op_strategy" | "rule",
     "strategies": [{"out": str | [str|None], "in": [str|None], "cost": [float]}] | None,
     "strategies_error": str | None,
     "choice": {"out": str | [str|None] | None, "in": [str], "redistribute": bool,
                "index": int | None} | None,
     "choice_error": str | None}
Specs print in ctshard's short form (`R`, `S(d)`, `_S(d, sf)`, `P(op)`), concatenated over mesh
dims; DTensor's _MaskPartial prints `_MP(sum)`.  Costs are floats (math.inf for infinite).
The strategies are the OpStrategy that propagation itself selects from (captured from
_select_min_cost_strategy), so set (a) and choice (b) come from one DTensor call.
"""

from __future__ import annotations

import math
import re
from typing import Any

import torch
import torch.distributed as dist
from torch.distributed.device_mesh import DeviceMesh
from torch.distributed.tensor import DTensor
from torch.distributed.tensor._dtensor_spec import DTensorSpec, TensorMeta
from torch.distributed.tensor._op_schema import (
    OpSchema,
    OpSpec,
    OpStrategy,
    TupleStrategy,
)
from torch.distributed.tensor.placement_types import (
    _MaskPartial,
    Partial,
    Placement,
    Replicate,
    Shard,
    _StridedShard,
)
from torch.testing._internal.distributed.fake_pg import FakeStore

# importing _ops registers every strategy
import torch.distributed.tensor._ops  # noqa: F401
from torch.distributed.tensor._ops.single_dim_strategy import (
    _dijkstra_expand_single_dim_strategy_to_mesh,
    _expand_single_dim_strategy_to_mesh,
)

aten = torch.ops.aten

# ---------------------------------------------------------------------------------------
# placements and specs <-> text


def placement_str(p: Placement | None) -> str:
    if p is None:
        return "None"
    if isinstance(p, _StridedShard):
        return f"_S({p.dim}, {p.split_factor})"
    if isinstance(p, Shard):
        return f"S({p.dim})"
    if isinstance(p, Replicate):
        return "R"
    if isinstance(p, _MaskPartial):
        # embedding's row-wise placement: on the output a P(sum) whose reduction masks, on the
        # indices "mask locally" (free from Replicate).  ctshard writes it [P(sum), S(0), R];
        # compare.py maps it back to those.
        return f"_MP({p.reduce_op})"
    if isinstance(p, Partial):
        # _NormPartial prints as its reduce op; placement_kind() records the type
        return f"P({p.reduce_op})"
    raise TypeError(f"unknown placement {p!r}")


def placement_kind(p: Placement | None) -> str | None:
    """Names a Partial subclass that the short form hides (_MaskPartial, _NormPartial)."""
    if isinstance(p, Partial) and type(p) is not Partial:
        return type(p).__name__
    return None


def spec_str(spec: DTensorSpec | None) -> str | None:
    if spec is None:
        return None
    return "".join(placement_str(p) for p in spec.placements)


_TOKEN = re.compile(r"\s*(R|S\((\d+)\)|_S\((\d+),\s*(\d+)\)|(?:_M)?P\((sum|avg|max|min|product)\))")


def parse_spec(text: str) -> list[Placement]:
    out: list[Placement] = []
    pos = 0
    text = text.strip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m:
            raise ValueError(f"bad spec text {text!r} at {pos}")
        if m.group(1) == "R":
            out.append(Replicate())
        elif m.group(2) is not None:
            out.append(Shard(int(m.group(2))))
        elif m.group(3) is not None:
            out.append(_StridedShard(int(m.group(3)), split_factor=int(m.group(4))))
        else:
            out.append(Partial(m.group(5)))
        pos = m.end()
    return out


def out_str(output_specs: Any) -> str | list | None:
    if output_specs is None:
        return None
    if isinstance(output_specs, DTensorSpec):
        return spec_str(output_specs)
    if isinstance(output_specs, (tuple, list)):
        return [out_str(s) for s in output_specs]
    raise TypeError(f"unexpected output specs {output_specs!r}")


def _flat_placement_kinds(output_specs: Any, input_specs: Any) -> list[str]:
    kinds = set()
    for s in _flatten_specs(output_specs) + _flatten_specs(input_specs):
        for p in s.placements:
            k = placement_kind(p)
            if k:
                kinds.add(k)
    return sorted(kinds)


def _flatten_specs(x: Any) -> list[DTensorSpec]:
    if x is None:
        return []
    if isinstance(x, DTensorSpec):
        return [x]
    if isinstance(x, (list, tuple)):
        r: list[DTensorSpec] = []
        for e in x:
            r.extend(_flatten_specs(e))
        return r
    return []


def cost_float(c: Any) -> float:
    c = float(c)
    return c


# ---------------------------------------------------------------------------------------
# op lookup

def resolve_op(name: str) -> torch._ops.OpOverload:
    """'aten.mm.default' -> torch.ops.aten.mm.default."""
    ns, rest = name.split(".", 1)
    base, overload = rest.rsplit(".", 1)
    packet = getattr(getattr(torch.ops, ns), base)
    return getattr(packet, overload)


def op_name(op: torch._ops.OpOverload) -> str:
    ns, rest = op.name().split("::", 1)
    base = rest.split(".")[0]
    return f"{ns}.{base}.{op._overloadname}"


def propagator():
    return DTensor._op_dispatcher.sharding_propagator


def registered_ops() -> dict[str, str]:
    """op name -> 'single_dim' | 'op_strategy' | 'rule' (single-dim wins, as in propagation)."""
    p = propagator()
    r: dict[str, str] = {}
    for op in p.op_to_rules:
        r[op_name(op)] = "rule"
    for op in p.op_strategy_funcs:
        r[op_name(op)] = "op_strategy"
    for op in p.op_single_dim_strategy_funcs:
        r[op_name(op)] = "single_dim"
    return r


# ---------------------------------------------------------------------------------------
# process group / mesh

_DTYPES = {
    "float32": torch.float32, "float": torch.float32, "float64": torch.float64,
    "float16": torch.float16, "bfloat16": torch.bfloat16, "int64": torch.int64,
    "int32": torch.int32, "int16": torch.int16, "int8": torch.int8, "uint8": torch.uint8,
    "uint64": torch.uint64,
    "bool": torch.bool, "complex64": torch.complex64, "complex128": torch.complex128,
}


def torch_dtype(name: str) -> torch.dtype:
    name = name.removeprefix("torch.")
    return _DTYPES[name]


class DTensorOracle:
    def __init__(self) -> None:
        self._world = None
        self._meshes: dict[tuple[int, ...], DeviceMesh] = {}

    # -- process group
    def _ensure_world(self, n: int) -> None:
        if self._world == n and dist.is_initialized():
            return
        if dist.is_initialized():
            dist.destroy_process_group()
        dist.init_process_group("fake", rank=0, world_size=n, store=FakeStore())
        self._world = n
        self._meshes.clear()

    def mesh(self, sizes: list[int]) -> DeviceMesh:
        n = math.prod(sizes)
        self._ensure_world(n)
        key = tuple(sizes)
        if key not in self._meshes:
            self._meshes[key] = DeviceMesh("cpu", torch.arange(n).reshape(key))
        return self._meshes[key]

    # -- schema
    def build_schema(self, case: dict) -> OpSchema:
        op = resolve_op(case["op"])
        mesh = self.mesh(case["mesh"])
        specs = []
        for t in case["tensors"]:
            placements = parse_spec(t["spec"])
            if len(placements) != mesh.ndim:
                raise ValueError(f"spec {t['spec']} does not match mesh {case['mesh']}")
            fake = torch.empty_strided(t["shape"], _contig_stride(t["shape"]),
                                       dtype=torch_dtype(t.get("dtype", "float32")), device="meta")
            specs.append(DTensorSpec(mesh, tuple(placements),
                                     TensorMeta(fake.shape, fake.stride(), fake.dtype)))

        def conv(v: Any) -> Any:
            if isinstance(v, str):
                if v.startswith("$"):
                    return specs[int(v[1:])]
                if v.startswith("torch."):
                    return getattr(torch, v[len("torch."):])
                return v
            if isinstance(v, list):
                return [conv(x) for x in v]
            if isinstance(v, tuple):
                return tuple(conv(x) for x in v)
            if isinstance(v, dict):
                raise TypeError("nested dict argument")
            return v

        args = tuple(conv(a) for a in case.get("args", []))
        kwargs = {k: conv(v) for k, v in case.get("kwargs", {}).items()}
        p = propagator()
        schema_info = p.op_to_schema_info.get(op)
        if schema_info is None:
            schema_info = p.op_to_schema_info_for_single_dim_strategy.get(op)
        return OpSchema(op, args, kwargs, schema_info=schema_info)

    # -- strategies
    def strategies(self, case: dict, schema: OpSchema | None = None) -> tuple[str, list[dict] | None]:
        schema = schema or self.build_schema(case)
        p = propagator()
        op = schema.op
        info = p.op_single_dim_strategy_funcs.get(op)
        strategy_schema = p._wrap_with_op_strategy(schema)
        if info is not None:
            mesh = self.mesh(case["mesh"])
            out_meta = p._propagate_tensor_meta_non_cached(schema)
            fn = _expand_single_dim_strategy_to_mesh(mesh, strategy_schema, info, out_meta)
            st = fn(op, strategy_schema.args_meta, strategy_schema.kwargs_meta)
            kind = "single_dim"
        elif op in p.op_strategy_funcs:
            st = p.op_strategy_funcs[op](strategy_schema)
            kind = "op_strategy"
        elif op in p.op_to_rules:
            return "rule", None
        else:
            raise NotImplementedError(f"{case['op']} has no DTensor strategy")
        if isinstance(st, TupleStrategy):
            raise NotImplementedError("TupleStrategy result (foreach-like) is not compared")
        n_in = len(case["tensors"])
        n_out = _num_tensor_returns(op)
        rows = []
        for s in st.strategies:
            rows.append(self._row(s, n_in, n_out))
        return kind, rows

    @staticmethod
    def _row(s: OpSpec, n_in: int, n_out: int = 1) -> dict:
        out = out_str(s.output_specs)
        if isinstance(out, str) and n_out > 1:
            # one spec for a tuple-returning op: propagation gives every output that spec
            out = [out] * n_out
        if s.input_specs is None:
            # convention: every input takes the output spec
            ins = [spec_str(s.output_spec)] * n_in
        else:
            ins = [spec_str(x) for x in s.input_specs]
        costs = []
        for c in (s.redistribute_cost or []):
            costs.append(cost_float(c[0]) if len(c) else 0.0)
        row = {"out": out, "in": ins, "cost": costs}
        kinds = _flat_placement_kinds(s.output_specs, s.input_specs)
        if kinds:
            row["partial_kinds"] = kinds
        return row

    # -- choice
    def choice(self, case: dict, schema: OpSchema | None = None) -> dict:
        schema = schema or self.build_schema(case)
        p = propagator()
        res = p.propagate_op_sharding_non_cached(schema)
        out = out_str(res.output_spec)
        current = [spec_str(s) for s in schema.args_spec]
        rs = res.redistribute_schema
        if rs is not None:
            ins = [spec_str(s) for s in rs.args_spec]
            # view/factory ops rewrite shape args: redistribute_schema exists without a change
            # of placements
        else:
            ins = list(current)
        # tensor kwargs are not part of args_spec; DTensor never redistributes them here
        kw_specs = [v for v in schema.kwargs_schema.values() if isinstance(v, DTensorSpec)]
        ins += [spec_str(s) for s in kw_specs]
        return {"out": out, "in": ins, "redistribute": ins[: len(current)] != current}

    # -- DTensor 2.13's unused priority-queue search
    def dijkstra(self, case: dict, timeout_s: float = 10.0) -> dict:
        """Runs `_dijkstra_expand_single_dim_strategy_to_mesh` (defined in 2.13's
        single_dim_strategy.py, called by nothing in 2.13) on a single-dim-rule case, next to the
        full expansion + `_select_min_cost_strategy` that `propagate_op_sharding_non_cached`
        uses.  Returns {"status": "ok" | "none" | "error" | "timeout" | "not_single_dim", "reason",
        "choice": {"out", "in", "cost" (its own per-input costs)}, "full": {"out", "in", "cost"},
        "time_dijkstra_s", "time_full_s"}.  "none": the function declined (it returns None for
        TupleStrategy args, tensor kwargs, _StridedShard or symbolic inputs, or an exhausted
        search) and propagation would fall back to full expansion; "timeout": no answer within
        timeout_s (the search is stopped at its next popped state)."""
        import time

        res: dict[str, Any] = {"status": None}
        try:
            schema = self.build_schema(case)
        except Exception as e:  # noqa: BLE001
            return {"status": "error", "reason": "schema: " + _err(e)}
        p = propagator()
        op = schema.op
        info = p.op_single_dim_strategy_funcs.get(op)
        if info is None:
            return {"status": "not_single_dim"}
        mesh = self.mesh(case["mesh"])
        n_in = len(case["tensors"])
        n_out = _num_tensor_returns(op)
        try:
            out_meta = p._propagate_tensor_meta_non_cached(schema)
            strategy_schema = p._wrap_with_op_strategy(schema)
            t0 = time.perf_counter()
            fn = _expand_single_dim_strategy_to_mesh(mesh, strategy_schema, info, out_meta)
            full = fn(op, strategy_schema.args_meta, strategy_schema.kwargs_meta)
            best = _orig_select(full, schema)
            res["time_full_s"] = time.perf_counter() - t0
            res["full"] = self._row(best, n_in, n_out)
            res["full_rows"] = [self._row(s, n_in, n_out) for s in full.strategies]
        except Exception as e:  # noqa: BLE001
            return {"status": "error", "reason": "full expansion: " + _err(e)}
        reason = None
        if any(isinstance(a, TupleStrategy) for a in strategy_schema.args_schema):
            reason = "tensor list argument (TupleStrategy)"
        elif any(isinstance(v, (OpStrategy, TupleStrategy)) for v in strategy_schema.kwargs_schema.values()):
            reason = "tensor keyword argument"
        elif any(isinstance(pl, _StridedShard) for a in schema.args_spec for pl in a.placements):
            reason = "_StridedShard input"
        from torch.distributed.tensor._ops import single_dim_strategy as _sds

        cls = _sds._PreparedSingleDimStrategy
        orig_try = cls.try_propagate
        t0 = time.perf_counter()
        deadline = t0 + timeout_s

        def _try_with_deadline(self_, *a, **k):
            # every state the search pops goes through try_propagate: a cheap place for a budget
            if time.perf_counter() > deadline:
                raise _DijkstraTimeout()
            return orig_try(self_, *a, **k)

        cls.try_propagate = _try_with_deadline
        try:
            st = _dijkstra_expand_single_dim_strategy_to_mesh(mesh, strategy_schema, info, out_meta)
            res["time_dijkstra_s"] = time.perf_counter() - t0
        except _DijkstraTimeout:
            res.update(status="timeout", reason=f"no result within {timeout_s:g} s",
                       time_dijkstra_s=time.perf_counter() - t0)
            return res
        except Exception as e:  # noqa: BLE001
            res.update(status="error", reason=_err(e), time_dijkstra_s=time.perf_counter() - t0)
            return res
        finally:
            cls.try_propagate = orig_try
        if st is None:
            res.update(status="none", reason=reason or "search exhausted")
            return res
        res["status"] = "ok"
        res["choice"] = self._row(st.strategies[0], n_in, n_out)
        return res

    def run(self, case: dict) -> dict:
        """Strategies and choice from one propagation: the OpStrategy that
        propagate_op_sharding_non_cached hands to _select_min_cost_strategy is captured, so the
        rows are exactly those propagation chose from.  When propagation fails before selecting
        (or the op is rule-based), the strategies are computed separately."""
        result: dict[str, Any] = {"kind": None, "strategies": None, "strategies_error": None,
                                  "choice": None, "choice_error": None}
        try:
            schema = self.build_schema(case)
        except Exception as e:  # noqa: BLE001
            msg = _err(e)
            result["strategies_error"] = result["choice_error"] = msg
            return result
        p = propagator()
        op = schema.op
        result["kind"] = ("single_dim" if op in p.op_single_dim_strategy_funcs else
                          "op_strategy" if op in p.op_strategy_funcs else
                          "rule" if op in p.op_to_rules else None)
        _captured.clear()
        _capturing[0] = True
        try:
            result["choice"] = self.choice(case, schema)
        except Exception as e:  # noqa: BLE001
            result["choice_error"] = _err(e)
        finally:
            _capturing[0] = False
        cap = list(_captured)
        _captured.clear()
        n_in = len(case["tensors"])
        n_out = _num_tensor_returns(op)
        if len(cap) == 1 and isinstance(cap[0], OpStrategy) and result["kind"] != "rule":
            result["strategies"] = [self._row(s, n_in, n_out) for s in cap[0].strategies]
        elif result["kind"] == "rule":
            result["strategies"] = None
        else:
            try:
                kind, rows = self.strategies(case, schema)
                result["strategies"] = rows
            except Exception as e:  # noqa: BLE001
                result["strategies_error"] = _err(e)
        if n_out == 0:
            # no tensor output (equal -> bool): DTensor's OpSpec still carries the input spec
            # as its "output"; only the inputs mean anything
            for r in result["strategies"] or []:
                r["out"] = None
            if result["choice"] is not None:
                result["choice"]["out"] = None
        ch_out = (result["choice"] or {}).get("out")
        if isinstance(ch_out, list):
            # tensor-list outputs (split / unbind): DTensor's strategies carry one spec for
            # every piece; write it once per piece, as the choice has it
            for r in result["strategies"] or []:
                if isinstance(r["out"], str):
                    r["out"] = [r["out"]] * len(ch_out)
        if result["choice"] is not None and result["strategies"]:
            result["choice"]["index"] = _match_index(result["strategies"], result["choice"])
        return result


class _DijkstraTimeout(Exception):
    pass


# capture of the strategy propagation selects from
import torch.distributed.tensor._sharding_prop as _sp  # noqa: E402

_captured: list = []
_capturing = [False]
_orig_select = _sp._select_min_cost_strategy


def _select_capture(strategy, op_schema=None):
    if _capturing[0]:
        _captured.append(strategy)
    return _orig_select(strategy, op_schema)


_sp._select_min_cost_strategy = _select_capture


def _num_tensor_returns(op) -> int:
    rets = op._schema.returns
    if len(rets) == 1 and str(rets[0].type).startswith("List["):
        return 1  # a tensor list (split, unbind): its length is data dependent
    return sum(1 for r in rets if "Tensor" in str(r.type))


def _match_index(rows: list[dict], choice: dict) -> int | None:
    """Index of the first row with the chosen out/in (informational: duplicates are possible)."""
    hits = [i for i, r in enumerate(rows) if r["out"] == choice["out"] and r["in"] == choice["in"]]
    return hits[0] if hits else None


def _contig_stride(shape: list[int]) -> list[int]:
    stride = []
    acc = 1
    for s in reversed(shape):
        stride.append(acc)
        acc *= max(s, 1)
    return list(reversed(stride))


def _err(e: BaseException) -> str:
    text = f"{type(e).__name__}: {e}"
    text = text.strip()
    if len(text) > 600:
        text = text[:600] + "..."
    return text


_default: DTensorOracle | None = None


def default_oracle() -> DTensorOracle:
    global _default
    if _default is None:
        _default = DTensorOracle()
    return _default


def run_case(case: dict) -> dict:
    return default_oracle().run(case)


if __name__ == "__main__":  # tiny smoke test
    import json
    import sys

    c = {"op": "aten.mm.default", "mesh": [2, 2],
         "tensors": [{"shape": [6, 5], "dtype": "float32", "spec": "S(0)R"},
                     {"shape": [5, 4], "dtype": "float32", "spec": "RS(1)"}],
         "args": ["$0", "$1"], "kwargs": {}}
    if len(sys.argv) > 1:
        c = json.loads(sys.argv[1])
    r = run_case(c)
    print(json.dumps(r, indent=None, default=str)[:4000])
