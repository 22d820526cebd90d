"""Pointwise ops: unary math, Python-scalar and tensor binary ops (broadcasting, size-1 and 0-d
operands), comparisons, bitwise / logical ops, ternary ops (and prims.fma), activation backwards,
masked_fill, where, fill, clamp with scalar bounds, pow.Scalar.  Shapes: 4 and 5 (even / uneven on
2 and 3), size-1 dims, 0-d tensors.  REFERENCES: prims.fma (an inductor prim: a * b + c)."""

F = "float32"


def t(shape, dtype=F, **kw):
    return {"shape": list(shape), "dtype": dtype, **kw}


def unary(op, shape=(4, 5), dtype=F, args=(), kwargs=None, **kw):
    return {"op": op, "tensors": [t(shape, dtype)], "args": ["$0", *args], "kwargs": kwargs or {}, **kw}


def binary(op, s0, s1, d0=F, d1=None, args=(), kwargs=None, **kw):
    return {"op": op, "tensors": [t(s0, d0), t(s1, d1 or d0)], "args": ["$0", "$1", *args],
            "kwargs": kwargs or {}, **kw}


SAMPLES: list[dict] = []
add = SAMPLES.append

# -- unary, real domain
for op in ["aten.abs.default", "aten.ceil.default", "aten.cos.default", "aten.erf.default", "aten.erfc.default",
           "aten.exp.default", "aten.expm1.default", "aten.floor.default", "aten.neg.default",
           "aten.positive.default", "aten.relu.default", "aten.sigmoid.default", "aten.sign.default",
           "aten.silu.default", "aten.sin.default", "aten.square.default", "aten.tanh.default",
           "aten.gelu.default", "aten.isnan.default"]:
    add(unary(op, (4, 5)))
    add(unary(op, (3, 1, 6)))
add(unary("aten.gelu.default", (5,), kwargs={"approximate": "tanh"}))
add(unary("aten.neg.default", ()))
add(unary("aten.exp.default", (7,)))
# -- unary, positive domain
for op in ["aten.log.default", "aten.log1p.default", "aten.sqrt.default", "aten.rsqrt.default",
           "aten.reciprocal.default"]:
    add(unary(op, (4, 5), values="positive"))
    add(unary(op, (3, 1, 6), values="positive"))
# -- integer / boolean unary
add(unary("aten.bitwise_not.default", (4, 5), "int64"))
add(unary("aten.bitwise_not.default", (3, 6), "bool"))
add(unary("aten.logical_not.default", (4, 5), "bool"))
add(unary("aten.logical_not.default", (5, 1, 3), values="small_int"))

# -- tensor op Python scalar
add(unary("aten.add.Scalar", (4, 5), args=[3.0, 2.0]))
add(unary("aten.add.Scalar", (5, 1), args=[-1]))
add(unary("aten.sub.Scalar", (5,), args=[3.0]))
add(unary("aten.sub.Scalar", (4, 5), args=[0.5, -2]))
add(unary("aten.rsub.Scalar", (4, 5), args=[2.0, 1.5]))
add(unary("aten.rsub.Scalar", (3, 4), args=[1]))
add(unary("aten.mul.Scalar", (4, 5), args=[2.5]))
add(unary("aten.mul.Scalar", (6,), args=[-1]))
add(unary("aten.div.Scalar", (5,), args=[-1.5]))
add(unary("aten.div.Scalar", (4, 5), args=[3]))
add(unary("aten.pow.Tensor_Scalar", (4, 5), args=[2.5], values="positive"))
add(unary("aten.pow.Tensor_Scalar", (3, 1, 5), args=[2]))
add(unary("aten.pow.Tensor_Scalar", (5,), args=[-1], values="positive"))
for op in ["aten.eq.Scalar", "aten.ne.Scalar", "aten.lt.Scalar", "aten.le.Scalar", "aten.gt.Scalar", "aten.ge.Scalar"]:
    add(unary(op, (4, 5), "int64", args=[1], note="integers so that eq/ne hit"))
    add(unary(op, (3, 1, 5), args=[1.0], values="small_int", note="floats holding 0, 1, 2"))
