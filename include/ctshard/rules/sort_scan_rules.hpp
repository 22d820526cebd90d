#pragma once
/// \file rules/sort_scan_rules.hpp
/// Single-dim strategies of ops that work along one dim and independently along the others —
/// scans (`cumsum`), `sort`, `topk` — and of `histc` (DTensor `_math_ops.py`: `scan_strategy`,
/// `sort_strategy`, `topk_strategy`, `histc_strategy`).

#include <cstddef>

#include "ctshard/rules/reduction_rules.hpp"
#include "ctshard/rules/rule_set.hpp"

namespace ctshard {

/// Whether a scan's output is linear in its input: false when a `dtype` argument converts a
/// floating input to integers before summing (truncating each rank's part is not truncating the
/// sum), true otherwise.
enum class ScanLinearity : unsigned char { linear, not_linear };

/// `cumsum(self, dim, dtype?) -> out` (self's shape) on a rank-`rank` self. Operands `[out,
/// self]`; rows `[S?(d), S?(d)]` for every d != dim (DTensor: the scanned dim is replicated, the
/// others follow the input), then, when `linearity` is linear, `[P(r), P(r)]` for r in sum, avg (a
/// prefix sum is linear; ctshard's, DTensor replicates Partial inputs).
[[nodiscard]] constexpr RuleSet cumsum_single_dim_strategy(std::size_t rank, std::size_t dim, ScanLinearity linearity) {
  RuleSet rules = shard_except_dim_strategy(rank, dim, 1, 1);
  if (linearity == ScanLinearity::linear)
    for (ReduceOp r : {ReduceOp::sum, ReduceOp::avg}) rules.add({Partial(r), Partial(r)});
  return rules;
}

/// `sort(self, dim, descending) -> (values, indices)` and `topk(self, k, dim, largest, sorted) ->
/// (values, indices)` on a rank-`rank` self, sorting along `dim`. Operands `[values, indices,
/// self]`; rows `[S?(d), S?(d), S?(d)]` for every d != dim (indices are positions along the sorted
/// dim, which stays whole). No Partial row. DTensor `sort_strategy`.
[[nodiscard]] constexpr RuleSet sort_single_dim_strategy(std::size_t rank, std::size_t dim) { return shard_except_dim_strategy(rank, dim, 2, 1); }

/// Whether `histc`'s bin range is fixed by its arguments (`min < max`) or taken from the data
/// (`min == max`, any value: ATen's `histc_select_outer_bin_edges` then bins over the tensor's own
/// minimum and maximum, so each rank would use its own shard's).
enum class HistogramRange : unsigned char { given, from_data };

/// `histc(self, bins, min, max) -> counts [bins]` on a rank-`rank` self. Operands `[counts,
/// self]`; with a given range, `[P(sum), S?(d)]` for every dim d: any split of the elements splits
/// the counts into partial sums. With the range from the data, no row (and no Partial input row in
/// either case: counting is not linear). DTensor `histc_strategy` keys the rows on min and max being
/// passed at all, so `histc(x, 4, 3, 3)` (the data range) gets them there too: unsound (x = [0, 1,
/// 2, 3, 10, 11, 12, 13] on 2 ranks: the histogram is [4, 0, 0, 4], the ranks bin over [0, 3] and
/// [10, 13] and their counts sum to [2, 2, 2, 2]).
[[nodiscard]] constexpr RuleSet histc_single_dim_strategy(std::size_t rank, HistogramRange range) {
  RuleSet rules(1, 1);
  rules.set_rank(0, 1);
  rules.set_rank(1, static_cast<int>(rank));
  if (range == HistogramRange::from_data) return rules;
  for (std::size_t d = 0; d < rank; ++d) rules.add({Partial(ReduceOp::sum), ShardingPlaceholder(static_cast<int>(d))});
  return rules;
}

}  // namespace ctshard
