#pragma once
/// \file rules/random_rules.hpp
/// Single-dim strategies of random ops: `bernoulli` (functional and in-place), `rand_like` /
/// `randn_like`, and inductor's seed / random prims (DTensor `_random_ops.py`,
/// `_tensor_ops.py: create_like_strategy`).
///
/// A sharded random output assumes DTensor's executor: its RNG tracker (`OffsetBasedRNGTracker`)
/// offsets each rank's generator state by the position of its shard, so the shards together hold
/// the values one global draw would give, and replicated outputs draw the same values on every
/// rank. ctshard plans for such an executor; the simulated mesh compares shapes only.

#include <cstddef>
#include <vector>

#include "ctshard/core/tensor_shape.hpp"
#include "ctshard/rules/rule_set.hpp"

namespace ctshard {

/// A random op whose outputs follow its one tensor input element by element (`bernoulli.p`,
/// `bernoulli_.float`, `bernoulli.default`): `[S?(d)] * (num_outputs + 1)` for every dim of the
/// rank-`rank` input, no Partial row — a sample of a partial value (or of the probabilities a
/// Partial holds) is not the partial of samples. DTensor `_random_inplace_single_dim_strategy`.
[[nodiscard]] constexpr RuleSet random_single_dim_strategy(std::size_t rank, std::size_t num_outputs = 1) {
  RuleSet rules(num_outputs, 1);
  for (std::size_t k = 0; k < rules.width(); ++k) rules.set_rank(k, static_cast<int>(rank));
  std::vector<Placement> row(rules.width());
  for (std::size_t d = 0; d < rank; ++d) {
    for (auto& p : row) p = ShardingPlaceholder(static_cast<int>(d));
    rules.add(row);
  }
  return rules;
}

}  // namespace ctshard
