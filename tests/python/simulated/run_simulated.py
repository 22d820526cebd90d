"""Simulated mesh over every registered op: ctshard's rows run against the op on global tensors.

For every sample of every `samples_<family>.py` in this directory and every mesh of MESHES:

* 1-D meshes: every single-dim rule row (`rules_raw` with placeholders filled by plain `Shard`,
  plus the all-Replicate row; and, when a table queried with a `_S(d, 2)` input fills them with
  that StridedShard kind, those rows too) is laid out as a full-mesh row and simulated.  A row the
  table's full-mesh expansion keeps (for some current input: the row's own inputs are tried when
  the first query filtered it) must be sound; a row ctshard filters out is simulated too and, if
  it fails, only listed (`filtered_failing`: the filter is doing its job).
* `[2, 2]`: up to MAX_2D_ROWS full-mesh rows of `ctshard.table(...)["strategies"]` (inputs chosen so
  the placeholders fill), evenly spaced, must be sound.
* mesh `[2]`: the missing-row search.  Candidate single-dim rows (each tensor input R, S(d) on a dim
  with >= 2 elements, P(sum|avg|max|min) for floating inputs; all input combinations up to
  MISSING_BUDGET, else a deterministic sample) are run once per input combination; every output
  takes each candidate (R, S(d), P(...)) the reassembly accepts.  Valid rows absent from ctshard's
  filled rules are "missing" (reported, never failed), after dropping restatements (an output
  P(avg|max|min) whose row with R there is valid too).

Collectives (samples with `program_ranks`: g) run on g program ranks x the mesh (docs/semantics.md
"Collectives in graphs"): each program rank draws its own inputs, the collective's GROUP_REFERENCES
entry runs per mesh device over the g ranks' local pieces, and each rank's outputs are reassembled
and compared with the collective over the ranks' global inputs. Their rows are every full-mesh
strategy of tables queried with several current inputs (R, S(d), _S(0, k), P(r) on each tensor).

A row is `sound` when the reassembled outputs equal the global result on 2 random draws; otherwise
`unsound` (values, shapes or coverage differ) or `local_error` (the op raised on a rank).  Rows the
DTensor-fidelity einsum linearity adds over `einsum_linearity="sound"` that fail are counted as
`known_unsound` (docs/rules.md, "DTensor rules found unsound"), not as failures.

    python3 run_simulated.py                       # everything, per-family lines
    python3 run_simulated.py --op aten.gather.default --verbose
    python3 run_simulated.py --family pointwise --report /tmp/sim.json
    python3 run_simulated.py --coverage            # ops without samples
Sample format and how to add samples: README.md.
"""

from __future__ import annotations

import argparse
import importlib.util
import itertools
import json
import math
import random
import sys
import time
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

HERE = Path(__file__).resolve().parent
CONFORMANCE = HERE.parent / "conformance"
if str(CONFORMANCE) not in sys.path:
    sys.path.append(str(CONFORMANCE))

import torch  # noqa: E402

import ctshard  # noqa: E402
import simulate as _conf_sim  # noqa: E402  (tests/python/conformance/simulate.py)
from dtensor_oracle import parse_spec, resolve_op, torch_dtype  # noqa: E402
from torch.distributed.tensor.placement_types import Partial, Replicate, Shard, _StridedShard  # noqa: E402


MESHES: list[list[int]] = [[2], [3], [2, 2]]
# Families whose rows depend on the local sizes several mesh dims leave (views: a flatten / split
# group sharded by more than one mesh dim) also run on meshes of 2 and 3 dims with uneven sizes.
FAMILY_MESHES: dict[str, list[list[int]]] = {
    "view": [[2], [3], [2, 2], [2, 3], [2, 2, 2]],
    "layout": [[2], [3], [2, 2], [2, 3], [2, 2, 2]],
}
TRIALS = 2
MAX_2D_ROWS = 20          # full-mesh rows sampled per sample on [2, 2]
MISSING_BUDGET = 64       # input combinations simulated per sample by the missing-row search
MISSING_LISTED = 40       # missing rows listed per op in the report (all are counted)
REDUCE_OPS = ("sum", "avg", "max", "min")
FLOAT_DTYPES = {torch.float16, torch.bfloat16, torch.float32, torch.float64}

# Masked-Partial rows (DTensor's _MaskPartial) need the executor's masking on each rank: op ->
# factory(sample, in_specs, mesh) returning a per-rank call fn(rank, *args, **kwargs), or None when
# the row does not mask.  Filled from the sample modules' `MASKED` (embedding is built in).
MASKED: dict[str, Callable] = {}

# Ops with a rule that the simulated mesh does not run, with the concrete reason.  The coverage
# test fails on a registered op that has no sample and is not listed here.
NOT_SIMULATED: dict[str, str] = {}

# Positional size argument localised to the rank's local output shape (DTensor localises it so).
SIZE_ARG_OPS: dict[str, int] = dict(_conf_sim.SIZE_ARG_OPS)
# Ops whose values are undefined or random: shapes are compared, not values.
SHAPE_ONLY: set[str] = set(_conf_sim.SHAPE_ONLY) | {"aten.empty.memory_format"}


# ---------------------------------------------------------------------------------------
# samples

VALUE_KINDS = {"normal", "positive", "unit", "small_int"}


class SampleError(Exception):
    """A malformed sample (the message names it)."""


@dataclass
class Sample:
    id: str
    family: str
    op: str
    tensors: list[dict]          # in ctshard's input order
    args: list
    kwargs: dict
    compare: str = "values"      # "values" | "shape"
    note: str = ""
    local_size_arg: int | None = None
    no_missing: str = ""         # reason to skip the missing-row search for this sample
    program_ranks: int = 0       # collectives: the g program ranks the op runs over (0: one program)
    raw: dict = field(default_factory=dict)

    def describe(self) -> str:
        def a(v: Any) -> str:
            if isinstance(v, str) and v.startswith("$") and v[1:].isdigit():
                t = self.tensors[int(v[1:])]
                dt = t.get("dtype", "float32").replace("float", "f").replace("int", "i")
                return f"{v}:{dt}{list(t['shape'])}"
            if isinstance(v, list):
                return "[" + ", ".join(a(x) for x in v) + "]"
            return repr(v)
        parts = [a(x) for x in self.args] + [f"{k}={a(v)}" for k, v in self.kwargs.items()]
        return f"{self.op}({', '.join(parts)})"


def _refs(v: Any, out: list[int]) -> None:
    if isinstance(v, str) and v.startswith("$") and v[1:].isdigit():
        out.append(int(v[1:]))
    elif isinstance(v, (list, tuple)):
        for x in v:
            _refs(x, out)
    elif isinstance(v, dict):
        for x in v.values():
            _refs(x, out)


def _rename(v: Any, m: dict[int, int]) -> Any:
    if isinstance(v, str) and v.startswith("$") and v[1:].isdigit():
        return f"${m[int(v[1:])]}"
    if isinstance(v, (list, tuple)):
        return [_rename(x, m) for x in v]
    return v


def _ref_order(args: list, kwargs: dict, sorted_kwargs: bool) -> list[int]:
    order: list[int] = []
    _refs(args, order)
    for k in (sorted(kwargs) if sorted_kwargs else list(kwargs)):
        _refs(kwargs[k], order)
    return order


