#pragma once
/// \file rules/placeholder_fill.hpp
/// Filling `ShardingPlaceholder(d)` with the shard kinds the runtime inputs actually use
/// (DTensor `_fill_single_dim_strategy_placeholders`).

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "ctshard/core/spec.hpp"
#include "ctshard/rules/rule_set.hpp"

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

/// Rules with every placeholder row emitted once per shard kind (in `kinds` order), each
/// placeholder replaced by `kind(dim)`; rows without placeholders pass through in place. With no
/// kinds, placeholder rows vanish (DTensor: no sharded input, no sharding rule).
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
    for (std::size_t k = 0; k < kinds.size(); ++k) {
      for (std::size_t i = 0; i < src.size(); ++i) row[i] = src[i].is_placeholder() ? kinds.build(k, src[i].dim) : src[i];
      out.add(row);
    }
  }
  return out;
}

}  // namespace ctshard
