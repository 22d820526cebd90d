#pragma once
/// \file cost/consistent_cost.hpp
/// The consistent cost model (`CostModel::consistent`): a redistribution priced as the cheapest
/// sequence of one-mesh-dim collectives, with DTensor's collectives and link constants.
///
/// A step on mesh dim d (n devices, local bytes b before the step, bandwidth bw, hop latency lat,
/// base latency 6.6 µs) costs, as in DTensor's `_collective_utils.py` but without the flat +1.0:
///   Shard → Replicate (all-gather)            6.6 + (n−1)·lat + b·(n−1)/bw
///   Shard(i) → Shard(j) (all-to-all)          6.6 + (n−1)·lat + b·(n−1)/n/bw
///   Partial → Replicate (all-reduce)          6.6 + 2(n−1)·lat + 2b·(n−1)/n/bw
///   Partial → Shard (reduce-scatter)          6.6 + (n−1)·lat + b·(n−1)/n/bw
///   Replicate → Shard, Replicate → Partial    0 (a local chunk / keeping the value on one rank)
/// and every step on a mesh dim of size 1 costs 0 (no data moves). The local bytes b are the
/// tensor's bytes over the product of the sizes of the mesh dims that shard it at that moment, so
/// the cost of a sequence depends on its order. The price of current → target is the minimum over
/// all sequences (a shortest path over specs; shard order constraints of nested sharding are not
/// modelled), hence additive along any path and obeying the triangle inequality. It is computed
/// exactly: each mesh dim's moves reduce to a few templates (leave it; shard at the start; one
/// all-gather, all-to-all, all-reduce or reduce-scatter; reduce-scatter then all-gather instead of
/// an all-reduce; shard a replicated dim for the duration and all-gather it at the end, which
/// makes the other dims' collectives move fewer bytes), and for chosen templates the cheapest
/// order is: free shards first, then reduce-scatters (fastest link first), then all-to-alls and
/// all-reduces, then all-gathers (slowest link first) — each by an exchange argument on two
/// adjacent steps. The templates with a choice (at most one per mesh dim) are enumerated.
/// Shard → Partial and Partial(op) → Partial(other) are finite here (through Replicate).

#include <array>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "ctshard/core/spec.hpp"
#include "ctshard/core/tensor_shape.hpp"
#include "ctshard/cost/collectives.hpp"
#include "ctshard/cost/mesh_topology.hpp"
#include "ctshard/cost/redistribute_step.hpp"

