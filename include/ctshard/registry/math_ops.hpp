#pragma once
/// \file registry/math_ops.hpp
/// Registers the reductions, the softmax family and layer norm (DTensor `_math_ops.py`), reading
/// dims / keepdim / normalized_shape / output_mask from the call as aten passes them. Bad or
/// unsupported arguments throw ctshard::error naming the op and the argument.

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "ctshard/registry/op_args_ext.hpp"
#include "ctshard/registry/op_registry.hpp"
#include "ctshard/rules/mesh_filters.hpp"
#include "ctshard/rules/norm_rules.hpp"
#include "ctshard/rules/reduction_rules.hpp"

namespace ctshard {

namespace detail {
/// Where a reduction reads its arguments: dims at `dim_pos` (keyword "dim"; `all_dims` when the
/// overload has none), keepdim at `keepdim_pos` (keyword "keepdim").
struct ReductionSignature {
  std::size_t dim_pos = 1;
  std::size_t keepdim_pos = 2;
  bool all_dims = false;
};

/// Options of a reduction rule beyond its signature and kind.
struct ReductionOptions {
  std::size_t num_outputs = 1;               ///< var_mean: 2
  bool evenly_sharded_reduced_dims = false;  ///< mean: a reduced dim must be evenly sharded (avg of uneven blocks is wrong)
};

/// A reduction rule (DTensor 2.13 registers reductions as op-strategy functions that follow the
/// input: UnevenInputs::keep_existing_shards). max / min kinds drop rows reducing over an empty
/// shard (nonempty_reduction_filter).
inline RuleFactory reduction_factory(ReductionSignature sig, ReductionKind kind, ReductionOptions options = {}) {
  return [sig, kind, options](const OpCall& call) {
    op_args::expect_tensor_inputs(call, 1);
    const std::size_t rank = call.tensors[0].shape.rank;
    const std::uint64_t reduced =
        sig.all_dims ? (rank == 0 ? 0 : ~std::uint64_t{0} >> (64 - rank)) : op_args::reduction_dims(call, sig.dim_pos, "dim", rank);
    const bool keepdim = !sig.all_dims && op_args::flag(call, sig.keepdim_pos, "keepdim");
    OpRule rule{reduction_single_dim_strategy(rank, reduced, keepdim, kind, options.num_outputs), UnevenInputs::keep_existing_shards};
    if (options.evenly_sharded_reduced_dims) rule.filter = evenly_sharded_reduction_filter(reduced, options.num_outputs);
    if (kind.partial == ReduceOp::max || kind.partial == ReduceOp::min) rule.filter = nonempty_reduction_filter(reduced, options.num_outputs);
    return rule;
  };
}

/// max.dim / min.dim / median.dim: a single required `int dim` (values and indices outputs).
inline OpRule dim_with_indices_rule(const OpCall& call) {
  op_args::expect_tensor_inputs(call, 1);
  const std::size_t rank = call.tensors[0].shape.rank;
  const int dim = op_args::wrap_dim(call, "dim", op_args::required_int(call, 1, "dim"), rank);
  const std::uint64_t reduced = rank == 0 ? 0 : std::uint64_t{1} << dim;
  // DTensor 2.13: a single-dim rule with the default allow_uneven_sharding=False.
  return OpRule{reduction_single_dim_strategy(rank, reduced, op_args::flag(call, 2, "keepdim"), ReductionKind{}, 2), UnevenInputs::reject};
}

/// Softmax-like ops: `dim` at `dim_pos`; `num_inputs` tensors of one shape; one output.
inline RuleFactory softmax_factory(std::size_t dim_pos, std::size_t num_inputs) {
  return [dim_pos, num_inputs](const OpCall& call) {
    op_args::expect_tensor_inputs(call, num_inputs);
    const TensorShape& shape = call.tensors[0].shape;
    for (const auto& t : call.tensors)
      if (!(t.shape == shape)) throw error("ctshard: " + call.op + ": tensor inputs must have one shape");
    const int dim = op_args::wrap_dim(call, "dim", op_args::required_int(call, dim_pos, "dim"), shape.rank);
    RuleSet rules = shard_except_dim_strategy(shape.rank, static_cast<std::size_t>(dim), 1, num_inputs);
    // The backward ops (grad_output, output) are linear in grad_output: softmax's
    // output * (grad - sum(grad * output)), log-softmax's grad - exp(output) * sum(grad).
    if (num_inputs == 2)
      for (ReduceOp r : {ReduceOp::sum, ReduceOp::avg}) rules.add({Partial(r), Partial(r), Replicate()});
    return OpRule{std::move(rules), UnevenInputs::keep_existing_shards};
  };
}

/// Number of normalized dims from `normalized_shape` at `pos`, checked against the input's
/// trailing sizes.
inline std::size_t normalized_ndim(const OpCall& call, std::size_t pos, const TensorShape& input) {
  const auto sizes = op_args::int_list(call, pos, "normalized_shape");
  if (sizes.size() > input.rank) op_args::bad_argument(call, "normalized_shape", "has more dims than the input");
  for (std::size_t i = 0; i < sizes.size(); ++i)
    if (sizes[i] != input[input.rank - sizes.size() + i])
      op_args::bad_argument(call, "normalized_shape", "does not match the input's trailing sizes");
  return sizes.size();
}
}  // namespace detail

/// Registers, with UnevenInputs as DTensor 2.13 registers each family (reductions and softmax are
/// op-strategy functions there: `keep_existing_shards`; max.dim / min.dim and layer norm are
/// single-dim rules without `allow_uneven_sharding`: `reject`):
/// - linear reductions (P(op) from a sharded reduced dim, P(op) pass-through):
///   `sum.default`, `sum.dim_IntList` (P(sum)); `amax.default`, `max.default` (P(max));
///   `amin.default`, `min.default` (P(min));
/// - `mean.default`, `mean.dim` (P(avg), full-mesh filter: reduced dims evenly sharded);
/// - shard-kept-dims-only reductions: `max.dim`, `min.dim` (2 outputs: values, indices — indices
///   are positions inside one rank's block, so no Partial can combine them), `argmax.default`,
///   `argmin.default`, `logsumexp.default` (keepdim read positionally too), `var.correction`,
///   `std.correction`, `var_mean.correction` (2 outputs; keepdim is keyword-only);
/// - `_softmax`, `_log_softmax`, `_safe_softmax` and `_softmax_backward_data`,
///   `_log_softmax_backward_data` (the softmax dim stays whole);
/// - `native_layer_norm`, `native_layer_norm_backward` (leading dims only).
inline void register_math_ops(OpRegistry& r) {
  using detail::reduction_factory;
  using detail::ReductionSignature;
  const ReductionSignature dims{}, all{.dim_pos = 1, .keepdim_pos = 2, .all_dims = true},
      kw_keepdim{.dim_pos = 1, .keepdim_pos = op_args::keyword_only};
  const ReductionKind psum{ReduceOp::sum}, pmax{ReduceOp::max}, pmin{ReduceOp::min}, pavg{ReduceOp::avg}, none{};
  const detail::ReductionOptions mean_options{.evenly_sharded_reduced_dims = true}, two_outputs{.num_outputs = 2};
  r.add({"aten.sum.default"}, reduction_factory(all, psum));
  r.add({"aten.sum.dim_IntList"}, reduction_factory(dims, psum));
  r.add({"aten.amax.default"}, reduction_factory(dims, pmax));
  r.add({"aten.max.default"}, reduction_factory(all, pmax));
  r.add({"aten.amin.default"}, reduction_factory(dims, pmin));
  r.add({"aten.min.default"}, reduction_factory(all, pmin));
  r.add({"aten.mean.default"}, reduction_factory(all, pavg, mean_options));
  r.add({"aten.mean.dim"}, reduction_factory(dims, pavg, mean_options));
  r.add({"aten.max.dim", "aten.min.dim"}, detail::dim_with_indices_rule);
  r.add({"aten.argmax.default", "aten.argmin.default", "aten.logsumexp.default"}, reduction_factory(dims, none));
  r.add({"aten.var.correction", "aten.std.correction"}, reduction_factory(kw_keepdim, none));
  r.add({"aten.var_mean.correction"}, reduction_factory(kw_keepdim, none, two_outputs));
  r.add({"aten._softmax.default", "aten._log_softmax.default", "aten._safe_softmax.default"}, detail::softmax_factory(1, 1));
  r.add({"aten._softmax_backward_data.default", "aten._log_softmax_backward_data.default"}, detail::softmax_factory(2, 2));
  r.add({"aten.native_layer_norm.default"}, [](const OpCall& call) {
    const bool weight = op_args::optional_tensor(call, 2, "weight").has_value(), bias = op_args::optional_tensor(call, 3, "bias").has_value();
    op_args::expect_tensor_inputs(call, 1 + (weight ? 1u : 0u) + (bias ? 1u : 0u));
    const TensorShape& input = call.tensors[op_args::tensor(call, 0, "input")].shape;
    return OpRule{layer_norm_single_dim_strategy(input.rank, detail::normalized_ndim(call, 1, input), weight, bias), UnevenInputs::reject};
  });
  r.add({"aten.native_layer_norm_backward.default"}, [](const OpCall& call) {
    const bool weight = op_args::optional_tensor(call, 5, "weight").has_value(), bias = op_args::optional_tensor(call, 6, "bias").has_value();
    op_args::expect_tensor_inputs(call, 4 + (weight ? 1u : 0u) + (bias ? 1u : 0u));
    const TensorShape& input = call.tensors[op_args::tensor(call, 1, "input")].shape;
    const auto mask = op_args::bool_list_or(call, 7, "output_mask", op_args::every_output(3));
    if (mask.size() != 3) op_args::bad_argument(call, "output_mask", "must hold 3 bools");
    return OpRule{
        layer_norm_backward_single_dim_strategy(input.rank, detail::normalized_ndim(call, 2, input), weight, bias, {mask[0], mask[1], mask[2]}),
        UnevenInputs::reject};
  });
}

}  // namespace ctshard
