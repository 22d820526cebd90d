#pragma once
/// \file registry/nn_ops.hpp
/// Registers embedding, advanced indexing, convolution, scaled-dot-product attention, dropout and
/// `equal` (DTensor `_embedding_ops.py`, `_tensor_ops.py`, `_conv_ops.py`, `_matrix_ops.py`,
/// `_random_ops.py`). Arguments are read positionally as aten passes them (or as keywords); bad or
/// unsupported arguments throw ctshard::error naming the op and the argument.

#include <algorithm>
#include <array>
#include <cstddef>
#include <optional>
#include <span>
#include <vector>

#include "ctshard/registry/op_args_ext.hpp"
#include "ctshard/registry/op_registry.hpp"
#include "ctshard/rules/attention_rules.hpp"
#include "ctshard/rules/embedding_rules.hpp"
#include "ctshard/rules/mesh_filters.hpp"
#include "ctshard/rules/nn_rules.hpp"

namespace ctshard {

namespace detail {
/// FLOPs of convolution (input, weight, bias?): 2 x the output's elements x the weight's
/// elements per output channel (its dims 1..: C_in / groups x kernel). Bytes: the operands'.
inline OpCompute convolution_compute(std::span<const TensorMeta> in, std::span<const TensorMeta> out) {
  if (in.size() < 2 || !op_compute::has_output(out)) return elementwise_compute(in, out);
  return OpCompute{2.0 * op_compute::numel(out[0]) * op_compute::trailing_numel(in[1]), op_compute::operand_bytes(in, out)};
}

/// FLOPs of a scaled-dot-product attention kernel over 4-d tensors (its first two [B, H, L, E]
/// and [B, H, S, E]): 4 B H L S E (the QK^T and PV products); a backward kernel 2.5 times its
/// first two tensors' product (grad_out and query: L in place of S). Bytes: the operands'.
inline OpCompute attention_compute(std::span<const TensorMeta> in, std::span<const TensorMeta> out, bool backward) {
  if (in.size() < 3 || in[0].shape.rank != 4 || in[1].shape.rank != 4) return elementwise_compute(in, out);
  const TensorShape& q = in[0].shape;
  const double f = 4.0 * static_cast<double>(q[0]) * static_cast<double>(q[1]) * static_cast<double>(q[2]) * static_cast<double>(in[1].shape[2]) *
                   static_cast<double>(q[3]);
  return OpCompute{backward ? 2.5 * f : f, op_compute::operand_bytes(in, out)};
}
inline OpCompute attention_forward_compute(std::span<const TensorMeta> in, std::span<const TensorMeta> out) {
  return attention_compute(in, out, false);
}
inline OpCompute attention_backward_compute(std::span<const TensorMeta> in, std::span<const TensorMeta> out) {
  return attention_compute(in, out, true);
}

/// The `Tensor?[] indices` argument at `pos` as IndexEntry values. An index tensor of one byte
/// per element (bool / uint8) is a mask, as PyTorch treats it.
inline std::vector<IndexEntry> index_entries(const OpCall& call, std::size_t pos) {
  std::vector<IndexEntry> entries;
  for (const auto& t : op_args::optional_tensor_list(call, pos, "indices")) {
    IndexEntry e;
    if (t) {
      e.present = true;
      e.shape = call.tensors[*t].shape;
      e.mask = call.tensors[*t].itemsize == 1;
    }
    entries.push_back(e);
  }
  return entries;
}

/// Attention operands in tensor-input order, all `replicate` until marked.
class AttentionOperands {
 public:
  explicit AttentionOperands(const OpCall& call) : call_(call), inputs_(call.tensors.size()) {
    for (std::size_t i = 0; i < inputs_.size(); ++i) inputs_[i].rank = call.tensors[i].shape.rank;
  }
  /// Marks the tensor argument at `pos` (required) as laid out [B, H, ...].
  AttentionOperands& follow(std::size_t pos, std::string_view name) {
    inputs_[op_args::tensor(call_, pos, name)].kind = AttentionOperand::Kind::follow;
    return *this;
  }
  /// Marks the optional bias at `pos`; returns its operand when present.
  std::optional<AttentionOperand> bias(std::size_t pos) {
    const auto t = op_args::optional_tensor(call_, pos, "attn_bias");
    if (!t) return std::nullopt;
    AttentionOperand& b = inputs_[*t];
    b.kind = AttentionOperand::Kind::broadcast;
    b.shape = call_.tensors[*t].shape;
    return b;
  }
  [[nodiscard]] const std::vector<AttentionOperand>& inputs() const noexcept { return inputs_; }

