#pragma once
/// \file cost/redistribute_cost.hpp
/// Redistribute cost: microseconds to turn a tensor's current spec into a target spec, following
/// newest DTensor `redistribute_cost` with the greedy transform planner
/// (`DTensorRedistributePlanner.generate_greedy_transform_infos`) and the per-step costs of
/// `_compute_placement_transition_cost`.

#include <array>
#include <cstddef>
#include <limits>
#include <type_traits>

#include "ctshard/core/spec.hpp"
#include "ctshard/core/tensor_shape.hpp"
#include "ctshard/cost/collectives.hpp"
#include "ctshard/cost/consistent_cost.hpp"
#include "ctshard/cost/mesh_topology.hpp"
#include "ctshard/cost/redistribute_step.hpp"

namespace ctshard {

namespace detail {
/// True when mesh dims [0, upto) shard tensor dim `d` identically in `a` and `b`.
constexpr bool same_shard_prefix(const Spec& a, const Spec& b, std::size_t upto, int d) noexcept {
  for (std::size_t j = 0; j < upto; ++j)
    if ((a[j].is_shard() && a[j].dim == d) != (b[j].is_shard() && b[j].dim == d)) return false;
  return true;
}

/// One mesh-dim transition with comm volume `gb` (GiB units), updating it
/// (`_compute_placement_transition_cost`).
constexpr RedistributeStep transition(std::size_t mesh_dim, Placement from, Placement to, double& gb, const MeshTopology& mesh) noexcept {
  RedistributeStep s{mesh_dim, from, to, Collective::none, 0, 0};
  const double n = static_cast<double>(mesh.sizes[mesh_dim]);
  if (from.is_any_shard() && to.is_replicate()) {
    gb *= n;
    s.collective = Collective::all_gather;
    s.comm_bytes = gb;
    s.cost_us = allgather_cost(gb, mesh, mesh_dim);
  } else if (from.is_any_shard() && to.is_any_shard()) {
    s.collective = Collective::all_to_all;
    s.comm_bytes = gb;
    s.cost_us = all_to_all_cost(gb, mesh, mesh_dim);
  } else if (from.is_partial() && to.is_replicate()) {
    s.collective = Collective::all_reduce;
    s.comm_bytes = gb;
    s.cost_us = allreduce_cost(gb, mesh, mesh_dim);
  } else if (from.is_partial() && to.is_any_shard()) {
    s.collective = Collective::reduce_scatter;
    s.comm_bytes = gb;
    s.cost_us = reduce_scatter_cost(gb, mesh, mesh_dim);
    gb /= n;
  } else if (from.is_replicate() && to.is_any_shard()) {
    gb /= n;
  } else if (from.is_replicate() && to.is_partial()) {
    // free: keep the value on one rank, zeros elsewhere
  } else {  // Shard -> Partial, Partial(op) -> Partial(other op)
    s.collective = Collective::impossible;
    s.cost_us = infinite_cost;
  }
  s.comm_bytes *= 1024.0 * 1024.0 * 1024.0;
  return s;
}
}  // namespace detail

namespace detail {
/// The greedy planner (see `redistribute_plan`): calls `on_step(step)` for every step in order and
/// returns the total cost (µs). Shared by the plan (which records steps) and the cost (which
/// does not).
template <class OnStep>
constexpr double greedy_redistribute(const Spec& current, const Spec& target, const TensorMeta& meta, const MeshTopology& mesh,
                                     OnStep&& on_step) {
  if (current.size() != mesh.size() || target.size() != mesh.size()) spec_mesh_mismatch(current, target, mesh.size());
  if (!std::is_constant_evaluated()) {
    check_shard_dims(current, meta.shape, "ctshard::redistribute_cost: current");
    check_shard_dims(target, meta.shape, "ctshard::redistribute_cost: target");
  }
  if (current.is_replicated() || current == target) return 0.0;
  for (std::size_t d = 0; d < mesh.size(); ++d)
    if (current[d].is_strided_shard() || target[d].is_strided_shard()) return infinite_cost;
  const std::int64_t shards = num_shards(current, mesh.sizes);
  double gb = meta.bytes() / static_cast<double>(shards) / 1024.0 / 1024.0 / 1024.0;
  double total = 0;
  Spec state = current;
  auto step = [&](std::size_t d, Placement to) {
    const RedistributeStep s = transition(d, state[d], to, gb, mesh);
    state[d] = to;
    total += s.cost_us;
    on_step(s);
  };
  if (mesh.size() > 1 && shards > 1) {
    for (std::size_t d = mesh.size(); d-- > 0;) {
      Placement to = target[d];
      if (to.is_shard() && !same_shard_prefix(state, target, d, to.dim)) to = Replicate();
      if (state[d] != to) step(d, to);
    }
  }
  for (std::size_t d = 0; d < mesh.size(); ++d)
    if (state[d] != target[d]) step(d, target[d]);
  return total;
}
}  // namespace detail

/// The greedy redistribution plan from `current` to `target` for a tensor described by `meta` on
/// `mesh`, with per-step collectives and costs (µs). DTensor rules: an all-Replicate source or an
/// unchanged spec costs 0 with no step; a StridedShard on either side (other than unchanged) is
/// +inf; otherwise comm volume starts at itemsize·numel/num_shards/1024³ and the greedy planner
/// first walks mesh dims last→first (only when the source has more than one shard), sending a
/// mesh dim whose target Shard(d) is nested differently (earlier mesh dims shard d differently)
/// through Replicate, then walks first→last to reach the target. Shard→Partial and
/// Partial(op)→Partial(other) are +inf.
/// Throws ctshard::error when the specs' ranks differ from the mesh's or a spec shards a tensor dim
/// the tensor lacks.
/// Under `CostModel::consistent` (`mesh.cost_model`), the cheapest step sequence instead
/// (`consistent_redistribute_cost`).
[[nodiscard]] constexpr RedistributePlan redistribute_plan(const Spec& current, const Spec& target, const TensorMeta& meta,
                                                           const MeshTopology& mesh) {
  RedistributePlan plan;
  const auto record = [&](const RedistributeStep& s) { plan.steps[plan.size++] = s; };
  plan.cost_us = mesh.cost_model == CostModel::consistent ? detail::consistent_redistribute(current, target, meta, mesh, record)
                                                          : detail::greedy_redistribute(current, target, meta, mesh, record);
  return plan;
}

/// Redistribute cost in µs under the mesh's cost model (DTensor's by default: +inf where DTensor
/// says so); see `redistribute_plan`.
[[nodiscard]] constexpr double redistribute_cost(const Spec& current, const Spec& target, const TensorMeta& meta, const MeshTopology& mesh) {
  const auto ignore = [](const RedistributeStep&) noexcept {};
  return mesh.cost_model == CostModel::consistent ? detail::consistent_redistribute(current, target, meta, mesh, ignore)
                                                  : detail::greedy_redistribute(current, target, meta, mesh, ignore);
}

}  // namespace ctshard
