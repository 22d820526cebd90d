#pragma once
/// \file rules/conv_pool_rules.hpp
/// Single-dim strategies of the convolution backward and of 2-d max and average pooling (+backward)
/// (DTensor `_conv_ops.py`: `convolution_backward_single_dim_strategy`; `_math_ops.py`:
/// `pooling_strategy`, `pool_backward_strategy`, `interp_pool_1out_2in_strategy`). The convolution rows mirror ctshard's forward rule
/// (`convolution_single_dim_strategy`): batch, last spatial dim with disjoint windows, and for
/// `groups == 1` output-channel and input-channel rows.

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "ctshard/core/spec.hpp"
#include "ctshard/rules/nn_rules.hpp"
#include "ctshard/rules/reduction_rules.hpp"
#include "ctshard/rules/rule_set.hpp"

namespace ctshard {

/// `convolution_backward(grad_output [N, C_out, *sp'], input [N, C_in, *sp], weight, bias_sizes,
/// stride, padding, dilation, transposed, output_padding, groups, output_mask) -> (grad_input,
/// grad_weight, grad_bias [C_out])`, with `c` describing the forward call (`has_bias` unused) and
/// `output_mask` the outputs computed. Operands `[grad_input, grad_weight, grad_bias, grad_output,
/// input, weight]`; rows:
/// - batch `[S?(0), P(sum), P(sum), S?(0), S?(0), R]` (DTensor): each rank sums its samples'
///   contributions to grad_weight / grad_bias;
/// - last spatial dim `[S?(L), P(sum), P(sum), S?(L), S?(L), R]` when `c.last_dim_windows_disjoint`
///   (needs `convolution_last_dim_filter(stride, 1)`, as the forward);
/// - output channels (groups == 1, with `convolution_backward_channel_filter`):
///   `[P(sum), S?(oc), S?(0), S?(1), R, S?(oc)]` — grad_input sums
///   over output channels, grad_weight and grad_bias split by them;
/// - input channels (groups == 1): `[S?(1), S?(ic), R, R, S?(1), S?(ic)]` — grad_bias needs the
///   whole grad_output, so every rank computes all of it;
/// - `[P(r), P(r), P(r), P(r), R, R]` for r in sum, avg: all three gradients are linear in
///   grad_output; then `[R, P(r), R, R, P(r), R]` (grad_weight is linear in input, when computed)
///   and `[P(r), R, R, R, R, P(r)]` (grad_input is linear in weight, when computed).
/// `oc` / `ic` are the weight's output / input channel dims (0 / 1; 1 / 0 when transposed). An
/// output that is not computed (`output_mask[i]` false) is `None` in DTensor and Replicate here.
/// The channel and Partial rows are ctshard's (DTensor lists only the batch row).
[[nodiscard]] constexpr RuleSet convolution_backward_single_dim_strategy(const ConvolutionParams& c, std::array<bool, 3> output_mask) {
  RuleSet rules(3, 3);
  const int rank = static_cast<int>(c.rank);
  for (std::size_t k : {0u, 1u, 3u, 4u, 5u}) rules.set_rank(k, rank);
  rules.set_rank(2, 1);
  std::vector<Placement> row(rules.width(), Replicate());
  auto add = [&](Placement grad_input, Placement grad_weight, Placement grad_bias, Placement grad_output, Placement input, Placement weight) {
    row[0] = output_mask[0] ? grad_input : Replicate();
    row[1] = output_mask[1] ? grad_weight : Replicate();
    row[2] = output_mask[2] ? grad_bias : Replicate();
    row[3] = grad_output;
    row[4] = input;
    row[5] = weight;
    rules.add(row);
  };
  const Placement psum = Partial(ReduceOp::sum);
  const Placement batch = ShardingPlaceholder(0);
  add(batch, psum, psum, batch, batch, Replicate());
  if (c.last_dim_windows_disjoint) {
    const Placement s = ShardingPlaceholder(rank - 1);
    add(s, psum, psum, s, s, Replicate());
  }
  if (c.groups == 1) {
    const int out_channel = c.transposed ? 1 : 0, in_channel = c.transposed ? 0 : 1;
    const Placement channel = ShardingPlaceholder(1);
    add(psum, ShardingPlaceholder(out_channel), ShardingPlaceholder(0), channel, Replicate(), ShardingPlaceholder(out_channel));
    add(channel, ShardingPlaceholder(in_channel), Replicate(), Replicate(), channel, ShardingPlaceholder(in_channel));
  }
  for (ReduceOp r : {ReduceOp::sum, ReduceOp::avg}) add(Partial(r), Partial(r), Partial(r), Partial(r), Replicate(), Replicate());
  // grad_weight is linear in input, grad_input in weight (the other gradients do not read them)
  for (ReduceOp r : {ReduceOp::sum, ReduceOp::avg})
    if (output_mask[1]) add(Replicate(), Partial(r), Replicate(), Replicate(), Partial(r), Replicate());
  for (ReduceOp r : {ReduceOp::sum, ReduceOp::avg})
    if (output_mask[0]) add(Partial(r), Replicate(), Replicate(), Replicate(), Replicate(), Partial(r));
  return rules;
}

/// `max_pool2d_with_indices(self [N, C, H, W] or [C, H, W], kernel_size, stride, padding, dilation,
/// ceil_mode) -> (out, indices)` on a rank-`rank` self. Operands `[out, indices, self]`; rows
/// `[S?(0), S?(0), S?(0)]` and, when batched (rank 4), `[S?(1), S?(1), S?(1)]`: pooling works per
/// (sample, channel) plane (with `pooling_channel_filter`). The pooled dims stay whole: a window may
/// straddle a shard boundary, and
/// `indices` are flat positions in the whole H x W plane. No Partial row: `indices` of a P(max)
/// input would name each rank's own maxima. DTensor `pooling_strategy`.
[[nodiscard]] constexpr RuleSet max_pool2d_with_indices_single_dim_strategy(std::size_t rank) {
  RuleSet rules(2, 1);
  for (std::size_t k = 0; k < 3; ++k) rules.set_rank(k, static_cast<int>(rank));
  for (int d = 0; d < (rank >= 4 ? 2 : 1); ++d) {
    const Placement s = ShardingPlaceholder(d);
    rules.add({s, s, s});
  }
  return rules;
}

/// `max_pool2d_with_indices_backward(grad_output, self, kernel_size, stride, padding, dilation,
/// ceil_mode, indices) -> grad_input` (self's shape) on a rank-`rank` self. Operands
/// `[grad_input, grad_output, self, indices]`; rows `[S?(0)] * 4`, `[S?(1)] * 4` when batched
/// (rank 4), then `[P(r), P(r), R, R]` for r in sum, avg (grad_input scatters grad_output to the
/// recorded positions: linear in grad_output; self only gives the shape). DTensor
/// `pool_backward_strategy`.
[[nodiscard]] constexpr RuleSet max_pool2d_with_indices_backward_single_dim_strategy(std::size_t rank) {
  RuleSet rules(1, 3);
  for (std::size_t k = 0; k < 4; ++k) rules.set_rank(k, static_cast<int>(rank));
  for (int d = 0; d < (rank >= 4 ? 2 : 1); ++d) {
    const Placement s = ShardingPlaceholder(d);
    rules.add({s, s, s, s});
  }
  for (ReduceOp r : {ReduceOp::sum, ReduceOp::avg}) rules.add({Partial(r), Partial(r), Replicate(), Replicate()});
  return rules;
}

/// `avg_pool2d(self [N, C, H, W] or [C, H, W], kernel_size, stride, padding, ceil_mode,
/// count_include_pad, divisor_override) -> out` and `_adaptive_avg_pool2d(self, output_size) ->
/// out` on a rank-`rank` self. Operands `[out, self]`; rows `[S?(0), S?(0)]` and, when batched
/// (rank 4), `[S?(1), S?(1)]` (pooling works per plane; the pooled dims stay whole: a window may
/// straddle a shard), then `[P(r), P(r)]` for r in sum, avg (a window average is linear; its
/// divisor depends on the geometry only). DTensor `pooling_strategy` (AVG_POOL_OPS).
[[nodiscard]] constexpr RuleSet avg_pool2d_single_dim_strategy(std::size_t rank) {
  RuleSet rules(1, 1);
  for (std::size_t k = 0; k < 2; ++k) rules.set_rank(k, static_cast<int>(rank));
  for (int d = 0; d < (rank >= 4 ? 2 : 1); ++d) rules.add({ShardingPlaceholder(d), ShardingPlaceholder(d)});
  for (ReduceOp r : {ReduceOp::sum, ReduceOp::avg}) rules.add({Partial(r), Partial(r)});
  return rules;
}

/// `avg_pool2d_backward(grad_output, self, kernel_size, stride, padding, ceil_mode,
/// count_include_pad, divisor_override) -> grad_input` and `_adaptive_avg_pool2d_backward(
/// grad_output, self) -> grad_input` (self's shape) on a rank-`rank` self. Operands `[grad_input,
/// grad_output, self]`; rows `[S?(0)] * 3` and, when batched (rank 4), `[S?(1)] * 3` (self gives
/// each rank its local shape, so it follows the shard), then `[P(r), P(r), R]` for r in sum, avg:
/// grad_input spreads each grad_output element over its window with a fixed weight — linear in
/// grad_output; self only gives the shape. DTensor 2.13 has no rule for avg_pool2d_backward, and
/// `interp_pool_1out_2in_strategy` for the adaptive one, whose `[S?(1)] * 3` it lists unbatched
/// too (dim 1 of [C, H, W] is H: a window straddles it) and without the Partial rows.
[[nodiscard]] constexpr RuleSet avg_pool2d_backward_single_dim_strategy(std::size_t rank) {
  RuleSet rules(1, 2);
  for (std::size_t k = 0; k < 3; ++k) rules.set_rank(k, static_cast<int>(rank));
  for (int d = 0; d < (rank >= 4 ? 2 : 1); ++d) {
    const Placement s = ShardingPlaceholder(d);
    rules.add({s, s, s});
  }
  for (ReduceOp r : {ReduceOp::sum, ReduceOp::avg}) rules.add({Partial(r), Partial(r), Replicate()});
  return rules;
}

}  // namespace ctshard
