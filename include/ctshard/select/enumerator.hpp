#pragma once
/// \file select/enumerator.hpp
/// StrategyEnumerator: one op's strategies on one mesh, over calls — the facade that keeps a
/// FilledTable and a CostMemo per set of input shard kinds and runs the searches of the select/
/// headers (full enumeration, DTensor's choice by search, row positions).

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "ctshard/core/spec.hpp"
#include "ctshard/core/tensor_shape.hpp"
#include "ctshard/cost/mesh_topology.hpp"
#include "ctshard/error.hpp"
#include "ctshard/rules/placeholder_fill.hpp"
#include "ctshard/rules/rule_set.hpp"
#include "ctshard/select/cost_memo.hpp"
#include "ctshard/select/filled_table.hpp"
#include "ctshard/select/filters.hpp"
#include "ctshard/select/full_enumeration.hpp"
#include "ctshard/select/search_choice.hpp"
#include "ctshard/select/search_query.hpp"
#include "ctshard/select/selection.hpp"
#include "ctshard/select/survivor_count.hpp"

namespace ctshard {

/// How StrategyEnumerator::choose finds DTensor's choice.
enum class SelectAlgo : unsigned char {
  search,     ///< exact search (search_choice): any table size; Choice::index not computed
  enumerate,  ///< full enumeration (enumeration_choice): at most max_enumerated_rows rows; index set
};

/// Prepared strategies of one op on one mesh. Construct once per (rules, mesh); call `choose` or
/// `for_each` per set of runtime inputs. Placeholder filling is cached per set of shard kinds seen
/// (a FilledTable each, with its CostMemo), and per-input costs are memoised per target spec while
/// that input's spec and meta stay the same, so a warm `choose` allocates nothing. Not
/// thread-safe (it owns scratch space): use one per thread.
class StrategyEnumerator {
 public:
  /// `raw_rules`: the op's single-dim strategy (no all-Replicate row, placeholders allowed).
  /// `uneven`: which unshardable input targets still pass (UnevenInputs: `reject` for the einsum
  /// family, `keep_current` for pointwise ops, as DTensor's `allow_uneven_sharding`).
  /// `filter` (optional): the op's full-mesh filter, applied after the two standard filters.
  /// `fill`: which shard kinds fill the placeholders for the runtime inputs (PlaceholderFill; pass
  /// the op's `OpRule::placeholder_fill`; DTensor's fill by default).
  StrategyEnumerator(const RuleSet& raw_rules, const MeshTopology& mesh, UnevenInputs uneven, FullMeshFilter filter = {},
                     PlaceholderFill fill = PlaceholderFill::dtensor)
      : raw_(with_replicate_row(raw_rules)), mesh_(mesh), uneven_(uneven), filter_(std::move(filter)), fill_(fill) {}

  /// The mesh this enumerator prices on.
  [[nodiscard]] const MeshTopology& mesh() const noexcept { return mesh_; }
  /// Tensor inputs of the op.
  [[nodiscard]] std::size_t num_inputs() const noexcept { return raw_.num_inputs(); }
  /// Outputs of the op.
  [[nodiscard]] std::size_t num_outputs() const noexcept { return raw_.num_outputs(); }
  /// Which unshardable input targets pass the shardability filter.
  [[nodiscard]] UnevenInputs uneven_inputs() const noexcept { return uneven_; }
  /// How placeholders are filled for the runtime inputs.
  [[nodiscard]] PlaceholderFill placeholder_fill() const noexcept { return fill_; }

  /// The rules after inserting the all-Replicate row and filling placeholders for these inputs
  /// (as `placeholder_fill()` says).
  [[nodiscard]] const RuleSet& filled_rules(std::span<const Spec> input_specs) { return fill(input_specs).table.rules(); }

  /// Visits every surviving candidate in DTensor's enumeration order (mesh dim 0 slowest) with its
  /// per-input costs; returns the filter counts. Throws ctshard::error when the number of inputs, an input's rank or
  /// a spec's mesh rank is wrong, or above max_enumerated_rows candidate rows.
  template <class Visitor>
  FilterCounts for_each(std::span<const TensorMeta> inputs, std::span<const Spec> input_specs, Visitor&& visit) {
    const SearchQuery query = query_of(inputs, input_specs);
    Fill& f = fill(input_specs);
    return for_each_row(f.table, f.memo, query, visit);
  }

  /// DTensor's choice for these inputs (see ChoiceAccumulator; search_choice for the search).
  /// `SelectAlgo::search` (default): exact for any mesh up to max_mesh_dims dims, allocation-free
  /// once warm, Choice::index left as Choice::unknown_index (index_of computes it); a query
  /// identical to the previous one on the same fill returns the remembered answer.
  /// `SelectAlgo::enumerate`: prices every row (throws above max_enumerated_rows); index set.
  /// Throws ctshard::error for a wrong number of inputs, an input of another rank than the rules give it, or a
  /// spec of the wrong mesh rank.
  [[nodiscard]] Choice choose(std::span<const TensorMeta> inputs, std::span<const Spec> input_specs, SelectAlgo algo = SelectAlgo::search) {
    const SearchQuery query = query_of(inputs, input_specs);
    Fill& f = fill(input_specs);
    Choice c;
    if (algo == SelectAlgo::enumerate) {
      c = enumeration_choice(f.table, f.memo, query);
    } else {
      f.memo.begin(query);
      if (f.has_choice && f.memo.same_inputs(f.choice_stamps)) return f.choice;
      c = search_choice(f.table, f.memo, query);
    }
    c.table = static_cast<std::uint32_t>(last_ + 1);
    c.enumerator = id_;
    if (algo == SelectAlgo::search) {
      f.choice = c;
      f.has_choice = true;
      f.memo.stamps(f.choice_stamps);  // sized at the first query: no allocation once warm
    }
    return c;
  }

