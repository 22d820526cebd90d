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

/// Branch and bound over mesh dims 0..N-1. At a prefix of length k, every rule for mesh dim k
/// gets a quick bound before the row is extended (PrefixBounds::quick_bound: the prefix's fixed
/// dims, the rule's least cost on dim k, and the free dims' bound), and the rules are tried in
/// increasing quick bound (ties: rule order), so the first row reached — the incumbent, found
/// before any backtracking — takes on each mesh dim the rule of smallest bound. A tried rule must
/// survive the prefix filters (RowCursor::alive) and its finer bound (PrefixBounds::child_bound:
/// DTensor's planner replayed on the fixed dims). A subtree is skipped when its bound exceeds the
/// incumbent's total, or equals it and the subtree lies after the incumbent in enumeration order
/// (mesh dim 0 slowest); a priced row replaces the incumbent when it is cheaper, or as cheap and
/// earlier. Bounds never exceed a row's priced total (PrefixBounds::slack), so the result is
/// exactly the first minimum of full enumeration (exact float comparison of priced totals).
/// Requires `memo.begin(query)` and `memo.begin_costs(table, query)` for this query.
[[nodiscard]] inline MinCostRow find_min_cost_row(const FilledTable& table, CostMemo& memo, const SearchQuery& query) {
  const std::size_t n = table.mesh_ndim(), s = table.num_rules();
  RowCursor& cursor = memo.cursor();
  PrefixBounds& bounds = memo.bounds();
  SearchScratch& scratch = memo.scratch();
  cursor.begin(table, query);
  MinCostRow best;
  best.total_us = infinite_cost;
  const auto compare = [&](std::size_t len) {  // < 0: the cursor's prefix of length len comes before the incumbent's
    for (std::size_t d = 0; d < len; ++d)
      if (cursor.digits()[d] != best.row[d]) return cursor.digits()[d] < best.row[d] ? -1 : 1;
    return 0;
  };
  const auto expand = [&](const auto& self, std::size_t k) -> void {
    ++best.expanded;
    const bool last = k + 1 == n;
    const double rest = last ? 0.0 : bounds.rest_bound(k), level = bounds.level_bound(k);
    double* bound = &scratch.bound[k * s];
    std::uint8_t* rule = &scratch.rule[k * s];
    std::size_t m = 0;
    for (std::size_t r = 0; r < s; ++r) {  // quick bounds, in increasing order (stable: ties keep rule order)
      const double b = bounds.quick_bound(k, r, level, rest) * PrefixBounds::slack;
      if (best.found && b > best.total_us) continue;
      std::size_t j = m++;
      for (; j > 0 && bound[j - 1] > b; --j) {
        bound[j] = bound[j - 1];
        rule[j] = rule[j - 1];
      }
      bound[j] = b;
      rule[j] = static_cast<std::uint8_t>(r);
    }
    for (std::size_t j = 0; j < m; ++j) {
      if (best.found && bound[j] > best.total_us) break;
      cursor.extend(k, rule[j]);
      if (!cursor.alive(k + 1)) continue;
      const double b = bounds.child_bound(k, cursor, rest) * PrefixBounds::slack;
      if (best.found && (b > best.total_us || (b == best.total_us && compare(k + 1) > 0))) continue;
      if (!last) {
        self(self, k + 1);
        continue;
      }
      if (!cursor.passes_filter()) continue;
      ++best.priced;
      const double total = memo.total(table, query, cursor);
      if (!best.found || total < best.total_us || (total == best.total_us && compare(n) < 0)) {
        best.found = true;
        best.total_us = total;
        best.row = cursor.digits();
      }
    }
  };
  expand(expand, 0);
  return best;
}

}  // namespace ctshard
