#pragma once
/// \file cost/collectives.hpp
/// Cost of one collective on one mesh dim, in microseconds (DTensor `_collective_utils.py`:
/// `allgather_cost`, `reduce_scatter_cost`, `allreduce_cost`). `gb` is the comm volume in GiB
/// units as DTensor computes it (bytes / 1024^3).

#include <cstddef>
#include <string_view>

#include "ctshard/cost/mesh_topology.hpp"

namespace ctshard {

/// The collective a redistribution step issues.
enum class Collective : unsigned char {
  none,            ///< local: R -> Shard (chunk) or R -> Partial, free
  all_gather,      ///< Shard -> Replicate
  all_reduce,      ///< Partial -> Replicate
  reduce_scatter,  ///< Partial -> Shard
  all_to_all,      ///< Shard(i) -> Shard(j)
  impossible,      ///< Shard -> Partial, or Partial(op) -> Partial(other op): infinite cost
};

/// Name as printed by `ctshard cost`: local, all_gather, all_reduce, reduce_scatter, all_to_all, impossible.
[[nodiscard]] constexpr std::string_view to_string(Collective c) noexcept {
  switch (c) {
    case Collective::none: return "local";
    case Collective::all_gather: return "all_gather";
    case Collective::all_reduce: return "all_reduce";
    case Collective::reduce_scatter: return "reduce_scatter";
    case Collective::all_to_all: return "all_to_all";
    case Collective::impossible: return "impossible";
  }
  return "?";
}

/// All-gather of `gb` on `mesh_dim`: 6.6 + (n-1)·lat + (gb·(n-1)/n)/bw·1e6 µs.
[[nodiscard]] constexpr double allgather_cost(double gb, const MeshTopology& mesh, std::size_t mesh_dim) noexcept {
  const double n = static_cast<double>(mesh.sizes[mesh_dim]);
  return mesh.link.base_latency_us + (n - 1) * mesh.latency_us[mesh_dim] + ((gb * (n - 1)) / n) / mesh.bandwidth_gbps[mesh_dim] * 1e6;
}

/// Reduce-scatter: the all-gather formula (DTensor `reduce_scatter_cost`).
[[nodiscard]] constexpr double reduce_scatter_cost(double gb, const MeshTopology& mesh, std::size_t mesh_dim) noexcept {
  return allgather_cost(gb, mesh, mesh_dim);
}

/// All-reduce of `gb`: 6.6 + 2(n-1)·lat + (gb·2(n-1)/n)/bw·1e6 µs.
[[nodiscard]] constexpr double allreduce_cost(double gb, const MeshTopology& mesh, std::size_t mesh_dim) noexcept {
  const double n = static_cast<double>(mesh.sizes[mesh_dim]);
  return mesh.link.base_latency_us + 2 * (n - 1) * mesh.latency_us[mesh_dim] + ((gb * 2 * (n - 1)) / n) / mesh.bandwidth_gbps[mesh_dim] * 1e6;
}

/// All-to-all (Shard(i) -> Shard(j)): DTensor prices it as an all-gather of the local shard plus a
/// flat 1.0 µs penalty (`LinkModel::shard_to_shard_penalty_us`).
[[nodiscard]] constexpr double all_to_all_cost(double gb, const MeshTopology& mesh, std::size_t mesh_dim) noexcept {
  return allgather_cost(gb, mesh, mesh_dim) + mesh.link.shard_to_shard_penalty_us;
}

}  // namespace ctshard
