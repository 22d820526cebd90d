#pragma once
/// \file registry/random_ops.hpp
/// Registers random ops (rules/random_rules.hpp; DTensor `_random_ops.py`): `bernoulli`,
/// `rand_like` / `randn_like`, and inductor's `inductor_seeds` / `inductor_lookup_seed` /
/// `inductor_random` prims. Sharded random outputs assume an executor with DTensor's offset-based
/// RNG tracker (each rank draws its own shard of one global draw); see rules/random_rules.hpp.

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "ctshard/registry/op_args.hpp"
#include "ctshard/registry/op_args_ext.hpp"
#include "ctshard/registry/op_registry.hpp"
#include "ctshard/rules/factory_rules.hpp"
#include "ctshard/rules/random_rules.hpp"

namespace ctshard {

/// Registers (arguments positional or by keyword):
/// - `aten.bernoulli.p` (self, p=0.5, *, generator), `aten.bernoulli_.float` (self, p=0.5, *,
///   generator), `aten.bernoulli.default` (self, *, generator): random_single_dim_strategy,
///   UnevenInputs::keep_current (DTensor 2.13 registers `bernoulli_.float` and `bernoulli.default`
///   with `allow_uneven_sharding=True`; it has no rule for `bernoulli.p`, which ctshard treats as
///   their functional form);
/// - `aten.rand_like.default`, `aten.randn_like.default` (self, ...): like_single_dim_strategy
///   (keep_existing_shards: 2.13's `create_like_strategy` follows the input);
/// - `prims.inductor_seeds.default` (count, device): factory, Replicate only (every rank holds
///   the same seeds);
/// - `prims.inductor_lookup_seed.default` (seeds, index): Replicate only (a seed at a global
///   index; keep_current);
/// - `prims.inductor_random.default` (size, seed, mode): Replicate only, the policy of ctshard's
///   size-only factories (with only the replicated seed as input every row is free and DTensor's
///   tie rule would take the last Shard row; Replicate turns into any shard for free).
///   DTensor 2.13 has no rule for the three prims.
/// Bad arguments throw ctshard::error naming the op and the argument.
inline void register_random_ops(OpRegistry& r) {
  using namespace op_args;
  const auto follows_self = [](const OpCall& call) {
    expect_tensor_inputs(call, 1);
    const TensorShape& in = call.tensors[tensor(call, 0, "self")].shape;
    if (const OpArg* p = find(call, 1, "p"); p != nullptr && !p->is_number() && !p->is_tensor()) bad_argument(call, "p", "must be a probability");
    return OpRule{random_single_dim_strategy(in.rank), UnevenInputs::keep_current};
  };
  r.add({"aten.bernoulli.p", "aten.bernoulli_.float"}, follows_self);
  r.add({"aten.bernoulli.default"}, [](const OpCall& call) {
    expect_tensor_inputs(call, 1);
    return OpRule{random_single_dim_strategy(call.tensors[tensor(call, 0, "self")].shape.rank), UnevenInputs::keep_current};
  });
  r.add({"aten.rand_like.default", "aten.randn_like.default"}, [](const OpCall& call) {
    expect_tensor_inputs(call, 1);
    return OpRule{like_single_dim_strategy(call.tensors[tensor(call, 0, "self")].shape), UnevenInputs::keep_existing_shards};
  });
  r.add({"prims.inductor_seeds.default"}, [](const OpCall& call) {
    expect_tensor_inputs(call, 0);
    const std::int64_t count = required_int(call, 0, "count");
    if (count < 0) bad_argument(call, "count", "is negative");
    return OpRule{factory_single_dim_strategy(TensorShape{count}, FactoryShards::replicate_only), UnevenInputs::keep_current};
  });
  r.add({"prims.inductor_lookup_seed.default"}, [](const OpCall& call) {
    expect_tensor_inputs(call, 1);
    const TensorShape& seeds = call.tensors[tensor(call, 0, "seeds")].shape;
    if (seeds.rank != 1) bad_argument(call, "seeds", "must be 1-D, got shape " + to_string(seeds));
    (void)required_int(call, 1, "index");
    RuleSet rules(1, 1);
    rules.set_rank(0, 0);
    rules.set_rank(1, 1);
    return OpRule{rules, UnevenInputs::keep_current};
  });
  r.add({"prims.inductor_random.default"}, [](const OpCall& call) {
    expect_tensor_inputs(call, 1);
    const std::vector<std::int64_t> size = int_list(call, 0, "size");
    if (size.size() > max_tensor_dims) bad_argument(call, "size", "has more than max_tensor_dims entries");
    for (auto s : size)
      if (s < 0) bad_argument(call, "size", "has a negative size " + std::to_string(s));
    const TensorShape& seed = call.tensors[tensor(call, 1, "seed")].shape;
    const std::optional<std::string> mode = optional_string(call, 2, "mode");
    if (!mode || (*mode != "rand" && *mode != "randn")) bad_argument(call, "mode", "must be 'rand' or 'randn'");
    RuleSet rules(1, 1);
    rules.set_rank(0, static_cast<int>(size.size()));
    rules.set_rank(1, seed.rank);
    return OpRule{rules, UnevenInputs::keep_current};
  });
}

}  // namespace ctshard
