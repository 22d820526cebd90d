#pragma once
/// \file rules/placeholder_fill.hpp
/// Filling `ShardingPlaceholder(d)` with the shard kinds the runtime inputs actually use
/// (DTensor `_fill_single_dim_strategy_placeholders`).

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "ctshard/core/spec.hpp"
#include "ctshard/rules/rule_set.hpp"
#include "ctshard/rules/shard_regroup.hpp"

namespace ctshard {

/// The shard kinds seen in the inputs, in fill order: plain `Shard` first (when any input has
/// one), then each distinct StridedShard split factor in order of first appearance (inputs in
/// order, mesh dim 0 first). DTensor iterates a Python set here; this order is the reference
/// cases' and is deterministic.
struct ShardKinds {
  bool shard = false;
  std::array<std::uint16_t, 2 * max_mesh_dims> split_factors{};
  std::uint8_t num_strided = 0;

  [[nodiscard]] constexpr std::size_t size() const noexcept { return (shard ? 1u : 0u) + num_strided; }
  /// The placement that kind `k` builds for tensor dim `dim`.
  [[nodiscard]] constexpr Placement build(std::size_t k, int dim) const {
    if (shard) {
      if (k == 0) return Shard(dim);
      --k;
    }
    return StridedShard(dim, split_factors[k]);
  }
  /// Records the kind of `p` (non-shard placements are ignored). At most 2 * max_mesh_dims distinct
  /// split factors are kept; that is more than any set of specs on one op can hold.
  constexpr void add(const Placement& p) noexcept {
    if (p.is_shard()) shard = true;
    if (!p.is_strided_shard()) return;
    for (std::size_t i = 0; i < num_strided; ++i)
      if (split_factors[i] == p.split_factor) return;
    if (num_strided < split_factors.size()) split_factors[num_strided++] = p.split_factor;
  }
};

/// Shard kinds used by the runtime input specs (DTensor's fill: PlaceholderFill::dtensor).
[[nodiscard]] constexpr ShardKinds shard_kinds_of(std::span<const Spec> inputs) noexcept {
  ShardKinds kinds;
  for (const auto& spec : inputs)
    for (const auto& p : spec) kinds.add(p);
  return kinds;
}

/// Which shard kinds an op's placeholder rows are filled with for its runtime inputs: a
/// rules-level value each rule carries (`OpRule::placeholder_fill`), read by the enumerator.
enum class PlaceholderFill : unsigned char {
  /// DTensor `_fill_single_dim_strategy_placeholders`: the kinds the inputs use (shard_kinds_of);
  /// with no sharded input the placeholder rows vanish, so an input that is only Partial can reach
  /// no sharded row and is reduced to Replicate (all-reduce).
  dtensor,
  /// ctshard: the kinds the inputs use, plus plain `Shard` whenever an input holds a Partial — a
  /// pending reduction can be reduce-scattered into any `Shard(d)`, so those rows are reachable
  /// (sort of a `P(sum)` `[1024, 2048]` along dim 1 on 8 ranks: `S(0)` by reduce-scatter, 88.7 µs,
  /// instead of `R` by all-reduce, 170.9 µs). Sound for every rule: a placeholder row holds for
  /// every shard kind, and plain `Shard` is the kind compile-time tables and the simulated mesh use.
  /// With only Replicate inputs nothing is added (every filled row would cost 0 and lose DTensor's
  /// tie rule to the all-Replicate row, which matches the inputs).
  shard_from_partial,
};

/// Name of a PlaceholderFill ("dtensor", "shard_from_partial").
[[nodiscard]] constexpr std::string_view to_string(PlaceholderFill fill) noexcept {
  return fill == PlaceholderFill::dtensor ? "dtensor" : "shard_from_partial";
}

/// Shard kinds to fill placeholders with for these runtime input specs under `fill`.
[[nodiscard]] constexpr ShardKinds shard_kinds_of(std::span<const Spec> inputs, PlaceholderFill fill) noexcept {
  ShardKinds kinds = shard_kinds_of(inputs);
  if (fill == PlaceholderFill::shard_from_partial)
    for (const auto& spec : inputs)
      for (const auto& p : spec) kinds.shard = kinds.shard || p.is_partial();
  return kinds;
}

/// Only plain Shard: the kinds to fill compile-time tables with.
inline constexpr ShardKinds plain_shard_kinds{true, {}, 0};

namespace detail {
/// The placements of a regrouped row's cells when its source column holds `source` (a Shard or a
/// StridedShard of the source column's dim) and the shard lands on output-run shard `to`: the
/// source cell becomes `source`, every other placeholder `to` on the output run. False when no
/// placement expresses `to` (a split factor above 65535, or a dim below 0: a run that starts
/// before dim 0 has virtual leading dims, such as a collective's program ranks, and a shard landing
/// there is no placement of the tensor).
constexpr bool fill_regrouped_row(std::span<const Placement> src, const ShardRegroup& g, const Placement& source, RunShard to,
                                  std::span<Placement> row) {
  if (to.split_factor > 65535) return false;
  const int dim = g.output_first + static_cast<int>(to.dim);
  if (dim < 0) return false;
  const Placement derived = to.split_factor == 1 ? Shard(dim) : StridedShard(dim, static_cast<int>(to.split_factor));
  for (std::size_t i = 0; i < src.size(); ++i) row[i] = i == g.source ? source : src[i].is_placeholder() ? derived : src[i];
  return true;
}

/// `fill_placeholders` with the output-run shards of a regrouped row's source shard given by
/// `targets(regroup, from, emit)`, which calls `emit(RunShard)` once per placement to list (in
/// order); every other row as `fill_placeholders` fills it.
template <class Targets>
constexpr RuleSet fill_placeholders_by(const RuleSet& rules, const ShardKinds& kinds, Targets&& targets) {
  RuleSet out(rules.num_outputs(), rules.num_inputs());
  out.reserve(rules.size() * (kinds.size() > 1 ? kinds.size() : 1));
  for (std::size_t k = 0; k < rules.width(); ++k) out.set_rank(k, rules.rank(k));
  std::vector<Placement> row(rules.width());
  for (std::size_t r = 0; r < rules.size(); ++r) {
    const auto src = rules.row(r);
    bool placeholder = false;
    for (const auto& p : src) placeholder = placeholder || p.is_placeholder();
    if (!placeholder) {
      out.add(src);
      continue;
    }
    const ShardRegroup* regroup = rules.regroup(r);
    for (std::size_t k = 0; k < kinds.size(); ++k) {
      if (regroup != nullptr) {
        const Placement source = kinds.build(k, src[regroup->source].dim);
        const RunShard from{static_cast<std::size_t>(source.dim - regroup->input_first), source.is_strided_shard() ? source.split_factor : 1};
        targets(*regroup, from, [&](RunShard to) {
          if (fill_regrouped_row(src, *regroup, source, to, row)) out.add(row);
        });
        continue;
      }
      for (std::size_t i = 0; i < src.size(); ++i) row[i] = src[i].is_placeholder() ? kinds.build(k, src[i].dim) : src[i];
      out.add(row);
    }
  }
  return out;
}
}  // namespace detail

/// Rules with every placeholder row emitted once per shard kind (in `kinds` order), each
/// placeholder replaced by `kind(dim)`; rows without placeholders pass through in place. With no
/// kinds, placeholder rows vanish (DTensor: no sharded input, no sharding rule).
/// A regrouped row (RuleSet::regroup) is filled by moving the shard instead: its source cell takes
/// `kind(dim)` and its other placeholders the placement that holds the same elements on the output
/// run (`regroup_shard`: a Shard or StridedShard, possibly on another dim and with another split
/// factor); a kind that no placement can express there emits no row. This reads the global sizes,
/// what one mesh dim alone sees; the overload with mesh sizes (`rules/regroup_on_mesh.hpp`) also
/// lists the placements the local sizes of earlier mesh dims call for.
[[nodiscard]] constexpr RuleSet fill_placeholders(const RuleSet& rules, const ShardKinds& kinds) {
  return detail::fill_placeholders_by(rules, kinds, [](const ShardRegroup& g, RunShard from, auto&& emit) {
    if (const std::optional<RunShard> to = regroup_shard(g.input, from, g.output)) emit(*to);
  });
}

}  // namespace ctshard
