#pragma once
/// \file registry/nn_ops.hpp
/// Registers embedding, advanced indexing, convolution, scaled-dot-product attention, dropout and
/// `equal` (DTensor `_embedding_ops.py`, `_tensor_ops.py`, `_conv_ops.py`, `_matrix_ops.py`,
/// `_random_ops.py`). Arguments are read positionally as aten passes them (or as keywords); bad or
/// unsupported arguments throw ctshard::error naming the op and the argument.

#include <cstddef>
#include <optional>
#include <vector>

#include "ctshard/registry/op_args_ext.hpp"
#include "ctshard/registry/op_registry.hpp"
#include "ctshard/rules/attention_rules.hpp"
#include "ctshard/rules/embedding_rules.hpp"
#include "ctshard/rules/mesh_filters.hpp"
#include "ctshard/rules/nn_rules.hpp"

namespace ctshard {

namespace detail {
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
}  // namespace detail

/// Registers `embedding`, `embedding_dense_backward`, `index.Tensor`, `index_put` and
/// `_unsafe_index_put` (index_put without bounds checks: the same rule; DTensor 2.13 has none for
/// it), `convolution`,
/// the flash / efficient / cuDNN attention kernels and their backward, `native_dropout`,
/// `native_dropout_backward` and `equal`.
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
  r.add({"aten.convolution.default"}, [](const OpCall& call) {
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
  // (query, key, value, attn_bias?, compute_log_sumexp, ...) -> (out, logsumexp, philox_seed, philox_offset)
  r.add({"aten._scaled_dot_product_efficient_attention.default"}, [=](const OpCall& call) {
    detail::AttentionOperands in(call);
    in.follow(0, "query").follow(1, "key").follow(2, "value").bias(3);
    return detail::attention_rule({follow_output(), follow_if(op_args::flag(call, 4, "compute_log_sumexp")), rep, rep}, in);
  });
  // (grad_out, query, key, value, attn_bias?, out, logsumexp, philox_seed, philox_offset, ...) -> (dq, dk, dv, grad_bias)
  r.add({"aten._scaled_dot_product_efficient_attention_backward.default"}, [=](const OpCall& call) {
    detail::AttentionOperands in(call);
    in.follow(0, "grad_out").follow(1, "query").follow(2, "key").follow(3, "value").follow(5, "out").follow(6, "logsumexp");
    const auto bias = in.bias(4);
    return detail::attention_rule({follow_output(), follow_output(), follow_output(), bias ? *bias : rep}, in);
  });
  // (query, key, value, dropout_p, is_causal, return_debug_mask, ...) -> (out, logsumexp, cum_seq_q, cum_seq_k,
  // max_q, max_k, rng_state, unused, debug_attn_mask)
  r.add({"aten._scaled_dot_product_flash_attention.default"}, [=](const OpCall& call) {
    detail::AttentionOperands in(call);
    in.follow(0, "query").follow(1, "key").follow(2, "value");
    return detail::attention_rule(
        {follow_output(), follow_output(), rep, rep, rep, rep, rep, rep, follow_if(op_args::flag(call, 5, "return_debug_mask"))}, in);
  });
  // (grad_out, query, key, value, out, logsumexp, cum_seq_q, cum_seq_k, max_q, max_k, dropout_p, is_causal,
  // philox_seed, philox_offset, ...) -> (dq, dk, dv)
  r.add({"aten._scaled_dot_product_flash_attention_backward.default"}, [=](const OpCall& call) {
    detail::AttentionOperands in(call);
    in.follow(0, "grad_out").follow(1, "query").follow(2, "key").follow(3, "value").follow(4, "out").follow(5, "logsumexp");
    return detail::attention_rule({follow_output(), follow_output(), follow_output()}, in);
  });
  // (query, key, value, attn_bias?, compute_log_sumexp, dropout_p, is_causal, return_debug_mask, ...) ->
  // (out, logsumexp, cum_seq_q, cum_seq_k, max_q, max_k, philox_seed, philox_offset, debug_attn_mask)
  r.add({"aten._scaled_dot_product_cudnn_attention.default"}, [=](const OpCall& call) {
    detail::AttentionOperands in(call);
    in.follow(0, "query").follow(1, "key").follow(2, "value").bias(3);
    return detail::attention_rule({follow_output(), follow_if(op_args::flag(call, 4, "compute_log_sumexp")), rep, rep, rep, rep, rep, rep,
                                   follow_if(op_args::flag(call, 7, "return_debug_mask"))},
                                  in);
  });
  // (grad_out, query, key, value, out, logsumexp, philox_seed, philox_offset, attn_bias?, cum_seq_q?, cum_seq_k?, ...)
  // -> (dq, dk, dv)
  r.add({"aten._scaled_dot_product_cudnn_attention_backward.default"}, [=](const OpCall& call) {
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