 private:
  const OpCall& call_;
  std::vector<AttentionOperand> inputs_;
};

inline AttentionOperand follow_output(int rank = -1) { return {AttentionOperand::Kind::follow, {}, rank}; }
inline AttentionOperand replicated_output() { return {}; }
inline AttentionOperand follow_if(bool f) { return f ? follow_output() : replicated_output(); }

inline OpRule attention_rule(const std::vector<AttentionOperand>& outputs, const AttentionOperands& in) {
  return OpRule{attention_single_dim_strategy(outputs, in.inputs()), UnevenInputs::keep_existing_shards};
}

/// The tensor inputs an argument holds (a tensor, or the tensors of a list / dict, depth first).
inline void tensors_in(const OpArg& a, std::vector<std::size_t>& out) {
  if (a.kind == OpArg::Kind::tensor) out.push_back(static_cast<std::size_t>(a.integer));
  if (a.kind == OpArg::Kind::tensor_list)
    for (auto i : a.ints) out.push_back(static_cast<std::size_t>(i));
  for (const auto& item : a.items) tensors_in(item, out);
}

/// Whether a flex attention modifier (score_mod / mask_mod, a submodule reference: OpArg
/// `other` with `integer` 1 and the placeholders its body reads in `ints`) is known to read
/// placeholder `position` (the batch or head index). An absent modifier or one whose body the
/// graph does not hold reads nothing ctshard can see (docs/rules.md, flex attention).
inline bool modifier_reads(const OpArg* mod, std::int64_t position) {
  if (mod == nullptr || mod->kind != OpArg::Kind::other || mod->integer != 1) return false;
  return std::find(mod->ints.begin(), mod->ints.end(), position) != mod->ints.end();
}

/// `higher_order.flex_attention(query, key, value, score_mod, block_mask, scale, kernel_options,
/// score_mod_other_buffers, mask_mod_other_buffers) -> (out, logsumexp, max_scores)`:
/// heads and batch rows (`flex_attention_single_dim_strategy`). q, k, v are [B, H, L, E]; k / v
/// may broadcast a batch of 1 and hold Hq / G heads (GQA: a full-mesh filter keeps the head row
/// only where the head shards divide Hkv, so that local q heads map to local kv heads); the
/// block-mask tensors of the block_mask tuple ([B_m, H_m, ...], B_m in {1, B}, H_m in {1, Hq})
/// follow q's batch / heads or stay replicated where they have size 1; the other buffers stay
/// replicated. A score_mod (placeholders score, b, h, q_idx, kv_idx) or mask_mod (b, h, q_idx,
/// kv_idx) whose body reads the batch or head index drops that row: a rank sees local indices.
inline OpRule flex_attention_rule(const OpCall& call) {
  return op_args::in_op_context(call, [&] {
    std::size_t qkv[3];
    for (std::size_t i = 0; i < 3; ++i) qkv[i] = op_args::tensor(call, i, std::array{"query", "key", "value"}[i]);
    const TensorShape &q = call.tensors[qkv[0]].shape, &k = call.tensors[qkv[1]].shape, &v = call.tensors[qkv[2]].shape;
    if (q.rank != 4 || k.rank != 4 || v.rank != 4) op_args::bad_argument(call, "query", "key and value must be 4-d [B, H, L, E]");
    if (k[0] != q[0] && k[0] != 1)
      op_args::bad_argument(call, "key", "has batch " + std::to_string(k[0]) + " for a query batch " + std::to_string(q[0]));
    if (k[1] == 0 || q[1] % k[1] != 0)
      op_args::bad_argument(call, "key", "has " + std::to_string(k[1]) + " heads, which do not divide the query's " + std::to_string(q[1]));
    if (v[0] != k[0] || v[1] != k[1]) op_args::bad_argument(call, "value", "must match key's batch and heads");
    std::vector<FlexOperand> inputs(call.tensors.size());
    for (std::size_t i = 0; i < inputs.size(); ++i) inputs[i].rank = static_cast<int>(call.tensors[i].shape.rank);
    inputs[qkv[0]].batch = inputs[qkv[0]].heads = true;
    for (std::size_t i : {qkv[1], qkv[2]}) {
      inputs[i].batch = k[0] != 1;
      inputs[i].heads = k[1] != 1;
    }
    bool batch_row = true, head_row = true;
    const OpArg* score_mod = op_args::find(call, 3, "score_mod");
    if (score_mod != nullptr && score_mod->kind == OpArg::Kind::tensor) op_args::bad_argument(call, "score_mod", "must be a function, not a tensor");
    batch_row = batch_row && !modifier_reads(score_mod, 1);
    head_row = head_row && !modifier_reads(score_mod, 2);
    std::vector<std::size_t> mask_tensors, buffers, stray;
    const OpArg* block_mask = op_args::find(call, 4, "block_mask");
    if (block_mask != nullptr) {
      tensors_in(*block_mask, mask_tensors);
      if (block_mask->kind == OpArg::Kind::list && !block_mask->items.empty()) {
        const OpArg& mask_mod = block_mask->items.back();
        batch_row = batch_row && !modifier_reads(&mask_mod, 0);
        head_row = head_row && !modifier_reads(&mask_mod, 1);
      }
    }
    for (std::size_t t : mask_tensors) {
      const TensorShape& m = call.tensors[t].shape;
      if (m.rank < 2) op_args::bad_argument(call, "block_mask", "holds a " + std::to_string(m.rank) + "-d tensor (expected [B, H, ...])");
      inputs[t].batch = m[0] != 1;
      inputs[t].heads = m[1] != 1;
      if (m[0] != 1 && m[0] != q[0]) batch_row = false;  // not aligned with q's batch: no batch row
      if (m[1] != 1 && m[1] != q[1]) head_row = false;
    }
    for (std::size_t pos : {std::size_t{7}, std::size_t{8}})
      if (const OpArg* a = call.arg(pos)) tensors_in(*a, buffers);
    for (const auto& [name, a] : call.kwargs) tensors_in(a, name == "score_mod_other_buffers" || name == "mask_mod_other_buffers" ? buffers : stray);
    for (std::size_t pos : {std::size_t{5}, std::size_t{6}})
      if (const OpArg* a = call.arg(pos)) tensors_in(*a, stray);
    if (!stray.empty()) op_args::bad_argument(call, "scale", "or kernel_options holds a tensor");
    if (3 + mask_tensors.size() + buffers.size() != call.tensors.size())
      op_args::bad_argument(call, "block_mask", "and the buffers do not account for the call's " + std::to_string(call.tensors.size()) + " tensors");
    const FlexOperand follow{true, true, 4}, stats{true, true, 3};
    const FlexOperand outputs[] = {follow, stats, stats};
    OpRule rule{flex_attention_single_dim_strategy(outputs, inputs, head_row, batch_row), UnevenInputs::keep_existing_shards};
    if (head_row && k[1] != q[1] && k[1] != 1) {
      // GQA: local q heads map to local kv heads only when the head shards divide Hkv
      const std::int64_t hkv = k[1];
      const std::size_t key = 3 + qkv[1];
      rule.filter = [hkv, key](std::span<const Spec> operands, std::span<const TensorMeta>, MeshSizes mesh) {
        const std::int64_t shards = num_shards_on_dim(operands[key], mesh, 1);
        return shards <= 1 || hkv % shards == 0;
      };
    }
    return rule;
  });
}
}  // namespace detail

/// Registers `embedding`, `embedding_dense_backward`, `index.Tensor`, `index_put` and
/// `_unsafe_index_put` (index_put without bounds checks: the same rule; DTensor 2.13 has none for
/// it), `convolution`,
/// the flash / efficient / cuDNN attention kernels and their backward, `higher_order.flex_attention`
/// (`detail::flex_attention_rule`), `native_dropout`, `native_dropout_backward` and `equal`.
inline void register_nn_ops(OpRegistry& r) {
  r.add({"aten.embedding.default"}, [](const OpCall& call) {
    op_args::expect_tensor_inputs(call, 2);
    const std::size_t weight = op_args::tensor(call, 0, "weight"), indices = op_args::tensor(call, 1, "indices");
    if (call.tensors[weight].shape.rank != 2) op_args::bad_argument(call, "weight", "must be 2-D");
    return OpRule{embedding_single_dim_strategy(call.tensors[indices].shape.rank), UnevenInputs::reject,
                  [](std::span<const Spec> specs, std::span<const TensorMeta>, MeshSizes) { return embedding_contiguous_vocab(specs); }};
  });
  r.add({"aten.embedding_dense_backward.default"}, [](const OpCall& call) {
    op_args::expect_tensor_inputs(call, 2);
    const std::size_t indices = op_args::tensor(call, 1, "indices");
    return OpRule{embedding_dense_backward_single_dim_strategy(call.tensors[indices].shape.rank, op_args::flag(call, 4, "scale_grad_by_freq")),
                  UnevenInputs::reject};
  });
  r.add({"aten.index.Tensor"}, [](const OpCall& call) {
    const std::size_t self = op_args::tensor(call, 0, "self");
    return OpRule{index_single_dim_strategy(call.tensors[self].shape, detail::index_entries(call, 1)), UnevenInputs::reject};
  });
  r.add({"aten.index_put.default", "aten._unsafe_index_put.default"}, [](const OpCall& call) {
    const std::size_t self = op_args::tensor(call, 0, "self"), values = op_args::tensor(call, 2, "values");
    return OpRule{index_put_single_dim_strategy(call.tensors[self].shape, detail::index_entries(call, 1), call.tensors[values].shape),
                  UnevenInputs::reject};
  });
  r.add({"aten.convolution.default"}, detail::convolution_compute, [](const OpCall& call) {
    ConvolutionParams c;
    c.has_bias = op_args::optional_tensor(call, 2, "bias").has_value();
    op_args::expect_tensor_inputs(call, c.has_bias ? 3 : 2);
    const TensorShape& input = call.tensors[op_args::tensor(call, 0, "input")].shape;
    const TensorShape& weight = call.tensors[op_args::tensor(call, 1, "weight")].shape;
    c.rank = input.rank;
    c.transposed = op_args::flag(call, 6, "transposed");
    c.groups = op_args::required_int(call, 8, "groups");
    if (input.rank < 3 || weight.rank != input.rank)
      op_args::bad_argument(call, "input", "must be batched [N, C, *spatial] with a weight of equal rank");
    const auto stride = op_args::int_list(call, 3, "stride"), padding = op_args::int_list(call, 4, "padding"),
               dilation = op_args::int_list(call, 5, "dilation");
    if (stride.empty() || padding.empty() || dilation.empty())
      op_args::bad_argument(call, "stride", "stride, padding and dilation must be non-empty");
    c.last_dim_windows_disjoint =
        input.rank <= 5 && !c.transposed && padding.back() == 0 && dilation.back() == 1 && stride.back() == weight[weight.rank - 1];
    OpRule rule{convolution_single_dim_strategy(c), UnevenInputs::reject};
    FullMeshFilter channels = c.groups == 1 ? convolution_channel_filter() : FullMeshFilter{};
    if (c.last_dim_windows_disjoint) {
      rule.filter = [last = convolution_last_dim_filter(stride.back()), channels](std::span<const Spec> operands, std::span<const TensorMeta> inputs,
                                                                                  MeshSizes mesh) {
        return last(operands, inputs, mesh) && (!channels || channels(operands, inputs, mesh));
      };
    } else {
      rule.filter = std::move(channels);
    }
    return rule;
  });
  using detail::follow_if;
  using detail::follow_output;
  const auto rep = detail::replicated_output();
  r.add({"higher_order.flex_attention"}, [](const OpCall& call) { return detail::flex_attention_rule(call); });
  // (query, key, value, attn_bias?, compute_log_sumexp, ...) -> (out, logsumexp, philox_seed, philox_offset)
  r.add({"aten._scaled_dot_product_efficient_attention.default"}, detail::attention_forward_compute, [=](const OpCall& call) {
    detail::AttentionOperands in(call);
    in.follow(0, "query").follow(1, "key").follow(2, "value").bias(3);
    return detail::attention_rule({follow_output(), follow_if(op_args::flag(call, 4, "compute_log_sumexp")), rep, rep}, in);
  });
  // (grad_out, query, key, value, attn_bias?, out, logsumexp, philox_seed, philox_offset, ...) -> (dq, dk, dv, grad_bias)
  r.add({"aten._scaled_dot_product_efficient_attention_backward.default"}, detail::attention_backward_compute, [=](const OpCall& call) {
    detail::AttentionOperands in(call);
    in.follow(0, "grad_out").follow(1, "query").follow(2, "key").follow(3, "value").follow(5, "out").follow(6, "logsumexp");
    const auto bias = in.bias(4);
    return detail::attention_rule({follow_output(), follow_output(), follow_output(), bias ? *bias : rep}, in);
  });
  // (query, key, value, dropout_p, is_causal, return_debug_mask, ...) -> (out, logsumexp, cum_seq_q, cum_seq_k,
  // max_q, max_k, rng_state, unused, debug_attn_mask)
  r.add({"aten._scaled_dot_product_flash_attention.default"}, detail::attention_forward_compute, [=](const OpCall& call) {
    detail::AttentionOperands in(call);
    in.follow(0, "query").follow(1, "key").follow(2, "value");
    return detail::attention_rule(
        {follow_output(), follow_output(), rep, rep, rep, rep, rep, rep, follow_if(op_args::flag(call, 5, "return_debug_mask"))}, in);
  });
  // (grad_out, query, key, value, out, logsumexp, cum_seq_q, cum_seq_k, max_q, max_k, dropout_p, is_causal,
  // philox_seed, philox_offset, ...) -> (dq, dk, dv)
  r.add({"aten._scaled_dot_product_flash_attention_backward.default"}, detail::attention_backward_compute, [=](const OpCall& call) {
    detail::AttentionOperands in(call);
    in.follow(0, "grad_out").follow(1, "query").follow(2, "key").follow(3, "value").follow(4, "out").follow(5, "logsumexp");
    return detail::attention_rule({follow_output(), follow_output(), follow_output()}, in);
  });
  // (query, key, value, attn_bias?, compute_log_sumexp, dropout_p, is_causal, return_debug_mask, ...) ->
  // (out, logsumexp, cum_seq_q, cum_seq_k, max_q, max_k, philox_seed, philox_offset, debug_attn_mask)
  r.add({"aten._scaled_dot_product_cudnn_attention.default"}, detail::attention_forward_compute, [=](const OpCall& call) {
    detail::AttentionOperands in(call);
    in.follow(0, "query").follow(1, "key").follow(2, "value").bias(3);
    return detail::attention_rule({follow_output(), follow_if(op_args::flag(call, 4, "compute_log_sumexp")), rep, rep, rep, rep, rep, rep,
                                   follow_if(op_args::flag(call, 7, "return_debug_mask"))},
                                  in);
  });
  // (grad_out, query, key, value, out, logsumexp, philox_seed, philox_offset, attn_bias?, cum_seq_q?, cum_seq_k?, ...)
  // -> (dq, dk, dv)
  r.add({"aten._scaled_dot_product_cudnn_attention_backward.default"}, detail::attention_backward_compute, [=](const OpCall& call) {
    detail::AttentionOperands in(call);
    in.follow(0, "grad_out").follow(1, "query").follow(2, "key").follow(3, "value").follow(4, "out").follow(5, "logsumexp").bias(8);
    return detail::attention_rule({follow_output(), follow_output(), follow_output()}, in);
  });
  r.add({"aten.native_dropout.default"}, [](const OpCall& call) {
    op_args::expect_tensor_inputs(call, 1);
    return OpRule{dropout_single_dim_strategy(call.tensors[0].shape.rank), UnevenInputs::keep_current};
  });
  r.add({"aten.native_dropout_backward.default"}, [](const OpCall& call) {
    op_args::expect_tensor_inputs(call, 2);
    return OpRule{dropout_backward_single_dim_strategy(call.tensors[0].shape, call.tensors[1].shape), UnevenInputs::keep_current};
  });
  r.add({"aten.equal.default"}, [](const OpCall& call) {
    op_args::expect_tensor_inputs(call, 2);
    return OpRule{equal_single_dim_strategy(call.tensors[0].shape, call.tensors[1].shape), UnevenInputs::keep_existing_shards};
  });
}

}  // namespace ctshard
