#pragma once
/// \file select/search_choice.hpp
/// DTensor's choice (`_select_min_cost_strategy` with op_schema, ../shared/reference §5) found by
/// search instead of full enumeration, for tables of any size: one surviving row → it; else the
/// LAST zero-cost row whose inputs equal the current specs (no_redistribute); else the FIRST
/// zero-cost row; else the FIRST row of minimum total. The row's position among surviving rows is
/// not computed here (see survivor_index).

#include <cstddef>
#include <cstdint>

#include "ctshard/cost/redistribute_step.hpp"
#include "ctshard/select/cost_memo.hpp"
#include "ctshard/select/filled_table.hpp"
#include "ctshard/select/full_enumeration.hpp"
#include "ctshard/select/min_cost_search.hpp"
#include "ctshard/select/row_search.hpp"
#include "ctshard/select/search_query.hpp"
#include "ctshard/select/selection.hpp"

namespace ctshard {

/// Which search produced a choice, and how much it did.
struct SearchStats {
  std::size_t priced = 0;    ///< rows priced by the min-cost search
  std::size_t expanded = 0;  ///< prefixes it expanded
};

/// True when the DTensor cost model must price a StridedShard for this query (a current spec or a
/// filled cell holds one): the greedy planner's StridedShard steps (all-gather then chunk, and the
/// nested pass through Replicate) are not separable per mesh dim, so the per-dim zero-cost sets
/// and lower bounds of the search do not bound them; such tables of at most max_enumerated_rows
/// rows are walked instead (exact by construction).
[[nodiscard]] inline bool walks_for_strided_costs(const FilledTable& table, const SearchQuery& query) noexcept {
  if (table.mesh().cost_model != CostModel::dtensor || table.num_rows() > max_enumerated_rows) return false;
  if (table.has_strided_cells()) return true;
  for (const Spec& spec : query.specs())
    for (const Placement& p : spec)
      if (p.is_strided_shard()) return true;
  return false;
}

/// The first surviving row of minimum total by walking every row (for_each_row).
[[nodiscard]] inline MinCostRow first_minimum_by_walk(const FilledTable& table, CostMemo& memo, const SearchQuery& query) {
  MinCostRow best;
  best.total_us = infinite_cost;
  (void)for_each_row(table, memo, query, [&](const CandidateView& c) {
    ++best.priced;
    if (!best.found || c.total_us < best.total_us) {
      best.found = true;
      best.total_us = c.total_us;
      for (std::size_t d = 0; d < c.digits.size(); ++d) best.row[d] = c.digits[d];
    }
  });
  return best;
}

/// The first surviving row of minimum total (zero_cost when that total is 0, else min_cost;
/// Choice::index unknown): the first zero-cost row when the zero-cost rows are a product of
/// per-dim sets (DimCosts::zero_cost_is_per_dim), else the branch and bound. `found` (optional):
/// false when no row survives (then rule min_cost, total +inf, row 0).
[[nodiscard]] inline Choice first_minimum_choice(const FilledTable& table, CostMemo& memo, const SearchQuery& query, SearchStats* stats = nullptr,
                                                 bool* found = nullptr) {
  memo.begin(query);
  memo.begin_costs(table, query);
  Choice c;
  c.index = Choice::unknown_index;
  CompactRow row{};
  bool any = true;
  const bool walk = walks_for_strided_costs(table, query);
  if (!walk && memo.dim_costs().zero_cost_is_per_dim() && find_zero_cost_row(table, memo, query, row)) {
    c.rule = ChoiceRule::zero_cost;
    c.total_us = 0;
  } else {
    const MinCostRow m = walk ? first_minimum_by_walk(table, memo, query) : find_min_cost_row(table, memo, query);
    if (stats != nullptr) *stats = SearchStats{m.priced, m.expanded};
    any = m.found;
    row = m.row;
    c.total_us = m.found ? m.total_us : infinite_cost;
    c.rule = m.found && m.total_us == 0 ? ChoiceRule::zero_cost : ChoiceRule::min_cost;
  }
  c.digits = row;
  if (found != nullptr) *found = any;
  return c;
}

/// DTensor's choice for `query` on `table` (Choice::index is Choice::unknown_index): one
/// surviving row → it (only); else the last no-redistribute row; else first_minimum_choice. When
/// no row survives (an op filter rejecting even the all-Replicate row): rule min_cost, total +inf,
/// row 0.
[[nodiscard]] inline Choice search_choice(const FilledTable& table, CostMemo& memo, const SearchQuery& query, SearchStats* stats = nullptr) {
  memo.begin(query);
  Choice c;
  bool found = true;
  CompactRow row{};
  if (find_no_redistribute_row(table, memo, query, row)) {
    c.index = Choice::unknown_index;
    c.rule = ChoiceRule::no_redistribute;
    c.total_us = 0;
    c.digits = row;
  } else {
    c = first_minimum_choice(table, memo, query, stats, &found);
  }
  if (found && !has_other_survivor(table, memo, query, c.digits)) c.rule = ChoiceRule::only;
  return c;
}

}  // namespace ctshard
