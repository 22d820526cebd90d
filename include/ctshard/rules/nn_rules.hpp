#pragma once
/// \file rules/nn_rules.hpp
/// Single-dim strategies of neural-network ops that are neither reductions nor gathers:
/// convolution (DTensor `_conv_ops.py`), dropout and its backward (`_random_ops.py`), and
/// `equal` (`_tensor_ops.py`).

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "ctshard/core/spec.hpp"
#include "ctshard/core/tensor_shape.hpp"
#include "ctshard/rules/pointwise_rules.hpp"
#include "ctshard/rules/reduction_rules.hpp"
#include "ctshard/rules/rule_set.hpp"

namespace ctshard {

/// What `convolution_single_dim_strategy` needs to know of a convolution call.
struct ConvolutionParams {
  std::size_t rank = 4;     ///< input rank: 2 + spatial dims (batched), weight has the same rank
  bool has_bias = false;    ///< a bias [C_out] is passed
  bool transposed = false;  ///< weight is [C_in, C_out / groups, k...] instead of [C_out, C_in / groups, k...]
  std::int64_t groups = 1;
  /// The last spatial dim has non-overlapping windows (no padding, dilation 1, stride == kernel
  /// size, not transposed, rank 3..5), so it can be split between windows. DTensor
  /// `_supports_last_dim_sharding`.
  bool last_dim_windows_disjoint = false;
};

/// `convolution(input [N, C_in, *sp], weight, bias?, stride, padding, dilation, transposed,
/// output_padding, groups) -> out [N, C_out, *sp']`. Operands `[out, input, weight, bias?]`; rows:
/// - batch `[S?(0), S?(0), R, R]` (DTensor);
/// - last spatial dim `[S?(L), S?(L), R, R]` when `last_dim_windows_disjoint` (DTensor; needs
///   `convolution_last_dim_filter`);
/// - output channels (groups == 1): `[S?(1), R, weight S?(out-channel dim), bias S?(0)]`;
/// - input channels (groups == 1): `[P(sum), S?(1), weight S?(in-channel dim), bias P(sum)]` — the
///   output is a sum over input channels, and the bias is added once overall (R -> P(sum) splits
///   it). The channel rows are ctshard's (DTensor lists only batch and last-dim rows); with
///   groups > 1 a channel block needs its own group of the other operand, so they are left out.
[[nodiscard]] constexpr RuleSet convolution_single_dim_strategy(const ConvolutionParams& c) {
  RuleSet rules(1, c.has_bias ? 3 : 2);
  for (std::size_t k = 0; k < 3; ++k) rules.set_rank(k, static_cast<int>(c.rank));
  if (c.has_bias) rules.set_rank(3, 1);
  std::vector<Placement> row(rules.width(), Replicate());
  auto add = [&](Placement out, Placement input, Placement weight, Placement bias) {
    row[0] = out;
    row[1] = input;
    row[2] = weight;
    if (c.has_bias) row[3] = bias;
    rules.add(row);
  };
  add(ShardingPlaceholder(0), ShardingPlaceholder(0), Replicate(), Replicate());
  if (c.last_dim_windows_disjoint) {
    const Placement s = ShardingPlaceholder(static_cast<int>(c.rank - 1));
    add(s, s, Replicate(), Replicate());
  }
  if (c.groups == 1) {
    const int out_channel = c.transposed ? 1 : 0, in_channel = c.transposed ? 0 : 1;
    add(ShardingPlaceholder(1), Replicate(), ShardingPlaceholder(out_channel), ShardingPlaceholder(0));
    add(Partial(ReduceOp::sum), ShardingPlaceholder(1), ShardingPlaceholder(in_channel), Partial(ReduceOp::sum));
  }
  return rules;
}

/// `native_dropout(input, p, train) -> (out, mask)` on a rank-`rank` input. Operands
/// `[out, mask, input]`; rows `[S?(d), S?(d), S?(d)]` for every dim. No Partial row: `out` is a
/// partial sum only if every rank of the mesh dim draws the same mask (then `mask` would be
/// Replicate), an RNG contract ctshard does not model; with independent per-rank masks
/// sum_r m_r x_r / (1 - p) is not m (sum_r x_r) / (1 - p). DTensor `_random_inplace_single_dim_strategy`
/// ("random sampling on partial tensors is undefined").
[[nodiscard]] constexpr RuleSet dropout_single_dim_strategy(std::size_t rank) { return shard_except_dim_strategy(rank, rank, 2, 1); }

/// Partial rows of a product with a fixed second factor: `[P(r), P(r), R]` for r in (sum, avg)
/// (native_dropout_backward: grad_in = grad_out * mask * scale is linear in grad_out).
inline constexpr std::array<PartialRow, 2> linear_in_first_operand{detail::row3(detail::Psum, detail::Psum, detail::Rep),
                                                                   detail::row3(detail::Pavg, detail::Pavg, detail::Rep)};

/// `native_dropout_backward(grad_output, mask, scale) -> grad_input`: pointwise over the
/// broadcast shape of its two tensors, plus `linear_in_first_operand`. DTensor registers it as a
/// pointwise op.
[[nodiscard]] constexpr RuleSet dropout_backward_single_dim_strategy(const TensorShape& grad_output, const TensorShape& mask) {
  const std::array<TensorShape, 2> shapes{grad_output, mask};
  return pointwise_single_dim_strategy(shapes, linear_in_first_operand);
}

/// `equal(a, b) -> bool` (a Python bool, listed as a Replicate output). Operands `[out, a, b]`;
/// when the shapes are equal, `[R, S?(d), S?(d)]` for every dim: identical layouts compare
/// block by block, and the per-rank booleans are AND-ed by the runtime (DTensor dispatch
/// all-gathers them), which is why the output is Replicate. Different shapes (the result is
/// False) and 0-d tensors get no row (regression B05: no Shard on a 0-d tensor); Partial inputs
/// never compare locally. DTensor `equal_strategy`.
[[nodiscard]] constexpr RuleSet equal_single_dim_strategy(const TensorShape& a, const TensorShape& b) {
  RuleSet rules(1, 2);
  rules.set_rank(0, 0);
  rules.set_rank(1, a.rank);
  rules.set_rank(2, b.rank);
  if (!(a == b)) return rules;
  for (std::size_t d = 0; d < a.rank; ++d) {
    const Placement s = ShardingPlaceholder(static_cast<int>(d));
    rules.add({Replicate(), s, s});
  }
  return rules;
}

}  // namespace ctshard
