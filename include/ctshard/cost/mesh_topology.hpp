#pragma once
/// \file cost/mesh_topology.hpp
/// MeshTopology: per mesh dim size, bandwidth and hop latency (DTensor `MeshTopoInfo`).

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <span>
#include <string>
#include <utility>

#include "ctshard/config.hpp"
#include "ctshard/core/checked.hpp"
#include "ctshard/error.hpp"

namespace ctshard {

/// Link constants of DTensor's cost model (`_collective_utils.py`).
struct LinkModel {
  double intra_host_bandwidth_gbps = 87.7;    ///< GB/s within a host
  double intra_host_latency_us = 0.6;         ///< µs per hop within a host
  double inter_host_bandwidth_factor = 0.22;  ///< bandwidth multiplier across hosts (→ 19.294 GB/s)
  double inter_host_latency_us = 2.7;         ///< µs per hop across hosts
  double base_latency_us = 6.6;               ///< fixed cost of every collective, even on a size-1 mesh dim
  double shard_to_shard_penalty_us = 1.0;     ///< DTensor's +1.0 on an all-to-all (Shard(i) -> Shard(j))

  /// Checks the constants (MeshTopology::build calls it): bandwidths finite and > 0, latencies and
  /// the penalty finite and >= 0, so no redistribute cost is negative, NaN or infinite. Throws
  /// ctshard::error naming the field and the value.
  constexpr void check() const {
    constexpr double most = std::numeric_limits<double>::max();
    const auto refuse = [](const char* field, double v, const char* want) {
      char text[64];
      std::snprintf(text, sizeof text, "%g", v);
      throw error(std::string("ctshard::LinkModel: ") + field + " must be " + want + ", got " + text);
    };
    if (!(intra_host_bandwidth_gbps > 0 && intra_host_bandwidth_gbps <= most))
      refuse("intra_host_bandwidth_gbps", intra_host_bandwidth_gbps, "finite and > 0");
    if (!(inter_host_bandwidth_factor > 0 && inter_host_bandwidth_factor <= most))
      refuse("inter_host_bandwidth_factor", inter_host_bandwidth_factor, "finite and > 0");
    if (!(intra_host_bandwidth_gbps * inter_host_bandwidth_factor > 0 && intra_host_bandwidth_gbps * inter_host_bandwidth_factor <= most))
      refuse("intra_host_bandwidth_gbps * inter_host_bandwidth_factor", intra_host_bandwidth_gbps * inter_host_bandwidth_factor, "finite and > 0");
    for (const auto& [field, v] :
         {std::pair{"intra_host_latency_us", intra_host_latency_us}, std::pair{"inter_host_latency_us", inter_host_latency_us},
          std::pair{"base_latency_us", base_latency_us}, std::pair{"shard_to_shard_penalty_us", shard_to_shard_penalty_us}})
      if (!(v >= 0 && v <= most)) refuse(field, v, "finite and >= 0");
  }
};

/// How redistributions are priced (`redistribute_cost`).
enum class CostModel : unsigned char {
  /// DTensor's `redistribute_cost`: its greedy step order, +1.0 µs on every all-to-all, Shard →
  /// Partial and Partial(op) → Partial(other) infinite, 6.6 µs even on a size-1 mesh dim. The
  /// default, and what the reference cases use.
  dtensor,
  /// The same collectives and link constants, priced as the cheapest sequence of one-mesh-dim
  /// collectives (a shortest path, so additive along any path and obeying the triangle
  /// inequality): all-to-all of the local bytes with no flat penalty, steps ordered to move the
  /// fewest bytes, nothing charged on a mesh dim of size 1 (no data moves there); every spec is
  /// reachable (Shard → Partial goes through Replicate). See `consistent_redistribute_cost`.
  consistent,
};

/// "dtensor" / "consistent".
[[nodiscard]] constexpr const char* to_string(CostModel m) noexcept { return m == CostModel::dtensor ? "dtensor" : "consistent"; }

/// A device mesh of N dims (sizes, mesh dim 0 first) and its per-dim links. DTensor
/// `MeshTopoInfo.build_from_mesh`: walking mesh dims from last to first with a running product of
/// sizes, a dim whose running product exceeds `devices_per_host` is inter-host (bandwidth × 0.22,
/// 2.7 µs per hop); others are intra-host (87.7 GB/s, 0.6 µs).
struct MeshTopology {
  std::array<std::int64_t, max_mesh_dims> sizes{};
  std::array<double, max_mesh_dims> bandwidth_gbps{};  ///< GB/s per mesh dim
  std::array<double, max_mesh_dims> latency_us{};      ///< µs per hop per mesh dim
  std::uint8_t ndim = 0;
  std::int64_t devices_per_host = 8;
  LinkModel link{};
  CostModel cost_model = CostModel::dtensor;  ///< how redistribute_cost prices moves on this mesh

