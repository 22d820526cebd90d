#pragma once
/// \file select/enumerator.hpp
/// Run-time mesh expansion, filtering, pricing and choice for one op on one mesh — the full
/// enumeration baseline (DTensor `expand_to_full_mesh_op_strategy` + `_select_min_cost_strategy`).

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "ctshard/core/spec.hpp"
#include "ctshard/core/tensor_shape.hpp"
#include "ctshard/cost/mesh_topology.hpp"
#include "ctshard/cost/redistribute_cost.hpp"
#include "ctshard/rules/placeholder_fill.hpp"
#include "ctshard/rules/rule_set.hpp"
#include "ctshard/select/filters.hpp"
#include "ctshard/select/selection.hpp"

namespace ctshard {

/// How many candidate rows each filter removed.
struct FilterCounts {
  std::size_t mixed_partial = 0;  ///< a spec mixing Partial kinds other than sum+avg
  std::size_t unshardable = 0;    ///< an input spec `is_tensor_shardable` rejects
  std::size_t op_filter = 0;      ///< rejected by the op's full-mesh filter
};

/// An op-specific check of a whole full-mesh candidate (DTensor `full_mesh_strategy_filter`):
/// receives one spec per operand (outputs first, then inputs) and the input metas; false drops
/// the row. Example: mean needs the reduced dims evenly sharded.
using FullMeshFilter = std::function<bool(std::span<const Spec> operand_specs, std::span<const TensorMeta> inputs)>;

/// One surviving candidate: `digits[d]` is the filled-rule index used on mesh dim d.
struct CandidateView {
  std::size_t index = 0;  ///< position among surviving rows (enumeration order)
  std::span<const std::uint8_t> digits;
  std::span<const double> costs;  ///< per input, µs
  double total_us = 0;
  bool inputs_match = false;  ///< input specs equal the runtime input specs
};

/// Prepared enumeration of one op's strategies on one mesh. Construct once per (rules, mesh); call
/// `choose` or `for_each` per set of runtime inputs. Placeholder filling is cached per set of shard
/// kinds seen, and per-input costs are memoised per distinct input spec, so a warm `choose`
/// allocates nothing. Not thread-safe (it owns scratch space): use one per thread.
class StrategyEnumerator {
 public:
  /// `raw_rules`: the op's single-dim strategy (no all-Replicate row, placeholders allowed).
  /// `allow_uneven_sharding`: an input already at a candidate's placement counts as shardable
  /// (DTensor pointwise ops); einsum-family ops pass false.
  /// `filter` (optional): the op's full-mesh filter, applied after the two standard filters.
  StrategyEnumerator(RuleSet raw_rules, const MeshTopology& mesh, bool allow_uneven_sharding, FullMeshFilter filter = {})
      : raw_(with_replicate_row(raw_rules)), mesh_(mesh), allow_uneven_(allow_uneven_sharding), filter_(std::move(filter)) {
    if (raw_.num_inputs() > max_inputs) throw error("ctshard::StrategyEnumerator: more than 64 tensor inputs");
  }

  [[nodiscard]] const MeshTopology& mesh() const noexcept { return mesh_; }
  [[nodiscard]] std::size_t num_inputs() const noexcept { return raw_.num_inputs(); }
  [[nodiscard]] std::size_t num_outputs() const noexcept { return raw_.num_outputs(); }
  [[nodiscard]] bool allow_uneven_sharding() const noexcept { return allow_uneven_; }

  /// The rules after inserting the all-Replicate row and filling placeholders for these inputs.
  [[nodiscard]] const RuleSet& filled_rules(std::span<const Spec> input_specs) { return prepare(input_specs).rules; }

