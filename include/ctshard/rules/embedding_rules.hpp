#pragma once
/// \file rules/embedding_rules.hpp
/// Single-dim strategies of gathers and scatters by index: embedding and its dense backward
/// (DTensor `_embedding_ops.py`), embedding bags and their backward (no DTensor rule), and
/// advanced indexing `index.Tensor` / `index_put`
/// (DTensor `_tensor_ops.py`: `index_single_dim_strategy`, `index_put_single_dim_strategy`).
///
/// Row-wise embedding: DTensor marks the output (and the indices) `_MaskPartial`, a sum-Partial
/// whose reduction first zeroes the rows of out-of-shard indices. ctshard has no mask placement and
/// writes that row `[P(sum), S?(0), R]`: each rank looks up only the indices that fall in its block
/// of weight rows and yields zeros for the others, so the sum over ranks is exactly the global
/// lookup. The executor must apply the mask locally (shift indices by the block offset, zero the
/// rows of out-of-range indices) before the output can be treated as an ordinary P(sum); the
/// indices stay Replicate (DTensor's `R -> _MaskPartial` is the same free local step).

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "ctshard/core/spec.hpp"
#include "ctshard/core/tensor_shape.hpp"
#include "ctshard/rules/rule_set.hpp"

namespace ctshard {

/// `embedding(weight [V, D], indices [*I]) -> out [*I, D]` with `indices_rank = |I|`. Operands
/// `[out, weight, indices]`; rows in DTensor's order: column-wise `[S?(|I|), S?(1), R]`, row-wise
/// `[P(sum), S?(0), R]` (DTensor `_MaskPartial`, see the file comment), then for every index dim i
/// `[S?(i), R, S?(i)]`. DTensor `embedding_strategy`.
[[nodiscard]] constexpr RuleSet embedding_single_dim_strategy(std::size_t indices_rank) {
  RuleSet rules(1, 2);
  rules.set_rank(0, static_cast<int>(indices_rank + 1));
  rules.set_rank(1, 2);
  rules.set_rank(2, static_cast<int>(indices_rank));
  rules.add({ShardingPlaceholder(static_cast<int>(indices_rank)), ShardingPlaceholder(1), Replicate()});
  rules.add({Partial(ReduceOp::sum), ShardingPlaceholder(0), Replicate()});
  for (std::size_t i = 0; i < indices_rank; ++i) {
    const Placement s = ShardingPlaceholder(static_cast<int>(i));
    rules.add({s, Replicate(), s});
  }
  return rules;
}

/// Full-mesh check of `embedding_single_dim_strategy` (operands `[out, weight, indices]`): false
/// when the weight's vocab dim 0 is a StridedShard on some mesh dim. The row-wise row's masked
/// lookup needs each rank's weight rows to be one contiguous block (index minus block offset);
/// a `_S(0, sf)` block is `sf` pieces, so the lookup reads the wrong rows (the simulated mesh
/// shows it). DTensor writes that row with an explicit `Shard(0)`, never a StridedShard.
[[nodiscard]] inline bool embedding_contiguous_vocab(std::span<const Spec> operand_specs) noexcept {
  for (const Placement& p : operand_specs[1])
    if (p.is_strided_shard() && p.dim == 0) return false;
  return true;
}

/// `embedding_dense_backward(grad_out [*I, D], indices [*I], num_weights, padding_idx,
/// scale_grad_by_freq) -> grad_weight [V, D]`. Operands `[grad_weight, grad_out, indices]`; rows:
/// column-wise `[S?(1), S?(|I|), R]`; for every index dim i `[P(sum), S?(i), S?(i)]` (each rank
/// scatter-adds its own slice of the batch); `[P(sum), P(sum), R]` (linear in grad_out).
/// With `scale_grad_by_freq` the batch rows are left out: the kernel divides each row's gradient
/// by the index's frequency in the batch it sees, and local frequencies differ from the global
/// one, so the per-rank results do not sum to the global gradient (DTensor
/// `embedding_dense_backward_strategy` lists the rows regardless — unsound for that flag).
[[nodiscard]] constexpr RuleSet embedding_dense_backward_single_dim_strategy(std::size_t indices_rank, bool scale_grad_by_freq) {
  RuleSet rules(1, 2);
  rules.set_rank(0, 2);
  rules.set_rank(1, static_cast<int>(indices_rank + 1));
  rules.set_rank(2, static_cast<int>(indices_rank));
  rules.add({ShardingPlaceholder(1), ShardingPlaceholder(static_cast<int>(indices_rank)), Replicate()});
  for (std::size_t i = 0; i < indices_rank && !scale_grad_by_freq; ++i) {
    const Placement s = ShardingPlaceholder(static_cast<int>(i));
    rules.add({Partial(ReduceOp::sum), s, s});
  }
  rules.add({Partial(ReduceOp::sum), Partial(ReduceOp::sum), Replicate()});
  return rules;
}

/// aten's `mode` argument of the embedding-bag ops.
enum class EmbeddingBagMode : std::int64_t { sum = 0, mean = 1, max = 2 };

/// What the embedding-bag rules need of a call.
struct EmbeddingBagParams {
  EmbeddingBagMode mode = EmbeddingBagMode::sum;
  bool per_sample_weights = false;  ///< a `per_sample_weights` tensor is passed (mode sum only)
};

/// `_embedding_bag(weight [V, D], indices [L], offsets [B(+1)], scale_grad_by_freq, mode, sparse,
/// per_sample_weights? [L], include_last_offset, padding_idx) -> (output [B, D], offset2bag,
/// bag_size, max_indices)`. Operands `[output, offset2bag, bag_size, max_indices, weight, indices,
/// offsets, per_sample_weights?]`; rows:
/// - column-wise `[S?(1), R, R, S?(1) (mode max) or R, S?(1), R, R, R?]`;
/// - row-wise, mode sum only: `[P(sum), R, R, R, S?(0), R, R, R?]`, the masked Partial of
///   ctshard's embedding rule (each rank sums only the rows of its block, see the file comment; a
///   masked mean would still divide by the whole bag's size, and a masked max has no neutral
///   value, which no local `_embedding_bag` call gives);
/// - `[P(r), R, R, R, P(r), R, R, R?]` for r in sum, avg, modes sum and mean (linear in weight);
/// - `[P(r), R, R, R, R, R, R, P(r)]` for r in sum, avg with per_sample_weights (linear in them).
/// The bags are not split: `offsets` cut the flat `indices` at data-dependent places, and
/// `offset2bag` holds global bag numbers. The auxiliary outputs depend on indices and offsets only
/// (Replicate). No DTensor rule exists.
[[nodiscard]] constexpr RuleSet embedding_bag_single_dim_strategy(const EmbeddingBagParams& p) {
  RuleSet rules(4, p.per_sample_weights ? 4 : 3);
  rules.set_rank(0, 2);
  rules.set_rank(1, 1);
  rules.set_rank(2, 1);
  rules.set_rank(3, p.mode == EmbeddingBagMode::max ? 2 : 1);
  rules.set_rank(4, 2);
  for (std::size_t k = 5; k < rules.width(); ++k) rules.set_rank(k, 1);
  std::vector<Placement> row(rules.width(), Replicate());
  const Placement column = ShardingPlaceholder(1);
  row[0] = row[4] = column;
  if (p.mode == EmbeddingBagMode::max) row[3] = column;
  rules.add(row);
  row.assign(row.size(), Replicate());
  if (p.mode == EmbeddingBagMode::sum) {
    row[0] = Partial(ReduceOp::sum);
    row[4] = ShardingPlaceholder(0);
    rules.add(row);
  }
  for (ReduceOp r : {ReduceOp::sum, ReduceOp::avg}) {
    if (p.mode == EmbeddingBagMode::max) break;
    row.assign(row.size(), Replicate());
    row[0] = row[4] = Partial(r);
    rules.add(row);
  }
  for (ReduceOp r : {ReduceOp::sum, ReduceOp::avg}) {
    if (!p.per_sample_weights) break;
    row.assign(row.size(), Replicate());
    row[0] = row[7] = Partial(r);
    rules.add(row);
  }
  return rules;
}

/// `_embedding_bag_backward(grad [B, D], indices, offsets, offset2bag, bag_size, maximum_indices,
/// num_weights, scale_grad_by_freq, mode, sparse, per_sample_weights?, padding_idx) -> grad_weight
/// [num_weights, D]` (dense, or sparse with `sparse`: the same logical tensor). Operands
/// `[grad_weight, grad, indices, offsets, offset2bag, bag_size, maximum_indices,
/// per_sample_weights?]`; rows:
/// - column-wise `[S?(1), S?(1), R, R, R, R, S?(1) (mode max) or R, R?]`;
/// - `[P(r), P(r), R, R, R, R, R, R?]` for r in sum, avg (linear in grad; scale_grad_by_freq counts
///   the replicated indices, so it stays exact);
/// - `[P(r), R, R, R, R, R, R, P(r)]` for r in sum, avg with per_sample_weights (linear in them).
/// No row-wise row: like `embedding_dense_backward`, the gradient comes out whole or as a P(sum)
/// and a row-sharded table takes it by reduce-scatter. No DTensor rule exists.
[[nodiscard]] constexpr RuleSet embedding_bag_backward_single_dim_strategy(const EmbeddingBagParams& p) {
  RuleSet rules(1, p.per_sample_weights ? 7 : 6);
  rules.set_rank(0, 2);
  rules.set_rank(1, 2);
  for (std::size_t k = 2; k < rules.width(); ++k) rules.set_rank(k, 1);
  rules.set_rank(6, p.mode == EmbeddingBagMode::max ? 2 : 1);
  std::vector<Placement> row(rules.width(), Replicate());
  const Placement column = ShardingPlaceholder(1);
  row[0] = row[1] = column;
  if (p.mode == EmbeddingBagMode::max) row[6] = column;
  rules.add(row);
  for (ReduceOp r : {ReduceOp::sum, ReduceOp::avg}) {
    row.assign(row.size(), Replicate());
    row[0] = row[1] = Partial(r);
    rules.add(row);
  }
  for (ReduceOp r : {ReduceOp::sum, ReduceOp::avg}) {
    if (!p.per_sample_weights) break;
    row.assign(row.size(), Replicate());
    row[0] = row[7] = Partial(r);
    rules.add(row);
  }
  return rules;
}

/// One item of an advanced-indexing list (`Tensor?[] indices`): a `None` hole (`present` false)
/// selects a whole dim; an index tensor selects along one dim, or, when `mask` (a bool / uint8
/// tensor), along `shape.rank` dims at once (PyTorch turns a mask into its nonzero coordinates).
struct IndexEntry {
  bool present = false;
  TensorShape shape{};
  bool mask = false;
  /// Self dims this entry consumes: 1 for None or an integer index, the rank of a mask.
  [[nodiscard]] constexpr std::size_t consumed_dims() const noexcept { return present && mask ? shape.rank : std::size_t{1}; }
};

/// Where the dims of `self[indices]` come from (PyTorch advanced-indexing layout).
struct IndexLayout {
  std::vector<int> non_indexed;    ///< self dims no index tensor consumes, in order
  std::vector<int> output_dim;     ///< output dim of each non_indexed dim
  std::size_t broadcast_rank = 0;  ///< rank of the broadcast index shape (a mask contributes 1)
  std::size_t insert_dim = 0;      ///< output dim where the broadcast dims start
  std::size_t output_rank = 0;
  std::size_t num_masks = 0;
  std::size_t num_tensors = 0;
};

/// The advanced-indexing layout of `self[indices]` for a rank-`self_rank` self. Index dims are
/// inserted where the first index tensor stood when the index tensors are adjacent in the list,
/// else at the front. Throws ctshard::error when the indices consume more dims than self has, a
/// mask is 0-d, a mask is combined with other index tensors, or the list has no tensor.
[[nodiscard]] constexpr IndexLayout index_layout(std::size_t self_rank, std::span<const IndexEntry> indices) {
  IndexLayout l;
  std::size_t pos = 0, first = 0, first_entry = 0, last_entry = 0;
  std::vector<std::size_t> start(indices.size());  // first self dim each entry consumes
  for (std::size_t e = 0; e < indices.size(); ++e) {
    const IndexEntry& ix = indices[e];
    start[e] = pos;
    if (!ix.present) {
      ++pos;
      continue;
    }
    if (ix.mask && ix.shape.rank == 0) throw error("ctshard::index_layout: a 0-d boolean index is not supported");
    if (l.num_tensors == 0) {
      first = pos;
      first_entry = e;
    }
    last_entry = e;
    ++l.num_tensors;
    if (ix.mask) ++l.num_masks;
    pos += ix.consumed_dims();
  }
  if (pos > self_rank)
    throw error("ctshard::index_layout: the indices consume " + std::to_string(pos) + " dims of a rank-" + std::to_string(self_rank) + " tensor");
  std::vector<std::uint8_t> indexed(self_rank, 0);  // not vector<bool>: its specialisation costs every includer ~0.1 s
  for (std::size_t e = 0; e < indices.size(); ++e)
    for (std::size_t k = 0; indices[e].present && k < indices[e].consumed_dims(); ++k) indexed[start[e] + k] = 1;
  if (l.num_tensors == 0) throw error("ctshard::index_layout: the index list holds no tensor");
  if (l.num_masks > 0 && l.num_tensors > 1) throw error("ctshard::index_layout: a boolean mask combined with other index tensors is not supported");
  bool adjacent = true;
  for (std::size_t e = first_entry; e <= last_entry; ++e) adjacent = adjacent && indices[e].present;
  if (l.num_masks > 0) {
    l.broadcast_rank = 1;
  } else {
    std::vector<TensorShape> shapes;
    for (const auto& ix : indices)
      if (ix.present) shapes.push_back(ix.shape);
    l.broadcast_rank = broadcast_shapes(shapes).rank;
  }
  l.insert_dim = adjacent ? first : 0;
  for (std::size_t d = 0; d < self_rank; ++d) {
    if (indexed[d]) continue;
    const std::size_t i = l.non_indexed.size();
    l.non_indexed.push_back(static_cast<int>(d));
    l.output_dim.push_back(static_cast<int>(adjacent && d < first ? i : i + l.broadcast_rank));
  }
  l.output_rank = l.broadcast_rank + l.non_indexed.size();
  return l;
}

/// `index.Tensor(self, indices) -> out`. Operands `[out, self, index tensors...]` (Nones take no
/// slot). Rows: every non-indexed self dim d `[S?(out d), S?(d), R...]`; without masks, every
/// broadcast index dim b `[S?(insert + b), R, per index S?(its aligned dim) or R where it
/// broadcasts (size 1 or missing)]` (skipped when every index broadcasts there); then
/// `[P(r), P(r), R...]` for r in (sum, avg) (a gather is linear in self). A mask's output order
/// follows the global nonzero enumeration, so masks get no index-sharding row.
/// DTensor `index_single_dim_strategy`. Throws as `index_layout`.
[[nodiscard]] constexpr RuleSet index_single_dim_strategy(const TensorShape& self, std::span<const IndexEntry> indices) {
  const IndexLayout l = index_layout(self.rank, indices);
  RuleSet rules(1, 1 + l.num_tensors);
  rules.set_rank(0, static_cast<int>(l.output_rank));
  rules.set_rank(1, self.rank);
  std::vector<const IndexEntry*> tensors;
  for (const auto& ix : indices) {
    if (!ix.present) continue;
    tensors.push_back(&ix);
    rules.set_rank(1 + tensors.size(), ix.shape.rank);
  }
  std::vector<Placement> row(rules.width(), Replicate());
  for (std::size_t i = 0; i < l.non_indexed.size(); ++i) {
    row[0] = ShardingPlaceholder(l.output_dim[i]);
    row[1] = ShardingPlaceholder(l.non_indexed[i]);
    rules.add(row);
  }
  row[1] = Replicate();
  for (std::size_t b = 0; b < l.broadcast_rank && l.num_masks == 0; ++b) {
    bool any = false;
    for (std::size_t j = 0; j < tensors.size(); ++j) {
      const TensorShape& s = tensors[j]->shape;
      const auto td = static_cast<std::ptrdiff_t>(b) - static_cast<std::ptrdiff_t>(l.broadcast_rank - s.rank);
      const bool sharded = td >= 0 && s[static_cast<std::size_t>(td)] > 1;
      row[2 + j] = sharded ? ShardingPlaceholder(static_cast<int>(td)) : Replicate();
      any = any || sharded;
    }
    row[0] = ShardingPlaceholder(static_cast<int>(l.insert_dim + b));
    if (any) rules.add(row);
  }
  for (auto& p : row) p = Replicate();
  for (ReduceOp r : {ReduceOp::sum, ReduceOp::avg}) {
    row[0] = row[1] = Partial(r);
    rules.add(row);
  }
  return rules;
}

/// `index_put(self, indices, values, accumulate) -> out` (out has self's shape). Operands
/// `[out, self, index tensors..., values]`. Rows: every non-indexed self dim d
/// `[S?(d), S?(d), R..., values: S?(its aligned dim), or R where values broadcasts]`; when the
/// only index is a mask and values has one element, the op is elementwise over the mask's dims,
/// so every masked dim d (mask dim j) adds `[S?(d), S?(d), S?(j), R]`; then
/// `[P(sum), P(sum), R..., P(sum)]` (both the kept and the written elements are sums).
/// DTensor `index_put_single_dim_strategy` (which counts a mask as one indexed dim: its rows
/// shard self on dims the mask covers, and the local kernel then fails on the mask's shape).
/// Throws as `index_layout`.
[[nodiscard]] constexpr RuleSet index_put_single_dim_strategy(const TensorShape& self, std::span<const IndexEntry> indices,
                                                              const TensorShape& values) {
  const IndexLayout l = index_layout(self.rank, indices);
  const std::size_t nidx = l.num_tensors;
  RuleSet rules(1, 2 + nidx);
  rules.set_rank(0, self.rank);
  rules.set_rank(1, self.rank);
  std::size_t j = 0;
  std::size_t mask_start = 0, pos = 0;
  for (const auto& ix : indices) {
    if (ix.present) rules.set_rank(2 + j++, ix.shape.rank);
    if (ix.present && ix.mask) mask_start = pos;
    pos += ix.consumed_dims();
  }
  rules.set_rank(2 + nidx, values.rank);
  std::vector<Placement> row(rules.width(), Replicate());
  for (std::size_t i = 0; i < l.non_indexed.size(); ++i) {
    const auto vd = static_cast<std::ptrdiff_t>(l.output_dim[i]) - static_cast<std::ptrdiff_t>(l.output_rank - values.rank);
    const bool sharded = vd >= 0 && values[static_cast<std::size_t>(vd)] != 1;
    row[0] = row[1] = ShardingPlaceholder(l.non_indexed[i]);
    row[2 + nidx] = sharded ? ShardingPlaceholder(static_cast<int>(vd)) : Replicate();
    rules.add(row);
  }
  if (l.num_masks == 1 && values.numel() == 1) {
    row[2 + nidx] = Replicate();
    for (const auto& ix : indices) {
      if (!ix.present) continue;
      for (std::size_t k = 0; k < ix.shape.rank; ++k) {
        row[0] = row[1] = ShardingPlaceholder(static_cast<int>(mask_start + k));
        row[2] = ShardingPlaceholder(static_cast<int>(k));
        rules.add(row);
      }
    }
  }
  for (auto& p : row) p = Replicate();
  row[0] = row[1] = row[2 + nidx] = Partial(ReduceOp::sum);
  rules.add(row);
  return rules;
}

}  // namespace ctshard
