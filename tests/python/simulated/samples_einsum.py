"""Einsum family: mm, bmm, dot, addmm / baddbmm (bias broadcast, size-1 and 0-d bias, beta /
alpha), two-operand einsum equations (batch-only, outer product, full contraction, permuted
output).  Contraction dims 5 and 3 are uneven on 2, size-1 contractions included."""


def t(*shape):
    return {"shape": list(shape), "dtype": "float32"}


def call(op, tensors, extra=(), kwargs=None, **kw):
    return {"op": op, "tensors": tensors, "args": [f"${i}" for i in range(len(tensors))] + list(extra),
            "kwargs": kwargs or {}, **kw}


def einsum(eq, a, b, **kw):
    return {"op": "aten.einsum.default", "tensors": [t(*a), t(*b)], "args": [eq, ["$0", "$1"]], "kwargs": {}, **kw}


SAMPLES = [
    call("aten.mm.default", [t(4, 5), t(5, 3)]),
    call("aten.mm.default", [t(6, 1), t(1, 5)]),
    call("aten.mm.default", [t(5, 6), t(6, 4)]),
    call("aten.bmm.default", [t(2, 3, 4), t(2, 4, 5)]),
    call("aten.bmm.default", [t(3, 5, 2), t(3, 2, 4)]),
    call("aten.dot.default", [t(5), t(5)]),
    call("aten.dot.default", [t(6), t(6)]),
    call("aten.addmm.default", [t(3), t(4, 5), t(5, 3)]),
    call("aten.addmm.default", [t(1, 3), t(4, 5), t(5, 3)], kwargs={"beta": 0.5, "alpha": 2.0}),
    call("aten.addmm.default", [t(4, 3), t(4, 5), t(5, 3)]),
    call("aten.addmm.default", [t(4, 1), t(4, 6), t(6, 5)]),
    call("aten.addmm.default", [t(), t(4, 5), t(5, 3)], note="0-d bias"),
    call("aten.baddbmm.default", [t(2, 3, 5), t(2, 3, 4), t(2, 4, 5)]),
    call("aten.baddbmm.default", [t(5), t(3, 4, 2), t(3, 2, 5)], kwargs={"beta": -1.0}),
    call("aten.baddbmm.default", [t(1, 4, 1), t(2, 4, 3), t(2, 3, 5)]),
    einsum("ab,ab->ab", (4, 5), (4, 5), note="batch-only: DTensor's all-Partial rows are known unsound"),
    einsum("bmk,kn->bmn", (2, 3, 4), (4, 5)),
    einsum("abc,ab->abc", (3, 4, 2), (3, 4)),
    einsum("abd,bf->abfd", (3, 4, 2), (4, 5)),
    einsum("ji,j->i", (4, 5), (4,)),
    einsum("i,j->ij", (4,), (5,)),
    einsum("bij,bjk->bik", (2, 3, 4), (2, 4, 3)),
    einsum("ij,ij->", (4, 5), (4, 5)),
    einsum("ab,bc->ca", (4, 5), (5, 3)),
]
