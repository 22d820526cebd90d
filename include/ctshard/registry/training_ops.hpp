#pragma once
/// \file registry/training_ops.hpp
/// Registers the ops of real training graphs beyond the transformer core: gather / scatter,
/// convolution backward, max pooling, batch norm, nll loss, fused RMS norm, embedding bags,
/// grouped matmul (MoE), cumsum, sort / topk and histc. Arguments are read as aten names them,
/// positionally or as keywords; the tensor arguments must come in schema order (the rule's inputs
/// follow the call's tensors). Bad or unsupported arguments throw ctshard::error naming the op and
/// the argument, so the planner falls back visibly.
///
/// UnevenInputs as DTensor 2.13 registers each op: single-dim rules (convolution_backward,
/// max_pool2d_with_indices_backward, batch norm, _fused_rms_norm and backward) have
/// `allow_uneven_sharding=False`: `reject`; op-strategy functions (gather, scatter, scatter_add,
/// max_pool2d_with_indices, nll_loss_forward / backward, _grouped_mm, cumsum, sort, topk, histc):
/// `keep_existing_shards`; embedding bags, which DTensor lacks, `reject` like DTensor's
/// embedding. Batch norm also drops candidates that leave some rank an empty shard
/// (`nonempty_input_shards_filter`: its kernel divides by the local element count), convolution
/// backward and max pooling those with an empty channel block (`convolution_backward_channel_filter`,
/// `pooling_channel_filter`).

#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "ctshard/registry/math_ops.hpp"
#include "ctshard/registry/op_args_ext.hpp"
#include "ctshard/registry/op_registry.hpp"
#include "ctshard/rules/batch_norm_rules.hpp"
#include "ctshard/rules/conv_pool_rules.hpp"
#include "ctshard/rules/embedding_rules.hpp"
#include "ctshard/rules/factory_rules.hpp"
#include "ctshard/rules/gather_scatter_rules.hpp"
#include "ctshard/rules/grouped_mm_rules.hpp"
#include "ctshard/rules/loss_rules.hpp"
#include "ctshard/rules/mesh_filters.hpp"
#include "ctshard/rules/norm_rules.hpp"
#include "ctshard/rules/reduction_rules.hpp"
#include "ctshard/rules/sort_scan_rules.hpp"

namespace ctshard {

namespace detail {

/// The tensor-input indices of a call's tensor arguments, read in schema order: `required` names
/// the next argument that must be a tensor, `optional` one that may be None. `check()` throws
/// ctshard::error unless they are exactly 0, 1, ..., n-1 and the call has no other tensor input
/// (the rule's input operands follow the call's tensors in this order).
class SchemaTensors {
 public:
  explicit SchemaTensors(const OpCall& call) : call_(call) {}
  /// The required tensor argument at `pos` (keyword `name`); returns its shape.
  const TensorShape& required(std::size_t pos, std::string_view name) {
    const std::size_t t = op_args::tensor(call_, pos, name);
    order_.push_back(t);
    return call_.tensors[t].shape;
  }
  /// The optional tensor argument at `pos`: its shape, or nullopt for None.
  std::optional<TensorShape> optional(std::size_t pos, std::string_view name) {
    const auto t = op_args::optional_tensor(call_, pos, name);
    if (!t) return std::nullopt;
    order_.push_back(*t);
    return call_.tensors[*t].shape;
  }
  /// Item size of the i-th tensor read.
  [[nodiscard]] std::size_t itemsize(std::size_t i) const { return call_.tensors[order_.at(i)].itemsize; }
  /// Throws unless the tensors read are the call's tensor inputs in order.
  void check() const {
    op_args::expect_tensor_inputs(call_, order_.size());
    for (std::size_t i = 0; i < order_.size(); ++i)
      if (order_[i] != i)
        throw error("ctshard: " + call_.op + ": tensor arguments must come in schema order (tensor input " + std::to_string(order_[i]) +
                    " is schema tensor " + std::to_string(i) + ")");
  }

