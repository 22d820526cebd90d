#pragma once
/// \file expand/mesh_expansion.hpp
/// Mesh expansion at compile time: a single-dim strategy becomes the strategy table of an N-dim
/// mesh — the cartesian product over mesh dims, S^N rows in DTensor's order (mesh dim 0 varies
/// slowest; DTensor `expand_to_full_mesh_op_strategy`, `itertools.product(*[rules] * ndim)`).

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include "ctshard/core/spec.hpp"
#include "ctshard/expand/single_dim_strategy.hpp"
#include "ctshard/rules/rule_set.hpp"

namespace ctshard {

/// Largest table `expand_to_mesh` materialises at compile time (rows, 2^15); bigger products are
/// the run-time enumerator's or the search's job. It is what the compilers' default
/// constant-evaluation limits allow: g++ 12 evaluates mm's 8^5 = 32,768 rows with their laws
/// checked within its default `-fconstexpr-ops-limit` (8^6 exceeds it); clang 14 needs
/// `-fconstexpr-steps=16777216` above ~4,096 rows (mm at N = 5; its default is 2^20 steps).
inline constexpr std::size_t max_constexpr_table_rows = std::size_t{1} << 15;

/// base^exp, saturating at max_constexpr_table_rows + 1.
[[nodiscard]] constexpr std::size_t table_rows(std::size_t base, std::size_t exp) noexcept {
  std::size_t r = 1;
  for (std::size_t i = 0; i < exp; ++i) {
    r *= base;
    if (r > max_constexpr_table_rows) return max_constexpr_table_rows + 1;
  }
  return r;
}

/// The strategy table of an op on an N-dim mesh. `single_dim` holds the rules after the framework
/// inserted the all-Replicate row (index 0) and filled placeholders with plain `Shard`; `rows[i]`
/// is the compact form of row i: one index per mesh dim into `single_dim` (the mixed-radix digits
/// of i, mesh dim 0 most significant). `spec(i, k)` decodes operand k (outputs first).
template <std::size_t S, std::size_t Width, std::size_t N>
struct StrategyTable {
  SingleDimStrategy<S, Width> single_dim{};
  std::array<std::array<std::uint8_t, N>, table_rows(S, N)> rows{};

