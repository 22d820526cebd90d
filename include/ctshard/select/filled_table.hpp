#pragma once
/// \file select/filled_table.hpp
/// One op's single-dim rules on one mesh, prepared for one set of input shard kinds: the
/// all-Replicate row inserted, placeholders filled (DTensor `_insert_single_dim_replication_strategy`
/// + `_fill_single_dim_strategy_placeholders`), and per cell the data every search reads (partial
/// reduce-op bits, distinct-placement ids per operand column).

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "ctshard/core/spec.hpp"
#include "ctshard/core/tensor_shape.hpp"
#include "ctshard/cost/mesh_topology.hpp"
#include "ctshard/error.hpp"
#include "ctshard/rules/full_mesh_filter.hpp"
#include "ctshard/rules/placeholder_fill.hpp"
#include "ctshard/rules/regroup_on_mesh.hpp"
#include "ctshard/rules/rule_set.hpp"
#include "ctshard/select/filters.hpp"

namespace ctshard {

/// True when two shard-kind sets fill placeholders identically.
[[nodiscard]] constexpr bool same_kinds(const ShardKinds& a, const ShardKinds& b) noexcept {
  return a.shard == b.shard && a.num_strided == b.num_strided && a.split_factors == b.split_factors;
}

/// The candidate table of one op on one mesh for one fill: S filled single-dim rules (row 0 the
/// all-Replicate row), so S^N compact rows (one rule index per mesh dim, mesh dim 0 slowest).
/// Immutable once built; the searches read it (select/row_cursor.hpp and the search headers).
class FilledTable {
 public:
  /// Largest number of filled rules: a compact row stores one byte per mesh dim.
  static constexpr std::size_t max_rules = 255;

  /// `with_replicate`: the op's rules with the all-Replicate row first (`with_replicate_row`);
  /// `kinds`: the shard kinds of the runtime inputs. Throws ctshard::error when filling yields
  /// more than max_rules rules.
  FilledTable(const RuleSet& with_replicate, const ShardKinds& kinds, const MeshTopology& mesh, UnevenInputs uneven, FullMeshFilter filter)
      : kinds_(kinds), rules_(fill_placeholders(with_replicate, kinds, mesh.dim_sizes())), mesh_(mesh), uneven_(uneven), filter_(std::move(filter)) {
    const std::size_t width = rules_.width(), s = rules_.size();
    if (s > max_rules)
      throw error("ctshard::StrategyEnumerator: more than " + std::to_string(max_rules) + " single-dim rules after placeholder filling (" +
                  std::to_string(s) + ")");
    partial_mask_.resize(s * width);
    column_id_.resize(s * width);
    distinct_.resize(width);
    for (std::size_t k = 0; k < width; ++k) {
      std::uint32_t distinct = 0;
      for (std::size_t r = 0; r < s; ++r) {
        const Placement& p = rules_.cell(r, k);
        has_strided_ = has_strided_ || p.is_strided_shard();
        partial_mask_[r * width + k] = partial_bit(p);
        std::uint32_t id = distinct;
        for (std::size_t q = 0; q < r && id == distinct; ++q)
          if (rules_.cell(q, k) == p) id = column_id_[q * width + k];
        if (id == distinct) ++distinct;
        column_id_[r * width + k] = id;
      }
      distinct_[k] = distinct;
    }
    rows_ = 1;
    for (std::size_t d = 0; d < mesh_.size(); ++d) rows_ *= s;  // <= 255^8 < 2^64
  }

  /// Some filled cell is a StridedShard (the search's per-mesh-dim bounds do not cover its
  /// DTensor-model costs; see first_minimum_choice).
  [[nodiscard]] bool has_strided_cells() const noexcept { return has_strided_; }
  /// The shard kinds this table is filled for.
  [[nodiscard]] const ShardKinds& kinds() const noexcept { return kinds_; }
  /// The filled rules, all-Replicate row first.
  [[nodiscard]] const RuleSet& rules() const noexcept { return rules_; }
  /// Filled single-dim rules S.
  [[nodiscard]] std::size_t num_rules() const noexcept { return rules_.size(); }
  /// Operands per rule (outputs first).
  [[nodiscard]] std::size_t width() const noexcept { return rules_.width(); }
  [[nodiscard]] std::size_t num_outputs() const noexcept { return rules_.num_outputs(); }
  [[nodiscard]] std::size_t num_inputs() const noexcept { return rules_.num_inputs(); }
  /// The mesh, its rank N, and S^N candidate rows.
  [[nodiscard]] const MeshTopology& mesh() const noexcept { return mesh_; }
  [[nodiscard]] std::size_t mesh_ndim() const noexcept { return mesh_.size(); }
  [[nodiscard]] std::uint64_t num_rows() const noexcept { return rows_; }
  /// Which unshardable input targets still pass (DTensor `allow_uneven_sharding`).
  [[nodiscard]] UnevenInputs uneven() const noexcept { return uneven_; }
  /// The op's full-mesh filter (may be empty).
  [[nodiscard]] const FullMeshFilter& filter() const noexcept { return filter_; }
  [[nodiscard]] bool has_filter() const noexcept { return static_cast<bool>(filter_); }

  /// Placement of operand `k` (outputs first) in rule `r`, unchecked.
  [[nodiscard]] const Placement& cell(std::size_t r, std::size_t k) const noexcept { return rules_.cell(r, k); }
  /// Placement of tensor input `i` in rule `r`, unchecked.
  [[nodiscard]] const Placement& input_cell(std::size_t r, std::size_t i) const noexcept { return rules_.cell(r, rules_.num_outputs() + i); }
  /// Bit `1 << reduce_op` when operand `k` of rule `r` is Partial, else 0.
  [[nodiscard]] unsigned partial_mask(std::size_t r, std::size_t k) const noexcept { return partial_mask_[r * width() + k]; }
  /// Index of operand `k`'s placement in rule `r` among the distinct placements of that column.
  [[nodiscard]] std::uint32_t column_id(std::size_t r, std::size_t k) const noexcept { return column_id_[r * width() + k]; }
  /// Distinct placements in operand `k`'s column.
  [[nodiscard]] std::uint32_t distinct(std::size_t k) const noexcept { return distinct_[k]; }

  /// Spec of operand `operand` for compact row `digits` (one rule per mesh dim). Throws
  /// ctshard::error for a bad operand, digit count or rule index.
  [[nodiscard]] Spec decode(std::span<const std::uint8_t> digits, std::size_t operand) const {
    if (operand >= width() || digits.size() != mesh_.size())
      throw error("ctshard::StrategyEnumerator::spec_of: operand " + std::to_string(operand) + " or digits out of range");
    Spec spec;
    for (std::uint8_t r : digits) {
      if (r >= num_rules()) throw error("ctshard::StrategyEnumerator::spec_of: rule index " + std::to_string(r) + " out of range");
      spec.push_back(cell(r, operand));
    }
    return spec;
  }

 private:
  ShardKinds kinds_;
  RuleSet rules_;
  MeshTopology mesh_;
  UnevenInputs uneven_;
  FullMeshFilter filter_;
  std::vector<unsigned> partial_mask_;    // [rule * width + operand]
  std::vector<std::uint32_t> column_id_;  // [rule * width + operand]
  std::vector<std::uint32_t> distinct_;   // per operand
  std::uint64_t rows_ = 1;
  bool has_strided_ = false;
};

}  // namespace ctshard
