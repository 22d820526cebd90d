"""Samples of the training-graph ops (include/ctshard/registry/training_ops.hpp and apex's fused
layer norm backward): gather / scatter, convolution backward, max pooling, batch norm, nll loss,
fused RMS norm, embedding bags, grouped matmul, cumsum, sort / topk, histc.

Shapes follow the real graphs of ../shared/graphs/more (resnet50_bw, dlrm_fw / dlrm_bw,
qwen3_moe_fw) scaled down, with uneven and size-1 dims.  Integer tensors carry `range` = [low,
high).  REFERENCES stand in where the CPU op is missing (`_fused_rms_norm_backward`: the
decomposition; apex: the kernel's math) or where random inputs would be invalid (embedding-bag
offsets and grouped-matmul offs must be non-decreasing: the wrappers sort them, identically on the
global and the local runs, since these operands are always Replicate).

Rows that need the executor's masking (DTensor's `_MaskPartial`: gather of a row-sharded self,
row-wise embedding bag) are the masked Partials of docs/rules.md; `MASKED` gives the runner their
per-rank call (`masked_local_fn`).
"""

from __future__ import annotations

import torch

aten = torch.ops.aten


def _f(shape, **kw):
    return {"shape": list(shape), "dtype": "float32", **kw}


def _i(shape, lo, hi, dtype="int64"):
    return {"shape": list(shape), "dtype": dtype, "range": [lo, hi]}


# ---------------------------------------------------------------------------------------
# reference ops

def _sorted_offsets(offsets: torch.Tensor, total: int) -> torch.Tensor:
    """Non-decreasing offsets starting at 0, none beyond `total`."""
    o = offsets.sort().values.clamp(0, total)
    if o.numel():
        o = o - o[0]
    return o


def embedding_bag(weight, indices, offsets, scale_grad_by_freq=False, mode=0, sparse=False, per_sample_weights=None,
                  include_last_offset=False, padding_idx=-1):
    offsets = _sorted_offsets(offsets, indices.numel())
    if include_last_offset and offsets.numel():
        offsets = offsets.clone()
        offsets[-1] = indices.numel()
    return aten._embedding_bag.default(weight, indices, offsets, scale_grad_by_freq, mode, sparse, per_sample_weights,
                                       include_last_offset, padding_idx)


def embedding_bag_forward_only(*args, **kwargs):
    return embedding_bag(*args, **kwargs)


def embedding_bag_backward(grad, indices, offsets, offset2bag, bag_size, maximum_indices, num_weights, scale_grad_by_freq,
                           mode, sparse, per_sample_weights=None, padding_idx=-1):
    """The backward with the auxiliary tensors the forward would give for these indices and
    offsets (they are always Replicate); for mode max, `maximum_indices` as given (any weight
    rows). A sparse result is densified (the same logical tensor)."""
    offsets = _sorted_offsets(offsets, indices.numel())
    dummy = torch.zeros(num_weights, grad.shape[1], dtype=grad.dtype)
    _, o2b, bs, mi = aten._embedding_bag.default(dummy, indices, offsets, False, mode, False, per_sample_weights, False,
                                                 padding_idx)
    if mode == 2:
        mi = maximum_indices
    r = aten._embedding_bag_backward.default(grad, indices, offsets, o2b, bs, mi, num_weights, scale_grad_by_freq, mode,
                                             sparse, per_sample_weights, padding_idx)
    return r.to_dense() if r.layout != torch.strided else r


def grouped_mm(a, b, offs=None, bias=None, out_dtype=None):
    """The grouped matmul with its offsets sorted and the last one at the grouped dim's end."""
    if offs is not None:
        grouped = a.shape[0] if a.dim() == 2 and b.dim() == 3 else a.shape[-1] if a.dim() == 2 else b.shape[-1]
        offs = offs.sort().values.clamp(0, grouped)
        if offs.numel():
            offs[-1] = grouped  # every row / column in some group (the kernel leaves the rest unwritten)
    return aten._grouped_mm.default(a, b, offs, bias, out_dtype)


def fused_rms_norm_backward(grad_out, input, normalized_shape, rstd, weight, output_mask):
    """aten._fused_rms_norm_backward has no CPU kernel: its decomposition (the saved rstd used as
    given)."""
    from torch._decomp import decomposition_table

    return decomposition_table[aten._fused_rms_norm_backward.default](grad_out, input, normalized_shape, rstd, weight,
                                                                      output_mask)


