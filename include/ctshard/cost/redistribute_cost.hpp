#pragma once
/// \file cost/redistribute_cost.hpp
/// Redistribute cost: microseconds to turn a tensor's current spec into a target spec, following
/// newest DTensor `redistribute_cost` with the greedy transform planner
/// (`DTensorRedistributePlanner.generate_greedy_transform_infos`) and the per-step costs of
/// `_compute_placement_transition_cost`. A StridedShard step is priced as the collectives DTensor
/// 2.13's `redistribute_local_tensor` issues for it (DTensor's cost model itself says +inf or 0
/// there; docs/semantics.md, "StridedShard").

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
/// An `on_step` that records nothing: the cost alone (transition_steps skips building the steps).
struct IgnoreSteps {
  constexpr void operator()(const RedistributeStep&) const noexcept {}
};

/// True when mesh dims [0, upto) shard tensor dim `d` identically in `a` and `b`: the same mesh
/// dims, and a StridedShard of `d` with the same split factor (the nested-sharding check of
/// `generate_greedy_transform_infos`, extended to StridedShard as its TODO says).
constexpr bool same_shard_prefix(const Spec& a, const Spec& b, std::size_t upto, int d) noexcept {
  for (std::size_t j = 0; j < upto; ++j) {
    const bool sa = a[j].is_any_shard() && a[j].dim == d, sb = b[j].is_any_shard() && b[j].dim == d;
    if (sa != sb || (sa && a[j] != b[j])) return false;
  }
  return true;
}

/// The collective, comm volume (GiB) and cost (µs) of one mesh-dim transition.
struct TransitionCost {
  Collective collective = Collective::none;
  double comm_gb = 0;
  double cost_us = 0;
};

/// One mesh-dim transition with comm volume `gb` (GiB units), updating it
/// (`_compute_placement_transition_cost`). Also prices a StridedShard side the way
/// `_compute_placement_transition_cost` would price a Shard (all-gather to Replicate, local chunk
/// from Replicate); the two-step StridedShard moves are split by `transition_steps`. The cost
/// alone: `transition` makes it a RedistributeStep (copying placements byte by byte on every
/// priced pair stalled the cost-graph builder on store forwarding). Always inlined: as a call it
/// was 12 % of a 2x2x2x2 cost-graph build (llama32_1b_fw).
[[gnu::always_inline]] constexpr TransitionCost transition_cost(std::size_t mesh_dim, const Placement& from, const Placement& to, double& gb,
                                                                const MeshTopology& mesh) noexcept {
  const double n = static_cast<double>(mesh.sizes[mesh_dim]);
  if (from.is_any_shard() && to.is_replicate()) {
    gb *= n;
    return {Collective::all_gather, gb, allgather_cost(gb, mesh, mesh_dim)};
  }
  if (from.is_any_shard() && to.is_any_shard()) return {Collective::all_to_all, gb, all_to_all_cost(gb, mesh, mesh_dim)};
  if (from.is_partial() && to.is_replicate()) return {Collective::all_reduce, gb, allreduce_cost(gb, mesh, mesh_dim)};
  if (from.is_partial() && to.is_any_shard()) {
    const TransitionCost t{Collective::reduce_scatter, gb, reduce_scatter_cost(gb, mesh, mesh_dim)};
    gb /= n;
    return t;
  }
  if (from.is_replicate() && to.is_any_shard()) {
    gb /= n;
    return {};
  }
  if (from.is_replicate() && to.is_partial()) return {};  // free: keep the value on one rank, zeros elsewhere
  return {Collective::impossible, 0, infinite_cost};      // Shard -> Partial, Partial(op) -> Partial(other op)
}

/// transition_cost as a RedistributeStep (bytes, not GiB).
constexpr RedistributeStep transition(std::size_t mesh_dim, const Placement& from, const Placement& to, double& gb,
                                      const MeshTopology& mesh) noexcept {
  const TransitionCost t = transition_cost(mesh_dim, from, to, gb, mesh);
  return RedistributeStep{mesh_dim, from, to, t.collective, t.comm_gb * 1024.0 * 1024.0 * 1024.0, t.cost_us};
}

/// True when DTensor 2.13 runs `from` -> `to` on one mesh dim through Replicate
/// (`redistribute_local_tensor`): a StridedShard on either side of a shard -> shard move (all-gather,
/// then a local chunk), or Partial -> StridedShard (all-reduce, then a local strided chunk).
constexpr bool through_replicate(const Placement& from, const Placement& to) noexcept {
  if (!from.is_strided_shard() && !to.is_strided_shard()) return false;
  return (from.is_any_shard() && to.is_any_shard()) || (from.is_partial() && to.is_strided_shard());
}

