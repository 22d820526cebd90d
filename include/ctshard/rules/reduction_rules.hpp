#pragma once
/// \file rules/reduction_rules.hpp
/// Single-dim strategies of reductions (sum, mean, amax / amin, max.dim, var_mean, ...) and of the
/// softmax family, which must keep one dim whole (DTensor `_math_ops.py`:
/// `_reduction_single_dim_strategy`, `mean_single_dim_strategy`, `_shard_non_reduction_dim`,
/// `std_var_single_dim_strategy`, `_shard_except_dim_strategy`, `_mean_full_mesh_strategy_filter`).
///
/// Reduced dims are given as a bit mask over the input's dims (bit d set: dim d is reduced).

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "ctshard/core/spec.hpp"
#include "ctshard/core/tensor_shape.hpp"
#include "ctshard/rules/rule_set.hpp"

namespace ctshard {

/// How a reduction treats a reduced dim that is sharded on the mesh dim.
/// - `partial`: the local reductions combine exactly with the Partial of that reduce op
///   (sum → P(sum), amax → P(max), amin → P(min); mean → P(avg), exact only with even shards, see
///   `evenly_sharded_reduction_filter`). A Partial input of the same op passes through.
/// - `replicate`: no exact combination exists (var, std, logsumexp, any/all, max.dim whose
///   indices are local to each shard): reduced dims are never sharded and no Partial row exists.
struct ReductionKind {
  std::optional<ReduceOp> partial;  ///< the Partial a sharded reduced dim produces, or none
};

/// Output dim of input dim `d` after reducing the dims in `reduced` (bit mask); `keepdim` keeps
/// every dim in place. DTensor `_infer_reduce_dims_map`.
[[nodiscard]] constexpr int reduced_output_dim(int d, std::uint64_t reduced, bool keepdim) noexcept {
  if (keepdim) return d;
  int out = d;
  for (int r = 0; r < d; ++r)
    if ((reduced >> r) & 1u) --out;
  return out;
}

/// The single-dim strategy of a reduction of a rank-`rank` input over the dims in `reduced`, with
/// `num_outputs` outputs that all share the reduced shape (var_mean: 2, max.dim: values and
/// indices). Rows, input dims in order: a kept dim d gives `[S?(out d)] * num_outputs + [S?(d)]`;
/// a reduced dim gives `[P(op)] * num_outputs + [S?(d)]` when `kind.partial`; then
/// `[P(op)] * num_outputs + [P(op)]` (Partial pass-through) when `kind.partial`.
/// One input; operand ranks recorded (outputs: `rank` with keepdim, else rank - |reduced|).
/// DTensor `_reduction_single_dim_strategy` / `mean_single_dim_strategy` /
/// `_shard_non_reduction_dim`. Throws ctshard::error when `reduced` names a dim >= rank.
[[nodiscard]] constexpr RuleSet reduction_single_dim_strategy(std::size_t rank, std::uint64_t reduced, bool keepdim, ReductionKind kind,
                                                              std::size_t num_outputs = 1) {
  if (rank < 64 && (reduced >> rank) != 0) throw error("ctshard::reduction_single_dim_strategy: a reduced dim is >= the input rank");
  int out_rank = static_cast<int>(rank);
  for (std::size_t d = 0; d < rank && !keepdim; ++d)
    if ((reduced >> d) & 1u) --out_rank;
  RuleSet rules(num_outputs, 1);
  for (std::size_t k = 0; k < num_outputs; ++k) rules.set_rank(k, out_rank);
  rules.set_rank(num_outputs, static_cast<int>(rank));
  std::vector<Placement> row(num_outputs + 1);
  for (std::size_t d = 0; d < rank; ++d) {
    const int dim = static_cast<int>(d);
    const bool is_reduced = ((reduced >> d) & 1u) != 0;
    if (is_reduced && !kind.partial) continue;
    const Placement out = is_reduced ? Partial(*kind.partial) : ShardingPlaceholder(reduced_output_dim(dim, reduced, keepdim));
    for (std::size_t k = 0; k < num_outputs; ++k) row[k] = out;
    row[num_outputs] = ShardingPlaceholder(dim);
    rules.add(row);
  }
  if (kind.partial) {
    for (auto& p : row) p = Partial(*kind.partial);
    rules.add(row);
  }
  return rules;
}

/// The single-dim strategy of an op that works independently along every dim but `active_dim`
/// (softmax / log_softmax and their backward, sort-like and scan ops): `[S?(d)] * num_operands`
/// for every d != active_dim of a rank-`rank` tensor; all operands share the shape. No Partial row.
/// DTensor `_shard_except_dim_strategy`.
[[nodiscard]] constexpr RuleSet shard_except_dim_strategy(std::size_t rank, std::size_t active_dim, std::size_t num_outputs, std::size_t num_inputs) {
  RuleSet rules(num_outputs, num_inputs);
  for (std::size_t k = 0; k < rules.width(); ++k) rules.set_rank(k, static_cast<int>(rank));
  std::vector<Placement> row(rules.width());
  for (std::size_t d = 0; d < rank; ++d) {
    if (d == active_dim) continue;
    for (auto& p : row) p = ShardingPlaceholder(static_cast<int>(d));
    rules.add(row);
  }
  return rules;
}

/// True when every dim in `reduced` of a tensor of `shape` placed as `spec` on `mesh` is split into
/// equal shards: its size is a multiple of its shard count (`num_shards_on_dim`, which decides how a
/// StridedShard counts). DTensor `_is_spec_evenly_sharded_on_dim`.
[[nodiscard]] constexpr bool is_evenly_sharded_on(const TensorShape& shape, const Spec& spec, MeshSizes mesh, std::uint64_t reduced) noexcept {
  for (std::size_t d = 0; d < shape.rank; ++d) {
    if (((reduced >> d) & 1u) == 0) continue;
    if (shape[d] % num_shards_on_dim(spec, mesh, static_cast<int>(d)) != 0) return false;
  }
  return true;
}

/// True when no shard of a reduced dim is empty: every dim in `reduced` of `shape`, cut in
/// `torch.chunk` fashion by each mesh dim sharding it (in mesh-dim order), leaves every device a
/// non-empty piece. Example: 4 rows over 3 devices chunk as 2, 2, 0 — false.
[[nodiscard]] constexpr bool has_no_empty_shard_on(const TensorShape& shape, const Spec& spec, MeshSizes mesh, std::uint64_t reduced) noexcept {
  for (std::size_t d = 0; d < shape.rank; ++d) {
    if (((reduced >> d) & 1u) == 0) continue;
    std::int64_t smallest = shape[d];  // smallest piece after the mesh dims seen so far
    for (std::size_t i = 0; i < spec.size(); ++i) {
      const Placement& p = spec[i];
      if (!p.is_any_shard() || static_cast<std::size_t>(p.dim) != d) continue;
      const std::int64_t n = shard_pieces(p, mesh[i]);
      const std::int64_t chunk = smallest / n + (smallest % n != 0 ? 1 : 0);
      // torch.chunk: pieces of `chunk`, the last one smaller; fewer than n pieces leave empties
      if (chunk == 0 || smallest / chunk + (smallest % chunk != 0 ? 1 : 0) < n) return false;  // ceil without overflow
      smallest = smallest - chunk * (n - 1);
    }
  }
  return true;
}

}  // namespace ctshard