def apex_layer_norm_backward(grad_output, mean, invvar, input_or_output, normalized_shape, weight, bias, eps,
                             memory_efficient=False):
    """apex's `fused_layer_norm_affine_bwd` math (memory_efficient=False: input_or_output is the
    input): mean / invvar flattened over the leading dims, used as given."""
    if memory_efficient:
        raise NotImplementedError("memory_efficient=True is not simulated")
    k = len(normalized_shape)
    lead = input_or_output.shape[:input_or_output.dim() - k]
    n = 1
    for s in lead:
        n *= s
    x = input_or_output.reshape(n, -1).to(torch.float64)
    g = grad_output.reshape(n, -1).to(torch.float64)
    m = mean.reshape(n, 1).to(torch.float64)
    iv = invvar.reshape(n, 1).to(torch.float64)
    w = weight.reshape(1, -1).to(torch.float64)
    xhat = (x - m) * iv
    gw = g * w
    grad_input = iv * (gw - gw.mean(1, keepdim=True) - xhat * (gw * xhat).mean(1, keepdim=True))
    grad_weight = (g * xhat).sum(0).reshape(weight.shape)
    grad_bias = g.sum(0).reshape(bias.shape)
    dt = input_or_output.dtype
    return grad_input.reshape(input_or_output.shape).to(dt), grad_weight.to(weight.dtype), grad_bias.to(bias.dtype)


REFERENCES = {
    "aten._embedding_bag.default": embedding_bag,
    "aten._embedding_bag_forward_only.default": embedding_bag_forward_only,
    "aten._embedding_bag_backward.default": embedding_bag_backward,
    "aten._grouped_mm.default": grouped_mm,
    "aten._fused_rms_norm_backward.default": fused_rms_norm_backward,
    "apex.fused_layer_norm_affine_bwd.default": apex_layer_norm_backward,
}


# ---------------------------------------------------------------------------------------
# masked rows (DTensor _MaskPartial): the per-rank op when the indexed operand is row-sharded

def masked_local_fn(op: str, rows_held, args: list, kwargs: dict):
    """Per-rank call for a masked-Partial row: `rows_held` are the global positions (along the
    gathered dim / the weight's rows) of the rank's block of the indexed operand.  Indices outside
    the block contribute zeros; the auxiliary outputs of an embedding bag are those of the global
    indices.  Returns the op's outputs, or None when `op` has no masked row."""
    held = torch.as_tensor(rows_held, dtype=torch.int64).reshape(-1)
    if op == "aten.gather.default":
        self_, dim, index = args[0], args[1], args[2]
        size = max(int(held.max()) + 1 if held.numel() else 0, int(index.max()) + 1 if index.numel() else 0)
        pos = torch.full((size,), -1, dtype=torch.int64)
        pos[held] = torch.arange(held.numel())
        local = pos[index]
        mask = local < 0
        if held.numel() == 0:
            return [torch.zeros(index.shape, dtype=self_.dtype)]
        out = aten.gather.default(self_, dim, local.clamp(min=0))
        return [out.masked_fill(mask, 0)]
    if op in ("aten._embedding_bag.default", "aten._embedding_bag_forward_only.default"):
        full = dict(zip(["weight", "indices", "offsets", "scale_grad_by_freq", "mode", "sparse", "per_sample_weights",
                         "include_last_offset", "padding_idx"], args))
        full.update(kwargs)
        w, idx = full["weight"], full["indices"]
        n_rows = int(max(int(held.max()) + 1 if held.numel() else 0, int(idx.max()) + 1 if idx.numel() else 0))
        pos = torch.full((n_rows,), -1, dtype=torch.int64)
        pos[held] = torch.arange(held.numel())
        local = pos[idx]
        keep = (local >= 0).to(w.dtype)
        psw = full.get("per_sample_weights")
        psw = keep if psw is None else psw * keep
        pad = full.get("padding_idx", -1)
        pad_local = int(pos[pad]) if pad is not None and 0 <= pad < n_rows and pos[pad] >= 0 else -1
        if pad is not None and pad >= 0:
            psw = psw * (idx != pad).to(w.dtype)
        offsets = _sorted_offsets(full["offsets"], idx.numel())
        if full.get("include_last_offset", False) and offsets.numel():
            offsets = offsets.clone()
            offsets[-1] = idx.numel()
        bags = offsets.numel() - (1 if full.get("include_last_offset", False) else 0)
        if held.numel() == 0:
            out = torch.zeros(bags, w.shape[1], dtype=w.dtype)
        else:
            out = aten._embedding_bag.default(w, local.clamp(min=0), offsets, False, 0, False, psw,
                                              full.get("include_last_offset", False), pad_local)[0]
        dummy = torch.zeros(n_rows, w.shape[1], dtype=w.dtype)
        aux = aten._embedding_bag.default(dummy, idx, offsets, False, 0, False, full.get("per_sample_weights"),
                                          full.get("include_last_offset", False), -1 if pad is None else pad)[1:]
        return [out, *aux]
    return None


def _masked_factory(tensor_arg: int, dim_of):
    """MASKED entry: the row masks when the tensor at positional argument `tensor_arg` is split
    along its indexed dim `dim_of(args)`; each rank then runs `masked_local_fn` with the global
    positions it holds."""

    def factory(sample, in_specs, mesh):
        from dtensor_oracle import parse_spec  # tests/python/conformance, on the runner's path
        from simulate import layout
        from torch.distributed.tensor.placement_types import Replicate, Shard, _StridedShard

        ref = sample.args[tensor_arg]
        i = int(ref[1:])
        shape = sample.tensors[i]["shape"]
        d = dim_of(sample.args) % max(1, len(shape))
        pl = parse_spec(in_specs[i])
        along = [p for p in pl if isinstance(p, (Shard, _StridedShard)) and p.dim == d]
        if not along:
            return None
        one = [Shard(0) if isinstance(p, Shard) and p.dim == d else
               _StridedShard(0, split_factor=p.split_factor) if isinstance(p, _StridedShard) and p.dim == d else Replicate()
               for p in pl]
        held = {r: t.reshape(-1) for r, t in layout(torch.arange(shape[d]).reshape(-1, 1), mesh, one, None).items()}
        return lambda rank, *args, **kwargs: masked_local_fn(sample.op, held[rank], list(args), kwargs)

    return factory