/// Calls `on_step` for the steps of one mesh-dim transition (one, or two through Replicate: see
/// `through_replicate`) and returns their cost (µs).
template <class OnStep>
constexpr double transition_steps(std::size_t mesh_dim, const Placement& from, const Placement& to, double& gb, const MeshTopology& mesh,
                                  OnStep&& on_step) {
  constexpr bool records = !std::is_same_v<std::remove_cvref_t<OnStep>, IgnoreSteps>;
  if (!through_replicate(from, to)) {
    if constexpr (!records) return transition_cost(mesh_dim, from, to, gb, mesh).cost_us;
    const RedistributeStep s = transition(mesh_dim, from, to, gb, mesh);
    on_step(s);
    return s.cost_us;
  }
  if constexpr (!records) {
    const double gather = transition_cost(mesh_dim, from, Replicate(), gb, mesh).cost_us;
    return gather + transition_cost(mesh_dim, Replicate(), to, gb, mesh).cost_us;
  }
  const RedistributeStep gather = transition(mesh_dim, from, Replicate(), gb, mesh);
  const RedistributeStep chunk = transition(mesh_dim, Replicate(), to, gb, mesh);
  on_step(gather);
  on_step(chunk);
  return gather.cost_us + chunk.cost_us;
}
}  // namespace detail

namespace detail {
/// greedy_redistribute (below) for specs already checked against the mesh and the tensor's rank, given
/// the tensor's bytes (itemsize·numel): the cost-graph builder prices millions of pairs per
/// tensor, and the checks were a tenth of that.
template <class OnStep>
constexpr double greedy_redistribute_checked(const Spec& current, const Spec& target, double bytes, const MeshTopology& mesh, OnStep&& on_step) {
  if (current.is_replicated() || current == target) return 0.0;
  const std::int64_t shards = num_shards(current, mesh.sizes);
  double gb = bytes / static_cast<double>(shards) / 1024.0 / 1024.0 / 1024.0;
  double total = 0;
  Spec state = current;
  auto step = [&](std::size_t d, const Placement& to) {
    total += transition_steps(d, state[d], to, gb, mesh, on_step);
    state[d] = to;
  };
  if (mesh.size() > 1 && shards > 1) {
    for (std::size_t d = mesh.size(); d-- > 0;) {
      Placement to = target[d];
      if (to.is_any_shard() && !same_shard_prefix(state, target, d, to.dim)) to = Replicate();
      if (state[d] != to) step(d, to);
    }
  }
  for (std::size_t d = 0; d < mesh.size(); ++d)
    if (state[d] != target[d]) step(d, target[d]);
  return total;
}

/// The greedy planner (see `redistribute_plan`): calls `on_step(step)` for every step in order and
/// returns the total cost (µs). Shared by the plan (which records steps) and the cost (which
/// does not).
template <class OnStep>
constexpr double greedy_redistribute(const Spec& current, const Spec& target, const TensorMeta& meta, const MeshTopology& mesh, OnStep&& on_step) {
  if (current.size() != mesh.size() || target.size() != mesh.size()) spec_mesh_mismatch(current, target, mesh.size());
  if (!std::is_constant_evaluated()) {
    check_shard_dims(current, meta.shape, "ctshard::redistribute_cost: current");
    check_shard_dims(target, meta.shape, "ctshard::redistribute_cost: target");
  }
  return greedy_redistribute_checked(current, target, meta.bytes(), mesh, on_step);
}
}  // namespace detail

/// The greedy redistribution plan from `current` to `target` for a tensor described by `meta` on
/// `mesh`, with per-step collectives and costs (µs). DTensor rules: an all-Replicate source or an
/// unchanged spec costs 0 with no step; otherwise comm volume starts at
/// itemsize·numel/num_shards/1024³ and the greedy planner first walks mesh dims last→first (only
/// when the source has more than one shard), sending a mesh dim whose target Shard(d) or
/// StridedShard(d, sf) is nested differently (earlier mesh dims shard d differently, or with
/// another split factor) through Replicate, then walks first→last to reach the target.
/// Shard→Partial, StridedShard→Partial and Partial(op)→Partial(other) are +inf.
/// StridedShard steps are priced as DTensor 2.13 runs them (`redistribute_local_tensor`), not as
/// its cost model prices them (+inf for specs built from placements, 0 for view outputs):
/// StridedShard→Replicate an all-gather of the same bytes as Shard→Replicate, Replicate→StridedShard
/// a free local chunk, a shard→shard move with a StridedShard on either side an all-gather then a
/// local chunk (two steps), Partial→StridedShard an all-reduce then a local chunk (two steps).
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
  const detail::IgnoreSteps ignore;
  return mesh.cost_model == CostModel::consistent ? detail::consistent_redistribute(current, target, meta, mesh, ignore)
                                                  : detail::greedy_redistribute(current, target, meta, mesh, ignore);
}

}  // namespace ctshard
