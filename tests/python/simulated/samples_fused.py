"""Fused kernels of inference stacks, called through `higher_order.auto_functionalized(op, **kw)`
(returns (None, mutated tensors...)): vLLM's `_C.rms_norm`, `_C.fused_add_rms_norm`,
`_C.rotary_embedding`, `_C.silu_and_mul` and `vllm.unified_attention_with_output`.  No CPU
implementation exists here: REFERENCES reimplements each kernel's math in torch (token count T
uneven on 2 and 3)."""

import math

import torch


def t(*shape, **kw):
    return {"shape": list(shape), "dtype": "float32", **kw}


AF = "higher_order.auto_functionalized"
T, HID = 5, 8
SAMPLES = [
    {"op": AF, "tensors": [t(T, HID), t(T, HID), t(HID)], "args": ["_C.rms_norm.default"],
     "kwargs": {"result": "$0", "input": "$1", "weight": "$2", "epsilon": 1e-6}},
    {"op": AF, "tensors": [t(6, 2, HID), t(6, 2, HID), t(HID)], "args": ["_C.rms_norm.default"],
     "kwargs": {"result": "$0", "input": "$1", "weight": "$2", "epsilon": 1e-5}},
    {"op": AF, "tensors": [t(T, HID), t(T, HID), t(HID)], "args": ["_C.fused_add_rms_norm.default"],
     "kwargs": {"input": "$0", "residual": "$1", "weight": "$2", "epsilon": 1e-6}},
    {"op": AF, "tensors": [{"shape": [T], "dtype": "int64", "range": [0, 7]}, t(T, 2 * 4), t(T, 1 * 4), t(7, 4)],
     "args": ["_C.rotary_embedding.default"],
     "kwargs": {"positions": "$0", "query": "$1", "key": "$2", "head_size": 4, "cos_sin_cache": "$3", "is_neox": True}},
    {"op": AF, "tensors": [{"shape": [6], "dtype": "int64", "range": [0, 9]}, t(6, 3 * 4), t(6, 3 * 4), t(9, 4)],
     "args": ["_C.rotary_embedding.default"],
     "kwargs": {"positions": "$0", "query": "$1", "key": "$2", "head_size": 4, "cos_sin_cache": "$3", "is_neox": False}},
    {"op": AF, "tensors": [t(T, 3), t(T, 6)], "args": ["_C.silu_and_mul.default"],
     "kwargs": {"out": "$0", "input": "$1"}},
    {"op": AF, "tensors": [t(T, 4, 3), t(T, 4, 3), t(T, 4, 3), t(T, 4, 3)],
     "args": ["vllm.unified_attention_with_output.default"],
     "kwargs": {"query": "$0", "key": "$1", "value": "$2", "output": "$3", "layer_name": "model.layers.0.attn"}},
]


def _rms(x, w, eps):
    xd = x.to(torch.float64)
    return (xd * torch.rsqrt(xd.pow(2).mean(-1, keepdim=True) + eps) * w.to(torch.float64)).to(x.dtype)


