#pragma once
/// \file rules/rule_set.hpp
/// RuleSet: an op's single-dim strategy — rows `[out_0 .. out_{k-1}, in_0 .. in_{n-1}]` of
/// placements valid on ONE mesh dim (DTensor `register_single_dim_strategy` rule lists).
/// Usable in constant expressions (transient allocation) and at run time.

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <vector>

#include "ctshard/config.hpp"
#include "ctshard/core/placement.hpp"
#include "ctshard/error.hpp"
#include "ctshard/rules/shard_regroup.hpp"

namespace ctshard {

namespace detail {
[[noreturn]] inline void rule_row_width_mismatch(std::size_t got, std::size_t expected) {
  throw error("ctshard::RuleSet: strategy length " + std::to_string(got) + " != expected " + std::to_string(expected) + " (outputs + inputs)");
}
/// `outputs + inputs`, or throws ctshard::error past max_rule_operands.
[[nodiscard]] constexpr std::size_t checked_rule_width(std::size_t num_outputs, std::size_t num_inputs) {
  if (num_outputs > max_rule_operands || num_inputs > max_rule_operands || num_outputs + num_inputs > max_rule_operands)
    throw error("ctshard::RuleSet: " + std::to_string(num_outputs) + " outputs + " + std::to_string(num_inputs) +
                " inputs exceed max_rule_operands (" + std::to_string(max_rule_operands) + ")");
  return num_outputs + num_inputs;
}
[[noreturn]] inline void rule_regroup_source_invalid(std::size_t source) {
  throw error("ctshard::RuleSet: a regrouped row needs a placeholder in its source column " + std::to_string(source) +
              " on a dim of the regroup's input run");
}
}  // namespace detail

/// A single-dim strategy: `size()` rows of `width() = num_outputs() + num_inputs()` placements.
/// `rank(operand)` is the tensor rank of each operand when the generator knows it (-1 otherwise);
/// mesh expansion and law checks use it to reject `Shard` on a missing dim.
/// A row may carry a ShardRegroup (`add(row, regroup)`, `regroup(r)`): its placeholders are then
/// filled per shard kind by re-expressing the source column's shard on the regrouped dims
/// (`fill_placeholders`), as a view moves a shard (and a StridedShard's split factor) to the dim it
/// now describes.
class RuleSet {
 public:
  /// An empty rule set with no operands.
  constexpr RuleSet() = default;
  /// An empty rule set for rows of `num_outputs` + `num_inputs` placements, ranks unknown.
  /// Throws ctshard::error when their sum exceeds max_rule_operands.
  constexpr RuleSet(std::size_t num_outputs, std::size_t num_inputs)
      : num_outputs_(num_outputs), num_inputs_(num_inputs), ranks_(detail::checked_rule_width(num_outputs, num_inputs), -1) {}

  /// Number of rows.
  [[nodiscard]] constexpr std::size_t size() const noexcept { return width() == 0 ? 0 : cells_.size() / width(); }
  /// True without rows.
  [[nodiscard]] constexpr bool empty() const noexcept { return cells_.empty(); }
  /// Outputs per row (they come first).
  [[nodiscard]] constexpr std::size_t num_outputs() const noexcept { return num_outputs_; }
  /// Tensor inputs per row.
  [[nodiscard]] constexpr std::size_t num_inputs() const noexcept { return num_inputs_; }
  /// Placements per row.
  [[nodiscard]] constexpr std::size_t width() const noexcept { return num_outputs_ + num_inputs_; }

  /// Row `r` as a span of width() placements (unchecked: r < size()).
  [[nodiscard]] constexpr std::span<const Placement> row(std::size_t r) const noexcept {
    return std::span<const Placement>(cells_.data() + r * width(), width());
  }
  /// Placement of `operand` (outputs first) in row `r`. Throws ctshard::error out of range.
  [[nodiscard]] constexpr const Placement& at(std::size_t r, std::size_t operand) const {
    if (r >= size() || operand >= width())
      throw error("ctshard::RuleSet::at: row " + std::to_string(r) + ", operand " + std::to_string(operand) + " out of range");
    return cells_[r * width() + operand];
  }