 private:
  const OpCall& call_;
  std::vector<std::size_t> order_;
};

/// A required `bool[n] output_mask` at `pos`. Throws ctshard::error when absent or of another length.
template <std::size_t N>
std::array<bool, N> output_mask(const OpCall& call, std::size_t pos) {
  if (op_args::find(call, pos, "output_mask") == nullptr) op_args::bad_argument(call, "output_mask", "is missing");
  const auto mask = op_args::bool_list_or(call, pos, "output_mask", {});
  if (mask.size() != N) op_args::bad_argument(call, "output_mask", "must hold " + std::to_string(N) + " bools");
  std::array<bool, N> out{};
  for (std::size_t i = 0; i < N; ++i) out[i] = mask[i];
  return out;
}

/// `dim` at `pos` (keyword "dim"), wrapped against `rank`; `fallback` when absent (nullopt: required).
inline std::size_t dim_arg(const OpCall& call, std::size_t pos, std::size_t rank, std::optional<std::int64_t> fallback) {
  const auto d = op_args::optional_int(call, pos, "dim");
  if (!d && !fallback) op_args::bad_argument(call, "dim", "is missing");
  return static_cast<std::size_t>(op_args::wrap_dim(call, "dim", d ? *d : *fallback, rank));
}

/// gather / scatter / scatter_add: (self, dim, index, [src | value]).
inline OpRule scatter_like_rule(const OpCall& call, std::optional<ScatterKind> scatter) {
  SchemaTensors t(call);
  const TensorShape self = t.required(0, "self");
  const std::size_t dim = dim_arg(call, 1, self.rank, std::nullopt);
  const TensorShape index = t.required(2, "index");
  std::optional<TensorShape> src;
  if (scatter == ScatterKind::value) {
    const OpArg* v = op_args::find(call, 3, "value");
    if (v == nullptr || !v->is_number()) op_args::bad_argument(call, "value", "must be a number");
    if (op_args::optional_number(call, 3, "value") == 0.0) scatter = ScatterKind::zero_value;
  } else if (scatter) {
    src = t.required(3, "src");
  }
  t.check();
  return op_args::in_op_context(call, [&] {
    RuleSet rules = scatter ? scatter_single_dim_strategy(self, dim, index, src, *scatter) : gather_single_dim_strategy(self, dim, index);
    return OpRule{std::move(rules), UnevenInputs::keep_existing_shards};
  });
}

/// A required bool argument (`training`, `train`, `transposed`). Throws ctshard::error when absent
/// or not a bool.
inline bool required_bool(const OpCall& call, std::size_t pos, std::string_view name) {
  const OpArg* a = op_args::find(call, pos, name);
  if (a == nullptr) op_args::bad_argument(call, name, "is missing");
  if (a->kind != OpArg::Kind::boolean && !(a->kind == OpArg::Kind::integer && (a->integer == 0 || a->integer == 1)))
    op_args::bad_argument(call, name, "must be a bool");
  return a->integer != 0;
}

/// Where a batch norm forward overload reads its arguments: the `training` flag's position
/// (nullopt: eval only), the number of running statistics it takes (2, or 0 for `no_stats`), and
/// its number of outputs (3, or 5 for `_native_batch_norm_legit_functional`).
struct BatchNormSignature {
  std::optional<std::size_t> training_pos;
  std::size_t num_stats = 2;
  std::size_t num_outputs = 3;
};

inline RuleFactory batch_norm_factory(BatchNormSignature sig) {
  return [sig](const OpCall& call) {
    SchemaTensors t(call);
    const TensorShape input = t.required(0, "input");
    if (input.rank < 2) op_args::bad_argument(call, "input", "must be [N, C, *spatial]");
    std::size_t channel_inputs = 0;
    auto channel = [&](std::optional<TensorShape> s, std::string_view name) {
      if (!s) return;
      if (s->rank != 1 || (*s)[0] != input[1]) op_args::bad_argument(call, name, "must be a vector of C = " + std::to_string(input[1]) + " elements");
      ++channel_inputs;
    };
    channel(t.optional(1, "weight"), "weight");
    channel(t.optional(2, "bias"), "bias");
    if (sig.num_stats == 2) {
      channel(t.optional(3, "running_mean"), "running_mean");
      channel(t.optional(4, "running_var"), "running_var");
    }
    t.check();
    BatchNormParams p;
    p.rank = input.rank;
    p.num_outputs = sig.num_outputs;
    p.num_channel_inputs = channel_inputs;
    p.mode = BatchNormMode::eval;
    if (sig.training_pos) p.mode = required_bool(call, *sig.training_pos, "training") ? BatchNormMode::training : BatchNormMode::eval;
    // the kernel divides by the local element count: no empty shard
    return OpRule{batch_norm_single_dim_strategy(p), UnevenInputs::reject, nonempty_input_shards_filter()};
  };
}

/// FLOPs of convolution_backward (grad_output, input, weight, ...): 4 x grad_output's elements x
/// the weight's elements per output channel (its dims 1..), the gradients of input and weight.
/// Bytes: the operands'.
inline OpCompute convolution_backward_compute(std::span<const TensorMeta> in, std::span<const TensorMeta> out) {
  if (in.size() < 3) return elementwise_compute(in, out);
  return OpCompute{4.0 * op_compute::numel(in[0]) * op_compute::trailing_numel(in[2]), op_compute::operand_bytes(in, out)};
}

}  // namespace detail

/// Registers, with UnevenInputs as the file comment says:
/// - `gather.default`, `scatter.value`, `scatter.src`, `scatter_add.default`
///   (rules/gather_scatter_rules.hpp);
/// - `convolution_backward.default`, `max_pool2d_with_indices.default`,
///   `max_pool2d_with_indices_backward.default`, `avg_pool2d.default`, `_adaptive_avg_pool2d.default`,
///   `avg_pool2d_backward.default`, `_adaptive_avg_pool2d_backward.default` (rules/conv_pool_rules.hpp);
/// - `native_batch_norm.default`, `_native_batch_norm_legit.default`, `_native_batch_norm_legit.no_stats`,
///   `_native_batch_norm_legit_no_training.default`, `_native_batch_norm_legit_functional.default`,
///   `native_batch_norm_backward.default` (rules/batch_norm_rules.hpp);
/// - `nll_loss_forward.default`, `nll_loss_backward.default` (rules/loss_rules.hpp);
/// - `_fused_rms_norm.default`, `_fused_rms_norm_backward.default` (rules/norm_rules.hpp);
/// - `_embedding_bag.default`, `_embedding_bag_forward_only.default`,
///   `_embedding_bag_backward.default` (rules/embedding_rules.hpp);
/// - `_grouped_mm.default` with its alignment filter (rules/grouped_mm_rules.hpp);
/// - `cumsum.default`, `sort.default`, `sort.stable`, `topk.default`, `histc.default`
///   (rules/sort_scan_rules.hpp).
inline void register_training_ops(OpRegistry& r) {
  // gather(self, dim, index, *, sparse_grad=False); scatter.value(self, dim, index, value);
  // scatter.src / scatter_add(self, dim, index, src)
  r.add({"aten.gather.default"}, [](const OpCall& call) { return detail::scatter_like_rule(call, std::nullopt); });
  r.add({"aten.scatter.value"}, [](const OpCall& call) { return detail::scatter_like_rule(call, ScatterKind::value); });
  r.add({"aten.scatter.src"}, [](const OpCall& call) { return detail::scatter_like_rule(call, ScatterKind::src); });
  r.add({"aten.scatter_add.default"}, [](const OpCall& call) { return detail::scatter_like_rule(call, ScatterKind::add); });

  // convolution_backward(grad_output, input, weight, bias_sizes?, stride, padding, dilation, transposed,
  // output_padding, groups, output_mask) -> (grad_input, grad_weight, grad_bias)
  r.add({"aten.convolution_backward.default"}, detail::convolution_backward_compute, [](const OpCall& call) {
    detail::SchemaTensors t(call);
    const TensorShape grad_output = t.required(0, "grad_output");
    const TensorShape input = t.required(1, "input");
    const TensorShape weight = t.required(2, "weight");
    t.check();
    if (input.rank < 3 || weight.rank != input.rank || grad_output.rank != input.rank)
      op_args::bad_argument(call, "input", "must be batched [N, C, *spatial] with a grad_output and a weight of equal rank");
    if (const OpArg* b = op_args::find(call, 3, "bias_sizes"); b != nullptr && b->kind != OpArg::Kind::int_list && b->kind != OpArg::Kind::integer)
      op_args::bad_argument(call, "bias_sizes", "must be a list of integers or None");
    ConvolutionParams c;
    c.rank = input.rank;
    c.transposed = detail::required_bool(call, 7, "transposed");
    c.groups = op_args::required_int(call, 9, "groups");
    const auto stride = op_args::int_list(call, 4, "stride"), padding = op_args::int_list(call, 5, "padding"),
               dilation = op_args::int_list(call, 6, "dilation");
    if (stride.empty() || padding.empty() || dilation.empty())
      op_args::bad_argument(call, "stride", "stride, padding and dilation must be non-empty");
    // as the forward convolution: non-overlapping windows on the last dim
    c.last_dim_windows_disjoint =
        input.rank <= 5 && !c.transposed && padding.back() == 0 && dilation.back() == 1 && stride.back() == weight[weight.rank - 1];
    OpRule rule{convolution_backward_single_dim_strategy(c, detail::output_mask<3>(call, 10)), UnevenInputs::reject};
    // channel rows: no device with an empty channel block; last-dim row: whole windows per shard
    FullMeshFilter channels = c.groups == 1 ? convolution_backward_channel_filter() : FullMeshFilter{};
    if (c.last_dim_windows_disjoint) {
      rule.filter = [last = convolution_last_dim_filter(stride.back(), 1), channels](std::span<const Spec> operands,
                                                                                     std::span<const TensorMeta> inputs, MeshSizes mesh) {
        return last(operands, inputs, mesh) && (!channels || channels(operands, inputs, mesh));
      };
    } else {
      rule.filter = std::move(channels);
    }
    return rule;
  });
  // max_pool2d_with_indices(self, kernel_size, stride=[], padding=0, dilation=1, ceil_mode=False) -> (out, indices)
  r.add({"aten.max_pool2d_with_indices.default"}, [](const OpCall& call) {
    detail::SchemaTensors t(call);
    const TensorShape self = t.required(0, "self");
    t.check();
    if (self.rank != 3 && self.rank != 4) op_args::bad_argument(call, "self", "must be [C, H, W] or [N, C, H, W]");
    (void)op_args::int_list(call, 1, "kernel_size");
    return OpRule{max_pool2d_with_indices_single_dim_strategy(self.rank), UnevenInputs::keep_existing_shards, pooling_channel_filter(self.rank)};
  });
  // max_pool2d_with_indices_backward(grad_output, self, kernel_size, stride, padding, dilation, ceil_mode, indices)
  r.add({"aten.max_pool2d_with_indices_backward.default"}, [](const OpCall& call) {
    detail::SchemaTensors t(call);
    const TensorShape grad_output = t.required(0, "grad_output");
    const TensorShape self = t.required(1, "self");
    const TensorShape indices = t.required(7, "indices");
    t.check();
    if ((self.rank != 3 && self.rank != 4) || grad_output.rank != self.rank || indices.rank != self.rank)
      op_args::bad_argument(call, "self", "must be [C, H, W] or [N, C, H, W], with grad_output and indices of equal rank");
    return OpRule{max_pool2d_with_indices_backward_single_dim_strategy(self.rank), UnevenInputs::reject, pooling_channel_filter(self.rank)};
  });

  // avg_pool2d(self, kernel_size, stride=[], padding=0, ceil_mode=False, count_include_pad=True,
  // divisor_override=None); _adaptive_avg_pool2d(self, output_size)
  const auto avg_pool = [](std::size_t geometry_pos, const char* geometry) {
    return [geometry_pos, geometry](const OpCall& call) {
      detail::SchemaTensors t(call);
      const TensorShape self = t.required(0, "self");
      t.check();
      if (self.rank != 3 && self.rank != 4) op_args::bad_argument(call, "self", "must be [C, H, W] or [N, C, H, W]");
      (void)op_args::int_list(call, geometry_pos, geometry);
      return OpRule{avg_pool2d_single_dim_strategy(self.rank), UnevenInputs::keep_existing_shards, pooling_channel_filter(self.rank)};
    };
  };
  r.add({"aten.avg_pool2d.default"}, avg_pool(1, "kernel_size"));
  r.add({"aten._adaptive_avg_pool2d.default"}, avg_pool(1, "output_size"));
  // avg_pool2d_backward(grad_output, self, kernel_size, stride, padding, ceil_mode, count_include_pad,
  // divisor_override); _adaptive_avg_pool2d_backward(grad_output, self)
  const auto avg_pool_backward = [](std::optional<std::size_t> kernel_pos) {
    return [kernel_pos](const OpCall& call) {
      detail::SchemaTensors t(call);
      const TensorShape grad_output = t.required(0, "grad_output");
      const TensorShape self = t.required(1, "self");
      t.check();
      if ((self.rank != 3 && self.rank != 4) || grad_output.rank != self.rank)
        op_args::bad_argument(call, "self", "must be [C, H, W] or [N, C, H, W], with grad_output of equal rank");
      for (std::size_t d = 0; d + 2 < self.rank; ++d)
        if (grad_output[d] != self[d]) op_args::bad_argument(call, "grad_output", "must match self on the batch and channel dims");
      if (kernel_pos) (void)op_args::int_list(call, *kernel_pos, "kernel_size");
      return OpRule{avg_pool2d_backward_single_dim_strategy(self.rank), UnevenInputs::reject, pooling_channel_filter(self.rank)};
    };
  };
  r.add({"aten.avg_pool2d_backward.default"}, avg_pool_backward(2));
  r.add({"aten._adaptive_avg_pool2d_backward.default"}, avg_pool_backward(std::nullopt));

  // batch norm forward: (input, weight?, bias?, running_mean?, running_var?, training, momentum, eps)
  const detail::BatchNormSignature with_training{5, 2, 3}, no_stats{3, 0, 3}, eval_only{std::nullopt, 2, 3}, functional{5, 2, 5};
  r.add({"aten.native_batch_norm.default", "aten._native_batch_norm_legit.default"}, detail::batch_norm_factory(with_training));
  r.add({"aten._native_batch_norm_legit.no_stats"}, detail::batch_norm_factory(no_stats));
  r.add({"aten._native_batch_norm_legit_no_training.default"}, detail::batch_norm_factory(eval_only));
  r.add({"aten._native_batch_norm_legit_functional.default"}, detail::batch_norm_factory(functional));
  // native_batch_norm_backward(grad_out, input, weight?, running_mean?, running_var?, save_mean?, save_invstd?, train, eps,
  // output_mask) -> (grad_input, grad_weight, grad_bias)
  r.add({"aten.native_batch_norm_backward.default"}, [](const OpCall& call) {
    detail::SchemaTensors t(call);
    const TensorShape grad_out = t.required(0, "grad_out");
    const TensorShape input = t.required(1, "input");
    if (input.rank < 2 || !(grad_out == input)) op_args::bad_argument(call, "input", "must be [N, C, *spatial], as grad_out");
    BatchNormBackwardParams p;
    p.rank = input.rank;
    std::size_t pos = 2;
    for (const char* name : {"weight", "running_mean", "running_var", "save_mean", "save_invstd"}) {
      const auto s = t.optional(pos++, name);
      if (!s) continue;
      if (s->rank != 1 || ((*s)[0] != input[1] && (*s)[0] != 0))
        op_args::bad_argument(call, name, "must be a vector of C = " + std::to_string(input[1]) + " elements (or empty)");
      if ((*s)[0] == 0 && input[1] != 0) p.empty_channel_inputs |= std::uint32_t{1} << p.num_channel_inputs;
      ++p.num_channel_inputs;
    }
    t.check();
    p.mode = detail::required_bool(call, 7, "train") ? BatchNormMode::training : BatchNormMode::eval;
    p.output_mask = detail::output_mask<3>(call, 9);
    return OpRule{batch_norm_backward_single_dim_strategy(p), UnevenInputs::reject, nonempty_input_shards_filter()};
  });

  // nll_loss_forward(self, target, weight?, reduction, ignore_index) -> (output, total_weight)
  auto reduction = [](const OpCall& call, std::size_t pos) {
    const std::int64_t v = op_args::required_int(call, pos, "reduction");
    if (v < 0 || v > 2) op_args::bad_argument(call, "reduction", "must be 0 (none), 1 (mean) or 2 (sum), got " + std::to_string(v));
    return static_cast<LossReduction>(v);
  };
  auto check_target = [](const OpCall& call, const TensorShape& self, const TensorShape& target) {
    if (self.rank != 1 && self.rank != 2) op_args::bad_argument(call, "self", "must be [N, C] or [C]");
    if (target.rank + 1 != self.rank || (self.rank == 2 && target[0] != self[0]))
      op_args::bad_argument(call, "target", "must be [N] for self [N, C], or 0-d for self [C]");
  };
  r.add({"aten.nll_loss_forward.default"}, [=](const OpCall& call) {
    detail::SchemaTensors t(call);
    const TensorShape self = t.required(0, "self");
    const TensorShape target = t.required(1, "target");
    const bool weight = t.optional(2, "weight").has_value();
    t.check();
    check_target(call, self, target);
    return OpRule{nll_loss_forward_single_dim_strategy(self.rank, weight, reduction(call, 3)), UnevenInputs::keep_existing_shards};
  });
  // nll_loss_backward(grad_output, self, target, weight?, reduction, ignore_index, total_weight) -> grad_input
  r.add({"aten.nll_loss_backward.default"}, [=](const OpCall& call) {
    detail::SchemaTensors t(call);
    (void)t.required(0, "grad_output");
    const TensorShape self = t.required(1, "self");
    const TensorShape target = t.required(2, "target");
    const bool weight = t.optional(3, "weight").has_value();
    (void)t.required(6, "total_weight");
    t.check();
    check_target(call, self, target);
    return OpRule{nll_loss_backward_single_dim_strategy(self.rank, weight, reduction(call, 4)), UnevenInputs::keep_existing_shards};
  });

  // _fused_rms_norm(input, normalized_shape, weight?, eps) -> (out, rstd)
  r.add({"aten._fused_rms_norm.default"}, [](const OpCall& call) {
    detail::SchemaTensors t(call);
    const TensorShape input = t.required(0, "input");
    const bool weight = t.optional(2, "weight").has_value();
    t.check();
    return OpRule{rms_norm_single_dim_strategy(input.rank, detail::normalized_ndim(call, 1, input), weight), UnevenInputs::reject};
  });
  // _fused_rms_norm_backward(grad_out, input, normalized_shape, rstd, weight?, output_mask) -> (grad_input, grad_weight)
  r.add({"aten._fused_rms_norm_backward.default"}, [](const OpCall& call) {
    detail::SchemaTensors t(call);
    (void)t.required(0, "grad_out");
    const TensorShape input = t.required(1, "input");
    (void)t.required(3, "rstd");
    const bool weight = t.optional(4, "weight").has_value();
    t.check();
    return OpRule{rms_norm_backward_single_dim_strategy(input.rank, detail::normalized_ndim(call, 2, input), weight, detail::output_mask<2>(call, 5)),
                  UnevenInputs::reject};
  });

  // _embedding_bag(weight, indices, offsets, scale_grad_by_freq=False, mode=0, sparse=False, per_sample_weights=None,
  // include_last_offset=False, padding_idx=-1) -> (output, offset2bag, bag_size, max_indices)
  auto bag_mode = [](const OpCall& call, std::optional<std::size_t> pos) {
    const std::int64_t v = pos ? op_args::int_or(call, *pos, "mode", 0) : 0;
    if (v < 0 || v > 2) op_args::bad_argument(call, "mode", "must be 0 (sum), 1 (mean) or 2 (max), got " + std::to_string(v));
    return static_cast<EmbeddingBagMode>(v);
  };
  auto bag_params = [](const OpCall& call, EmbeddingBagMode mode, bool per_sample_weights) {
    if (per_sample_weights && mode != EmbeddingBagMode::sum) op_args::bad_argument(call, "per_sample_weights", "is supported only with mode 0 (sum)");
    return EmbeddingBagParams{mode, per_sample_weights};
  };
  r.add({"aten._embedding_bag.default", "aten._embedding_bag_forward_only.default"}, [=](const OpCall& call) {
    detail::SchemaTensors t(call);
    const TensorShape weight = t.required(0, "weight");
    const TensorShape indices = t.required(1, "indices");
    const TensorShape offsets = t.required(2, "offsets");
    const auto psw = t.optional(6, "per_sample_weights");
    t.check();
    if (weight.rank != 2) op_args::bad_argument(call, "weight", "must be 2-D");
    if (indices.rank != 1) op_args::bad_argument(call, "indices", "must be 1-D (embedding_bag flattens a 2-D input and builds its offsets)");
    if (offsets.rank != 1) op_args::bad_argument(call, "offsets", "must be 1-D");
    if (psw && !(*psw == indices)) op_args::bad_argument(call, "per_sample_weights", "must have the shape of indices");
    return OpRule{embedding_bag_single_dim_strategy(bag_params(call, bag_mode(call, 4), psw.has_value())), UnevenInputs::reject};
  });
  // _embedding_bag_backward(grad, indices, offsets, offset2bag, bag_size, maximum_indices, num_weights, scale_grad_by_freq,
  // mode, sparse, per_sample_weights?, padding_idx=-1) -> grad_weight
  r.add({"aten._embedding_bag_backward.default"}, [=](const OpCall& call) {
    detail::SchemaTensors t(call);
    const TensorShape grad = t.required(0, "grad");
    std::size_t pos = 1;
    for (const char* name : {"indices", "offsets", "offset2bag", "bag_size", "maximum_indices"}) (void)t.required(pos++, name);
    const bool psw = t.optional(10, "per_sample_weights").has_value();
    t.check();
    if (grad.rank != 2) op_args::bad_argument(call, "grad", "must be [B, D]");
    (void)op_args::required_int(call, 6, "num_weights");
    if (op_args::find(call, 8, "mode") == nullptr) op_args::bad_argument(call, "mode", "is missing");
    return OpRule{embedding_bag_backward_single_dim_strategy(bag_params(call, bag_mode(call, 8), psw)), UnevenInputs::reject};
  });

  // _grouped_mm(self, mat2, offs?, bias?, out_dtype?) -> out
  r.add({"aten._grouped_mm.default"}, [](const OpCall& call) {
    detail::SchemaTensors t(call);
    const TensorShape a = t.required(0, "self");
    const TensorShape b = t.required(1, "mat2");
    const bool offs = t.optional(2, "offs").has_value();
    if (op_args::optional_tensor(call, 3, "bias")) op_args::bad_argument(call, "bias", "is not supported (DTensor 2.13 rejects it too)");
    t.check();
    if ((a.rank == 2 || b.rank == 2) && !offs) op_args::bad_argument(call, "offs", "is required when mat2 or self is 2-D");
    return op_args::in_op_context(call, [&] {
      return OpRule{grouped_mm_single_dim_strategy(a.rank, b.rank, offs), UnevenInputs::keep_existing_shards, grouped_mm_alignment_filter()};
    });
  });

  // cumsum(self, dim, *, dtype=None)
  r.add({"aten.cumsum.default"}, [](const OpCall& call) {
    detail::SchemaTensors t(call);
    const TensorShape self = t.required(0, "self");
    t.check();
    const std::size_t dim = detail::dim_arg(call, 1, self.rank, std::nullopt);
    const bool linear = cast_partials_for(op_args::text(call, op_args::keyword_only, "dtype")) == CastPartials::all;
    return OpRule{cumsum_single_dim_strategy(self.rank, dim, linear ? ScanLinearity::linear : ScanLinearity::not_linear),
                  UnevenInputs::keep_existing_shards};
  });
  // sort(self, dim=-1, descending=False); sort.stable(self, *, stable, dim=-1, descending=False);
  // topk(self, k, dim=-1, largest=True, sorted=True) -> (values, indices)
  auto sort_factory = [](std::size_t dim_pos) {
    return [dim_pos](const OpCall& call) {
      detail::SchemaTensors t(call);
      const TensorShape self = t.required(0, "self");
      t.check();
      return OpRule{sort_single_dim_strategy(self.rank, detail::dim_arg(call, dim_pos, self.rank, -1)), UnevenInputs::keep_existing_shards};
    };
  };
  r.add({"aten.sort.default"}, sort_factory(1));
  r.add({"aten.sort.stable"}, sort_factory(op_args::keyword_only));
  r.add({"aten.topk.default"}, [sort_factory](const OpCall& call) {
    (void)op_args::required_int(call, 1, "k");
    return sort_factory(2)(call);
  });
  // histc(self, bins=100, min=0, max=0) -> counts
  r.add({"aten.histc.default"}, [](const OpCall& call) {
    detail::SchemaTensors t(call);
    const TensorShape self = t.required(0, "self");
    t.check();
    const double lo = op_args::optional_number(call, 2, "min").value_or(0), hi = op_args::optional_number(call, 3, "max").value_or(0);
    if (!std::isfinite(lo)) op_args::bad_argument(call, "min", "must be finite (ATen: the range is not finite)");
    if (!std::isfinite(hi)) op_args::bad_argument(call, "max", "must be finite (ATen: the range is not finite)");
    if (hi < lo) op_args::bad_argument(call, "max", "must not be below 'min'");
    // min == max (any value, not only 0, 0): ATen bins over the data's own range
    const HistogramRange range = lo == hi ? HistogramRange::from_data : HistogramRange::given;
    return OpRule{histc_single_dim_strategy(self.rank, range), UnevenInputs::keep_existing_shards};
  });
}

}  // namespace ctshard