  /// Position of a Choice's row among the surviving rows for these inputs (the `index` of
  /// `ctshard table`), counted without walking the table (survivor_index). nullopt when the op has
  /// a full-mesh filter and more than max_enumerated_rows rows come before it. Throws
  /// ctshard::error for a Choice from elsewhere or bad inputs.
  [[nodiscard]] std::optional<std::uint64_t> index_of(std::span<const TensorMeta> inputs, std::span<const Spec> input_specs, const Choice& choice) {
    const SearchQuery query = query_of(inputs, input_specs);
    Fill& f = fill_of(choice);
    return survivor_index(f.table, f.memo, query, choice.digits);
  }

  /// The first surviving row of minimum total for these inputs (first_minimum_choice: DTensor's
  /// `min(costs)` without its tie preferences; the `plain_min_index` row of `ctshard table`).
  [[nodiscard]] Choice first_minimum(std::span<const TensorMeta> inputs, std::span<const Spec> input_specs) {
    const SearchQuery query = query_of(inputs, input_specs);
    Fill& f = fill(input_specs);
    Choice c = first_minimum_choice(f.table, f.memo, query);
    c.table = static_cast<std::uint32_t>(last_ + 1);
    c.enumerator = id_;
    return c;
  }

  /// The filter counts of the whole table for these inputs without walking it (count_rows).
  [[nodiscard]] RowCounts count(std::span<const TensorMeta> inputs, std::span<const Spec> input_specs) {
    const SearchQuery query = query_of(inputs, input_specs);
    Fill& f = fill(input_specs);
    return count_rows(f.table, f.memo, query);
  }

  /// Spec of operand `operand` (outputs first) for a candidate's digits (a CandidateView inside a
  /// visit, or the digits of a Choice from the latest call). Throws ctshard::error before any call
  /// or for out-of-range digits / operand.
  [[nodiscard]] Spec spec_of(std::span<const std::uint8_t> digits, std::size_t operand) const {
    if (last_ >= fills_.size()) throw error("ctshard::StrategyEnumerator::spec_of: no table yet (call choose or for_each first)");
    return fills_[last_].table.decode(digits, operand);
  }

  /// Spec of operand `operand` (outputs first) of a Choice this enumerator returned, decoded with
  /// the table that produced it (placeholder fills differ between calls with different shard
  /// kinds). Throws ctshard::error for a Choice from elsewhere or a bad operand.
  [[nodiscard]] Spec spec_of(const Choice& choice, std::size_t operand) const {
    if (choice.enumerator != id_ || choice.table == 0 || choice.table > fills_.size())
      throw error("ctshard::StrategyEnumerator::spec_of: the Choice does not come from this enumerator");
    return fills_[choice.table - 1].table.decode(std::span<const std::uint8_t>(choice.digits.data(), mesh_.size()), operand);
  }

 private:
  /// The query of these inputs, after checking each input's rank against the rank the rules give
  /// it (when they give one: an einsum's labels, a rule's declared ranks). Throws ctshard::error
  /// naming the input, as SearchQuery::make does for counts and mesh ranks.
  [[nodiscard]] SearchQuery query_of(std::span<const TensorMeta> inputs, std::span<const Spec> input_specs) const {
    for (std::size_t k = 0; k < inputs.size() && k < num_inputs(); ++k)
      if (const int want = raw_.rank(num_outputs() + k); want >= 0 && static_cast<int>(inputs[k].shape.rank) != want)
        throw error("ctshard::StrategyEnumerator: input " + std::to_string(k) + " has rank " + std::to_string(inputs[k].shape.rank) +
                    " but the rules give it " + std::to_string(want) + " dims");
    return SearchQuery::make(inputs, input_specs, num_inputs(), mesh_);
  }

  /// A table per set of shard kinds, its memo, and the latest search answer with its input stamps.
  struct Fill {
    FilledTable table;
    CostMemo memo;
    bool has_choice = false;
    Choice choice{};
    std::vector<std::uint32_t> choice_stamps;
  };

  Fill& fill(std::span<const Spec> input_specs) {
    const ShardKinds kinds = shard_kinds_of(input_specs, fill_);
    for (std::size_t k = 0; k < fills_.size(); ++k)
      if (same_kinds(fills_[k].table.kinds(), kinds)) return fills_[last_ = k];
    FilledTable table(raw_, kinds, mesh_, uneven_, filter_);
    CostMemo memo(table);
    fills_.push_back(Fill{std::move(table), std::move(memo), false, Choice{}, {}});
    last_ = fills_.size() - 1;
    return fills_.back();
  }

  Fill& fill_of(const Choice& choice) {
    if (choice.enumerator != id_ || choice.table == 0 || choice.table > fills_.size())
      throw error("ctshard::StrategyEnumerator::index_of: the Choice does not come from this enumerator");
    return fills_[last_ = choice.table - 1];
  }

  RuleSet raw_;
  MeshTopology mesh_;
  UnevenInputs uneven_;
  FullMeshFilter filter_;
  PlaceholderFill fill_;
  std::vector<Fill> fills_;
  std::size_t last_ = static_cast<std::size_t>(-1);
  /// Stamped on every Choice it makes (a copy keeps it: its tables are the same).
  std::uint32_t id_ = next_id();

  static std::uint32_t next_id() noexcept {
    static std::atomic<std::uint32_t> next{0};
    std::uint32_t id = next.fetch_add(1, std::memory_order_relaxed) + 1;
    if (id == 0) id = next.fetch_add(1, std::memory_order_relaxed) + 1;  // (0 means "none"; after 2^32 enumerators)
    return id;
  }
};

}  // namespace ctshard