  /// Visits every surviving candidate in DTensor's enumeration order (mesh dim 0 slowest) with its
  /// per-input costs; returns the filter counts. Throws ctshard::error when the number of inputs or
  /// a spec's mesh rank is wrong.
  template <class Visitor>
  FilterCounts for_each(std::span<const TensorMeta> inputs, std::span<const Spec> input_specs, Visitor&& visit) {
    check(inputs, input_specs);
    Filled& f = prepare(input_specs);
    ++stamp_;
    const std::size_t n = mesh_.size(), width = f.rules.width(), nout = f.rules.num_outputs(), nin = f.rules.num_inputs();
    const std::size_t s = f.rules.size();
    std::array<std::uint8_t, max_mesh_dims> digits{};
    std::array<double, max_inputs> costs{};
    FilterCounts counts;
    std::size_t index = 0;
    while (true) {
      bool ok = true;
      for (std::size_t k = 0; k < width && ok; ++k) {
        unsigned mask = 0;
        for (std::size_t d = 0; d < n; ++d) mask |= f.partial_mask[digits[d] * width + k];
        ok = (mask & (mask - 1)) == 0 || mask == 3u;
      }
      if (!ok) {
        ++counts.mixed_partial;
      } else {
        double total = 0;
        bool match = true;
        for (std::size_t i = 0; i < nin && ok; ++i) {
          const Entry& e = entry(f, nout + i, digits.data(), inputs[i], input_specs[i]);
          ok = e.shardable;
          costs[i] = e.cost;
          total += e.cost;
          match = match && e.matches;
        }
        if (!ok) {
          ++counts.unshardable;
        } else if (filter_ && !passes_filter(digits.data(), inputs)) {
          ++counts.op_filter;
        } else {
          visit(CandidateView{index++, std::span<const std::uint8_t>(digits.data(), n), std::span<const double>(costs.data(), nin), total, match});
        }
      }
      std::size_t d = n;
      while (d-- > 0) {
        if (++digits[d] < s) break;
        digits[d] = 0;
      }
      if (d == static_cast<std::size_t>(-1)) break;
    }
    return counts;
  }

  /// DTensor's choice for these inputs (see ChoiceAccumulator). Allocation-free once warm.
  [[nodiscard]] Choice choose(std::span<const TensorMeta> inputs, std::span<const Spec> input_specs) {
    ChoiceAccumulator acc;
    (void)for_each(inputs, input_specs, [&](const CandidateView& c) { acc.offer(c.index, c.total_us, c.inputs_match); });
    return acc.choice();
  }

  /// Spec of operand `operand` (outputs first) for a candidate's digits, from the last prepared fill.
  [[nodiscard]] Spec spec_of(std::span<const std::uint8_t> digits, std::size_t operand) const {
    Spec spec;
    for (std::uint8_t r : digits) spec.push_back(last_->rules.at(r, operand));
    return spec;
  }

 private:
  struct Entry {
    std::uint32_t stamp = 0;
    bool shardable = false;
    bool matches = false;
    double cost = 0;
  };
  struct Filled {
    ShardKinds kinds;
    RuleSet rules;
    std::vector<unsigned> partial_mask;   // [rule * width + operand]: bit of the Partial reduce op
    std::vector<std::uint16_t> column_id;  // [rule * width + operand]: distinct-placement id in the column
    std::vector<std::size_t> distinct;     // per operand: number of distinct placements
    std::vector<std::vector<Entry>> memo;  // per input operand: distinct^N entries (empty if too many)
  };

  bool passes_filter(const std::uint8_t* digits, std::span<const TensorMeta> inputs) {
    operand_specs_.resize(last_->rules.width());
    for (std::size_t k = 0; k < operand_specs_.size(); ++k) operand_specs_[k] = spec_of(std::span<const std::uint8_t>(digits, mesh_.size()), k);
    return filter_(operand_specs_, inputs);
  }

  static constexpr std::size_t max_inputs = 64;
  static constexpr std::size_t max_memo_entries = std::size_t{1} << 16;

