"""Wrapper ops that run another op: `higher_order.graphsafe_run_with_rng_state(op, *args,
rng_state=..., **kwargs)` (inductor's CUDA-graph-safe RNG functionalization) returns op's outputs,
and its rule is op's rule with the RNG state replicated.  The state is a generator in real graphs;
here a 0-d int64 tensor stands in for it (an opaque replicated input, as the planner sees an
unannotated one).  REFERENCES runs the wrapped op and ignores the state."""

import torch

GS = "higher_order.graphsafe_run_with_rng_state"


def t(*shape, dtype="float32", **kw):
    return {"shape": list(shape), "dtype": dtype, **kw}


STATE = {"shape": [], "dtype": "int64", "range": [0, 7]}

SAMPLES = [
    {"op": GS, "tensors": [t(4, 6), STATE], "args": ["aten._softmax.default", "$0", 1, False], "kwargs": {"rng_state": "$1"}},
    {"op": GS, "tensors": [t(2, 3, 4), t(2, 4, 5), STATE], "args": ["aten.bmm.default", "$0", "$1"], "kwargs": {"rng_state": "$2"}},
    {"op": GS, "tensors": [t(5, 4)], "args": ["aten.native_dropout.default", "$0", 0.5, True], "kwargs": {},
     "compare": "shape", "note": "the random op it wraps in real graphs (no state passed: the rule is dropout's)"},
    {"op": GS, "tensors": [STATE, t(3, 5)], "args": ["aten.cumsum.default", "$1", 0], "kwargs": {"rng_state": "$0"},
     "note": "a linear scan: its Partial rows pass through the wrapper"},
]


def _resolve(name: str):
    if name.startswith("torch.ops."):
        name = name[len("torch.ops."):]
    ns, rest = name.split(".", 1)
    base, overload = rest.rsplit(".", 1)
    return getattr(getattr(getattr(torch.ops, ns), base), overload)


def _graphsafe_run_with_rng_state(op, *args, rng_state=None, **kwargs):
    return _resolve(op)(*args, **kwargs)


REFERENCES = {GS: _graphsafe_run_with_rng_state}
