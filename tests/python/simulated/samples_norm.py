"""Normalization: native_layer_norm (with / without weight and bias, one or two normalized dims)
and its backward (output mask variants); apex's fused_layer_norm_affine_fwd (reference below:
the apex kernel's math, mean / invvar flattened over the leading dims)."""

import torch


def t(*shape):
    return {"shape": list(shape), "dtype": "float32"}


def ln(shape, k, weight=True, bias=True):
    norm = list(shape[-k:])
    tensors = [t(*shape)]
    args = ["$0", norm]
    for flag in (weight, bias):
        if flag:
            args.append(f"${len(tensors)}")
            tensors.append(t(*norm))
        else:
            args.append(None)
    args.append(1e-5)
    return {"op": "aten.native_layer_norm.default", "tensors": tensors, "args": args, "kwargs": {}}


def ln_bwd(shape, k, weight=True, bias=True, mask=(True, True, True)):
    norm = list(shape[-k:])
    stat = list(shape[:-k]) + [1] * k
    tensors = [t(*shape), t(*shape), t(*stat), {"shape": stat, "dtype": "float32", "values": "positive"}]
    args = ["$0", "$1", norm, "$2", "$3"]
    for flag in (weight, bias):
        if flag:
            args.append(f"${len(tensors)}")
            tensors.append(t(*norm))
        else:
            args.append(None)
    args.append(list(mask))
    return {"op": "aten.native_layer_norm_backward.default", "tensors": tensors, "args": args, "kwargs": {}}


def apex_ln(shape, k):
    norm = list(shape[-k:])
    return {"op": "apex.fused_layer_norm_affine_fwd.default", "tensors": [t(*shape), t(*norm), t(*norm)],
            "args": ["$0", "$1", "$2", norm, 1e-5], "kwargs": {}}


SAMPLES = [
    ln((4, 6), 1),
    ln((5, 3, 4), 1),
    ln((3, 2, 4), 2, bias=False),
    ln((4, 5), 1, weight=False, bias=False),
    ln_bwd((4, 6), 1),
    ln_bwd((5, 3, 4), 1, mask=(True, True, False)),
    ln_bwd((3, 2, 4), 2, weight=True, bias=False, mask=(True, True, False)),
    ln_bwd((4, 5), 1, weight=False, bias=False, mask=(True, False, False)),
    apex_ln((4, 6), 1),
    apex_ln((6, 3, 4), 1),
    apex_ln((5, 2, 3), 2),
]


def _apex_fused_layer_norm_affine_fwd(x, weight, bias, normalized_shape, eps):
    out, mean, rstd = torch.ops.aten.native_layer_norm.default(x, normalized_shape, weight, bias, eps)
    return out, mean.reshape(-1), rstd.reshape(-1)


REFERENCES = {"apex.fused_layer_norm_affine_fwd.default": _apex_fused_layer_norm_affine_fwd}
