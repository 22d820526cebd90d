"""Layout ops and StridedShard through views: as_strided / as_strided_scatter (a plain view, and
not), constant_pad_nd (pads, negative pads = slicing, all-zero pads, non-zero values), roll (with
and without dims), select_scatter, slice_scatter, new_empty_strided, iota, scalar_tensor,
div.Tensor_mode, the FFT kernels, view_as_real / view_as_complex, _unsafe_index_put, random ops
(shapes only), and views whose regrouped rows move a shard or a StridedShard (R05: [16, 4]
_S(0, 2) viewed as [2, 8, 4] is S(1)).  Uneven and size-1 dims throughout.

REFERENCES: what a rank runs for as_strided-like ops, whose size / stride arguments the executor
localises (DTensor localises view sizes the same way): a plain contiguous view is run as a view
with the rank's local size; anything else is the op itself (only Replicate / Partial rows).
The inductor prims need torch._inductor.inductor_prims imported."""

import math

import torch

try:  # registers prims.inductor_random / inductor_seeds / inductor_lookup_seed
    import torch._inductor.inductor_prims  # noqa: F401
except Exception:  # noqa: BLE001
    pass


def t(*shape, dtype="float32", **extra):
    return {"shape": list(shape), "dtype": dtype, **extra}


def s(op, tensors, *args, kwargs=None, **kw):
    return {"op": op, "tensors": list(tensors), "args": list(args), "kwargs": kwargs or {}, **kw}


def _contiguous(size):
    out, acc = [], 1
    for n in reversed(list(size)):
        out.append(acc)
        acc *= n
    return list(reversed(out))


def _covers_contiguously(size, stride):
    """True when `stride` walks `size` row-major without gaps for some sizes >= `size` on every
    dim but the first: the global contiguous stride read with a rank's local size (a call with as
    many elements as its input that passes this is contiguous, or reads out of bounds)."""
    if not size:
        return True
    if stride[-1] != 1:
        return False
    return all(stride[k] >= stride[k + 1] * size[k + 1] and stride[k] % stride[k + 1] == 0 for k in range(len(size) - 1))


def _as_strided(x, size, stride, storage_offset=0):
    if (storage_offset or 0) == 0 and math.prod(size) == x.numel() and _covers_contiguously(size, stride):
        return x.contiguous().view(list(size))  # globally: exactly as_strided with the contiguous stride
    return torch.ops.aten.as_strided.default(x, size, stride, storage_offset)


def _as_strided_scatter(x, src, size, stride, storage_offset=0):
    # src covering all of x (globally: exactly as_strided_scatter with the contiguous stride); on a
    # rank, its piece of src fills its piece of x (size / stride stay the global ones)
    if (storage_offset or 0) == 0 and list(stride) == _contiguous(size) and src.numel() == x.numel():
        return src.contiguous().view(list(x.shape)).clone()
    return torch.ops.aten.as_strided_scatter.default(x, src, size, stride, storage_offset)


def _new_empty_strided(x, size, stride, **kw):
    return torch.ops.aten.new_empty_strided.default(x, size, _contiguous(size), **kw)


def _prim(name):
    def run(*args, **kwargs):
        return getattr(torch.ops.prims, name).default(*args, **kwargs)
    return run


REFERENCES = {
    "aten.as_strided.default": _as_strided,
    "aten.as_strided_scatter.default": _as_strided_scatter,
    "aten.new_empty_strided.default": _new_empty_strided,
    "prims.rev.default": _prim("rev"),
    "prims.inductor_random.default": _prim("inductor_random"),
    "prims.inductor_seeds.default": _prim("inductor_seeds"),
    "prims.inductor_lookup_seed.default": _prim("inductor_lookup_seed"),
}

BIG = 9223372036854775807

