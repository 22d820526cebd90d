"""Embedding and indexing: embedding (row-sharded weight -> DTensor's masked P(sum), simulated by
masking out-of-range indices per rank), embedding_dense_backward, index.Tensor (one or two index
tensors, leading None, broadcast indices, boolean mask), index_put (accumulate or unique
indices)."""


def t(*shape):
    return {"shape": list(shape), "dtype": "float32"}


def idx(shape, hi, **kw):
    return {"shape": list(shape), "dtype": "int64", "range": [0, hi], **kw}


SAMPLES = [
    {"op": "aten.embedding.default", "tensors": [t(6, 4), idx([5], 6)], "args": ["$0", "$1"], "kwargs": {}},
    {"op": "aten.embedding.default", "tensors": [t(7, 3), idx([2, 5], 7)], "args": ["$0", "$1"], "kwargs": {}},
    {"op": "aten.embedding.default", "tensors": [t(5, 4), idx([4, 3], 5)], "args": ["$0", "$1", 0], "kwargs": {},
     "note": "padding_idx"},
    {"op": "aten.embedding_dense_backward.default", "tensors": [t(5, 4), idx([5], 6)],
     "args": ["$0", "$1", 6, -1, False], "kwargs": {}},
    {"op": "aten.embedding_dense_backward.default", "tensors": [t(2, 3, 4), idx([2, 3], 5)],
     "args": ["$0", "$1", 5, 0, False], "kwargs": {}},
    {"op": "aten.embedding_dense_backward.default", "tensors": [t(4, 3), idx([4], 5)],
     "args": ["$0", "$1", 5, -1, True], "kwargs": {}, "note": "scale_grad_by_freq"},
    {"op": "aten.index.Tensor", "tensors": [t(5, 4), idx([3], 5)], "args": ["$0", ["$1"]], "kwargs": {}},
    {"op": "aten.index.Tensor", "tensors": [t(4, 6, 3), idx([2, 5], 6)], "args": ["$0", [None, "$1"]], "kwargs": {}},
    {"op": "aten.index.Tensor", "tensors": [t(4, 5, 3), idx([4], 4), idx([1, 4], 5)], "args": ["$0", ["$1", "$2"]],
     "kwargs": {}, "note": "two broadcast index tensors"},
    {"op": "aten.index.Tensor", "tensors": [t(4, 5), {"shape": [4, 5], "dtype": "bool"}], "args": ["$0", ["$1"]],
     "kwargs": {}, "note": "boolean mask: data-dependent output length"},
    {"op": "aten.index_put.default", "tensors": [t(5, 4), idx([3], 5), t(3, 4)], "args": ["$0", ["$1"], "$2", True],
     "kwargs": {}},
    {"op": "aten.index_put.default", "tensors": [t(6, 3), idx([4], 6, unique=True), t(4, 3)],
     "args": ["$0", ["$1"], "$2"], "kwargs": {}, "note": "unique indices: last write is well defined"},
    {"op": "aten.index_put.default", "tensors": [t(3, 5, 2), idx([4], 5), t(2)],
     "args": ["$0", [None, "$1"], "$2", True], "kwargs": {}},
]
