#pragma once
/// \file select/min_cost_search.hpp
/// DTensor's first row of minimum total (`_select_min_cost_strategy`'s `costs.index(min(costs))`
/// over the surviving rows in enumeration order), found by branch and bound over mesh dims
/// instead of pricing S^N rows.

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "ctshard/cost/redistribute_step.hpp"
#include "ctshard/select/cost_memo.hpp"
#include "ctshard/select/dim_costs.hpp"
#include "ctshard/select/filled_table.hpp"
#include "ctshard/select/prefix_bounds.hpp"
#include "ctshard/select/row_cursor.hpp"
#include "ctshard/select/row_search.hpp"
#include "ctshard/select/search_query.hpp"

namespace ctshard {

/// The outcome of find_min_cost_row.
struct MinCostRow {
  bool found = false;        ///< false when no row survives the filters
  CompactRow row{};          ///< the first surviving row of minimum total
  double total_us = 0;       ///< its total (µs; +inf when every surviving row is impossible)
  std::size_t priced = 0;    ///< rows priced (leaves reached)
  std::size_t expanded = 0;  ///< prefixes expanded (inner nodes)
};

/// Branch and bound over mesh dims 0..N-1, in two phases. Phase 1 finds the minimum total:
/// at a prefix of length k, every rule for mesh dim k gets a quick bound before the row is
/// extended (PrefixBounds::quick_bound: the prefix's fixed dims, the rule's least cost on dim k,
/// and the free dims' bound), and the rules are tried in increasing quick bound (ties: rule
/// order), so the first row reached — the incumbent, found before any backtracking — takes on
/// each mesh dim the rule of smallest bound; a tried rule must survive the prefix filters
/// (RowCursor::alive) and its finer bound (PrefixBounds::child_bound: DTensor's planner replayed
/// on the fixed dims); a subtree whose bound reaches the incumbent's total is skipped, so
/// plateaus of equal totals cost nothing. Phase 2 finds DTensor's tie rule, the FIRST row of
/// that total: the rows before the incumbent in enumeration order (mesh dim 0 slowest), every
/// subtree whose bound exceeds the minimum skipped, until a priced row equals it. Bounds never
/// exceed a row's priced total (PrefixBounds::slack), so the result is exactly the first minimum
/// of full enumeration (exact float comparison of priced totals). Requires `memo.begin(query)`
/// and `memo.begin_costs(table, query)` for this query.
[[nodiscard]] inline MinCostRow find_min_cost_row(const FilledTable& table, CostMemo& memo, const SearchQuery& query) {
  const std::size_t n = table.mesh_ndim(), s = table.num_rules();
  RowCursor& cursor = memo.cursor();
  PrefixBounds& bounds = memo.bounds();
  SearchScratch& scratch = memo.scratch(table);
  cursor.begin(table, query);
  MinCostRow best;
  best.total_us = infinite_cost;
  // Phase 1: the minimum total, best-first; ties do not matter yet, so a subtree whose bound
  // reaches the incumbent's total is skipped (plateaus of equal totals cost nothing).
  const auto expand = [&](const auto& self, std::size_t k) -> void {
    ++best.expanded;
    const bool last = k + 1 == n;
    const double rest = last ? 0.0 : bounds.rest_bound(k), level = bounds.level_bound(k);
    double* bound = &scratch.bound[k * s];
    std::uint8_t* rule = &scratch.rule[k * s];
    std::size_t m = 0;
    for (std::size_t r = 0; r < s; ++r) {  // quick bounds, in increasing order (stable: ties keep rule order)
      const double b = bounds.quick_bound(k, r, level, rest) * PrefixBounds::slack;
      if (best.found && b >= best.total_us) continue;
      std::size_t j = m++;
      for (; j > 0 && bound[j - 1] > b; --j) {
        bound[j] = bound[j - 1];
        rule[j] = rule[j - 1];
      }
      bound[j] = b;
      rule[j] = static_cast<std::uint8_t>(r);
    }
    for (std::size_t j = 0; j < m; ++j) {
      if (best.found && bound[j] >= best.total_us) break;
      cursor.extend(k, rule[j]);
      if (!cursor.alive(k + 1)) continue;
      if (best.found && bounds.child_bound(k, cursor, rest) * PrefixBounds::slack >= best.total_us) continue;
      if (!last) {
        if (!best.found) (void)bounds.child_bound(k, cursor, rest);  // this child's level state
        self(self, k + 1);
        continue;
      }
      if (!cursor.passes_filter()) continue;
      ++best.priced;
      const double total = memo.total(table, query, cursor);
      if (!best.found || total < best.total_us) {
        best.found = true;
        best.total_us = total;
        best.row = cursor.digits();
      }
    }
  };
  expand(expand, 0);
  if (!best.found) return best;
  // Phase 2: DTensor takes the FIRST row of minimum total: the rows before the incumbent, in
  // enumeration order, skipping every subtree whose bound exceeds the minimum; the first priced
  // row at the minimum is the answer.
  const CompactRow incumbent = best.row;
  bool done = false;
  const auto first = [&](const auto& self, std::size_t k, bool bounded) -> void {
    ++best.expanded;
    const bool last = k + 1 == n;
    const double rest = last ? 0.0 : bounds.rest_bound(k), level = bounds.level_bound(k);
    const std::size_t end = bounded ? incumbent[k] + std::size_t{1} : s;  // bounded: the prefix equals the incumbent's
    for (std::size_t r = 0; r < end && !done; ++r) {
      if (bounds.quick_bound(k, r, level, rest) * PrefixBounds::slack > best.total_us) continue;
      cursor.extend(k, static_cast<std::uint8_t>(r));
      if (!cursor.alive(k + 1)) continue;
      if (bounds.child_bound(k, cursor, rest) * PrefixBounds::slack > best.total_us) continue;
      const bool still = bounded && r == incumbent[k];
      if (!last) {
        self(self, k + 1, still);
        continue;
      }
      if (still || !cursor.passes_filter()) continue;  // the incumbent itself needs no pricing
      ++best.priced;
      if (memo.total(table, query, cursor) == best.total_us) {
        best.row = cursor.digits();
        done = true;
      }
    }
  };
  cursor.begin(table, query);
  first(first, 0, true);
  return best;
}

}  // namespace ctshard
