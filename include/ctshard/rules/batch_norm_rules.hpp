#pragma once
/// \file rules/batch_norm_rules.hpp
/// Single-dim strategies of batch norm forward and backward (DTensor `_math_ops.py`:
/// `batch_norm_strategy`, `batch_norm_backward_strategy`).
///
/// Batch norm normalizes each channel (dim 1 of `[N, C, *spatial]`) over the batch and spatial
/// dims. Splitting channels is always exact (DTensor's only row). In training mode the statistics
/// span the whole batch: a rank holding part of the batch (or of a spatial dim) cannot normalize
/// its part — the mean of equal-sized parts' means is the batch mean (a `P(avg)` exactly when the
/// split is even), but `invstd = 1 / sqrt(var + eps)` and the normalized output are no Partial of
/// anything — so training rows never split the batch, except the backward's weight and bias
/// gradients when grad_input is not requested. In eval mode (running statistics) the op is an
/// affine map per channel: batch and spatial dims split freely.

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "ctshard/rules/rule_set.hpp"

namespace ctshard {

namespace detail {
[[noreturn]] inline void batch_norm_rank(const char* api, std::size_t rank) {
  throw error(std::string(api) + ": input must be [N, C, *spatial] (rank >= 2), got rank " + std::to_string(rank));
}
}  // namespace detail

/// Whether batch norm computes batch statistics (`training`) or uses the running ones.
enum class BatchNormMode : unsigned char { training, eval };

/// What the batch norm forward rule needs of a call.
struct BatchNormParams {
  std::size_t rank = 4;  ///< input rank: 2 + spatial dims
  BatchNormMode mode = BatchNormMode::training;
  std::size_t num_outputs = 3;         ///< (out, save_mean, save_invstd); 5 with (running_mean_out, running_var_out)
  std::size_t num_channel_inputs = 0;  ///< [C] tensor inputs after `input`: weight?, bias?, running_mean?, running_var?
};

/// `native_batch_norm` / `_native_batch_norm_legit` / `_native_batch_norm_legit_no_training` /
/// `_native_batch_norm_legit_functional` `(input [N, C, *sp], weight?, bias?, running_mean?,
/// running_var?, [training,] momentum, eps) -> (out, save_mean [C], save_invstd [C]
/// [, running_mean_out [C], running_var_out [C]])`. Operands `[outputs..., input, [C] inputs...]`;
/// rows:
/// - channels `[S?(1), S?(0)..., S?(1), S?(0)...]` (DTensor; eval-mode save_mean / save_invstd are
///   empty, their placement is moot);
/// - eval mode only, for d = 0 and every spatial d >= 2: `[S?(d), R..., S?(d), R...]` (ctshard's:
///   an affine map per channel; DTensor lists only the channel row).
/// No Partial row (the output is affine, not linear, in the input). Throws ctshard::error for a
/// rank below 2.
[[nodiscard]] constexpr RuleSet batch_norm_single_dim_strategy(const BatchNormParams& p) {
  if (p.rank < 2) detail::batch_norm_rank("ctshard::batch_norm_single_dim_strategy", p.rank);
  RuleSet rules(p.num_outputs, 1 + p.num_channel_inputs);
  rules.set_rank(0, static_cast<int>(p.rank));
  for (std::size_t k = 1; k < p.num_outputs; ++k) rules.set_rank(k, 1);
  rules.set_rank(p.num_outputs, static_cast<int>(p.rank));
  for (std::size_t k = p.num_outputs + 1; k < rules.width(); ++k) rules.set_rank(k, 1);
  std::vector<Placement> row(rules.width(), ShardingPlaceholder(0));
  row[0] = row[p.num_outputs] = ShardingPlaceholder(1);
  rules.add(row);
  if (p.mode == BatchNormMode::eval) {
    for (std::size_t d = 0; d < p.rank; ++d) {
      if (d == 1) continue;
      for (auto& q : row) q = Replicate();
      row[0] = row[p.num_outputs] = ShardingPlaceholder(static_cast<int>(d));
      rules.add(row);
    }
  }
  return rules;
}

/// What the batch norm backward rule needs of a call.
struct BatchNormBackwardParams {
  std::size_t rank = 4;                          ///< input rank: 2 + spatial dims
  BatchNormMode mode = BatchNormMode::training;  ///< `train`
  std::size_t num_channel_inputs = 0;      ///< tensor inputs after grad_out, input: weight?, running_mean?, running_var?, save_mean?, save_invstd?
  std::uint32_t empty_channel_inputs = 0;  ///< bit i: channel input i is empty (eval-mode save_mean / save_invstd): Replicate
  std::array<bool, 3> output_mask{true, true, true};
};

/// `native_batch_norm_backward(grad_out, input, weight?, running_mean?, running_var?, save_mean?,
/// save_invstd?, train, eps, output_mask) -> (grad_input, grad_weight [C], grad_bias [C])`.
/// Operands `[grad_input, grad_weight, grad_bias, grad_out, input, [C] inputs...]`; rows:
/// - channels `[S?(1), S?(0), S?(0), S?(1), S?(1), S?(0)...]` (DTensor; an empty [C] input R);
/// - eval mode, d = 0 and every spatial d >= 2: `[S?(d), P(sum), P(sum), S?(d), S?(d), R...]`
///   (grad_input is per-element, grad_weight / grad_bias sum over the batch and spatial dims);
/// - training mode, same dims, only when grad_input is not computed: `[R, P(sum), P(sum), S?(d),
///   S?(d), R...]` (grad_input needs the batch means of grad_out and grad_out * x_hat);
/// - `[P(r), P(r), P(r), P(r), R, R...]` for r in sum, avg: every gradient is linear in grad_out.
/// Outputs not computed (`output_mask[i]` false) are Replicate (None in DTensor). The rows beyond
/// the channel row are ctshard's. Throws ctshard::error for a rank below 2.
[[nodiscard]] constexpr RuleSet batch_norm_backward_single_dim_strategy(const BatchNormBackwardParams& p) {
  if (p.rank < 2) detail::batch_norm_rank("ctshard::batch_norm_backward_single_dim_strategy", p.rank);
  RuleSet rules(3, 2 + p.num_channel_inputs);
  rules.set_rank(0, static_cast<int>(p.rank));
  rules.set_rank(1, 1);
  rules.set_rank(2, 1);
  rules.set_rank(3, static_cast<int>(p.rank));
  rules.set_rank(4, static_cast<int>(p.rank));
  for (std::size_t k = 5; k < rules.width(); ++k) rules.set_rank(k, 1);
  std::vector<Placement> row(rules.width(), Replicate());
  enum class ChannelInputs : unsigned char { split, replicated };  // the [C] inputs in a row
  auto add = [&](Placement grad_input, Placement grad_param, Placement activations, ChannelInputs channel_inputs) {
    row[0] = p.output_mask[0] ? grad_input : Replicate();
    row[1] = p.output_mask[1] ? grad_param : Replicate();
    row[2] = p.output_mask[2] ? grad_param : Replicate();
    row[3] = activations;
    row[4] = activations.is_partial() ? Replicate() : activations;
    for (std::size_t i = 0; i < p.num_channel_inputs; ++i)
      row[5 + i] = channel_inputs == ChannelInputs::split && ((p.empty_channel_inputs >> i) & 1u) == 0 ? ShardingPlaceholder(0) : Replicate();
    rules.add(row);
  };
  const Placement psum = Partial(ReduceOp::sum);
  add(ShardingPlaceholder(1), ShardingPlaceholder(0), ShardingPlaceholder(1), ChannelInputs::split);
  const bool params_wanted = p.output_mask[1] || p.output_mask[2];
  if (p.mode == BatchNormMode::eval || (!p.output_mask[0] && params_wanted)) {
    for (std::size_t d = 0; d < p.rank; ++d) {
      if (d == 1) continue;
      const Placement s = ShardingPlaceholder(static_cast<int>(d));
      add(p.mode == BatchNormMode::eval ? s : Replicate(), psum, s, ChannelInputs::replicated);
    }
  }
  for (ReduceOp r : {ReduceOp::sum, ReduceOp::avg}) add(Partial(r), Partial(r), Partial(r), ChannelInputs::replicated);
  return rules;
}

}  // namespace ctshard
