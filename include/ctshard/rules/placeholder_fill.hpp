#pragma once
/// \file rules/placeholder_fill.hpp
/// Filling `ShardingPlaceholder(d)` with the shard kinds the runtime inputs actually use
/// (DTensor `_fill_single_dim_strategy_placeholders`).

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
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

/// Shard kinds used by the runtime input specs.
[[nodiscard]] constexpr ShardKinds shard_kinds_of(std::span<const Spec> inputs) noexcept {
  ShardKinds kinds;
  for (const auto& spec : inputs)
    for (const auto& p : spec) kinds.add(p);
  return kinds;
}

/// Only plain Shard: the kinds to fill compile-time tables with.
inline constexpr ShardKinds plain_shard_kinds{true, {}, 0};

namespace detail {
/// The placements a regrouped row's cells take for the source shard kind `source` (a Shard or a
/// StridedShard of the source column's dim): the source cell becomes `source`, every other
/// placeholder the shard re-expressed on the output run (`regroup_shard`). False when no
/// placement expresses it (no such output dim, a split factor above 65535, or a dim below 0: a
/// run that starts before dim 0 has virtual leading dims, such as a collective's program ranks,
/// and a shard landing there is no placement of the tensor).
constexpr bool fill_regrouped_row(std::span<const Placement> src, const ShardRegroup& g, const Placement& source, std::span<Placement> row) {
  const RunShard from{static_cast<std::size_t>(source.dim - g.input_first), source.is_strided_shard() ? source.split_factor : 1};
  const std::optional<RunShard> to = regroup_shard(g.input, from, g.output);
  if (!to || to->split_factor > 65535) return false;
  const int dim = g.output_first + static_cast<int>(to->dim);
  if (dim < 0) return false;
  const Placement derived = to->split_factor == 1 ? Shard(dim) : StridedShard(dim, static_cast<int>(to->split_factor));
  for (std::size_t i = 0; i < src.size(); ++i) row[i] = i == g.source ? source : src[i].is_placeholder() ? derived : src[i];
  return true;
}
}  // namespace detail

/// Rules with every placeholder row emitted once per shard kind (in `kinds` order), each
/// placeholder replaced by `kind(dim)`; rows without placeholders pass through in place. With no
/// kinds, placeholder rows vanish (DTensor: no sharded input, no sharding rule).
/// A regrouped row (RuleSet::regroup) is filled by moving the shard instead: its source cell takes
/// `kind(dim)` and its other placeholders the placement that holds the same elements on the output
/// run (`regroup_shard`: a Shard or StridedShard, possibly on another dim and with another split
/// factor); a kind that no placement can express there emits no row.
[[nodiscard]] constexpr RuleSet fill_placeholders(const RuleSet& rules, const ShardKinds& kinds) {
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
        if (detail::fill_regrouped_row(src, *regroup, kinds.build(k, src[regroup->source].dim), row)) out.add(row);
        continue;
      }
      for (std::size_t i = 0; i < src.size(); ++i) row[i] = src[i].is_placeholder() ? kinds.build(k, src[i].dim) : src[i];
      out.add(row);
    }
  }
  return out;
}

}  // namespace ctshard