def normalize(raw: dict, family: str, index: int) -> Sample:
    """Checks a sample dict and numbers its tensors in the order ctshard.table reads the "$i"
    references (positional args depth-first, then kwargs; see `_table`)."""
    where = f"{family} sample #{index} ({raw.get('op', '?')})"
    if not isinstance(raw.get("op"), str):
        raise SampleError(f"{where}: 'op' must be an op overload name")
    tensors = raw.get("tensors", [])
    args = raw.get("args", [])
    kwargs = raw.get("kwargs", {}) or {}
    if not isinstance(tensors, list) or not isinstance(args, list) or not isinstance(kwargs, dict):
        raise SampleError(f"{where}: 'tensors' and 'args' are lists, 'kwargs' a dict")
    for i, t in enumerate(tensors):
        if not isinstance(t, dict) or not isinstance(t.get("shape"), list):
            raise SampleError(f"{where}: tensor {i} needs a 'shape' list")
        try:
            torch_dtype(t.get("dtype", "float32"))
        except KeyError:
            raise SampleError(f"{where}: tensor {i}: unknown dtype {t.get('dtype')!r}") from None
        if "range" in t and (not isinstance(t["range"], list) or len(t["range"]) != 2 or t["range"][0] >= t["range"][1]):
            raise SampleError(f"{where}: tensor {i}: 'range' is [low, high) with low < high")
        if t.get("values", raw.get("values", "normal")) not in VALUE_KINDS:
            raise SampleError(f"{where}: tensor {i}: 'values' is one of {sorted(VALUE_KINDS)}")
        if "same_as" in t and not (0 <= t["same_as"] < len(tensors)):
            raise SampleError(f"{where}: tensor {i}: 'same_as' names no tensor")
    order = _ref_order(args, kwargs, sorted_kwargs=False)
    if sorted(order) != list(range(len(tensors))):
        raise SampleError(f"{where}: the '$i' references {order} must name every tensor exactly once")
    compare = raw.get("compare", "values")
    if compare not in ("values", "shape"):
        raise SampleError(f"{where}: 'compare' is 'values' or 'shape'")
    s = Sample(id="", family=family, op=raw["op"], tensors=[dict(t) for t in tensors], args=list(args),
               kwargs=dict(kwargs), compare=compare, note=raw.get("note", ""),
               local_size_arg=raw.get("local_size_arg", SIZE_ARG_OPS.get(raw["op"])),
               no_missing=raw.get("no_missing", ""), program_ranks=int(raw.get("program_ranks", 0)), raw=raw)
    if s.program_ranks < 0:
        raise SampleError(f"{where}: 'program_ranks' is the group size g >= 1")
    if s.no_missing and not isinstance(s.no_missing, str):
        raise SampleError(f"{where}: 'no_missing' is the reason (a string)")
    if raw.get("values") is not None:
        for t in s.tensors:
            t.setdefault("values", raw["values"])
    _renumber(s, sorted_kwargs=_KWARGS_SORTED)
    return s


def _renumber(s: Sample, sorted_kwargs: bool) -> None:
    order = _ref_order(s.args, s.kwargs, sorted_kwargs)
    m = {old: new for new, old in enumerate(order)}
    s.tensors = [s.tensors[old] for old in order]
    for t in s.tensors:
        if "same_as" in t:
            t["same_as"] = m[t["same_as"]]
    s.args = _rename(s.args, m)
    s.kwargs = {k: _rename(v, m) for k, v in s.kwargs.items()}


def _probe_kwargs_sorted() -> bool:
    """ctshard.table reads kwargs through a JSON object; today that object sorts its keys, so the
    tensors of kwargs are numbered in key order.  Probe it instead of assuming it."""
    try:
        ctshard.table("aten.add.Tensor", [[2], [2]], [2], ["R", "R"], args=[], kwargs={"self": "$0", "other": "$1"})
        return False
    except ValueError:
        pass
    try:
        ctshard.table("aten.add.Tensor", [[2], [2]], [2], ["R", "R"], args=[], kwargs={"self": "$1", "other": "$0"})
        return True
    except ValueError:
        return False


_KWARGS_SORTED = _probe_kwargs_sorted()


@dataclass
class SampleModule:
    family: str
    path: Path
    samples: list[Sample]
    references: dict[str, Callable]
    group_references: dict[str, Callable] = field(default_factory=dict)


