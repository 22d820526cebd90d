#pragma once
/// \file registry/pointwise_ops.hpp
/// Registers pointwise ops (DTensor `_pointwise_ops.py`: `allow_uneven_sharding=True`), each with
/// its Partial row set. Non-tensor operands (Python scalars) are not inputs of the rule, so e.g.
/// `add.Tensor(x, 1.0)` keeps only the shard rows: adding a scalar to a P(sum) is not linear.

#include <span>
#include <string_view>

#include "ctshard/registry/op_registry.hpp"
#include "ctshard/rules/pointwise_rules.hpp"

namespace ctshard {

namespace detail {
inline RuleFactory pointwise_factory(std::span<const PartialRow> partial_rows) {
  return [partial_rows](const OpCall& call) {
    std::vector<TensorShape> shapes;
    for (const auto& t : call.tensors) shapes.push_back(t.shape);
    return OpRule{pointwise_single_dim_strategy(shapes, partial_rows), true};
  };
}
}  // namespace detail

/// Registers the pointwise ops ctshard knows, grouped by Partial row set.
inline void register_pointwise_ops(OpRegistry& r) {
  using namespace pointwise_partial;
  auto f = [](std::span<const PartialRow> rows) { return detail::pointwise_factory(rows); };
  r.add({"aten.abs.default", "aten.sin.default", "aten.cos.default", "aten.sqrt.default", "aten.rsqrt.default",
         "aten.reciprocal.default", "aten.gelu.default", "aten.silu.default", "aten.atan2.default", "aten.pow.Tensor_Tensor",
         "aten.pow.Tensor_Scalar", "aten.addcmul.default", "aten.addcdiv.default", "aten.where.self", "aten.lerp.Tensor",
         "aten.eq.Tensor", "aten.eq.Scalar", "aten.ne.Tensor", "aten.ne.Scalar", "aten.lt.Tensor", "aten.lt.Scalar",
         "aten.le.Tensor", "aten.le.Scalar", "aten.gt.Tensor", "aten.gt.Scalar", "aten.ge.Tensor", "aten.ge.Scalar",
         "aten.bitwise_and.Tensor", "aten.bitwise_or.Tensor", "aten.bitwise_xor.Tensor", "aten.bitwise_not.default",
         "aten.logical_not.default", "aten.logical_and.default", "aten.logical_or.default", "aten.isnan.default",
         "aten.sign.default", "aten.square.default", "aten.sigmoid_backward.default", "aten.tanh_backward.default",
         "aten.gelu_backward.default", "aten.threshold_backward.default", "aten.rsub.Scalar", "aten.rsub.Tensor",
         "aten.add.Scalar", "aten.sub.Scalar", "aten.fill.Scalar", "aten.masked_fill.Scalar", "aten.masked_fill.Tensor"},
        f({}));
  r.add({"aten.exp.default", "aten.relu.default", "aten.tanh.default", "aten.sigmoid.default", "aten.erf.default",
         "aten.floor.default", "aten.ceil.default", "aten.log.default", "aten.log1p.default", "aten.expm1.default"},
        f(non_decreasing));
  r.add({"aten.erfc.default"}, f(non_increasing));
  r.add({"aten.neg.default"}, f(neg));
  r.add({"aten.positive.default"}, f(all_partials));
  r.add({"aten.mul.Scalar", "aten.div.Scalar"}, f(unary_linear));
  r.add({"aten.add.Tensor", "aten.sub.Tensor"}, f(binary_additive));
  r.add({"aten.mul.Tensor"}, f(mul));
  r.add({"aten.div.Tensor"}, f(div));
  r.add({"aten.maximum.default", "aten.fmax.default", "aten.clamp_min.Tensor"}, f(maximum));
  r.add({"aten.minimum.default", "aten.fmin.default", "aten.clamp_max.Tensor"}, f(minimum));
  r.add({"aten.logaddexp.default"}, f(logaddexp));
}

}  // namespace ctshard