def _rotate(x, cos, sin, head_size, neox):
    # x [T, heads * head_size]; cos / sin [T, rot / 2]
    tokens = x.shape[0]
    h = x.reshape(tokens, -1, head_size).to(torch.float64)
    rot = 2 * cos.shape[-1]
    r, rest = h[..., :rot], h[..., rot:]
    c, s = cos[:, None, :], sin[:, None, :]
    if neox:
        x1, x2 = r[..., : rot // 2], r[..., rot // 2:]
        out = torch.cat([x1 * c - x2 * s, x2 * c + x1 * s], -1)
    else:
        x1, x2 = r[..., 0::2], r[..., 1::2]
        out = torch.stack([x1 * c - x2 * s, x2 * c + x1 * s], -1).flatten(-2)
    return torch.cat([out, rest], -1).reshape(x.shape).to(x.dtype)


def _auto_functionalized(op, **kw):
    if op == "_C.rms_norm.default":
        return None, _rms(kw["input"], kw["weight"], kw["epsilon"])
    if op == "_C.fused_add_rms_norm.default":
        residual = kw["input"] + kw["residual"]
        return None, _rms(residual, kw["weight"], kw["epsilon"]), residual
    if op == "_C.rotary_embedding.default":
        cache = kw["cos_sin_cache"].to(torch.float64)[kw["positions"]]
        cos, sin = cache.chunk(2, -1)
        hs, neox = kw["head_size"], kw["is_neox"]
        return None, _rotate(kw["query"], cos, sin, hs, neox), _rotate(kw["key"], cos, sin, hs, neox)
    if op == "_C.silu_and_mul.default":
        x = kw["input"]
        d = x.shape[-1] // 2
        return None, torch.nn.functional.silu(x[..., :d]) * x[..., d:]
    if op == "vllm.unified_attention_with_output.default":
        q, k, v = (kw[n].to(torch.float64).transpose(0, 1) for n in ("query", "key", "value"))  # [H, T, D]
        scores = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
        mask = torch.ones(scores.shape[-2:], dtype=torch.bool).tril()
        out = torch.softmax(scores.masked_fill(~mask, float("-inf")), -1) @ v
        return None, out.transpose(0, 1).to(kw["query"].dtype)
    raise NotImplementedError(op)


REFERENCES = {AF: _auto_functionalized}

# higher_order.auto_functionalized_v2(op, ..., _x_base_index = i, _all_bases = [...]) returns
# (None, every base updated...): the same kernels with their mutated arguments passed as bases
# (torch `_higher_order_ops/auto_functionalize.py`), and Entangle's logging op
# tg.inplace_log_tensor(t, s) (the values unchanged) under both wrappers.
AF2 = "higher_order.auto_functionalized_v2"
LOG = "tg.inplace_log_tensor.default"
MUTATED = {"_C.rms_norm.default": ["result"], "_C.fused_add_rms_norm.default": ["input", "residual"],
           "_C.rotary_embedding.default": ["query", "key"], "_C.silu_and_mul.default": ["out"],
           "vllm.unified_attention_with_output.default": ["output"], LOG: ["t"]}
SAMPLES += [
    {"op": AF2, "tensors": [t(T, HID), t(T, HID), t(HID)], "args": ["_C.rms_norm.default"],
     "kwargs": {"input": "$1", "weight": "$2", "epsilon": 1e-6, "_result_base_index": 0, "_all_bases": ["$0"]}},
    {"op": AF2, "tensors": [t(T, HID), t(T, HID), t(HID)], "args": ["_C.fused_add_rms_norm.default"],
     "kwargs": {"weight": "$2", "epsilon": 1e-6, "_input_base_index": 1, "_residual_base_index": 0, "_all_bases": ["$1", "$0"]},
     "note": "bases in another order than the schema's mutated args"},
    {"op": AF2, "tensors": [{"shape": [T], "dtype": "int64", "range": [0, 7]}, t(T, 2 * 4), t(T, 1 * 4), t(7, 4)],
     "args": ["_C.rotary_embedding.default"],
     "kwargs": {"positions": "$0", "head_size": 4, "cos_sin_cache": "$3", "is_neox": True, "_query_base_index": 0,
                "_key_base_index": 1, "_all_bases": ["$1", "$2"]}},
    {"op": AF2, "tensors": [t(T, 3), t(T, 6)], "args": ["_C.silu_and_mul.default"],
     "kwargs": {"input": "$1", "_out_base_index": 0, "_all_bases": ["$0"]}},
    {"op": AF2, "tensors": [t(T, 4, 3), t(T, 4, 3), t(T, 4, 3), t(T, 4, 3)], "args": ["vllm.unified_attention_with_output.default"],
     "kwargs": {"query": "$0", "key": "$1", "value": "$2", "layer_name": "model.layers.0.attn", "_output_base_index": 0,
                "_all_bases": ["$3"]}},
    {"op": AF2, "tensors": [t(6, 5)], "args": [LOG], "kwargs": {"s": "module.weight", "_t_base_index": 0, "_all_bases": ["$0"]}},
    {"op": AF2, "tensors": [t(7)], "args": [LOG], "kwargs": {"s": "module.bias", "_t_base_index": 0, "_all_bases": ["$0"]}},
    {"op": AF, "tensors": [t(4, 6)], "args": [LOG], "kwargs": {"t": "$0", "s": "x"}},
]


def _auto_functionalized_v2(op, **kw):
    bases = kw.pop("_all_bases")
    names = MUTATED[op]
    index = {n: kw.pop(f"_{n}_base_index") for n in names}
    for n in names:
        kw[n] = bases[index[n]]
    res = _auto_functionalized(op, **kw)
    new = list(bases)
    for n, value in zip(names, res[1:]):
        new[index[n]] = value
    return (None, *new)


_v1 = _auto_functionalized


def _auto_functionalized_any(op, **kw):
    if op == LOG:
        return None, kw["t"].clone()
    return _v1(op, **kw)


_auto_functionalized = _auto_functionalized_any
REFERENCES = {AF: _auto_functionalized_any, AF2: _auto_functionalized_v2}
