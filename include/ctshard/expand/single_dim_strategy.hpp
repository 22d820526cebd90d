#pragma once
/// \file expand/single_dim_strategy.hpp
/// SingleDimStrategy<Rows, Width>: a single-dim strategy frozen into a `constexpr` value
/// (fixed-size arrays), made from any constexpr RuleSet generator.

#include <array>
#include <cstddef>
#include <cstdint>

#include "ctshard/core/fixed_string.hpp"
#include "ctshard/einsum/equation.hpp"
#include "ctshard/rules/einsum_rules.hpp"
#include "ctshard/rules/placeholder_fill.hpp"
#include "ctshard/rules/rule_set.hpp"

namespace ctshard {

/// Rows `[outputs..., inputs...]` of one op's single-dim strategy as a structural value: usable as
/// a template argument (`mesh_expansion_v<strategy, N>`) and in `static_assert`.
/// `ranks[k]` is operand k's tensor rank, -1 when unknown.
template <std::size_t Rows, std::size_t Width>
struct SingleDimStrategy {
  std::array<std::array<Placement, Width>, Rows> rows{};
  std::array<std::int8_t, Width> ranks{};
  std::size_t num_outputs = 1;

  /// Number of rules (rows).
  [[nodiscard]] static constexpr std::size_t size() noexcept { return Rows; }
  /// Operands per row: outputs + inputs.
  [[nodiscard]] static constexpr std::size_t width() noexcept { return Width; }
  /// Tensor inputs per row.
  [[nodiscard]] constexpr std::size_t num_inputs() const noexcept { return Width - num_outputs; }
  [[nodiscard]] constexpr const std::array<Placement, Width>& operator[](std::size_t r) const noexcept { return rows[r]; }

  /// Back to a RuleSet (for the run-time path).
  [[nodiscard]] constexpr RuleSet to_rule_set() const {
    RuleSet rs(num_outputs, Width - num_outputs);
    for (std::size_t k = 0; k < Width; ++k) rs.set_rank(k, ranks[k]);
    for (const auto& row : rows) rs.add(row);
    return rs;
  }
  friend constexpr bool operator==(const SingleDimStrategy&, const SingleDimStrategy&) = default;
};

/// Freezes the RuleSet returned by `Generator{}()` (a default-constructible type with a constexpr
/// call operator) into a SingleDimStrategy. Two evaluations: one for the sizes, one for the rows.
template <class Generator>
[[nodiscard]] consteval auto make_single_dim_strategy() {
  constexpr std::size_t rows = Generator{}().size();
  constexpr std::size_t width = Generator{}().width();
  const RuleSet rs = Generator{}();
  SingleDimStrategy<rows, width> s;
  s.num_outputs = rs.num_outputs();
  for (std::size_t k = 0; k < width; ++k) s.ranks[k] = static_cast<std::int8_t>(rs.rank(k));
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t k = 0; k < width; ++k) s.rows[r][k] = rs.at(r, k);
  return s;
}

namespace detail {
template <fixed_string Eq, EinsumLinearity Linearity>
struct einsum_generator {
  constexpr RuleSet operator()() const { return einsum_single_dim_strategy(einsum_equation_v<Eq, 2>, Linearity); }
};

/// einsum_strategy_v's value, validated once at the entry point: the frozen rows of a well-formed
/// equation; for a malformed one only the einsum_diagnostic (one compile error naming the problem)
/// and an empty table, so the generator never runs on it and reports nothing more.
template <fixed_string Eq, EinsumLinearity Linearity>
consteval auto einsum_strategy_checked() {
  constexpr einsum_parse_result r = checked_einsum<Eq, 2>();
  if constexpr (r.ok()) {
    return make_single_dim_strategy<einsum_generator<Eq, Linearity>>();
  } else {
    [[maybe_unused]] constexpr bool valid = einsum_diagnostic<r.code, r.column>::value;
    return SingleDimStrategy<0, 3>{};
  }
}
}  // namespace detail

/// The single-dim strategy of a two-operand einsum, as a constexpr value (rows with
/// `ShardingPlaceholder`s, no all-Replicate row). A malformed equation fails to compile with a
/// message naming the problem (einsum_diagnostic). Example: `einsum_strategy_v<"mk,kn->mn",
/// EinsumLinearity::none>` has 3 rows: `[P(sum), S?(1), S?(0)]`, `[S?(0), S?(0), R]`,
/// `[S?(1), R, S?(1)]`.
template <fixed_string Eq, EinsumLinearity Linearity = EinsumLinearity::dtensor>
inline constexpr auto einsum_strategy_v = detail::einsum_strategy_checked<Eq, Linearity>();

}  // namespace ctshard