MASKED = {
    "aten.gather.default": _masked_factory(0, lambda args: args[1]),
    "aten._embedding_bag.default": _masked_factory(0, lambda args: 0),
    "aten._embedding_bag_forward_only.default": _masked_factory(0, lambda args: 0),
}


# ---------------------------------------------------------------------------------------
# samples

# The missing-row search runs operands in layouts no row pairs (e.g. grad_output whole, indices
# split): these CPU kernels index one operand by another without a shape check and crash the
# process (segfault / division by zero) instead of raising.
NO_MISSING = "the CPU kernel crashes on operands of mismatched local shapes instead of raising"

SAMPLES: list[dict] = [
    # gather(self, dim, index): qwen3_moe_fw gathers [2048, V] log-probs at [2048, 1] targets
    {"op": "aten.gather.default", "tensors": [_f([4, 6]), _i([4, 3], 0, 6)], "args": ["$0", 1, "$1"], "kwargs": {}},
    {"op": "aten.gather.default", "tensors": [_f([5, 7]), _i([5, 1], 0, 7)], "args": ["$0", 1, "$1"], "kwargs": {},
     "note": "qwen3 loss gather; index size 1 on dim: the masked row-wise row"},
    {"op": "aten.gather.default", "tensors": [_f([6, 3]), _i([2, 3], 0, 6)], "args": ["$0", 0, "$1"], "kwargs": {}},
    {"op": "aten.gather.default", "tensors": [_f([4, 1]), _i([2, 1], 0, 1)], "args": ["$0", -1, "$1"], "kwargs": {},
     "note": "index shorter than self on dim 0: no dim-0 row (DTensor lists one, unsound)"},
    {"op": "aten.gather.default", "tensors": [_f([3, 5, 2]), _i([3, 5, 1], 0, 2)], "args": ["$0", -1, "$1"],
     "kwargs": {"sparse_grad": False}},
    # scatter.value / scatter.src / scatter_add(self, dim, index, value | src): t5_small_bw scatters -1.0
    {"op": "aten.scatter.value", "tensors": [_f([4, 6]), _i([4, 3], 0, 6)], "args": ["$0", 1, "$1", -1.0], "kwargs": {}},
    {"op": "aten.scatter.value", "tensors": [_f([5, 4]), _i([3, 4], 0, 5)], "args": ["$0", 0, "$1", 2.5], "kwargs": {}},
    {"op": "aten.scatter.value", "tensors": [_f([3, 1, 5]), _i([3, 1, 2], 0, 5)], "args": ["$0", 2, "$1", 0], "kwargs": {}},
    {"op": "aten.scatter.src", "tensors": [_f([4, 6]), _i([4, 3], 0, 6), _f([4, 3])], "args": ["$0", 1, "$1", "$2"], "kwargs": {}},
    {"op": "aten.scatter.src", "tensors": [_f([5, 4]), _i([3, 4], 0, 5), _f([3, 4])], "args": ["$0", 0, "$1", "$2"], "kwargs": {}},
    {"op": "aten.scatter.src", "tensors": [_f([4, 6]), _i([4, 3], 0, 6), _f([4, 5])], "args": ["$0", -1, "$1", "$2"], "kwargs": {}},
    {"op": "aten.scatter.src", "tensors": [_f([4, 6]), _i([2, 3], 0, 6), _f([4, 3])], "args": ["$0", 1, "$1", "$2"], "kwargs": {}},
    {"op": "aten.scatter_add.default", "tensors": [_f([4, 6]), _i([4, 3], 0, 6), _f([4, 3])], "args": ["$0", 1, "$1", "$2"], "kwargs": {}},
    {"op": "aten.scatter_add.default", "tensors": [_f([5, 4]), _i([3, 4], 0, 5), _f([3, 4])], "args": ["$0", 0, "$1", "$2"], "kwargs": {}},
    {"op": "aten.scatter_add.default", "tensors": [_f([3, 5]), _i([7, 5], 0, 3), _f([7, 5])], "args": ["$0", 0, "$1", "$2"], "kwargs": {},
     "note": "more contributions than rows: the index-sharded row sums them over ranks"},
    {"op": "aten.scatter_add.default", "tensors": [_f([4, 6]), _i([4, 2], 0, 6), _f([4, 5])], "args": ["$0", 1, "$1", "$2"], "kwargs": {}},
    # convolution_backward(grad_output, input, weight, bias_sizes, stride, padding, dilation, transposed, output_padding,
    # groups, output_mask): resnet50_bw's 1x1 and 3x3 convolutions
    {"op": "aten.convolution_backward.default", "tensors": [_f([4, 6, 5, 5]), _f([4, 3, 5, 5]), _f([6, 3, 1, 1])],
     "args": ["$0", "$1", "$2", [0], [1, 1], [0, 0], [1, 1], False, [0, 0], 1, [True, True, False]], "kwargs": {}},
    {"op": "aten.convolution_backward.default", "tensors": [_f([3, 5, 4, 4]), _f([3, 4, 7, 7]), _f([5, 4, 3, 3])],
     "args": ["$0", "$1", "$2", [5], [2, 2], [1, 1], [1, 1], False, [0, 0], 1, [True, True, True]], "kwargs": {}},
    {"op": "aten.convolution_backward.default", "tensors": [_f([2, 4, 6]), _f([2, 3, 12]), _f([4, 3, 2])],
     "args": ["$0", "$1", "$2", [4], [2], [0], [1], False, [0], 1, [True, True, True]], "kwargs": {},
     "note": "disjoint windows on the last dim: the last-dim row"},
    {"op": "aten.convolution_backward.default", "tensors": [_f([2, 4, 4, 4]), _f([2, 3, 8, 8]), _f([4, 3, 2, 2])],
     "args": ["$0", "$1", "$2", [4], [2, 2], [0, 0], [1, 1], False, [0, 0], 1, [True, True, True]], "kwargs": {},
     "note": "patch embedding: 8 columns split on 3 ranks do not hold whole windows (filtered)"},
    {"op": "aten.convolution_backward.default", "tensors": [_f([2, 3, 7]), _f([2, 4, 5]), _f([4, 3, 3])],
     "args": ["$0", "$1", "$2", [3], [1], [0], [1], True, [0], 1, [True, True, True]], "kwargs": {}, "note": "transposed"},
    {"op": "aten.convolution_backward.default", "tensors": [_f([2, 6, 4]), _f([2, 4, 6]), _f([6, 2, 3])],
     "args": ["$0", "$1", "$2", None, [1], [0], [1], False, [0], 2, [True, True, False]], "kwargs": {}, "note": "groups=2, no bias"},
    {"op": "aten.convolution_backward.default", "tensors": [_f([5, 6, 3, 3]), _f([5, 3, 3, 3]), _f([6, 3, 1, 1])],
     "args": ["$0", "$1", "$2", [6], [1, 1], [0, 0], [1, 1], False, [0, 0], 1, [False, True, True]], "kwargs": {}},
    # max_pool2d_with_indices(self, kernel_size, stride, padding, dilation, ceil_mode) and its backward (resnet50)
    {"op": "aten.max_pool2d_with_indices.default", "tensors": [_f([2, 3, 7, 7])], "args": ["$0", [3, 3], [2, 2], [1, 1], [1, 1], False],
     "kwargs": {}},
    {"op": "aten.max_pool2d_with_indices.default", "tensors": [_f([3, 5, 5])], "args": ["$0", [2, 2], [2, 2]], "kwargs": {},
     "note": "unbatched [C, H, W]"},
    {"op": "aten.max_pool2d_with_indices.default", "tensors": [_f([1, 5, 6, 6])], "args": ["$0", [3, 3], [2, 2], [0, 0], [1, 1], True],
     "kwargs": {}},
    {"op": "aten.max_pool2d_with_indices_backward.default", "no_missing": NO_MISSING,
     "tensors": [_f([2, 3, 4, 4]), _f([2, 3, 7, 7]), _i([2, 3, 4, 4], 0, 49)],
     "args": ["$0", "$1", [3, 3], [2, 2], [1, 1], [1, 1], False, "$2"], "kwargs": {}},
    {"op": "aten.max_pool2d_with_indices_backward.default", "no_missing": NO_MISSING, "tensors": [_f([3, 2, 2]), _f([3, 5, 5]), _i([3, 2, 2], 0, 25)],
     "args": ["$0", "$1", [2, 2], [2, 2], [0, 0], [1, 1], False, "$2"], "kwargs": {}},
    {"op": "aten.max_pool2d_with_indices_backward.default", "no_missing": NO_MISSING,
     "tensors": [_f([5, 1, 3, 3]), _f([5, 1, 6, 6]), _i([5, 1, 3, 3], 0, 36)],
     "args": ["$0", "$1", [2, 2], [2, 2], [0, 0], [1, 1], False, "$2"], "kwargs": {}},
    # avg_pool2d(self, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override),
    # _adaptive_avg_pool2d(self, output_size) and their backward (grad_output, self, ...)
    {"op": "aten.avg_pool2d.default", "tensors": [_f([2, 3, 6, 6])], "args": ["$0", [2, 2], [2, 2]], "kwargs": {}},
    {"op": "aten.avg_pool2d.default", "tensors": [_f([3, 5, 5])], "args": ["$0", [3, 3], [2, 2], [1, 1], True, False], "kwargs": {},
     "note": "unbatched, padding not counted, ceil mode"},
    {"op": "aten._adaptive_avg_pool2d.default", "tensors": [_f([5, 2, 4, 4])], "args": ["$0", [1, 1]], "kwargs": {}},
    {"op": "aten._adaptive_avg_pool2d.default", "tensors": [_f([2, 3, 7, 5])], "args": ["$0", [3, 2]], "kwargs": {}},
    {"op": "aten.avg_pool2d_backward.default", "no_missing": NO_MISSING, "tensors": [_f([2, 3, 3, 3]), _f([2, 3, 6, 6])],
     "args": ["$0", "$1", [2, 2], [2, 2], [0, 0], False, True, None], "kwargs": {}},
    {"op": "aten.avg_pool2d_backward.default", "no_missing": NO_MISSING, "tensors": [_f([3, 3, 3]), _f([3, 5, 5])],
     "args": ["$0", "$1", [3, 3], [2, 2], [1, 1], True, False, None], "kwargs": {}, "note": "unbatched, overlapping windows"},
    {"op": "aten.avg_pool2d_backward.default", "no_missing": NO_MISSING, "tensors": [_f([5, 1, 2, 2]), _f([5, 1, 4, 4])],
     "args": ["$0", "$1", [2, 2], [2, 2], [0, 0], False, True, 3], "kwargs": {}, "note": "divisor_override"},
    {"op": "aten._adaptive_avg_pool2d_backward.default", "no_missing": NO_MISSING, "tensors": [_f([5, 2, 1, 1]), _f([5, 2, 4, 4])], "args": ["$0", "$1"], "kwargs": {},
     "note": "resnet's global pooling"},
    {"op": "aten._adaptive_avg_pool2d_backward.default", "no_missing": NO_MISSING, "tensors": [_f([3, 2, 3]), _f([3, 5, 7])], "args": ["$0", "$1"], "kwargs": {},
     "note": "unbatched: dim 1 is spatial"},
    # batch norm forward (input, weight?, bias?, running_mean?, running_var?, training, momentum, eps)
    {"op": "aten.native_batch_norm.default",
     "tensors": [_f([4, 3, 5, 5]), _f([3]), _f([3]), _f([3]), _f([3], values="positive")],
     "args": ["$0", "$1", "$2", "$3", "$4", True, 0.1, 1e-5], "kwargs": {}},
    {"op": "aten.native_batch_norm.default",
     "tensors": [_f([5, 3, 4, 2]), _f([3]), _f([3]), _f([3]), _f([3], values="positive")],
     "args": ["$0", "$1", "$2", "$3", "$4", False, 0.1, 1e-5], "kwargs": {}, "note": "eval: batch and spatial rows"},
    {"op": "aten.native_batch_norm.default", "tensors": [_f([5, 4]), _f([4]), _f([4], values="positive")],
     "args": ["$0", None, None, "$1", "$2", False, 0.1, 1e-5], "kwargs": {}},
    {"op": "aten.native_batch_norm.default", "tensors": [_f([3, 5, 4]), _f([5]), _f([5])],
     "args": ["$0", "$1", "$2", None, None, True, 0.1, 1e-5], "kwargs": {}},
    {"op": "aten._native_batch_norm_legit.default",
     "tensors": [_f([3, 2, 4]), _f([2]), _f([2]), _f([2]), _f([2], values="positive")],
     "args": ["$0", "$1", "$2", "$3", "$4", True, 0.1, 1e-5], "kwargs": {}},
    {"op": "aten._native_batch_norm_legit.no_stats", "tensors": [_f([4, 3, 5]), _f([3]), _f([3])],
     "args": ["$0", "$1", "$2", True, 0.1, 1e-5], "kwargs": {}},
    {"op": "aten._native_batch_norm_legit_no_training.default",
     "tensors": [_f([4, 3, 5, 5]), _f([3]), _f([3]), _f([3]), _f([3], values="positive")],
     "args": ["$0", "$1", "$2", "$3", "$4", 0.1, 1e-5], "kwargs": {}},
    {"op": "aten._native_batch_norm_legit_functional.default",
     "tensors": [_f([4, 3, 3, 3]), _f([3]), _f([3]), _f([3]), _f([3], values="positive")],
     "args": ["$0", "$1", "$2", "$3", "$4", True, 0.1, 1e-5], "kwargs": {}},
    {"op": "aten._native_batch_norm_legit_functional.default",
     "tensors": [_f([5, 2, 3]), _f([2]), _f([2], values="positive")],
     "args": ["$0", None, None, "$1", "$2", False, 0.1, 1e-5], "kwargs": {}},
    # native_batch_norm_backward(grad_out, input, weight?, running_mean?, running_var?, save_mean?, save_invstd?, train,
    # eps, output_mask)
    {"op": "aten.native_batch_norm_backward.default", "no_missing": NO_MISSING,
     "tensors": [_f([4, 3, 5, 5]), _f([4, 3, 5, 5]), _f([3]), _f([3]), _f([3], values="positive"), _f([3]),
                 _f([3], values="positive")],
     "args": ["$0", "$1", "$2", "$3", "$4", "$5", "$6", True, 1e-5, [True, True, True]], "kwargs": {}},
    {"op": "aten.native_batch_norm_backward.default", "no_missing": NO_MISSING,
     "tensors": [_f([5, 3, 4]), _f([5, 3, 4]), _f([3]), _f([3]), _f([3], values="positive")],
     "args": ["$0", "$1", "$2", None, None, "$3", "$4", True, 1e-5, [False, True, True]], "kwargs": {},
     "note": "training without grad_input: batch-sharded weight / bias gradients"},
    {"op": "aten.native_batch_norm_backward.default", "no_missing": NO_MISSING,
     "tensors": [_f([5, 3, 4, 2]), _f([5, 3, 4, 2]), _f([3]), _f([3]), _f([3], values="positive"), _f([0]), _f([0])],
     "args": ["$0", "$1", "$2", "$3", "$4", "$5", "$6", False, 1e-5, [True, True, True]], "kwargs": {},
     "note": "eval: empty save_mean / save_invstd"},
    {"op": "aten.native_batch_norm_backward.default", "no_missing": NO_MISSING,
     "tensors": [_f([3, 5]), _f([3, 5]), _f([5]), _f([5], values="positive")],
     "args": ["$0", "$1", None, None, None, "$2", "$3", True, 1e-5, [True, True, False]], "kwargs": {},
     "note": "5 channels, not 4: an empty channel block (4 on 3 ranks) aborts the CPU kernel even in a filtered row"},
    # nll_loss_forward(self, target, weight?, reduction, ignore_index) -> (output, total_weight)
    {"op": "aten.nll_loss_forward.default", "tensors": [_f([6, 5]), _i([6], 0, 5)], "args": ["$0", "$1", None, 1, -100], "kwargs": {}},
    {"op": "aten.nll_loss_forward.default", "tensors": [_f([6, 5]), _i([6], 0, 5), _f([5], values="positive")],
     "args": ["$0", "$1", "$2", 2, -100], "kwargs": {}},
    {"op": "aten.nll_loss_forward.default", "tensors": [_f([5, 4]), _i([5], 0, 4), _f([4], values="positive")],
     "args": ["$0", "$1", "$2", 0, -100], "kwargs": {}},
    {"op": "aten.nll_loss_forward.default", "tensors": [_f([5, 3]), _i([5], 0, 3)], "args": ["$0", "$1", None, 1, 0], "kwargs": {},
     "note": "mean with ignored targets: no batch row (DTensor's P(avg) is unsound)"},
    {"op": "aten.nll_loss_forward.default", "tensors": [_f([5, 3]), _i([5], 0, 3)], "args": ["$0", "$1", None, 2, 1], "kwargs": {}},
    {"op": "aten.nll_loss_forward.default", "tensors": [_f([5]), _i([], 0, 5)], "args": ["$0", "$1", None, 1, -100], "kwargs": {}},
    # nll_loss_backward(grad_output, self, target, weight?, reduction, ignore_index, total_weight)
    {"op": "aten.nll_loss_backward.default", "no_missing": NO_MISSING, "tensors": [_f([]), _f([6, 5]), _i([6], 0, 5), _f([], values="positive")],
     "args": ["$0", "$1", "$2", None, 1, -100, "$3"], "kwargs": {}},
    {"op": "aten.nll_loss_backward.default", "no_missing": NO_MISSING,
     "tensors": [_f([]), _f([6, 5]), _i([6], 0, 5), _f([5], values="positive"), _f([], values="positive")],
     "args": ["$0", "$1", "$2", "$3", 2, -100, "$4"], "kwargs": {}},
    {"op": "aten.nll_loss_backward.default", "no_missing": NO_MISSING, "tensors": [_f([5]), _f([5, 4]), _i([5], 0, 4), _f([])],
     "args": ["$0", "$1", "$2", None, 0, -100, "$3"], "kwargs": {}},
    {"op": "aten.nll_loss_backward.default", "no_missing": NO_MISSING, "tensors": [_f([]), _f([5, 3]), _i([5], 0, 3), _f([], values="positive")],
     "args": ["$0", "$1", "$2", None, 1, 0, "$3"], "kwargs": {}},
    {"op": "aten.nll_loss_backward.default", "no_missing": NO_MISSING, "tensors": [_f([]), _f([5]), _i([], 0, 5), _f([], values="positive")],
     "args": ["$0", "$1", "$2", None, 1, -100, "$3"], "kwargs": {}},
    # _fused_rms_norm(input, normalized_shape, weight?, eps) -> (out, rstd) and its backward
    {"op": "aten._fused_rms_norm.default", "tensors": [_f([4, 6, 8]), _f([8])], "args": ["$0", [8], "$1", 1e-5], "kwargs": {}},
    {"op": "aten._fused_rms_norm.default", "tensors": [_f([5, 3, 4]), _f([3, 4])], "args": ["$0", [3, 4], "$1", 1e-6], "kwargs": {}},
    {"op": "aten._fused_rms_norm.default", "tensors": [_f([3, 8])], "args": ["$0", [8], None, None], "kwargs": {}},
    {"op": "aten._fused_rms_norm_backward.default",
     "tensors": [_f([4, 6, 8]), _f([4, 6, 8]), _f([4, 6, 1], values="positive"), _f([8])],
     "args": ["$0", "$1", [8], "$2", "$3", [True, True]], "kwargs": {}},
    {"op": "aten._fused_rms_norm_backward.default",
     "tensors": [_f([5, 3, 4]), _f([5, 3, 4]), _f([5, 1, 1], values="positive"), _f([3, 4])],
     "args": ["$0", "$1", [3, 4], "$2", "$3", [True, False]], "kwargs": {}},
    {"op": "aten._fused_rms_norm_backward.default", "tensors": [_f([3, 8]), _f([3, 8]), _f([3, 1], values="positive")],
     "args": ["$0", "$1", [8], "$2", None, [True, True]], "kwargs": {}},
    # apex fused_layer_norm_affine_bwd(grad_output, mean, invvar, input_or_output, normalized_shape, weight, bias, eps)
    {"op": "apex.fused_layer_norm_affine_bwd.default",
     "tensors": [_f([4, 3, 8]), _f([12]), _f([12], values="positive"), _f([4, 3, 8]), _f([8]), _f([8])],
     "args": ["$0", "$1", "$2", "$3", [8], "$4", "$5", 1e-5], "kwargs": {}},
    {"op": "apex.fused_layer_norm_affine_bwd.default",
     "tensors": [_f([5, 8]), _f([5]), _f([5], values="positive"), _f([5, 8]), _f([8]), _f([8])],
     "args": ["$0", "$1", "$2", "$3", [8], "$4", "$5", 1e-5], "kwargs": {}},
    {"op": "apex.fused_layer_norm_affine_bwd.default",
     "tensors": [_f([3, 2, 6]), _f([6]), _f([6], values="positive"), _f([3, 2, 6]), _f([6]), _f([6])],
     "args": ["$0", "$1", "$2", "$3", [6], "$4", "$5", 1e-5], "kwargs": {},
     "note": "3 rows of 2 tokens: dim 0 lines up with the flat statistics only on 3 ranks (filtered on 2)"},
    # _embedding_bag(weight, indices, offsets, scale_grad_by_freq, mode, sparse, per_sample_weights, include_last_offset,
    # padding_idx): dlrm_fw sums bags of a [1000000, 64] table
    {"op": "aten._embedding_bag.default", "tensors": [_f([10, 4]), _i([7], 0, 10), _i([3], 0, 8)],
     "args": ["$0", "$1", "$2", False, 0, False, None, False, -1], "kwargs": {}},
    {"op": "aten._embedding_bag.default", "tensors": [_f([10, 4]), _i([7], 0, 10), _i([3], 0, 8)],
     "args": ["$0", "$1", "$2", False, 1, False, None, False, -1], "kwargs": {}},
    {"op": "aten._embedding_bag.default", "tensors": [_f([9, 6]), _i([8], 0, 9), _i([4], 0, 9)],
     "args": ["$0", "$1", "$2", False, 2, False, None, False, -1], "kwargs": {}},
    {"op": "aten._embedding_bag.default", "tensors": [_f([10, 4]), _i([7], 0, 10), _i([3], 0, 8), _f([7])],
     "args": ["$0", "$1", "$2", False, 0, False, "$3", False, -1], "kwargs": {}},
    {"op": "aten._embedding_bag.default", "tensors": [_f([11, 6]), _i([9], 0, 11), _i([4], 0, 10)],
     "args": ["$0", "$1", "$2", False, 0, True, None, True, 3], "kwargs": {}, "note": "dlrm: sparse, include_last_offset, padding_idx"},
    {"op": "aten._embedding_bag_forward_only.default", "tensors": [_f([10, 4]), _i([7], 0, 10), _i([3], 0, 8)],
     "args": ["$0", "$1", "$2", False, 0, False, None, False, -1], "kwargs": {}},
    # _embedding_bag_backward(grad, indices, offsets, offset2bag, bag_size, maximum_indices, num_weights,
    # scale_grad_by_freq, mode, sparse, per_sample_weights, padding_idx): dlrm_bw
    {"op": "aten._embedding_bag_backward.default",
     "tensors": [_f([3, 4]), _i([7], 0, 10), _i([3], 0, 8), _i([7], 0, 3), _i([3], 0, 7), _i([3], 0, 10)],
     "args": ["$0", "$1", "$2", "$3", "$4", "$5", 10, False, 0, False, None, -1], "kwargs": {}},
    {"op": "aten._embedding_bag_backward.default",
     "tensors": [_f([3, 4]), _i([7], 0, 10), _i([3], 0, 8), _i([7], 0, 3), _i([3], 0, 7), _i([3], 0, 10)],
     "args": ["$0", "$1", "$2", "$3", "$4", "$5", 10, True, 1, False, None, -1], "kwargs": {}},
    {"op": "aten._embedding_bag_backward.default",
     "tensors": [_f([4, 6]), _i([8], 0, 9), _i([4], 0, 9), _i([8], 0, 4), _i([4], 0, 8), _i([4, 6], 0, 9)],
     "args": ["$0", "$1", "$2", "$3", "$4", "$5", 9, False, 2, False, None, -1], "kwargs": {}},
    {"op": "aten._embedding_bag_backward.default",
     "tensors": [_f([3, 4]), _i([7], 0, 10), _i([3], 0, 8), _i([7], 0, 3), _i([3], 0, 7), _i([3], 0, 10), _f([7])],
     "args": ["$0", "$1", "$2", "$3", "$4", "$5", 10, False, 0, False, "$6", -1], "kwargs": {}},
    {"op": "aten._embedding_bag_backward.default",
     "tensors": [_f([4, 6]), _i([9], 0, 11), _i([4], 0, 10), _i([9], 0, 4), _i([4], 0, 9), _i([0], 0, 1)],
     "args": ["$0", "$1", "$2", "$3", "$4", "$5", 11, False, 0, True, None, -1], "kwargs": {},
     "note": "dlrm_bw: sparse gradient (densified)"},
    # _grouped_mm(self, mat2, offs?): qwen3_moe_fw's expert matmuls (tokens [M, K] x experts [G, K, N])
    {"op": "aten._grouped_mm.default", "tensors": [_f([16, 8]), _f([4, 8, 12]), _i([4], 0, 17, "int32")],
     "args": ["$0", "$1", "$2"], "kwargs": {}},
    {"op": "aten._grouped_mm.default", "tensors": [_f([12, 12]), _f([3, 12, 20]), _i([3], 0, 13, "int32")],
     "args": ["$0", "$1", "$2"], "kwargs": {}, "note": "K = 12 splits into aligned pieces on 3 ranks only; N = 20 on neither"},
    {"op": "aten._grouped_mm.default", "tensors": [_f([3, 5, 8]), _f([3, 8, 12])], "args": ["$0", "$1"], "kwargs": {}},
    {"op": "aten._grouped_mm.default", "tensors": [_f([6, 24]), _f([24, 4]), _i([4], 0, 25, "int32")],
     "args": ["$0", "$1", "$2"], "kwargs": {}},
    {"op": "aten._grouped_mm.default", "tensors": [_f([4, 6, 8]), _f([8, 24]), _i([4], 0, 25, "int32")],
     "args": ["$0", "$1", "$2"], "kwargs": {}},
    # cumsum(self, dim, *, dtype)
    {"op": "aten.cumsum.default", "tensors": [_f([3, 7], values="small_int")], "args": ["$0", -1], "kwargs": {},
     "note": "qwen3 cumsum(ne, -1) over a mask, as floats (a Partial of integers is not simulated)"},
    {"op": "aten.cumsum.default", "tensors": [_f([6])], "args": ["$0", 0], "kwargs": {"dtype": "torch.int32"},
     "note": "qwen3 cumsum(histc, 0, dtype=int32): no Partial row through the integer cast"},
    {"op": "aten.cumsum.default", "tensors": [_f([4, 5, 3])], "args": ["$0", 1], "kwargs": {}},
    {"op": "aten.cumsum.default", "tensors": [_f([6])], "args": ["$0", 0], "kwargs": {}},
    # topk(self, k, dim, largest, sorted); sort(self, dim, descending); sort.stable(self, *, stable, dim, descending)
    {"op": "aten.topk.default", "tensors": [_f([6, 7])], "args": ["$0", 3], "kwargs": {}},
    {"op": "aten.topk.default", "tensors": [_f([5, 4, 3])], "args": ["$0", 2, 1, False], "kwargs": {}},
    {"op": "aten.topk.default", "tensors": [_f([9])], "args": ["$0", 8], "kwargs": {}},
    {"op": "aten.sort.default", "tensors": [_f([6])], "args": ["$0"], "kwargs": {}},
    {"op": "aten.sort.default", "tensors": [_f([4, 7])], "args": ["$0", 1, True], "kwargs": {}},
    {"op": "aten.sort.default", "tensors": [_f([3, 5, 2])], "args": ["$0", 0], "kwargs": {}},
    {"op": "aten.sort.stable", "tensors": [_i([4, 6], 0, 3)], "args": ["$0"], "kwargs": {"stable": True, "dim": 0}},
    # histc(self, bins, min, max): qwen3 counts tokens per expert with min / max given
    {"op": "aten.histc.default", "tensors": [_f([4, 6])], "args": ["$0", 10, -2.0, 2.0], "kwargs": {}},
    {"op": "aten.histc.default", "tensors": [_f([7], values="unit")], "args": ["$0", 5, 0, 1], "kwargs": {}},
    {"op": "aten.histc.default", "tensors": [_f([3, 5])], "args": ["$0", 4, 0, 0], "kwargs": {},
     "note": "min = max = 0: the data range, no sharded row"},
    {"op": "aten.histc.default", "tensors": [_f([2, 3, 5])], "args": ["$0", 8, -1, 1], "kwargs": {}},
    {"op": "aten.histc.default", "tensors": [_f([8])], "args": ["$0", 4, 3, 3], "kwargs": {},
     "note": "R10: min == max (not 0): the range comes from the data, no row"},
    {"op": "aten.histc.default", "tensors": [_f([4, 3])], "args": ["$0", 5, -1.5, -1.5], "kwargs": {}},
]