namespace ctshard {

namespace detail {

/// What one mesh dim does in a consistent-model redistribution.
enum class DimMove : unsigned char {
  none,            ///< unchanged (or a size-1 mesh dim: relabelled for free)
  local,           ///< a free step: Replicate → Shard at the start, Replicate → Partial
  all_gather,      ///< Shard → Replicate (then → Partial for free when the target is Partial)
  all_to_all,      ///< Shard(i) → Shard(j)
  all_reduce,      ///< Partial → Replicate (then → Partial(other) for free)
  reduce_scatter,  ///< Partial → Shard
  scatter_gather,  ///< Partial → Shard → Replicate (an all-reduce in two steps around the others)
  borrow,          ///< Replicate → Shard at the start, all-gathered at the end (hierarchical)
};

/// The tensor dim a borrowed or scatter-gathered mesh dim shards: the largest (first on ties).
constexpr int borrowed_tensor_dim(const TensorShape& shape) noexcept {
  int best = 0;
  for (std::size_t d = 1; d < shape.rank; ++d)
    if (shape[d] > shape[static_cast<std::size_t>(best)]) best = static_cast<int>(d);
  return best;
}

/// Runs the schedule of `moves`, calling `on_step` for every step, and returns its cost (µs).
template <class OnStep>
constexpr double consistent_schedule(const Spec& current, const Spec& target, const std::array<DimMove, max_mesh_dims>& moves, const TensorMeta& meta,
                                     const MeshTopology& mesh, OnStep&& on_step) {
  const std::size_t n_dims = mesh.size();
  const Placement borrowed = Shard(borrowed_tensor_dim(meta.shape));
  double gb = meta.bytes() / 1024.0 / 1024.0 / 1024.0;
  const auto n_of = [&](std::size_t d) { return static_cast<double>(mesh.sizes[d]); };
  for (std::size_t d = 0; d < n_dims; ++d)
    if (current[d].is_any_shard()) gb /= n_of(d);
  double total = 0;
  const auto emit = [&](std::size_t d, Placement from, Placement to, Collective c, double bytes_gb, double cost) {
    total += cost;
    on_step(RedistributeStep{d, from, to, c, bytes_gb * 1024.0 * 1024.0 * 1024.0, cost});
  };
  // 1. free steps at the start: relabel size-1 mesh dims, shard replicated dims, Replicate → Partial
  for (std::size_t d = 0; d < n_dims; ++d) {
    if (moves[d] == DimMove::local) {
      emit(d, current[d], target[d], Collective::none, 0, 0);
      if (target[d].is_any_shard() && mesh.sizes[d] > 1) gb /= n_of(d);
    } else if (moves[d] == DimMove::borrow) {
      emit(d, current[d], borrowed, Collective::none, 0, 0);
      gb /= n_of(d);
    }
  }
  // dims ordered by bandwidth, fastest first (ties: mesh dim order)
  std::array<std::size_t, max_mesh_dims> by_bw{};
  for (std::size_t d = 0; d < n_dims; ++d) by_bw[d] = d;
  for (std::size_t i = 1; i < n_dims; ++i)
    for (std::size_t j = i; j > 0 && mesh.bandwidth_gbps[by_bw[j]] > mesh.bandwidth_gbps[by_bw[j - 1]]; --j) {
      const std::size_t t = by_bw[j];
      by_bw[j] = by_bw[j - 1];
      by_bw[j - 1] = t;
    }
  // 2. reduce-scatters, fastest link first: later ones see fewer bytes
  for (std::size_t k = 0; k < n_dims; ++k) {
    const std::size_t d = by_bw[k];
    if (moves[d] != DimMove::reduce_scatter && moves[d] != DimMove::scatter_gather) continue;
    const Placement to = moves[d] == DimMove::reduce_scatter ? target[d] : borrowed;
    emit(d, current[d], to, Collective::reduce_scatter, gb, reduce_scatter_cost(gb, mesh, d));
    gb /= n_of(d);
  }
  // 3. byte-neutral collectives at the most sharded moment
  for (std::size_t d = 0; d < n_dims; ++d) {
    if (moves[d] == DimMove::all_to_all) emit(d, current[d], target[d], Collective::all_to_all, gb, allgather_cost(gb, mesh, d));
    if (moves[d] == DimMove::all_reduce) emit(d, current[d], Replicate(), Collective::all_reduce, gb, allreduce_cost(gb, mesh, d));
  }
  // 4. all-gathers, slowest link first: the gathers that grow the bytes come last
  for (std::size_t k = n_dims; k-- > 0;) {
    const std::size_t d = by_bw[k];
    const bool gathers = moves[d] == DimMove::all_gather || moves[d] == DimMove::scatter_gather || moves[d] == DimMove::borrow;
    if (!gathers) continue;
    const Placement from = moves[d] == DimMove::all_gather ? current[d] : borrowed;
    gb *= n_of(d);
    emit(d, from, Replicate(), Collective::all_gather, gb, allgather_cost(gb, mesh, d));
  }
  // 5. free steps at the end: Replicate → the target's Partial
  for (std::size_t d = 0; d < n_dims; ++d) {
    const bool ends_replicated =
        moves[d] == DimMove::all_gather || moves[d] == DimMove::all_reduce || moves[d] == DimMove::scatter_gather || moves[d] == DimMove::borrow;
    if (ends_replicated && !target[d].is_replicate()) emit(d, Replicate(), target[d], Collective::none, 0, 0);
  }
  return total;
}

/// The consistent-model redistribution: the cheapest template choice, replayed through `on_step`.
template <class OnStep>
constexpr double consistent_redistribute(const Spec& current, const Spec& target, const TensorMeta& meta, const MeshTopology& mesh,
                                         OnStep&& on_step) {
  if (current.size() != mesh.size() || target.size() != mesh.size()) spec_mesh_mismatch(current, target, mesh.size());
  if (!std::is_constant_evaluated()) {
    check_shard_dims(current, meta.shape, "ctshard::redistribute_cost: current");
    check_shard_dims(target, meta.shape, "ctshard::redistribute_cost: target");
  }
  if (current == target) return 0.0;
  std::array<DimMove, max_mesh_dims> moves{};
  std::array<DimMove, max_mesh_dims> alternative{};  // none: no choice on that dim
  const bool can_borrow = meta.shape.rank > 0;
  for (std::size_t d = 0; d < mesh.size(); ++d) {
    const Placement& a = current[d];
    const Placement& c = target[d];
    if (mesh.sizes[d] == 1) {
      moves[d] = a == c ? DimMove::none : DimMove::local;
    } else if (a == c) {
      moves[d] = DimMove::none;
      if (can_borrow && a.is_replicate()) alternative[d] = DimMove::borrow;
      if (can_borrow && a.is_partial()) alternative[d] = DimMove::scatter_gather;  // sharded meanwhile: the others move fewer bytes
    } else if (a.is_replicate()) {
      moves[d] = DimMove::local;
      if (can_borrow && c.is_partial()) alternative[d] = DimMove::borrow;
    } else if (a.is_any_shard()) {
      moves[d] = c.is_any_shard() ? DimMove::all_to_all : DimMove::all_gather;
    } else if (c.is_any_shard()) {  // Partial -> Shard
      moves[d] = DimMove::reduce_scatter;
    } else {  // Partial -> Replicate / Partial(other)
      moves[d] = DimMove::all_reduce;
      if (can_borrow) alternative[d] = DimMove::scatter_gather;
    }
  }
  std::array<std::size_t, max_mesh_dims> choice_dims{};
  std::size_t choices = 0;
  for (std::size_t d = 0; d < mesh.size(); ++d)
    if (alternative[d] != DimMove::none) choice_dims[choices++] = d;
  const auto ignore = [](const RedistributeStep&) noexcept {};
  std::array<DimMove, max_mesh_dims> best = moves;
  double best_cost = consistent_schedule(current, target, moves, meta, mesh, ignore);
  for (std::uint32_t mask = 1; mask < (std::uint32_t{1} << choices); ++mask) {
    std::array<DimMove, max_mesh_dims> trial = moves;
    for (std::size_t k = 0; k < choices; ++k)
      if ((mask >> k & 1u) != 0) trial[choice_dims[k]] = alternative[choice_dims[k]];
    const double cost = consistent_schedule(current, target, trial, meta, mesh, ignore);
    if (cost < best_cost) {
      best_cost = cost;
      best = trial;
    }
  }
  return consistent_schedule(current, target, best, meta, mesh, on_step);
}

}  // namespace detail

/// The consistent-model redistribute cost in µs (see the file comment): finite for every pair of
/// specs, 0 for an unchanged spec or moves only on size-1 mesh dims. Throws ctshard::error when
/// the specs' ranks differ from the mesh's or a spec shards a tensor dim the tensor lacks.
[[nodiscard]] constexpr double consistent_redistribute_cost(const Spec& current, const Spec& target, const TensorMeta& meta,
                                                            const MeshTopology& mesh) {
  return detail::consistent_redistribute(current, target, meta, mesh, [](const RedistributeStep&) noexcept {});
}

}  // namespace ctshard