# add.Tensor / sub.Tensor / mul.Tensor / div.Tensor with a Python scalar operand (the scalar is
# not an input of the rule: no Partial rows)
add(unary("aten.add.Tensor", (4, 5), args=[10.0]))
add(unary("aten.sub.Tensor", (4, 5), args=[10.0]))
add(unary("aten.mul.Tensor", (4, 5), args=[3.0]))
add(unary("aten.div.Tensor", (4, 5), args=[2.0]))
add(unary("aten.fill.Scalar", (4, 5), args=[7.0]))
add(unary("aten.fill.Scalar", (3, 1), args=[-1]))

# -- binary tensor ops with Partial rows
for op in ["aten.add.Tensor", "aten.sub.Tensor", "aten.mul.Tensor"]:
    add(binary(op, (4, 5), (4, 5)))
    add(binary(op, (4, 5), (5,)))
    add(binary(op, (4, 1), (1, 5)))
    add(binary(op, (3, 4), ()))
    add(binary(op, (2, 3, 4), (3, 1)))
add(binary("aten.add.Tensor", (4, 5), (4, 5), kwargs={"alpha": -2.0}))
add(binary("aten.sub.Tensor", (5,), (4, 5), kwargs={"alpha": 2}))
add(binary("aten.div.Tensor", (4, 5), (4, 5), note="divisor positive", ))
SAMPLES[-1]["tensors"][1]["values"] = "positive"
add(binary("aten.div.Tensor", (4, 5), (1, 5)))
SAMPLES[-1]["tensors"][1]["values"] = "positive"
add(binary("aten.div.Tensor", (3, 4), ()))
SAMPLES[-1]["tensors"][1]["values"] = "positive"
add(binary("aten.rsub.Tensor", (4, 5), (5,), kwargs={"alpha": 2.0}))
add(binary("aten.rsub.Tensor", (4, 5), (4, 5)))
for op in ["aten.maximum.default", "aten.minimum.default", "aten.fmax.default", "aten.fmin.default",
           "aten.clamp_min.Tensor", "aten.clamp_max.Tensor", "aten.logaddexp.default", "aten.atan2.default"]:
    add(binary(op, (4, 5), (4, 5)))
    add(binary(op, (4, 1), (5,)))
add(binary("aten.pow.Tensor_Tensor", (4, 5), (4, 1), values="positive"))
add(binary("aten.pow.Tensor_Tensor", (5,), (3, 5), values="positive"))
add(binary("aten.silu_backward.default", (4, 5), (4, 5)))
add(binary("aten.silu_backward.default", (3, 1, 4), (3, 1, 4)))
# comparisons (integers, so equality happens)
for op in ["aten.eq.Tensor", "aten.ne.Tensor", "aten.lt.Tensor", "aten.le.Tensor", "aten.gt.Tensor", "aten.ge.Tensor"]:
    add(binary(op, (4, 5), (1, 5), "int64"))
    add(binary(op, (3, 4), (3, 4), values="small_int"))
for op in ["aten.bitwise_and.Tensor", "aten.bitwise_or.Tensor", "aten.bitwise_xor.Tensor"]:
    add(binary(op, (4, 5), (4, 5), "int64"))
    add(binary(op, (3, 1), (3, 5), "bool"))
for op in ["aten.logical_and.default", "aten.logical_or.default"]:
    add(binary(op, (4, 5), (5,), "bool"))
    add(binary(op, (3, 4), (3, 4), values="small_int"))
# activation backwards: (grad, x)
for op in ["aten.sigmoid_backward.default", "aten.tanh_backward.default", "aten.gelu_backward.default"]:
    add(binary(op, (4, 5), (4, 5)))
    add(binary(op, (3, 1, 6), (3, 1, 6)))
add(binary("aten.gelu_backward.default", (5, 3), (5, 3), kwargs={"approximate": "tanh"}))
add(binary("aten.threshold_backward.default", (4, 5), (4, 5), args=[0.0]))
add(binary("aten.threshold_backward.default", (3, 6), (3, 6), args=[0.5]))
add({"op": "aten.native_dropout_backward.default", "tensors": [t((4, 5)), t((4, 5), "bool")],
     "args": ["$0", "$1", 1.25], "kwargs": {}})
add({"op": "aten.native_dropout_backward.default", "tensors": [t((3, 1, 5)), t((3, 1, 5), "bool")],
     "args": ["$0", "$1", 2.0], "kwargs": {}})
