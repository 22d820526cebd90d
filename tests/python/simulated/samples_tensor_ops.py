"""Tensor ops: split / split_with_sizes / unbind (outputs per piece), cat / stack (2-3 tensors,
uneven pieces, negative dims), slice_scatter, copy / copy_ (broadcast src).  REFERENCES: copy_ on a
clone (the in-place op would overwrite the runner's inputs)."""


def t(*shape):
    return {"shape": list(shape), "dtype": "float32"}


SAMPLES = [
    {"op": "aten.split.Tensor", "tensors": [t(4, 6)], "args": ["$0", 2, 1], "kwargs": {}},
    {"op": "aten.split.Tensor", "tensors": [t(5, 3)], "args": ["$0", 2], "kwargs": {}, "note": "uneven last piece"},
    {"op": "aten.split.Tensor", "tensors": [t(3, 7, 2)], "args": ["$0", 3, -2], "kwargs": {}},
    {"op": "aten.split_with_sizes.default", "tensors": [t(4, 6)], "args": ["$0", [1, 2, 3], 1], "kwargs": {}},
    {"op": "aten.split_with_sizes.default", "tensors": [t(5, 4)], "args": ["$0", [2, 3]], "kwargs": {}},
    {"op": "aten.unbind.int", "tensors": [t(3, 4)], "args": ["$0"], "kwargs": {}},
    {"op": "aten.unbind.int", "tensors": [t(4, 2, 5)], "args": ["$0", 1], "kwargs": {}},
    {"op": "aten.cat.default", "tensors": [t(4, 3), t(4, 5)], "args": [["$0", "$1"], 1], "kwargs": {}},
    {"op": "aten.cat.default", "tensors": [t(2, 5), t(3, 5), t(1, 5)], "args": [["$0", "$1", "$2"]], "kwargs": {}},
    {"op": "aten.cat.default", "tensors": [t(3, 2, 4), t(3, 2, 4)], "args": [["$0", "$1"], -1], "kwargs": {}},
    {"op": "aten.cat.default", "tensors": [t(4, 3), t(4, 3)], "args": [["$0", "$1"]], "kwargs": {},
     "note": "equal pieces along dim 0: [_S(0, 2), S(0), S(0)], uneven chunks on mesh 3"},
    {"op": "aten.cat.default", "tensors": [t(6, 2), t(6, 2), t(6, 2)], "args": [["$0", "$1", "$2"], 0], "kwargs": {}},
    {"op": "aten.stack.default", "tensors": [t(4, 5), t(4, 5)], "args": [["$0", "$1"]], "kwargs": {}},
    {"op": "aten.stack.default", "tensors": [t(3, 5), t(3, 5), t(3, 5)], "args": [["$0", "$1", "$2"], -1], "kwargs": {}},
    {"op": "aten.stack.default", "tensors": [t(5,), t(5,)], "args": [["$0", "$1"], 1], "kwargs": {}},
    {"op": "aten.slice_scatter.default", "tensors": [t(6, 4), t(2, 4)], "args": ["$0", "$1", 0, 1, 5, 2], "kwargs": {}},
    {"op": "aten.slice_scatter.default", "tensors": [t(4, 7), t(4, 3)], "args": ["$0", "$1", 1, 2, 5, 1], "kwargs": {}},
    {"op": "aten.copy.default", "tensors": [t(4, 5), t(4, 5)], "args": ["$0", "$1"], "kwargs": {}},
    # input_sizes is a global shape: each rank passes its local output shape (DTensor localises it)
    {"op": "aten.slice_backward.default", "tensors": [t(2, 5)], "args": ["$0", [6, 5], 0, 1, 5, 2], "kwargs": {}, "local_size_arg": 1},
    {"op": "aten.slice_backward.default", "tensors": [t(4, 3, 2)], "args": ["$0", [4, 7, 2], 1, 2, 5, 1], "kwargs": {}, "local_size_arg": 1},
    {"op": "aten.slice_backward.default", "tensors": [t(3, 4)], "args": ["$0", [3, 4], -1, 0, 9223372036854775807, 1], "kwargs": {},
     "local_size_arg": 1, "note": "a full slice: every dim keeps its shards"},
    {"op": "aten.tril.default", "tensors": [t(3, 4, 5)], "args": ["$0"], "kwargs": {}},
    {"op": "aten.tril.default", "tensors": [t(2, 1, 6, 6)], "args": ["$0", -1], "kwargs": {}},
    {"op": "aten.triu.default", "tensors": [t(5, 5)], "args": ["$0", 1], "kwargs": {}},
    {"op": "aten.triu.default", "tensors": [t(3, 4, 4)], "args": ["$0"], "kwargs": {}},
    {"op": "aten.copy.default", "tensors": [t(4, 5), t(5)], "args": ["$0", "$1"], "kwargs": {},
     "note": "src broadcast to self's shape"},
    {"op": "aten.copy_.default", "tensors": [t(4, 5), t(4, 5)], "args": ["$0", "$1"], "kwargs": {}},
    {"op": "aten.copy_.default", "tensors": [t(3, 1, 6), t(6)], "args": ["$0", "$1"], "kwargs": {},
     "note": "src broadcast to self's shape"},
]


def _copy_(self, src, non_blocking=False):
    return self.clone().copy_(src, non_blocking)


REFERENCES = {"aten.copy_.default": _copy_}
