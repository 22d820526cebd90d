"""Deterministic case generators, one small generator per op family.

A case (format in dtensor_oracle.py) is a JSON-able dict:
    {"id": "aten.mm.default#3", "op": ..., "family": ..., "mesh": [2, 2],
     "tensors": [{"shape": [...], "dtype": "float32", "spec": "S(0)R"}, ...],
     "args": [...], "kwargs": {...}}

`generate(op, n, seed)` gives n cases of one op, cycling the meshes 4, 2x2, 2x4, 2x2x2.
Shapes are small (<= 12 per dim, <= 4 dims) with uneven and size-1 dims; every mesh dim's
placement of an input is drawn from R, S(d) for the tensor's dims, P(sum|avg|max|min) (Partial
only on floating tensors, as real graphs never carry partial indices or masks).
"""

from __future__ import annotations

import math
import random
import zlib
from typing import Callable

MESHES: list[list[int]] = [[4], [2, 2], [2, 4], [2, 2, 2]]
REDUCE_OPS = ("sum", "avg", "max", "min")
FLOAT_DTYPES = {"float32", "float64", "float16", "bfloat16"}

# sizes: even, uneven on 2 and 4 (3, 5, 6, 7), size 1
SIZE_POOL = [1, 2, 3, 4, 5, 6, 7, 8, 12]
SIZE_WEIGHTS = [10, 10, 10, 12, 8, 12, 6, 12, 8]


class Builder:
    """Collects the tensors of one call; returns their "$i" refs."""

    def __init__(self, rng: random.Random):
        self.rng = rng
        self.tensors: list[dict] = []

    def t(self, shape, dtype: str = "float32", partial: bool | None = None, like: str | None = None) -> str:
        """A tensor input. `like`: a ref whose spec this tensor copies when compatible (drawn with
        some probability), so matched layouts (the common case in graphs) appear often."""
        if partial is None:
            partial = dtype in FLOAT_DTYPES
        self.tensors.append({"shape": [int(s) for s in shape], "dtype": dtype, "partial": partial,
                             "like": like})
        return f"${len(self.tensors) - 1}"

    # -- sizes
    def size(self, lo: int = 1, hi: int = 12) -> int:
        choices = [(s, w) for s, w in zip(SIZE_POOL, SIZE_WEIGHTS) if lo <= s <= hi]
        return self.rng.choices([c[0] for c in choices], [c[1] for c in choices])[0]

    def shape(self, rank: int | None = None, lo_rank: int = 1, hi_rank: int = 4, lo: int = 1, hi: int = 12) -> list[int]:
        if rank is None:
            rank = self.rng.randint(lo_rank, hi_rank)
        return [self.size(lo, hi) for _ in range(rank)]

    def dim(self, rank: int, negative_ok: bool = True) -> int:
        d = self.rng.randrange(rank)
        if negative_ok and self.rng.random() < 0.3:
            d -= rank
        return d

    def dims(self, rank: int, lo: int = 1, hi: int | None = None, negative_ok: bool = True) -> list[int]:
        hi = rank if hi is None else min(hi, rank)
        k = self.rng.randint(lo, hi)
        ds = sorted(self.rng.sample(range(rank), k))
        return [d - rank if negative_ok and self.rng.random() < 0.3 else d for d in ds]

    def chance(self, p: float) -> bool:
        return self.rng.random() < p

    def pick(self, xs):
        return self.rng.choice(list(xs))


# ---------------------------------------------------------------------------------------
# placements

def draw_placement(rng: random.Random, rank: int, partial: bool) -> str:
    kinds = ["R", "S"] + (["P"] if partial else [])
    weights = [30, 45] + ([25] if partial else [])
    if rank == 0:
        kinds, weights = ["R"] + (["P"] if partial else []), [70] + ([30] if partial else [])
    k = rng.choices(kinds, weights)[0]
    if k == "R":
        return "R"
    if k == "S":
        return f"S({rng.randrange(rank)})"
    return f"P({rng.choice(REDUCE_OPS)})"


def draw_spec(rng: random.Random, rank: int, mesh: list[int], partial: bool) -> str:
    pls = [draw_placement(rng, rank, partial) for _ in mesh]
    # several Partial mesh dims: usually one reduce op (P(sum)P(sum) is what programs make);
    # mixed kinds stay possible but rarer
    ps = [i for i, p in enumerate(pls) if p.startswith("P(")]
    if len(ps) > 1 and rng.random() < 0.7:
        for i in ps[1:]:
            pls[i] = pls[ps[0]]
    return "".join(pls)


def _spec_ok(spec: str, rank: int, partial: bool) -> bool:
    import re
    for m in re.finditer(r"S\((\d+)\)", spec):
        if int(m.group(1)) >= rank:
            return False
    if not partial and "P(" in spec:
        return False
    return True


def assign_specs(rng: random.Random, tensors: list[dict], mesh: list[int]) -> list[dict]:
    out = []
    for i, t in enumerate(tensors):
        rank = len(t["shape"])
        spec = None
        like = t.get("like")
        if like is not None and rng.random() < 0.4:
            cand = out[int(like[1:])]["spec"]
            if _spec_ok(cand, rank, t["partial"]):
                spec = cand
        if spec is None:
            spec = draw_spec(rng, rank, mesh, t["partial"])
        out.append({"shape": t["shape"], "dtype": t["dtype"], "spec": spec})
    return out


# ---------------------------------------------------------------------------------------
# helpers for shapes

def broadcast_variant(b: Builder, common: list[int], allow_scalar: bool = True) -> list[int]:
    """A shape that broadcasts to `common`: itself, a suffix, some dims set to 1, or 0-d."""
    r = b.rng.random()
    if allow_scalar and r < 0.08:
        return []
    if r < 0.45:
        return list(common)
    if r < 0.7 and len(common) > 1:
        k = b.rng.randint(1, len(common) - 1)
        return list(common[k:])
    s = list(common)
    for i in range(len(s)):
        if b.chance(0.4):
            s[i] = 1
    return s


def prod(xs) -> int:
    return math.prod(xs)


