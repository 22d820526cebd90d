#pragma once
/// \file registry/dtensor_strategies.hpp
/// DTensor 2.13's op-strategy functions (`torch/distributed/tensor/_ops/_math_ops.py`,
/// `_tensor_ops.py`, `_matrix_ops.py`), which return whole full-mesh strategies that follow the
/// current input specs rather than single-dim rules, ported for the `dtensor` rules profile
/// (registry/dtensor_profile.hpp); and `listed_rows`, which turns such a list into a rule set and
/// a full-mesh filter that keeps exactly the listed rows. Each function names the DTensor function
/// it follows and returns its strategies in DTensor's order, one MeshStrategy per OpSpec. DTensor's
/// unsound answers are reproduced as DTensor gives them (the profile is for plans DTensor's own
/// dispatch executes); where DTensor raises, the port throws ctshard::error with DTensor's message.
///
/// Placement helpers carry DTensor's names (`replicate_reduction_dims`, `unshard_tensor_dim`, ...)
/// and act on a Spec, one placement per mesh dim; "shard-like" is Shard or StridedShard
/// (DTensor `_is_shard_like`).

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ctshard/core/placement.hpp"
#include "ctshard/core/spec.hpp"
#include "ctshard/core/tensor_shape.hpp"
#include "ctshard/error.hpp"
#include "ctshard/rules/full_mesh_filter.hpp"
#include "ctshard/rules/rule_set.hpp"

