#pragma once
/// \file select/row_cursor.hpp
/// A compact row being built mesh dim by mesh dim, with the filters of mesh expansion decided
/// incrementally (DTensor `expand_to_full_mesh_op_strategy`: mixed partials, `is_tensor_shardable`
/// with the `allow_uneven_sharding` bypass — neither for UnevenInputs::unchecked; then the op's
/// full-mesh filter on whole rows). Every
/// standard filter is monotone along a prefix — once a prefix fails, every completion fails — so
/// the searches prune on `alive(depth)`.

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "ctshard/config.hpp"
#include "ctshard/core/spec.hpp"
#include "ctshard/core/tensor_shape.hpp"
#include "ctshard/select/filled_table.hpp"
#include "ctshard/select/filters.hpp"
#include "ctshard/select/search_query.hpp"

namespace ctshard {

/// What a prefix of a compact row says about one input's target spec.
struct InputPrefix {
  std::uint64_t key = 0;                               ///< memo key of the target prefix: column ids in mixed radix
  std::array<std::int64_t, max_tensor_dims> shards{};  ///< shards per tensor dim so far
  std::uint8_t crowded = 0;                            ///< tensor dims split into more shards than elements (× split factor)
  std::uint8_t touched = 0;                            ///< tensor dims split, in target or current, on a mesh dim where they differ
  bool invalid = false;                                ///< a Shard of a tensor dim the input lacks
  bool match = true;                                   ///< target prefix equals the current spec's prefix

  /// Whether the input target still passes the shardability filter (DTensor
  /// `is_tensor_shardable`, bypassed per `UnevenInputs`); false stays false on every extension.
  [[nodiscard]] constexpr bool passes(UnevenInputs uneven) const noexcept {
    switch (uneven) {
      case UnevenInputs::reject: return !invalid && crowded == 0;
      case UnevenInputs::keep_current: return (!invalid && crowded == 0) || match;
      case UnevenInputs::keep_existing_shards: return !invalid && (crowded & touched) == 0;
      case UnevenInputs::unchecked: return !invalid;
    }
    return false;
  }
};

/// The prefix state of a compact row, one level per mesh dim (level d: rules chosen on mesh dims
/// [0, d)). Buffers are sized by `bind` and reused, so walking allocates nothing.
class RowCursor {
 public:
  /// Sizes the buffers for `table` (allocates only when they grow).
  void bind(const FilledTable& table) {
    const std::size_t n = table.mesh_ndim(), width = table.width(), nin = table.num_inputs();
    masks_.resize((n + 1) * width);
    inputs_.resize((n + 1) * nin);
    mixed_.resize(n + 1);
    blocked_.resize(n + 1);
  }

  /// Starts a walk of `table` for `query` (level 0: nothing chosen). `bind(table)` must have run.
  void begin(const FilledTable& table, const SearchQuery& query) noexcept {
    table_ = &table;
    query_ = &query;
    width_ = table.width();
    nin_ = table.num_inputs();
    n_ = table.mesh_ndim();
    for (std::size_t k = 0; k < width_; ++k) masks_[k] = 0;
    InputPrefix fresh;
    fresh.shards.fill(1);
    for (std::size_t i = 0; i < nin_; ++i) inputs_[i] = fresh;
    mixed_[0] = 0;
    blocked_[0] = 0;
    digits_.fill(0);
  }

  /// Chooses rule `r` on mesh dim `d`: level d + 1 from level d.
  void extend(std::size_t d, std::uint8_t r) noexcept {
    const FilledTable& t = *table_;
    digits_[d] = r;
    const unsigned* from = &masks_[d * width_];
    unsigned* to = &masks_[(d + 1) * width_];
    const UnevenInputs uneven = t.uneven();
    bool mixed = mixed_[d] != 0;
    for (std::size_t k = 0; k < width_; ++k) {
      const unsigned m = from[k] | t.partial_mask(r, k);
      to[k] = m;
      // UnevenInputs::unchecked: a listed rule's rows pass as listed, mixed Partials included
      mixed = mixed || (uneven != UnevenInputs::unchecked && !partial_kinds_compatible(m));
    }
    mixed_[d + 1] = mixed;
    bool blocked = blocked_[d] != 0;
    const std::int64_t mesh_size = t.mesh().sizes[d];
    for (std::size_t i = 0; i < nin_; ++i) {
      InputPrefix s = inputs_[d * nin_ + i];
      const Placement& p = t.input_cell(r, i);
      const Placement& c = query_->spec(i)[d];
      const TensorShape& shape = query_->meta(i).shape;
      s.key = s.key * t.distinct(t.num_outputs() + i) + t.column_id(r, t.num_outputs() + i);
      const bool same = p == c;
      s.match = s.match && same;
      if (p.is_any_shard()) {
        if (p.dim < 0 || p.dim >= shape.rank) {
          s.invalid = true;
        } else {
          const auto td = static_cast<std::size_t>(p.dim);
          if (shape[td] < add_mesh_dim_shards(s.shards[td], p, mesh_size)) s.crowded |= std::uint8_t(1u << td);
        }
      }
      if (!same) {
        if (p.is_any_shard() && p.dim >= 0 && p.dim < shape.rank) s.touched |= std::uint8_t(1u << p.dim);
        if (c.is_any_shard()) s.touched |= std::uint8_t(1u << c.dim);
      }
      blocked = blocked || !s.passes(uneven);
      inputs_[(d + 1) * nin_ + i] = s;
    }
    blocked_[d + 1] = blocked;
  }