# masked_fill
add({"op": "aten.masked_fill.Scalar", "tensors": [t((4, 5)), t((1, 5), "bool")], "args": ["$0", "$1", 2.0], "kwargs": {}})
add({"op": "aten.masked_fill.Scalar", "tensors": [t((4, 5)), t((4, 5), "bool")], "args": ["$0", "$1", -1e9], "kwargs": {}})
add({"op": "aten.masked_fill.Tensor", "tensors": [t((4, 5)), t((4, 5), "bool"), t(())], "args": ["$0", "$1", "$2"], "kwargs": {}})
add({"op": "aten.masked_fill.Tensor", "tensors": [t((3, 1, 5)), t((5,), "bool"), t(())], "args": ["$0", "$1", "$2"], "kwargs": {}})

# -- ternary
add({"op": "aten.addcmul.default", "tensors": [t((4, 5)), t((4, 5)), t((5,))], "args": ["$0", "$1", "$2"], "kwargs": {"value": 0.5}})
add({"op": "aten.addcmul.default", "tensors": [t((3, 1)), t((3, 4)), t((3, 4))], "args": ["$0", "$1", "$2"], "kwargs": {}})
add({"op": "aten.addcdiv.default", "tensors": [t((4, 5)), t((4, 1)), t((5,), values="positive")], "args": ["$0", "$1", "$2"], "kwargs": {}})
add({"op": "aten.addcdiv.default", "tensors": [t((4, 5)), t((4, 5)), t((4, 5), values="positive")], "args": ["$0", "$1", "$2"], "kwargs": {"value": -2}})
add({"op": "aten.where.self", "tensors": [t((4, 5), "bool"), t((4, 5)), t((5,))], "args": ["$0", "$1", "$2"], "kwargs": {}})
add({"op": "aten.where.self", "tensors": [t((4, 1), "bool"), t((1, 5)), t(())], "args": ["$0", "$1", "$2"], "kwargs": {}})
add({"op": "aten.lerp.Tensor", "tensors": [t((4, 5)), t((4, 5)), t((4, 5))], "args": ["$0", "$1", "$2"], "kwargs": {}})
add({"op": "aten.lerp.Tensor", "tensors": [t((3, 4)), t((4,)), t((3, 1))], "args": ["$0", "$1", "$2"], "kwargs": {}})

# -- prims.fma(a, b, c) = a * b + c (inductor's fused multiply-add; its linearity rows)
add({"op": "prims.fma.default", "tensors": [t((4, 5)), t((4, 5)), t((4, 5))], "args": ["$0", "$1", "$2"], "kwargs": {}})
add({"op": "prims.fma.default", "tensors": [t((3, 1, 4)), t((4,)), t((3, 5, 4))], "args": ["$0", "$1", "$2"], "kwargs": {},
     "note": "broadcasting operands"})
add({"op": "prims.fma.default", "tensors": [t((6,)), t(()), t((6,))], "args": ["$0", "$1", "$2"], "kwargs": {}})
# -- clamp with Python-scalar bounds: non-decreasing (P(max) / P(min) pass)
add(unary("aten.clamp_min.default", (4, 5), args=[0.3]))
add(unary("aten.clamp_min.default", (3, 1, 6), args=[-1]))
add(unary("aten.clamp_max.default", (4, 5), args=[-0.2]))
add(unary("aten.clamp_max.default", (5,), args=[2]))
add(unary("aten.clamp.default", (4, 5), args=[-0.5, 0.5]))
add(unary("aten.clamp.default", (3, 6), args=[None, 0.1]))
# -- pow.Scalar(base, exponent): monotone in the exponent as the base says
add({"op": "aten.pow.Scalar", "tensors": [t((4, 5))], "args": [2.0, "$0"], "kwargs": {}, "note": "base > 1: non-decreasing"})
add({"op": "aten.pow.Scalar", "tensors": [t((3, 1, 5))], "args": [0.5, "$0"], "kwargs": {}, "note": "0 < base < 1: non-increasing"})
add({"op": "aten.pow.Scalar", "tensors": [t((6,))], "args": [3, "$0"], "kwargs": {}, "note": "integer base"})
add({"op": "aten.pow.Scalar", "tensors": [t((4, 5), values="small_int")], "args": [-2.0, "$0"], "kwargs": {},
     "note": "negative base (integer-valued exponents keep it real): no Partial rows"})


def _fma(a, b, c):
    return a * b + c


REFERENCES = {"prims.fma.default": _fma}
