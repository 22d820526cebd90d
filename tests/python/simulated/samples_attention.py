"""Scaled dot-product attention (flash / efficient / cuDNN, forward and backward).  The fused
kernels have no CPU implementation: the math (softmax(q k^T s + bias) v, its logsumexp, autograd
for the backward; conformance/simulate.py `_sdpa_impl`) stands in per rank as globally.  Outputs
that are not tensors of the math (seeds, offsets, cum_seq, max_q, debug mask) are not compared."""


def t(*shape, dtype="float32"):
    return {"shape": list(shape), "dtype": dtype}


B, H, S, SKV, D = 2, 3, 5, 4, 4
Q, KV = (B, H, S, D), (B, H, SKV, D)

SAMPLES = [
    {"op": "aten._scaled_dot_product_flash_attention.default", "tensors": [t(*Q), t(*KV), t(*KV)],
     "args": ["$0", "$1", "$2", 0.0, False], "kwargs": {}},
    {"op": "aten._scaled_dot_product_flash_attention.default", "tensors": [t(*Q), t(*Q), t(*Q)],
     "args": ["$0", "$1", "$2", 0.0, True], "kwargs": {"scale": 0.5}},
    {"op": "aten._scaled_dot_product_efficient_attention.default", "tensors": [t(*Q), t(*KV), t(*KV)],
     "args": ["$0", "$1", "$2", None, True, 0.0, False], "kwargs": {}},
    {"op": "aten._scaled_dot_product_efficient_attention.default",
     "tensors": [t(*Q), t(*KV), t(*KV), t(B, H, S, SKV)], "args": ["$0", "$1", "$2", "$3", False, 0.0, False],
     "kwargs": {}, "note": "with an attention bias"},
    {"op": "aten._scaled_dot_product_cudnn_attention.default", "tensors": [t(*Q), t(*KV), t(*KV)],
     "args": ["$0", "$1", "$2", None, True, 0.0, False], "kwargs": {}},
    {"op": "aten._scaled_dot_product_cudnn_attention.default", "tensors": [t(*Q), t(*Q), t(*Q)],
     "args": ["$0", "$1", "$2", None, True, 0.0, True], "kwargs": {}},
    {"op": "aten._scaled_dot_product_flash_attention_backward.default",
     "tensors": [t(*Q), t(*Q), t(*KV), t(*KV), t(*Q), t(B, H, S), t(2, dtype="uint64"), t(dtype="uint64")],
     "args": ["$0", "$1", "$2", "$3", "$4", "$5", None, None, S, SKV, 0.0, False, "$6", "$7"], "kwargs": {}},
    {"op": "aten._scaled_dot_product_flash_attention_backward.default",
     "tensors": [t(*Q), t(*Q), t(*Q), t(*Q), t(*Q), t(B, H, S), t(2, dtype="uint64"), t(dtype="uint64")],
     "args": ["$0", "$1", "$2", "$3", "$4", "$5", None, None, S, S, 0.0, True, "$6", "$7"], "kwargs": {}},
    {"op": "aten._scaled_dot_product_efficient_attention_backward.default",
     "tensors": [t(*Q), t(*Q), t(*KV), t(*KV), t(*Q), t(B, H, 32), t(dtype="int64"), t(dtype="int64")],
     "args": ["$0", "$1", "$2", "$3", None, "$4", "$5", "$6", "$7", 0.0, [True, True, True, False], False],
     "kwargs": {}},
    {"op": "aten._scaled_dot_product_cudnn_attention_backward.default",
     "tensors": [t(*Q), t(*Q), t(*KV), t(*KV), t(*Q), t(B, H, S, 1), t(dtype="int64"), t(dtype="int64")],
     "args": ["$0", "$1", "$2", "$3", "$4", "$5", "$6", "$7", None, None, None, S, SKV, 0.0, False], "kwargs": {}},
]