  /// Placement of `operand` in row `r`, unchecked (r < size(), operand < width()): the hot loops'
  /// accessor once the indices are known to be in range.
  [[nodiscard]] constexpr const Placement& cell(std::size_t r, std::size_t operand) const noexcept { return cells_[r * width() + operand]; }

  /// Reserves space for `rows` rows (no effect on the contents).
  constexpr void reserve(std::size_t rows) { cells_.reserve(rows * width()); }

  /// Appends the all-Replicate row (the framework's row; rules themselves never list it).
  constexpr RuleSet& add_replicate_row() {
    for (std::size_t k = 0; k < width(); ++k) cells_.push_back(Replicate());
    if (!row_regroup_.empty()) row_regroup_.push_back(-1);
    return *this;
  }

  /// Appends a row. Throws ctshard::error ("strategy length N != expected M") on a wrong width.
  constexpr RuleSet& add(std::span<const Placement> row) {
    if (row.size() != width()) detail::rule_row_width_mismatch(row.size(), width());
    append_cells(row);
    if (!row_regroup_.empty()) row_regroup_.push_back(-1);
    return *this;
  }
  constexpr RuleSet& add(std::initializer_list<Placement> row) { return add(std::span<const Placement>(row.begin(), row.size())); }

  /// Appends a regrouped row: its placeholders are filled by re-expressing the shard of column
  /// `regroup.source` on the regroup's output run (see ShardRegroup, `fill_placeholders`); the
  /// dims the other placeholders name are only what `rules_raw` prints. Throws ctshard::error on a
  /// wrong width, or when the source column holds no placeholder on a dim of the input run.
  constexpr RuleSet& add(std::span<const Placement> row, const ShardRegroup& regroup) {
    if (row.size() != width()) detail::rule_row_width_mismatch(row.size(), width());
    const std::size_t src = regroup.source;
    if (src >= width() || !row[src].is_placeholder() || row[src].dim < regroup.input_first ||
        row[src].dim >= regroup.input_first + static_cast<int>(regroup.input.rank))
      detail::rule_regroup_source_invalid(src);
    while (row_regroup_.size() < size()) row_regroup_.push_back(-1);
    append_cells(row);
    std::int32_t id = -1;
    for (std::size_t k = 0; k < regroups_.size() && id < 0; ++k)
      if (regroups_[k] == regroup) id = static_cast<std::int32_t>(k);
    if (id < 0) {
      id = static_cast<std::int32_t>(regroups_.size());
      regroups_.push_back(regroup);
    }
    row_regroup_.push_back(id);
    return *this;
  }
  constexpr RuleSet& add(std::initializer_list<Placement> row, const ShardRegroup& regroup) {
    return add(std::span<const Placement>(row.begin(), row.size()), regroup);
  }

  /// Appends row `r` of `other` (same width), with its regroup.
  constexpr RuleSet& add_row_of(const RuleSet& other, std::size_t r) {
    const ShardRegroup* g = other.regroup(r);
    return g == nullptr ? add(other.row(r)) : add(other.row(r), *g);
  }

  /// The regroup of row `r`, or nullptr for a plain row (r < size()).
  [[nodiscard]] constexpr const ShardRegroup* regroup(std::size_t r) const noexcept {
    if (row_regroup_.empty() || row_regroup_[r] < 0) return nullptr;
    return &regroups_[static_cast<std::size_t>(row_regroup_[r])];
  }

  /// Tensor rank of operand `k` (outputs first), -1 when unknown.
  [[nodiscard]] constexpr int rank(std::size_t operand) const noexcept { return ranks_[operand]; }
  constexpr void set_rank(std::size_t operand, int rank) noexcept { ranks_[operand] = static_cast<std::int8_t>(rank); }

  /// True when some row contains a ShardingPlaceholder.
  [[nodiscard]] constexpr bool has_placeholder() const noexcept {
    for (const auto& p : cells_)
      if (p.is_placeholder()) return true;
    return false;
  }

  friend constexpr bool operator==(const RuleSet&, const RuleSet&) = default;

 private:
  // push_back rather than vector::insert / assign: every includer of the rules instantiates these
  // members, and insert's range and fill overloads cost ~0.1 s of compile time per translation unit.
  constexpr void append_cells(std::span<const Placement> row) {
    for (const Placement& p : row) cells_.push_back(p);
  }

