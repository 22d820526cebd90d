#pragma once
/// \file select/cost_memo.hpp
/// Per-input memo of one table: the redistribute cost of each target spec priced so far, kept
/// across queries while that input's current spec and meta stay the same, plus the walk state the
/// memo is indexed by (a RowCursor: prefix keys and the incremental shardability of each input's
/// target) and the per-query cost knowledge of the searches (DimCosts, PrefixBounds).

#include <cstddef>
#include <cstdint>
#include <vector>

#include "ctshard/core/spec.hpp"
#include "ctshard/core/tensor_shape.hpp"
#include "ctshard/cost/redistribute_cost.hpp"
#include "ctshard/select/dim_costs.hpp"
#include "ctshard/select/filled_table.hpp"
#include "ctshard/select/prefix_bounds.hpp"
#include "ctshard/select/row_cursor.hpp"
#include "ctshard/select/search_query.hpp"

namespace ctshard {

/// Scratch buffers of the searches over one table, sized once per table.
struct SearchScratch {
  std::vector<double> costs;       ///< per input: the costs of the row being visited
  std::vector<double> bound;       ///< [mesh dim * rules + j]: lower bound of the j-th child tried there
  std::vector<std::uint8_t> rule;  ///< [mesh dim * rules + j]: its rule
};

/// Costs per (input, target spec key). A key is the target's column ids in mixed radix
/// (InputPrefix::key). Small key spaces get one slot per key; larger ones a direct-mapped cache of
/// `max_slots` slots that stores its key, so any mesh rank works in bounded memory. An entry is
/// valid while its stamp equals its input's stamp, which changes whenever that input's current
/// spec or meta does. What only pricing and the cost searches use (slots, DimCosts,
/// PrefixBounds, scratch) is sized on first use, so a table whose queries all end at the
/// no-redistribute row never allocates it; once sized, nothing allocates.
class CostMemo {
 public:
  /// Slots per input at most.
  static constexpr std::size_t max_slots = 1024;

  explicit CostMemo(const FilledTable& table) : inputs_(table.num_inputs()) { cursor_.bind(table); }

  /// Starts a query: inputs whose spec or meta changed get a new stamp (their costs are stale).
  void begin(const SearchQuery& query) noexcept {
    for (std::size_t i = 0; i < inputs_.size(); ++i) {
      Input& in = inputs_[i];
      if (in.stamp != 0 && in.spec == query.spec(i) && in.meta == query.meta(i)) continue;
      in.stamp = ++counter_;
      in.spec = query.spec(i);
      in.meta = query.meta(i);
    }
  }

  /// True when the latest `begin` saw the same inputs as the call that recorded `stamps`.
  [[nodiscard]] bool same_inputs(const std::vector<std::uint32_t>& stamps) const noexcept {
    if (stamps.size() != inputs_.size()) return false;
    for (std::size_t i = 0; i < inputs_.size(); ++i)
      if (stamps[i] != inputs_[i].stamp) return false;
    return true;
  }
  /// Records the latest stamps into `stamps` (no allocation once it has the right size).
  void stamps(std::vector<std::uint32_t>& stamps) const {
    stamps.resize(inputs_.size());
    for (std::size_t i = 0; i < inputs_.size(); ++i) stamps[i] = inputs_[i].stamp;
  }

  /// Redistribute cost (µs) of input `i` to the target of the complete row in `cursor` (level N),
  /// priced once per stamp and key.
  [[nodiscard]] double cost(const FilledTable& table, const SearchQuery& query, const RowCursor& cursor, std::size_t i) {
    if (slots_.empty()) size_slots(table);
    const std::size_t n = table.mesh_ndim();
    const Input& in = inputs_[i];
    const std::uint64_t key = cursor.input(n, i).key;
    Slot& s = slots_[in.first_slot +
                     (in.hashed ? static_cast<std::size_t>((key * 0x9E3779B97F4A7C15ull) >> 54) & (max_slots - 1) : static_cast<std::size_t>(key))];
    if (s.stamp == in.stamp && s.key == key) return s.cost;
    Spec target;
    for (std::size_t d = 0; d < n; ++d) target.push_back(table.input_cell(cursor.digits()[d], i));
    s.key = key;
    s.stamp = in.stamp;
    s.cost = redistribute_cost(query.spec(i), target, query.meta(i), table.mesh());
    return s.cost;
  }

  /// Sum over inputs of `cost` for the complete row in `cursor`.
  [[nodiscard]] double total(const FilledTable& table, const SearchQuery& query, const RowCursor& cursor) {
    double sum = 0;
    for (std::size_t i = 0; i < table.num_inputs(); ++i) sum += cost(table, query, cursor, i);
    return sum;
  }

  /// The walk state of searches over this table (see RowCursor).
  [[nodiscard]] RowCursor& cursor() noexcept { return cursor_; }
  /// Per-dim costs of the current query (see DimCosts); `begin_costs` fills them.
  [[nodiscard]] DimCosts& dim_costs() noexcept { return dim_costs_; }
  /// Prefix bounds of the current query (see PrefixBounds); `begin_costs` starts them.
  [[nodiscard]] PrefixBounds& bounds() noexcept { return bounds_; }
  /// Fills dim_costs() and starts bounds() for `query` (the zero-cost and min-cost searches need it).
  void begin_costs(const FilledTable& table, const SearchQuery& query) {
    if (!costs_bound_) {
      dim_costs_.bind(table);
      bounds_.bind(table);
      costs_bound_ = true;
    }
    dim_costs_.begin(table, query);
    bounds_.begin(table, query, dim_costs_);
  }
  /// Scratch buffers of the searches, sized for `table` on first use.
  [[nodiscard]] SearchScratch& scratch(const FilledTable& table) {
    if (scratch_.rule.empty()) {
      scratch_.costs.resize(table.num_inputs());
      scratch_.bound.resize(table.mesh_ndim() * table.num_rules());
      scratch_.rule.resize(table.mesh_ndim() * table.num_rules());
    }
    return scratch_;
  }

 private:
  struct Slot {
    std::uint64_t key = 0;
    std::uint32_t stamp = 0;
    double cost = 0;
  };
  struct Input {
    std::uint32_t stamp = 0;  // 0: no query yet
    Spec spec{};
    TensorMeta meta{};
    std::size_t first_slot = 0;
    bool hashed = false;  // slots are a cache (key space above max_slots)
  };

  void size_slots(const FilledTable& table) {
    std::size_t total = 0;
    for (std::size_t i = 0; i < inputs_.size(); ++i) {
      std::size_t keys = 1;
      for (std::size_t d = 0; d < table.mesh_ndim() && keys <= max_slots; ++d) keys *= table.distinct(table.num_outputs() + i);
      inputs_[i].hashed = keys > max_slots;
      inputs_[i].first_slot = total;
      total += keys > max_slots ? max_slots : keys;
    }
    slots_.resize(total == 0 ? 1 : total);
  }

  std::vector<Input> inputs_;
  std::vector<Slot> slots_;  // every input's slots, input 0 first
  std::uint32_t counter_ = 0;
  bool costs_bound_ = false;
  RowCursor cursor_;
  DimCosts dim_costs_;
  PrefixBounds bounds_;
  SearchScratch scratch_;
};

}  // namespace ctshard
