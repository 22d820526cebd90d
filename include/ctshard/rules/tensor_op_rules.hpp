#pragma once
/// \file rules/tensor_op_rules.hpp
/// Single-dim strategies of the indexing / joining tensor ops: split, unbind, select, slice,
/// slice_scatter, cat, stack and copy (DTensor `_tensor_ops.py`).

#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "ctshard/core/checked.hpp"
#include "ctshard/core/tensor_shape.hpp"
#include "ctshard/rules/pointwise_rules.hpp"
#include "ctshard/rules/rule_set.hpp"
#include "ctshard/rules/tensor_dims.hpp"

namespace ctshard {

/// The four reductions a position-preserving op passes through (DTensor
/// `_PARTIAL_PASS_THROUGH_REDUCE_OPS`: sum, avg, min, max).
inline constexpr std::array<ReduceOp, 4> pass_through_reduce_ops{ReduceOp::sum, ReduceOp::avg, ReduceOp::max, ReduceOp::min};

namespace detail {
/// Adds `[P(r)] * width` for every pass-through reduce op.
constexpr void add_partial_pass_through(RuleSet& rules) {
  std::vector<Placement> row(rules.width());
  for (ReduceOp r : pass_through_reduce_ops) {
    for (auto& p : row) p = Partial(r);
    rules.add(row);
  }
}
/// A row of `n_out` copies of `out` followed by `n_in` copies of `in`.
constexpr void add_repeated(RuleSet& rules, Placement out, Placement in) {
  std::vector<Placement> row(rules.width(), in);
  for (std::size_t k = 0; k < rules.num_outputs(); ++k) row[k] = out;
  rules.add(row);
}
}  // namespace detail

/// Piece sizes of `split(input, split_size, dim)` along a dim of `dim_size` elements: full pieces
/// of `split_size` and a smaller last one (PyTorch: one empty piece when dim_size is 0).
/// Throws ctshard::error for split_size < 1, or more pieces than max_rule_operands allows.
[[nodiscard]] constexpr std::vector<std::int64_t> split_piece_sizes(std::int64_t dim_size, std::int64_t split_size) {
  if (split_size < 1) throw error("ctshard::split: split_size must be >= 1, got " + std::to_string(split_size));
  if (dim_size < 0 || dim_size / split_size >= static_cast<std::int64_t>(max_rule_operands))
    throw error("ctshard::split: " + std::to_string(dim_size) + " elements in pieces of " + std::to_string(split_size) +
                " make more outputs than max_rule_operands (" + std::to_string(max_rule_operands) + ")");
  std::vector<std::int64_t> pieces(static_cast<std::size_t>(dim_size / split_size), split_size);
  if (dim_size % split_size != 0 || dim_size == 0) pieces.push_back(dim_size % split_size);
  return pieces;
}

/// `split` / `split_with_sizes` of `input` along `dim` into `pieces.size()` outputs (DTensor
/// `split_single_dim_strategy`): `[S?(d)] * (outputs + 1)` for every dim d != dim, then
/// `[P(r)] * (outputs + 1)` for the four pass-through ops. Throws ctshard::error for a bad dim or
/// piece sizes that do not add up to `input[dim]`.
[[nodiscard]] constexpr RuleSet split_single_dim_strategy(const TensorShape& input, std::span<const std::int64_t> pieces, std::int64_t dim) {
  const std::size_t split_dim = normalize_dim(dim, input.rank, "ctshard::split");
  std::int64_t total = 0;
  for (auto s : pieces) total = checked_add(total, s, "split: sum of the piece sizes");
  if (input.rank > 0 && total != input[split_dim])
    throw error("ctshard::split: piece sizes add up to " + std::to_string(total) + ", dim " + std::to_string(split_dim) + " has size " +
                std::to_string(input[split_dim]));
  RuleSet rules(pieces.size(), 1);
  for (std::size_t k = 0; k < rules.width(); ++k) rules.set_rank(k, input.rank);
  for (std::size_t d = 0; d < input.rank; ++d)
    if (d != split_dim) detail::add_repeated(rules, ShardingPlaceholder(static_cast<int>(d)), ShardingPlaceholder(static_cast<int>(d)));
  detail::add_partial_pass_through(rules);
  return rules;
}

/// `unbind(input, dim)`: `input[dim]` outputs of rank - 1 (DTensor `gen_unbind_strategy`, as one
/// mesh dim): `[S?(d')] * outputs + [S?(d)]` for every d != dim (d' = d, or d - 1 after dim), then
/// the four Partial pass-through rows. Throws ctshard::error for a bad dim or a 0-d input.
[[nodiscard]] constexpr RuleSet unbind_single_dim_strategy(const TensorShape& input, std::int64_t dim) {
  if (input.rank == 0) throw error("ctshard::unbind: a 0-d tensor cannot be unbound");
  const std::size_t at = normalize_dim(dim, input.rank, "ctshard::unbind");
  RuleSet rules(static_cast<std::size_t>(input[at]), 1);
  for (std::size_t k = 0; k < rules.num_outputs(); ++k) rules.set_rank(k, input.rank - 1);
  rules.set_rank(rules.num_outputs(), input.rank);
  for (std::size_t d = 0; d < input.rank; ++d)
    if (d != at) detail::add_repeated(rules, ShardingPlaceholder(static_cast<int>(d < at ? d : d - 1)), ShardingPlaceholder(static_cast<int>(d)));
  detail::add_partial_pass_through(rules);
  return rules;
}

/// `select(input, dim, index)` (DTensor `select_int_single_dim_strategy`): `[S?(d'), S?(d)]` for
/// every d != dim (d' shifted down past dim), then the four Partial pass-through rows.
/// Throws ctshard::error for a bad dim or a 0-d input.
[[nodiscard]] constexpr RuleSet select_single_dim_strategy(const TensorShape& input, std::int64_t dim) {
  if (input.rank == 0) throw error("ctshard::select: a 0-d tensor has no dim to select from");
  const std::size_t at = normalize_dim(dim, input.rank, "ctshard::select");
  RuleSet rules(1, 1);
  rules.set_rank(0, input.rank - 1);
  rules.set_rank(1, input.rank);
  for (std::size_t d = 0; d < input.rank; ++d)
    if (d != at) rules.add({ShardingPlaceholder(static_cast<int>(d < at ? d : d - 1)), ShardingPlaceholder(static_cast<int>(d))});
  detail::add_partial_pass_through(rules);
  return rules;
}

/// True when `slice(dim, start, end, step)` over a dim of `size` keeps every element (start 0 or
/// None, end None or >= size, step 1), after PyTorch's wrapping of negative bounds.
[[nodiscard]] constexpr bool is_full_slice(std::int64_t size, std::optional<std::int64_t> start, std::optional<std::int64_t> end,
                                           std::int64_t step) noexcept {
  std::int64_t s = start.value_or(0), e = end.value_or(std::numeric_limits<std::int64_t>::max());
  if (s < 0) s += size;
  if (e < 0) e += size;
  return step == 1 && s <= 0 && e >= size;
}

/// `slice(input, dim, start, end, step)` (DTensor `slice_single_dim_strategy`): `[S?(d), S?(d)]`
/// for every d != dim, and for dim too when the slice keeps every element; then the four Partial
/// pass-through rows. Throws ctshard::error for a bad dim or step < 1.
[[nodiscard]] constexpr RuleSet slice_single_dim_strategy(const TensorShape& input, std::int64_t dim, std::optional<std::int64_t> start,
                                                          std::optional<std::int64_t> end, std::int64_t step) {
  const std::size_t at = normalize_dim(dim, input.rank, "ctshard::slice");
  if (step < 1) throw error("ctshard::slice: step must be >= 1, got " + std::to_string(step));
  const bool full = input.rank > 0 && is_full_slice(input[at], start, end, step);
  RuleSet rules(1, 1);
  rules.set_rank(0, input.rank);
  rules.set_rank(1, input.rank);
  for (std::size_t d = 0; d < input.rank; ++d)
    if (d != at || full) rules.add({ShardingPlaceholder(static_cast<int>(d)), ShardingPlaceholder(static_cast<int>(d))});
  detail::add_partial_pass_through(rules);
  return rules;
}

/// `slice_scatter(input, src, dim, start, end, step)` → `[out, input, src]` (DTensor
/// `slice_scatter_single_dim_strategy`): `[S?(d)] * 3` for every d != dim, then `[P(r)] * 3` for
/// the four pass-through ops (replacement is positional, so matching Partials pass). Beyond
/// DTensor: when the slice covers all of dim (the output is src), dim may stay sharded too.
/// Throws ctshard::error for a bad dim, step < 1, or src of another rank / other sizes off dim.
[[nodiscard]] constexpr RuleSet slice_scatter_single_dim_strategy(const TensorShape& input, const TensorShape& src, std::int64_t dim,
                                                                  std::optional<std::int64_t> start, std::optional<std::int64_t> end,
                                                                  std::int64_t step) {
  const std::size_t at = normalize_dim(dim, input.rank, "ctshard::slice_scatter");
  if (step < 1) throw error("ctshard::slice_scatter: step must be >= 1, got " + std::to_string(step));
  if (src.rank != input.rank)
    throw error("ctshard::slice_scatter: src has rank " + std::to_string(src.rank) + ", input " + std::to_string(input.rank));
  for (std::size_t d = 0; d < input.rank; ++d)
    if (d != at && src[d] != input[d])
      throw error("ctshard::slice_scatter: src size " + std::to_string(src[d]) + " differs from input size " + std::to_string(input[d]) + " on dim " +
                  std::to_string(d));
  const bool full = input.rank > 0 && is_full_slice(input[at], start, end, step) && src[at] == input[at];
  RuleSet rules(1, 2);
  for (std::size_t k = 0; k < 3; ++k) rules.set_rank(k, input.rank);
  for (std::size_t d = 0; d < input.rank; ++d)
    if (d != at || full) detail::add_repeated(rules, ShardingPlaceholder(static_cast<int>(d)), ShardingPlaceholder(static_cast<int>(d)));
  detail::add_partial_pass_through(rules);
  return rules;
}

/// Rows of `cat` for pieces of one size along the cat dim (cat_single_dim_strategy).
enum class CatPieces : std::uint8_t {
  dtensor,        ///< DTensor 2.13's rows only
  strided_shard,  ///< also `[_S(dim, n), S(dim) * n]` when the n >= 2 pieces have one size along `dim`
};

/// `cat(tensors, dim)` (DTensor `cat_single_dim_strategy`): `[S?(i)] * (1 + n)` for every dim i
/// != dim of the common rank, then `[P(r)] * (1 + n)` for the four pass-through ops; a legacy
/// empty 1-D input (shape [0]) is Replicate in every row. With `CatPieces::strided_shard` (the
/// registry's rule), when the n >= 2 inputs have the same size N along `dim`, also
/// `[_S(dim, n), S(dim) * n]`: every device holds chunk r of each input and concatenates them,
/// which is chunk r of each of the n blocks of the output's dim read as [n, N] — the StridedShard,
/// with no data moved, where DTensor moves the inputs off `dim` first (a batch-sharded backward
/// paid it at every q/k/v gradient cat: R17, docs/rules.md). Throws ctshard::error for no inputs,
/// inputs of different ranks (legacy empties aside) or a bad dim.
[[nodiscard]] constexpr RuleSet cat_single_dim_strategy(std::span<const TensorShape> inputs, std::int64_t dim,
                                                        CatPieces pieces = CatPieces::dtensor) {
  if (inputs.empty()) throw error("ctshard::cat: needs at least one tensor");
  auto legacy_empty = [](const TensorShape& s) { return s.rank == 1 && s[0] == 0; };
  int ndim = -1;
  for (const auto& s : inputs) {
    if (legacy_empty(s)) continue;
    if (ndim >= 0 && ndim != s.rank) throw error("ctshard::cat: inputs have ranks " + std::to_string(ndim) + " and " + std::to_string(s.rank));
    ndim = s.rank;
  }
  const std::size_t rank = ndim < 0 ? 1u : static_cast<std::size_t>(ndim);
  const std::size_t at = normalize_dim(dim, rank, "ctshard::cat");
  RuleSet rules(1, inputs.size());
  rules.set_rank(0, static_cast<int>(rank));
  for (std::size_t k = 0; k < inputs.size(); ++k) rules.set_rank(k + 1, inputs[k].rank);
  std::vector<Placement> row(rules.width());
  auto emit = [&](Placement p) {
    row[0] = p;
    for (std::size_t k = 0; k < inputs.size(); ++k) row[k + 1] = legacy_empty(inputs[k]) ? Replicate() : p;
    rules.add(row);
  };
  for (std::size_t i = 0; i < rank; ++i)
    if (i != at) emit(ShardingPlaceholder(static_cast<int>(i)));
  for (ReduceOp r : pass_through_reduce_ops) emit(Partial(r));
  bool equal_pieces = pieces == CatPieces::strided_shard && inputs.size() >= 2 && inputs.size() <= 65535;  // the largest split factor
  for (const auto& s : inputs) equal_pieces = equal_pieces && !legacy_empty(s) && s[at] == inputs[0][at];
  if (equal_pieces) {  // each device's pieces, concatenated, are the output's StridedShard (see above)
    row[0] = StridedShard(static_cast<int>(at), static_cast<int>(inputs.size()));
    for (std::size_t k = 0; k < inputs.size(); ++k) row[k + 1] = Shard(static_cast<int>(at));
    rules.add(row);
  }
  return rules;
}

/// `stack(tensors, dim)` → output of rank + 1 with a new dim at `dim` (DTensor `stack_strategy`
/// as one mesh dim): `[S?(i'), S?(i) * n]` for every input dim i (i' = i, or i + 1 from dim on),
/// then `[P(r)] * (1 + n)` for the four pass-through ops. Throws ctshard::error for no inputs,
/// inputs of different shapes or a bad dim (in [-rank-1, rank]).
[[nodiscard]] constexpr RuleSet stack_single_dim_strategy(std::span<const TensorShape> inputs, std::int64_t dim) {
  if (inputs.empty()) throw error("ctshard::stack: needs at least one tensor");
  for (const auto& s : inputs)
    if (s != inputs[0]) throw error("ctshard::stack: inputs have shapes " + to_string(inputs[0]) + " and " + to_string(s));
  const std::size_t rank = inputs[0].rank;
  const std::size_t at = normalize_dim(dim, rank + 1, "ctshard::stack");
  RuleSet rules(1, inputs.size());
  rules.set_rank(0, static_cast<int>(rank + 1));
  for (std::size_t k = 0; k < inputs.size(); ++k) rules.set_rank(k + 1, static_cast<int>(rank));
  for (std::size_t i = 0; i < rank; ++i)
    detail::add_repeated(rules, ShardingPlaceholder(static_cast<int>(i < at ? i : i + 1)), ShardingPlaceholder(static_cast<int>(i)));
  detail::add_partial_pass_through(rules);
  return rules;
}

/// `copy(dst, src)` → `[out, dst, src]`: the output is src broadcast to dst's shape. Pointwise rows
/// over (dst, src) — `[S?(i), S?(i), S?(src dim) or R where src broadcasts]` — then `[P(r)] * 3`
/// for the four ops (DTensor registers `copy_` as a pointwise op with these Partial rows).
/// Throws ctshard::error when src does not broadcast to dst.
[[nodiscard]] constexpr RuleSet copy_single_dim_strategy(const TensorShape& dst, const TensorShape& src) {
  const std::array<TensorShape, 2> shapes{dst, src};
  if (broadcast_shapes(shapes) != dst) throw error("ctshard::copy: src " + to_string(src) + " does not broadcast to dst " + to_string(dst));
  constexpr auto all3 = [](ReduceOp r) { return PartialRow{{Partial(r), Partial(r), Partial(r), Replicate()}, 3}; };
  constexpr std::array<PartialRow, 4> partial_rows{all3(ReduceOp::sum), all3(ReduceOp::avg), all3(ReduceOp::max), all3(ReduceOp::min)};
  return pointwise_single_dim_strategy(shapes, partial_rows);
}

}  // namespace ctshard
