"""Scaled dot-product attention (flash / efficient / cuDNN, forward and backward).  The fused
kernels have no CPU implementation: the math (softmax(q k^T s + bias) v, its logsumexp, autograd
for the backward; conformance/simulate.py `_sdpa_impl`) stands in per rank as globally.  Outputs
that are not tensors of the math (seeds, offsets, cum_seq, max_q, debug mask) are not compared."""


import torch


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

# higher_order.flex_attention(q, k, v, score_mod, block_mask, scale, kernel_options, score_bufs,
# mask_bufs) -> (out, logsumexp, max_scores): score_mod / mask_mod absent (plain attention inside
# the blocks the block mask lists). The block-mask tuple is torch 2.13's BlockMask.as_tuple():
# (Q_LEN, KV_LEN, kv_num_blocks, kv_indices, full_kv_num_blocks, full_kv_indices, q_num_blocks,
# q_indices, full_q_num_blocks, full_q_indices, 4 x dq metadata, Q_BLOCK, KV_BLOCK, mask_mod); the
# reference masks by kv_num_blocks / kv_indices (+ the full blocks), so a block mask laid out
# unlike q gives wrong values on a rank.
FLEX = "higher_order.flex_attention"
FB, FH, FL, FD, BLK = 2, 4, 8, 4, 4   # batch, heads, length, head dim, block size: 2 blocks per side
NB = FL // BLK
KW = {"BACKEND": "AUTO", "PRESCALE_QK": False, "ROWS_GUARANTEED_SAFE": False, "OUTPUT_LOGSUMEXP": True}


def blocks(b, h):
    return [{"shape": [b, h, NB], "dtype": "int32", "range": [1, NB + 1]},
            {"shape": [b, h, NB, NB], "dtype": "int32", "range": [0, NB]}]


def flex(q, kv, mask_bh, full=False, scale=0.5, **extra):
    tensors = [t(*q), t(*kv), t(*kv)] + blocks(*mask_bh) + (blocks(*mask_bh) if full else [])
    bm = [FL, FL, "$3", "$4", "$5" if full else None, "$6" if full else None, None, None, None, None,
          None, None, None, None, BLK, BLK, None]
    return {"op": FLEX, "tensors": tensors, "args": ["$0", "$1", "$2", None, bm, scale, KW, [], []], "kwargs": {},
            "no_missing": "block-sparse masks: the search would only restate the batch / head rows", **extra}


SAMPLES += [
    flex((FB, FH, FL, FD), (FB, FH, FL, FD), (FB, FH)),
    flex((FB, FH, FL, FD), (FB, FH, FL, FD), (1, FH), note="block mask broadcast over batch"),
    flex((FB, FH, FL, FD), (FB, FH, FL, FD), (FB, 1), full=True, note="block mask broadcast over heads, full blocks"),
    flex((FB, FH, FL, FD), (FB, FH // 2, FL, FD), (FB, FH), note="GQA: 2 kv heads"),
    flex((3, FH, FL, FD), (1, FH, FL, FD), (3, FH), note="k / v broadcast over batch"),
]


def _allowed(num, idx, q_len, kv_len, block_q, block_kv):
    """[B, H, L, S] bool: kv positions listed for each q position's block."""
    bsz, heads, nq = num.shape
    nk = idx.shape[-1]
    sel = torch.arange(nk)[None, None, None, :] < num[..., None]                  # [B, H, nq, nk] slot in use
    onehot = idx.long()[..., None] == torch.arange(nk)                          # [B, H, nq, slot, block]
    hit = (onehot & sel[..., None]).any(-2)                                     # block listed for q block i
    rows = hit.repeat_interleave(block_q, 2)[:, :, :q_len]
    return rows.repeat_interleave(block_kv, 3)[..., :kv_len]


def _flex_attention(q, k, v, score_mod, block_mask, scale, kernel_options, score_bufs=(), mask_bufs=()):
    if score_mod is not None or block_mask[-1] is not None:
        raise NotImplementedError("the reference runs without score_mod / mask_mod")
    q_len, kv_len = block_mask[0], block_mask[1]
    block_q, block_kv = block_mask[-3], block_mask[-2]
    allowed = _allowed(block_mask[2], block_mask[3], q_len, kv_len, block_q, block_kv)
    if block_mask[4] is not None:
        allowed = allowed | _allowed(block_mask[4], block_mask[5], q_len, kv_len, block_q, block_kv)
    g = q.shape[1] // k.shape[1] if k.shape[1] else 1
    kk = k.to(torch.float64).repeat_interleave(g, 1).expand(q.shape[0], -1, -1, -1)
    vv = v.to(torch.float64).repeat_interleave(g, 1).expand(q.shape[0], -1, -1, -1)
    scores = (q.to(torch.float64) @ kk.transpose(-1, -2)) * scale
    scores = scores.masked_fill(~allowed.expand_as(scores), float("-inf"))
    lse = torch.logsumexp(scores, -1)
    out = torch.softmax(scores, -1).nan_to_num(0.0) @ vv
    return out.to(q.dtype), lse.to(torch.float32), scores.amax(-1).to(torch.float32)


REFERENCES = {FLEX: _flex_attention}
