#pragma once
/// \file rules/factory_rules.hpp
/// Single-dim strategies of copies and tensor factories: clone-like ops, dtype casts
/// (`_to_copy`), `*_like`, `new_*` and size-only factories (DTensor `_tensor_ops.py`; autoparallel
/// for the factories DTensor cannot dispatch).

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "ctshard/core/tensor_shape.hpp"
#include "ctshard/rules/passthrough_rules.hpp"
#include "ctshard/rules/rule_set.hpp"
#include "ctshard/rules/tensor_op_rules.hpp"

namespace ctshard {

/// A copy of the input with the same layout (clone, alias, detach, lift_fresh_copy, contiguous,
/// empty_like): `[S?(d), S?(d)]` for every dim, then `[P(r), P(r)]` for r = sum, avg, max, min
/// (DTensor `propagate_single_input_single_dim_strategy`). One output, one input.
[[nodiscard]] constexpr RuleSet same_layout_single_dim_strategy(const TensorShape& input) { return passthrough_single_dim_strategy(input, input); }

/// Which pending reductions survive a dtype cast (DTensor `_partial_needs_reduce_for_dtype_cast`).
enum class CastPartials : std::uint8_t {
  all,      ///< same dtype, or a floating target: every Partial passes
  max_min,  ///< an integral target: sum/avg do not commute with truncation (max/min do)
  none,     ///< a bool target: no reduction commutes with `!= 0`
};

/// Classifies a cast to `dtype` as printed in aten graphs ("torch.int64", "torch.bool", or without
/// the "torch." prefix; empty = no dtype change). The source dtype is not known to ctshard, so an
/// integral target is treated as if the source were floating (DTensor keeps sum/avg for an
/// int → int cast; dropping them is conservative). Unknown names are treated as integral.
[[nodiscard]] constexpr CastPartials cast_partials_for(std::string_view dtype) noexcept {
  if (dtype.starts_with("torch.")) dtype.remove_prefix(6);
  if (dtype.empty()) return CastPartials::all;
  if (dtype == "bool") return CastPartials::none;
  for (std::string_view f : {"float", "double", "half", "bfloat16", "float16", "float32", "float64", "complex64", "complex128", "cfloat", "cdouble",
                             "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz"})
    if (dtype == f) return CastPartials::all;
  return CastPartials::max_min;
}

/// `_to_copy` / `prims.convert_element_type` (DTensor `_to_copy_single_dim_strategy`): shard rows
/// as for a same-layout copy, then `[P(r), P(r)]` for the reductions `cast` keeps.
[[nodiscard]] constexpr RuleSet cast_single_dim_strategy(const TensorShape& input, CastPartials cast) {
  RuleSet rules(1, 1);
  rules.set_rank(0, input.rank);
  rules.set_rank(1, input.rank);
  for (std::size_t d = 0; d < input.rank; ++d) rules.add({ShardingPlaceholder(static_cast<int>(d)), ShardingPlaceholder(static_cast<int>(d))});
  for (ReduceOp r : pass_through_reduce_ops) {
    const bool keep = cast == CastPartials::all || (cast == CastPartials::max_min && (r == ReduceOp::max || r == ReduceOp::min));
    if (keep) rules.add({Partial(r), Partial(r)});
  }
  return rules;
}

/// `zeros_like` / `ones_like` / `full_like` / `rand_like` (DTensor
/// `create_like_single_dim_strategy`): the output's values ignore the input, so it may follow the
/// input's shards — `[S?(d), S?(d)]` for every dim — and a Partial input needs no reduction:
/// `[R, P(r)]` for r = sum, avg, max, min. The output is never Partial (ones of a P(sum) input
/// would read as the mesh size).
[[nodiscard]] constexpr RuleSet like_single_dim_strategy(const TensorShape& input) {
  RuleSet rules(1, 1);
  rules.set_rank(0, input.rank);
  rules.set_rank(1, input.rank);
  for (std::size_t d = 0; d < input.rank; ++d) rules.add({ShardingPlaceholder(static_cast<int>(d)), ShardingPlaceholder(static_cast<int>(d))});
  for (ReduceOp r : pass_through_reduce_ops) rules.add({Replicate(), Partial(r)});
  return rules;
}

/// What a `new_*` factory writes into its output (`new_factory_single_dim_strategy`).
enum class FactoryContents : unsigned char {
  uninitialized,  ///< `new_empty`, `new_empty_strided`: any values, so a Partial output is as good
  filled,         ///< `new_zeros`, `new_ones`, `new_full`: defined values
};

/// `new_empty` / `new_zeros` / `new_ones` / `new_full(input, size)` (DTensor
/// `new_factory_strategy`): the input is only read for its dtype and device, so it is never moved:
/// for every input dim `[R, S?(d)]`, then, when `size` equals the input's shape, `[S?(d), S?(d)]`
/// (the output follows the input's shards; listed after the Replicate output so that DTensor's
/// "last matching row" tie rule prefers it, as DTensor's −0.1 cost does); then per reduce op r
/// `[R, P(r)]`, and for FactoryContents::uninitialized (`new_empty`, `new_empty_strided`) output of the input's
/// shape also `[P(r), P(r)]` after them (DTensor lists both: the Replicate output and, for
/// uninitialised factories, the input's own placement).
[[nodiscard]] constexpr RuleSet new_factory_single_dim_strategy(const TensorShape& input, const TensorShape& size, FactoryContents contents) {
  const bool same = input == size;
  RuleSet rules(1, 1);
  rules.set_rank(0, size.rank);
  rules.set_rank(1, input.rank);
  for (std::size_t d = 0; d < input.rank; ++d) rules.add({Replicate(), ShardingPlaceholder(static_cast<int>(d))});
  for (std::size_t d = 0; same && d < input.rank; ++d)
    rules.add({ShardingPlaceholder(static_cast<int>(d)), ShardingPlaceholder(static_cast<int>(d))});
  for (ReduceOp r : pass_through_reduce_ops) rules.add({Replicate(), Partial(r)});
  for (ReduceOp r : pass_through_reduce_ops)
    if (contents == FactoryContents::uninitialized && same) rules.add({Partial(r), Partial(r)});
  return rules;
}

/// Whether a factory without tensor inputs lists shard rows (`factory_single_dim_strategy`).
enum class FactoryShards : unsigned char {
  replicate_only,  ///< no row: only the framework's all-Replicate row
  each_dim,        ///< `[S(d)]` for every dim of size > 1 (each rank fills its own shard)
};

/// A factory with no tensor input (`empty`, `zeros`, `ones`, `full` of `size`): one output, no
/// input. With FactoryShards::each_dim, `[S(d)]` for every dim of size > 1 — each rank fills its own shard,
/// at zero cost (autoparallel's `factory_rule`; DTensor has no rule since a factory never sees a
/// DTensor); with FactoryShards::replicate_only (e.g. `arange`, whose values depend on the global
/// index), no row, so only the framework's Replicate remains. No Partial row: it would only defer a reduction.
[[nodiscard]] constexpr RuleSet factory_single_dim_strategy(const TensorShape& size, FactoryShards shards) {
  RuleSet rules(1, 0);
  rules.set_rank(0, size.rank);
  if (shards == FactoryShards::each_dim)
    for (std::size_t d = 0; d < size.rank; ++d)
      if (size[d] > 1) rules.add({Shard(static_cast<int>(d))});
  return rules;
}

}  // namespace ctshard
