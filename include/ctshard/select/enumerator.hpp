#pragma once
/// \file select/enumerator.hpp
/// Run-time mesh expansion, filtering, pricing and choice for one op on one mesh — the full
/// enumeration baseline (DTensor `expand_to_full_mesh_op_strategy` + `_select_min_cost_strategy`).

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <tuple>
#include <utility>
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
/// receives one spec per operand (outputs first, then inputs), the input metas and the mesh (as
/// DTensor's filter receives `mesh`); false drops the row. Example: mean needs the reduced dims
/// evenly sharded, which depends on the mesh dim sizes.
using FullMeshFilter =
    std::function<bool(std::span<const Spec> operand_specs, std::span<const TensorMeta> inputs, const MeshTopology& mesh)>;

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
  /// `uneven`: which unshardable input targets still pass (UnevenInputs: `reject` for the einsum
  /// family, `keep_current` for pointwise ops, as DTensor's `allow_uneven_sharding`).
  /// `filter` (optional): the op's full-mesh filter, applied after the two standard filters.
  StrategyEnumerator(RuleSet raw_rules, const MeshTopology& mesh, UnevenInputs uneven, FullMeshFilter filter = {})
      : raw_(with_replicate_row(raw_rules)), mesh_(mesh), uneven_(uneven), filter_(std::move(filter)), costs_(raw_.num_inputs()) {}

  /// The mesh this enumerator prices on.
  [[nodiscard]] const MeshTopology& mesh() const noexcept { return mesh_; }
  /// Tensor inputs of the op.
  [[nodiscard]] std::size_t num_inputs() const noexcept { return raw_.num_inputs(); }
  /// Outputs of the op.
  [[nodiscard]] std::size_t num_outputs() const noexcept { return raw_.num_outputs(); }
  /// Which unshardable input targets pass the shardability filter.
  [[nodiscard]] UnevenInputs uneven_inputs() const noexcept { return uneven_; }

  /// The rules after inserting the all-Replicate row and filling placeholders for these inputs.
  [[nodiscard]] const RuleSet& filled_rules(std::span<const Spec> input_specs) { return prepare(input_specs).rules; }

  /// Visits every surviving candidate in DTensor's enumeration order (mesh dim 0 slowest) with its
  /// per-input costs; returns the filter counts. Throws ctshard::error when the number of inputs or
  /// a spec's mesh rank is wrong.
  template <class Visitor>
  FilterCounts for_each(std::span<const TensorMeta> inputs, std::span<const Spec> input_specs, Visitor&& visit) {
    Filled& f = begin_call(inputs, input_specs);
    return walk(f, inputs, input_specs, true, nullptr, visit);
  }

  /// DTensor's choice for these inputs (see ChoiceAccumulator), allocation-free once warm.
  /// Fast path (DTensor's `try_propagate`): when the runtime input specs match some rule on every
  /// mesh dim, the last valid such row is the no-redistribute choice and no cost is computed;
  /// otherwise rows are visited in enumeration order by a depth-first search over mesh dims that
  /// skips every subtree whose lower bound (a collective's fixed latency on each mesh dim where an
  /// input must change) already reaches the best total found, which keeps DTensor's choice (the
  /// first row of minimum total) exact. Per-input costs are memoised per distinct target spec and
  /// kept across calls while that input's spec and meta are unchanged.
  /// A query identical to the previous one (same fill, input specs and metas) returns the
  /// remembered answer.
  [[nodiscard]] Choice choose(std::span<const TensorMeta> inputs, std::span<const Spec> input_specs) {
    Filled& f = begin_call(inputs, input_specs);
    if (f.has_choice && f.choice_stamps == f.input_stamp) return f.choice;
    if (auto fast = matching_choice(f, inputs, input_specs)) {
      f.choice = *fast;
    } else {
      f.choice = bounded_choice(f, inputs, input_specs);
    }
    f.choice.table = static_cast<std::uint32_t>(&f - cache_.data()) + 1;
    f.has_choice = true;
    f.choice_stamps = f.input_stamp;
    return f.choice;
  }

  /// Spec of operand `operand` (outputs first) for a candidate's digits (a CandidateView inside a
  /// visit, or the digits of a Choice from the latest call). Throws ctshard::error before any call
  /// or for out-of-range digits / operand.
  [[nodiscard]] Spec spec_of(std::span<const std::uint8_t> digits, std::size_t operand) const {
    if (last_ == nullptr) throw error("ctshard::StrategyEnumerator::spec_of: no table yet (call choose or for_each first)");
    return decode(*last_, digits, operand);
  }

  /// Spec of operand `operand` (outputs first) of a Choice this enumerator returned, decoded with
  /// the table that produced it (placeholder fills differ between calls with different shard
  /// kinds). Throws ctshard::error for a Choice from elsewhere or a bad operand.
  [[nodiscard]] Spec spec_of(const Choice& choice, std::size_t operand) const {
    if (choice.table == 0 || choice.table > cache_.size())
      throw error("ctshard::StrategyEnumerator::spec_of: the Choice does not come from this enumerator");
    return decode(cache_[choice.table - 1], std::span<const std::uint8_t>(choice.digits.data(), mesh_.size()), operand);
  }

 private:
  // Memo of one input's target spec: shardability depends only on the input's meta, the cost on
  // its meta and current spec; each is valid while its stamp equals the input's current stamp.
  struct Entry {
    std::uint32_t shard_stamp = 0;
    std::uint32_t cost_stamp = 0;
    bool shardable = false;  // is_tensor_shardable of the target (before the uneven bypass)
    double cost = 0;
  };
  // What a row needs to know about one input.
  struct Probe {
    bool shardable = false;
    bool matches = false;
    double cost = 0;
  };
  struct Filled {
    ShardKinds kinds;
    RuleSet rules;
    std::vector<unsigned> partial_mask;    // [rule * width + operand]: bit of the Partial reduce op
    std::vector<std::uint32_t> column_id;  // [rule * width + operand]: distinct-placement id in the column
    std::vector<std::uint32_t> distinct;   // per operand: number of distinct placements
    std::vector<std::vector<Entry>> memo;  // per input: distinct^N entries (empty if too many)
    std::vector<std::uint32_t> input_stamp;  // per input: changes with its spec or meta
    std::vector<std::uint32_t> meta_stamp;   // per input: changes with its meta
    std::vector<std::uint64_t> current_key;  // per input: memo key of its current spec (none: ~0)
    std::vector<Spec> last_spec;
    std::vector<TensorMeta> last_meta;
    std::vector<unsigned> prefix_mask;     // [(depth) * width + operand]
    std::vector<std::uint64_t> prefix_key; // [(depth) * inputs + input]
    std::vector<std::uint8_t> matching;    // [mesh dim * rules + j]: rules matching the runtime inputs
    std::vector<std::uint32_t> survivor_prefix;  // see survivor_prefix()
    std::vector<double> lower_bound;             // [mesh dim * rules + rule], see bounded_choice()
    std::vector<std::uint32_t> survivor_stamps;
    bool has_choice = false;               // the last choose() answer and the input stamps it saw
    Choice choice{};
    std::vector<std::uint32_t> choice_stamps;
  };

  Spec decode(const Filled& f, std::span<const std::uint8_t> digits, std::size_t operand) const {
    if (operand >= f.rules.width() || digits.size() != mesh_.size())
      throw error("ctshard::StrategyEnumerator::spec_of: operand " + std::to_string(operand) + " or digits out of range");
    Spec spec;
    for (std::uint8_t r : digits) {
      if (r >= f.rules.size()) throw error("ctshard::StrategyEnumerator::spec_of: rule index " + std::to_string(r) + " out of range");
      spec.push_back(f.rules.cell(r, operand));
    }
    return spec;
  }


  /// Largest table (rows) a call enumerates; bigger ones raise ctshard::error up front.
  static constexpr std::size_t max_enumerated_rows = std::size_t{1} << 20;
  static constexpr std::size_t max_memo_entries = std::size_t{1} << 16;

  void check(std::span<const TensorMeta> inputs, std::span<const Spec> input_specs) const {
    if (inputs.size() != raw_.num_inputs() || input_specs.size() != raw_.num_inputs())
      throw error("ctshard::StrategyEnumerator: the op takes " + std::to_string(raw_.num_inputs()) + " tensor inputs, got " +
                  std::to_string(inputs.size()) + " shapes and " + std::to_string(input_specs.size()) + " specs");
    for (std::size_t i = 0; i < input_specs.size(); ++i) {
      const Spec& spec = input_specs[i];
      if (spec.size() != mesh_.size())
        throw error("ctshard::StrategyEnumerator: input spec '" + to_string(spec) + "' has " + std::to_string(spec.size()) +
                    " placements for a " + std::to_string(mesh_.size()) + "-dim mesh");
      for (const Placement& pl : spec)
        if (pl.is_any_shard() && pl.dim >= inputs[i].shape.rank)  // the message is built only on failure
          check_shard_dims(spec, inputs[i].shape, "ctshard::StrategyEnumerator: input " + std::to_string(i));
    }
  }

  /// Validates, prepares the fill for these inputs, and invalidates memo entries of inputs whose
  /// spec or meta changed since the last call.
  Filled& begin_call(std::span<const TensorMeta> inputs, std::span<const Spec> input_specs) {
    check(inputs, input_specs);
    Filled& f = prepare(input_specs);
    const std::size_t n = mesh_.size(), width = f.rules.width(), nout = f.rules.num_outputs();
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      const bool meta_changed = f.input_stamp[i] == 0 || !(f.last_meta[i] == inputs[i]);
      if (meta_changed) f.meta_stamp[i] = ++stamp_;
      if (meta_changed || !(f.last_spec[i] == input_specs[i])) {
        f.input_stamp[i] = ++stamp_;
        f.last_spec[i] = input_specs[i];
        f.last_meta[i] = inputs[i];
        // the current spec's memo key: its placements' ids in the input's column, if all occur
        std::uint64_t key = 0;
        for (std::size_t d = 0; d < n && key != ~std::uint64_t{0}; ++d) {
          std::uint64_t id = ~std::uint64_t{0};
          for (std::size_t r = 0; r < f.rules.size() && id == ~std::uint64_t{0}; ++r)
            if (f.rules.cell(r, nout + i) == input_specs[i][d]) id = f.column_id[r * width + nout + i];
          key = id == ~std::uint64_t{0} ? id : key * f.distinct[nout + i] + id;
        }
        f.current_key[i] = key;
      }
    }
    return f;
  }

  Filled& prepare(std::span<const Spec> input_specs) {
    const ShardKinds kinds = shard_kinds_of(input_specs);
    for (auto& f : cache_)
      if (f.kinds.shard == kinds.shard && f.kinds.num_strided == kinds.num_strided && f.kinds.split_factors == kinds.split_factors)
        return *(last_ = &f);
    Filled f;
    f.kinds = kinds;
    f.rules = fill_placeholders(raw_, kinds);
    const std::size_t width = f.rules.width(), s = f.rules.size(), nin = f.rules.num_inputs(), n = mesh_.size();
    if (s > 255) throw error("ctshard::StrategyEnumerator: more than 255 single-dim rules after placeholder filling");
    std::size_t rows = 1;
    for (std::size_t d = 0; d < n && rows <= max_enumerated_rows; ++d) rows *= s;
    if (rows > max_enumerated_rows)
      throw error("ctshard::StrategyEnumerator: " + std::to_string(s) + " rules on a " + std::to_string(n) + "-dim mesh make " +
                  std::to_string(s) + "^" + std::to_string(n) + " candidate rows, above the enumeration limit of " +
                  std::to_string(max_enumerated_rows) + "; use a mesh with fewer dims");
    f.partial_mask.resize(s * width);
    f.column_id.resize(s * width);
    f.distinct.resize(width);
    for (std::size_t k = 0; k < width; ++k) {
      std::uint32_t distinct = 0;
      for (std::size_t r = 0; r < s; ++r) {
        const Placement& p = f.rules.cell(r, k);
        f.partial_mask[r * width + k] = p.is_partial() ? 1u << static_cast<unsigned>(p.reduce_op) : 0u;
        std::uint32_t id = distinct;
        for (std::size_t q = 0; q < r; ++q)
          if (f.rules.cell(q, k) == p) {
            id = f.column_id[q * width + k];
            break;
          }
        if (id == distinct) ++distinct;
        f.column_id[r * width + k] = id;
      }
      f.distinct[k] = distinct;
    }
    f.memo.resize(nin);
    for (std::size_t i = 0; i < nin; ++i) {
      std::size_t entries = 1;
      for (std::size_t d = 0; d < n && entries <= max_memo_entries; ++d) entries *= f.distinct[f.rules.num_outputs() + i];
      if (entries <= max_memo_entries) f.memo[i].resize(entries);
    }
    f.input_stamp.assign(nin, 0);
    f.meta_stamp.assign(nin, 0);
    f.current_key.assign(nin, ~std::uint64_t{0});
    f.last_spec.assign(nin, Spec{});
    f.last_meta.assign(nin, TensorMeta{});
    f.prefix_mask.assign((n + 1) * width, 0);
    f.prefix_key.assign((n + 1) * nin, 0);
    f.matching.assign(n * s, 0);
    cache_.push_back(std::move(f));
    return *(last_ = &cache_.back());
  }

  /// Computes prefix state of depth d + 1 from depth d and digits[d].
  static void extend(Filled& f, const std::uint8_t* digits, std::size_t d) noexcept {
    const std::size_t width = f.rules.width(), nin = f.rules.num_inputs(), nout = f.rules.num_outputs();
    const std::size_t r = digits[d];
    for (std::size_t k = 0; k < width; ++k) f.prefix_mask[(d + 1) * width + k] = f.prefix_mask[d * width + k] | f.partial_mask[r * width + k];
    for (std::size_t i = 0; i < nin; ++i)
      f.prefix_key[(d + 1) * nin + i] = f.prefix_key[d * nin + i] * f.distinct[nout + i] + f.column_id[r * width + nout + i];
  }

  /// Steps `digits` to the next row in enumeration order (last mesh dim fastest) and updates the
  /// prefix state of the dims that changed; false (digits back to all zero) after the last row.
  static bool advance(Filled& f, std::array<std::uint8_t, max_mesh_dims>& digits) noexcept {
    const std::size_t n = f.prefix_mask.size() / f.rules.width() - 1, s = f.rules.size();
    std::size_t d = n;
    while (d-- > 0) {
      if (++digits[d] < s) break;
      digits[d] = 0;
    }
    if (d == static_cast<std::size_t>(-1)) return false;
    for (std::size_t e = d; e < n; ++e) extend(f, digits.data(), e);
    return true;
  }

  /// Input `i` for the row `digits` (memo key from the prefix state): shardability (with the
  /// uneven bypass), whether it equals the current spec, and the cost when `with_cost`.
  Probe probe(Filled& f, std::size_t i, const std::uint8_t* digits, const TensorMeta& meta, const Spec& current, bool with_cost) {
    const std::size_t n = mesh_.size(), nout = f.rules.num_outputs();
    auto& memo = f.memo[i];
    const std::uint64_t key = f.prefix_key[n * f.rules.num_inputs() + i];
    Entry* e = memo.empty() ? &scratch_ : &memo[static_cast<std::size_t>(key)];
    if (memo.empty()) e->shard_stamp = e->cost_stamp = 0;
    Probe p;
    p.matches = memo.empty() ? spec_equals(f, i, digits, current) : key == f.current_key[i];
    Spec target;
    const auto build_target = [&] {
      if (target.size() == 0)
        for (std::size_t d = 0; d < n; ++d) target.push_back(f.rules.cell(digits[d], nout + i));
    };
    if (e->shard_stamp != f.meta_stamp[i]) {
      build_target();
      e->shard_stamp = f.meta_stamp[i];
      e->shardable = is_tensor_shardable(meta.shape, target, mesh_);
    }
    p.shardable = e->shardable || (uneven_ != UnevenInputs::reject && p.matches);
    if (!p.shardable && uneven_ == UnevenInputs::keep_existing_shards) {
      build_target();
      p.shardable = keeps_existing_shards(meta.shape, target, current, mesh_);
    }
    if (with_cost && p.shardable) {
      if (e->cost_stamp != f.input_stamp[i]) {
        build_target();
        e->cost_stamp = f.input_stamp[i];
        e->cost = redistribute_cost(current, target, meta, mesh_);
      }
      p.cost = e->cost;
    }
    return p;
  }

  bool spec_equals(const Filled& f, std::size_t i, const std::uint8_t* digits, const Spec& current) const noexcept {
    for (std::size_t d = 0; d < mesh_.size(); ++d)
      if (!(f.rules.cell(digits[d], f.rules.num_outputs() + i) == current[d])) return false;
    return true;
  }

  /// Walks rows in enumeration order; `stop` (optional) ends the walk before that row.
  template <class Visitor>
  FilterCounts walk(Filled& f, std::span<const TensorMeta> inputs, std::span<const Spec> input_specs, bool with_costs,
                    const std::uint8_t* stop, Visitor&& visit) {
    const std::size_t n = mesh_.size(), width = f.rules.width(), nin = f.rules.num_inputs();
    std::array<std::uint8_t, max_mesh_dims> digits{};
    for (std::size_t d = 0; d < n; ++d) extend(f, digits.data(), d);
    FilterCounts counts;
    std::size_t index = 0;
    while (true) {
      if (stop != nullptr && std::equal(digits.begin(), digits.begin() + static_cast<std::ptrdiff_t>(n), stop)) break;
      bool ok = true;
      const unsigned* mask = &f.prefix_mask[n * width];
      for (std::size_t k = 0; k < width && ok; ++k) ok = (mask[k] & (mask[k] - 1)) == 0 || mask[k] == 3u;
      if (!ok) {
        ++counts.mixed_partial;
      } else {
        double total = 0;
        bool match = true;
        for (std::size_t i = 0; i < nin && ok; ++i) {
          const Probe p = probe(f, i, digits.data(), inputs[i], input_specs[i], with_costs);
          ok = p.shardable;
          costs_[i] = p.cost;
          total += p.cost;
          match = match && p.matches;
        }
        if (!ok) {
          ++counts.unshardable;
        } else if (filter_ && !passes_filter(digits.data(), inputs)) {
          ++counts.op_filter;
        } else {
          visit(CandidateView{index++, std::span<const std::uint8_t>(digits.data(), n), std::span<const double>(costs_.data(), nin), total, match});
        }
      }
      if (!advance(f, digits)) break;
    }
    return counts;
  }

  /// DTensor's no-redistribute choice without pricing: the last valid row whose input placements
  /// equal the runtime ones on every mesh dim; empty when there is none.
  std::optional<Choice> matching_choice(Filled& f, std::span<const TensorMeta> inputs, std::span<const Spec> input_specs) {
    const std::size_t n = mesh_.size(), s = f.rules.size(), nout = f.rules.num_outputs(), nin = f.rules.num_inputs();
    std::array<std::size_t, max_mesh_dims> count{};
    for (std::size_t d = 0; d < n; ++d) {
      for (std::size_t r = 0; r < s; ++r) {
        bool all = true;
        for (std::size_t i = 0; i < nin && all; ++i) all = f.rules.cell(r, nout + i) == input_specs[i][d];
        if (all) f.matching[d * s + count[d]++] = static_cast<std::uint8_t>(r);
      }
      if (count[d] == 0) return std::nullopt;
    }
    // product of the matching rules, last row first
    std::array<std::size_t, max_mesh_dims> pick{};
    for (std::size_t d = 0; d < n; ++d) pick[d] = count[d] - 1;
    std::array<std::uint8_t, max_mesh_dims> digits{};
    while (true) {
      for (std::size_t d = 0; d < n; ++d) digits[d] = f.matching[d * s + pick[d]];
      for (std::size_t d = 0; d < n; ++d) extend(f, digits.data(), d);
      if (row_survives(f, digits.data(), inputs, input_specs)) break;
      std::size_t d = n;
      while (d-- > 0) {
        if (pick[d]-- > 0) break;
        pick[d] = count[d] - 1;
      }
      if (d == static_cast<std::size_t>(-1)) return std::nullopt;
    }
    Choice c;
    c.rule = ChoiceRule::no_redistribute;
    c.digits = digits;
    // its position among surviving rows (no pricing); the total only matters for the first row
    const bool first_row = std::all_of(digits.begin(), digits.begin() + static_cast<std::ptrdiff_t>(n), [](std::uint8_t r) { return r == 0; });
    std::size_t total = 0;
    std::tie(c.index, total) = survivor_position(f, inputs, input_specs, digits.data(), first_row);
    // the all-Replicate row (index 0) is "only" when nothing else survives
    if (c.index == 0 && total == 1) c.rule = ChoiceRule::only;
    return c;
  }

  /// (surviving rows before `digits`, surviving rows in all — counted up to 2 only, since callers
  /// only ask whether a single row survives). Without the uneven bypass, which rows survive
  /// depends only on the input metas and the mesh, not on the current specs, so a prefix count
  /// cached per metas answers both; otherwise rows are walked (the total only when `need_total`,
  /// else 0).
  std::pair<std::size_t, std::size_t> survivor_position(Filled& f, std::span<const TensorMeta> inputs, std::span<const Spec> input_specs,
                                                        const std::uint8_t* digits, bool need_total) {
    if (uneven_ == UnevenInputs::reject) {
      const auto& prefix = survivor_prefix(f, inputs, input_specs);
      std::size_t row = 0;
      for (std::size_t d = 0; d < mesh_.size(); ++d) row = row * f.rules.size() + digits[d];
      return {prefix[row], prefix.back()};
    }
    const std::size_t index = count_survivors(f, inputs, input_specs, digits);
    const std::size_t total = need_total ? count_survivors(f, inputs, input_specs, nullptr, 2) : 0;
    return {index, total};
  }

  /// prefix[i]: surviving rows before row i (mixed-radix index), prefix.back(): all survivors.
  /// Recomputed when an input's meta changes. Only for ops without the uneven bypass.
  const std::vector<std::uint32_t>& survivor_prefix(Filled& f, std::span<const TensorMeta> inputs, std::span<const Spec> input_specs) {
    if (!f.survivor_prefix.empty() && f.survivor_stamps == f.meta_stamp) return f.survivor_prefix;
    const std::size_t n = mesh_.size(), s = f.rules.size();
    std::size_t rows = 1;
    for (std::size_t d = 0; d < n; ++d) rows *= s;
    f.survivor_prefix.assign(rows + 1, 0);
    std::array<std::uint8_t, max_mesh_dims> digits{};
    for (std::size_t d = 0; d < n; ++d) extend(f, digits.data(), d);
    for (std::size_t row = 0; row < rows; ++row) {
      f.survivor_prefix[row + 1] = f.survivor_prefix[row] + (row_survives(f, digits.data(), inputs, input_specs) ? 1u : 0u);
      if (!advance(f, digits)) break;
    }
    f.survivor_stamps = f.meta_stamp;
    return f.survivor_prefix;
  }

  /// Lower bound (µs) of the redistribute cost contributed by one mesh dim `d` moving `from` ->
  /// `to`: 0 when equal or from Replicate (or, under the consistent model, on a size-1 mesh dim);
  /// under DTensor's model +inf when the greedy planner's first step there is impossible
  /// (Shard -> Partial, Partial -> other Partial); else the fixed part of the collective the
  /// dim needs at least (base latency + hops · latency; byte terms are >= 0).
  double dim_lower_bound(std::size_t d, const Placement& from, const Placement& to) const noexcept {
    if (from == to || from.is_replicate()) return 0.0;
    const bool consistent = mesh_.cost_model == CostModel::consistent;
    if (consistent && mesh_.sizes[d] == 1) return 0.0;  // no data moves on a size-1 mesh dim
    const double hops = static_cast<double>(mesh_.sizes[d] - 1), base = mesh_.link.base_latency_us, lat = mesh_.latency_us[d];
    if (to.is_partial() && !consistent) return infinite_cost;  // S -> P, or P -> P(other op)
    if (to.is_partial()) return from.is_partial() ? base + 2 * hops * lat : base + hops * lat;  // through Replicate
    if (from.is_partial() && to.is_replicate()) return base + 2 * hops * lat;
    return base + hops * lat;  // all-gather, all-to-all, reduce-scatter
  }

  /// DTensor's choice when no row matches the inputs: the first surviving row of minimum total
  /// (zero_cost when that total is 0; only when a single row survives), found by depth-first
  /// search in enumeration order with lower-bound pruning.
  Choice bounded_choice(Filled& f, std::span<const TensorMeta> inputs, std::span<const Spec> input_specs) {
    const std::size_t n = mesh_.size(), s = f.rules.size(), nin = f.rules.num_inputs(), nout = f.rules.num_outputs();
    // lower bound per (mesh dim, rule): sum over inputs of the dim's bound
    f.lower_bound.assign(n * s, 0.0);
    for (std::size_t d = 0; d < n; ++d)
      for (std::size_t r = 0; r < s; ++r)
        for (std::size_t i = 0; i < nin; ++i)
          f.lower_bound[d * s + r] += current_is_replicated(input_specs[i]) ? 0.0 : dim_lower_bound(d, input_specs[i][d], f.rules.cell(r, nout + i));
    // suffix minima let a prefix bound include the cheapest completion
    std::array<double, max_mesh_dims + 1> rest{};
    for (std::size_t d = n; d-- > 0;) {
      double m = infinite_cost;
      for (std::size_t r = 0; r < s; ++r) m = std::min(m, f.lower_bound[d * s + r]);
      rest[d] = rest[d + 1] + m;
    }
    std::array<std::uint8_t, max_mesh_dims> digits{}, best{};
    std::array<double, max_mesh_dims + 1> bound{};
    double best_total = infinite_cost;
    bool found = false;
    std::size_t depth = 0;
    while (true) {
      if (digits[depth] < s) {
        bound[depth + 1] = bound[depth] + f.lower_bound[depth * s + digits[depth]];
        if (!found || bound[depth + 1] + rest[depth + 1] < best_total) {
          extend(f, digits.data(), depth);
          if (depth + 1 < n) {
            digits[++depth] = 0;  // descend
            continue;
          }
          if (row_survives(f, digits.data(), inputs, input_specs)) {
            double total = 0;
            for (std::size_t i = 0; i < nin; ++i) total += probe(f, i, digits.data(), inputs[i], input_specs[i], true).cost;
            if (!found || total < best_total) {
              found = true;
              best_total = total;
              best = digits;
            }
          }
        }
        ++digits[depth];  // next sibling
        continue;
      }
      if (depth == 0) break;  // every subtree visited or pruned
      ++digits[--depth];
    }
    Choice c;
    c.digits = best;
    c.total_us = best_total;
    for (std::size_t d = 0; d < n; ++d) extend(f, best.data(), d);
    std::size_t total_survivors = 0;
    std::tie(c.index, total_survivors) = survivor_position(f, inputs, input_specs, best.data(), true);
    c.rule = total_survivors == 1 ? ChoiceRule::only : best_total == 0 ? ChoiceRule::zero_cost : ChoiceRule::min_cost;
    return c;
  }

  static bool current_is_replicated(const Spec& s) noexcept { return s.is_replicated(); }

  /// Surviving rows strictly before `stop` in enumeration order (filters only, no pricing); with no
  /// `stop`, all surviving rows. Counting ends early once `limit` survivors are seen.
  std::size_t count_survivors(Filled& f, std::span<const TensorMeta> inputs, std::span<const Spec> input_specs, const std::uint8_t* stop,
                              std::size_t limit = static_cast<std::size_t>(-1)) {
    const std::size_t n = mesh_.size();
    std::array<std::uint8_t, max_mesh_dims> digits{};
    for (std::size_t d = 0; d < n; ++d) extend(f, digits.data(), d);
    std::size_t survivors = 0;
    while (survivors < limit && (stop == nullptr || !std::equal(digits.begin(), digits.begin() + static_cast<std::ptrdiff_t>(n), stop))) {
      survivors += row_survives(f, digits.data(), inputs, input_specs) ? 1 : 0;
      if (!advance(f, digits)) break;
    }
    return survivors;
  }

  bool row_survives(Filled& f, const std::uint8_t* digits, std::span<const TensorMeta> inputs, std::span<const Spec> input_specs) {
    const std::size_t n = mesh_.size(), width = f.rules.width();
    const unsigned* mask = &f.prefix_mask[n * width];
    for (std::size_t k = 0; k < width; ++k)
      if ((mask[k] & (mask[k] - 1)) != 0 && mask[k] != 3u) return false;
    for (std::size_t i = 0; i < f.rules.num_inputs(); ++i)
      if (!probe(f, i, digits, inputs[i], input_specs[i], false).shardable) return false;
    return !filter_ || passes_filter(digits, inputs);
  }

  bool passes_filter(const std::uint8_t* digits, std::span<const TensorMeta> inputs) {
    operand_specs_.resize(last_->rules.width());
    for (std::size_t k = 0; k < operand_specs_.size(); ++k) operand_specs_[k] = spec_of(std::span<const std::uint8_t>(digits, mesh_.size()), k);
    return filter_(operand_specs_, inputs, mesh_);
  }

  RuleSet raw_;
  MeshTopology mesh_;
  UnevenInputs uneven_;
  FullMeshFilter filter_;
  std::vector<Spec> operand_specs_;
  std::vector<double> costs_;  // per input, the row being visited (any number of inputs)
  std::vector<Filled> cache_;
  Filled* last_ = nullptr;
  Entry scratch_{};
  std::uint32_t stamp_ = 0;
};

}  // namespace ctshard
