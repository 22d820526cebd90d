"""Simulated mesh: is a strategy row (input specs -> output specs) sound for an op call?

`check_row(case, in_specs, out_specs)` builds global inputs for the case, lays each input out
on every rank of the mesh as its spec says, runs the op per rank on the local tensors, puts the
local outputs back together as the output specs say, and compares with the op on the global
inputs.

Layouts (DTensor's, mesh dims in order, default shard order):
* Shard(d) / _StridedShard(d, sf): the placement's own `_split_tensor` (torch.chunk semantics,
  empty trailing shards), applied to the local piece of the previous mesh dims.
* Replicate: a copy.
* Partial(sum): random parts (both signs) summing to the value; avg: parts whose mean is the
  value; max / min: the value on one random rank per element, smaller / larger values on the
  others (both signs, so a P(max) through log / sqrt meets out-of-domain parts, as it can in a
  real program).  Global inputs of log / sqrt / pow / reciprocal are positive.
  Partials of several mesh dims nest (mesh dim 0 outermost).
Reassembly reverses it: Partial mesh dims are reduced (innermost first), then every remaining
rank's piece is scattered to its global positions (an index tensor laid out with the same
placements gives them); positions covered twice (Replicate) must agree, every position must be
covered.

Non-tensor arguments are localised where DTensor localises them (view / reshape / expand /
new_* sizes: the local output shape of the output spec).  Ops whose values are undefined
(empty_like, new_empty) or random (native_dropout) compare shapes only.

Returns {"verdict": "sound" | "unsound" | "local_error" | "skipped", "detail": str}.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import torch

from dtensor_oracle import parse_spec, resolve_op, torch_dtype
from torch.distributed.tensor.placement_types import Partial, Replicate, Shard, _StridedShard

SHAPE_ONLY = {"aten.empty_like.default", "aten.new_empty.default", "aten.native_dropout.default",
              "aten.new_empty_strided.default", "aten.bernoulli.p", "aten.bernoulli_.float", "aten.bernoulli.default",
              "aten.rand_like.default", "aten.randn_like.default"}
SIZE_ARG_OPS = {  # op -> positional index of the size argument localised from the output shape
    "aten.view.default": 1, "aten.reshape.default": 1, "aten._unsafe_view.default": 1,
    "aten.expand.default": 1, "aten.new_empty.default": 1, "aten.new_zeros.default": 1,
    "aten.new_ones.default": 1, "aten.new_full.default": 1,
    "aten.as_strided.default": 1, "aten.new_empty_strided.default": 1,
    "aten.slice_backward.default": 1,
}
# ops whose DTensor propagation (a meta function) takes only bfloat16 but whose CPU kernel runs in
# float32: simulated in float32, so the Partial parts' rounding does not hide the verdict
SIMULATE_IN_FLOAT32 = {"aten._grouped_mm.default"}
POSITIVE_OPS = {"aten.log.default", "aten.log1p.default", "aten.sqrt.default", "aten.rsqrt.default",
                "aten.pow.Tensor_Scalar", "aten.pow.Tensor_Tensor", "aten.reciprocal.default",
                # batch norm: running / saved variances are positive
                "aten.native_batch_norm.default", "aten._native_batch_norm_legit.default",
                "aten._native_batch_norm_legit.no_stats", "aten._native_batch_norm_legit_no_training.default",
                "aten._native_batch_norm_legit_functional.default", "aten.native_batch_norm_backward.default"}
NOT_SIMULATED: set[str] = set()
# batch norm's CPU kernels do not check the per-channel vectors' lengths (they read out of bounds):
# a length other than the local channel count is a local error without running the kernel
CHANNEL_VECTOR_OPS = {"aten.native_batch_norm.default", "aten._native_batch_norm_legit.default",
                      "aten._native_batch_norm_legit.no_stats", "aten._native_batch_norm_legit_no_training.default",
                      "aten._native_batch_norm_legit_functional.default", "aten.native_batch_norm_backward.default"}
# kernels that divide by a local element count and die with SIGFPE (not an exception) on an empty
# local tensor: an empty local input is a local error without running the kernel.  The forward
# kernels do not die: in training mode they raise ("input tensor must have at least one element"),
# in eval mode they return the empty result, so they run.
EMPTY_LOCAL_KILLS = {"aten.native_batch_norm_backward.default"}


# ---------------------------------------------------------------------------------------
# SDPA: the fused kernels have no CPU implementation; the math (softmax(q k^T s + mask) v, its
# logsumexp, and autograd for the backward) stands in, per rank as globally.  Outputs that are
# not tensors of the math (seeds, offsets, cum_seq, max_q) are None and are not compared.

def _sdpa_math(q, k, v, bias=None, causal=False, scale=None):
    s = scale if scale is not None else 1.0 / math.sqrt(q.shape[-1])
    scores = (q.to(torch.float64) @ k.to(torch.float64).transpose(-1, -2)) * s
    if bias is not None:
        scores = scores + bias.to(torch.float64)
    if causal:
        m = torch.ones(q.shape[-2], k.shape[-2], dtype=torch.bool).tril()
        scores = scores.masked_fill(~m, float("-inf"))
    lse = torch.logsumexp(scores, -1)
    out = torch.softmax(scores, -1) @ v.to(torch.float64)
    return out.to(q.dtype), lse.to(q.dtype)


def _sdpa_grads(g, q, k, v, bias=None, causal=False, scale=None):
    q2, k2, v2 = (t.detach().clone().requires_grad_(True) for t in (q, k, v))
    out, _ = _sdpa_math(q2, k2, v2, bias, causal, scale)
    out.backward(g)
    return [q2.grad, k2.grad, v2.grad]


def _sdpa_impl(op_name: str):
    def flash(q, k, v, dropout_p=0.0, is_causal=False, return_debug_mask=False, *, scale=None):
        out, lse = _sdpa_math(q, k, v, None, is_causal, scale)
        return [out, lse] + [None] * 7

    def eff(q, k, v, bias, compute_lse, dropout_p=0.0, is_causal=False, *, scale=None):
        out, _ = _sdpa_math(q, k, v, bias, is_causal, scale)
        return [out, None, None, None]  # its logsumexp is padded to 32 rows: not compared

    def cudnn(q, k, v, bias, compute_lse, dropout_p=0.0, is_causal=False, return_debug_mask=False, *, scale=None):
        out, lse = _sdpa_math(q, k, v, bias, is_causal, scale)
        return [out, lse.unsqueeze(-1)] + [None] * 7

    def flash_bwd(g, q, k, v, out, lse, cq, ck, mq, mk, dropout_p, is_causal, seed, off, *, scale=None):
        return _sdpa_grads(g, q, k, v, None, is_causal, scale)

    def eff_bwd(g, q, k, v, bias, out, lse, seed, off, dropout_p, mask, is_causal=False, *, scale=None):
        return _sdpa_grads(g, q, k, v, bias, is_causal, scale) + [None]

    def cudnn_bwd(g, q, k, v, out, lse, seed, off, bias, cq, ck, mq, mk, dropout_p, is_causal, *, scale=None):
        return _sdpa_grads(g, q, k, v, bias, is_causal, scale)

    return {
        "aten._scaled_dot_product_flash_attention.default": flash,
        "aten._scaled_dot_product_efficient_attention.default": eff,
        "aten._scaled_dot_product_cudnn_attention.default": cudnn,
        "aten._scaled_dot_product_flash_attention_backward.default": flash_bwd,
        "aten._scaled_dot_product_efficient_attention_backward.default": eff_bwd,
        "aten._scaled_dot_product_cudnn_attention_backward.default": cudnn_bwd,
    }.get(op_name)


# ops without a CPU kernel whose aten decomposition (torch._decomp) stands in, per rank as globally
DECOMPOSED = {"aten._fused_rms_norm_backward.default"}


def _decomposed_impl(op_name: str):
    if op_name not in DECOMPOSED:
        return None
    from torch._decomp import decomposition_table

    return decomposition_table[resolve_op(op_name)]


# ---------------------------------------------------------------------------------------
# global inputs

def make_global_inputs(case: dict, gen: torch.Generator) -> list[torch.Tensor]:
    """Random global tensors; integer index tensors get values in range for the op."""
    op = case["op"]
    out = []
    positive = op in POSITIVE_OPS
    for i, t in enumerate(case["tensors"]):
        shape = t["shape"]
        dt = torch_dtype(t.get("dtype", "float32"))
        if op in SIMULATE_IN_FLOAT32 and dt == torch.bfloat16:
            dt = torch.float32
        if dt.is_floating_point:
            x = torch.randn(shape, generator=gen, dtype=torch.float64)
            if positive:
                x = x.abs() + 0.5
            out.append(x.to(dt))
        elif dt.is_complex:
            out.append(torch.randn(shape, generator=gen, dtype=torch.complex128).to(dt))
        elif dt == torch.bool:
            out.append(torch.rand(shape, generator=gen) < 0.5)
        elif dt in (torch.uint64,):
            out.append(torch.zeros(shape, dtype=dt))
        elif case["op"] == "aten._grouped_mm.default" and i == 2:
            # offs: increasing group ends over the grouped dim: M (a's dim 0) for 2d x 3d, N (b's
            # dim 1) for 3d x 2d, K (a's dim 1) for 2d x 2d; ending at the dim's size (the CPU
            # kernel leaves output rows / columns past the last offset unwritten)
            sa, sb = case["tensors"][0]["shape"], case["tensors"][1]["shape"]
            total = (sa[0] if len(sb) == 3 else sa[1]) if len(sa) == 2 else sb[1]
            # distinct cuts: no empty group (the CPU kernel leaves an empty group's output unwritten)
            cuts = sorted((torch.randperm(total - 1, generator=gen)[: shape[0] - 1] + 1).tolist()) + [total]
            out.append(torch.tensor(cuts, dtype=dt))
        else:
            hi = _index_bound(case, i)
            out.append(torch.randint(0, hi, shape, generator=gen, dtype=dt))
    return out


def _index_bound(case: dict, i: int) -> int:
    op = case["op"]
    ts = case["tensors"]
    if op == "aten.embedding.default" and i == 1:
        return ts[0]["shape"][0]
    if op == "aten.embedding_dense_backward.default" and i == 1:
        return case["args"][2]
    if op in ("aten.gather.default", "aten.scatter.src", "aten.scatter.value", "aten.scatter_add.default") and i == 1:
        shape = ts[0]["shape"]
        return max(1, shape[case["args"][1] % len(shape)]) if shape else 1
    if op in ("aten.nll_loss_forward.default", "aten.nll_loss_backward.default"):
        self_shape = ts[0 if op == "aten.nll_loss_forward.default" else 1]["shape"]
        return self_shape[1] if len(self_shape) >= 2 else self_shape[0]
    if op == "aten.max_pool2d_with_indices_backward.default" and i == 2:
        h, w = ts[1]["shape"][-2:]
        return h * w
    if op in ("aten.index.Tensor", "aten.index_put.default"):
        idxs = case["args"][1]
        for pos, a in enumerate(idxs):
            if a == f"${i}":
                return ts[0]["shape"][pos]
    return 7


# ---------------------------------------------------------------------------------------
# layout

class NoSuchLayout(ValueError):
    """A placement a tensor cannot have (Partial(max) of complex values): a row asking for it is
    unsound, not skipped."""


def _decompose(x: torch.Tensor, k: int, op: str, gen: torch.Generator, positive: bool) -> list[torch.Tensor]:
    if x.dtype.is_complex and op in ("max", "min"):
        raise NoSuchLayout(f"Partial({op}) of a complex tensor: complex values have no order")
    if x.dtype.is_complex and op in ("sum", "avg"):
        xc = x.to(torch.complex128)
        noise = torch.randn((k,) + tuple(x.shape), generator=gen, dtype=torch.complex128) * 2
        noise = noise - noise.mean(0)
        parts = [xc / k + noise[j] for j in range(k)]
        if op == "avg":
            parts = [p * k for p in parts]
        return [p.to(x.dtype) for p in parts]
    if not x.dtype.is_floating_point:
        raise ValueError("Partial of a non-floating tensor is not simulated")
    xd = x.to(torch.float64)
    if op in ("sum", "avg"):
        if positive:
            w = torch.rand((k,) + tuple(x.shape), generator=gen, dtype=torch.float64) + 0.1
            w = w / w.sum(0)
            parts = [xd * w[j] for j in range(k)]
        else:
            noise = torch.randn((k,) + tuple(x.shape), generator=gen, dtype=torch.float64) * 2
            noise = noise - noise.mean(0)
            parts = [xd / k + noise[j] for j in range(k)]
        if op == "avg":
            parts = [p * k for p in parts]
        return [p.to(x.dtype) for p in parts]
    if op == "product":
        mags = torch.rand((k,) + tuple(x.shape), generator=gen, dtype=torch.float64) + 0.5
        signs = torch.where(torch.rand((k,) + tuple(x.shape), generator=gen) < 0.5, -1.0, 1.0).to(torch.float64)
        parts = [mags[j] * signs[j] for j in range(k - 1)]
        rest = torch.ones_like(xd)
        for q in parts:
            rest = rest * q
        parts.append(xd / rest)
        return [p.to(x.dtype) for p in parts]
    if op in ("max", "min"):
        holder = torch.randint(0, k, tuple(x.shape), generator=gen)
        parts = []
        for j in range(k):
            mag = torch.rand(tuple(x.shape), generator=gen, dtype=torch.float64)
            if positive:
                other = xd * (0.2 + 0.7 * mag) if op == "max" else xd * (1.1 + mag)
            else:
                other = xd - (0.1 + 2 * mag) if op == "max" else xd + (0.1 + 2 * mag)
            parts.append(torch.where(holder == j, xd, other).to(x.dtype))
        return parts
    raise ValueError(f"Partial({op}) is not simulated")


def _shard(p, x: torch.Tensor, k: int) -> list[torch.Tensor]:
    pieces, _ = p._split_tensor(x, k, with_padding=False)
    pieces = list(pieces)
    while len(pieces) < k:  # torch.chunk may give fewer chunks
        shape = list(x.shape)
        shape[p.dim] = 0
        pieces.append(x.new_empty(shape))
    return [q.contiguous() for q in pieces]


def layout(x: torch.Tensor, mesh: list[int], placements, gen: torch.Generator | None,
           positive: bool = False) -> dict[tuple, torch.Tensor]:
    """coordinate tuple -> local tensor."""
    level = {(): x}
    for md, p in enumerate(placements):
        k = mesh[md]
        nxt = {}
        for coord, t in level.items():
            if isinstance(p, Replicate):
                parts = [t] * k
            elif isinstance(p, (Shard, _StridedShard)):
                if p.dim >= t.ndim:
                    raise ValueError(f"shard dim {p.dim} beyond rank {t.ndim}")
                parts = _shard(p, t, k)
            elif isinstance(p, Partial):
                parts = _decompose(t, k, p.reduce_op, gen, False)
            else:
                raise TypeError(p)
            for j in range(k):
                nxt[coord + (j,)] = parts[j]
        level = nxt
    return level


def _wide(dtype) -> torch.dtype:
    """The dtype reassembly computes in: complex128 for complex tensors, else float64."""
    return torch.complex128 if dtype.is_complex else torch.float64


def _reduce(ts: list[torch.Tensor], op: str) -> torch.Tensor:
    st = torch.stack([t.to(_wide(ts[0].dtype)) for t in ts])
    if op == "sum":
        r = st.sum(0)
    elif op == "avg":
        r = st.mean(0)
    elif op == "max":
        r = st.max(0).values
    elif op == "min":
        r = st.min(0).values
    elif op == "product":
        r = st.prod(0)
    else:
        raise ValueError(op)
    return r.to(ts[0].dtype)


def assemble(locals_: dict[tuple, torch.Tensor], global_shape, mesh: list[int], placements,
             dtype) -> tuple[torch.Tensor | None, str]:
    """Global tensor from per-rank local outputs, or (None, reason)."""
    n = len(mesh)
    cur = dict(locals_)
    # 1. reduce Partial mesh dims, innermost first
    for md in reversed(range(n)):
        p = placements[md]
        if not isinstance(p, Partial):
            continue
        groups: dict[tuple, list] = {}
        for coord, t in cur.items():
            key = coord[:md] + coord[md + 1:]
            groups.setdefault(key, []).append((coord[md], t))
        nxt = {}
        for key, items in groups.items():
            items.sort(key=lambda it: it[0])
            ts = [t for _, t in items]
            if any(t.shape != ts[0].shape for t in ts):
                return None, f"Partial mesh dim {md}: local shapes differ {[tuple(t.shape) for t in ts]}"
            if ts[0].dtype.is_complex and p.reduce_op in ("max", "min"):
                return None, f"Partial({p.reduce_op}) of a complex tensor: complex values have no order"
            r = _reduce(ts, p.reduce_op)
            for j, _ in items:
                nxt[key[:md] + (j,) + key[md:]] = r
        cur = nxt
    # 2. scatter by index maps (Partial dims laid out like Replicate)
    numel = math.prod(global_shape)
    idx_pl = [Replicate() if isinstance(p, Partial) else p for p in placements]
    idx = torch.arange(numel, dtype=torch.int64).reshape(tuple(global_shape))
    idx_local = layout(idx, mesh, idx_pl, None)
    out = torch.zeros(numel, dtype=_wide(dtype))
    seen = torch.zeros(numel, dtype=torch.bool)
    for coord, t in cur.items():
        ix = idx_local[coord]
        if tuple(t.shape) != tuple(ix.shape):
            return None, f"rank {coord}: local output shape {tuple(t.shape)} != expected {tuple(ix.shape)}"
        flat_ix = ix.reshape(-1)
        vals = t.reshape(-1).to(_wide(dtype))
        prev = seen[flat_ix]
        if prev.any():
            a = out[flat_ix][prev]
            b = vals[prev]
            tol = 1e-4 if dtype not in (torch.float16, torch.bfloat16) else 0.05
            if not torch.allclose(a, b, rtol=tol, atol=tol, equal_nan=True):
                return None, f"rank {coord}: replicated values differ across ranks"
        out[flat_ix] = vals
        seen[flat_ix] = True
    if not bool(seen.all()):
        return None, "not every output element is covered by a rank"
    return out.reshape(tuple(global_shape)), ""


# ---------------------------------------------------------------------------------------
# one row

def _local_shapes(global_shape, mesh, placements) -> dict[tuple, tuple[int, ...]]:
    idx = torch.zeros(tuple(global_shape), dtype=torch.int8)
    pl = [Replicate() if isinstance(p, Partial) else p for p in placements]
    return {c: tuple(t.shape) for c, t in layout(idx, mesh, pl, None).items()}


def _masked_embedding_fn(case: dict, in_specs: list, mesh: list[int]):
    """DTensor's row-wise embedding (_MaskPartial): with the weight sharded on dim 0 each rank
    looks up only the indices in its row range and writes zeros elsewhere; the output is a
    P(sum).  Returns a per-rank local op, or None when the weight is not row-sharded."""
    wspec = in_specs[0]
    if wspec is None:
        return None
    pl = parse_spec(wspec)
    if not any(isinstance(p, (Shard, _StridedShard)) and p.dim == 0 for p in pl):
        return None
    V = case["tensors"][0]["shape"][0]
    rows_pl = [p if isinstance(p, (Shard, _StridedShard)) and p.dim == 0 else Replicate() for p in pl]
    rows = layout(torch.arange(V).reshape(V, 1), mesh, rows_pl, None)

    def run(rank, w, idx, *rest, **kw):
        r = rows[rank].reshape(-1)
        pos = torch.full((V,), -1, dtype=torch.int64)
        pos[r] = torch.arange(r.numel())
        li = pos[idx]
        mask = li < 0
        if r.numel() == 0:
            return torch.zeros(tuple(idx.shape) + (w.shape[1],), dtype=w.dtype)
        out = torch.ops.aten.embedding.default(w, li.clamp(min=0), *rest, **kw)
        out[mask] = 0
        return out

    return run


def _masked_gather_fn(case: dict, in_specs: list, mesh: list[int]):
    """gather's row-wise rule with self sharded on the gather dim and the index whole (DTensor's
    _MaskPartial, ctshard's [P(sum), S(dim), R]): each rank gathers the indices in its block of
    that dim and writes zeros elsewhere; the output is a P(sum). Returns a per-rank local op, or
    None when self is not sharded on the gather dim."""
    sspec = in_specs[0]
    if sspec is None:
        return None
    shape = case["tensors"][0]["shape"]
    if not shape:
        return None
    dim = case["args"][1] % len(shape)
    pl = parse_spec(sspec)
    if not any(isinstance(p, (Shard, _StridedShard)) and p.dim == dim for p in pl):
        return None
    n = shape[dim]
    pos_pl = [Shard(0) if isinstance(p, Shard) and p.dim == dim else
              _StridedShard(0, split_factor=p.split_factor) if isinstance(p, _StridedShard) and p.dim == dim else Replicate()
              for p in pl]
    rows = layout(torch.arange(n), mesh, pos_pl, None)

    def run(rank, x, d, idx, *rest, **kw):
        r = rows[rank].reshape(-1)
        pos = torch.full((n,), -1, dtype=torch.int64)
        pos[r] = torch.arange(r.numel())
        li = pos[idx]
        mask = li < 0
        if r.numel() == 0:
            return torch.zeros(tuple(idx.shape), dtype=x.dtype)
        out = torch.ops.aten.gather.default(x, d, li.clamp(min=0), *rest, **kw)
        out[mask] = 0
        return out

    return run


def _conv_args(v: Any, tensors: list) -> Any:
    if isinstance(v, str):
        if v.startswith("$"):
            return tensors[int(v[1:])]
        if v.startswith("torch."):
            return getattr(torch, v[len("torch."):])
        return v
    if isinstance(v, list):
        return [_conv_args(x, tensors) for x in v]
    return v


def _outputs(res) -> list:
    if isinstance(res, torch.Tensor):
        return [res]
    if isinstance(res, (list, tuple)):
        return list(res)
    return [res]


def _as_list(out_specs) -> list:
    return out_specs if isinstance(out_specs, list) else [out_specs]


class _QuietStderr:
    """Silences C++ warnings (std() with too few degrees of freedom on a small local shard, ...)
    that torch prints straight to file descriptor 2."""

    def __enter__(self):
        import os
        import sys

        sys.stderr.flush()
        self._saved = os.dup(2)
        self._null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(self._null, 2)
        return self

    def __exit__(self, *exc):
        import os

        os.dup2(self._saved, 2)
        os.close(self._saved)
        os.close(self._null)
        return False


def check_row(case: dict, in_specs: list[str | None], out_specs, trials: int = 2, seed: int = 0) -> dict:
    with _QuietStderr():
        return _check_row(case, in_specs, out_specs, trials, seed)


def _check_row(case: dict, in_specs: list[str | None], out_specs, trials: int = 2, seed: int = 0) -> dict:
    op_name = case["op"]
    if op_name in NOT_SIMULATED:
        return {"verdict": "skipped", "detail": "op not simulated on CPU"}
    op = _sdpa_impl(op_name) or _decomposed_impl(op_name) or resolve_op(op_name)
    mesh = case["mesh"]
    ranks = list(itertools.product(*[range(m) for m in mesh]))
    positive = op_name in POSITIVE_OPS
    outs_spec = _as_list(out_specs)
    for trial in range(trials):
        gen = torch.Generator().manual_seed(1000 * seed + trial + 1)
        g_in = make_global_inputs(case, gen)
        args = _conv_args(case.get("args", []), g_in)
        kwargs = {k: _conv_args(v, g_in) for k, v in case.get("kwargs", {}).items()}
        try:
            g_out = _outputs(op(*args, **kwargs))
        except Exception as e:  # noqa: BLE001
            return {"verdict": "skipped", "detail": f"global op failed: {type(e).__name__}: {e}"[:300]}
        # local inputs
        per_in = []
        for t, s in zip(g_in, in_specs):
            if s is None:
                per_in.append({r: t for r in ranks})
                continue
            try:
                per_in.append(layout(t, mesh, parse_spec(s), gen, positive))
            except NoSuchLayout as e:
                return {"verdict": "unsound", "detail": str(e)}
            except ValueError as e:
                return {"verdict": "skipped", "detail": str(e)}
        # localised size args
        size_idx = SIZE_ARG_OPS.get(op_name)
        special = (_masked_embedding_fn(case, in_specs, mesh) if op_name == "aten.embedding.default" else
                   _masked_gather_fn(case, in_specs, mesh) if op_name == "aten.gather.default" else None)
        local_out = {}
        for r in ranks:
            l_in = [per_in[i][r] for i in range(len(g_in))]
            largs = _conv_args(case.get("args", []), l_in)
            lkw = {k: _conv_args(v, l_in) for k, v in case.get("kwargs", {}).items()}
            if size_idx is not None and outs_spec[0] is not None:
                shapes = _local_shapes(g_out[0].shape, mesh, parse_spec(outs_spec[0]))
                largs[size_idx] = list(shapes[r])
            if op_name.startswith("aten.squeeze."):
                # DTensor rewrites squeeze to squeeze.dims over the *globally* size-1 dims, so a
                # sharded dim whose local size is 1 is not squeezed
                gshape = g_in[0].shape
                if op_name == "aten.squeeze.default":
                    dims = [i for i, n in enumerate(gshape) if n == 1]
                else:
                    raw = case["args"][1]
                    raw = raw if isinstance(raw, list) else [raw]
                    dims = [d % len(gshape) for d in raw if gshape[d % len(gshape)] == 1] if len(gshape) else []
                largs = [largs[0], dims]
                local_call = torch.ops.aten.squeeze.dims
            else:
                local_call = op
            if op_name in EMPTY_LOCAL_KILLS:
                if any(isinstance(t, torch.Tensor) and t.numel() == 0 for t in l_in):
                    return {"verdict": "local_error", "detail": f"rank {r}: an empty local tensor (the kernel divides by its element count)"}
            if op_name in CHANNEL_VECTOR_OPS:
                # the CPU kernel does not check the per-channel vectors' lengths (it reads out of
                # bounds): a length other than the local channel count is a local error
                x = l_in[1] if op_name == "aten.native_batch_norm_backward.default" else l_in[0]
                bad = [tuple(t.shape) for t in l_in if isinstance(t, torch.Tensor) and t.dim() == 1 and t.shape[0] != x.shape[1]]
                if bad:
                    return {"verdict": "local_error",
                            "detail": f"rank {r}: per-channel vectors {bad} for {x.shape[1]} local channels"}
            try:
                if special is not None:
                    local_out[r] = _outputs(special(r, *largs, **lkw))
                else:
                    local_out[r] = _outputs(local_call(*largs, **lkw))
            except Exception as e:  # noqa: BLE001
                return {"verdict": "local_error", "detail": f"rank {r}: {type(e).__name__}: {e}"[:300]}
        # reassemble each tensor output
        if len(outs_spec) != len(g_out):
            if len(outs_spec) == 1 and len(g_out) > 1:
                outs_spec = outs_spec * len(g_out)
        for k, (go, spec) in enumerate(zip(g_out, outs_spec)):
            if spec is None or not isinstance(go, torch.Tensor):
                continue
            if go.numel() == 0:
                continue
            pl = parse_spec(spec)
            bad_dim = [p.dim for p in pl if isinstance(p, (Shard, _StridedShard)) and p.dim >= go.ndim]
            if bad_dim:
                return {"verdict": "unsound", "detail": f"output {k} ({spec}): shards dim {bad_dim[0]} of a {go.ndim}-d output"}
            locs = {r: local_out[r][k] for r in ranks}
            if op_name in SHAPE_ONLY:
                shapes = _local_shapes(go.shape, mesh, pl)
                bad = [r for r in ranks if tuple(locs[r].shape) != shapes[r]]
                if bad:
                    return {"verdict": "unsound", "detail": f"output {k}: rank {bad[0]} local shape {tuple(locs[bad[0]].shape)} != {shapes[bad[0]]}"}
                continue
            if any(isinstance(p, Partial) for p in pl) and not go.dtype.is_floating_point:
                # a partial of integers/bools: reduce in float and compare
                pass
            got, why = assemble(locs, list(go.shape), mesh, pl, go.dtype)
            if got is None:
                return {"verdict": "unsound", "detail": f"output {k} ({spec}): {why}"}
            ref = go.to(_wide(go.dtype))
            tol = 1e-4 if go.dtype not in (torch.float16, torch.bfloat16) else 0.05
            if not torch.allclose(got, ref, rtol=tol, atol=tol, equal_nan=True):
                nan_bad = int((got.isnan() != ref.isnan()).sum())
                err = (got - ref).abs().nan_to_num(0).max().item()
                what = f"{nan_bad} NaN where the global result has none" if nan_bad and err == 0 else f"max abs err {err:.3g}"
                return {"verdict": "unsound", "detail": f"output {k} ({spec}): values differ ({what})"}
    return {"verdict": "sound", "detail": f"{trials} trials"}


def _split_specs(text: str) -> list[str]:
    """'S(0)R, _S(1, 2)R, None' -> ['S(0)R', '_S(1, 2)R', 'None'] (commas inside parentheses kept)."""
    out, depth, cur = [], 0, ""
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        out.append(cur.strip())
    return out


def check_text_row(case: dict, row_text: str) -> dict:
    """check_row for a row written as compare.row_text: '(in1, in2) -> out' or '-> o1, o2'."""
    ins_t, out_t = row_text.split(") -> ")
    ins = _split_specs(ins_t[1:] if ins_t.startswith("(") else ins_t)
    from compare import normalize_spec

    ins = [None if "None" in s else normalize_spec(s, True) for s in ins]
    outs = _split_specs(out_t)
    outs = [None if "None" in s else normalize_spec(s, False) for s in outs]
    return check_row(case, ins, outs if len(outs) > 1 else outs[0])


if __name__ == "__main__":
    c = {"op": "aten.mm.default", "mesh": [2, 2],
         "tensors": [{"shape": [6, 5], "spec": "S(0)R"}, {"shape": [5, 4], "spec": "RS(1)"}],
         "args": ["$0", "$1"], "kwargs": {}}
    print(check_row(c, ["S(0)R", "RS(1)"], "S(0)S(1)"))
    print(check_row(c, ["S(1)R", "S(0)R"], "P(sum)R"))
    print(check_row(c, ["S(1)R", "RR"], "P(sum)R"))
    c2 = {"op": "aten.mul.Tensor", "mesh": [2],
          "tensors": [{"shape": [3, 4], "spec": "R"}, {"shape": [3, 4], "spec": "R"}],
          "args": ["$0", "$1"], "kwargs": {}}
    print(check_row(c2, ["P(sum)", "P(sum)"], "P(sum)"))
    print(check_row(c2, ["P(sum)", "R"], "P(sum)"))
    print(check_row(c2, ["P(max)", "R"], "P(max)"))


def annotate(rec: dict, case: dict, max_rows: int = 4) -> None:
    """Adds simulation verdicts to a compare.compare_case record (in place): for row differences
    `sim: [{row, verdict, detail}]` on the first max_rows rows; for choice differences
    `sim: {dtensor: verdict, ctshard: verdict}`."""
    for d in rec["differences"]:
        k = d["kind"]
        try:
            if k in ("rows_missing_in_ctshard", "rows_extra_in_ctshard"):
                d["sim"] = []
                for row in d["rows"][:max_rows]:
                    v = check_text_row(case, row)
                    d["sim"].append({"row": row, "verdict": v["verdict"], "detail": v["detail"]})
            elif k == "dtensor_error" and rec.get("ctshard_choice"):
                # DTensor refused; is ctshard's answer sound?
                from compare import row_text

                b = check_text_row(case, row_text(rec["ctshard_choice"]))
                d["sim"] = {"ctshard": b["verdict"], "ctshard_detail": b["detail"]}
            elif k in ("choice_out", "choice_in"):
                a = check_text_row(case, d["dtensor"])
                b = check_text_row(case, d["ctshard"])
                d["sim"] = {"dtensor": a["verdict"], "dtensor_detail": a["detail"],
                            "ctshard": b["verdict"], "ctshard_detail": b["detail"]}
        except Exception as e:  # noqa: BLE001
            d["sim_error"] = f"{type(e).__name__}: {e}"[:300]
