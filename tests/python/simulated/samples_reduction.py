"""Reductions and softmax: sum / mean (all, dims, keepdim, dim=[] and None), amax / amin, max / min
(all and dim), argmax / argmin, logsumexp, var / std / var_mean (correction, keepdim), softmax /
log_softmax / safe_softmax and their backwards.  Reduced dims even (4, 6) and uneven (5, 3),
negative dims, size-1 dims."""


def t(*shape, dtype="float32"):
    return {"shape": list(shape), "dtype": dtype}


def r(op, shape, *extra, kwargs=None, **kw):
    return {"op": op, "tensors": [t(*shape)], "args": ["$0", *extra], "kwargs": kwargs or {}, **kw}


SAMPLES = [
    r("aten.sum.default", (4, 5)),
    r("aten.sum.default", (3, 1, 5)),
    r("aten.sum.dim_IntList", (4, 5), [1]),
    r("aten.sum.dim_IntList", (4, 5, 3), [0, 2], True),
    r("aten.sum.dim_IntList", (5, 6), [-1], False),
    r("aten.sum.dim_IntList", (4, 6), None, note="dim=None reduces all"),
    r("aten.sum.dim_IntList", (4, 6), [], note="dim=[] reduces all (PyTorch)"),
    r("aten.mean.default", (4, 6)),
    r("aten.mean.default", (5, 3)),
    r("aten.mean.dim", (4, 6), [1]),
    r("aten.mean.dim", (4, 6), [0], True),
    r("aten.mean.dim", (5, 3, 2), [-3, 2]),
    r("aten.amax.default", (4, 6), [1]),
    r("aten.amax.default", (5, 3), [0], True),
    r("aten.amin.default", (4, 6), [0, 1]),
    r("aten.amin.default", (3, 5), [-1], kwargs={"keepdim": True}),
    r("aten.max.default", (4, 6)),
    r("aten.max.default", (5, 3)),
    r("aten.min.default", (4, 6)),
    r("aten.min.default", (3, 1, 5)),
    r("aten.max.dim", (4, 6), 1),
    r("aten.max.dim", (5, 4), 0, True),
    r("aten.min.dim", (4, 6), -1),
    r("aten.min.dim", (6, 5), 0, False),
    r("aten.argmax.default", (4, 6)),
    r("aten.argmax.default", (4, 6), 1),
    r("aten.argmax.default", (5, 3), 0, True),
    r("aten.argmin.default", (4, 6), -1),
    r("aten.argmin.default", (5, 3)),
    r("aten.logsumexp.default", (4, 6), [1]),
    r("aten.logsumexp.default", (5, 3, 2), [0, 2], True),
    r("aten.var.correction", (4, 6), [1], kwargs={"correction": 1}),
    r("aten.var.correction", (5, 4), [0], kwargs={"correction": 0, "keepdim": True}),
    r("aten.var.correction", (4, 6), None, kwargs={"correction": 1}),
    r("aten.std.correction", (4, 6), [1], kwargs={"correction": 1}),
    r("aten.std.correction", (5, 3, 2), [0, 2], kwargs={"correction": 0, "keepdim": True}),
    r("aten.var_mean.correction", (4, 6), [1], kwargs={"correction": 1}),
    r("aten.var_mean.correction", (5, 4), [0], kwargs={"correction": 0, "keepdim": True}),
    r("aten._softmax.default", (4, 6), 1, False),
    r("aten._softmax.default", (3, 5, 4), 0, False),
    r("aten._log_softmax.default", (4, 6), -1, False),
    r("aten._log_softmax.default", (5, 3), 0, False),
    r("aten._safe_softmax.default", (4, 6), 1),
    r("aten._safe_softmax.default", (2, 5, 3), -2),
    {"op": "aten._softmax_backward_data.default", "tensors": [t(4, 6), t(4, 6)],
     "args": ["$0", "$1", 1, "torch.float32"], "kwargs": {}},
    {"op": "aten._softmax_backward_data.default", "tensors": [t(5, 3, 2), t(5, 3, 2)],
     "args": ["$0", "$1", 0, "torch.float32"], "kwargs": {}},
    {"op": "aten._log_softmax_backward_data.default", "tensors": [t(4, 6), t(4, 6)],
     "args": ["$0", "$1", -1, "torch.float32"], "kwargs": {}},
    {"op": "aten._log_softmax_backward_data.default", "tensors": [t(5, 3), t(5, 3)],
     "args": ["$0", "$1", 0, "torch.float32"], "kwargs": {}},
]
