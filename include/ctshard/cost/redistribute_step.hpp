#pragma once
/// \file cost/redistribute_step.hpp
/// The vocabulary of a redistribution: one step (a collective on one mesh dim) and a plan of
/// steps, shared by both cost models.

#include <array>
#include <cstddef>
#include <limits>
#include <string>

#include "ctshard/core/spec.hpp"
#include "ctshard/cost/collectives.hpp"
#include "ctshard/error.hpp"

namespace ctshard {

/// The cost of an impossible redistribution (DTensor returns float("inf")).
inline constexpr double infinite_cost = std::numeric_limits<double>::infinity();

/// One step of a redistribution on one mesh dim.
struct RedistributeStep {
  std::size_t mesh_dim = 0;
  Placement from{}, to{};
  Collective collective = Collective::none;
  double comm_bytes = 0;  ///< bytes the collective moves per device as DTensor counts them (b·1024³)
  double cost_us = 0;     ///< µs, +inf for an impossible step
};

/// At most three steps per mesh dim (DTensor: nested sharding goes through Replicate; consistent
/// model: shard, gather, then relabel as Partial).
struct RedistributePlan {
  std::array<RedistributeStep, 3 * max_mesh_dims> steps{};
  std::size_t size = 0;
  double cost_us = 0;  ///< sum of step costs (µs), +inf when any step is impossible
  /// Iteration over the `size` steps in execution order.
  [[nodiscard]] constexpr const RedistributeStep* begin() const noexcept { return steps.data(); }
  [[nodiscard]] constexpr const RedistributeStep* end() const noexcept { return steps.data() + size; }
};

namespace detail {
[[noreturn]] inline void spec_mesh_mismatch(const Spec& current, const Spec& target, std::size_t mesh_ndim) {
  throw error("ctshard::redistribute_cost: spec '" + to_string(current) + "' -> '" + to_string(target) + "' does not match a " +
              std::to_string(mesh_ndim) + "-dim mesh");
}
}  // namespace detail

}  // namespace ctshard
