#pragma once
/// \file select/filters.hpp
/// The two filters mesh expansion applies to every candidate row: mixed Partial kinds in one spec,
/// and inputs that cannot be placed on their global shape (DTensor `expand_to_full_mesh_op_strategy`
/// steps 4 and 7, `is_tensor_shardable`).

#include <array>
#include <cstddef>
#include <cstdint>

#include "ctshard/core/spec.hpp"
#include "ctshard/core/tensor_shape.hpp"
#include "ctshard/cost/mesh_topology.hpp"
#include "ctshard/rules/uneven_inputs.hpp"

namespace ctshard {

/// DTensor `is_tensor_shardable(shape, spec)`: false when a Shard / StridedShard names a tensor dim
/// the tensor lacks, or when a sharded dim is smaller than the number of shards on it
/// (times the split factor for StridedShard). Uneven shards are fine; empty ones are not.
[[nodiscard]] constexpr bool is_tensor_shardable(const TensorShape& shape, const Spec& spec, const MeshTopology& mesh) noexcept {
  std::array<std::int64_t, max_tensor_dims> shards{};
  shards.fill(1);
  for (std::size_t i = 0; i < spec.size(); ++i) {
    const Placement& p = spec[i];
    if (!p.is_any_shard()) continue;
    if (p.dim < 0 || p.dim >= shape.rank) return false;
    const auto d = static_cast<std::size_t>(p.dim);
    if (shape[d] < add_mesh_dim_shards(shards[d], p, mesh.sizes[i])) return false;
  }
  return true;
}

/// True when `target` (for a tensor of `shape` whose spec is `current`) creates no new empty
/// shard: every tensor dim that `target` splits into more shards than it has elements (times the
/// split factor for StridedShard) is split, mesh dim by mesh dim, exactly as in `current`. False
/// when `target` shards a dim the tensor lacks. See UnevenInputs::keep_existing_shards.
[[nodiscard]] constexpr bool keeps_existing_shards(const TensorShape& shape, const Spec& target, const Spec& current,
                                                   const MeshTopology& mesh) noexcept {
  std::array<std::int64_t, max_tensor_dims> shards{};
  shards.fill(1);
  std::uint32_t crowded = 0;  // tensor dims with fewer elements than shards under `target`
  for (std::size_t i = 0; i < target.size(); ++i) {
    const Placement& p = target[i];
    if (!p.is_any_shard()) continue;
    if (p.dim < 0 || p.dim >= shape.rank) return false;
    const auto d = static_cast<std::size_t>(p.dim);
    if (shape[d] < add_mesh_dim_shards(shards[d], p, mesh.sizes[i])) crowded |= std::uint32_t{1} << d;
  }
  for (std::size_t i = 0; i < target.size() && crowded != 0; ++i) {
    const auto splits = [&](const Placement& p) { return p.is_any_shard() && p.dim >= 0 && p.dim < 32 && (crowded >> p.dim & 1u) != 0; };
    if ((splits(target[i]) || (i < current.size() && splits(current[i]))) && !(i < current.size() && target[i] == current[i])) return false;
  }
  return true;
}

/// A placement's bit in a mask of Partial kinds: `1 << reduce_op` for Partial, 0 otherwise.
[[nodiscard]] constexpr unsigned partial_bit(const Placement& p) noexcept { return p.is_partial() ? 1u << static_cast<unsigned>(p.reduce_op) : 0u; }

/// DTensor's mixed-partial rule over the Partial kinds of one spec (`partial_bit`s or-ed): all
/// Partial placements share one reduce op, except that `sum` and `avg` may mix. True when allowed.
[[nodiscard]] constexpr bool partial_kinds_compatible(unsigned mask) noexcept {
  constexpr unsigned sum_avg = partial_bit(Partial(ReduceOp::sum)) | partial_bit(Partial(ReduceOp::avg));
  return (mask & (mask - 1)) == 0 || mask == sum_avg;
}

/// True when `spec` passes DTensor's mixed-partial rule (`partial_kinds_compatible`).
[[nodiscard]] constexpr bool has_compatible_partials(const Spec& spec) noexcept {
  unsigned mask = 0;
  for (const auto& p : spec) mask |= partial_bit(p);
  return partial_kinds_compatible(mask);
}

}  // namespace ctshard
