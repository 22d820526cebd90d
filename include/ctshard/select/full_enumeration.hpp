#pragma once
/// \file select/full_enumeration.hpp
/// The full-enumeration baseline (DTensor 2.13 `expand_to_full_mesh_op_strategy` +
/// `_select_min_cost_strategy`): every one of the S^N rows in enumeration order, filtered and
/// priced, and DTensor's choice among them.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "ctshard/error.hpp"
#include "ctshard/select/cost_memo.hpp"
#include "ctshard/select/filled_table.hpp"
#include "ctshard/select/row_cursor.hpp"
#include "ctshard/select/search_query.hpp"
#include "ctshard/select/selection.hpp"

namespace ctshard {

/// How many candidate rows each filter removed.
struct FilterCounts {
  std::size_t mixed_partial = 0;  ///< a spec mixing Partial kinds other than sum+avg
  std::size_t unshardable = 0;    ///< an input spec `is_tensor_shardable` rejects
  std::size_t op_filter = 0;      ///< rejected by the op's full-mesh filter
};

/// One surviving candidate: `digits[d]` is the filled-rule index used on mesh dim d.
struct CandidateView {
  std::size_t index = 0;  ///< position among surviving rows (enumeration order)
  std::span<const std::uint8_t> digits;
  std::span<const double> costs;  ///< per input, µs
  double total_us = 0;
  bool inputs_match = false;  ///< input specs equal the runtime input specs
};

/// Largest table (rows) full enumeration walks; the searches have no such limit.
inline constexpr std::uint64_t max_enumerated_rows = std::uint64_t{1} << 20;

/// Visits every surviving row of `table` in enumeration order (mesh dim 0 slowest) with its
/// per-input costs; returns the filter counts. Throws ctshard::error above max_enumerated_rows.
template <class Visitor>
FilterCounts for_each_row(const FilledTable& table, CostMemo& memo, const SearchQuery& query, Visitor&& visit) {
  const std::size_t n = table.mesh_ndim(), nin = table.num_inputs();
  if (table.num_rows() > max_enumerated_rows)
    throw error("ctshard::StrategyEnumerator: " + std::to_string(table.num_rules()) + " rules on a " + std::to_string(n) + "-dim mesh make " +
                std::to_string(table.num_rules()) + "^" + std::to_string(n) + " candidate rows, above the enumeration limit of " +
                std::to_string(max_enumerated_rows) + "; use the search (choose, --algo search) or a mesh with fewer dims");
  memo.begin(query);
  RowCursor& cursor = memo.cursor();
  std::vector<double>& costs = memo.scratch(table).costs;
  cursor.begin(table, query);
  const std::array<std::uint8_t, max_mesh_dims> first{};
  cursor.seek(first.data());
  FilterCounts counts;
  std::size_t index = 0;
  do {
    if (cursor.mixed(n)) {
      ++counts.mixed_partial;
    } else if (!cursor.alive(n)) {
      ++counts.unshardable;
    } else if (!cursor.passes_filter()) {
      ++counts.op_filter;
    } else {
      double total = 0;
      for (std::size_t i = 0; i < nin; ++i) total += costs[i] = memo.cost(table, query, cursor, i);
      visit(CandidateView{index++, cursor.row(), std::span<const double>(costs.data(), nin), total, cursor.inputs_match()});
    }
  } while (cursor.advance());
  return counts;
}

/// DTensor's choice by full enumeration (ChoiceAccumulator over for_each_row), with its index.
/// Throws like for_each_row.
[[nodiscard]] inline Choice enumeration_choice(const FilledTable& table, CostMemo& memo, const SearchQuery& query) {
  ChoiceAccumulator acc;
  (void)for_each_row(table, memo, query, [&](const CandidateView& c) { acc.offer(c.index, c.total_us, c.inputs_match, c.digits); });
  return acc.choice();
}

}  // namespace ctshard