def load_sample_modules(directory: Path = HERE) -> list[SampleModule]:
    mods = []
    for path in sorted(directory.glob("samples_*.py")):
        family = path.stem[len("samples_"):]
        spec = importlib.util.spec_from_file_location(f"ctshard_simulated_samples_{family}", path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        raw = getattr(mod, "SAMPLES", None)
        if not isinstance(raw, list):
            raise SampleError(f"{path.name}: defines no SAMPLES list")
        samples = [normalize(r, family, i) for i, r in enumerate(raw)]
        mods.append(SampleModule(family, path, samples, dict(getattr(mod, "REFERENCES", {}) or {}),
                                 dict(getattr(mod, "GROUP_REFERENCES", {}) or {})))
        MASKED.update(getattr(mod, "MASKED", {}) or {})
    per_op: dict[str, int] = {}
    for m in mods:
        for s in m.samples:
            per_op[s.op] = per_op.get(s.op, 0) + 1
            s.id = f"{s.op}#{per_op[s.op] - 1}"
    return mods


# ---------------------------------------------------------------------------------------
# specs and rows

def fill_plain(cell: str) -> str:
    """'S?(1)' -> 'S(1)' (placeholders filled with plain Shard)."""
    return cell.replace("S?(", "S(")


def row_text(outs: list[str], ins: list[str]) -> str:
    o = outs[0] if len(outs) == 1 else "(" + ", ".join(outs) + ")"
    return f"({', '.join(ins)}) -> {o}"


def strategy_row(st: dict) -> tuple[tuple[str, ...], tuple[str, ...]]:
    out = st["out"]
    outs = tuple(out) if isinstance(out, list) else (out,)
    return tuple("R" if o is None else o for o in outs), tuple(st["in"])


def _seed(*parts: Any) -> int:
    return zlib.crc32("|".join(str(p) for p in parts).encode())


def _local_shape_map(shape, mesh, placements) -> dict[tuple, tuple[int, ...]]:
    idx = torch.zeros(tuple(shape), dtype=torch.int8)
    pl = [Replicate() if isinstance(p, Partial) else p for p in placements]
    return {c: tuple(t.shape) for c, t in _conf_sim.layout(idx, mesh, pl, None).items()}


def _chunk_sizes(n: int, k: int) -> list[int]:
    c = -(-n // k) if n else 0
    return [max(0, min(c, n - j * c)) for j in range(k)]


def _tol(dtype) -> float:
    return 0.05 if dtype in (torch.float16, torch.bfloat16) else 1e-4


# ---------------------------------------------------------------------------------------
# the simulated mesh for one sample

class LocalError(Exception):
    pass


class SampleSim:
    """Global inputs and outputs of one sample (per trial), local layouts and per-rank runs."""

    def __init__(self, sample: Sample, references: dict[str, Callable]):
        self.s = sample
        op = sample.op
        self.fn = references.get(op) or _conf_sim._sdpa_impl(op) or resolve_op(op)
        self._global: dict[int, tuple[list, list]] = {}
        self._pieces: dict[tuple, dict] = {}
        self.shape_only = sample.compare == "shape" or op in SHAPE_ONLY

    # -- global
    def _make_inputs(self, trial: int) -> list[torch.Tensor]:
        gen = torch.Generator().manual_seed(_seed(self.s.id, "global", trial))
        out: list[torch.Tensor] = []
        for t in self.s.tensors:
            if "same_as" in t and t["same_as"] < len(out):
                out.append(out[t["same_as"]].clone())
                continue
            shape = tuple(t["shape"])
            dt = torch_dtype(t.get("dtype", "float32"))
            if dt.is_complex:
                out.append(torch.randn(shape, generator=gen, dtype=torch.complex128).to(dt))
                continue
            if dt.is_floating_point:
                vals = t.get("values", "normal")
                if "range" in t:
                    lo, hi = t["range"]
                    x = lo + (hi - lo) * torch.rand(shape, generator=gen, dtype=torch.float64)
                elif vals == "positive":
                    x = torch.rand(shape, generator=gen, dtype=torch.float64) * 1.5 + 0.5
                elif vals == "unit":
                    x = torch.rand(shape, generator=gen, dtype=torch.float64) * 0.8 + 0.1
                elif vals == "small_int":
                    x = torch.randint(0, 3, shape, generator=gen).to(torch.float64)
                else:
                    x = torch.randn(shape, generator=gen, dtype=torch.float64)
                out.append(x.to(dt))
            elif dt == torch.bool:
                out.append(torch.rand(shape, generator=gen) < 0.5)
            elif dt == torch.uint64:
                out.append(torch.zeros(shape, dtype=dt))
            else:
                lo, hi = t.get("range", [0, 7])
                n = math.prod(shape)
                if t.get("unique"):
                    if n > hi - lo:
                        raise SampleError(f"{self.s.id}: {n} unique values do not fit in range [{lo}, {hi})")
                    x = torch.randperm(hi - lo, generator=gen)[:n] + lo
                    out.append(x.reshape(shape).to(dt))
                else:
                    out.append(torch.randint(lo, hi, shape, generator=gen, dtype=dt))
        # same_as pointing forward
        for i, t in enumerate(self.s.tensors):
            if "same_as" in t and t["same_as"] > i:
                out[i] = out[t["same_as"]].clone()
        return out

    def global_run(self, trial: int) -> tuple[list, list]:
        if trial not in self._global:
            g_in = self._make_inputs(trial)
            args = _conv(self.s.args, g_in)
            kwargs = {k: _conv(v, g_in) for k, v in self.s.kwargs.items()}
            try:
                res = self.fn(*args, **kwargs)
            except Exception as e:  # noqa: BLE001
                raise SampleError(f"{self.s.id}: the op fails on the global inputs: {type(e).__name__}: {e}"[:400]) from e
            self._global[trial] = (g_in, _outputs(res))
        return self._global[trial]

    # -- layout
    def pieces(self, trial: int, mesh: list[int], i: int, spec: str) -> dict[tuple, torch.Tensor]:
        key = (trial, tuple(mesh), i, spec)
        if key not in self._pieces:
            g_in, _ = self.global_run(trial)
            x = g_in[i]
            pl = parse_spec(spec)
            if len(pl) != len(mesh):
                raise LocalError(f"input {i} spec {spec} has {len(pl)} placements for mesh {mesh}")
            for p in pl:
                if isinstance(p, (Shard, _StridedShard)) and p.dim >= x.ndim:
                    raise LocalError(f"input {i} spec {spec} shards dim {p.dim} of a {x.ndim}-d tensor")
                if isinstance(p, Partial) and not (x.dtype.is_floating_point or (x.dtype.is_complex and p.reduce_op in ("sum", "avg"))):
                    raise LocalError(f"input {i} spec {spec}: Partial({p.reduce_op}) of a {x.dtype} tensor")
            gen = torch.Generator().manual_seed(_seed(self.s.id, "layout", trial, mesh, i, spec))
            self._pieces[key] = _conf_sim.layout(x, mesh, pl, gen)
        return self._pieces[key]

    # -- per-rank run
    def run_local(self, trial: int, mesh: list[int], in_specs: list[str], out0_spec: str | None) -> dict[tuple, list]:
        s = self.s
        ranks = list(itertools.product(*[range(m) for m in mesh]))
        g_in, g_out = self.global_run(trial)
        per_in = [self.pieces(trial, mesh, i, spec) for i, spec in enumerate(in_specs)]
        size_shapes = None
        if s.local_size_arg is not None and out0_spec is not None and isinstance(g_out[0], torch.Tensor):
            size_shapes = _local_shape_map(g_out[0].shape, mesh, parse_spec(out0_spec))
        masked = None
        if s.op == "aten.embedding.default":
            case = {"tensors": s.tensors}
            masked = _conf_sim._masked_embedding_fn(case, in_specs, mesh)
        elif s.op in MASKED:
            masked = MASKED[s.op](s, in_specs, mesh)
        out: dict[tuple, list] = {}
        for r in ranks:
            l_in = [per_in[i][r] for i in range(len(g_in))]
            largs = _conv(s.args, l_in)
            lkw = {k: _conv(v, l_in) for k, v in s.kwargs.items()}
            call = self.fn
            if size_shapes is not None:
                largs[s.local_size_arg] = list(size_shapes[r])
            if s.op.startswith("aten.squeeze."):
                # DTensor rewrites squeeze to squeeze.dims over the GLOBALLY size-1 dims
                gshape = g_in[0].shape
                if s.op == "aten.squeeze.default":
                    dims = [d for d, n in enumerate(gshape) if n == 1]
                else:
                    raw = s.args[1]
                    raw = raw if isinstance(raw, list) else [raw]
                    dims = [d % len(gshape) for d in raw if gshape[d % len(gshape)] == 1] if len(gshape) else []
                largs = [largs[0], dims]
                call = torch.ops.aten.squeeze.dims
            try:
                res = masked(r, *largs, **lkw) if masked is not None else call(*largs, **lkw)
            except Exception as e:  # noqa: BLE001
                raise LocalError(f"rank {r}: {type(e).__name__}: {e}"[:300]) from e
            outs = _outputs(res)
            if len(outs) != len(g_out):
                raise LocalError(f"rank {r}: {len(outs)} outputs, the global op has {len(g_out)}")
            out[r] = outs
        return out

    # -- one output
    def judge(self, trial: int, mesh: list[int], k: int, spec: str | None, local: dict[tuple, list]) -> str:
        """'' when output k reassembled per `spec` equals the global output, else the reason."""
        _, g_out = self.global_run(trial)
        go = g_out[k]
        if spec is None or go is None:
            return ""
        locs = [local[r][k] for r in sorted(local)]
        if isinstance(go, bool):  # equal(): the runtime ANDs the ranks' answers
            if not all(isinstance(v, bool) for v in locs):
                return f"output {k}: a rank returned {type(locs[0]).__name__}, not bool"
            return "" if all(locs) == go else f"output {k} ({spec}): AND over ranks {all(locs)} != {go}"
        if not isinstance(go, torch.Tensor):
            return ""
        if any(not isinstance(v, torch.Tensor) for v in locs):
            return f"output {k}: a rank returned no tensor"
        try:
            pl = parse_spec(spec)
        except ValueError as e:
            return f"output {k}: {e}"
        if len(pl) != len(mesh):
            return f"output {k} ({spec}): {len(pl)} placements for mesh {mesh}"
        for p in pl:
            if isinstance(p, (Shard, _StridedShard)) and p.dim >= go.ndim:
                return f"output {k} ({spec}): shards dim {p.dim} of a {go.ndim}-d output"
        if self.shape_only or go.numel() == 0:
            shapes = _local_shape_map(go.shape, mesh, pl)
            for r in sorted(local):
                if tuple(local[r][k].shape) != shapes[r]:
                    return f"output {k} ({spec}): rank {r} local shape {tuple(local[r][k].shape)} != {shapes[r]}"
            return ""
        tol = _tol(go.dtype)
        ref = go.to(_conf_sim._wide(go.dtype))
        if len(mesh) == 1 and not isinstance(pl[0], _StridedShard) and not go.dtype.is_complex:
            got, why = _assemble_1d(locs, go, pl[0], tol)
        else:
            got, why = _conf_sim.assemble({r: local[r][k] for r in local}, list(go.shape), mesh, pl, go.dtype)
        if got is None:
            return f"output {k} ({spec}): {why}"
        if not torch.allclose(got, ref, rtol=tol, atol=tol, equal_nan=True):
            nan_bad = int((got.isnan() != ref.isnan()).sum())
            err = (got - ref).abs().nan_to_num(0).max().item()
            what = f"{nan_bad} NaN where the global result has none" if nan_bad and err == 0 else f"max abs err {err:.3g}"
            return f"output {k} ({spec}): values differ ({what})"
        return ""

    def check(self, mesh: list[int], in_specs: list[str], out_specs: list[str]) -> tuple[str, str]:
        """(verdict, detail): 'sound' | 'unsound' | 'local_error'."""
        _, g_out = self.global_run(0)
        outs = list(out_specs)
        if len(outs) != len(g_out):
            if len(outs) == 1 and len(g_out) > 1:
                outs = outs * len(g_out)
            else:
                return "unsound", f"the row has {len(outs)} output specs, the op returns {len(g_out)} values"
        for trial in range(TRIALS):
            try:
                local = self.run_local(trial, mesh, in_specs, outs[0])
            except LocalError as e:
                return "local_error", str(e)
            for k, spec in enumerate(outs):
                why = self.judge(trial, mesh, k, spec, local)
                if why:
                    return "unsound", why
        return "sound", ""


class GroupSampleSim(SampleSim):
    """A collective on `sample.program_ranks` program ranks x the mesh: `fn(ranks)` takes one
    (args, kwargs) pair per program rank and returns each rank's outputs (a tensor or a tuple)."""

    def __init__(self, sample: Sample, group_references: dict[str, Callable]):
        self.s = sample
        if sample.op not in group_references:
            raise ValueError(f"no GROUP_REFERENCES entry for {sample.op}")
        self.fn = group_references[sample.op]
        self.g = sample.program_ranks
        self._global = {}
        self._pieces = {}
        self.shape_only = False
        self._base_id = sample.id

    def _rank_inputs(self, trial: int, rank: int) -> list[torch.Tensor]:
        self.s.id = f"{self._base_id}@rank{rank}"  # each program rank draws its own inputs
        try:
            return SampleSim._make_inputs(self, trial)
        finally:
            self.s.id = self._base_id

    def global_run(self, trial: int):
        """([rank][input] tensors, [rank][output] values)."""
        if trial not in self._global:
            ins = [self._rank_inputs(trial, r) for r in range(self.g)]
            packs = [(_conv(self.s.args, x), {k: _conv(v, x) for k, v in self.s.kwargs.items()}) for x in ins]
            try:
                outs = self.fn(packs)
            except Exception as e:  # noqa: BLE001
                raise SampleError(f"{self.s.id}: the collective fails on the global inputs: {type(e).__name__}: {e}"[:400]) from e
            self._global[trial] = (ins, [_outputs(o) for o in outs])
        return self._global[trial]

    def pieces(self, trial: int, mesh: list[int], rank: int, i: int, spec: str) -> dict[tuple, torch.Tensor]:
        key = (trial, tuple(mesh), rank, i, spec)
        if key not in self._pieces:
            x = self.global_run(trial)[0][rank][i]
            pl = parse_spec(spec)
            if len(pl) != len(mesh):
                raise LocalError(f"input {i} spec {spec} has {len(pl)} placements for mesh {mesh}")
            for p in pl:
                if isinstance(p, (Shard, _StridedShard)) and p.dim >= x.ndim:
                    raise LocalError(f"input {i} spec {spec} shards dim {p.dim} of a {x.ndim}-d tensor")
            gen = torch.Generator().manual_seed(_seed(self._base_id, "layout", trial, mesh, rank, i, spec))
            self._pieces[key] = _conf_sim.layout(x, mesh, pl, gen)
        return self._pieces[key]

    def run_local(self, trial: int, mesh: list[int], in_specs: list[str], out0_spec: str | None = None) -> dict:
        """[program rank] -> {mesh coordinate: outputs}."""
        coords = list(itertools.product(*[range(m) for m in mesh]))
        ins, _ = self.global_run(trial)
        per = [[self.pieces(trial, mesh, r, i, spec) for i, spec in enumerate(in_specs)] for r in range(self.g)]
        out: list[dict] = [dict() for _ in range(self.g)]
        for c in coords:
            packs = []
            for r in range(self.g):
                local = [per[r][i][c] for i in range(len(in_specs))]
                packs.append((_conv(self.s.args, local), {k: _conv(v, local) for k, v in self.s.kwargs.items()}))
            try:
                res = self.fn(packs)
            except Exception as e:  # noqa: BLE001
                raise LocalError(f"mesh device {c}: the collective over the ranks' pieces fails: {type(e).__name__}: {e}"[:300]) from e
            for r in range(self.g):
                out[r][c] = _outputs(res[r])
        return out

    def check(self, mesh: list[int], in_specs: list[str], out_specs: list[str]) -> tuple[str, str]:
        _, g_out = self.global_run(0)
        outs = list(out_specs)
        if len(outs) != len(g_out[0]):
            return "unsound", f"the row has {len(outs)} output specs, the op returns {len(g_out[0])} values"
        for trial in range(TRIALS):
            try:
                local = self.run_local(trial, mesh, in_specs)
            except LocalError as e:
                return "local_error", str(e)
            _, g_out = self.global_run(trial)
            for r in range(self.g):
                for k, spec in enumerate(outs):
                    why = _judge_value(g_out[r][k], spec, mesh, {c: local[r][c][k] for c in local[r]}, False)
                    if why:
                        return "unsound", f"program rank {r}, output {k}: {why}"
        return "sound", ""


def _judge_value(go, spec: str | None, mesh: list[int], locs: dict, shape_only: bool) -> str:
    """'' when the local values `locs` (mesh coordinate -> tensor) laid out by `spec` form `go`."""
    if spec is None or go is None or not isinstance(go, torch.Tensor):
        return ""
    if any(not isinstance(v, torch.Tensor) for v in locs.values()):
        return "a rank returned no tensor"
    pl = parse_spec(spec)
    if len(pl) != len(mesh):
        return f"({spec}): {len(pl)} placements for mesh {mesh}"
    for p in pl:
        if isinstance(p, (Shard, _StridedShard)) and p.dim >= go.ndim:
            return f"({spec}): shards dim {p.dim} of a {go.ndim}-d output"
    if shape_only or go.numel() == 0:
        shapes = _local_shape_map(go.shape, mesh, pl)
        for c in sorted(locs):
            if tuple(locs[c].shape) != shapes[c]:
                return f"({spec}): rank {c} local shape {tuple(locs[c].shape)} != {shapes[c]}"
        return ""
    tol = _tol(go.dtype)
    ref = go.to(_conf_sim._wide(go.dtype))
    got, why = _conf_sim.assemble(dict(locs), list(go.shape), mesh, pl, go.dtype)
    if got is None:
        return f"({spec}): {why}"
    if not torch.allclose(got, ref, rtol=tol, atol=tol, equal_nan=True):
        err = (got - ref).abs().nan_to_num(0).max().item()
        return f"({spec}): values differ (max abs err {err:.3g})"
    return ""


def _assemble_1d(locs: list, go: torch.Tensor, p, tol: float) -> tuple[torch.Tensor | None, str]:
    shape = tuple(go.shape)
    k = len(locs)
    if isinstance(p, Replicate):
        for j, t in enumerate(locs):
            if tuple(t.shape) != shape:
                return None, f"rank {j}: local shape {tuple(t.shape)} != {shape}"
        a = locs[0].to(torch.float64)
        for j, t in enumerate(locs[1:], 1):
            if not torch.allclose(a, t.to(torch.float64), rtol=tol, atol=tol, equal_nan=True):
                return None, f"rank {j}: replicated values differ across ranks"
        return a, ""
    if isinstance(p, Partial):
        for j, t in enumerate(locs):
            if tuple(t.shape) != shape:
                return None, f"rank {j}: local shape {tuple(t.shape)} != {shape} (Partial)"
        return _conf_sim._reduce(locs, p.reduce_op).to(torch.float64) if go.dtype.is_floating_point else \
            _reduce64(locs, p.reduce_op), ""
    d = p.dim
    sizes = _chunk_sizes(shape[d], k)
    for j, t in enumerate(locs):
        want = shape[:d] + (sizes[j],) + shape[d + 1:]
        if tuple(t.shape) != want:
            return None, f"rank {(j,)}: local output shape {tuple(t.shape)} != expected {want}"
    return torch.cat([t.to(torch.float64) for t in locs], d), ""


def _same_value(a: torch.Tensor, b) -> bool:
    if not (isinstance(b, torch.Tensor) and a.shape == b.shape):
        return False
    if a.is_complex() or b.is_complex():  # compare real and imaginary parts
        a, b = (torch.view_as_real(x.to(torch.complex128)) for x in (a, b))
    return bool(torch.equal(a.to(torch.float64).nan_to_num(0.5), b.to(torch.float64).nan_to_num(0.5)))


def _reduce64(ts: list, op: str) -> torch.Tensor:
    st = torch.stack([t.to(torch.float64) for t in ts])
    return {"sum": lambda: st.sum(0), "avg": lambda: st.mean(0), "max": lambda: st.max(0).values,
            "min": lambda: st.min(0).values}[op]()


def _conv(v: Any, tensors: list) -> Any:
    if isinstance(v, str):
        if v.startswith("$") and v[1:].isdigit():
            return tensors[int(v[1:])]
        if v.startswith("torch."):
            return getattr(torch, v[len("torch."):])
        return v
    if isinstance(v, (list, tuple)):
        return [_conv(x, tensors) for x in v]
    return v


def _outputs(res) -> list:
    if isinstance(res, (list, tuple)):
        return list(res)
    return [res]


# ---------------------------------------------------------------------------------------
# ctshard side

_TABLES: dict[str, dict] = {}


def table(s: Sample, mesh: list[int], inputs: list[str], linearity: str = "dtensor") -> dict:
    key = json.dumps([s.id, mesh, inputs, linearity])
    if key not in _TABLES:
        dtypes = [t.get("dtype", "float32") for t in s.tensors]
        _TABLES[key] = ctshard.table(s.op, [t["shape"] for t in s.tensors], mesh, inputs, args=s.args,
                                     kwargs=s.kwargs, dtype=dtypes if dtypes else "float32",
                                     einsum_linearity=linearity)
    return _TABLES[key]


def _shardable_input(s: Sample, k: int) -> tuple[int, int] | None:
    """(tensor, dim) for the current input spec that makes the placeholders fill: the first
    tensor dim with at least k elements (else any dim with elements)."""
    for need in (k, 1):
        for i, t in enumerate(s.tensors):
            for d, n in enumerate(t["shape"]):
                if n >= need:
                    return i, d
    return None


def current_inputs(s: Sample, mesh: list[int], strided: bool = False) -> list[str]:
    reps = ["R" * len(mesh) for _ in s.tensors]
    pick = _shardable_input(s, 2 * mesh[0] if strided else mesh[0])
    if pick is None:
        return reps
    i, d = pick
    if strided:
        if s.tensors[i]["shape"][d] < 2 * mesh[0]:
            return reps
        reps[i] = f"_S({d}, 2)" + "R" * (len(mesh) - 1)
    else:
        reps[i] = f"S({d})" + "R" * (len(mesh) - 1)
    return reps


# ---------------------------------------------------------------------------------------
# results

@dataclass
class OpResult:
    op: str
    family: str
    samples: int = 0
    checked: int = 0
    failed: int = 0
    missing: int = 0
    known_unsound: int = 0
    filtered: int = 0
    strided_checked: int = 0  # rows with a StridedShard spec (also counted in checked / failed)
    strided_failed: int = 0
    partial_checked: int = 0  # rows a Partial-only input reaches by reduce-scatter (also in checked / failed)
    partial_failed: int = 0
    local_checked: int = 0    # rows using a local-size view rule (also counted in checked / failed)
    local_failed: int = 0
    per_mesh: dict = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)
    missing_rows: list[str] = field(default_factory=list)
    known_unsound_rows: list[str] = field(default_factory=list)
    filtered_failing: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def mesh_counts(self, mesh: list[int]) -> dict:
        return self.per_mesh.setdefault("x".join(map(str, mesh)), {"checked": 0, "failed": 0})

    def count(self, mesh: list[int], strided: bool, local: bool = False) -> None:
        """One more row checked on `mesh` (`strided`: the row holds a StridedShard; `local`: it
        uses a view rule only the mesh's local sizes call for)."""
        self.checked += 1
        self.mesh_counts(mesh)["checked"] += 1
        if strided:
            self.strided_checked += 1
        if local:
            self.local_checked += 1

    def fail(self, mesh: list[int] | None, text: str, strided: bool = False, local: bool = False) -> None:
        self.failed += 1
        if strided:
            self.strided_failed += 1
        if local:
            self.local_failed += 1
        if mesh is not None:
            self.mesh_counts(mesh)["failed"] += 1
        self.failures.append(text)

    def to_json(self) -> dict:
        d = dict(self.__dict__)
        d["missing_rows"] = self.missing_rows[:MISSING_LISTED]
        d["missing_rows_listed"] = len(d["missing_rows"])
        d["seconds"] = round(self.seconds, 3)
        return d


def _filled_rows(t: dict, n_in: int) -> list[tuple[tuple[str, ...], tuple[str, ...]]]:
    rows = []
    width = None
    for raw in t["rules_raw"]:
        width = len(raw)
        cells = [fill_plain(c) for c in raw]
        rows.append((tuple(cells[:len(cells) - n_in]), tuple(cells[len(cells) - n_in:])))
    if width is None and t["rules"]:
        width = len(t["rules"][0])
    if width is None:
        return rows
    rep = ("R",) * (width - n_in), ("R",) * n_in
    return [rep] + [r for r in rows if r != rep]


def _full_rows(t: dict) -> set:
    return {strategy_row(st) for st in t["strategies"]}


def _sound_rule_rows(s: Sample, mesh: list[int], cur: list[str], n_in: int) -> set | None:
    """Filled rows under einsum_linearity='sound' (None when the op does not depend on it)."""
    try:
        a = table(s, mesh, cur, "dtensor")
        b = table(s, mesh, cur, "sound")
    except ValueError:
        return None
    if a["rules_raw"] == b["rules_raw"]:
        return None
    return set(_filled_rows(b, n_in))


def _group_current_inputs(s: Sample, mesh: list[int]) -> list[list[str]]:
    """Current input specs to query a collective's table with: every tensor R, then one tensor at a
    time (on mesh dim 0, and on the last mesh dim of a 2-D mesh) R, S(d), _S(0, k) for k in 2, g,
    2g, 3 where the dim holds it, and P(r)."""
    n = len(mesh)
    rep = "R" * n
    g = s.program_ranks
    combos = [[rep] * len(s.tensors)]
    for i, t in enumerate(s.tensors):
        shape = t["shape"]
        pls = [f"S({d})" for d, sz in enumerate(shape) if sz >= 2]
        if shape:
            pls += [f"_S(0, {k})" for k in sorted({2, g, 2 * g, 3}) if k >= 2 and shape[0] % k == 0 and shape[0] // k >= 2]
        if t.get("dtype", "float32").startswith("float"):
            pls += [f"P({r})" for r in REDUCE_OPS]
        for p in pls:
            for md in sorted({0, n - 1}):
                cells = ["R"] * n
                cells[md] = p
                cur = [rep] * len(s.tensors)
                cur[i] = "".join(cells)
                combos.append(cur)
            if n == 2:  # the same placement on both mesh dims
                cur = [rep] * len(s.tensors)
                cur[i] = p + p
                combos.append(cur)
    return combos


def check_group_sample(s: Sample, sim: GroupSampleSim, res: OpResult, meshes: list[list[int]]) -> None:
    """Every full-mesh strategy of the collective's tables (queried with `_group_current_inputs`)
    simulated on program ranks x the mesh; up to 4 * MAX_2D_ROWS rows per 2-D mesh."""
    try:
        sim.global_run(0)
    except SampleError as e:
        res.fail(None, str(e))
        return
    for mesh in meshes:
        res.mesh_counts(mesh)
        rows: list = []
        for cur in _group_current_inputs(s, mesh):
            try:
                t = table(s, mesh, cur)
            except ValueError as e:
                res.fail(mesh, f"{s.describe()} on mesh {mesh}: ctshard.table rejects the sample (inputs {cur}): {e}")
                continue
            for st in t["strategies"]:
                row = strategy_row(st)
                if row not in rows:
                    rows.append(row)
        if len(mesh) > 1 and len(rows) > 4 * MAX_2D_ROWS:
            step = len(rows) / (4 * MAX_2D_ROWS)
            rows = [rows[int(j * step)] for j in range(4 * MAX_2D_ROWS)]
        for outs, ins in rows:
            verdict, detail = sim.check(mesh, list(ins), list(outs))
            strided = _has_strided((outs, ins))
            res.count(mesh, strided)
            if verdict != "sound":
                res.fail(mesh, f"{s.describe()} on mesh {mesh}: row {row_text(list(outs), list(ins))}: {verdict}: {detail}", strided)


def check_sample(s: Sample, sim: SampleSim, res: OpResult, meshes: list[list[int]], missing: bool = True) -> None:
    if isinstance(sim, GroupSampleSim):
        check_group_sample(s, sim, res, meshes)
        return
    n_in = len(s.tensors)
    try:
        sim.global_run(0)
    except SampleError as e:
        res.fail(None, str(e))
        return
    for mesh in meshes:
        mc = res.mesh_counts(mesh)
        cur = current_inputs(s, mesh)
        try:
            t = table(s, mesh, cur)
        except ValueError as e:
            res.fail(mesh, f"{s.describe()} on mesh {mesh}: ctshard.table rejects the sample (inputs {cur}): {e}")
            continue
        sound_rows = _sound_rule_rows(s, mesh, cur, n_in)
        if len(mesh) == 1:
            rows = _filled_rows(t, n_in)
            # placeholders filled with a StridedShard kind, when the table fills them so
            scur = current_inputs(s, mesh, strided=True)
            if scur != cur and any("_S(" in c for c in scur):
                try:
                    ts = table(s, mesh, scur)
                    for r in ts["rules"]:
                        row = (tuple(r[:len(r) - n_in]), tuple(r[len(r) - n_in:]))
                        if any("_S(" in c for c in r) and row not in rows:
                            rows.append(row)
                except ValueError as e:
                    res.notes.append(f"{s.id} on mesh {mesh}: table with a StridedShard input {scur} refused: {e}"[:300])
            kept = _full_rows(t)
            for row in rows:
                outs, ins = row
                reachable = row in kept
                if not reachable:
                    try:
                        reachable = row in _full_rows(table(s, mesh, list(ins)))
                    except ValueError:
                        reachable = False
                verdict, detail = sim.check(mesh, list(ins), list(outs))
                text = f"{s.describe()} on mesh {mesh}: row {row_text(list(outs), list(ins))}: {verdict}: {detail}"
                if not reachable:
                    res.filtered += 1
                    if verdict != "sound":
                        res.filtered_failing.append(text)
                    continue
                strided = _has_strided(row)
                res.count(mesh, strided)
                if verdict != "sound":
                    if sound_rows is not None and (outs, ins) not in sound_rows:
                        res.known_unsound += 1
                        res.known_unsound_rows.append(text)
                    else:
                        res.fail(mesh, text, strided)
        else:
            strategies = t["strategies"]
            rows = [strategy_row(st) for st in strategies]
            rows = [r for r in rows if any(c != "R" * len(mesh) for c in r[0] + r[1])] or rows
            if len(rows) > MAX_2D_ROWS:
                step = len(rows) / MAX_2D_ROWS
                rows = [rows[int(j * step)] for j in range(MAX_2D_ROWS)]
            # the table of a StridedShard input (`_S(d, 2)` on mesh dim 0): its rows that hold one
            scur = current_inputs(s, mesh, strided=True)
            if scur != cur and any("_S(" in c for c in scur):
                try:
                    srows = [r for r in (strategy_row(st) for st in table(s, mesh, scur)["strategies"]) if _has_strided(r)]
                except ValueError as e:
                    srows = []
                    res.notes.append(f"{s.id} on mesh {mesh}: table with a StridedShard input {scur} refused: {e}"[:300])
                if len(srows) > MAX_2D_ROWS:
                    step = len(srows) / MAX_2D_ROWS
                    srows = [srows[int(j * step)] for j in range(MAX_2D_ROWS)]
                rows = rows + [r for r in srows if r not in rows]
            # every row that uses a single-dim rule the 1-D fill lacks (a view row the local sizes
            # of earlier mesh dims call for): all of them, not a sample
            local = _local_size_rows(s, mesh, t, cur, n_in)
            if scur != cur and any("_S(" in c for c in scur):
                try:
                    local |= _local_size_rows(s, mesh, table(s, mesh, scur), scur, n_in)
                except ValueError:
                    pass
            rows = rows + sorted(r for r in local if r not in rows)
            for outs, ins in rows:
                verdict, detail = sim.check(mesh, list(ins), list(outs))
                strided = _has_strided((outs, ins))
                is_local = (outs, ins) in local
                res.count(mesh, strided, is_local)
                if verdict != "sound":
                    text = f"{s.describe()} on mesh {mesh}: row {row_text(list(outs), list(ins))}: {verdict}: {detail}"
                    if sound_rows is not None and any(
                            (tuple(o[m] for o in _split_each(outs, len(mesh))), tuple(i[m] for i in _split_each(ins, len(mesh))))
                            not in sound_rows for m in range(len(mesh))):
                        res.known_unsound += 1
                        res.known_unsound_rows.append(text)
                    else:
                        res.fail(mesh, text, strided, is_local)
    check_partial_reach(s, sim, res, meshes)
    if missing:
        try:
            find_missing(s, sim, res)
        except SampleError as e:
            res.notes.append(f"{s.id}: missing-row search: {e}"[:300])


def partial_inputs(s: Sample, mesh: list[int]) -> list[str] | None:
    """Every floating (or complex) tensor `P(sum)` on every mesh dim, the others Replicate; None
    without a floating tensor."""
    specs = []
    for t in s.tensors:
        dt = torch_dtype(t.get("dtype", "float32"))
        specs.append(("P(sum)" if (dt.is_floating_point or dt.is_complex) else "R") * len(mesh))
    return specs if any(c.startswith("P(") for c in specs) else None


def check_partial_reach(s: Sample, sim: SampleSim, res: OpResult, meshes: list[list[int]]) -> None:
    """R15's kind: with every floating input `P(sum)` and none sharded, a rule that fills its
    placeholders `shard_from_partial` offers the sharded rows (reached by reduce-scatter). Those
    rows of the table (up to MAX_2D_ROWS per mesh, evenly spaced) are simulated, counted in
    checked / failed and apart (`partial_checked`, `partial_failed`)."""
    for mesh in meshes:
        cur = partial_inputs(s, mesh)
        if cur is None:
            return
        try:
            t = table(s, mesh, cur)
        except ValueError as e:
            res.notes.append(f"{s.id} on mesh {mesh}: table with Partial inputs {cur} refused: {e}"[:300])
            continue
        if t.get("placeholder_fill") != "shard_from_partial":
            return
        rows = [r for r in (strategy_row(st) for st in t["strategies"]) if any("S(" in c for c in r[1])]
        if len(rows) > MAX_2D_ROWS:
            step = len(rows) / MAX_2D_ROWS
            rows = [rows[int(j * step)] for j in range(MAX_2D_ROWS)]
        for outs, ins in rows:
            verdict, detail = sim.check(mesh, list(ins), list(outs))
            res.count(mesh, _has_strided((outs, ins)))
            res.partial_checked += 1
            if verdict != "sound":
                res.partial_failed += 1
                res.fail(mesh, f"{s.describe()} on mesh {mesh}: row {row_text(list(outs), list(ins))} (reached from Partial inputs {cur}): "
                               f"{verdict}: {detail}", _has_strided((outs, ins)))
def _local_size_rows(s: Sample, mesh: list[int], t: dict, cur: list[str], n_in: int) -> set:
    """The full-mesh rows of table `t` (on `mesh`, current inputs `cur`) that use, on some mesh
    dim, a filled single-dim rule the same inputs' table on the 1-D mesh [mesh[0]] lacks: the view
    rows that only the local sizes left by earlier mesh dims call for."""
    if len(mesh) < 2:
        return set()
    cur1 = [_placements_text(c, len(mesh))[0] for c in cur]
    try:
        t1 = table(s, [mesh[0]], cur1)
    except ValueError:
        return set()
    plain = {tuple(r) for r in t1["rules"]}
    extra = {tuple(r) for r in t["rules"]} - plain
    if not extra:
        return set()
    found = set()
    for st in t["strategies"]:
        outs, ins = strategy_row(st)
        per = [_placements_text(sp, len(mesh)) for sp in outs + ins]
        if any(tuple(p[m] for p in per) in extra for m in range(len(mesh))):
            found.add((outs, ins))
    return found


def _has_strided(row: tuple[tuple[str, ...], tuple[str, ...]]) -> bool:
    """True when an output or input spec of the row holds a StridedShard."""
    return any("_S(" in c for c in row[0] + row[1])


def _split_each(specs: tuple[str, ...], n: int) -> list[list[str]]:
    out = []
    for sp in specs:
        out.append(_placements_text(sp, n))
    return out


def _placements_text(spec: str, n: int) -> list[str]:
    from dtensor_oracle import placement_str
    pl = parse_spec(spec)
    if len(pl) != n:
        return [spec] * n
    return [placement_str(p) for p in pl]


# ---------------------------------------------------------------------------------------
# missing rows (mesh [2])

def _candidates(shape, dtype, k: int, partial: bool) -> list[str]:
    c = ["R"] + [f"S({d})" for d, n in enumerate(shape) if n >= k]
    if partial and dtype in FLOAT_DTYPES:
        c += [f"P({r})" for r in REDUCE_OPS]
    return c


def _input_combos(options: list[list[str]], budget: int, seed: int) -> list[tuple[str, ...]]:
    total = math.prod(len(o) for o in options) if options else 0
    if total <= budget:
        return list(itertools.product(*options))
    picked: list[tuple[str, ...]] = []
    seen: set = set()

    def add(c):
        if c not in seen:
            seen.add(c)
            picked.append(c)

    n = len(options)
    # one operand away from Replicate
    for i in range(n):
        for p in options[i][1:]:
            add(tuple(p if j == i else "R" for j in range(n)))
    # every operand with the same placement where it has it
    for p in sorted({p for o in options for p in o}):
        add(tuple(p if p in options[j] else "R" for j in range(n)))
    rng = random.Random(seed)
    tries = 0
    while len(picked) < budget and tries < 20 * budget:
        tries += 1
        add(tuple(rng.choice(o) for o in options))
    if len(picked) > budget:
        rng.shuffle(picked)
        picked = picked[:budget]
    return picked


def find_missing(s: Sample, sim: SampleSim, res: OpResult, budget: int = MISSING_BUDGET,
                 present: set | None = None) -> None:
    """Adds to `res` the valid candidate rows on mesh [2] absent from ctshard's filled rules (or
    from `present`, rows as ((outs...), (ins...)), when given)."""
    mesh = [2]
    n_in = len(s.tensors)
    if n_in == 0 or s.no_missing or sim.shape_only:
        return
    g_in, g_out = sim.global_run(0)
    g_out1 = sim.global_run(1)[1] if TRIALS > 1 else g_out
    cur = current_inputs(s, mesh)
    try:
        t = table(s, mesh, cur)
    except ValueError:
        return
    if present is None:
        present = set(_filled_rows(t, n_in))
    width_out = len(next(iter(present))[0]) if present else len(g_out)
    if width_out != len(g_out):
        return
    in_opts = [_candidates(x.shape, x.dtype, 2, True) for x in g_in]
    out_opts = []
    for go, go1 in zip(g_out, g_out1):
        if isinstance(go, torch.Tensor) and not _same_value(go, go1):
            out_opts.append(_candidates(go.shape, go.dtype, 2, True))
        else:
            # not a tensor, or the same value whatever the inputs hold (zeros_like, fill, new_ones):
            # any layout of a constant is trivially right, only R is a statement
            out_opts.append(["R"])
    combos = _input_combos(in_opts, budget, _seed(s.id, "missing"))
    found: set = set()
    for ins in combos:
        if all(c == "R" for c in ins):
            continue
        valid_per_out: list[list[str]] | None = None
        if s.local_size_arg is not None:
            # the local size argument depends on the output spec: one run per output candidate
            ok = []
            for spec in out_opts[0]:
                good = True
                for trial in range(TRIALS):
                    try:
                        local = sim.run_local(trial, mesh, list(ins), spec)
                    except LocalError:
                        good = False
                        break
                    if sim.judge(trial, mesh, 0, spec, local):
                        good = False
                        break
                if good:
                    ok.append(spec)
            valid_per_out = [ok]
        else:
            valid_per_out = [list(o) for o in out_opts]
            for trial in range(TRIALS):
                try:
                    local = sim.run_local(trial, mesh, list(ins), None)
                except LocalError:
                    valid_per_out = None
                    break
                for k in range(len(g_out)):
                    valid_per_out[k] = [sp for sp in valid_per_out[k] if not sim.judge(trial, mesh, k, sp, local)]
        if not valid_per_out or any(not v for v in valid_per_out):
            continue
        # restatements: an output P(avg|max|min) where R is valid says only "equal on every rank",
        # and P(sum) valid with R valid says only "the value is 0"
        for k, v in enumerate(valid_per_out):
            if "R" in v:
                valid_per_out[k] = [sp for sp in v if not sp.startswith("P(")]
        for outs in itertools.product(*valid_per_out):
            row = (tuple(outs), tuple(ins))
            if row not in present:
                found.add(row)
    for row in sorted(found):
        res.missing += 1
        res.missing_rows.append(f"{s.describe()}: {row_text(list(row[0]), list(row[1]))}")


# ---------------------------------------------------------------------------------------
# the run

def run_op(op: str, samples: list[Sample], references: dict[str, Callable], family: str,
           meshes: list[list[int]] = MESHES, missing: bool = True, group_references: dict[str, Callable] | None = None) -> OpResult:
    res = OpResult(op=op, family=family)
    t0 = time.perf_counter()
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny tensors: intra-op threads only contend (restored below)
    try:
        _run_samples(samples, references, res, meshes, missing, group_references or {})
    finally:
        torch.set_num_threads(threads)
    res.seconds = time.perf_counter() - t0
    return res


def _run_samples(samples: list[Sample], references: dict[str, Callable], res: OpResult,
                 meshes: list[list[int]], missing: bool, group_references: dict[str, Callable]) -> None:
    with _conf_sim._QuietStderr():
        for s in samples:
            res.samples += 1
            try:
                sim = GroupSampleSim(s, group_references) if s.program_ranks > 0 else SampleSim(s, references)
            except (AttributeError, ValueError) as e:
                res.fail(None, f"{s.describe()}: no reference op: {type(e).__name__}: {e}"[:300])
                continue
            check_sample(s, sim, res, meshes, missing)


def group_key(s: Sample) -> str:
    """The unit a test is named after: the op, and for a higher-order op (auto_functionalized)
    also the op it wraps, so that a failure names the kernel."""
    if s.op.startswith("higher_order.") and s.args and isinstance(s.args[0], str) and not s.args[0].startswith("$"):
        return f"{s.op}[{s.args[0]}]"
    return s.op


class Suite:
    """Every sample module, grouped by op (`group_key`); `result(key)` simulates a group once and
    caches it."""

    def __init__(self, directory: Path = HERE):
        self.modules = load_sample_modules(directory)
        self.references: dict[str, Callable] = {}
        self.group_references: dict[str, Callable] = {}
        for m in self.modules:
            self.references.update(m.references)
            self.group_references.update(m.group_references)
        self.by_op: dict[str, list[Sample]] = {}
        self.by_key: dict[str, list[Sample]] = {}
        self.family_of: dict[str, str] = {}
        for m in self.modules:
            for s in m.samples:
                self.by_op.setdefault(s.op, []).append(s)
                self.by_key.setdefault(group_key(s), []).append(s)
                self.family_of.setdefault(group_key(s), m.family)
                self.family_of.setdefault(s.op, m.family)
        self._results: dict[str, OpResult] = {}

    def keys(self) -> list[str]:
        return list(self.by_key)

    def result(self, key: str, missing: bool = True) -> OpResult:
        if key not in self._results:
            family = self.family_of[key]
            r = run_op(key, self.by_key[key], self.references, family, FAMILY_MESHES.get(family, MESHES), missing, self.group_references)
            self._results[key] = r
        return self._results[key]

    def results(self) -> list[OpResult]:
        return list(self._results.values())


def coverage(suite: Suite) -> tuple[list[str], list[str]]:
    """(registered ops with neither samples nor a NOT_SIMULATED reason, sampled ops ctshard lacks)."""
    registered = ctshard.ops()["ops"]
    uncovered = [o for o in registered if o not in suite.by_op and o not in NOT_SIMULATED]
    unknown = [o for o in suite.by_op if o not in registered]
    return uncovered, unknown


def family_lines(results: list[OpResult]) -> list[str]:
    fams: dict[str, dict] = {}
    for r in results:
        f = fams.setdefault(r.family, {"checked": 0, "failed": 0, "missing": 0, "known": 0, "ops": 0, "strided": 0, "strided_failed": 0,
                                       "local": 0, "local_failed": 0})
        f["local"] += r.local_checked
        f["local_failed"] += r.local_failed
        f["strided"] += r.strided_checked
        f["strided_failed"] += r.strided_failed
        f["checked"] += r.checked
        f["failed"] += r.failed
        f["missing"] += r.missing
        f["known"] += r.known_unsound
        f["ops"] += 1
    lines = []
    for fam in sorted(fams):
        f = fams[fam]
        extra = f" (+{f['known']} known-unsound DTensor-fidelity rows failed)" if f["known"] else ""
        local = f"; local-size view rows checked {f['local']}, failed {f['local_failed']}" if f["local"] else ""
        lines.append(f"sim(py): {fam}: rows checked {f['checked']}, failed {f['failed']}, missing {f['missing']}{extra}; "
                     f"StridedShard rows checked {f['strided']}, failed {f['strided_failed']}{local}")
    return lines


def strided_line(results: list[OpResult]) -> str:
    """`sim(py): StridedShard rows checked N, failed F` over every op."""
    return (f"sim(py): StridedShard rows checked {sum(r.strided_checked for r in results)}, "
            f"failed {sum(r.strided_failed for r in results)}")


def partial_line(results: list[OpResult]) -> str:
    """`sim(py): rows reached from Partial-only inputs checked N, failed F` over every op (R15)."""
    return (f"sim(py): rows reached from Partial-only inputs checked {sum(r.partial_checked for r in results)}, "
            f"failed {sum(r.partial_failed for r in results)}")


def report(results: list[OpResult], suite: Suite, elapsed: float) -> dict:
    uncovered, unknown = coverage(suite)
    fams: dict[str, dict] = {}
    for r in results:
        f = fams.setdefault(r.family, {"ops": 0, "samples": 0, "checked": 0, "failed": 0, "missing": 0,
                                       "known_unsound": 0, "filtered": 0, "per_mesh": {}})
        for k in ("samples", "checked", "failed", "missing", "known_unsound", "filtered", "strided_checked", "strided_failed",
                  "partial_checked", "partial_failed", "local_checked", "local_failed"):
            f[k] = f.get(k, 0) + getattr(r, k)
        f["ops"] += 1
        for m, c in r.per_mesh.items():
            pm = f["per_mesh"].setdefault(m, {"checked": 0, "failed": 0})
            pm["checked"] += c["checked"]
            pm["failed"] += c["failed"]
    return {
        "meshes": MESHES, "family_meshes": FAMILY_MESHES, "trials": TRIALS, "max_2d_rows": MAX_2D_ROWS, "missing_budget": MISSING_BUDGET,
        "elapsed_s": round(elapsed, 2),
        "totals": {k: sum(getattr(r, k) for r in results)
                   for k in ("samples", "checked", "failed", "missing", "known_unsound", "filtered", "strided_checked", "strided_failed",
                             "partial_checked", "partial_failed", "local_checked", "local_failed")},
        "families": fams,
        "ops": {r.op: r.to_json() for r in results},
        "not_simulated": NOT_SIMULATED,
        "uncovered_ops": uncovered,
        "sampled_ops_without_rule": unknown,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--op", help="comma-separated op names (fnmatch globs)")
    ap.add_argument("--family", help="comma-separated families (samples_<family>.py)")
    ap.add_argument("--report", help="write the JSON report here")
    ap.add_argument("--no-missing", action="store_true", help="skip the missing-row search")
    ap.add_argument("--verbose", "-v", action="store_true", help="print failures, missing rows and notes")
    ap.add_argument("--coverage", action="store_true", help="only list registered ops without samples")
    a = ap.parse_args(argv)
    suite = Suite()
    if a.coverage:
        uncovered, unknown = coverage(suite)
        print(f"{len(suite.by_op)} ops sampled, {len(NOT_SIMULATED)} not simulated, {len(uncovered)} uncovered")
        for o in uncovered:
            print(f"  no samples: {o}")
        for o in unknown:
            print(f"  sampled but not registered: {o}")
        return 1 if uncovered else 0
    import fnmatch
    ops = suite.keys()
    if a.op:
        pats = a.op.split(",")
        ops = [o for o in ops if any(fnmatch.fnmatchcase(o, p) or fnmatch.fnmatchcase(o.split("[")[0], p) for p in pats)]
    if a.family:
        fams = set(a.family.split(","))
        ops = [o for o in ops if suite.family_of[o] in fams]
    t0 = time.perf_counter()
    for op in ops:
        r = suite.result(op, missing=not a.no_missing)
        if a.verbose or r.failed:
            print(f"{op}: samples {r.samples}, checked {r.checked}, failed {r.failed}, missing {r.missing}, "
                  f"known-unsound {r.known_unsound}, filtered {r.filtered} ({r.seconds:.2f} s)")
            for f in r.failures:
                print(f"  FAIL {f}")
        if a.verbose:
            for k in r.known_unsound_rows:
                print(f"  known-unsound {k}")
            for m in r.missing_rows[:MISSING_LISTED]:
                print(f"  missing {m}")
            for f in r.filtered_failing:
                print(f"  filtered (fails) {f}")
            for n in r.notes:
                print(f"  note {n}")
    elapsed = time.perf_counter() - t0
    results = suite.results()
    for line in family_lines(results):
        print(line)
    print(strided_line(results))
    print(partial_line(results))
    nops = len({r.op.split("[")[0] for r in results})
    print(f"sim(py): {nops} ops ({len(results)} groups: higher-order ops per wrapped op), "
          f"{sum(r.samples for r in results)} samples, {elapsed:.1f} s")
    if a.report:
        Path(a.report).write_text(json.dumps(report(results, suite, elapsed), indent=1))
    return 1 if any(r.failed for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
