#pragma once
/// \file registry/fused_kernel_ops.hpp
/// Fused kernels of inference / training stacks that appear in real aten graphs: vLLM's `_C` ops
/// and attention (called through `higher_order.auto_functionalized`) and apex's fused layer norm
/// (forward and backward); and the wrapper `higher_order.graphsafe_run_with_rng_state`, which takes
/// the rule of the op it runs (`register_wrapper_ops`).
/// No DTensor rule exists for them; these rules follow the kernels' math (token- or head-parallel
/// only) and are verified like every other rule.
///
/// `higher_order.auto_functionalized(op, k = v, ...)` returns `(op's result, mutated args...)`;
/// the op's own result is `None` for these kernels (output 0: Replicate) and the mutated arguments
/// follow in the kernel's schema order.

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "ctshard/registry/op_args.hpp"
#include "ctshard/registry/op_args_ext.hpp"
#include "ctshard/registry/op_registry.hpp"
#include "ctshard/rules/norm_rules.hpp"
#include "ctshard/rules/view_rules.hpp"

namespace ctshard {

namespace detail {
/// One operand of a token-parallel row: sharded on the row's dim, or replicated.
enum class TokenOperand : bool { replicated, sharded };

/// A one-row rule: operands marked `sharded` in `row` (outputs then inputs) take `S?(dim)`, the
/// others Replicate. Token-parallel kernels use dim 0, head-parallel attention dim 1.
inline RuleSet token_parallel_rule(std::size_t outputs, std::size_t inputs, std::initializer_list<TokenOperand> operands, int dim) {
  RuleSet rules(outputs, inputs);
  std::vector<Placement> row;
  for (TokenOperand s : operands) row.push_back(s == TokenOperand::sharded ? ShardingPlaceholder(dim) : Replicate());
  rules.add(row);
  return rules;
}

/// Wrapped op of an auto_functionalized call: the first argument's text ("_C.rms_norm.default").
inline std::string wrapped_op(const OpCall& call) {
  const OpArg* a = call.arg(0);
  if (a == nullptr || a->text.empty()) throw error("ctshard: higher_order.auto_functionalized without an op reference as first argument");
  std::string name = a->text;
  if (name.rfind("torch.ops.", 0) == 0) name = name.substr(10);
  return name;
}
}  // namespace detail

/// Registers apex.fused_layer_norm_affine_fwd / _bwd and higher_order.auto_functionalized for vLLM's
/// `_C.rms_norm`, `_C.fused_add_rms_norm`, `_C.rotary_embedding`, `_C.silu_and_mul` and
/// `vllm.unified_attention_with_output`. Other wrapped ops throw ctshard::error naming them (the
/// planner then falls back visibly).
inline void register_fused_kernel_ops(OpRegistry& registry) {
  constexpr auto S = detail::TokenOperand::sharded, R = detail::TokenOperand::replicated;  // rows read like specs
  // apex (input, weight, bias, normalized_shape, eps) -> (out, mean, invvar); mean / invvar are
  // flattened over the leading dims, so only leading dim 0 can stay sharded.
  registry.add({"apex.fused_layer_norm_affine_fwd.default"}, [](const OpCall& call) {
    op_args::expect_tensor_inputs(call, 3, 3, "apex.fused_layer_norm_affine_fwd");
    const OpArg* normalized = call.arg(3);
    const std::size_t norm_dims = normalized != nullptr && normalized->kind == OpArg::Kind::int_list ? normalized->ints.size() : 1;
    const TensorShape& x = call.tensors[0].shape;
    RuleSet rules(3, 3);
    if (x.rank > norm_dims) rules = detail::token_parallel_rule(3, 3, {S, S, S, S, R, R}, 0);
    OpRule rule{rules, UnevenInputs::reject};
    // mean / invvar flatten x's leading dims: a shard of dim 0 labels them S(0) exactly when the
    // shard count divides x's dim 0 (the evenness of that flatten, as for a view).
    TensorShape leading;
    for (std::size_t d = 0; d + norm_dims < x.rank; ++d) leading.push_back(x[d]);
    if (leading.rank > 1) {
      const std::array<std::int64_t, 1> flat{leading.numel()};
      const ViewDimMap map = view_dim_map(leading, flat, "ctshard: apex.fused_layer_norm_affine_fwd");
      rule.filter = [map](std::span<const Spec> operands, std::span<const TensorMeta>, MeshSizes mesh) {
        return view_shard_is_even(map, operands[3], mesh);
      };
    }
    return rule;
  });
  // apex (grad_output, mean, invvar, input_or_output, normalized_shape, weight, bias, eps, memory_efficient=False)
  // -> (grad_input, grad_weight, grad_bias): the forward's token-parallel row with P(sum) parameter
  // gradients, and the rows linear in grad_output.
  registry.add({"apex.fused_layer_norm_affine_bwd.default"}, [](const OpCall& call) {
    op_args::expect_tensor_inputs(call, 6, 6, "apex.fused_layer_norm_affine_bwd");
    for (std::size_t pos = 0; pos < 4; ++pos)
      if (op_args::tensor(call, pos, std::array{"grad_output", "mean", "invvar", "input_or_output"}[pos]) != pos)
        throw error("ctshard: apex.fused_layer_norm_affine_bwd: tensor arguments must come in schema order");
    const TensorShape& x = call.tensors[3].shape;
    const std::size_t norm_dims = op_args::int_list(call, 4, "normalized_shape").size();
    if (norm_dims > x.rank) op_args::bad_argument(call, "normalized_shape", "has more dims than the input");
    if (op_args::tensor(call, 5, "weight") != 4 || op_args::tensor(call, 6, "bias") != 5)
      throw error("ctshard: apex.fused_layer_norm_affine_bwd: tensor arguments must come in schema order");
    OpRule rule{apex_layer_norm_backward_single_dim_strategy(x.rank, norm_dims), UnevenInputs::reject};
    TensorShape leading;  // mean / invvar flatten x's leading dims, as in the forward
    for (std::size_t d = 0; d + norm_dims < x.rank; ++d) leading.push_back(x[d]);
    if (leading.rank > 1) {
      const std::array<std::int64_t, 1> flat{leading.numel()};
      const ViewDimMap map = view_dim_map(leading, flat, "ctshard: apex.fused_layer_norm_affine_bwd");
      rule.filter = [map](std::span<const Spec> operands, std::span<const TensorMeta>, MeshSizes mesh) {
        return view_shard_is_even(map, operands[6], mesh);
      };
    }
    return rule;
  });
  registry.add({"higher_order.auto_functionalized"}, [](const OpCall& call) {
    const std::string op = detail::wrapped_op(call);
    // outputs: None, then the mutated tensors; inputs: the tensor kwargs in call order.
    if (op == "_C.rms_norm.default") {  // (result, input, weight, epsilon); mutates result
      op_args::expect_tensor_inputs(call, 3, 3, op);
      return OpRule{detail::token_parallel_rule(2, 3, {R, S, S, S, R}, 0), UnevenInputs::reject};
    }
    if (op == "_C.fused_add_rms_norm.default") {  // (input, residual, weight, epsilon); mutates input, residual
      op_args::expect_tensor_inputs(call, 3, 3, op);
      return OpRule{detail::token_parallel_rule(3, 3, {R, S, S, S, S, R}, 0), UnevenInputs::reject};
    }
    if (op == "_C.rotary_embedding.default") {  // (positions, query, key, head_size, cos_sin_cache, is_neox); mutates query, key
      op_args::expect_tensor_inputs(call, 4, 4, op);
      return OpRule{detail::token_parallel_rule(3, 4, {R, S, S, S, S, S, R}, 0), UnevenInputs::reject};
    }
    if (op == "_C.silu_and_mul.default") {  // (out, input): out = silu(input[:, :F]) * input[:, F:]; mutates out
      op_args::expect_tensor_inputs(call, 2, 2, op);
      return OpRule{detail::token_parallel_rule(2, 2, {R, S, S, S}, 0), UnevenInputs::reject};
    }
    if (op == "vllm.unified_attention_with_output.default") {  // (query, key, value, output, layer_name); mutates output
      // Attention mixes tokens (keys of a sequence), so tokens stay whole; heads are independent.
      op_args::expect_tensor_inputs(call, 4, 4, op);
      return OpRule{detail::token_parallel_rule(2, 4, {R, S, S, S, S, S}, 1), UnevenInputs::reject};
    }
    throw error("ctshard: no rule for " + op + " inside higher_order.auto_functionalized");
  });
}

namespace detail {
/// `a` with tensor reference `removed` dropped from the numbering: references above it move down by
/// one (lists and nested lists too). The reference `removed` itself must not occur in `a`.
inline void renumber_without_tensor(OpArg& a, std::int64_t removed) {
  if (a.kind == OpArg::Kind::tensor && a.integer > removed) --a.integer;
  if (a.kind == OpArg::Kind::tensor_list)
    for (auto& i : a.ints)
      if (i > removed) --i;
  for (auto& item : a.items) renumber_without_tensor(item, removed);
}
}  // namespace detail

/// Registers `higher_order.graphsafe_run_with_rng_state(op, *args, rng_state=..., **kwargs)`, which
/// runs `op(*args, **kwargs)` with the random-number generator state `rng_state` (inductor's
/// CUDA-graph-safe RNG functionalization, e.g. around flash attention with dropout): its outputs
/// are op's outputs, so its rule is the rule of op in `registry` for the call without the op
/// reference and the RNG state. The RNG state (a generator, not a tensor; the FX reader and the
/// planner see an opaque 0-d input when the graph passes it by name) is Replicate in every row. The
/// same soundness as every random op here (`docs/rules.md`, random ops): the executor gives every
/// rank its own part of the one global random stream (DTensor's `OffsetBasedRNGTracker`). Throws
/// ctshard::error when the first argument is no op reference or op has no rule. Takes a snapshot of
/// `registry` (so call it after every other registration and option, `make_builtin_registry`'s
/// last step): a wrapped op gets exactly the rule the registry gives it directly.
inline void register_wrapper_ops(OpRegistry& registry) {
  auto inner = std::make_shared<const OpRegistry>(registry);
  registry.add({"higher_order.graphsafe_run_with_rng_state"}, [inner](const OpCall& call) {
    const OpArg* ref = call.arg(0);
    if (ref == nullptr || ref->text.empty() || ref->kind == OpArg::Kind::tensor)
      throw error("ctshard: higher_order.graphsafe_run_with_rng_state without an op reference as first argument");
    std::string op = ref->text;
    if (op.rfind("torch.ops.", 0) == 0) op = op.substr(10);
    const RuleFactory* factory = inner->find(op);
    if (factory == nullptr || op == call.op) throw error("ctshard: no rule for " + op + " inside higher_order.graphsafe_run_with_rng_state");
    OpCall wrapped;
    wrapped.op = op;
    wrapped.tensors = call.tensors;
    wrapped.outputs = call.outputs;
    wrapped.args.assign(call.args.begin() + 1, call.args.end());
    std::optional<std::size_t> state;
    for (const auto& [k, v] : call.kwargs) {
      if (k != "rng_state") {
        wrapped.kwargs.emplace_back(k, v);
        continue;
      }
      if (v.kind == OpArg::Kind::tensor) state = static_cast<std::size_t>(v.integer);
      else if (v.kind != OpArg::Kind::none && v.kind != OpArg::Kind::other && v.kind != OpArg::Kind::string)
        op_args::bad_argument(call, "rng_state", "must be a generator");
    }
    if (state) {
      if (*state >= call.tensors.size()) op_args::bad_argument(call, "rng_state", "names no tensor input");
      wrapped.tensors.erase(wrapped.tensors.begin() + static_cast<std::ptrdiff_t>(*state));
      for (auto& a : wrapped.args) detail::renumber_without_tensor(a, static_cast<std::int64_t>(*state));
      for (auto& [k, v] : wrapped.kwargs) detail::renumber_without_tensor(v, static_cast<std::int64_t>(*state));
    }
    OpRule rule = (*factory)(wrapped);
    if (!state) return rule;
    const std::size_t at = *state, nout = rule.rules.num_outputs();
    rule.rules = with_replicated_input(rule.rules, at, static_cast<int>(call.tensors[at].shape.rank));
    if (rule.filter) {
      rule.filter = [filter = std::move(rule.filter), at, nout](std::span<const Spec> operands, std::span<const TensorMeta> inputs, MeshSizes mesh) {
        std::vector<Spec> specs(operands.begin(), operands.end());
        std::vector<TensorMeta> metas(inputs.begin(), inputs.end());
        specs.erase(specs.begin() + static_cast<std::ptrdiff_t>(nout + at));
        metas.erase(metas.begin() + static_cast<std::ptrdiff_t>(at));
        return filter(specs, metas, mesh);
      };
    }
    return rule;
  });
}

}  // namespace ctshard
