#pragma once
/// \file registry/collective_ops.hpp
/// Communication ops already written into a graph (Megatron's `_c10d_functional.*`, vLLM's
/// `vllm.all_reduce`). ctshard plans on logical (global) tensors: such an op reduces or gathers
/// over a process group of the program (typically tensor-parallel ranks of a per-rank graph), so on
/// ctshard's mesh it preserves the logical value and its output keeps the input's placement
/// (passthrough_single_dim_strategy), except where that is unsafe:
/// - a reducing collective passes a Partial only of its own reduce op: `all_reduce(x, "max")` of a
///   P(sum) value is not the max of anything (rank parts 2 and 3 of the value 5 leave 3 on both);
/// - a sum-reducing collective never takes a Replicate placement (if its group is one of the mesh
///   dims, each rank's full copy is added group-size times); max / min / avg are idempotent and may.
/// ctshard prices only the redistribution its own plan adds. DTensor never sees these ops (they
/// live in per-rank graphs below it).

#include <optional>
#include <span>
#include <string>

#include "ctshard/registry/op_args.hpp"
#include "ctshard/registry/op_registry.hpp"
#include "ctshard/rules/passthrough_rules.hpp"

namespace ctshard {

namespace detail {
/// What a collective does to pending reductions.
struct CollectiveKind {
  bool reduces = false;                 ///< all_reduce / reduce_scatter: combines the group's values
  std::optional<ReduceOp> reduce_op{};  ///< its op when ctshard has a Partial for it (sum, avg, max, min)
};

/// The reduce op named by argument `pos` ("sum", "avg", "max", "min"; c10d also spells avg as
/// "mean"); another op ("product", "premul_sum", ...) reduces with no matching Partial.
inline CollectiveKind reducing_collective(const OpCall& call, std::size_t pos, std::string_view fallback) {
  std::string name = op_args::text(call, pos, "reduceOp");
  if (name.empty()) name = std::string(fallback);
  for (auto& c : name) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  CollectiveKind k{.reduces = true};
  if (name == "sum") k.reduce_op = ReduceOp::sum;
  else if (name == "avg" || name == "mean") k.reduce_op = ReduceOp::avg;
  else if (name == "max") k.reduce_op = ReduceOp::max;
  else if (name == "min") k.reduce_op = ReduceOp::min;
  return k;
}

/// Passthrough rows (shards of unchanged dims; Partials as `kind` allows), and for a sum reduction
/// a full-mesh filter refusing any Replicate placement of the input.
inline OpRule collective_rule(const OpCall& call, CollectiveKind kind) {
  op_args::expect_tensor_inputs(call, 1);
  const TensorShape& in = call.tensors[0].shape;
  const TensorShape out = call.outputs.empty() || call.outputs[0].shape.rank == 0 ? in : call.outputs[0].shape;
  const RuleSet all = passthrough_single_dim_strategy(in, out);
  RuleSet rules(1, 1);
  rules.set_rank(0, all.rank(0));
  rules.set_rank(1, all.rank(1));
  for (std::size_t r = 0; r < all.size(); ++r) {
    const Placement& p = all.at(r, 1);
    if (p.is_partial() && kind.reduces && !(kind.reduce_op && p.reduce_op == *kind.reduce_op)) continue;
    rules.add(all.row(r));
  }
  OpRule rule{rules, UnevenInputs::keep_current};
  if (kind.reduces && kind.reduce_op == ReduceOp::sum) {
    rule.filter = [](std::span<const Spec> operands, std::span<const TensorMeta>, MeshSizes) {
      for (const Placement& p : operands[1])
        if (p.is_replicate()) return false;
      return true;
    };
  }
  return rule;
}
}  // namespace detail

/// Registers, in the `_c10d_functional`, `c10d_functional` and `_c10d_functional_autograd`
/// namespaces: `all_reduce` (input, reduceOp, group), `reduce_scatter_tensor` (input, reduceOp,
/// group_size, group), `all_gather_into_tensor` (input, group_size, group) and `wait_tensor`
/// (input); and `vllm.all_reduce` (input, group: a sum). The output shape comes from the call's
/// output annotation when known (all-gather / reduce-scatter change dim 0), else equals the input's.
/// Throws ctshard::error when the call does not have exactly one tensor input.
inline void register_collective_ops(OpRegistry& registry) {
  for (std::string ns : {"_c10d_functional.", "c10d_functional.", "_c10d_functional_autograd."}) {
    const std::string reduce[] = {ns + "all_reduce.default", ns + "reduce_scatter_tensor.default"};
    const std::string move[] = {ns + "all_gather_into_tensor.default", ns + "wait_tensor.default"};
    for (const auto& name : reduce)
      registry.add({name}, [](const OpCall& call) { return detail::collective_rule(call, detail::reducing_collective(call, 1, "")); });
    for (const auto& name : move) registry.add({name}, [](const OpCall& call) { return detail::collective_rule(call, {}); });
  }
  registry.add({"vllm.all_reduce.default"},
               [](const OpCall& call) { return detail::collective_rule(call, detail::reducing_collective(call, 99, "sum")); });
}

}  // namespace ctshard
