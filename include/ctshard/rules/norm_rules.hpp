#pragma once
/// \file rules/norm_rules.hpp
/// Single-dim strategies of layer norm and RMS norm, forward and backward (DTensor `_math_ops.py`:
/// `layer_norm_single_dim_strategy`, `layer_norm_bwd_single_dim_strategy`,
/// `rms_norm_single_dim_strategy`, `rms_norm_bwd_single_dim_strategy`), and of apex's fused layer
/// norm backward, whose statistics are flattened over the leading dims. The normalized (trailing)
/// dims are reduced by the op and stay whole; every leading (batch) dim can be sharded.

#include <array>
#include <cstddef>
#include <string>
#include <vector>

#include "ctshard/rules/rule_set.hpp"

namespace ctshard {

namespace detail {
[[noreturn]] inline void norm_rank_mismatch(const char* api) { throw error(std::string(api) + ": normalized_shape has more dims than the input"); }
}  // namespace detail

/// `native_layer_norm(input, normalized_shape, weight?, bias?, eps) -> (out, mean, rstd)` on a
/// rank-`rank` input whose last `normalized_ndim` dims are normalized. Operands
/// `[out, mean, rstd, input, weight?, bias?]` (mean / rstd keep the input's rank, with size 1 on
/// the normalized dims); one row per leading dim d: `[S?(d), S?(d), S?(d), S?(d), R?, R?]`
/// (weight and bias cover the normalized dims only, so they stay replicated). No Partial row: the
/// statistics are not linear in the input. Throws ctshard::error when normalized_ndim > rank.
[[nodiscard]] constexpr RuleSet layer_norm_single_dim_strategy(std::size_t rank, std::size_t normalized_ndim, bool has_weight, bool has_bias) {
  if (normalized_ndim > rank) detail::norm_rank_mismatch("ctshard::layer_norm_single_dim_strategy");
  const std::size_t num_inputs = 1 + (has_weight ? 1u : 0u) + (has_bias ? 1u : 0u);
  RuleSet rules(3, num_inputs);
  for (std::size_t k = 0; k < 4; ++k) rules.set_rank(k, static_cast<int>(rank));
  for (std::size_t k = 4; k < rules.width(); ++k) rules.set_rank(k, static_cast<int>(normalized_ndim));
  std::vector<Placement> row(rules.width(), Replicate());
  for (std::size_t d = 0; d + normalized_ndim < rank; ++d) {
    for (std::size_t k = 0; k < 4; ++k) row[k] = ShardingPlaceholder(static_cast<int>(d));
    rules.add(row);
  }
  return rules;
}

/// `native_layer_norm_backward(grad_out, input, normalized_shape, mean, rstd, weight?, bias?,
/// output_mask) -> (grad_input, grad_weight, grad_bias)`. Operands `[grad_input, grad_weight,
/// grad_bias, grad_out, input, mean, rstd, weight?, bias?]`; one row per leading dim d:
/// grad_input `S?(d)`, grad_weight / grad_bias `P(sum)` (each rank sums its own rows of the batch),
/// the four activations `S?(d)`, weight / bias `R`; then, since all three gradients are linear in
/// grad_out, `[P(r), P(r), P(r), P(r), R...]` for r = sum, avg (a Partial grad_out needs no
/// reduction before the backward). An output that is not computed (`output_mask[i]` false, or no
/// weight / bias) is `None` in DTensor and Replicate here.
/// Throws ctshard::error when normalized_ndim > rank.
[[nodiscard]] constexpr RuleSet layer_norm_backward_single_dim_strategy(std::size_t rank, std::size_t normalized_ndim, bool has_weight, bool has_bias,
                                                                        std::array<bool, 3> output_mask) {
  if (normalized_ndim > rank) detail::norm_rank_mismatch("ctshard::layer_norm_backward_single_dim_strategy");
  const std::size_t num_inputs = 4 + (has_weight ? 1u : 0u) + (has_bias ? 1u : 0u);
  RuleSet rules(3, num_inputs);
  rules.set_rank(0, static_cast<int>(rank));
  rules.set_rank(1, static_cast<int>(normalized_ndim));
  rules.set_rank(2, static_cast<int>(normalized_ndim));
  for (std::size_t k = 3; k < 7; ++k) rules.set_rank(k, static_cast<int>(rank));
  for (std::size_t k = 7; k < rules.width(); ++k) rules.set_rank(k, static_cast<int>(normalized_ndim));
  const bool grad_weight = has_weight && output_mask[1];
  const bool grad_bias = has_bias && output_mask[2];
  std::vector<Placement> row(rules.width(), Replicate());
  for (std::size_t d = 0; d + normalized_ndim < rank; ++d) {
    const Placement s = ShardingPlaceholder(static_cast<int>(d));
    row[0] = output_mask[0] ? s : Replicate();
    row[1] = grad_weight ? Partial(ReduceOp::sum) : Replicate();
    row[2] = grad_bias ? Partial(ReduceOp::sum) : Replicate();
    for (std::size_t k = 3; k < 7; ++k) row[k] = s;
    rules.add(row);
  }
  for (ReduceOp r : {ReduceOp::sum, ReduceOp::avg}) {
    row.assign(row.size(), Replicate());
    row[0] = output_mask[0] ? Partial(r) : Replicate();
    row[1] = grad_weight ? Partial(r) : Replicate();
    row[2] = grad_bias ? Partial(r) : Replicate();
    row[3] = Partial(r);
    rules.add(row);
  }
  return rules;
}

/// `_fused_rms_norm(input, normalized_shape, weight?, eps) -> (out, rstd)` on a rank-`rank` input
/// whose last `normalized_ndim` dims are normalized (rstd keeps the input's rank, size 1 on the
/// normalized dims). Operands `[out, rstd, input, weight?]`; one row per leading dim d:
/// `[S?(d), S?(d), S?(d), R?]`. No Partial row (out = x / rms(x) * w is not linear in x).
/// DTensor `rms_norm_single_dim_strategy`. Throws ctshard::error when normalized_ndim > rank.
[[nodiscard]] constexpr RuleSet rms_norm_single_dim_strategy(std::size_t rank, std::size_t normalized_ndim, bool has_weight) {
  if (normalized_ndim > rank) detail::norm_rank_mismatch("ctshard::rms_norm_single_dim_strategy");
  RuleSet rules(2, has_weight ? 2 : 1);
  for (std::size_t k = 0; k < 3; ++k) rules.set_rank(k, static_cast<int>(rank));
  if (has_weight) rules.set_rank(3, static_cast<int>(normalized_ndim));
  std::vector<Placement> row(rules.width(), Replicate());
  for (std::size_t d = 0; d + normalized_ndim < rank; ++d) {
    for (std::size_t k = 0; k < 3; ++k) row[k] = ShardingPlaceholder(static_cast<int>(d));
    rules.add(row);
  }
  return rules;
}

/// `_fused_rms_norm_backward(grad_out, input, normalized_shape, rstd, weight?, output_mask[2]) ->
/// (grad_input, grad_weight)`. Operands `[grad_input, grad_weight, grad_out, input, rstd,
/// weight?]`; one row per leading dim d: `[S?(d), P(sum), S?(d), S?(d), S?(d), R?]` (DTensor);
/// then `[P(r), P(r), P(r), R, R, R?]` for r in sum, avg (both gradients are linear in grad_out;
/// ctshard's, as for layer norm). grad_weight is computed only with a weight and `output_mask[1]`;
/// an output not computed is Replicate (None in DTensor). Throws ctshard::error when
/// normalized_ndim > rank.
[[nodiscard]] constexpr RuleSet rms_norm_backward_single_dim_strategy(std::size_t rank, std::size_t normalized_ndim, bool has_weight,
                                                                      std::array<bool, 2> output_mask) {
  if (normalized_ndim > rank) detail::norm_rank_mismatch("ctshard::rms_norm_backward_single_dim_strategy");
  RuleSet rules(2, has_weight ? 4 : 3);
  rules.set_rank(0, static_cast<int>(rank));
  rules.set_rank(1, static_cast<int>(normalized_ndim));
  for (std::size_t k = 2; k < 5; ++k) rules.set_rank(k, static_cast<int>(rank));
  if (has_weight) rules.set_rank(5, static_cast<int>(normalized_ndim));
  const bool grad_weight = has_weight && output_mask[1];
  std::vector<Placement> row(rules.width(), Replicate());
  for (std::size_t d = 0; d + normalized_ndim < rank; ++d) {
    const Placement s = ShardingPlaceholder(static_cast<int>(d));
    row[0] = output_mask[0] ? s : Replicate();
    row[1] = grad_weight ? Partial(ReduceOp::sum) : Replicate();
    for (std::size_t k = 2; k < 5; ++k) row[k] = s;
    rules.add(row);
  }
  for (ReduceOp r : {ReduceOp::sum, ReduceOp::avg}) {
    row.assign(row.size(), Replicate());
    row[0] = output_mask[0] ? Partial(r) : Replicate();
    row[1] = grad_weight ? Partial(r) : Replicate();
    row[2] = Partial(r);
    rules.add(row);
  }
  return rules;
}

/// apex `fused_layer_norm_affine_bwd(grad_output, mean [n], invvar [n], input_or_output,
/// normalized_shape, weight, bias, eps, memory_efficient) -> (grad_input, grad_weight, grad_bias)`,
/// with `n` the product of the input's leading dims (mean / invvar are flattened). Operands
/// `[grad_input, grad_weight, grad_bias, grad_output, mean, invvar, input_or_output, weight,
/// bias]`; rows: when the input has a leading dim, `[S?(0), P(sum), P(sum), S?(0), S?(0), S?(0),
/// S?(0), R, R]` (token-parallel on leading dim 0, as the forward
/// `apex.fused_layer_norm_affine_fwd`; a flattened statistic lines up with dim 0 only when the
/// split is even, a full-mesh filter of the registry); then `[P(r), P(r), P(r), P(r), R...]` for r
/// in sum, avg (linear in grad_output). No DTensor rule exists. Throws ctshard::error when
/// normalized_ndim > rank.
[[nodiscard]] constexpr RuleSet apex_layer_norm_backward_single_dim_strategy(std::size_t rank, std::size_t normalized_ndim) {
  if (normalized_ndim > rank) detail::norm_rank_mismatch("ctshard::apex_layer_norm_backward_single_dim_strategy");
  RuleSet rules(3, 6);
  rules.set_rank(0, static_cast<int>(rank));
  for (std::size_t k : {1u, 2u, 7u, 8u}) rules.set_rank(k, static_cast<int>(normalized_ndim));
  rules.set_rank(3, static_cast<int>(rank));
  rules.set_rank(4, 1);
  rules.set_rank(5, 1);
  rules.set_rank(6, static_cast<int>(rank));
  const Placement s = ShardingPlaceholder(0), psum = Partial(ReduceOp::sum), rep = Replicate();
  if (rank > normalized_ndim) rules.add({s, psum, psum, s, s, s, s, rep, rep});
  for (ReduceOp r : {ReduceOp::sum, ReduceOp::avg}) {
    const Placement p = Partial(r);
    rules.add({p, p, p, p, rep, rep, rep, rep, rep});
  }
  return rules;
}

}  // namespace ctshard