  void check(std::span<const TensorMeta> inputs, std::span<const Spec> input_specs) const {
    if (inputs.size() != raw_.num_inputs() || input_specs.size() != raw_.num_inputs())
      throw error("ctshard::StrategyEnumerator: the op takes " + std::to_string(raw_.num_inputs()) + " tensor inputs, got " +
                  std::to_string(inputs.size()) + " shapes and " + std::to_string(input_specs.size()) + " specs");
    for (const auto& spec : input_specs)
      if (spec.size() != mesh_.size())
        throw error("ctshard::StrategyEnumerator: input spec '" + to_string(spec) + "' has " + std::to_string(spec.size()) +
                    " placements for a " + std::to_string(mesh_.size()) + "-dim mesh");
  }

  Filled& prepare(std::span<const Spec> input_specs) {
    const ShardKinds kinds = shard_kinds_of(input_specs);
    for (auto& f : cache_)
      if (f.kinds.shard == kinds.shard && f.kinds.num_strided == kinds.num_strided && f.kinds.split_factors == kinds.split_factors)
        return *(last_ = &f);
    Filled f;
    f.kinds = kinds;
    f.rules = fill_placeholders(raw_, kinds);
    const std::size_t width = f.rules.width(), s = f.rules.size();
    if (s > 255) throw error("ctshard::StrategyEnumerator: more than 255 single-dim rules after placeholder filling");
    f.partial_mask.resize(s * width);
    f.column_id.resize(s * width);
    f.distinct.resize(width);
    for (std::size_t k = 0; k < width; ++k) {
      std::size_t distinct = 0;
      for (std::size_t r = 0; r < s; ++r) {
        const Placement& p = f.rules.at(r, k);
        f.partial_mask[r * width + k] =
            !p.is_partial() ? 0u : (p.reduce_op == ReduceOp::sum ? 1u : p.reduce_op == ReduceOp::avg ? 2u : p.reduce_op == ReduceOp::max ? 4u : 8u);
        std::size_t id = distinct;
        for (std::size_t q = 0; q < r; ++q)
          if (f.rules.at(q, k) == p) {
            id = f.column_id[q * width + k];
            break;
          }
        if (id == distinct) ++distinct;
        f.column_id[r * width + k] = static_cast<std::uint16_t>(id);
      }
      f.distinct[k] = distinct;
    }
    f.memo.resize(f.rules.num_inputs());
    for (std::size_t i = 0; i < f.rules.num_inputs(); ++i) {
      std::size_t entries = 1;
      for (std::size_t d = 0; d < mesh_.size() && entries <= max_memo_entries; ++d) entries *= f.distinct[f.rules.num_outputs() + i];
      if (entries <= max_memo_entries) f.memo[i].resize(entries);
    }
    cache_.push_back(std::move(f));
    return *(last_ = &cache_.back());
  }

  const Entry& entry(Filled& f, std::size_t operand, const std::uint8_t* digits, const TensorMeta& meta, const Spec& current) {
    const std::size_t width = f.rules.width(), n = mesh_.size();
    auto& memo = f.memo[operand - f.rules.num_outputs()];
    std::size_t key = 0;
    for (std::size_t d = 0; d < n; ++d) key = key * f.distinct[operand] + f.column_id[digits[d] * width + operand];
    Entry* e = memo.empty() ? &scratch_ : &memo[key];
    if (!memo.empty() && e->stamp == stamp_) return *e;
    Spec target;
    for (std::size_t d = 0; d < n; ++d) target.push_back(f.rules.at(digits[d], operand));
    e->stamp = stamp_;
    e->matches = target == current;
    e->shardable = is_tensor_shardable(meta.shape, target, mesh_) || (allow_uneven_ && e->matches);
    e->cost = e->shardable ? redistribute_cost(current, target, meta, mesh_) : 0.0;
    return *e;
  }

  RuleSet raw_;
  MeshTopology mesh_;
  bool allow_uneven_;
  FullMeshFilter filter_;
  std::vector<Spec> operand_specs_;
  std::vector<Filled> cache_;
  Filled* last_ = nullptr;
  Entry scratch_{};
  std::uint32_t stamp_ = 0;
};

}  // namespace ctshard
