#pragma once
/// \file rules/gather_scatter_rules.hpp
/// Single-dim strategies of the index-along-one-dim ops: `gather`, `scatter` (`.value`, `.src`)
/// and `scatter_add` (DTensor `_tensor_ops.py`: `gather_strategy`, `scatter_strategy`,
/// `scatter_add_strategy`).
///
/// All three address one tensor dim `dim` with an integer `index` of the same rank; along every
/// other dim d they are independent per position, but only over the first `index.size(d)`
/// positions. So a dim d != dim can be split only where every operand has the same size on it
/// (equal blocks line up); DTensor's gather rule omits that size check (see
/// `gather_single_dim_strategy`).

#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "ctshard/core/tensor_shape.hpp"
#include "ctshard/rules/rule_set.hpp"

namespace ctshard {

namespace detail {
[[noreturn]] inline void index_rank_mismatch(const char* api, std::size_t self_rank, std::size_t index_rank) {
  throw error(std::string(api) + ": index has rank " + std::to_string(index_rank) + ", self has rank " + std::to_string(self_rank) +
              " (they must be equal)");
}
[[noreturn]] inline void index_dim_out_of_range(const char* api, std::size_t dim, std::size_t rank) {
  throw error(std::string(api) + ": dim " + std::to_string(dim) + " is not below the rank " + std::to_string(rank));
}
}  // namespace detail

/// The four Partial kinds, in DTensor's order (sum, avg, max, min).
inline constexpr std::array<ReduceOp, 4> all_reduce_ops{ReduceOp::sum, ReduceOp::avg, ReduceOp::max, ReduceOp::min};

/// `gather(self [*S], dim, index [*I], sparse_grad) -> out [*I]` (ranks equal; a 0-d self takes a
/// 0-d index). Operands `[out, self, index]`; rows in DTensor's order:
/// - `[P(sum), S?(dim), R]` when `index.size(dim) == 1`: the row-wise gather of DTensor's
///   `_MaskPartial` — each rank gathers only the indices that fall in its block of `self` and
///   yields zeros for the others (the executor masks, as for embedding);
/// - `[S?(dim), R, S?(dim)]`: index split along `dim`, self whole;
/// - `[S?(d), S?(d), S?(d)]` for every d != dim with `self.size(d) == index.size(d)` (DTensor lists
///   every d; with `index.size(d) < self.size(d)` the blocks do not line up: self [4, 1], index
///   [2, 1], dim 1 on 2 ranks: rank 1 holds self rows 2..3 and gathers from row 2 for index row 1);
/// - `[P(r), P(r), R]` for r in sum, avg, max, min: a gather selects elements, which commutes with
///   every reduction over ranks (ctshard's; DTensor lists none).
/// Throws ctshard::error when the ranks differ or dim >= rank (0-d: dim 0).
[[nodiscard]] constexpr RuleSet gather_single_dim_strategy(const TensorShape& self, std::size_t dim, const TensorShape& index) {
  if (self.rank != index.rank) detail::index_rank_mismatch("ctshard::gather_single_dim_strategy", self.rank, index.rank);
  if (dim >= (self.rank == 0 ? 1u : self.rank)) detail::index_dim_out_of_range("ctshard::gather_single_dim_strategy", dim, self.rank);
  RuleSet rules(1, 2);
  rules.set_rank(0, index.rank);
  rules.set_rank(1, self.rank);
  rules.set_rank(2, index.rank);
  if (self.rank > 0) {
    const Placement along = ShardingPlaceholder(static_cast<int>(dim));
    if (index[dim] == 1) rules.add({Partial(ReduceOp::sum), along, Replicate()});
    rules.add({along, Replicate(), along});
    for (std::size_t d = 0; d < self.rank; ++d) {
      if (d == dim || self[d] != index[d]) continue;
      const Placement s = ShardingPlaceholder(static_cast<int>(d));
      rules.add({s, s, s});
    }
  }
  for (ReduceOp r : all_reduce_ops) rules.add({Partial(r), Partial(r), Replicate()});
  return rules;
}

/// Which scatter: `value` (a Python scalar written at the indexed positions; `zero_value` when it
/// is 0), `src` (a tensor's elements written there), `add` (`scatter_add`: a tensor's elements
/// added there).
enum class ScatterKind : unsigned char { value, zero_value, src, add };

/// `scatter.value(self, dim, index, value)`, `scatter.src(self, dim, index, src)`,
/// `scatter_add(self, dim, index, src) -> out` (self's shape). Operands `[out, self, index, src?]`
/// (`src` for src / add). Rows:
/// - `[S?(d)] * width` for every d != dim where index, self and src have one size (DTensor);
/// - `add` only: `[P(sum), P(sum), S?(dim), S?(dim)]` when `src.size(dim) == index.size(dim)`:
///   each rank adds its slice of the contributions into its part of self; the sum over ranks adds
///   every contribution once (a replicated self becomes P(sum) for free);
/// - Partial rows (ctshard's; DTensor lists none). `src`: `[P(r), P(r), R, P(r)]` for r in sum,
///   avg, max, min (out selects elementwise between self and src by a fixed mask, which commutes
///   with every reduction), then `[P(r), P(r), R, R]` and `[P(r), R, R, P(r)]` for r in avg, max,
///   min (a replicated value is its own avg / max / min); `value`: `[P(r), P(r), R]` for r in avg,
///   max, min (not sum: n ranks writing v sum to n v), and sum too for `zero_value`; `add`:
///   `[P(r), P(r), R, P(r)]` for r in sum, avg (linear in self and src together), then, as for
///   `add.Tensor`, `[P(avg), P(avg), R, R]`, `[P(avg), R, R, P(avg)]`, `[P(max), P(max), R, R]`,
///   `[P(min), P(min), R, R]` (adding replicated contributions commutes with avg / max / min).
/// Throws ctshard::error when ranks differ, dim >= rank, or `src` is missing / given wrongly.
[[nodiscard]] constexpr RuleSet scatter_single_dim_strategy(const TensorShape& self, std::size_t dim, const TensorShape& index,
                                                            const std::optional<TensorShape>& src, ScatterKind kind) {
  constexpr const char* api = "ctshard::scatter_single_dim_strategy";
  if (self.rank != index.rank) detail::index_rank_mismatch(api, self.rank, index.rank);
  if (dim >= (self.rank == 0 ? 1u : self.rank)) detail::index_dim_out_of_range(api, dim, self.rank);
  const bool scalar = kind == ScatterKind::value || kind == ScatterKind::zero_value;
  if (src.has_value() == scalar) throw error(std::string(api) + ": src is given exactly for scatter.src and scatter_add");
  if (src && src->rank != index.rank) detail::index_rank_mismatch(api, src->rank, index.rank);
  RuleSet rules(1, src ? 3 : 2);
  rules.set_rank(0, self.rank);
  rules.set_rank(1, self.rank);
  rules.set_rank(2, index.rank);
  if (src) rules.set_rank(3, src->rank);
  std::vector<Placement> row(rules.width(), Replicate());
  for (std::size_t d = 0; d < self.rank; ++d) {
    if (d == dim || self[d] != index[d] || (src && (*src)[d] != index[d])) continue;
    for (auto& p : row) p = ShardingPlaceholder(static_cast<int>(d));
    rules.add(row);
  }
  if (kind == ScatterKind::add && self.rank > 0 && (*src)[dim] == index[dim]) {
    const Placement along = ShardingPlaceholder(static_cast<int>(dim));
    rules.add({Partial(ReduceOp::sum), Partial(ReduceOp::sum), along, along});
  }
  enum class PartialOperands : unsigned char { self_and_src, self_only, src_only };
  auto partial_row = [&](ReduceOp r, PartialOperands which) {
    row[0] = Partial(r);
    row[1] = which != PartialOperands::src_only ? Partial(r) : Replicate();
    row[2] = Replicate();
    if (src) row[3] = which != PartialOperands::self_only ? Partial(r) : Replicate();
    rules.add(row);
  };
  constexpr std::array<ReduceOp, 3> idempotent{ReduceOp::avg, ReduceOp::max, ReduceOp::min};  // op(v, ..., v) = v
  switch (kind) {
    case ScatterKind::zero_value: partial_row(ReduceOp::sum, PartialOperands::self_only); [[fallthrough]];
    case ScatterKind::value:
      for (ReduceOp r : idempotent) partial_row(r, PartialOperands::self_only);
      break;
    case ScatterKind::src:
      for (ReduceOp r : all_reduce_ops) partial_row(r, PartialOperands::self_and_src);
      for (ReduceOp r : idempotent) partial_row(r, PartialOperands::self_only);
      for (ReduceOp r : idempotent) partial_row(r, PartialOperands::src_only);
      break;
    case ScatterKind::add:
      for (ReduceOp r : {ReduceOp::sum, ReduceOp::avg}) partial_row(r, PartialOperands::self_and_src);
      partial_row(ReduceOp::avg, PartialOperands::self_only);
      partial_row(ReduceOp::avg, PartialOperands::src_only);
      partial_row(ReduceOp::max, PartialOperands::self_only);
      partial_row(ReduceOp::min, PartialOperands::self_only);
      break;
  }
  return rules;
}

}  // namespace ctshard
