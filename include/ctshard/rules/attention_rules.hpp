#pragma once
/// \file rules/attention_rules.hpp
/// Single-dim strategies of the fused scaled-dot-product-attention kernels (flash, efficient,
/// cuDNN; forward and backward) — DTensor `_matrix_ops.py` `scaled_dot_product_*_single_dim_strategy`
/// — and of `higher_order.flex_attention` (no DTensor rule; the same heads / batch picture).
/// Attention mixes positions of a sequence but never heads or batch entries, so every operand laid
/// out `[B, H, ...]` is sharded on heads (dim 1) or on batch (dim 0); the rest stay replicated.

#include <cstddef>
#include <span>
#include <vector>

#include "ctshard/core/tensor_shape.hpp"
#include "ctshard/rules/rule_set.hpp"

namespace ctshard {

/// How an attention operand follows a head / batch split.
struct AttentionOperand {
  enum class Kind : unsigned char {
    follow,     ///< laid out [B, H, ...] (q, k, v, out, logsumexp, grads, debug mask): S?(d)
    broadcast,  ///< broadcast to [B, H, L, S] (attn_bias, grad_bias): S?(aligned dim), R where size 1 / missing
    replicate,  ///< rng state, philox seed / offset, cum_seq, max_q / max_k, absent outputs: R
  };
  Kind kind = Kind::replicate;
  TensorShape shape{};  ///< broadcast only: the operand's shape
  int rank = -1;        ///< tensor rank when known (recorded on the RuleSet)
};

/// The two rows of an attention kernel whose operands are `outputs` then `inputs`: heads first
/// (`d = 1`), then batch (`d = 0`); a `follow` operand takes `S?(d)`, a `broadcast` operand the
/// placeholder of its dim aligned (from the right) with dim d of a rank-`full_rank` tensor, or R
/// where it has size 1 or lacks the dim, a `replicate` operand R. DTensor's rows shard a present
/// attn_bias on `Shard(1)` / `Shard(0)` outright, which empties or breaks a bias broadcast over
/// heads or batch; the aligned mapping keeps such a bias replicated instead.
[[nodiscard]] constexpr RuleSet attention_single_dim_strategy(std::span<const AttentionOperand> outputs, std::span<const AttentionOperand> inputs,
                                                              std::size_t full_rank = 4) {
  RuleSet rules(outputs.size(), inputs.size());
  std::vector<const AttentionOperand*> all;
  for (const auto& o : outputs) all.push_back(&o);
  for (const auto& i : inputs) all.push_back(&i);
  for (std::size_t k = 0; k < all.size(); ++k) rules.set_rank(k, all[k]->rank);
  std::vector<Placement> row(all.size());
  for (int d : {1, 0}) {
    for (std::size_t k = 0; k < all.size(); ++k) {
      const AttentionOperand& o = *all[k];
      row[k] = Replicate();
      if (o.kind == AttentionOperand::Kind::follow) row[k] = ShardingPlaceholder(d);
      if (o.kind == AttentionOperand::Kind::broadcast) {
        const auto j = static_cast<std::ptrdiff_t>(d) - (static_cast<std::ptrdiff_t>(full_rank) - o.shape.rank);
        if (j >= 0 && o.shape[static_cast<std::size_t>(j)] != 1) row[k] = ShardingPlaceholder(static_cast<int>(j));
      }
    }
    rules.add(row);
  }
  return rules;
}

/// How one operand of flex attention follows the heads / batch rows: `S?(d)` on the rows it is
/// marked for, Replicate on the others (a size-1 dim broadcast over batch or heads, the score /
/// mask buffers, an operand whose dim does not line up with q's).
struct FlexOperand {
  bool batch = false;  ///< takes S?(0) in the batch row
  bool heads = false;  ///< takes S?(1) in the head row
  int rank = -1;       ///< tensor rank when known
};

/// `higher_order.flex_attention` (torch `_higher_order_ops/flex_attention.py`; DTensor 2.13 has no
/// rule): `outputs` (out [B, Hq, L, Ev], logsumexp and max_scores [B, Hq, L]) then `inputs` (q, k,
/// v, the block-mask tensors [B_m, H_m, ...], the score / mask buffers) as FlexOperands. As for
/// scaled-dot-product attention, heads and batch entries are independent: the head row (when
/// `head_row`) puts `S?(1)` on the operands marked `heads`, the batch row (when `batch_row`)
/// `S?(0)` on those marked `batch`, Replicate elsewhere. No Partial rows.
[[nodiscard]] constexpr RuleSet flex_attention_single_dim_strategy(std::span<const FlexOperand> outputs, std::span<const FlexOperand> inputs,
                                                                   bool head_row, bool batch_row) {
  RuleSet rules(outputs.size(), inputs.size());
  std::vector<const FlexOperand*> all;
  for (const auto& o : outputs) all.push_back(&o);
  for (const auto& i : inputs) all.push_back(&i);
  for (std::size_t k = 0; k < all.size(); ++k) rules.set_rank(k, all[k]->rank);
  std::vector<Placement> row(all.size());
  for (int d : {1, 0}) {
    if ((d == 1 && !head_row) || (d == 0 && !batch_row)) continue;
    for (std::size_t k = 0; k < all.size(); ++k) row[k] = (d == 1 ? all[k]->heads : all[k]->batch) ? ShardingPlaceholder(d) : Replicate();
    rules.add(row);
  }
  return rules;
}

}  // namespace ctshard
