#pragma once
/// \file rules/layout_rules.hpp
/// Single-dim strategies of ops that move elements within a layout: `as_strided` /
/// `as_strided_scatter` (local only when they are a plain view), `constant_pad_nd`, `roll`, `flip`,
/// `select_scatter`, the FFT kernels `_fft_c2c` / `_fft_r2c` / `_fft_c2r`, and `view_as_real` /
/// `view_as_complex` (DTensor `_tensor_ops.py`, `_matrix_ops.py`, `_view_ops.py`).

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "ctshard/core/checked.hpp"
#include "ctshard/core/tensor_shape.hpp"
#include "ctshard/error.hpp"
#include "ctshard/rules/rule_set.hpp"
#include "ctshard/rules/tensor_dims.hpp"
#include "ctshard/rules/tensor_op_rules.hpp"
#include "ctshard/rules/view_rules.hpp"

namespace ctshard {

/// Marks the dims of a rank-`rank` tensor an op works along (a bit per dim).
using DimMask = std::uint64_t;

/// `[S?(d)] * width` for every dim d of a rank-`rank` tensor outside `active` (the op works
/// independently along those dims). DTensor `_shard_inactive_dims`.
[[nodiscard]] constexpr RuleSet shard_inactive_dims_strategy(std::size_t rank, DimMask active, std::size_t num_outputs, std::size_t num_inputs) {
  RuleSet rules(num_outputs, num_inputs);
  for (std::size_t k = 0; k < rules.width(); ++k) rules.set_rank(k, static_cast<int>(rank));
  std::vector<Placement> row(rules.width());
  for (std::size_t d = 0; d < rank; ++d) {
    if ((active >> d & 1u) != 0) continue;
    for (auto& p : row) p = ShardingPlaceholder(static_cast<int>(d));
    rules.add(row);
  }
  return rules;
}

/// Which Partial rows an op keeps: `[P(r)] * width` for r in `ops`, in that order.
constexpr void add_partial_rows(RuleSet& rules, std::span<const ReduceOp> ops) {
  std::vector<Placement> row(rules.width());
  for (ReduceOp r : ops) {
    for (auto& p : row) p = Partial(r);
    rules.add(row);
  }
}

/// The linear reductions (sum, avg): what a linear op that is not monotone keeps.
inline constexpr std::array<ReduceOp, 2> linear_reduce_ops{ReduceOp::sum, ReduceOp::avg};

// ---------------------------------------------------------------------------------------------
// constant_pad_nd

/// Which dims of a rank-`rank` tensor `constant_pad_nd(pad)` changes: `pad` lists
/// `[last_left, last_right, second_last_left, ...]`; a dim with a non-zero amount on either side
/// is padded (a negative amount slices). Throws ctshard::error for an odd length or more than
/// 2 · rank amounts.
[[nodiscard]] constexpr DimMask padded_dims(std::size_t rank, std::span<const std::int64_t> pad) {
  if (pad.size() % 2 != 0) throw error("ctshard::constant_pad_nd: pad has an odd number of amounts (" + std::to_string(pad.size()) + ")");
  if (pad.size() > 2 * rank)
    throw error("ctshard::constant_pad_nd: " + std::to_string(pad.size()) + " pad amounts for a tensor of rank " + std::to_string(rank) +
                " (at most " + std::to_string(2 * rank) + ")");
  DimMask mask = 0;
  for (std::size_t i = 0; i < pad.size() / 2; ++i)
    if (pad[2 * i] != 0 || pad[2 * i + 1] != 0) mask |= DimMask{1} << (rank - 1 - i);
  return mask;
}

/// The value `constant_pad_nd` writes at padded positions, as far as its Partial rows care.
enum class PadValue : unsigned char {
  zero,     ///< 0: a sum of zeros is zero, so P(sum) passes too
  nonzero,  ///< anything else
};

/// `constant_pad_nd(input, pad, value)` (DTensor `constant_pad_nd_single_dim_strategy`):
/// `[S?(d), S?(d)]` for every dim the pad leaves alone (a padded or sliced dim needs the global
/// positions); then Partial rows: all four reductions when nothing is padded (the op is the
/// identity) or the value is PadValue::zero, else avg / max / min (every rank writes the same value
/// at padded positions, and those reductions of equal values give the value back).
/// Throws as `padded_dims`.
[[nodiscard]] constexpr RuleSet constant_pad_nd_single_dim_strategy(const TensorShape& input, std::span<const std::int64_t> pad, PadValue value) {
  const DimMask padded = padded_dims(input.rank, pad);
  RuleSet rules = shard_inactive_dims_strategy(input.rank, padded, 1, 1);
  if (padded == 0 || value == PadValue::zero) {
    add_partial_rows(rules, pass_through_reduce_ops);
  } else {
    constexpr std::array<ReduceOp, 3> idempotent{ReduceOp::avg, ReduceOp::max, ReduceOp::min};
    add_partial_rows(rules, idempotent);
  }
  return rules;
}

// ---------------------------------------------------------------------------------------------
// roll

/// `roll(input, shifts, dims)` (DTensor `roll_single_dim_strategy`): `[S?(d), S?(d)]` for every
/// dim not rolled — with `dims` empty the flattened tensor rolls and no dim may stay sharded —
/// then `[P(r), P(r)]` for the four reductions (a roll only moves elements). Throws ctshard::error
/// when `shifts` and `dims` differ in length (or `dims` is empty and there is not exactly one
/// shift), or for a bad dim.
[[nodiscard]] constexpr RuleSet roll_single_dim_strategy(const TensorShape& input, std::span<const std::int64_t> shifts,
                                                         std::span<const std::int64_t> dims) {
  if (dims.empty() ? shifts.size() != 1 : shifts.size() != dims.size())
    throw error("ctshard::roll: " + std::to_string(shifts.size()) + " shifts for " + std::to_string(dims.size()) + " dims" +
                (dims.empty() ? " (without dims, roll takes one shift)" : ""));
  DimMask active = 0;
  if (dims.empty()) active = ~DimMask{0};
  for (auto d : dims) active |= DimMask{1} << normalize_dim(d, input.rank, "ctshard::roll");
  RuleSet rules = shard_inactive_dims_strategy(input.rank, active, 1, 1);
  add_partial_rows(rules, pass_through_reduce_ops);
  return rules;
}

// ---------------------------------------------------------------------------------------------
// flip / prims.rev

/// `flip(input, dims)` and `prims.rev(input, dims)` (DTensor `flip_single_dim_strategy`):
/// `[S?(d), S?(d)]` for every dim not reversed (a reversed dim's shard k would hold the mirror of
/// shard n-1-k), then `[P(r), P(r)]` for the four reductions (a reversal only moves elements).
/// `dims` empty reverses nothing. Throws ctshard::error for a bad or repeated dim.
[[nodiscard]] constexpr RuleSet flip_single_dim_strategy(const TensorShape& input, std::span<const std::int64_t> dims) {
  DimMask active = 0;
  for (auto d : dims) {
    const DimMask bit = DimMask{1} << normalize_dim(d, input.rank, "ctshard::flip");
    if ((active & bit) != 0) throw error("ctshard::flip: dim " + std::to_string(d) + " appears more than once in dims");
    active |= bit;
  }
  RuleSet rules = shard_inactive_dims_strategy(input.rank, active, 1, 1);
  add_partial_rows(rules, pass_through_reduce_ops);
  return rules;
}

// ---------------------------------------------------------------------------------------------
// select_scatter

/// `select_scatter(input, src, dim, index)` → `[out, input, src]` (DTensor
/// `select_scatter_single_dim_strategy`): `[S?(d), S?(d), S?(d')]` for every d != dim (d' = d, or
/// d - 1 past dim: src lacks the selected dim). No Partial row, as DTensor 2.13. Throws
/// ctshard::error for a 0-d input, a bad dim, or a src whose shape is not input's without dim.
[[nodiscard]] constexpr RuleSet select_scatter_single_dim_strategy(const TensorShape& input, const TensorShape& src, std::int64_t dim) {
  if (input.rank == 0) throw error("ctshard::select_scatter: a 0-d tensor has no dim to select from");
  const std::size_t at = normalize_dim(dim, input.rank, "ctshard::select_scatter");
  TensorShape expected;
  for (std::size_t d = 0; d < input.rank; ++d)
    if (d != at) expected.push_back(input[d]);
  if (src != expected)
    throw error("ctshard::select_scatter: src has shape " + to_string(src) + ", expected " + to_string(expected) + " (input " + to_string(input) +
                " without dim " + std::to_string(at) + ")");
  RuleSet rules(1, 2);
  rules.set_rank(0, input.rank);
  rules.set_rank(1, input.rank);
  rules.set_rank(2, src.rank);
  for (std::size_t d = 0; d < input.rank; ++d) {
    if (d == at) continue;
    const Placement p = ShardingPlaceholder(static_cast<int>(d));
    rules.add({p, p, ShardingPlaceholder(static_cast<int>(d < at ? d : d - 1))});
  }
  return rules;
}

// ---------------------------------------------------------------------------------------------
// FFT

/// `_fft_c2c` / `_fft_r2c` / `_fft_c2r(input, dim, ...)` on a rank-`rank` input (DTensor
/// `fft_single_dim_strategy`): `[S?(d), S?(d)]` for every dim not transformed, then
/// `[P(sum), P(sum)]`, `[P(avg), P(avg)]` (the transform is linear). DTensor also passes P(max) /
/// P(min), which is unsound: complex values have no order, and the transform is not monotone (the
/// real parts [1, 0] and [0, 1], maximum [1, 1], transform to [1, 1] and [1, -1], while the
/// transform of [1, 1] is [2, 0]). Throws ctshard::error for a bad dim or no dim.
[[nodiscard]] constexpr RuleSet fft_single_dim_strategy(std::size_t rank, std::span<const std::int64_t> dims) {
  if (dims.empty()) throw error("ctshard::fft: no dim to transform");
  DimMask active = 0;
  for (auto d : dims) active |= DimMask{1} << normalize_dim(d, rank, "ctshard::fft");
  RuleSet rules = shard_inactive_dims_strategy(rank, active, 1, 1);
  add_partial_rows(rules, linear_reduce_ops);
  return rules;
}

// ---------------------------------------------------------------------------------------------
// view_as_real / view_as_complex

/// `view_as_real(input)`: a complex `[..., n]` as a real `[..., n, 2]` (DTensor `dim_view_as_real`
/// through its view propagation): `[S?(d), S?(d)]` for every input dim (each complex element
/// becomes the row of two reals beside it, whatever the shard kind), then `[P(sum), P(sum)]`,
/// `[P(avg), P(avg)]`. DTensor's view propagation would also pass P(max) / P(min), which a
/// complex tensor cannot hold (no order).
[[nodiscard]] constexpr RuleSet view_as_real_single_dim_strategy(const TensorShape& input) {
  RuleSet rules = shard_inactive_dims_strategy(input.rank, 0, 1, 1);
  rules.set_rank(0, static_cast<int>(input.rank + 1));
  add_partial_rows(rules, linear_reduce_ops);
  return rules;
}

/// `view_as_complex(input)`: a real `[..., n, 2]` as a complex `[..., n]` (DTensor
/// `view_as_complex_single_dim_strategy`): `[S?(d), S?(d)]` for every dim but the last (the
/// real / imaginary pair), then `[P(sum), P(sum)]`, `[P(avg), P(avg)]` (no order on complex
/// values). Throws ctshard::error unless the last dim has size 2.
[[nodiscard]] constexpr RuleSet view_as_complex_single_dim_strategy(const TensorShape& input) {
  if (input.rank == 0 || input[input.rank - 1] != 2)
    throw error("ctshard::view_as_complex: the last dim must have size 2, got shape " + to_string(input));
  RuleSet rules = shard_inactive_dims_strategy(input.rank, DimMask{1} << (input.rank - 1), 1, 1);
  rules.set_rank(0, static_cast<int>(input.rank - 1));
  add_partial_rows(rules, linear_reduce_ops);
  return rules;
}

// ---------------------------------------------------------------------------------------------
// as_strided / as_strided_scatter

/// True when `stride` is the row-major (contiguous) stride of `size`, ignoring the strides of
/// size-1 dims (PyTorch `is_contiguous`). False when the lengths differ.
[[nodiscard]] constexpr bool is_contiguous_stride(std::span<const std::int64_t> size, std::span<const std::int64_t> stride) noexcept {
  if (size.size() != stride.size()) return false;
  std::int64_t expected = 1;
  for (std::size_t k = size.size(); k-- > 0;) {
    if (size[k] != 1 && stride[k] != expected) return false;
    expected = saturating_mul(expected, size[k]);
  }
  return true;
}

/// True when `as_strided(t, size, stride, offset)` on a contiguous t of `numel` elements is
/// `view(t, size)`: offset 0, a contiguous stride, and as many elements as t.
[[nodiscard]] constexpr bool as_strided_is_view(std::int64_t numel, std::span<const std::int64_t> size, std::span<const std::int64_t> stride,
                                                std::int64_t offset) noexcept {
  std::int64_t n = 1;
  for (auto s : size) n = saturating_mul(n, s < 0 ? 0 : s);
  return offset == 0 && n == numel && is_contiguous_stride(size, stride);
}

/// `as_strided(input, size, stride, storage_offset)` → `[out, input]`. When the call is a view
/// (`as_strided_is_view`; `view` is the dim map of input → size) it is the view's strategy
/// (`view_single_dim_strategy`: every kept or regrouped shard, every Partial) — exact as long as
/// each rank's local input is contiguous with storage offset 0, as DTensor's local shards are
/// (`_split_tensor(contiguous=True)`), and the rank runs it with its local size and the matching
/// contiguous stride. Otherwise the op reads global storage positions: only `[P(r), P(r)]` for
/// the four reductions (a gather of positions commutes with each). DTensor 2.13 has no rule.
[[nodiscard]] constexpr RuleSet as_strided_single_dim_strategy(const TensorShape& input, const TensorShape& out,
                                                               const std::optional<ViewDimMap>& view) {
  if (view) return view_single_dim_strategy(*view);
  RuleSet rules(1, 1);
  rules.set_rank(0, out.rank);
  rules.set_rank(1, input.rank);
  add_partial_rows(rules, pass_through_reduce_ops);
  return rules;
}

/// `as_strided_scatter(input, src, size, stride, storage_offset)` → `[out, input, src]` (out has
/// input's shape). When the call covers all of input as a view (`as_strided_is_view` with
/// src's shape = size; `view`: the dim map of src → input's shape), out is src viewed as input's
/// shape: every row `[o, i]` of `view_single_dim_strategy(view)` becomes `[o, o, i]` (input is
/// overwritten entirely, so it only has to take out's layout), regrouped rows keep their regroup
/// with src as the source. Otherwise only `[P(r), P(r), P(r)]` for the four reductions (the
/// scatter is positional). DTensor 2.13 has no rule.
[[nodiscard]] constexpr RuleSet as_strided_scatter_single_dim_strategy(const TensorShape& input, const TensorShape& src,
                                                                       const std::optional<ViewDimMap>& view) {
  RuleSet rules(1, 2);
  rules.set_rank(0, input.rank);
  rules.set_rank(1, input.rank);
  rules.set_rank(2, src.rank);
  if (!view) {
    add_partial_rows(rules, pass_through_reduce_ops);
    return rules;
  }
  const RuleSet as_view = view_single_dim_strategy(*view);
  for (std::size_t r = 0; r < as_view.size(); ++r) {
    const Placement o = as_view.cell(r, 0), i = as_view.cell(r, 1);
    const std::array<Placement, 3> row{o, o, i};
    if (const ShardRegroup* g = as_view.regroup(r)) {
      ShardRegroup from_src = *g;
      from_src.source = 2;
      rules.add(row, from_src);
    } else {
      rules.add(row);
    }
  }
  return rules;
}

}  // namespace ctshard
