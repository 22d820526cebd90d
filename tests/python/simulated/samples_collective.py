"""Collectives written into graphs (`_c10d_functional.*`, `c10d_functional.*`,
`_c10d_functional_autograd.*`, `vllm.all_reduce`).  ctshard plans on logical tensors, on which
such an op preserves the value (docs/semantics.md): the references below are the identity.
all_gather_into_tensor / reduce_scatter_tensor run with group_size 1, where the logical output
shape equals the input's (ctshard.table takes no output annotation for the general case)."""


def t(*shape):
    return {"shape": list(shape), "dtype": "float32"}


IDENTITY = ("identity stand-in: the real collective reduces over a program group, so the Partials "
            "ctshard leaves out are not valid there")


SAMPLES = []
for ns in ("_c10d_functional", "c10d_functional", "_c10d_functional_autograd"):
    for op_ in ("sum", "max", "avg", "min"):
        SAMPLES.append({"op": f"{ns}.all_reduce.default", "tensors": [t(4, 5)], "args": ["$0", op_, "0"], "kwargs": {}})
    SAMPLES.append({"op": f"{ns}.wait_tensor.default", "tensors": [t(5, 3)], "args": ["$0"], "kwargs": {}})
    SAMPLES.append({"op": f"{ns}.all_gather_into_tensor.default", "tensors": [t(4, 5)], "args": ["$0", 1, "0"],
                    "kwargs": {}, "note": "group_size 1"})
    SAMPLES.append({"op": f"{ns}.reduce_scatter_tensor.default", "tensors": [t(4, 5)], "args": ["$0", "sum", 1, "0"],
                    "kwargs": {}, "note": "group_size 1"})
SAMPLES.append({"op": "vllm.all_reduce.default", "tensors": [t(4, 6)], "args": ["$0", "tp"], "kwargs": {}})
for s_ in SAMPLES:
    s_["no_missing"] = IDENTITY


def _identity(x, *args, **kwargs):
    return x.clone()


REFERENCES = {s["op"]: _identity for s in SAMPLES}