  /// True when some completion of the level-`depth` prefix may pass the standard filters.
  [[nodiscard]] bool alive(std::size_t depth) const noexcept { return (mixed_[depth] | blocked_[depth]) == 0; }
  /// True when the level-`depth` prefix mixes Partial kinds (DTensor's mixed-partial filter).
  [[nodiscard]] bool mixed(std::size_t depth) const noexcept { return mixed_[depth] != 0; }
  /// Input `i` at level `depth`.
  [[nodiscard]] const InputPrefix& input(std::size_t depth, std::size_t i) const noexcept { return inputs_[depth * nin_ + i]; }
  /// Partial bits of operand `k` at level `depth`.
  [[nodiscard]] unsigned mask(std::size_t depth, std::size_t k) const noexcept { return masks_[depth * width_ + k]; }
  /// The rules chosen so far (digits[d] for d < the deepest extended level).
  [[nodiscard]] const std::array<std::uint8_t, max_mesh_dims>& digits() const noexcept { return digits_; }
  [[nodiscard]] std::span<const std::uint8_t> row() const noexcept { return {digits_.data(), n_}; }
  /// True when every input's target equals its current spec (a complete row).
  [[nodiscard]] bool inputs_match() const noexcept {
    for (std::size_t i = 0; i < nin_; ++i)
      if (!inputs_[n_ * nin_ + i].match) return false;
    return true;
  }

  /// A complete row (level N) passes the op's full-mesh filter (true without one).
  [[nodiscard]] bool passes_filter() {
    const FilledTable& t = *table_;
    if (!t.has_filter()) return true;
    operand_specs_.resize(width_);  // sized on the first filtered row
    for (std::size_t k = 0; k < width_; ++k) operand_specs_[k] = t.decode(row(), k);
    return t.filter()(operand_specs_, query_->metas(), t.mesh().dim_sizes());
  }
  /// A complete row survives every filter.
  [[nodiscard]] bool survives() { return alive(n_) && passes_filter(); }

  /// Re-extends levels [from, N) for `digits` (after a jump to another row).
  void seek(const std::uint8_t* digits, std::size_t from = 0) noexcept {
    for (std::size_t d = from; d < n_; ++d) extend(d, digits[d]);
  }
  /// Steps to the next row in enumeration order (last mesh dim fastest), re-extending the levels
  /// that changed; false after the last row (digits wrap to all zero).
  bool advance() noexcept {
    const std::size_t s = table_->num_rules();
    std::size_t d = n_;
    while (d-- > 0) {
      if (digits_[d] + 1u < s) break;
      digits_[d] = 0;
    }
    if (d == static_cast<std::size_t>(-1)) return false;
    std::array<std::uint8_t, max_mesh_dims> next = digits_;
    ++next[d];
    seek(next.data(), d);
    return true;
  }

 private:
  const FilledTable* table_ = nullptr;
  const SearchQuery* query_ = nullptr;
  std::size_t width_ = 0, nin_ = 0, n_ = 0;
  std::vector<unsigned> masks_;                // [level * width + operand]
  std::vector<InputPrefix> inputs_;            // [level * inputs + input]
  std::vector<std::uint8_t> mixed_, blocked_;  // per level (0 / 1)
  std::vector<Spec> operand_specs_;            // the op filter's argument
  std::array<std::uint8_t, max_mesh_dims> digits_{};
};

}  // namespace ctshard
