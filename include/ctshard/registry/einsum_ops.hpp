#pragma once
/// \file registry/einsum_ops.hpp
/// Registers the einsum family: aten.mm / bmm / dot / addmm / baddbmm / einsum (DTensor
/// `_matrix_ops.py` single-dim registrations; `allow_uneven_sharding` false: UnevenInputs::reject).

#include <span>
#include <string>

#include "ctshard/einsum/equation.hpp"
#include "ctshard/registry/op_args.hpp"
#include "ctshard/registry/op_registry.hpp"
#include "ctshard/rules/einsum_rules.hpp"

namespace ctshard {

namespace detail {
/// Rules of a two-operand einsum over tensors `first` and `first + 1`, the call's last two.
/// Throws ctshard::error unless the call has exactly first + 2 tensors of the equation's ranks.
inline RuleSet einsum_rules_for(const OpCall& call, const EinsumEquation& eq, std::size_t first, EinsumLinearity linearity) {
  op_args::expect_tensor_inputs(call, first + 2);
  (void)einsum_output_shape(eq, call.tensors[first].shape, call.tensors[first + 1].shape);  // throws on rank mismatch
  return einsum_single_dim_strategy(eq, linearity);
}

/// Whether an einsum op takes a bias tensor before its two operands (addmm, baddbmm).
enum class EinsumBias : bool { none, first_input };

inline RuleFactory einsum_factory(std::string_view equation, EinsumBias bias, EinsumLinearity linearity) {
  const EinsumEquation eq = parse_einsum_or_throw(equation, 2);
  return [eq, with_bias = bias == EinsumBias::first_input, linearity](const OpCall& call) {
    op_args::expect_tensor_inputs(call, with_bias ? 3 : 2);
    const std::size_t first = with_bias ? 1 : 0;
    RuleSet rules = einsum_rules_for(call, eq, first, linearity);
    if (with_bias) {
      const TensorShape out = einsum_output_shape(eq, call.tensors[1].shape, call.tensors[2].shape);
      const TensorShape both[] = {out, call.tensors[0].shape};
      bool broadcasts = true;
      try {
        broadcasts = broadcast_shapes(both) == out;
      } catch (const error&) {
        broadcasts = false;
      }
      if (!broadcasts)
        throw error("ctshard: op '" + call.op + "': bias of shape " + to_string(call.tensors[0].shape) + " does not broadcast to the output " +
                    to_string(out));
      rules = with_bias_operand(rules, out, call.tensors[0].shape);
    }
    return OpRule{rules, UnevenInputs::reject, {}, PlaceholderFill::dtensor};
  };
}

/// FLOPs of mm / bmm (a [.., m, k], b [.., k, n]): 2 x the output's elements x k, the first
/// operand's last dim (2mkn; 2bmkn). Bytes: the operands'.
inline OpCompute matmul_compute(std::span<const TensorMeta> in, std::span<const TensorMeta> out) {
  if (in.size() != 2 || !op_compute::has_output(out)) return elementwise_compute(in, out);
  return OpCompute{2.0 * op_compute::numel(out[0]) * op_compute::last_dim(in[0]), op_compute::operand_bytes(in, out)};
}

/// FLOPs of addmm / baddbmm (bias, a, b): the product's, 2 x the output's elements x a's last
/// dim, plus one add per output element (2mkn + mn). Bytes: the operands'.
inline OpCompute addmm_compute(std::span<const TensorMeta> in, std::span<const TensorMeta> out) {
  if (in.size() != 3 || !op_compute::has_output(out)) return elementwise_compute(in, out);
  return OpCompute{2.0 * op_compute::numel(out[0]) * op_compute::last_dim(in[1]) + op_compute::numel(out[0]), op_compute::operand_bytes(in, out)};
}
}  // namespace detail

/// Registers mm, bmm, dot, addmm, baddbmm (.default) and einsum.default (equation from the first
/// argument, two operands) with the given Partial-row policy (DTensor's by default) and DTensor's
/// placeholder fill (PlaceholderFill::dtensor: the reference cases pin the tables of these ops for
/// Partial-only inputs too); mm, bmm, addmm and baddbmm with their FLOPs (detail::matmul_compute,
/// detail::addmm_compute), dot and einsum at elementwise_compute.
inline void register_einsum_ops(OpRegistry& registry, EinsumLinearity linearity = EinsumLinearity::dtensor) {
  using detail::EinsumBias;
  registry.add({"aten.mm.default"}, detail::matmul_compute, detail::einsum_factory(mm_equation, EinsumBias::none, linearity));
  registry.add({"aten.bmm.default"}, detail::matmul_compute, detail::einsum_factory(bmm_equation, EinsumBias::none, linearity));
  registry.add({"aten.dot.default"}, detail::einsum_factory(dot_equation, EinsumBias::none, linearity));
  registry.add({"aten.addmm.default"}, detail::addmm_compute, detail::einsum_factory(mm_equation, EinsumBias::first_input, linearity));
  registry.add({"aten.baddbmm.default"}, detail::addmm_compute, detail::einsum_factory(bmm_equation, EinsumBias::first_input, linearity));
  registry.add({"aten.einsum.default"}, [linearity](const OpCall& call) {
    const OpArg* eq = call.arg(0);
    if (eq == nullptr || eq->kind != OpArg::Kind::string) throw error("ctshard: aten.einsum.default needs the equation string as its first argument");
    return OpRule{
        detail::einsum_rules_for(call, parse_einsum_or_throw(eq->text, 2), 0, linearity), UnevenInputs::reject, {}, PlaceholderFill::dtensor};
  });
}

}  // namespace ctshard