  std::size_t num_outputs_ = 0;
  std::size_t num_inputs_ = 0;
  std::vector<std::int8_t> ranks_;
  std::vector<Placement> cells_;
  std::vector<ShardRegroup> regroups_;     // distinct regroups of the rows
  std::vector<std::int32_t> row_regroup_;  // per row: index into regroups_ or -1; empty while no row has one
};

/// True when a row is all-Replicate (the row the framework inserts; rules must not list it).
[[nodiscard]] constexpr bool is_replicate_row(std::span<const Placement> row) noexcept {
  for (const auto& p : row)
    if (!p.is_replicate()) return false;
  return true;
}

namespace detail {
[[noreturn]] inline void rule_lists_replicate_row(std::size_t row) {
  throw error("ctshard: single-dim strategy row " + std::to_string(row) +
              " is all-Replicate; the framework inserts that row, rules must not list it");
}
}  // namespace detail

/// The rules with the all-Replicate row inserted first (DTensor
/// `_insert_single_dim_replication_strategy`). Throws ctshard::error (a compile error in a constant
/// expression) when a rule already lists an all-Replicate row.
[[nodiscard]] constexpr RuleSet with_replicate_row(const RuleSet& rules) {
  RuleSet out(rules.num_outputs(), rules.num_inputs());
  out.reserve(rules.size() + 1);
  for (std::size_t k = 0; k < rules.width(); ++k) out.set_rank(k, rules.rank(k));
  out.add_replicate_row();
  for (std::size_t r = 0; r < rules.size(); ++r) {
    if (is_replicate_row(rules.row(r))) detail::rule_lists_replicate_row(r);
    out.add_row_of(rules, r);
  }
  return out;
}

/// `rules` with a new input column inserted before input `input` (0 .. num_inputs()), Replicate in
/// every row, of tensor rank `rank` (-1 unknown); regrouped rows keep their regroup, its source
/// column moved along. For an operand a wrapper adds to the wrapped op's inputs (an RNG state).
/// Throws ctshard::error when `input` is out of range or the width passes max_rule_operands.
[[nodiscard]] constexpr RuleSet with_replicated_input(const RuleSet& rules, std::size_t input, int rank) {
  if (input > rules.num_inputs())
    throw error("ctshard::with_replicated_input: input " + std::to_string(input) + " of " + std::to_string(rules.num_inputs()));
  const std::size_t at = rules.num_outputs() + input;
  RuleSet out(rules.num_outputs(), rules.num_inputs() + 1);
  for (std::size_t k = 0; k < out.width(); ++k) out.set_rank(k, k < at ? rules.rank(k) : k == at ? rank : rules.rank(k - 1));
  std::vector<Placement> row(out.width());
  for (std::size_t r = 0; r < rules.size(); ++r) {
    for (std::size_t k = 0; k < out.width(); ++k) row[k] = k < at ? rules.cell(r, k) : k == at ? Replicate() : rules.cell(r, k - 1);
    if (const ShardRegroup* g = rules.regroup(r); g != nullptr) {
      ShardRegroup moved = *g;
      if (moved.source >= at) ++moved.source;
      out.add(row, moved);
    } else {
      out.add(row);
    }
  }
  return out;
}

/// The rows of `rules` in which no input column holds a Partial (ranks and regroups kept): a rule
/// set without the rows that pass a pending reduction through the op. Outputs may still be
/// Partial (an op that creates a Partial from sharded inputs, e.g. a contraction, keeps that row).
[[nodiscard]] constexpr RuleSet without_partial_input_rows(const RuleSet& rules) {
  RuleSet out(rules.num_outputs(), rules.num_inputs());
  for (std::size_t k = 0; k < rules.width(); ++k) out.set_rank(k, rules.rank(k));
  for (std::size_t r = 0; r < rules.size(); ++r) {
    const auto row = rules.row(r);
    bool partial_input = false;
    for (std::size_t k = rules.num_outputs(); k < rules.width(); ++k) partial_input = partial_input || row[k].is_partial();
    if (!partial_input) out.add_row_of(rules, r);
  }
  return out;
}

}  // namespace ctshard