  /// Mesh rank N.
  [[nodiscard]] constexpr std::size_t size() const noexcept { return ndim; }
  /// Devices on `mesh_dim` (unchecked).
  [[nodiscard]] constexpr std::int64_t operator[](std::size_t mesh_dim) const noexcept { return sizes[mesh_dim]; }
  /// The sizes of the ndim mesh dims, mesh dim 0 first (what a FullMeshFilter receives).
  [[nodiscard]] constexpr std::span<const std::int64_t> dim_sizes() const noexcept { return {sizes.data(), ndim}; }
  /// Devices in the whole mesh (product of sizes; build() refuses a product past int64).
  [[nodiscard]] constexpr std::int64_t num_devices() const noexcept {
    std::int64_t n = 1;
    for (std::size_t d = 0; d < ndim; ++d) n *= sizes[d];
    return n;
  }

  /// Builds the topology. Throws ctshard::error for an empty mesh, more than max_mesh_dims dims, a
  /// size < 1, devices_per_host < 1, sizes whose product overflows int64, or a bad `link`
  /// (LinkModel::check: a bandwidth that is not finite and > 0, a latency that is negative or not
  /// finite).
  [[nodiscard]] static constexpr MeshTopology build(std::span<const std::int64_t> mesh_sizes, std::int64_t devices_per_host = 8,
                                                    const LinkModel& link = {}, CostModel cost_model = CostModel::dtensor) {
    if (mesh_sizes.empty() || mesh_sizes.size() > max_mesh_dims)
      throw error("ctshard::MeshTopology: mesh must have 1.." + std::to_string(max_mesh_dims) + " dims, got " + std::to_string(mesh_sizes.size()));
    if (devices_per_host < 1) throw error("ctshard::MeshTopology: devices per host must be >= 1, got " + std::to_string(devices_per_host));
    link.check();
    MeshTopology t;
    t.ndim = static_cast<std::uint8_t>(mesh_sizes.size());
    t.devices_per_host = devices_per_host;
    t.link = link;
    t.cost_model = cost_model;
    std::int64_t running = 1;
    for (std::size_t d = mesh_sizes.size(); d-- > 0;) {
      if (mesh_sizes[d] < 1) throw error("ctshard::MeshTopology: mesh dim " + std::to_string(d) + " has size " + std::to_string(mesh_sizes[d]));
      t.sizes[d] = mesh_sizes[d];
      running = checked_mul(running, mesh_sizes[d], "MeshTopology: number of devices");
      const bool inter_host = running > devices_per_host;
      t.bandwidth_gbps[d] = inter_host ? link.intra_host_bandwidth_gbps * link.inter_host_bandwidth_factor : link.intra_host_bandwidth_gbps;
      t.latency_us[d] = inter_host ? link.inter_host_latency_us : link.intra_host_latency_us;
    }
    return t;
  }
};

/// "2x4" -> {2, 4}. Throws ctshard::error naming the text.
[[nodiscard]] inline std::array<std::int64_t, max_mesh_dims> parse_mesh_sizes(std::string_view text, std::size_t& ndim) {
  std::array<std::int64_t, max_mesh_dims> sizes{};
  ndim = 0;
  std::size_t pos = 0;
  auto bad = [&] {
    return error("ctshard: bad mesh '" + std::string(text) + "' (expected 1 to " + std::to_string(max_mesh_dims) +
                 " sizes >= 1 joined by 'x', like 8, 2x4 or 2x2x2)");
  };
  while (pos <= text.size()) {
    const std::size_t end = std::min(text.find('x', pos), text.size());
    const auto part = text.substr(pos, end - pos);
    if (part.empty() || part.size() > 9 || ndim == max_mesh_dims) throw bad();
    std::int64_t v = 0;
    for (char c : part) {
      if (c < '0' || c > '9') throw bad();
      v = v * 10 + (c - '0');
    }
    if (v < 1) throw bad();
    sizes[ndim++] = v;
    pos = end + 1;
  }
  return sizes;
}

}  // namespace ctshard
