"""nn: convolution (1-d and 2-d, bias, stride 2, padding), native_dropout (random: shapes
compared), equal (the runtime ANDs the ranks' answers; inputs equal and different)."""


def t(*shape, **kw):
    return {"shape": list(shape), "dtype": "float32", **kw}


SAMPLES = [
    {"op": "aten.convolution.default", "tensors": [t(2, 3, 6, 5), t(4, 3, 3, 3), t(4)],
     "args": ["$0", "$1", "$2", [1, 1], [1, 1], [1, 1], False, [0, 0], 1], "kwargs": {}},
    {"op": "aten.convolution.default", "tensors": [t(3, 2, 7), t(6, 2, 3)],
     "args": ["$0", "$1", None, [2], [1], [1], False, [0], 1], "kwargs": {}},
    {"op": "aten.convolution.default", "tensors": [t(4, 4, 5, 5), t(2, 4, 1, 1), t(2)],
     "args": ["$0", "$1", "$2", [1, 1], [0, 0], [1, 1], False, [0, 0], 1], "kwargs": {}},
    {"op": "aten.native_dropout.default", "tensors": [t(4, 5)], "args": ["$0", 0.5, True], "kwargs": {},
     "compare": "shape"},
    {"op": "aten.native_dropout.default", "tensors": [t(3, 1, 6)], "args": ["$0", 0.1, True], "kwargs": {},
     "compare": "shape"},
    {"op": "aten.equal.default", "tensors": [t(4, 5), t(4, 5, same_as=0)], "args": ["$0", "$1"], "kwargs": {},
     "note": "equal inputs: a wrong layout answers False"},
    {"op": "aten.equal.default", "tensors": [t(5, 3), t(5, 3)], "args": ["$0", "$1"], "kwargs": {},
     "no_missing": "different inputs: every layout answers False"},
]
