"""Views: view / _unsafe_view / reshape (flatten, split, insert / drop 1s, -1; uneven outer dims),
t, transpose, permute, unsqueeze, squeeze (all, dim, dims; sharded dims whose local size is 1),
expand (size-1 dims broadcast, new leading dims, -1), repeat (kept, repeated and new leading
dims), select, slice (steps, negative and huge ends)."""


def t(*shape):
    return {"shape": list(shape), "dtype": "float32"}


def v(op, shape, *extra, **kw):
    return {"op": op, "tensors": [t(*shape)], "args": ["$0", *extra], "kwargs": {}, **kw}


SAMPLES = []
for op in ("aten.view.default", "aten._unsafe_view.default", "aten.reshape.default"):
    SAMPLES += [
        v(op, (4, 6), [24]),
        v(op, (6, 4), [2, 3, 4]),
        v(op, (5, 4), [20], note="flatten with an uneven outer dim"),
        v(op, (4, 3, 2), [4, -1]),
        v(op, (3, 1, 4), [3, 4]),
    ]
SAMPLES += [
    # groups sharded by several mesh dims (R11 and its kind; run on 2x2, 2x3 and 2x2x2 too)
    v("aten.view.default", (2, 2, 3), [4, 3], note="R11: S(0)S(1) on 2x2 is S(0)S(0) of [4, 3]"),
    v("aten.view.default", (4, 3), [2, 2, 3], note="unflatten: S(0)S(0) on 2x2 is S(0)S(1)"),
    v("aten.view.default", (2, 3, 4), [24]),
    v("aten._unsafe_view.default", (24,), [2, 3, 4]),
    v("aten.view.default", (2, 5), [10], note="uneven: 5 columns chunk 3 + 2 inside each local row"),
    v("aten.reshape.default", (10,), [2, 5]),
    v("aten.view.default", (6, 4), [4, 6], note="split of a flatten"),
    v("aten.view.default", (2, 6, 3), [12, 3]),
    v("aten.view.default", (8, 3), [2, 4, 3, 1]),
    v("aten.reshape.default", (6,), [2, 3]),
    v("aten.t.default", (4, 5)),
    v("aten.t.default", (5,)),
    v("aten.transpose.int", (4, 5, 3), 0, 2),
    v("aten.transpose.int", (3, 4), -1, 0),
    v("aten.permute.default", (2, 3, 5), [2, 0, 1]),
    v("aten.permute.default", (4, 1, 3), [-1, 1, 0]),
    v("aten.unsqueeze.default", (4, 5), 1),
    v("aten.unsqueeze.default", (3,), -1),
    v("aten.unsqueeze.default", (), 0),
    v("aten.squeeze.default", (4, 1, 5)),
    v("aten.squeeze.default", (3, 1), note="S(0) on 2: local shards 2x1 and 1x1, only the global 1 goes"),
    v("aten.squeeze.dim", (4, 1, 5), 1),
    v("aten.squeeze.dim", (4, 5), 0, note="not size 1: no-op"),
    v("aten.squeeze.dims", (1, 4, 1, 3), [0, 2]),
    v("aten.squeeze.dims", (3, 1, 5), [-2, 0]),
    v("aten.expand.default", (4, 1), [4, 6]),
    v("aten.expand.default", (1, 5), [3, 2, 5]),
    v("aten.expand.default", (3, 1, 4), [-1, 5, 4]),
    v("aten.select.int", (4, 5), 0, 2),
    v("aten.select.int", (4, 5, 3), 1, -1),
    v("aten.slice.Tensor", (6, 5), 0, 1, 5),
    v("aten.slice.Tensor", (4, 7), 1, 0, 9223372036854775807, 2),
    v("aten.slice.Tensor", (5, 4, 3), -1, None, -1),
    v("aten.slice.Tensor", (4, 6), 1, 2, 4),
    v("aten.repeat.default", (4, 6), [1, 2], note="dim 1 repeated: whole; dim 0 kept"),
    v("aten.repeat.default", (3, 5), [2, 1, 1], note="a new leading dim shifts the kept ones"),
    v("aten.repeat.default", (4, 1, 3), [1, 4, 1], note="a size-1 dim repeated (a broadcast)"),
    v("aten.repeat.default", (5,), [2, 3], note="uneven kept dim nowhere: both repeated or new"),
]