  /// Rows: S^N.
  [[nodiscard]] static constexpr std::size_t size() noexcept { return table_rows(S, N); }
  /// Mesh rank N.
  [[nodiscard]] static constexpr std::size_t mesh_ndim() noexcept { return N; }
  /// Spec of operand `operand` (0 = first output, then inputs) in row `row`.
  [[nodiscard]] constexpr Spec spec(std::size_t row, std::size_t operand) const {
    Spec s;
    for (std::size_t d = 0; d < N; ++d) s.push_back(single_dim.rows[rows[row][d]][operand]);
    return s;
  }
  /// Spec of output k in row `row`.
  [[nodiscard]] constexpr Spec output(std::size_t row, std::size_t k = 0) const { return spec(row, k); }
  /// Spec of input k in row `row`.
  [[nodiscard]] constexpr Spec input(std::size_t row, std::size_t k) const { return spec(row, single_dim.num_outputs + k); }
};

namespace detail {
template <std::size_t R, std::size_t W>
consteval SingleDimStrategy<R + 1, W> framework_rows(const SingleDimStrategy<R, W>& s) {
  const RuleSet filled = fill_placeholders(with_replicate_row(s.to_rule_set()), plain_shard_kinds);
  SingleDimStrategy<R + 1, W> out;
  out.num_outputs = s.num_outputs;
  out.ranks = s.ranks;
  for (std::size_t r = 0; r < R + 1; ++r)
    for (std::size_t k = 0; k < W; ++k) out.rows[r][k] = filled.at(r, k);
  return out;
}
}  // namespace detail

/// Expands a single-dim strategy (no all-Replicate row; placeholders allowed) to an N-dim mesh:
/// inserts the all-Replicate row, fills placeholders with plain Shard, and lists all (R+1)^N rows.
/// Compile errors: N outside [1, max_mesh_dims]; more than 255 rules; a table above
/// max_constexpr_table_rows; a rule row that is all-Replicate (the framework's row).
template <std::size_t N, std::size_t R, std::size_t W>
[[nodiscard]] consteval auto expand_to_mesh(const SingleDimStrategy<R, W>& strategy) {
  static_assert(N >= 1 && N <= max_mesh_dims, "ctshard::expand_to_mesh: mesh rank N must be in [1, max_mesh_dims]");
  static_assert(R + 1 <= 255, "ctshard::expand_to_mesh: more than 254 single-dim rules");
  static_assert(table_rows(R + 1, N) <= max_constexpr_table_rows,
                "ctshard::expand_to_mesh: (rules+1)^N exceeds max_constexpr_table_rows; use the run-time enumerator");
  StrategyTable<R + 1, W, N> table;
  table.single_dim = detail::framework_rows(strategy);
  for (std::size_t i = 0; i < table.size(); ++i) {
    std::size_t rest = i;
    for (std::size_t d = N; d-- > 0;) {
      table.rows[i][d] = static_cast<std::uint8_t>(rest % (R + 1));
      rest /= (R + 1);
    }
  }
  return table;
}

namespace detail {
/// Index of the first all-Replicate row of a single-dim strategy, or R when none is.
template <std::size_t R, std::size_t W>
[[nodiscard]] constexpr std::size_t first_replicate_row(const SingleDimStrategy<R, W>& s) noexcept {
  for (std::size_t r = 0; r < R; ++r)
    if (is_replicate_row(std::span<const Placement>(s.rows[r]))) return r;
  return R;
}

/// Index of the first rule row equal to an earlier one, or R (repeated rules give repeated rows).
template <std::size_t R, std::size_t W>
[[nodiscard]] constexpr std::size_t first_repeated_row(const SingleDimStrategy<R, W>& s) noexcept {
  for (std::size_t r = 0; r < R; ++r)
    for (std::size_t q = 0; q < r; ++q)
      if (s.rows[q] == s.rows[r]) return r;
  return R;
}

/// Index of the first rule row with a Shard of a tensor dim its operand lacks (the operand's rank
/// known), or R.
template <std::size_t R, std::size_t W>
[[nodiscard]] constexpr std::size_t first_row_beyond_rank(const SingleDimStrategy<R, W>& s) noexcept {
  for (std::size_t r = 0; r < R; ++r)
    for (std::size_t k = 0; k < W; ++k)
      if (const Placement& p = s.rows[r][k]; p.is_any_shard() && s.ranks[k] >= 0 && p.dim >= s.ranks[k]) return r;
  return R;
}

/// mesh_expansion_v's diagnostic for a rule row equal to an earlier one (row `Row`).
template <std::size_t Row>
struct rule_repeats_row_diagnostic {
  static_assert(Row != Row,  // NOLINT(misc-redundant-expression): false for every Row, checked only once instantiated
                "ctshard::mesh_expansion_v: a single-dim rule row repeats an earlier row; list each rule once");
  static constexpr bool value = false;
};

/// mesh_expansion_v's diagnostic for a rule row sharding a tensor dim its operand lacks (row `Row`).
template <std::size_t Row>
struct rule_shards_missing_dim_diagnostic {
  static_assert(Row != Row,  // NOLINT(misc-redundant-expression): false for every Row, checked only once instantiated
                "ctshard::mesh_expansion_v: a single-dim rule row shards a tensor dim beyond its operand's rank");
  static constexpr bool value = false;
};

/// mesh_expansion_v's diagnostic for a rule that lists the all-Replicate row (row `Row`):
/// instantiated only then, its one failing static_assert names the problem.
template <std::size_t Row>
struct rule_lists_replicate_row_diagnostic {
  static_assert(Row != Row,  // NOLINT(misc-redundant-expression): false for every Row, checked only once instantiated
                "ctshard::mesh_expansion_v: a single-dim rule row is all-Replicate; the framework inserts that row, rules must not list it");
  static constexpr bool value = false;
};

/// mesh_expansion_v's diagnostic for a mesh rank outside [1, max_mesh_dims].
template <std::size_t N>
struct mesh_rank_diagnostic {
  static_assert(N != N,  // NOLINT(misc-redundant-expression): false for every N, checked only once instantiated
                "ctshard::mesh_expansion_v: the mesh rank N must be in [1, max_mesh_dims]");
  static constexpr bool value = false;
};

/// mesh_expansion_v's diagnostic for a table of more than max_constexpr_table_rows rows.
template <std::size_t Rows>
struct table_too_large_diagnostic {
  static_assert(Rows != Rows,  // NOLINT(misc-redundant-expression): false for every Rows, checked only once instantiated
                "ctshard::mesh_expansion_v: (rules+1)^N rows exceed max_constexpr_table_rows (2^15); use the run-time "
                "StrategyEnumerator");
  static constexpr bool value = false;
};

/// mesh_expansion_v's value, validated once at the entry point: the expanded table, or for a mesh
/// rank out of range, a table above max_constexpr_table_rows, a rule listing the all-Replicate
/// row, a rule row repeated or a Shard beyond its operand's rank (the laws table_laws_hold checks
/// on the rules), only that diagnostic and an empty table (nothing else reports).
template <auto Strategy, std::size_t N>
consteval auto checked_mesh_expansion() {
  constexpr std::size_t bad = first_replicate_row(Strategy);
  if constexpr (N < 1 || N > max_mesh_dims) {
    [[maybe_unused]] constexpr bool valid = mesh_rank_diagnostic<N>::value;
    return StrategyTable<1, Strategy.width(), 1>{};
  } else if constexpr (table_rows(Strategy.size() + 1, N) > max_constexpr_table_rows) {
    [[maybe_unused]] constexpr bool valid = table_too_large_diagnostic<table_rows(Strategy.size() + 1, N)>::value;
    return StrategyTable<1, Strategy.width(), N>{};
  } else if constexpr (bad != Strategy.size()) {
    [[maybe_unused]] constexpr bool valid = rule_lists_replicate_row_diagnostic<bad>::value;
    return StrategyTable<1, Strategy.width(), N>{};
  } else if constexpr (first_repeated_row(Strategy) != Strategy.size()) {
    [[maybe_unused]] constexpr bool valid = rule_repeats_row_diagnostic<first_repeated_row(Strategy)>::value;
    return StrategyTable<1, Strategy.width(), N>{};
  } else if constexpr (first_row_beyond_rank(Strategy) != Strategy.size()) {
    [[maybe_unused]] constexpr bool valid = rule_shards_missing_dim_diagnostic<first_row_beyond_rank(Strategy)>::value;
    return StrategyTable<1, Strategy.width(), N>{};
  } else {
    return expand_to_mesh<N>(Strategy);
  }
}
}  // namespace detail

/// `mesh_expansion_v<einsum_strategy_v<"mk,kn->mn">, 2>`: the expanded table as a constexpr value.
/// A rule row that is all-Replicate, a repeated rule row or a Shard of a dim beyond its operand's
/// rank is one compile error naming the problem (`rule_lists_replicate_row_diagnostic<row>`, ...),
/// as are the limits of `expand_to_mesh`.
template <auto Strategy, std::size_t N>
inline constexpr auto mesh_expansion_v = detail::checked_mesh_expansion<Strategy, N>();

/// Laws every expanded table obeys; `static_assert(table_laws_hold(t))`. Checks: size = S^N;
/// row 0 all-Replicate; rows pairwise distinct; compact rows in mixed-radix order; no Shard on a
/// tensor dim the operand lacks (when its rank is known).
template <std::size_t S, std::size_t W, std::size_t N>
[[nodiscard]] constexpr bool table_laws_hold(const StrategyTable<S, W, N>& t) {
  if (t.size() != table_rows(S, N)) return false;
  for (std::size_t k = 0; k < W; ++k)
    if (!t.spec(0, k).is_replicated()) return false;
  for (std::size_t r = 0; r < S; ++r) {
    for (std::size_t q = 0; q < r; ++q)
      if (t.single_dim.rows[q] == t.single_dim.rows[r]) return false;  // distinct rules => distinct rows
    for (std::size_t k = 0; k < W; ++k) {
      const Placement& p = t.single_dim.rows[r][k];
      if (p.is_any_shard() && t.single_dim.ranks[k] >= 0 && p.dim >= t.single_dim.ranks[k]) return false;
    }
  }
  for (std::size_t i = 0; i + 1 < t.size(); ++i) {
    // mixed-radix successor: rows[i+1] == rows[i] + 1 with mesh dim 0 most significant
    std::array<std::uint8_t, N> next = t.rows[i];
    for (std::size_t d = N; d-- > 0;) {
      if (++next[d] < S) break;
      next[d] = 0;
    }
    if (next != t.rows[i + 1]) return false;
  }
  return true;
}

}  // namespace ctshard
