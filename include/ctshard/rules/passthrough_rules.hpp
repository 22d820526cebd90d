#pragma once
/// \file rules/passthrough_rules.hpp
/// Single-dim strategies of value-preserving unary ops: the output keeps the input's placement,
/// Shard on every tensor dim whose size the op keeps, and every Partial.

#include <cstddef>

#include "ctshard/core/tensor_shape.hpp"
#include "ctshard/rules/rule_set.hpp"

namespace ctshard {

/// Rows `[S?(d), S?(d)]` for every dim d where `in` and `out` have the same size (same rank
/// required, else no shard row), then `[P(r), P(r)]` for r = sum, avg, max, min. One output, one
/// input. Used for ops whose output equals the input as a logical tensor (a per-rank collective
/// already written into a graph, `wait_tensor`).
[[nodiscard]] constexpr RuleSet passthrough_single_dim_strategy(const TensorShape& in, const TensorShape& out) {
  RuleSet rules(1, 1);
  rules.set_rank(0, out.rank);
  rules.set_rank(1, in.rank);
  if (in.rank == out.rank)
    for (std::size_t d = 0; d < in.rank; ++d)
      if (in[d] == out[d]) rules.add({ShardingPlaceholder(static_cast<int>(d)), ShardingPlaceholder(static_cast<int>(d))});
  for (ReduceOp r : {ReduceOp::sum, ReduceOp::avg, ReduceOp::max, ReduceOp::min}) rules.add({Partial(r), Partial(r)});
  return rules;
}

}  // namespace ctshard
