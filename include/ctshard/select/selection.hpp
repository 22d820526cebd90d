#pragma once
/// \file select/selection.hpp
/// Choosing one strategy among priced candidates exactly as DTensor does
/// (`ShardingPropagator._select_min_cost_strategy`, with op_schema).

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "ctshard/config.hpp"

namespace ctshard {

/// Which of DTensor's tie rules picked the row.
enum class ChoiceRule : unsigned char {
  only,             ///< a single candidate
  no_redistribute,  ///< the LAST zero-cost candidate whose input specs equal the runtime specs
  zero_cost,        ///< the first zero-cost candidate
  min_cost,         ///< the first candidate of minimum total
};

/// Name as in the reference cases: only, no_redistribute, zero_cost, min_cost.
[[nodiscard]] constexpr std::string_view to_string(ChoiceRule r) noexcept {
  switch (r) {
    case ChoiceRule::only: return "only";
    case ChoiceRule::no_redistribute: return "no_redistribute";
    case ChoiceRule::zero_cost: return "zero_cost";
    case ChoiceRule::min_cost: return "min_cost";
  }
  return "?";
}

/// A choice: the candidate's position among the surviving rows (enumeration order, as
/// `ctshard table` numbers them; `unknown_index` when the choice came from a search, which does
/// not count rows — StrategyEnumerator::index_of does), the rule that picked it, its total
/// redistribute cost (µs), and its compact row (`digits[d]`: the filled single-dim rule used on
/// mesh dim d) when known.
struct Choice {
  /// The index of a choice whose position was not computed.
  static constexpr std::size_t unknown_index = static_cast<std::size_t>(-1);
  std::size_t index = 0;
  ChoiceRule rule = ChoiceRule::only;
  double total_us = 0;
  std::array<std::uint8_t, max_mesh_dims> digits{};
  std::uint32_t table = 0;       ///< which table of the enumerator the digits index (0: not from one)
  std::uint32_t enumerator = 0;  ///< the StrategyEnumerator that made it (its id; 0: none)
  friend constexpr bool operator==(const Choice& a, const Choice& b) noexcept {
    return a.index == b.index && a.rule == b.rule && a.total_us == b.total_us;
  }
};

/// Streams candidates in enumeration order and keeps DTensor's choice, allocation-free:
/// one candidate → it; else the last zero-total candidate whose inputs already match; else the first
/// zero-total one; else the first minimum (costs are never negative here).
class ChoiceAccumulator {
 public:
  /// Offers candidate `index` with `total` µs; `inputs_match` when its input specs equal the
  /// runtime input specs.
  /// `digits` (optional): the candidate's compact row, kept for the candidates that may win.
  constexpr void offer(std::size_t index, double total, bool inputs_match, std::span<const std::uint8_t> digits = {}) noexcept {
    ++count_;
    if (count_ == 1 || total < min_total_) {
      min_total_ = total;
      min_index_ = index;
      copy(digits, min_digits_);
    }
    if (total == 0) {
      if (!has_zero_) {
        zero_index_ = index;
        copy(digits, zero_digits_);
      }
      has_zero_ = true;
      if (inputs_match) {
        match_index_ = index;
        copy(digits, match_digits_);
        has_match_ = true;
      }
    }
  }
  /// Candidates offered so far.
  [[nodiscard]] constexpr std::size_t count() const noexcept { return count_; }
  /// The first index of the minimum total (the choice without DTensor's tie preferences).
  [[nodiscard]] constexpr std::size_t plain_min_index() const noexcept { return min_index_; }
  /// DTensor's choice; meaningless when count() == 0.
  [[nodiscard]] constexpr Choice choice() const noexcept {
    if (count_ == 1) return {min_index_, ChoiceRule::only, min_total_, min_digits_};
    if (has_match_) return {match_index_, ChoiceRule::no_redistribute, 0.0, match_digits_};
    if (has_zero_) return {zero_index_, ChoiceRule::zero_cost, 0.0, zero_digits_};
    return {min_index_, ChoiceRule::min_cost, min_total_, min_digits_};
  }

 private:
  using Digits = std::array<std::uint8_t, max_mesh_dims>;
  static constexpr void copy(std::span<const std::uint8_t> from, Digits& to) noexcept {
    for (std::size_t d = 0; d < from.size() && d < to.size(); ++d) to[d] = from[d];
  }
  Digits min_digits_{}, zero_digits_{}, match_digits_{};
  std::size_t count_ = 0, min_index_ = 0, zero_index_ = 0, match_index_ = 0;
  double min_total_ = 0;
  bool has_zero_ = false, has_match_ = false;
};

}  // namespace ctshard
