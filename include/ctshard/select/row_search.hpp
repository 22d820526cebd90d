#pragma once
/// \file select/row_search.hpp
/// Feasibility searches: the first (or last) surviving row, in enumeration order, among the rows
/// whose rule on each mesh dim comes from a per-dim set. DTensor's no-redistribute row is the
/// last surviving row whose input placements equal the current ones on every mesh dim (its
/// `try_propagate` / "no redistribute" tie rule); the first zero-cost row is the first surviving
/// row in the product of the per-dim free rule sets (CostBounds::free_rule).

#include <array>
#include <cstddef>
#include <cstdint>

#include "ctshard/config.hpp"
#include "ctshard/select/cost_memo.hpp"
#include "ctshard/select/filled_table.hpp"
#include "ctshard/select/row_cursor.hpp"
#include "ctshard/select/search_query.hpp"

namespace ctshard {

/// A compact row: the filled rule on each mesh dim (mesh dim 0 first).
using CompactRow = std::array<std::uint8_t, max_mesh_dims>;

/// Per mesh dim, the allowed rules in ascending order (only the first count[d] are set).
struct RuleSets {
  std::array<std::array<std::uint8_t, FilledTable::max_rules>, max_mesh_dims> rules;  // left uninitialised: 2 KiB
  std::array<std::size_t, max_mesh_dims> count{};
};

/// The first surviving row (or the last, with `last`) among the rows drawn from `sets`, found by
/// depth-first search with prefix pruning (RowCursor::alive). False when there is none.
/// `skip` (optional): a row that does not count.
inline bool find_row_in(const FilledTable& table, CostMemo& memo, const SearchQuery& query, const RuleSets& sets, bool last, CompactRow& out,
                        const CompactRow* skip = nullptr) {
  const std::size_t n = table.mesh_ndim();
  for (std::size_t d = 0; d < n; ++d)
    if (sets.count[d] == 0) return false;
  RowCursor& cursor = memo.cursor();
  cursor.begin(table, query);
  const auto dfs = [&](const auto& self, std::size_t d) -> bool {
    for (std::size_t j = 0; j < sets.count[d]; ++j) {
      cursor.extend(d, sets.rules[d][last ? sets.count[d] - 1 - j : j]);
      if (!cursor.alive(d + 1)) continue;
      if (d + 1 < n) {
        if (self(self, d + 1)) return true;
      } else if ((skip == nullptr || !std::equal(skip->begin(), skip->begin() + n, cursor.digits().begin())) && cursor.passes_filter()) {
        return true;
      }
    }
    return false;
  };
  if (!dfs(dfs, 0)) return false;
  out = cursor.digits();
  return true;
}

/// DTensor's no-redistribute row: the last surviving row whose input targets all equal the
/// current specs (its total is 0). False when no row matches.
inline bool find_no_redistribute_row(const FilledTable& table, CostMemo& memo, const SearchQuery& query, CompactRow& out) {
  RuleSets sets;
  for (std::size_t d = 0; d < table.mesh_ndim(); ++d) {
    for (std::size_t r = 0; r < table.num_rules(); ++r) {
      bool all = true;
      for (std::size_t i = 0; i < table.num_inputs() && all; ++i) all = table.input_cell(r, i) == query.spec(i)[d];
      if (all) sets.rules[d][sets.count[d]++] = static_cast<std::uint8_t>(r);
    }
    if (sets.count[d] == 0) return false;
  }
  return find_row_in(table, memo, query, sets, true, out);
}

/// The first surviving row of total 0. Requires `memo.begin_costs(table, query)` and
/// `memo.dim_costs().zero_cost_is_per_dim()` (otherwise zero-cost rows are not a product of
/// per-dim sets; the min-cost search finds them).
inline bool find_zero_cost_row(const FilledTable& table, CostMemo& memo, const SearchQuery& query, CompactRow& out) {
  RuleSets sets;
  const DimCosts& costs = memo.dim_costs();
  for (std::size_t d = 0; d < table.mesh_ndim(); ++d) {
    for (std::size_t r = 0; r < table.num_rules(); ++r)
      if (costs.free_rule(d, r)) sets.rules[d][sets.count[d]++] = static_cast<std::uint8_t>(r);
    if (sets.count[d] == 0) return false;
  }
  return find_row_in(table, memo, query, sets, false, out);
}

/// True when some surviving row other than `row` exists (DTensor's "one candidate" rule).
inline bool has_other_survivor(const FilledTable& table, CostMemo& memo, const SearchQuery& query, const CompactRow& row) {
  RuleSets all;
  for (std::size_t d = 0; d < table.mesh_ndim(); ++d) {
    all.count[d] = table.num_rules();
    for (std::size_t r = 0; r < table.num_rules(); ++r) all.rules[d][r] = static_cast<std::uint8_t>(r);
  }
  CompactRow found{};
  return find_row_in(table, memo, query, all, false, found, &row);
}

}  // namespace ctshard
