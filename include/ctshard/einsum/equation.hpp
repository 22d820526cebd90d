#pragma once
/// \file einsum/equation.hpp
/// Einsum equations as compile-time strings: parsing into batch / contracting / lhs-only /
/// rhs-only dims (DTensor `EinsumDims.parse_equation` + `parse_dims`), with diagnostics that name
/// the problem when an equation is malformed.

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "ctshard/config.hpp"
#include "ctshard/core/fixed_string.hpp"
#include "ctshard/error.hpp"

namespace ctshard {

/// Why an einsum equation was rejected. The enumerator names are the compile-time diagnostic:
/// they appear in the compiler's "required from" note of `einsum_diagnostic<Code, Column>`.
enum class einsum_error : int {  // int: clang prints a char-sized code as a character ('\x01')
  none,
  missing_arrow,                      ///< no "->"
  more_than_one_arrow,                ///< "->" twice
  character_is_not_a_letter,          ///< anything but a-z, A-Z, ',' and "->" (blanks included)
  more_than_two_operands,             ///< DTensor's einsum rules take one or two inputs
  operand_count_wrong_for_generator,  ///< the rule generator needs exactly two operands
  repeated_output_label,              ///< "mk,kn->mm"
  output_label_absent_from_inputs,    ///< "mk,kn->mz"
  repeated_label_in_one_operand,      ///< "ii,ij->j" (diagonals have no sharding rule)
  summed_label_in_one_operand_only,   ///< "mk,n->mn": k is reduced inside one operand
  operand_rank_above_max,             ///< more labels than max_tensor_dims in one operand
};

/// Human-readable text for an einsum_error (used in run-time exceptions).
[[nodiscard]] constexpr std::string_view describe(einsum_error e) noexcept {
  switch (e) {
    case einsum_error::none: return "no error";
    case einsum_error::missing_arrow: return "equation has no '->'";
    case einsum_error::more_than_one_arrow: return "equation has more than one '->'";
    case einsum_error::character_is_not_a_letter: return "labels must be letters a-z or A-Z (operands separated by ',')";
    case einsum_error::more_than_two_operands: return "at most two input operands are supported";
    case einsum_error::operand_count_wrong_for_generator: return "the einsum rule generator needs exactly two input operands";
    case einsum_error::repeated_output_label: return "an output label occurs twice";
    case einsum_error::output_label_absent_from_inputs: return "an output label does not occur in any input";
    case einsum_error::repeated_label_in_one_operand: return "a label occurs twice in one operand (diagonals are not supported)";
    case einsum_error::summed_label_in_one_operand_only: return "a summed-out label occurs in only one operand (reduce it before the einsum)";
    case einsum_error::operand_rank_above_max: return "an operand has more labels than ctshard::max_tensor_dims";
  }
  return "unknown";
}

/// Labels of one operand (or of the output), in written order.
struct EinsumOperand {
  std::array<char, max_tensor_dims> labels{};
  std::uint8_t rank = 0;

