#pragma once
/// \file registry/pointwise_ops.hpp
/// Registers pointwise ops (DTensor `_pointwise_ops.py`: `allow_uneven_sharding=True`, i.e.
/// UnevenInputs::keep_current), each with
/// its Partial row set. Non-tensor operands (Python scalars) are not inputs of the rule, so e.g.
/// `add.Tensor(x, 1.0)` keeps only the shard rows: adding a scalar to a P(sum) is not linear.

#include <span>
#include <string_view>

#include "ctshard/registry/op_args.hpp"
#include "ctshard/registry/op_registry.hpp"
#include "ctshard/rules/pointwise_rules.hpp"

namespace ctshard {

namespace detail {
/// Pointwise rule over the call's tensor inputs; `max_tensors` is the op's tensor arity (fewer
/// tensors means some operands are Python scalars). Throws ctshard::error for no tensor input or
/// more than `max_tensors`.
inline RuleFactory pointwise_factory(std::span<const PartialRow> partial_rows, std::size_t max_tensors) {
  return [partial_rows, max_tensors](const OpCall& call) {
    op_args::expect_tensor_inputs(call, 1, max_tensors);
    std::vector<TensorShape> shapes;
    for (const auto& t : call.tensors) shapes.push_back(t.shape);
    return OpRule{pointwise_single_dim_strategy(shapes, partial_rows), UnevenInputs::keep_current, {}, PlaceholderFill::dtensor};
  };
}
}  // namespace detail

/// Registers the pointwise ops ctshard knows, grouped by tensor arity and Partial row set, with
/// DTensor's placeholder fill (PlaceholderFill::dtensor: the reference cases pin the tables of these
/// ops for Partial-only inputs too).
inline void register_pointwise_ops(OpRegistry& r) {
  using namespace pointwise_partial;
  auto unary = [](std::span<const PartialRow> rows) { return detail::pointwise_factory(rows, 1); };
  auto binary = [](std::span<const PartialRow> rows) { return detail::pointwise_factory(rows, 2); };
  auto ternary = [](std::span<const PartialRow> rows) { return detail::pointwise_factory(rows, 3); };
  r.add({"aten.abs.default",         "aten.sin.default",         "aten.cos.default",   "aten.sqrt.default",      "aten.rsqrt.default",
         "aten.reciprocal.default",  "aten.gelu.default",        "aten.silu.default",  "aten.pow.Tensor_Scalar", "aten.eq.Scalar",
         "aten.ne.Scalar",           "aten.lt.Scalar",           "aten.le.Scalar",     "aten.gt.Scalar",         "aten.ge.Scalar",
         "aten.bitwise_not.default", "aten.logical_not.default", "aten.isnan.default", "aten.log.default",       "aten.log1p.default",
         "aten.square.default",      "aten.rsub.Scalar",         "aten.add.Scalar",    "aten.sub.Scalar",        "aten.fill.Scalar"},
        unary({}));
  r.add({"aten.atan2.default", "aten.pow.Tensor_Tensor", "aten.eq.Tensor", "aten.ne.Tensor", "aten.lt.Tensor", "aten.le.Tensor", "aten.gt.Tensor",
         "aten.ge.Tensor", "aten.bitwise_and.Tensor", "aten.bitwise_or.Tensor", "aten.bitwise_xor.Tensor", "aten.logical_and.default",
         "aten.logical_or.default", "aten.rsub.Tensor", "aten.masked_fill.Scalar"},
        binary({}));
  // grad_input = grad_output * f(activation): linear in the gradient (a P(sum) gradient needs no
  // all-reduce when the activation is replicated).
  r.add({"aten.sigmoid_backward.default", "aten.tanh_backward.default", "aten.gelu_backward.default", "aten.threshold_backward.default",
         "aten.silu_backward.default"},
        binary(linear_in_first));
  r.add({"aten.addcmul.default", "aten.addcdiv.default", "aten.where.self", "aten.lerp.Tensor", "aten.masked_fill.Tensor"}, ternary({}));
  r.add({"prims.fma.default"}, ternary(fma));
  // Non-decreasing on the whole real line only (DTensor `non_decreasing_unary_ops`): an op defined
  // on part of it (log, log1p, sqrt) cannot keep P(max) / P(min), whose parts may lie outside.
  r.add({"aten.exp.default", "aten.relu.default", "aten.tanh.default", "aten.sigmoid.default", "aten.erf.default", "aten.floor.default",
         "aten.ceil.default", "aten.expm1.default", "aten.sign.default"},
        unary(non_decreasing));
  // clamp_min / clamp_max / clamp with Python-scalar bounds: x -> max(x, lo), min(x, hi) are
  // non-decreasing on all reals (DTensor 2.13 lists them without Partial rows; sound extension).
  r.add({"aten.clamp_min.default", "aten.clamp_max.default", "aten.clamp.default"}, unary(non_decreasing));
  // pow.Scalar(self: Scalar, exponent: Tensor) = self ** exponent: non-decreasing in the exponent
  // for a base >= 1, non-increasing for 0 <= base < 1 (0 ** x: inf, 1, 0 for x < 0, = 0, > 0), no
  // order for a negative or NaN base (NaN for non-integer exponents); DTensor 2.13: no Partial rows.
  r.add({"aten.pow.Scalar"}, [monotone = unary(non_decreasing), antitone = unary(non_increasing), generic = unary({})](const OpCall& call) {
    const OpArg* base = op_args::find(call, 0, "self");
    if (base == nullptr || !base->is_number()) op_args::bad_argument(call, "self", "must be a number (pow.Scalar: a Python scalar base)");
    const double b = base->kind == OpArg::Kind::floating ? base->floating : static_cast<double>(base->integer);
    if (b >= 1) return monotone(call);
    if (b >= 0) return antitone(call);
    return generic(call);
  });
  r.add({"aten.erfc.default"}, unary(non_increasing));
  r.add({"aten.neg.default"}, unary(neg));
  r.add({"aten.positive.default"}, unary(all_partials));
  r.add({"aten.mul.Scalar", "aten.div.Scalar"}, unary(unary_linear));
  r.add({"aten.add.Tensor", "aten.sub.Tensor"}, binary(binary_additive));
  r.add({"aten.mul.Tensor"}, binary(mul));
  r.add({"aten.div.Tensor"}, binary(div));
  r.add({"aten.maximum.default", "aten.fmax.default", "aten.clamp_min.Tensor"}, binary(maximum));
  r.add({"aten.minimum.default", "aten.fmin.default", "aten.clamp_max.Tensor"}, binary(minimum));
  r.add({"aten.logaddexp.default"}, binary(logaddexp));
  // div with rounding_mode ('floor' / 'trunc' / None): DTensor 2.13 registers it without Partial
  // rows (rounding is not linear, and the sign of the divisor decides monotonicity).
  r.add({"aten.div.Tensor_mode"}, [generic = binary({})](const OpCall& call) {
    const OpArg* mode = call.kwarg("rounding_mode");
    if (mode == nullptr) mode = call.arg(2);
    if (mode != nullptr && mode->kind != OpArg::Kind::none &&
        !(mode->kind == OpArg::Kind::string && (mode->text == "floor" || mode->text == "trunc")))
      throw error("ctshard: " + call.op + ": argument 'rounding_mode' must be 'floor', 'trunc' or None");
    return generic(call);
  });
}

}  // namespace ctshard
