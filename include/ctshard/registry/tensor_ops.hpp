#pragma once
/// \file registry/tensor_ops.hpp
/// Registers the tensor ops of DTensor `_tensor_ops.py` that move or create data without
/// arithmetic: split / unbind / select / slice / slice_scatter / cat / stack, copies and casts,
/// `*_like`, `new_*`, and size-only factories.

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "ctshard/registry/op_args.hpp"
#include "ctshard/registry/op_args_ext.hpp"
#include "ctshard/registry/op_registry.hpp"
#include "ctshard/rules/factory_rules.hpp"
#include "ctshard/rules/passthrough_rules.hpp"
#include "ctshard/rules/tensor_op_rules.hpp"

namespace ctshard {

namespace detail {
/// A rule factory over `n_tensors` tensor inputs; `build(call)` returns the RuleSet; errors are
/// prefixed with the op name.
template <class Build>
RuleFactory tensor_op_factory(std::size_t n_tensors, UnevenInputs uneven, Build build) {
  return [n_tensors, uneven, build](const OpCall& call) {
    if (n_tensors != static_cast<std::size_t>(-1)) op_args::expect_tensor_inputs(call, n_tensors);
    return OpRule{op_args::in_op_context(call, [&] { return build(call); }), uneven};
  };
}
inline constexpr std::size_t any_tensor_count = static_cast<std::size_t>(-1);

/// The output shape of a size-only factory: its `size` argument (position 0).
inline TensorShape factory_size(const OpCall& call) {
  const auto sizes = op_args::int_list(call, 0, "size");
  for (auto s : sizes)
    if (s < 0) op_args::bad_argument(call, "size", "has a negative size " + std::to_string(s));
  if (sizes.size() > max_tensor_dims) op_args::bad_argument(call, "size", "has more than max_tensor_dims entries");
  return TensorShape(std::span<const std::int64_t>(sizes));
}
}  // namespace detail

/// Registers (arguments positional or by keyword, as aten names them; UnevenInputs as DTensor 2.13
/// registers each: `keep_existing_shards` for its op-strategy functions — split, unbind, select,
/// slice, slice_scatter, cat, stack, alias, detach, empty_like, `*_like`, `new_*` —,
/// `keep_current` for its pointwise-style single-dim rules (clone, `_to_copy`,
/// convert_element_type) and the ops it lacks):
/// - `aten.split.Tensor` (self, split_size, dim=0), `aten.split_with_sizes.default` (self,
///   split_sizes, dim=0): one output per piece, split_single_dim_strategy;
/// - `aten.unbind.int` (self, dim=0): self.size(dim) outputs, unbind_single_dim_strategy;
/// - `aten.select.int` (self, dim, index), `aten.slice.Tensor` (self, dim=0, start, end, step=1),
///   `aten.slice_scatter.default` (self, src, dim=0, start, end, step=1);
/// - `aten.cat.default` (tensors, dim=0): cat_single_dim_strategy with CatPieces::strided_shard (pieces of
///   one size along dim keep their shard as a StridedShard); `aten.stack.default` (tensors, dim=0);
/// - `aten.clone/alias/detach/lift_fresh_copy.default`, `aten.empty_like.default`,
///   `prims.device_put.default` (a, device) and `tg.log_tensor.default` (a, name: an identity
///   logging op): same layout;
/// - `aten._to_copy.default` (self, dtype=), `prims.convert_element_type.default` (self, dtype):
///   cast_single_dim_strategy with cast_partials_for(dtype);
/// - `aten.copy.default`, `aten.copy_.default` (self = dst, src): copy_single_dim_strategy;
/// - `aten.zeros_like/ones_like/full_like.default`: like_single_dim_strategy;
/// - `aten.new_empty/new_zeros/new_ones/new_full.default` (self, size) and
///   `aten.new_empty_strided.default` (self, size, stride; uninitialised like new_empty, the stride
///   only lays out memory): new_factory_single_dim_strategy;
/// - `aten.empty.memory_format`, `aten.zeros/ones/full.default` (size, ...),
///   `aten.arange.default/start/start_step`, `prims.iota.default` (length, *, start, step, ...) and
///   `aten.scalar_tensor.default` (s, ...): factories, Replicate only (no row; DTensor 2.13 has
///   no rule for iota and scalar_tensor, whose outputs no input places). Shard rows
///   (`factory_single_dim_strategy(size, FactoryShards::each_dim)`, autoparallel's choice) are not
///   registered: with no input every candidate costs 0 and "matches", so DTensor's tie rule takes
///   the LAST one (a Shard of the last dim on every mesh dim), which consumers then pay to undo;
///   Replicate converts to any placement for free, so it is never worse for a consumer.
/// Bad arguments throw ctshard::error naming the op and the argument.
inline void register_tensor_ops(OpRegistry& r) {
  using namespace op_args;
  using detail::tensor_op_factory;
  constexpr UnevenInputs follows_input = UnevenInputs::keep_existing_shards;  // DTensor 2.13 op-strategy functions
  r.add({"aten.split.Tensor"}, tensor_op_factory(1, follows_input, [](const OpCall& c) {
          const TensorShape& in = c.tensors[0].shape;
          const std::int64_t dim = int_or(c, 2, "dim", 0);
          const std::int64_t size = in.rank == 0 ? 0 : in[normalize_dim(dim, in.rank, "argument 'dim'")];
          return split_single_dim_strategy(in, split_piece_sizes(size, required_int(c, 1, "split_size")), dim);
        }));
  r.add({"aten.split_with_sizes.default"}, tensor_op_factory(1, follows_input, [](const OpCall& c) {
          return split_single_dim_strategy(c.tensors[0].shape, int_list(c, 1, "split_sizes"), int_or(c, 2, "dim", 0));
        }));
  r.add({"aten.unbind.int"},
        tensor_op_factory(1, follows_input, [](const OpCall& c) { return unbind_single_dim_strategy(c.tensors[0].shape, int_or(c, 1, "dim", 0)); }));
  r.add({"aten.select.int"}, tensor_op_factory(1, follows_input, [](const OpCall& c) {
          (void)required_int(c, 2, "index");
          return select_single_dim_strategy(c.tensors[0].shape, required_int(c, 1, "dim"));
        }));
  r.add({"aten.slice.Tensor"}, tensor_op_factory(1, follows_input, [](const OpCall& c) {
          return slice_single_dim_strategy(c.tensors[0].shape, int_or(c, 1, "dim", 0), optional_int(c, 2, "start"), optional_int(c, 3, "end"),
                                           int_or(c, 4, "step", 1));
        }));
  r.add({"aten.slice_scatter.default"}, tensor_op_factory(2, follows_input, [](const OpCall& c) {
          return slice_scatter_single_dim_strategy(c.tensors[0].shape, c.tensors[1].shape, int_or(c, 2, "dim", 0), optional_int(c, 3, "start"),
                                                   optional_int(c, 4, "end"), int_or(c, 5, "step", 1));
        }));
  // slice_backward(grad_output, input_sizes, dim, start, end, step): grad_output written into zeros
  // of input_sizes. The sliced dim changes size, so only the other dims keep their shards; the
  // zeros are the same on every rank, so every Partial passes (DTensor `slice_backward_rules`).
  r.add({"aten.slice_backward.default"}, tensor_op_factory(1, follows_input, [](const OpCall& c) {
          const auto sizes = int_list(c, 1, "input_sizes");
          if (sizes.size() != c.tensors[0].shape.rank) bad_argument(c, "input_sizes", "must have the gradient's rank");
          (void)normalize_dim(required_int(c, 2, "dim"), sizes.size(), "argument 'dim'");
          return passthrough_single_dim_strategy(c.tensors[0].shape, TensorShape(std::span<const std::int64_t>(sizes)));
        }));
  // tril / triu(self, diagonal=0): the mask depends on the global row and column of the last two
  // dims, so only leading (batch) dims may stay sharded; zeroing is linear and keeps 0 on every
  // rank, so every Partial passes. DTensor 2.13 replicates them (`linalg_replicate_strategy`).
  r.add({"aten.tril.default", "aten.triu.default"}, tensor_op_factory(1, follows_input, [](const OpCall& c) {
          const TensorShape& in = c.tensors[0].shape;
          if (in.rank < 2) bad_argument(c, "self", "must have at least 2 dims");
          RuleSet rules = passthrough_single_dim_strategy(in, in);
          RuleSet kept(1, 1);
          kept.set_rank(0, static_cast<int>(in.rank));
          kept.set_rank(1, static_cast<int>(in.rank));
          for (std::size_t row = 0; row < rules.size(); ++row) {
            const Placement& p = rules.at(row, 1);
            if (p.is_placeholder() && static_cast<std::size_t>(p.dim) + 2 >= in.rank) continue;
            kept.add(rules.row(row));
          }
          return kept;
        }));
  r.add({"aten.cat.default"}, tensor_op_factory(detail::any_tensor_count, follows_input, [](const OpCall& c) {
          const auto shapes = tensor_list_shapes(c, 0, "tensors");
          expect_tensor_inputs(c, shapes.size());
          return cat_single_dim_strategy(shapes, int_or(c, 1, "dim", 0), CatPieces::strided_shard);
        }));
  r.add({"aten.stack.default"}, tensor_op_factory(detail::any_tensor_count, follows_input, [](const OpCall& c) {
          const auto shapes = tensor_list_shapes(c, 0, "tensors");
          expect_tensor_inputs(c, shapes.size());
          return stack_single_dim_strategy(shapes, int_or(c, 1, "dim", 0));
        }));
  const auto same_layout = [](const OpCall& c) { return same_layout_single_dim_strategy(c.tensors[0].shape); };
  // prims.device_put(a, device, non_blocking=False) moves a to a device: a copy of the value.
  // tg.log_tensor(a, name) is a logging op that returns its input (a clone, in the graphs that use
  // it); its name string is not read.
  r.add({"aten.clone.default", "aten.lift_fresh_copy.default", "prims.device_put.default", "tg.log_tensor.default"},
        tensor_op_factory(1, UnevenInputs::keep_current, same_layout));
  r.add({"aten.alias.default", "aten.detach.default", "aten.empty_like.default"}, tensor_op_factory(1, follows_input, same_layout));
  r.add({"aten._to_copy.default"}, tensor_op_factory(1, UnevenInputs::keep_current, [](const OpCall& c) {
          const OpArg* dtype = c.kwarg("dtype");
          return cast_single_dim_strategy(c.tensors[0].shape, cast_partials_for(dtype == nullptr ? std::string() : dtype->text));
        }));
  r.add({"prims.convert_element_type.default"}, tensor_op_factory(1, UnevenInputs::keep_current, [](const OpCall& c) {
          const std::string dtype = text(c, 1, "dtype");
          if (dtype.empty()) bad_argument(c, "dtype", "is missing");
          return cast_single_dim_strategy(c.tensors[0].shape, cast_partials_for(dtype));
        }));
  r.add({"aten.copy.default", "aten.copy_.default"}, tensor_op_factory(2, UnevenInputs::keep_current, [](const OpCall& c) {
          return copy_single_dim_strategy(c.tensors[0].shape, c.tensors[1].shape);
        }));
  r.add({"aten.zeros_like.default", "aten.ones_like.default", "aten.full_like.default"},
        tensor_op_factory(1, follows_input, [](const OpCall& c) { return like_single_dim_strategy(c.tensors[0].shape); }));
  for (const FactoryContents contents : {FactoryContents::uninitialized, FactoryContents::filled}) {
    const bool empty = contents == FactoryContents::uninitialized;
    auto build = [contents](const OpCall& c) {
      const auto sizes = int_list(c, 1, "size");
      if (sizes.size() > max_tensor_dims) bad_argument(c, "size", "has more than max_tensor_dims entries");
      return new_factory_single_dim_strategy(c.tensors[0].shape, TensorShape(std::span<const std::int64_t>(sizes)), contents);
    };
    if (empty) r.add({"aten.new_empty.default"}, tensor_op_factory(1, follows_input, build));
    if (empty)
      r.add({"aten.new_empty_strided.default"}, tensor_op_factory(1, follows_input, [build](const OpCall& c) {
              if (int_list(c, 2, "stride").size() != int_list(c, 1, "size").size()) bad_argument(c, "stride", "must have one entry per size");
              return build(c);
            }));
    else r.add({"aten.new_zeros.default", "aten.new_ones.default", "aten.new_full.default"}, tensor_op_factory(1, follows_input, build));
  }
  r.add({"aten.empty.memory_format", "aten.zeros.default", "aten.ones.default", "aten.full.default"},
        tensor_op_factory(0, UnevenInputs::keep_current,
                          [](const OpCall& c) { return factory_single_dim_strategy(detail::factory_size(c), FactoryShards::replicate_only); }));
  r.add({"aten.arange.default", "aten.arange.start", "aten.arange.start_step"}, tensor_op_factory(0, UnevenInputs::keep_current, [](const OpCall& c) {
          const bool known = !c.outputs.empty() && c.outputs[0].shape.rank == 1;
          return factory_single_dim_strategy(known ? c.outputs[0].shape : TensorShape{0}, FactoryShards::replicate_only);
        }));
  r.add({"prims.iota.default"}, tensor_op_factory(0, UnevenInputs::keep_current, [](const OpCall& c) {
          const std::int64_t length = required_int(c, 0, "length");
          if (length < 0) bad_argument(c, "length", "is negative");
          (void)int_or(c, keyword_only, "start", 0);
          (void)int_or(c, keyword_only, "step", 1);
          return factory_single_dim_strategy(TensorShape{length}, FactoryShards::replicate_only);
        }));
  r.add({"aten.scalar_tensor.default"}, tensor_op_factory(0, UnevenInputs::keep_current, [](const OpCall& c) {
          (void)number_or(c, 0, "s", 0.0);
          if (find(c, 0, "s") == nullptr) bad_argument(c, "s", "is missing");
          return factory_single_dim_strategy(TensorShape{}, FactoryShards::replicate_only);
        }));
}

}  // namespace ctshard