  /// Position of `label` in this operand, or -1.
  [[nodiscard]] constexpr int index_of(char label) const noexcept {
    for (std::uint8_t i = 0; i < rank; ++i)
      if (labels[i] == label) return i;
    return -1;
  }
  [[nodiscard]] constexpr std::string_view view() const noexcept { return {labels.data(), rank}; }
  friend constexpr bool operator==(const EinsumOperand&, const EinsumOperand&) = default;
};

/// A sorted set of labels (DTensor iterates `sorted(set(input chars))`, so ASCII order).
struct EinsumLabelSet {
  std::array<char, 2 * max_tensor_dims> labels{};
  std::uint8_t size = 0;
  [[nodiscard]] constexpr std::string_view view() const noexcept { return {labels.data(), size}; }
  friend constexpr bool operator==(const EinsumLabelSet&, const EinsumLabelSet&) = default;
};

/// A parsed equation: operands, output, and DTensor's dim classes.
/// batch: in the output and in every input; contracting: in no output; lhs_only / rhs_only: in the
/// output and in exactly that input (two-operand equations only).
struct EinsumEquation {
  std::array<EinsumOperand, 2> inputs{};
  std::uint8_t num_inputs = 0;
  EinsumOperand output{};
  EinsumLabelSet batch{}, contracting{}, lhs_only{}, rhs_only{};
  friend constexpr bool operator==(const EinsumEquation&, const EinsumEquation&) = default;
};

/// Result of the non-failing parser: the equation, or an error code and 0-based column.
struct einsum_parse_result {
  EinsumEquation equation{};
  einsum_error code = einsum_error::none;
  std::size_t column = 0;
  /// True when the equation parsed.
  [[nodiscard]] constexpr bool ok() const noexcept { return code == einsum_error::none; }
};

namespace detail {
// Hand-written searches: g++ 12 with -fsanitize=undefined rejects std::string_view::find in
// constant evaluation ("string_view.tcc: not a constant expression").
constexpr std::size_t find_char(std::string_view s, char c, std::size_t from = 0) noexcept {
  for (std::size_t i = from; i < s.size(); ++i)
    if (s[i] == c) return i;
  return std::string_view::npos;
}
constexpr std::size_t find_arrow(std::string_view s, std::size_t from = 0) noexcept {
  for (std::size_t i = from; i + 1 < s.size(); ++i)
    if (s[i] == '-' && s[i + 1] == '>') return i;
  return std::string_view::npos;
}

constexpr bool is_label(char c) noexcept { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

constexpr einsum_parse_result einsum_fail(einsum_error e, std::size_t column) noexcept {
  einsum_parse_result r;
  r.code = e;
  r.column = column;
  return r;
}

constexpr void insert_sorted(EinsumLabelSet& set, char c) noexcept {
  std::size_t i = set.size;
  while (i > 0 && set.labels[i - 1] > c) {
    set.labels[i] = set.labels[i - 1];
    --i;
  }
  set.labels[i] = c;
  ++set.size;
}

constexpr einsum_parse_result classify_einsum_dims(einsum_parse_result r, std::string_view eq) noexcept {
  EinsumEquation& e = r.equation;
  // sorted set of input labels
  EinsumLabelSet all;
  for (std::uint8_t k = 0; k < e.num_inputs; ++k)
    for (char c : e.inputs[k].view()) {
      bool seen = false;
      for (char s : all.view()) seen = seen || s == c;
      if (!seen) insert_sorted(all, c);
    }
  for (char c : all.view()) {
    const bool in_out = e.output.index_of(c) >= 0;
    const bool in0 = e.inputs[0].index_of(c) >= 0;
    const bool in1 = e.num_inputs > 1 && e.inputs[1].index_of(c) >= 0;
    if (!in_out) {
      if (e.num_inputs == 2 && !(in0 && in1)) return einsum_fail(einsum_error::summed_label_in_one_operand_only, find_char(eq, c));
      insert_sorted(e.contracting, c);
    } else if (in0 && (e.num_inputs == 1 || in1)) {
      insert_sorted(e.batch, c);
    } else if (in0) {
      insert_sorted(e.lhs_only, c);
    } else {
      insert_sorted(e.rhs_only, c);
    }
  }
  return r;
}
}  // namespace detail

/// Parses an einsum equation without failing: `r.ok()` or `r.code` / `r.column` say what is wrong.
/// Grammar: one or two operands of letters separated by ',', then "->", then the output labels;
/// no blanks, no ellipsis. Follows DTensor `EinsumDims.parse_equation` / `parse_dims`, plus checks
/// DTensor leaves to a later crash (see einsum_error).
[[nodiscard]] constexpr einsum_parse_result parse_einsum(std::string_view eq) noexcept {
  const std::size_t arrow = detail::find_arrow(eq);
  if (arrow == std::string_view::npos) return detail::einsum_fail(einsum_error::missing_arrow, eq.size());
  if (detail::find_arrow(eq, arrow + 2) != std::string_view::npos)
    return detail::einsum_fail(einsum_error::more_than_one_arrow, detail::find_arrow(eq, arrow + 2));
  for (std::size_t i = 0; i < eq.size(); ++i) {
    if (i == arrow || i == arrow + 1) continue;
    const char c = eq[i];
    if (!detail::is_label(c) && !(c == ',' && i < arrow)) return detail::einsum_fail(einsum_error::character_is_not_a_letter, i);
  }
  einsum_parse_result r;
  EinsumEquation& e = r.equation;
  std::size_t start = 0;
  for (std::size_t i = 0; i <= arrow; ++i) {
    if (i != arrow && eq[i] != ',') continue;
    if (e.num_inputs == 2) return detail::einsum_fail(einsum_error::more_than_two_operands, start);
    EinsumOperand& op = e.inputs[e.num_inputs++];
    for (std::size_t j = start; j < i; ++j) {
      if (op.index_of(eq[j]) >= 0) return detail::einsum_fail(einsum_error::repeated_label_in_one_operand, j);
      if (op.rank == max_tensor_dims) return detail::einsum_fail(einsum_error::operand_rank_above_max, j);
      op.labels[op.rank++] = eq[j];
    }
    start = i + 1;
  }
  for (std::size_t j = arrow + 2; j < eq.size(); ++j) {
    const char c = eq[j];
    if (e.output.index_of(c) >= 0) return detail::einsum_fail(einsum_error::repeated_output_label, j);
    if (e.inputs[0].index_of(c) < 0 && (e.num_inputs < 2 || e.inputs[1].index_of(c) < 0))
      return detail::einsum_fail(einsum_error::output_label_absent_from_inputs, j);
    if (e.output.rank == max_tensor_dims) return detail::einsum_fail(einsum_error::operand_rank_above_max, j);
    e.output.labels[e.output.rank++] = c;
  }
  return detail::classify_einsum_dims(r, eq);
}

/// Non-failing compile-time query: `is_valid_einsum_v<"mk,kn->mn">` is true.
template <fixed_string Eq>
inline constexpr bool is_valid_einsum_v = parse_einsum(Eq.view()).ok();

/// The compile-time diagnostic. Instantiated only for a malformed equation; the static_assert that
/// fires names the problem, and the template arguments (enumerator and 0-based column) appear in
/// the compiler's "required from here" line.
template <einsum_error Code, std::size_t Column>
struct einsum_diagnostic {
  static_assert(Code != einsum_error::missing_arrow, "ctshard::einsum: equation has no '->'");
  static_assert(Code != einsum_error::more_than_one_arrow, "ctshard::einsum: equation has more than one '->'");
  static_assert(Code != einsum_error::character_is_not_a_letter, "ctshard::einsum: labels must be letters a-z or A-Z, operands separated by ','");
  static_assert(Code != einsum_error::more_than_two_operands, "ctshard::einsum: at most two input operands are supported");
  static_assert(Code != einsum_error::operand_count_wrong_for_generator,
                "ctshard::einsum: the einsum rule generator needs exactly two input operands");
  static_assert(Code != einsum_error::repeated_output_label, "ctshard::einsum: an output label occurs twice");
  static_assert(Code != einsum_error::output_label_absent_from_inputs, "ctshard::einsum: an output label does not occur in any input");
  static_assert(Code != einsum_error::repeated_label_in_one_operand,
                "ctshard::einsum: a label occurs twice in one operand (diagonals are not supported)");
  static_assert(Code != einsum_error::summed_label_in_one_operand_only,
                "ctshard::einsum: a summed-out label occurs in only one operand; reduce it before the einsum");
  static_assert(Code != einsum_error::operand_rank_above_max, "ctshard::einsum: an operand has more labels than ctshard::max_tensor_dims");
  static constexpr bool value = Code == einsum_error::none;
};

namespace detail {
template <fixed_string Eq, int RequiredInputs>
consteval einsum_parse_result checked_einsum() {
  einsum_parse_result r = parse_einsum(Eq.view());
  if (r.ok() && RequiredInputs > 0 && r.equation.num_inputs != RequiredInputs)
    r = einsum_fail(einsum_error::operand_count_wrong_for_generator, find_arrow(Eq.view()));
  return r;
}
}  // namespace detail

/// The parsed equation of a compile-time string. A malformed equation is one compile error, the
/// static_assert of einsum_diagnostic naming the problem (see einsum_error); the value is then an
/// empty equation. `RequiredInputs` > 0 also demands that operand count (the einsum rule generator
/// uses 2).
template <fixed_string Eq, int RequiredInputs = 0>
inline constexpr EinsumEquation einsum_equation_v = [] {
  constexpr einsum_parse_result r = detail::checked_einsum<Eq, RequiredInputs>();
  // reading ::value instantiates the diagnostic (its one failing static_assert) without asserting again
  [[maybe_unused]] constexpr bool valid = einsum_diagnostic<r.code, r.column>::value;
  return r.equation;
}();

/// Run-time parse. Throws ctshard::error naming the equation, the column and the problem.
[[nodiscard]] inline EinsumEquation parse_einsum_or_throw(std::string_view eq, int required_inputs = 0) {
  einsum_parse_result r = parse_einsum(eq);
  if (r.ok() && required_inputs > 0 && r.equation.num_inputs != required_inputs)
    r = detail::einsum_fail(einsum_error::operand_count_wrong_for_generator, detail::find_arrow(eq));
  if (!r.ok())
    throw error("ctshard::einsum: " + std::string(describe(r.code)) + " in '" + std::string(eq) + "' at column " + std::to_string(r.column + 1));
  return r.equation;
}

}  // namespace ctshard