def factor_pairs(n: int) -> list[tuple[int, int]]:
    return [(a, n // a) for a in range(2, n) if n % a == 0]


def view_target(b: Builder, shape: list[int]) -> list[int]:
    """A view/reshape target: merge adjacent dims, split dims, insert/drop 1s, maybe a -1."""
    s = list(shape)
    for _ in range(b.rng.randint(1, 3)):
        op = b.rng.random()
        if op < 0.35 and len(s) >= 2:
            i = b.rng.randrange(len(s) - 1)
            s[i:i + 2] = [s[i] * s[i + 1]]
        elif op < 0.7:
            cands = [i for i, x in enumerate(s) if factor_pairs(x)]
            if cands and len(s) < 5:
                i = b.pick(cands)
                a, c = b.pick(factor_pairs(s[i]))
                s[i:i + 1] = [a, c]
        elif op < 0.85 and len(s) < 5:
            s.insert(b.rng.randrange(len(s) + 1), 1)
        else:
            ones = [i for i, x in enumerate(s) if x == 1]
            if ones and len(s) > 1:
                del s[b.pick(ones)]
    if not s:
        s = [1]
    if s == list(shape) and len(s) >= 2:
        s[0:2] = [s[0] * s[1]]
    if b.chance(0.2):
        s[b.rng.randrange(len(s))] = -1
    return s


# ---------------------------------------------------------------------------------------
# op lists per family

UNARY_FLOAT = [
    "aten.abs.default", "aten.ceil.default", "aten.cos.default", "aten.erf.default",
    "aten.erfc.default", "aten.exp.default", "aten.expm1.default", "aten.floor.default",
    "aten.log.default", "aten.log1p.default", "aten.neg.default", "aten.positive.default",
    "aten.reciprocal.default", "aten.relu.default", "aten.rsqrt.default", "aten.sigmoid.default",
    "aten.sign.default", "aten.silu.default", "aten.sin.default", "aten.sqrt.default",
    "aten.square.default", "aten.tanh.default", "aten.gelu.default", "aten.isnan.default",
    "aten.logical_not.default",
]
UNARY_INT = ["aten.bitwise_not.default"]
SCALAR_BINARY = [
    "aten.add.Scalar", "aten.sub.Scalar", "aten.rsub.Scalar", "aten.mul.Scalar", "aten.div.Scalar",
    "aten.pow.Tensor_Scalar", "aten.eq.Scalar", "aten.ne.Scalar", "aten.lt.Scalar",
    "aten.le.Scalar", "aten.gt.Scalar", "aten.ge.Scalar", "aten.clamp_min.default", "aten.clamp_max.default",
]
BINARY = [
    "aten.add.Tensor", "aten.sub.Tensor", "aten.mul.Tensor", "aten.div.Tensor", "aten.atan2.default",
    "aten.clamp_max.Tensor", "aten.clamp_min.Tensor", "aten.eq.Tensor", "aten.ne.Tensor",
    "aten.lt.Tensor", "aten.le.Tensor", "aten.gt.Tensor", "aten.ge.Tensor", "aten.fmax.default",
    "aten.fmin.default", "aten.logaddexp.default", "aten.maximum.default", "aten.minimum.default",
    "aten.pow.Tensor_Tensor", "aten.logical_and.default", "aten.logical_or.default",
    "aten.bitwise_and.Tensor", "aten.bitwise_or.Tensor", "aten.bitwise_xor.Tensor",
    "aten.gelu_backward.default", "aten.sigmoid_backward.default", "aten.tanh_backward.default",
    "aten.threshold_backward.default", "aten.masked_fill.Scalar",
    "aten.native_dropout_backward.default", "aten.silu_backward.default",
]
TERNARY = ["aten.addcdiv.default", "aten.addcmul.default", "aten.lerp.Tensor", "aten.where.self"]


def gen_unary(b: Builder, op: str):
    shape = b.shape(lo_rank=0 if b.chance(0.05) else 1)
    if op in UNARY_INT:
        x = b.t(shape, b.pick(["int64", "bool"]))
    elif op == "aten.logical_not.default" and b.chance(0.5):
        x = b.t(shape, "bool")
    else:
        x = b.t(shape)
    kwargs = {}
    if op == "aten.gelu.default" and b.chance(0.5):
        kwargs["approximate"] = "tanh"
    return [x], kwargs


def gen_scalar_binary(b: Builder, op: str):
    x = b.t(b.shape())
    other = b.pick([2, 0.5, -1.5, 3]) if op != "aten.pow.Tensor_Scalar" else b.pick([2, 3, 0.5, -1])
    args = [x, other]
    if op in ("aten.add.Scalar", "aten.sub.Scalar", "aten.rsub.Scalar") and b.chance(0.4):
        args.append(b.pick([2, -1, 0.5]))
    return args, {}


def gen_binary(b: Builder, op: str):
    common = b.shape()
    if b.chance(0.7):
        s0 = list(common)
        s1 = broadcast_variant(b, common)
    else:
        s0 = broadcast_variant(b, common, allow_scalar=False)
        s1 = list(common)
    dt = "float32"
    if op.startswith("aten.bitwise_"):
        dt = b.pick(["int64", "int32"])
    if op in ("aten.logical_and.default", "aten.logical_or.default") and b.chance(0.5):
        dt = "bool"
    if op == "aten.masked_fill.Scalar":
        x = b.t(s0)
        m = b.t(s1, "bool", like=x)
        return [x, m, b.pick([0.0, -1e9, 1.0])], {}
    if op == "aten.native_dropout_backward.default":
        g = b.t(common)
        m = b.t(common, "bool", like=g)
        return [g, m, b.pick([1.25, 2.0])], {}
    if op in ("aten.gelu_backward.default", "aten.sigmoid_backward.default", "aten.tanh_backward.default",
              "aten.threshold_backward.default", "aten.silu_backward.default"):
        g = b.t(common)
        x = b.t(common, like=g)
        args = [g, x]
        kwargs = {}
        if op == "aten.threshold_backward.default":
            args.append(0)
        if op == "aten.gelu_backward.default" and b.chance(0.4):
            kwargs["approximate"] = "tanh"
        return args, kwargs
    x = b.t(s0, dt)
    y = b.t(s1, dt, like=x)
    kwargs = {}
    if op in ("aten.add.Tensor", "aten.sub.Tensor") and b.chance(0.3):
        kwargs["alpha"] = b.pick([2, -1, 0.5])
    return [x, y], kwargs


def gen_ternary(b: Builder, op: str):
    common = b.shape()
    shapes = [list(common), broadcast_variant(b, common), broadcast_variant(b, common)]
    b.rng.shuffle(shapes)
    if op == "aten.where.self":
        c = b.t(shapes[0], "bool")
        x = b.t(shapes[1], like=c)
        y = b.t(shapes[2], like=x)
        return [c, x, y], {}
    x = b.t(shapes[0])
    y = b.t(shapes[1], like=x)
    z = b.t(shapes[2], like=x)
    kwargs = {}
    if op in ("aten.addcdiv.default", "aten.addcmul.default") and b.chance(0.4):
        kwargs["value"] = b.pick([0.5, -2])
    return [x, y, z], kwargs


# -- einsum family

def gen_einsum(b: Builder, op: str):
    m, k, n, bb = b.size(), b.size(), b.size(), b.size()
    if op == "aten.mm.default":
        x = b.t([m, k])
        return [x, b.t([k, n])], {}
    if op == "aten.dot.default":
        x = b.t([k])
        return [x, b.t([k], like=x)], {}
    if op == "aten.bmm.default":
        x = b.t([bb, m, k])
        return [x, b.t([bb, k, n])], {}
    if op == "aten.addmm.default":
        bias = b.pick([[m, n], [n], [1, n], [m, 1], [n], [n]])
        s = b.t(bias)
        x = b.t([m, k])
        y = b.t([k, n])
        kw = {}
        if b.chance(0.25):
            kw = {"beta": b.pick([0.5, 1]), "alpha": b.pick([1, 2])}
        return [s, x, y], kw
    if op == "aten.baddbmm.default":
        bias = b.pick([[bb, m, n], [m, n], [n], [1, m, n], [bb, 1, n]])
        s = b.t(bias)
        x = b.t([bb, m, k])
        y = b.t([bb, k, n])
        kw = {}
        if b.chance(0.25):
            kw = {"beta": b.pick([0.5, 1]), "alpha": b.pick([1, 2])}
        return [s, x, y], kw
    raise KeyError(op)


# -- reductions

def gen_reduction(b: Builder, op: str):
    shape = b.shape(lo_rank=1, hi_rank=4)
    r = len(shape)
    x = b.t(shape)
    if op in ("aten.sum.default", "aten.mean.default", "aten.max.default", "aten.min.default"):
        return [x], {}
    if op in ("aten.sum.dim_IntList", "aten.mean.dim"):
        u = b.rng.random()
        dims = None if u < 0.07 else [] if u < 0.12 else b.dims(r)
        args = [x, dims]
        if b.chance(0.5):
            args.append(b.chance(0.5))
        return args, {}
    if op in ("aten.amax.default", "aten.amin.default", "aten.logsumexp.default"):
        dims = b.dims(r)
        args = [x, dims]
        if b.chance(0.2):
            return args, {"keepdim": b.chance(0.5)}  # keyword form (eager code); graphs pass it positionally
        if b.chance(0.6):
            args.append(b.chance(0.5))
        return args, {}
    if op in ("aten.argmax.default", "aten.argmin.default"):
        if b.chance(0.2):
            return [x], {}
        args = [x, b.dim(r)]
        if b.chance(0.6):
            args.append(b.chance(0.5))
        return args, {}
    if op in ("aten.max.dim", "aten.min.dim"):
        args = [x, b.dim(r)]
        if b.chance(0.6):
            args.append(b.chance(0.5))
        return args, {}
    if op in ("aten.var.correction", "aten.std.correction", "aten.var_mean.correction"):
        dims = None if b.chance(0.15) else b.dims(r)
        kw = {}
        if b.chance(0.8):
            kw["correction"] = b.pick([0, 1])
        if b.chance(0.6):
            kw["keepdim"] = b.chance(0.5)
        return [x, dims], kw
    raise KeyError(op)


# -- softmax

def gen_softmax(b: Builder, op: str):
    shape = b.shape(lo_rank=1, hi_rank=4)
    r = len(shape)
    d = b.dim(r)
    if op in ("aten._softmax.default", "aten._log_softmax.default"):
        return [b.t(shape), d, False], {}
    if op == "aten._safe_softmax.default":
        return [b.t(shape), d], {}
    g = b.t(shape)
    o = b.t(shape, like=g)
    return [g, o, d, "torch.float32"], {}


# -- layer norm

def gen_layer_norm(b: Builder, op: str):
    shape = b.shape(lo_rank=2, hi_rank=4)
    k = b.rng.randint(1, min(2, len(shape) - 1)) if len(shape) > 1 else 1
    norm = shape[-k:]
    stat_shape = shape[:-k] + [1] * k
    has_w = b.chance(0.75)
    has_b = has_w and b.chance(0.8)
    if op == "aten.native_layer_norm.default":
        x = b.t(shape)
        w = b.t(norm) if has_w else None
        bi = b.t(norm) if has_b else None
        return [x, norm, w, bi, 1e-5], {}
    g = b.t(shape)
    x = b.t(shape, like=g)
    mean = b.t(stat_shape, like=x)
    rstd = b.t(stat_shape, like=mean)
    w = b.t(norm) if has_w else None
    bi = b.t(norm) if has_b else None
    mask = [True, has_w, has_b] if b.chance(0.8) else [True, False, False]
    return [g, x, norm, mean, rstd, w, bi, mask], {}


# -- views

def gen_view(b: Builder, op: str):
    if op in ("aten.view.default", "aten._unsafe_view.default", "aten.reshape.default"):
        shape = b.shape(lo_rank=1, hi_rank=4)
        return [b.t(shape), view_target(b, shape)], {}
    if op == "aten.repeat.default":
        shape = b.shape(lo_rank=1, hi_rank=3)
        reps = [b.pick([1, 1, 2, 3]) for _ in shape]
        if b.chance(0.3):
            reps = [b.pick([1, 2])] + reps
        return [b.t(shape), reps], {}
    if op == "aten.expand.default":
        shape = b.shape(lo_rank=1, hi_rank=3)
        shape = [1 if b.chance(0.4) else s for s in shape]
        tgt = [b.size(2, 8) if s == 1 and b.chance(0.7) else (-1 if b.chance(0.3) else s) for s in shape]
        if b.chance(0.4):
            tgt = [b.size(1, 6)] + tgt
        return [b.t(shape), tgt], {}
    if op == "aten.permute.default":
        shape = b.shape(lo_rank=1, hi_rank=4)
        perm = list(range(len(shape)))
        b.rng.shuffle(perm)
        perm = [p - len(shape) if b.chance(0.2) else p for p in perm]
        return [b.t(shape), perm], {}
    if op == "aten.transpose.int":
        shape = b.shape(lo_rank=2, hi_rank=4)
        d0, d1 = b.dim(len(shape)), b.dim(len(shape))
        return [b.t(shape), d0, d1], {}
    if op == "aten.t.default":
        shape = b.shape(lo_rank=1, hi_rank=2)
        return [b.t(shape)], {}
    if op.startswith("aten.squeeze."):
        shape = b.shape(lo_rank=1, hi_rank=4)
        for i in range(len(shape)):
            if b.chance(0.35):
                shape[i] = 1
        if 1 not in shape and b.chance(0.7):
            shape[b.rng.randrange(len(shape))] = 1
        x = b.t(shape)
        r = len(shape)
        if op == "aten.squeeze.default":
            return [x], {}
        if op == "aten.squeeze.dim":
            ones = [i for i, s in enumerate(shape) if s == 1]
            d = b.pick(ones) if ones and b.chance(0.75) else b.rng.randrange(r)
            return [x, d - r if b.chance(0.3) else d], {}
        ds = [i for i in range(r) if (shape[i] == 1 and b.chance(0.8)) or b.chance(0.15)] or [0]
        return [x, [d - r if b.chance(0.2) else d for d in ds]], {}
    if op == "aten.unsqueeze.default":
        shape = b.shape(lo_rank=0 if b.chance(0.05) else 1, hi_rank=3)
        r = len(shape)
        d = b.rng.randint(-r - 1, r)
        return [b.t(shape), d], {}
    if op == "aten.select.int":
        shape = b.shape(lo_rank=1, hi_rank=4)
        d = b.dim(len(shape))
        n = shape[d]
        idx = b.rng.randrange(n)
        if b.chance(0.3):
            idx -= n
        return [b.t(shape), d, idx], {}
    if op == "aten.slice.Tensor":
        shape = b.shape(lo_rank=1, hi_rank=4, lo=2)
        r = len(shape)
        d = b.dim(r)
        n = shape[d]
        start = b.pick([0, 1, None, -2, n // 2])
        end = b.pick([None, n, n - 1, 9223372036854775807, -1, max(1, n // 2)])
        args = [b.t(shape), d, start, end]
        if b.chance(0.3):
            args.append(b.pick([1, 2]))
        return args, {}
    raise KeyError(op)


# -- tensor ops (split / cat / stack / ...)

def gen_tensor_op(b: Builder, op: str):
    if op == "aten.split.Tensor":
        shape = b.shape(lo_rank=1, hi_rank=4, lo=2)
        d = b.dim(len(shape))
        n = shape[d]
        ss = b.rng.randint(1, n)
        args = [b.t(shape), ss]
        args.append(d)
        return args, {}
    if op == "aten.split_with_sizes.default":
        shape = b.shape(lo_rank=1, hi_rank=4, lo=2)
        d = b.dim(len(shape))
        n = shape[d]
        cuts = sorted(b.rng.sample(range(1, n), min(n - 1, b.rng.randint(1, 3))))
        sizes = [c1 - c0 for c0, c1 in zip([0] + cuts, cuts + [n])]
        return [b.t(shape), sizes, d], {}
    if op == "aten.unbind.int":
        shape = b.shape(lo_rank=1, hi_rank=4, hi=6)
        d = b.dim(len(shape))
        args = [b.t(shape)]
        if d != 0 or b.chance(0.5):
            args.append(d)
        return args, {}
    if op in ("aten.cat.default", "aten.stack.default"):
        shape = b.shape(lo_rank=1, hi_rank=3)
        r = len(shape)
        k = b.rng.randint(2, 3)
        if op == "aten.cat.default":
            d = b.dim(r)
            refs = []
            for i in range(k):
                s = list(shape)
                s[d] = b.size()
                refs.append(b.t(s, like=refs[0] if refs else None))
        else:
            d = b.rng.randint(-r - 1, r)
            refs = []
            for i in range(k):
                refs.append(b.t(shape, like=refs[0] if refs else None))
        args = [refs]
        if d != 0 or b.chance(0.5):
            args.append(d)
        return args, {}
    if op == "aten.slice_scatter.default":
        shape = b.shape(lo_rank=1, hi_rank=4, lo=2)
        r = len(shape)
        d = b.dim(r)
        n = shape[d]
        start = b.rng.randrange(n)
        end = b.rng.randint(start + 1, n)
        step = b.pick([1, 1, 2])
        src_shape = list(shape)
        src_shape[d] = len(range(start, end, step))
        x = b.t(shape)
        s = b.t(src_shape, like=x)
        return [x, s, d, start, end, step], {}
    if op == "aten.equal.default":
        shape = b.shape()
        x = b.t(shape)
        return [x, b.t(shape, like=x)], {}
    raise KeyError(op)


# -- factories and copies

def gen_factory(b: Builder, op: str):
    shape = b.shape(lo_rank=1, hi_rank=4)
    x = b.t(shape)
    kw = {}
    if op in ("aten.empty_like.default", "aten.zeros_like.default", "aten.ones_like.default",
              "aten.full_like.default"):
        if b.chance(0.3):
            kw["dtype"] = b.pick(["torch.float32", "torch.bfloat16"])
        args = [x] + ([b.pick([0.0, 1.5])] if op == "aten.full_like.default" else [])
        return args, kw
    if op in ("aten.new_empty.default", "aten.new_zeros.default", "aten.new_ones.default",
              "aten.new_full.default"):
        size = b.shape(lo_rank=1, hi_rank=3)
        args = [x, size] + ([b.pick([0.0, 2.0])] if op == "aten.new_full.default" else [])
        if b.chance(0.2):
            kw["dtype"] = "torch.float32"
        return args, kw
    if op == "aten.clone.default":
        if b.chance(0.3):
            kw["memory_format"] = "torch.contiguous_format"
        return [x], kw
    if op in ("aten.alias.default", "aten.detach.default"):
        return [x], {}
    if op == "aten._to_copy.default":
        kw["dtype"] = b.pick(["torch.bfloat16", "torch.float16", "torch.float64", "torch.int64", "torch.bool"])
        return [x], kw
    if op == "prims.convert_element_type.default":
        return [x, b.pick(["torch.bfloat16", "torch.float16", "torch.float64", "torch.int32"])], {}
    raise KeyError(op)


# -- embedding and indexing

def gen_embedding(b: Builder, op: str):
    V, D = b.size(2, 12), b.size()
    idx_shape = b.pick([[b.size()], [b.size(), b.size()]])
    if op == "aten.embedding.default":
        w = b.t([V, D])
        i = b.t(idx_shape, "int64")
        args = [w, i]
        if b.chance(0.2):
            args.append(b.pick([0, -1]))
        return args, {}
    g = b.t(idx_shape + [D])
    i = b.t(idx_shape, "int64")
    return [g, i, V, b.pick([-1, -1, 0]), b.chance(0.15)], {}


def gen_index(b: Builder, op: str):
    shape = b.shape(lo_rank=1, hi_rank=3, lo=2)
    r = len(shape)
    x = b.t(shape)
    # which dims are indexed: one dim (with leading None's) or two adjacent dims
    d = b.rng.randrange(r)
    nidx = 2 if (d + 1 < r and b.chance(0.25)) else 1
    ishape = b.pick([[b.size()], [b.size(), b.size()]])
    idxs: list = [None] * d
    for j in range(nidx):
        idxs.append(b.t(ishape if j == 0 or b.chance(0.5) else [1] * (len(ishape) - 1) + [ishape[-1]], "int64"))
    if op == "aten.index.Tensor":
        return [x, idxs], {}
    # index_put: values broadcast to the indexed result shape
    res = shape[:d] + ishape + shape[d + nidx:]
    vshape = res if b.chance(0.7) else res[-1:] if res else []
    v = b.t(vshape)
    args = [x, idxs, v]
    if b.chance(0.5):
        args.append(b.chance(0.5))
    return args, {}


# -- attention

def gen_attention(b: Builder, op: str):
    B, H, S, D = b.size(1, 4), b.size(1, 8), b.size(), b.pick([4, 8])
    Skv = S if b.chance(0.6) else b.size()
    causal = b.chance(0.3)
    q_s, kv_s = [B, H, S, D], [B, H, Skv, D]
    if op == "aten._scaled_dot_product_flash_attention.default":
        q = b.t(q_s)
        return [q, b.t(kv_s, like=q), b.t(kv_s, like=q), 0.0, causal], {}
    if op == "aten._scaled_dot_product_efficient_attention.default":
        q = b.t(q_s)
        k, v = b.t(kv_s, like=q), b.t(kv_s, like=q)
        bias = b.t([B, H, S, Skv], like=q) if b.chance(0.3) else None
        return [q, k, v, bias, b.chance(0.7), 0.0, causal and bias is None], {}
    if op == "aten._scaled_dot_product_cudnn_attention.default":
        q = b.t(q_s)
        k, v = b.t(kv_s, like=q), b.t(kv_s, like=q)
        return [q, k, v, None, True, 0.0, causal], {}
    if op == "aten._scaled_dot_product_flash_attention_backward.default":
        g = b.t(q_s)
        q = b.t(q_s, like=g)
        k, v = b.t(kv_s, like=g), b.t(kv_s, like=g)
        o = b.t(q_s, like=g)
        lse = b.t([B, H, S], like=g)
        seed = b.t([2], "uint64")
        off = b.t([], "uint64")
        return [g, q, k, v, o, lse, None, None, S, Skv, 0.0, causal, seed, off], {}
    if op == "aten._scaled_dot_product_efficient_attention_backward.default":
        g = b.t(q_s)
        q = b.t(q_s, like=g)
        k, v = b.t(kv_s, like=g), b.t(kv_s, like=g)
        o = b.t(q_s, like=g)
        lse = b.t([B, H, 32 * ((S + 31) // 32)], like=g)
        seed = b.t([], "int64")
        off = b.t([], "int64")
        return [g, q, k, v, None, o, lse, seed, off, 0.0, [True, True, True, False], causal], {}
    if op == "aten._scaled_dot_product_cudnn_attention_backward.default":
        g = b.t(q_s)
        q = b.t(q_s, like=g)
        k, v = b.t(kv_s, like=g), b.t(kv_s, like=g)
        o = b.t(q_s, like=g)
        lse = b.t([B, H, S, 1], like=g)
        seed = b.t([], "int64")
        off = b.t([], "int64")
        return [g, q, k, v, o, lse, seed, off, None, None, None, S, Skv, 0.0, causal], {}
    raise KeyError(op)


# -- nn

def gen_nn(b: Builder, op: str):
    if op == "aten.native_dropout.default":
        return [b.t(b.shape()), b.pick([0.1, 0.5]), True], {}
    if op == "aten.convolution.default":
        N, C, O = b.size(1, 4), b.pick([2, 3, 4]), b.pick([2, 4, 6])
        nd = b.pick([1, 2, 2])
        spatial = [b.size(3, 8) for _ in range(nd)]
        kernel = [b.pick([1, 3]) for _ in range(nd)]
        groups = 1
        x = b.t([N, C] + spatial)
        w = b.t([O, C // groups] + kernel)
        bias = b.t([O]) if b.chance(0.6) else None
        stride = [b.pick([1, 2])] * nd
        pad = [k // 2 for k in kernel]
        return [x, w, bias, stride, pad, [1] * nd, False, [0] * nd, groups], {}
    raise KeyError(op)


# -- layout ops, FFTs, complex views, rounding division, random ops

def _contiguous(size):
    out, acc = [], 1
    for n in reversed(size):
        out.append(acc)
        acc *= n
    return list(reversed(out))


def gen_layout(b: Builder, op: str):
    if op == "aten.constant_pad_nd.default":
        shape = b.shape(lo_rank=1, hi_rank=4)
        pad = []
        for d in reversed(range(len(shape))[-b.rng.randint(1, len(shape)):]):
            amounts = [0, 0, 0, 1, 2] + ([-1] if shape[d] >= 3 else [])
            pad += [b.pick(amounts), b.pick(amounts)]
        args = [b.t(shape), pad]
        if b.chance(0.7):
            args.append(b.pick([0.0, 0.0, 1.5, -100.0]))
        return args, {}
    if op == "aten.roll.default":
        shape = b.shape(lo_rank=1, hi_rank=4)
        if b.chance(0.2):
            return [b.t(shape), [b.pick([1, -2, 3])]], {}
        dims = b.dims(len(shape), 1, 2)
        return [b.t(shape), [b.pick([1, -2, 3]) for _ in dims], dims], {}
    if op == "aten.flip.default":
        shape = b.shape(lo_rank=1, hi_rank=4)
        return [b.t(shape), b.dims(len(shape), 1, 2)], {}
    if op == "aten.select_scatter.default":
        shape = b.shape(lo_rank=1, hi_rank=4)
        d = b.dim(len(shape))
        src = [n for k, n in enumerate(shape) if k != d % len(shape)]
        x = b.t(shape)
        return [x, b.t(src), d, b.rng.randrange(shape[d]) - (shape[d] if b.chance(0.3) else 0)], {}
    if op in ("aten._fft_c2c.default", "aten._fft_r2c.default", "aten._fft_c2r.default"):
        shape = b.shape(lo_rank=1, hi_rank=3)
        dims = b.dims(len(shape), 1, 2, negative_ok=False)  # aten._fft_* take wrapped dims (a negative one crashes the CPU kernel)
        norm = b.pick([0, 1, 2])
        if op == "aten._fft_c2c.default":
            return [b.t(shape, "complex64"), dims, norm, b.chance(0.5)], {}
        if op == "aten._fft_r2c.default":
            return [b.t(shape), dims, norm, b.chance(0.7)], {}
        n = shape[dims[-1]]
        return [b.t(shape, "complex64"), dims, norm, b.pick([2 * n - 1] + ([2 * (n - 1)] if n >= 2 else []))], {}
    if op == "aten.view_as_real.default":
        return [b.t(b.shape(lo_rank=1, hi_rank=3), "complex64")], {}
    if op == "aten.view_as_complex.default":
        return [b.t(b.shape(lo_rank=0, hi_rank=3) + [2])], {}
    if op == "aten.div.Tensor_mode":
        shape = b.shape()
        x = b.t(shape)
        other = b.t(broadcast_variant(b, shape, allow_scalar=False), like=x) if b.chance(0.7) else b.pick([2, 3.5, 8])
        return [x, other], {"rounding_mode": b.pick(["floor", "trunc", None])}
    if op == "aten.new_empty_strided.default":
        shape = b.shape(lo_rank=1, hi_rank=4)
        size = list(shape) if b.chance(0.5) else b.shape(lo_rank=1, hi_rank=3)
        return [b.t(shape), size, _contiguous(size)], {}
    if op == "aten.bernoulli_.float":
        return [b.t(b.shape()), b.pick([0.1, 0.5])], {}
    if op == "aten.bernoulli.default":
        return [b.t(b.shape())], {}
    if op in ("aten.rand_like.default", "aten.randn_like.default"):
        kw = {"dtype": "torch.float32"} if b.chance(0.3) else {}
        return [b.t(b.shape(lo_rank=1, hi_rank=4))], kw
    raise KeyError(op)


# -- training ops: normalization, convolution backward, pooling, losses, gather / scatter, scans,
# sorting, histograms, triangles, slice_backward, grouped matmul

BATCH_NORM_FORWARD = ["aten.native_batch_norm.default", "aten._native_batch_norm_legit.default",
                      "aten._native_batch_norm_legit.no_stats", "aten._native_batch_norm_legit_no_training.default",
                      "aten._native_batch_norm_legit_functional.default"]


def _conv_out(n: int, k: int, stride: int, pad: int) -> int:
    return (n + 2 * pad - k) // stride + 1


def gen_training(b: Builder, op: str):
    if op in BATCH_NORM_FORWARD:
        N, C = b.size(1, 6), b.pick([2, 3, 4, 6, 8])
        x = b.t([N, C] + [b.size(1, 6) for _ in range(b.pick([0, 1, 2]))])
        opt = lambda: b.t([C], like=None) if b.chance(0.8) else None  # noqa: E731
        w, bias = opt(), opt()
        if op == "aten._native_batch_norm_legit.no_stats":
            # training only: in eval mode the overload has no statistics to use (the CPU kernel
            # then crashes instead of raising)
            return [x, w, bias, True, 0.1, 1e-5], {}
        rm, rv = b.t([C]), b.t([C])
        if op == "aten._native_batch_norm_legit_no_training.default":
            return [x, w, bias, rm, rv, 0.1, 1e-5], {}
        training = op == "aten._native_batch_norm_legit_functional.default" or b.chance(0.5)
        return [x, w, bias, rm, rv, training, 0.1, 1e-5], {}
    if op == "aten.native_batch_norm_backward.default":
        N, C = b.size(1, 6), b.pick([2, 3, 4, 6])
        shape = [N, C] + [b.size(1, 6) for _ in range(b.pick([0, 1, 2]))]
        g = b.t(shape)
        x = b.t(shape, like=g)
        w = b.t([C]) if b.chance(0.8) else None
        train = b.chance(0.5)
        rm, rv = b.t([C]), b.t([C])
        sm, si = (b.t([C]), b.t([C])) if train else (None, None)
        mask = [True, w is not None and b.chance(0.8), b.chance(0.8)]
        return [g, x, w, rm, rv, sm, si, train, 1e-5, mask], {}
    if op == "aten.convolution_backward.default":
        N, C, O = b.size(1, 4), b.pick([2, 3, 4]), b.pick([2, 4, 6])
        nd = b.pick([1, 2, 2])
        spatial = [b.size(3, 8) for _ in range(nd)]
        kernel = [b.pick([1, 3]) for _ in range(nd)]
        stride = [b.pick([1, 2])] * nd
        pad = [k // 2 for k in kernel]
        out = [_conv_out(n, k, st, p) for n, k, st, p in zip(spatial, kernel, stride, pad)]
        g = b.t([N, O] + out)
        x = b.t([N, C] + spatial)
        w = b.t([O, C] + kernel)
        bias = [O] if b.chance(0.6) else None
        mask = [True, True, bias is not None] if b.chance(0.7) else [b.chance(0.5), True, False]
        return [g, x, w, bias, stride, pad, [1] * nd, False, [0] * nd, 1, mask], {}
    if op in ("aten.max_pool2d_with_indices.default", "aten.max_pool2d_with_indices_backward.default"):
        lead = [b.size(1, 4), b.pick([2, 3, 4])] if b.chance(0.8) else [b.pick([2, 3, 4])]
        H, W = b.size(2, 8), b.size(2, 8)
        k = b.pick([1, 2, 2])
        stride = b.pick([[], [k, k], [1, 1]])
        st = stride[0] if stride else k
        out = [(H - k) // st + 1, (W - k) // st + 1]
        if op == "aten.max_pool2d_with_indices.default":
            return [b.t(lead + [H, W]), [k, k], stride], {}
        g = b.t(lead + out)
        x = b.t(lead + [H, W], like=g)
        idx = b.t(lead + out, "int64", like=g)
        return [g, x, [k, k], stride, [0, 0], [1, 1], False, idx], {}
    if op in ("aten.nll_loss_forward.default", "aten.nll_loss_backward.default"):
        C = b.pick([2, 3, 5, 8])
        batched = b.chance(0.85)
        N = b.size(1, 12)
        self_shape, target_shape = ([N, C], [N]) if batched else ([C], [])
        reduction = b.pick([0, 1, 2])
        if op == "aten.nll_loss_forward.default":
            x = b.t(self_shape)
            t = b.t(target_shape, "int64", like=x)
            w = b.t([C]) if b.chance(0.3) else None
            return [x, t, w, reduction, -100], {}
        g = b.t(target_shape if reduction == 0 else [])
        x = b.t(self_shape)
        t = b.t(target_shape, "int64", like=x)
        w = b.t([C]) if b.chance(0.3) else None
        tw = b.t([])
        return [g, x, t, w, reduction, -100, tw], {}
    if op in ("aten.gather.default", "aten.scatter.src", "aten.scatter.value", "aten.scatter_add.default"):
        shape = b.shape(lo_rank=1, hi_rank=3)
        d = b.dim(len(shape))
        x = b.t(shape)
        ishape = [n if b.chance(0.6) else b.size(1, n) for n in shape]
        if op == "aten.gather.default" and b.chance(0.3):
            ishape[d % len(shape)] = 1
        idx = b.t(ishape, "int64", like=x)
        if op == "aten.gather.default":
            return [x, d, idx], {}
        if op == "aten.scatter.value":
            return [x, d, idx, b.pick([0.0, 1.5])], {}
        src = b.t([n if b.chance(0.7) else n + 1 for n in ishape], like=x)
        return [x, d, idx, src], {}
    if op == "aten.cumsum.default":
        shape = b.shape(lo_rank=1, hi_rank=4)
        kw = {"dtype": "torch.float64"} if b.chance(0.2) else {}
        return [b.t(shape), b.dim(len(shape))], kw
    if op in ("aten.sort.default", "aten.sort.stable", "aten.topk.default"):
        shape = b.shape(lo_rank=1, hi_rank=3)
        d = b.dim(len(shape))
        x = b.t(shape)
        if op == "aten.sort.default":
            return ([x, d, b.chance(0.5)] if b.chance(0.7) else [x]), {}
        if op == "aten.sort.stable":
            return [x], {"stable": True, "dim": d, "descending": b.chance(0.5)}
        return [x, b.rng.randint(1, shape[d]), d, b.chance(0.7), True], {}
    if op == "aten.histc.default":
        x = b.t(b.shape(lo_rank=1, hi_rank=3))
        if b.chance(0.3):
            return [x, b.pick([4, 10])], {}
        return [x, b.pick([4, 10]), b.pick([-2.0, 0.0]), b.pick([2.0, 0.0])], {}
    if op in ("aten.tril.default", "aten.triu.default"):
        x = b.t(b.shape(lo_rank=2, hi_rank=4))
        return ([x, b.pick([-1, 0, 1])] if b.chance(0.6) else [x]), {}
    if op == "aten.slice_backward.default":
        sizes = b.shape(lo_rank=1, hi_rank=4)
        d = b.dim(len(sizes))
        n = sizes[d]
        start = b.rng.randrange(n)
        end = b.rng.randint(start + 1, n)
        sliced = list(sizes)
        sliced[d] = end - start
        return [b.t(sliced), sizes, d, start, end, 1], {}
    if op in ("aten._fused_rms_norm.default", "aten._fused_rms_norm_backward.default"):
        shape = b.shape(lo_rank=1, hi_rank=4)
        k = b.rng.randint(1, len(shape))
        norm = shape[len(shape) - k:]
        if op == "aten._fused_rms_norm.default":
            x = b.t(shape)
            w = b.t(norm) if b.chance(0.7) else None
            return [x, norm, w, 1e-5], {}
        g = b.t(shape)
        x = b.t(shape, like=g)
        rstd = b.t(shape[:len(shape) - k] + [1] * k)
        w = b.t(norm) if b.chance(0.7) else None
        return [g, x, norm, rstd, w, [True, w is not None]], {}
    if op == "aten._grouped_mm.default":
        # bfloat16: the meta function (what DTensor's propagation runs) takes no other dtype
        G, K, N = b.pick([2, 3]), b.pick([8, 16]), b.pick([8, 16])
        kind = b.pick(["2x3", "3x3", "3x2", "2x2"])
        bf = "bfloat16"
        if kind == "2x3":
            M = b.pick([8, 16])
            return [b.t([M, K], bf), b.t([G, K, N], bf), b.t([G], "int32", partial=False)], {}
        if kind == "3x3":
            return [b.t([G, b.pick([8, 16]), K], bf), b.t([G, K, N], bf)], {}
        if kind == "3x2":
            return [b.t([G, b.pick([8, 16]), K], bf), b.t([K, N * 2], bf), b.t([G], "int32", partial=False)], {}
        return [b.t([b.pick([8, 16]), K * 2], bf), b.t([K * 2, N], bf), b.t([G], "int32", partial=False)], {}
    raise KeyError(op)


# ---------------------------------------------------------------------------------------
# registry: op -> (family, generator)

FAMILIES: dict[str, tuple[str, Callable]] = {}


def _reg(family: str, gen: Callable, ops: list[str]) -> None:
    for o in ops:
        FAMILIES[o] = (family, gen)


_reg("einsum", gen_einsum, ["aten.mm.default", "aten.bmm.default", "aten.addmm.default",
                            "aten.baddbmm.default", "aten.dot.default"])
_reg("pointwise_unary", gen_unary, UNARY_FLOAT + UNARY_INT)
_reg("pointwise_scalar", gen_scalar_binary, SCALAR_BINARY)
_reg("pointwise_binary", gen_binary, BINARY)
_reg("pointwise_ternary", gen_ternary, TERNARY)
_reg("reduction", gen_reduction, [
    "aten.sum.default", "aten.sum.dim_IntList", "aten.mean.default", "aten.mean.dim",
    "aten.amax.default", "aten.amin.default", "aten.max.default", "aten.min.default",
    "aten.max.dim", "aten.min.dim", "aten.argmax.default", "aten.argmin.default",
    "aten.logsumexp.default", "aten.var.correction", "aten.std.correction",
    "aten.var_mean.correction"])
_reg("softmax", gen_softmax, ["aten._softmax.default", "aten._log_softmax.default",
                              "aten._safe_softmax.default", "aten._softmax_backward_data.default",
                              "aten._log_softmax_backward_data.default"])
_reg("layer_norm", gen_layer_norm, ["aten.native_layer_norm.default",
                                    "aten.native_layer_norm_backward.default"])
_reg("view", gen_view, ["aten.view.default", "aten._unsafe_view.default", "aten.reshape.default",
                        "aten.expand.default", "aten.repeat.default", "aten.permute.default", "aten.transpose.int",
                        "aten.t.default", "aten.squeeze.default", "aten.squeeze.dim",
                        "aten.squeeze.dims", "aten.unsqueeze.default", "aten.select.int",
                        "aten.slice.Tensor"])
_reg("tensor_ops", gen_tensor_op, ["aten.split.Tensor", "aten.split_with_sizes.default",
                                   "aten.unbind.int", "aten.cat.default", "aten.stack.default",
                                   "aten.slice_scatter.default", "aten.equal.default"])
_reg("factory_copy", gen_factory, [
    "aten.empty_like.default", "aten.zeros_like.default", "aten.ones_like.default",
    "aten.full_like.default", "aten.new_empty.default", "aten.new_zeros.default",
    "aten.new_ones.default", "aten.new_full.default", "aten.clone.default", "aten.alias.default",
    "aten.detach.default", "aten._to_copy.default", "prims.convert_element_type.default"])
_reg("embedding", gen_embedding, ["aten.embedding.default", "aten.embedding_dense_backward.default"])
_reg("index", gen_index, ["aten.index.Tensor", "aten.index_put.default"])
_reg("attention", gen_attention, [
    "aten._scaled_dot_product_flash_attention.default",
    "aten._scaled_dot_product_flash_attention_backward.default",
    "aten._scaled_dot_product_efficient_attention.default",
    "aten._scaled_dot_product_efficient_attention_backward.default",
    "aten._scaled_dot_product_cudnn_attention.default",
    "aten._scaled_dot_product_cudnn_attention_backward.default"])
_reg("nn", gen_nn, ["aten.convolution.default", "aten.native_dropout.default"])
_reg("layout", gen_layout, ["aten.constant_pad_nd.default", "aten.roll.default", "aten.flip.default", "aten.select_scatter.default",
                            "aten._fft_c2c.default", "aten._fft_r2c.default", "aten._fft_c2r.default",
                            "aten.view_as_real.default", "aten.view_as_complex.default"])
_reg("pointwise_binary", gen_layout, ["aten.div.Tensor_mode"])
_reg("factory_copy", gen_layout, ["aten.new_empty_strided.default"])
_reg("random", gen_layout, ["aten.bernoulli_.float", "aten.bernoulli.default", "aten.rand_like.default",
                            "aten.randn_like.default"])
_reg("training", gen_training, BATCH_NORM_FORWARD + [
    "aten.native_batch_norm_backward.default", "aten.convolution_backward.default",
    "aten.max_pool2d_with_indices.default", "aten.max_pool2d_with_indices_backward.default",
    "aten.nll_loss_forward.default", "aten.nll_loss_backward.default", "aten.gather.default",
    "aten.scatter.src", "aten.scatter.value", "aten.scatter_add.default", "aten.cumsum.default",
    "aten.sort.default", "aten.sort.stable", "aten.topk.default", "aten.histc.default",
    "aten.tril.default", "aten.triu.default", "aten.slice_backward.default",
    "aten._fused_rms_norm.default", "aten._fused_rms_norm_backward.default", "aten._grouped_mm.default"])


def family_of(op: str) -> str:
    return FAMILIES[op][0] if op in FAMILIES else "unknown"


def _seed(op: str, seed: int) -> int:
    return zlib.crc32(op.encode()) ^ (seed * 0x9E3779B1)


def generate(op: str, n: int = 25, seed: int = 0) -> list[dict]:
    fam, gen = FAMILIES[op]
    rng = random.Random(_seed(op, seed))
    cases = []
    for i in range(n):
        mesh = MESHES[i % len(MESHES)]
        b = Builder(rng)
        args, kwargs = gen(b, op)
        tensors = assign_specs(rng, b.tensors, mesh)
        cases.append({"id": f"{op}#{i}", "op": op, "family": fam, "mesh": list(mesh),
                      "tensors": tensors, "args": args, "kwargs": kwargs})
    return cases


def generated_ops() -> list[str]:
    return list(FAMILIES)


if __name__ == "__main__":
    import json
    import sys

    op = sys.argv[1] if len(sys.argv) > 1 else "aten.mm.default"
    for c in generate(op, int(sys.argv[2]) if len(sys.argv) > 2 else 4):
        print(json.dumps(c))
