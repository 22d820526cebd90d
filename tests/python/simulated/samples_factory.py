"""Factories and copies: clone / alias / detach / lift_fresh_copy / prims.device_put /
tg.log_tensor (an identity logging op; REFERENCES) / _to_copy (dtype changes) /
convert_element_type, *_like (values undefined for empty_like: shapes compared), new_* (size from
the output spec), and the tensor-less factories empty / zeros / ones / full / arange
(Replicate-only rules)."""


def t(*shape, dtype="float32"):
    return {"shape": list(shape), "dtype": dtype}


def u(op, shape, *extra, kwargs=None, **kw):
    return {"op": op, "tensors": [t(*shape)], "args": ["$0", *extra], "kwargs": kwargs or {}, **kw}


SAMPLES = [
    u("aten.clone.default", (4, 5)),
    u("aten.clone.default", (3, 1, 6), kwargs={"memory_format": "torch.contiguous_format"}),
    u("aten.alias.default", (4, 5)),
    u("aten.detach.default", (5, 3)),
    u("aten.lift_fresh_copy.default", (4, 5)),
    u("aten._to_copy.default", (4, 5), kwargs={"dtype": "torch.float64"}),
    u("aten._to_copy.default", (3, 4), kwargs={"dtype": "torch.bfloat16"}),
    u("aten._to_copy.default", (5, 2), kwargs={"dtype": "torch.int64"}),
    u("aten._to_copy.default", (4, 3), kwargs={"dtype": "torch.bool"}, values="small_int"),
    u("prims.convert_element_type.default", (4, 5), "torch.float64"),
    u("prims.convert_element_type.default", (3, 4), "torch.float16"),
    u("aten.empty_like.default", (4, 5), compare="shape"),
    u("aten.empty_like.default", (3, 1, 5), kwargs={"dtype": "torch.bfloat16"}, compare="shape"),
    u("aten.zeros_like.default", (4, 5)),
    u("aten.zeros_like.default", (5, 3), kwargs={"dtype": "torch.float32"}),
    u("aten.ones_like.default", (4, 5)),
    u("aten.ones_like.default", (3, 1)),
    u("aten.full_like.default", (4, 5), 1.5),
    u("aten.full_like.default", (5,), 0.0),
    u("aten.new_empty.default", (4, 5), [3, 6], compare="shape"),
    u("aten.new_zeros.default", (4, 5), [6, 2]),
    u("aten.new_zeros.default", (3,), [5], kwargs={"dtype": "torch.float32"}),
    u("aten.new_ones.default", (4, 5), [4, 3]),
    u("aten.new_full.default", (4, 5), [2, 5], 2.0),
    {"op": "aten.empty.memory_format", "tensors": [], "args": [[4, 5]], "kwargs": {"dtype": "torch.float32"}, "compare": "shape"},
    {"op": "aten.zeros.default", "tensors": [], "args": [[4, 5]], "kwargs": {}},
    {"op": "aten.ones.default", "tensors": [], "args": [[3, 5]], "kwargs": {"dtype": "torch.float32"}},
    {"op": "aten.full.default", "tensors": [], "args": [[5, 2], 3.5], "kwargs": {}},
    {"op": "aten.arange.default", "tensors": [], "args": [7], "kwargs": {}},
    {"op": "aten.arange.start", "tensors": [], "args": [2, 9], "kwargs": {}},
    {"op": "aten.arange.start_step", "tensors": [], "args": [0, 10, 3], "kwargs": {}},
    u("prims.device_put.default", (4, 5), "cpu"),
    u("prims.device_put.default", (3, 1, 6), "cpu", False),
    u("tg.log_tensor.default", (4, 5), "tokens"),
    u("tg.log_tensor.default", (5,), "loss_mask"),
]


def _log_tensor(x, name):
    return x.clone()


REFERENCES = {"tg.log_tensor.default": _log_tensor}