namespace ctshard {

/// One full-mesh strategy of a DTensor op-strategy function (an `OpSpec`): one spec per operand,
/// outputs first, then the tensor inputs in call order.
using MeshStrategy = std::vector<Spec>;

/// Tensor dims as a bit mask (bit d: tensor dim d).
using TensorDimMask = std::uint64_t;

namespace dtensor_ops {

/// Throws ctshard::error "DTensor 2.13 raises: <what>" (the op strategy refuses the call).
[[noreturn]] inline void raise(std::string_view what) { throw error("DTensor 2.13 raises: " + std::string(what)); }

/// The spec with placement `k` replaced (helper for the rewrites below).
[[nodiscard]] inline Spec with_placement(Spec s, std::size_t mesh_dim, const Placement& p) {
  s[mesh_dim] = p;
  return s;
}

/// `p` moved to tensor dim `dim`, keeping a StridedShard's split factor.
[[nodiscard]] inline Placement shard_like_on(const Placement& p, int dim) {
  return p.is_strided_shard() ? StridedShard(dim, p.split_factor) : Shard(dim);
}

/// True when `mask` holds tensor dim `d`.
[[nodiscard]] constexpr bool has_dim(TensorDimMask mask, int d) noexcept { return d >= 0 && d < 64 && ((mask >> d) & 1u) != 0; }

/// DTensor `replicate_reduction_dims`: every Partial and every shard of a dim in `dims` becomes
/// Replicate.
[[nodiscard]] inline Spec replicate_reduction_dims(Spec s, TensorDimMask dims) {
  for (std::size_t m = 0; m < s.size(); ++m)
    if (s[m].is_partial() || (s[m].is_any_shard() && has_dim(dims, s[m].dim))) s[m] = Replicate();
  return s;
}

/// DTensor `unshard_tensor_dim`: shards of tensor dim `dim` become Replicate.
[[nodiscard]] inline Spec unshard_tensor_dim(Spec s, int dim) {
  for (std::size_t m = 0; m < s.size(); ++m)
    if (s[m].is_any_shard() && s[m].dim == dim) s[m] = Replicate();
  return s;
}

/// DTensor `replicate_tensor_dim`: Partials and shards of tensor dim `dim` become Replicate.
[[nodiscard]] inline Spec replicate_tensor_dim(Spec s, int dim) {
  for (std::size_t m = 0; m < s.size(); ++m)
    if (s[m].is_partial() || (s[m].is_any_shard() && s[m].dim == dim)) s[m] = Replicate();
  return s;
}

/// DTensor `_replicate_dims_start_at`: Partials and shards of a dim >= `start` become Replicate.
[[nodiscard]] inline Spec replicate_dims_start_at(Spec s, int start = 0) {
  for (std::size_t m = 0; m < s.size(); ++m)
    if (s[m].is_partial() || (s[m].is_any_shard() && s[m].dim >= start)) s[m] = Replicate();
  return s;
}

/// DTensor `_skip_dim`: shards of a dim >= `skipped` move one dim down (no shard sits on `skipped`).
[[nodiscard]] inline Spec skip_dim(Spec s, int skipped) {
  for (std::size_t m = 0; m < s.size(); ++m)
    if (s[m].is_any_shard() && s[m].dim >= skipped) s[m] = shard_like_on(s[m], s[m].dim - 1);
  return s;
}

/// DTensor `shift_shard_dims_after_remove`: shards of a dim > `removed` move one dim down.
[[nodiscard]] inline Spec shift_shard_dims_after_remove(Spec s, int removed) {
  for (std::size_t m = 0; m < s.size(); ++m)
    if (s[m].is_any_shard() && s[m].dim > removed) s[m] = shard_like_on(s[m], s[m].dim - 1);
  return s;
}

/// DTensor `shift_shard_dims_after_insert`: shards of a dim >= `inserted` move one dim up.
[[nodiscard]] inline Spec shift_shard_dims_after_insert(Spec s, int inserted) {
  for (std::size_t m = 0; m < s.size(); ++m)
    if (s[m].is_any_shard() && s[m].dim >= inserted) s[m] = shard_like_on(s[m], s[m].dim + 1);
  return s;
}

/// DTensor `is_tensor_dim_sharded`: some mesh dim shards tensor dim `dim`.
[[nodiscard]] inline bool is_tensor_dim_sharded(const Spec& s, int dim) {
  for (const Placement& p : s)
    if (p.is_any_shard() && p.dim == dim) return true;
  return false;
}

/// DTensor `is_tensor_partial`: some mesh dim is Partial.
[[nodiscard]] inline bool is_tensor_partial(const Spec& s) {
  for (const Placement& p : s)
    if (p.is_partial()) return true;
  return false;
}

/// DTensor `DTensorSpec.is_sharded`: some mesh dim is shard-like.
[[nodiscard]] inline bool is_sharded(const Spec& s) {
  for (const Placement& p : s)
    if (p.is_any_shard()) return true;
  return false;
}

/// Every Partial becomes Replicate (create_like / equal).
[[nodiscard]] inline Spec partials_to_replicate(Spec s) {
  for (std::size_t m = 0; m < s.size(); ++m)
    if (s[m].is_partial()) s[m] = Replicate();
  return s;
}

/// DTensor `is_tensor_evenly_shardable_on_dim(shape, spec, dim)`: the shards of `dim` divide its
/// size (a StridedShard's split factor times the shards so far must divide it too).
[[nodiscard]] inline bool is_tensor_evenly_shardable_on_dim(const TensorShape& shape, const Spec& s, MeshSizes mesh, int dim) {
  std::int64_t shards = 1;
  for (std::size_t m = 0; m < s.size(); ++m) {
    const Placement& p = s[m];
    if (!p.is_any_shard() || p.dim != dim) continue;
    shards *= mesh[m];
    if (p.is_strided_shard() && shape[static_cast<std::size_t>(dim)] % (p.split_factor * shards) != 0) return false;
  }
  return shape[static_cast<std::size_t>(dim)] % shards == 0;
}

/// DTensor `is_tensor_evenly_shardable(shape, spec)`: every sharded dim evenly sharded.
[[nodiscard]] inline bool is_tensor_evenly_shardable(const TensorShape& shape, const Spec& s, MeshSizes mesh) {
  std::vector<std::int64_t> shards(shape.rank, 1);
  for (std::size_t m = 0; m < s.size(); ++m) {
    const Placement& p = s[m];
    if (!p.is_any_shard()) continue;
    if (p.dim >= static_cast<int>(shape.rank)) return false;
    const auto d = static_cast<std::size_t>(p.dim);
    shards[d] *= mesh[m];
    const std::int64_t need = p.is_strided_shard() ? p.split_factor * shards[d] : shards[d];
    if (shape[d] % need != 0) return false;
  }
  return true;
}

/// DTensor `_infer_reduce_dims_map`: each input dim's output dim after the reduction, -1 for a
/// reduced dim that keepdim does not keep.
[[nodiscard]] inline std::vector<int> reduce_dims_map(TensorDimMask reduced, std::size_t ndim, bool keepdim) {
  std::vector<int> map;
  int next = 0;
  for (std::size_t d = 0; d < ndim; ++d) map.push_back(has_dim(reduced, static_cast<int>(d)) && !keepdim ? -1 : next++);
  return map;
}

/// DTensor `map_placements_after_reduction`: Replicate and Partial stay; a shard of a reduced dim
/// becomes Partial(`op`); any other shard moves to its output dim.
[[nodiscard]] inline Spec map_placements_after_reduction(Spec s, TensorDimMask reduced, const std::vector<int>& dims_map, ReduceOp op) {
  for (std::size_t m = 0; m < s.size(); ++m) {
    const Placement& p = s[m];
    if (!p.is_any_shard()) continue;
    const int to = p.dim < static_cast<int>(dims_map.size()) ? dims_map[static_cast<std::size_t>(p.dim)] : -1;
    s[m] = to == -1 || has_dim(reduced, p.dim) ? Partial(op) : shard_like_on(p, to);
  }
  return s;
}

/// DTensor `common_reduction_strategy` for one input strategy (the current spec): when the
/// reduction is linear — `linear`, every Partial of the input owes `op` itself, and for `avg` every
/// reduced dim evenly sharded — the input stays as it is; otherwise Partials and shards of the
/// reduced dims are replicated first. The output maps the placements through the reduction.
/// Returns {output, input}.
[[nodiscard]] inline MeshStrategy common_reduction_strategy(const Spec& current, const TensorShape& shape, MeshSizes mesh, TensorDimMask reduced,
                                                            bool keepdim, bool linear, ReduceOp op) {
  bool is_linear = linear;
  if (op == ReduceOp::avg)
    for (std::size_t d = 0; d < shape.rank && is_linear; ++d)
      if (has_dim(reduced, static_cast<int>(d)) && !is_tensor_evenly_shardable_on_dim(shape, current, mesh, static_cast<int>(d))) is_linear = false;
  for (const Placement& p : current)
    if (p.is_partial() && p.reduce_op != op) is_linear = false;
  const Spec input = is_linear ? current : replicate_reduction_dims(current, reduced);
  return {map_placements_after_reduction(input, reduced, reduce_dims_map(reduced, shape.rank, keepdim), op), input};
}

/// DTensor `softmax_strategy` (`_softmax`, `_log_softmax`, `_safe_softmax`): the input replicated
/// along the softmax dim (and every Partial reduced); the output follows it. Returns {out, in}.
[[nodiscard]] inline MeshStrategy softmax_strategy(const Spec& current, int dim) {
  const Spec t = replicate_reduction_dims(current, TensorDimMask{1} << dim);
  return {t, t};
}

/// DTensor `softmax_backward_strategy` (`_softmax_backward_data`, `_log_softmax_backward_data`):
/// follows grad_output, or the output when it has more shards (`num_shards`), replicated along the
/// softmax dim; both inputs take that spec. Returns {grad_input, grad_output, output}.
[[nodiscard]] inline MeshStrategy softmax_backward_strategy(const Spec& grad_output, const Spec& output, MeshSizes mesh, int dim) {
  const Spec& src = num_shards(grad_output, mesh) >= num_shards(output, mesh) ? grad_output : output;
  const Spec t = replicate_reduction_dims(src, TensorDimMask{1} << dim);
  return {t, t, t};
}

/// DTensor `propagate_single_input_strategy` (alias, detach, empty_like): {current, current}.
[[nodiscard]] inline MeshStrategy propagate_single_input_strategy(const Spec& current) { return {current, current}; }

/// DTensor `create_like_strategy` (zeros_like, ones_like, full_like, rand_like, randn_like): the
/// output follows the input with Partials replicated; the input stays. {out, in}.
[[nodiscard]] inline MeshStrategy create_like_strategy(const Spec& current) { return {partials_to_replicate(current), current}; }

/// DTensor `new_factory_strategy` (new_empty, new_zeros, new_ones, new_full, new_empty_strided):
/// a Replicate output; then, when the output shape equals the input's and the input is sharded
/// (or the factory is uninitialized: new_empty*), the output following the input (DTensor prices
/// that row -0.1 to prefer it; ctshard prices both 0 and lists it last, so the tie rule picks it).
[[nodiscard]] inline std::vector<MeshStrategy> new_factory_strategy(const Spec& current, const TensorShape& input, const TensorShape& output,
                                                                    bool uninitialized) {
  std::vector<MeshStrategy> rows{{Spec(current.size()), current}};
  if (input == output && (is_sharded(current) || uninitialized)) rows.push_back({current, current});
  return rows;
}

/// DTensor `select_int_strategy`: the selected dim unsharded, the output's shard dims above it one
/// lower. {out, in}.
[[nodiscard]] inline MeshStrategy select_int_strategy(const Spec& current, int dim) {
  const Spec in = is_tensor_dim_sharded(current, dim) ? unshard_tensor_dim(current, dim) : current;
  return {shift_shard_dims_after_remove(in, dim), in};
}

/// DTensor `gen_slice_strategy`: the input as it is unless the slice dim is sharded and the slice
/// is not the whole dim (start 0, end the size, step 1); then that dim unsharded (DTensor's OpSpec
/// has no input spec: the input takes the output spec). `start` / `end` already normalised.
[[nodiscard]] inline MeshStrategy slice_strategy(const Spec& current, int dim, bool whole_dim) {
  if (!is_tensor_dim_sharded(current, dim) || whole_dim) return {current, current};
  const Spec t = unshard_tensor_dim(current, dim);
  return {t, t};
}

/// DTensor `slice_backward_rules`: shards of the (unnormalised) `dim` replicated; the input takes
/// the output spec. DTensor compares the raw `dim` argument, so a negative dim never matches.
[[nodiscard]] inline MeshStrategy slice_backward_strategy(const Spec& current, std::int64_t raw_dim) {
  Spec t = current;
  for (std::size_t m = 0; m < t.size(); ++m)
    if (t[m].is_any_shard() && t[m].dim == raw_dim) t[m] = Replicate();
  return {t, t};
}

/// DTensor `gen_slice_scatter_strategy`: input and src follow the input unless it is sharded on
/// the scatter dim or Partial; then both take the input's spec with the scatter dim and every
/// Partial replicated. {out, input, src}.
[[nodiscard]] inline MeshStrategy slice_scatter_strategy(const Spec& input, int dim) {
  if (!(is_tensor_dim_sharded(input, dim) || is_tensor_partial(input))) return {input, input, input};
  const Spec t = replicate_tensor_dim(input, dim);
  return {t, t, t};
}

/// DTensor `split_strategy` (split.Tensor, split_with_sizes): the split dim unsharded; every piece
/// takes that spec. {pieces..., in}.
[[nodiscard]] inline MeshStrategy split_strategy(const Spec& current, int dim, std::size_t pieces) {
  const Spec t = is_tensor_dim_sharded(current, dim) ? unshard_tensor_dim(current, dim) : current;
  MeshStrategy row(pieces, t);
  row.push_back(t);
  return row;
}

/// DTensor `gen_unbind_strategy`: raises when the unbind dim is sharded ("Attempted to unbind along
/// the sharded dimension"); otherwise each piece has the input's shards above the dim one lower.
[[nodiscard]] inline MeshStrategy unbind_strategy(const Spec& current, int dim, std::size_t pieces) {
  if (is_tensor_dim_sharded(current, dim))
    raise("Attempted to unbind along the sharded dimension " + std::to_string(dim) +
          ". It cannot be performed without redistribution, which is disallowed by the current operator.");
  MeshStrategy row(pieces, shift_shard_dims_after_remove(current, dim));
  row.push_back(current);
  return row;
}

/// DTensor `cat_strategy`: one row per distinct exemplar — each input's current spec with the cat
/// dim unsharded, in input order —, every input and the output taking it.
[[nodiscard]] inline std::vector<MeshStrategy> cat_strategy(std::span<const Spec> current, int dim) {
  std::vector<Spec> seen;
  std::vector<MeshStrategy> rows;
  for (const Spec& s : current) {
    const Spec e = is_tensor_dim_sharded(s, dim) ? unshard_tensor_dim(s, dim) : s;
    bool dup = false;
    for (const Spec& q : seen) dup = dup || q == e;
    if (dup) continue;
    seen.push_back(e);
    rows.emplace_back(current.size() + 1, e);
  }
  return rows;
}

/// DTensor `_derive_follow_placements_from_tuple_strategy`'s `merge_placement`: equal placements
/// stay; Partial meets a shard → the shard, another Partial → Replicate, Replicate → the Partial;
/// a shard meets another shard → Replicate, anything else → the shard; Replicate → the new one.
[[nodiscard]] inline Placement merge_follow_placement(const Placement& cur, const Placement& next) {
  if (cur == next) return cur;
  if (cur.is_partial()) {
    if (next.is_any_shard()) return next;
    if (next.is_partial()) return Replicate();
    return cur;
  }
  if (cur.is_any_shard()) return next.is_any_shard() ? Replicate() : cur;
  return next;
}

/// DTensor `stack_strategy`: the inputs' specs merged mesh dim by mesh dim
/// (`merge_follow_placement`, inputs in order); every input takes the merged spec; the output has
/// its shard dims at or above the new dim one higher. `dim` already normalised against rank + 1.
[[nodiscard]] inline MeshStrategy stack_strategy(std::span<const Spec> current, int dim) {
  Spec follow = current.front();
  for (std::size_t i = 1; i < current.size(); ++i)
    for (std::size_t m = 0; m < follow.size(); ++m) follow[m] = merge_follow_placement(follow[m], current[i][m]);
  MeshStrategy row{shift_shard_dims_after_insert(follow, dim)};
  for (std::size_t i = 0; i < current.size(); ++i) row.push_back(follow);
  return row;
}

/// DTensor `equal_strategy` (equal, is_same_size): both inputs take the spec of the one with more
/// shards (self on a tie), Partials replicated; Replicate when either is 0-d. No output spec
/// (equal returns a bool): {self, other}.
[[nodiscard]] inline MeshStrategy equal_strategy(const Spec& self, const Spec& other, MeshSizes mesh, bool any_0d) {
  if (any_0d) return {Spec(self.size()), Spec(self.size())};
  const Spec& pick = num_shards(self, mesh) >= num_shards(other, mesh) ? self : other;
  const Spec t = partials_to_replicate(pick);
  return {t, t};
}

/// DTensor `transpose_strategy` (t.default): a 2-D input's shards swap dims 0 and 1; 0-d and 1-d
/// inputs keep their spec. {out, in}.
[[nodiscard]] inline MeshStrategy transpose_strategy(const Spec& current, std::size_t rank) {
  Spec out = current;
  if (rank == 2)
    for (std::size_t m = 0; m < out.size(); ++m)
      if (out[m].is_any_shard()) out[m] = shard_like_on(out[m], 1 - out[m].dim);
  return {out, current};
}

/// Which reduction `nll_loss_forward` / `nll_loss_backward` apply (aten's `reduction` integer).
enum class NllReduction : std::uint8_t { none = 0, mean = 1, sum = 2 };

/// DTensor `nll_loss_forward_strategy`: self replicated on the class dim (and every Partial), the
/// target following it without that dim, weight replicated. The output follows the target
/// (reduction none, total_weight Replicate) or is the reduction of the target's layout: shards
/// become Partial(avg) / Partial(sum), total_weight Partial(sum). Raises for reduction mean when
/// the target would be unevenly sharded. {output, total_weight, self, target, weight?}.
[[nodiscard]] inline MeshStrategy nll_loss_forward_strategy(const Spec& self, const Spec* weight, const TensorShape& self_shape,
                                                            const TensorShape& target_shape, MeshSizes mesh, NllReduction reduction) {
  const int channel = self_shape.rank >= 2 ? 1 : 0;
  const Spec in_self = replicate_reduction_dims(self, TensorDimMask{1} << channel);
  const Spec in_target = skip_dim(in_self, channel);
  Spec output = in_target, total_weight(self.size());
  if (reduction != NllReduction::none) {
    if (reduction == NllReduction::mean && !is_tensor_evenly_shardable(target_shape, in_target, mesh))
      raise("The intermediate results of nll_loss cannot be evenly sharded, resulting in biased mean result.");
    const TensorDimMask all = target_shape.rank == 0 ? 0 : ~TensorDimMask{0} >> (64 - target_shape.rank);
    const auto dims_map = reduce_dims_map(all, target_shape.rank, false);
    output = map_placements_after_reduction(in_target, all, dims_map, reduction == NllReduction::mean ? ReduceOp::avg : ReduceOp::sum);
    total_weight = map_placements_after_reduction(in_target, all, dims_map, ReduceOp::sum);
  }
  MeshStrategy row{output, total_weight, in_self, in_target};
  if (weight != nullptr) row.push_back(replicate_dims_start_at(*weight));
  return row;
}

/// DTensor `nll_loss_backward_strategy`: self and target as in the forward; grad_output follows the
/// target (reduction none) or is replicated; weight replicated; total_weight replicated for
/// reduction mean, else kept as it is. The gradient follows self.
/// {grad_input, grad_output, self, target, weight?, total_weight}.
[[nodiscard]] inline MeshStrategy nll_loss_backward_strategy(const Spec& grad_output, const Spec& self, const Spec* weight, const Spec& total_weight,
                                                             const TensorShape& self_shape, NllReduction reduction) {
  const int channel = self_shape.rank >= 2 ? 1 : 0;
  const Spec in_self = replicate_reduction_dims(self, TensorDimMask{1} << channel);
  const Spec in_target = skip_dim(in_self, channel);
  const Spec in_grad = reduction == NllReduction::none ? in_target : replicate_dims_start_at(grad_output);
  MeshStrategy row{in_self, in_grad, in_self, in_target};
  if (weight != nullptr) row.push_back(replicate_dims_start_at(*weight));
  row.push_back(reduction == NllReduction::mean ? replicate_dims_start_at(total_weight) : total_weight);
  return row;
}

}  // namespace dtensor_ops

/// A list of full-mesh strategies as the enumerator consumes it: `rules`, whose mesh expansion
/// contains every listed strategy, and `filter`, which keeps exactly the listed ones.
struct ListedRows {
  RuleSet rules;
  FullMeshFilter filter;
};

/// `rows` (each with `num_outputs + num_inputs` specs of `mesh_ndim` placements, outputs first) as
/// ListedRows: the single-dim rules are the distinct per-mesh-dim columns of the rows (a column is
/// the placements of every operand on one mesh dim), in order of first appearance row by row,
/// mesh dim 0 first — so DTensor's order mostly survives in the enumeration order (mesh dim 0
/// slowest), which DTensor's tie rules read; the all-Replicate column is the framework's row. The
/// filter keeps a candidate only when its operand specs equal one listed row. Throws ctshard::error
/// when a row has the wrong number of specs or placements, or for more than 254 distinct columns.
[[nodiscard]] inline ListedRows listed_rows(std::vector<MeshStrategy> rows, std::size_t num_outputs, std::size_t num_inputs, std::size_t mesh_ndim) {
  ListedRows out{RuleSet(num_outputs, num_inputs), {}};
  const std::size_t width = num_outputs + num_inputs;
  std::vector<Placement> column(width);
  for (const MeshStrategy& row : rows) {
    if (row.size() != width)
      throw error("ctshard::listed_rows: a strategy has " + std::to_string(row.size()) + " specs for " + std::to_string(width) + " operands");
    for (const Spec& s : row)
      if (s.size() != mesh_ndim)
        throw error("ctshard::listed_rows: spec '" + to_string(s) + "' has " + std::to_string(s.size()) + " placements on a " +
                    std::to_string(mesh_ndim) + "-dim mesh");
    for (std::size_t m = 0; m < mesh_ndim; ++m) {
      for (std::size_t k = 0; k < width; ++k) column[k] = row[k][m];
      if (is_replicate_row(column)) continue;
      bool known = false;
      for (std::size_t r = 0; r < out.rules.size() && !known; ++r) {
        const auto have = out.rules.row(r);
        known = std::equal(have.begin(), have.end(), column.begin());
      }
      if (!known) out.rules.add(column);
    }
  }
  if (out.rules.size() > 254) throw error("ctshard::listed_rows: more than 254 distinct single-dim columns");
  auto kept = std::make_shared<const std::vector<MeshStrategy>>(std::move(rows));
  out.filter = [kept](std::span<const Spec> operands, std::span<const TensorMeta>, MeshSizes) {
    for (const MeshStrategy& row : *kept)
      if (std::equal(row.begin(), row.end(), operands.begin(), operands.end())) return true;
    return false;
  };
  return out;
}

}  // namespace ctshard