SAMPLES = [
    # --- views moving shards and StridedShards (regrouped rows) -----------------------------
    s("aten.view.default", [t(16, 4)], "$0", [2, 8, 4], note="R05: _S(0, 2) -> S(1), _S(0, 4) -> _S(1, 2)"),
    s("aten.view.default", [t(2, 8, 4)], "$0", [16, 4], note="flatten back: S(1) -> _S(0, 2)"),
    s("aten._unsafe_view.default", [t(4, 6)], "$0", [24], note="inner flattened dim: S(1) -> _S(0, 4)"),
    s("aten._unsafe_view.default", [t(5, 4)], "$0", [20], note="uneven outer dim; S(1) -> _S(0, 5)"),
    s("aten.view.default", [t(2, 6)], "$0", [4, 3], note="split of a flatten: S(1) -> _S(0, 2)"),
    s("aten.view.default", [t(6, 4)], "$0", [2, 3, 4], note="_S(0, 2) -> S(1)"),
    s("aten.reshape.default", [t(3, 4)], "$0", [2, 6]),
    s("aten.view.default", [t(2, 3, 1, 4)], "$0", [6, 4], note="size-1 dim inside a flatten"),
    s("aten.view.default", [t(8, 3)], "$0", [2, 4, 3]),
    # --- as_strided / as_strided_scatter --------------------------------------------------
    s("aten.as_strided.default", [t(24)], "$0", [2, 3, 4], [12, 4, 1], 0, note="t5: flat buffer viewed as 3-D"),
    s("aten.as_strided.default", [t(2, 3, 4)], "$0", [1, 2, 3, 4], [24, 12, 4, 1], 0, note="t5: a leading size-1 dim"),
    s("aten.as_strided.default", [t(4, 6)], "$0", [6, 4], [4, 1], 0, note="a view regrouping both dims"),
    s("aten.as_strided.default", [t(5, 4)], "$0", [20], [1], note="uneven flatten, offset omitted"),
    s("aten.as_strided.default", [t(4, 6)], "$0", [3, 3], [6, 1], 0, note="a window: Replicate / Partial only"),
    s("aten.as_strided.default", [t(8)], "$0", [4], [2], 1, note="a strided gather with an offset"),
    s("aten.as_strided.default", [t(4, 6)], "$0", [6, 4], [1, 6], 0, note="a transpose through strides: not a view"),
    s("aten.as_strided_scatter.default", [t(24), t(2, 3, 4)], "$0", "$1", [2, 3, 4], [12, 4, 1], 0, note="t5: src fills the flat buffer"),
    s("aten.as_strided_scatter.default", [t(2, 3, 4), t(1, 2, 3, 4)], "$0", "$1", [1, 2, 3, 4], [24, 12, 4, 1], 0, note="t5"),
    s("aten.as_strided_scatter.default", [t(5, 4), t(20)], "$0", "$1", [20], [1], 0, note="uneven"),
    s("aten.as_strided_scatter.default", [t(4, 6), t(2, 3)], "$0", "$1", [2, 3], [6, 1], 0, note="a window: positional only"),
    # --- constant_pad_nd ------------------------------------------------------------------
    s("aten.constant_pad_nd.default", [t(4, 6)], "$0", [1, 2], 0.0),
    s("aten.constant_pad_nd.default", [t(4, 6, 3)], "$0", [0, 0, 1, 1], 1.5, note="non-zero value: no P(sum)"),
    s("aten.constant_pad_nd.default", [t(3, 5)], "$0", [-1, 0], note="negative pad slices"),
    s("aten.constant_pad_nd.default", [t(5, 6)], "$0", [0, 0, 0, 0], 0.0, note="all-zero pads: the identity"),
    s("aten.constant_pad_nd.default", [t(4, 5, values="small_int")], "$0", [0, 1], -100.0,
      note="qwen3 pads int64 labels with -100; float here so that its Partial rows (avg / max / min) are simulated too"),
    s("aten.constant_pad_nd.default", [t(4, 1, 6)], "$0", [1, 1], 2.0),
    # --- roll -----------------------------------------------------------------------------
    s("aten.roll.default", [t(4, 6)], "$0", [2], [1]),
    s("aten.roll.default", [t(5, 4, 3)], "$0", [1, -2], [0, 2]),
    s("aten.roll.default", [t(6, 4)], "$0", [3], note="no dims: the flattened tensor rolls"),
    s("aten.roll.default", [t(4, 1, 7)], "$0", [-3], [-1]),
    # --- flip / prims.rev (longformer reverses a band: rev(where, [0]), rev(x, [1, 3])) -----
    s("aten.flip.default", [t(4, 6)], "$0", [1]),
    s("aten.flip.default", [t(5, 4, 3)], "$0", [0, -1]),
    s("prims.rev.default", [t(6, 5)], "$0", [0]),
    s("prims.rev.default", [t(1, 4, 1, 5)], "$0", [1, 3]),
    s("prims.rev.default", [t(3, 4)], "$0", [], note="no dims: the identity"),
    s("aten.roll.default", [t(2, 6, 6, 3)], "$0", [3, 3], [1, 2], note="swin: shifted windows"),
    # --- select_scatter / slice_scatter ---------------------------------------------------
    s("aten.select_scatter.default", [t(4, 6), t(6)], "$0", "$1", 0, 2),
    s("aten.select_scatter.default", [t(4, 5, 3), t(4, 3)], "$0", "$1", 1, -1),
    s("aten.select_scatter.default", [t(3, 1, 4), t(3, 4)], "$0", "$1", 1, 0),
    s("aten.slice_scatter.default", [t(6, 4), t(2, 4)], "$0", "$1", 0, 1, 3),
    s("aten.slice_scatter.default", [t(5, 6), t(5, 6)], "$0", "$1", 1, 0, BIG, note="the full dim: src is the output"),
    s("aten.slice_scatter.default", [t(5, 4), t(5, 2)], "$0", "$1", 1, 0, 4, 2),
    # --- new_empty_strided, factories -----------------------------------------------------
    s("aten.new_empty_strided.default", [t(4, 6)], "$0", [4, 6], [6, 1], compare="shape", note="t5: same shape, follows the input"),
    s("aten.new_empty_strided.default", [t(4, 6)], "$0", [3, 5], [5, 1], compare="shape"),
    s("aten.new_empty_strided.default", [t(3, 1, 5)], "$0", [3, 1, 5], [5, 5, 1], compare="shape"),
    s("prims.iota.default", [], 7, kwargs={"start": 0, "step": 1, "dtype": "torch.int64", "device": "cpu", "requires_grad": False}),
    s("prims.iota.default", [], 5, kwargs={"start": 3, "step": 2, "dtype": "torch.int64", "device": "cpu", "requires_grad": False}),
    s("aten.scalar_tensor.default", [], 2.5, kwargs={"dtype": "torch.float32"}),
    s("aten.scalar_tensor.default", [], 3, kwargs={"dtype": "torch.int64"}),
    # --- div with rounding ----------------------------------------------------------------
    s("aten.div.Tensor_mode", [t(4, 6), t(4, 6, values="positive")], "$0", "$1", kwargs={"rounding_mode": "floor"}),
    s("aten.div.Tensor_mode", [t(5, 3), t(3, values="positive")], "$0", "$1", kwargs={"rounding_mode": "trunc"}),
    s("aten.div.Tensor_mode", [t(7, dtype="int64", range=[0, 64])], "$0", 8, kwargs={"rounding_mode": "floor"}, note="qwen3: expert ids"),
    s("aten.div.Tensor_mode", [t(4, 1), t(4, 5, values="positive")], "$0", "$1", kwargs={"rounding_mode": None}),
    # --- FFT --------------------------------------------------------------------------------
    s("aten._fft_c2c.default", [t(4, 6, dtype="complex64")], "$0", [1], 0, True),
    s("aten._fft_c2c.default", [t(3, 4, 5, dtype="complex64")], "$0", [0, 2], 2, False),
    s("aten._fft_r2c.default", [t(4, 6)], "$0", [1], 0, True, note="onesided: 6 -> 4"),
    s("aten._fft_r2c.default", [t(5, 1, 4)], "$0", [0], 1, False),
    s("aten._fft_c2r.default", [t(4, 4, dtype="complex64")], "$0", [1], 2, 6),
    s("aten._fft_c2r.default", [t(3, 5, 4, dtype="complex64")], "$0", [0, 2], 0, 6),
    # --- view_as_real / view_as_complex -----------------------------------------------------
    s("aten.view_as_real.default", [t(4, 5, dtype="complex64")], "$0"),
    s("aten.view_as_real.default", [t(3, 1, 4, dtype="complex64")], "$0"),
    s("aten.view_as_complex.default", [t(4, 5, 2)], "$0"),
    s("aten.view_as_complex.default", [t(3, 2)], "$0"),
    # --- _unsafe_index_put -------------------------------------------------------------------
    s("aten._unsafe_index_put.default", [t(6, 4), t(3, dtype="int64", range=[0, 6]), t(3, 4)], "$0", ["$1"], "$2", True,
      note="t5: embedding backward accumulates"),
    s("aten._unsafe_index_put.default", [t(5, 8), t(2, dtype="int64", range=[0, 8], unique=True), t(5, 2)], "$0", [None, "$1"], "$2", False),
    s("aten._unsafe_index_put.default", [t(7, 3), t(4, dtype="int64", range=[0, 7]), t(1)], "$0", ["$1"], "$2", True,
      note="a broadcast value"),
    # --- random ops (values are random: shapes compared) --------------------------------------
    s("aten.bernoulli.p", [t(4, 6)], "$0", 0.5, compare="shape"),
    s("aten.bernoulli.p", [t(8, 1, 1, 1)], "$0", 0.9, compare="shape", note="swin: stochastic depth"),
    s("aten.bernoulli_.float", [t(5, 3)], "$0", 0.3, compare="shape"),
    s("aten.bernoulli.default", [t(4, 6, values="unit")], "$0", compare="shape"),
    s("aten.rand_like.default", [t(4, 6)], "$0", compare="shape"),
    s("aten.randn_like.default", [t(3, 1, 5)], "$0", compare="shape"),
    s("prims.inductor_seeds.default", [], 4, "cpu", compare="shape"),
    s("prims.inductor_lookup_seed.default", [t(4, dtype="int64", range=[0, 1000])], "$0", 2),
    s("prims.inductor_random.default", [t(dtype="int64", range=[0, 1000])], [4, 6], "$0", "rand", compare="shape"),
    s("prims.inductor_random.default", [t(dtype="int64", range=[0, 1000])], [3, 1, 5], "$0", "randn", compare="shape"),
]
