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
/// `higher_order.auto_functionalized_v2` returns `(op's result, updated bases...)` with the
/// mutated arguments passed as `_all_bases` entries (`detail::auto_functionalized_rule`). The op's
/// own result is `None` for these kernels (output 0: Replicate).

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ctshard/registry/op_args.hpp"
#include "ctshard/registry/op_args_ext.hpp"
#include "ctshard/registry/op_registry.hpp"
#include "ctshard/rules/norm_rules.hpp"
#include "ctshard/rules/passthrough_rules.hpp"
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
  if (a == nullptr || a->text.empty()) throw error("ctshard: " + call.op + " without an op reference as first argument");
  std::string name = a->text;
  if (name.rfind("torch.ops.", 0) == 0) name = name.substr(10);
  return name;
}

/// A kernel auto_functionalized may wrap: its tensor parameters in schema order, the mutated ones
/// among them (schema order), and its rule over the canonical columns `[None, mutated...]` +
/// `[tensors...]` given the tensors' shapes in schema order.
struct WrappedKernel {
  std::vector<std::string_view> tensors;
  std::vector<std::string_view> mutated;
  RuleSet (*rules)(std::span<const TensorShape> shapes) = nullptr;
};

/// The kernels with a rule: vLLM's `_C` ops and attention (token- or head-parallel, as their math
/// allows) and Entangle's logging op `tg.inplace_log_tensor(t, s)` (mutates t by recording a name:
/// the values are unchanged, so every placement of t passes); nullptr for another op.
inline const WrappedKernel* wrapped_kernel(std::string_view op) {
  constexpr auto S = TokenOperand::sharded, R = TokenOperand::replicated;
  static const std::vector<std::pair<std::string_view, WrappedKernel>> kernels = {
      // (result, input, weight, epsilon); mutates result
      {"_C.rms_norm.default",
       {{"result", "input", "weight"},
        {"result"},
        [](std::span<const TensorShape>) {
          return token_parallel_rule(2, 3, {R, S, S, S, R}, 0);
        }}},
      // (input, residual, weight, epsilon); mutates input, residual
      {"_C.fused_add_rms_norm.default",
       {{"input", "residual", "weight"},
        {"input", "residual"},
        [](std::span<const TensorShape>) {
          return token_parallel_rule(3, 3, {R, S, S, S, S, R}, 0);
        }}},
      // (positions, query, key, head_size, cos_sin_cache, is_neox); mutates query, key
      {"_C.rotary_embedding.default",
       {{"positions", "query", "key", "cos_sin_cache"},
        {"query", "key"},
        [](std::span<const TensorShape>) {
          return token_parallel_rule(3, 4, {R, S, S, S, S, S, R}, 0);
        }}},
      // (out, input): out = silu(input[:, :F]) * input[:, F:]; mutates out
      {"_C.silu_and_mul.default",
       {{"out", "input"},
        {"out"},
        [](std::span<const TensorShape>) {
          return token_parallel_rule(2, 2, {R, S, S, S}, 0);
        }}},
      // (query, key, value, output, layer_name); mutates output. Attention mixes tokens (keys of a
      // sequence), so tokens stay whole; heads are independent.
      {"vllm.unified_attention_with_output.default",
       {{"query", "key", "value", "output"},
        {"output"},
        [](std::span<const TensorShape>) {
          return token_parallel_rule(2, 4, {R, S, S, S, S, S}, 1);
        }}},
      // Entangle's tg::inplace_log_tensor(t, s) -> None, mutates_args=("t",): records t's name
      {"tg.inplace_log_tensor.default",
       {{"t"},
        {"t"},
        [](std::span<const TensorShape> shapes) {
          const RuleSet same = passthrough_single_dim_strategy(shapes[0], shapes[0]);
          RuleSet rules(2, 1);
          rules.set_rank(1, static_cast<int>(shapes[0].rank));
          rules.set_rank(2, static_cast<int>(shapes[0].rank));
          for (std::size_t r = 0; r < same.size(); ++r) rules.add({Replicate(), same.at(r, 0), same.at(r, 1)});
          return rules;
        }}},
  };
  for (const auto& [name, k] : kernels)
    if (name == op) return &k;
  return nullptr;
}

/// `higher_order.auto_functionalized(op, k = v, ...)` returns `(op's result, mutated args...)`:
/// the mutated tensors are kwargs, the outputs follow the op's schema order.
/// `higher_order.auto_functionalized_v2(op, k = v, ..., _x_base_index = i, _all_bases = [...])`
/// (torch `_higher_order_ops/auto_functionalize.py`) returns `(op's result, all bases updated...)`:
/// a mutated arg x is `_all_bases[_x_base_index]` itself (no `_x_size` / `_x_slice_dim` view
/// metadata; `_x_alias` is the base too), and the outputs after the result are the bases in
/// `_all_bases` order. Both take the wrapped kernel's rule, its columns moved to the call's order
/// (inputs: the call's tensors as they appear; the op's own result is None: Replicate). Throws
/// ctshard::error naming the op for an unknown kernel, a missing tensor, a mutated arg that is a
/// view of its base (slice / as_strided), or bases shared by two args or by none.
inline OpRule auto_functionalized_rule(const OpCall& call, bool v2) {
  const std::string op = wrapped_op(call);
  const WrappedKernel* kernel = wrapped_kernel(op);
  if (kernel == nullptr) throw error("ctshard: no rule for " + op + " inside " + call.op);
  const std::string ctx = "ctshard: " + call.op + " of " + op;
  const std::size_t nt = kernel->tensors.size(), nm = kernel->mutated.size();
  // canonical tensor k -> index into call.tensors
  std::vector<std::size_t> input_of(nt, SIZE_MAX);
  std::vector<std::size_t> base_of_mutated(nm, SIZE_MAX);  // v2: position in _all_bases
  std::vector<std::int64_t> bases;                         // v2: tensor indices of _all_bases
  if (v2) {
    const OpArg* all = call.kwarg("_all_bases");
    if (all == nullptr || all->kind != OpArg::Kind::tensor_list) throw error(ctx + ": _all_bases must be a list of tensors");
    bases = all->ints;
  }
  const auto canonical = [&](std::string_view name) -> std::optional<std::size_t> {
    for (std::size_t k = 0; k < nt; ++k)
      if (kernel->tensors[k] == name) return k;
    return std::nullopt;
  };
  for (const auto& [name, a] : call.kwargs) {
    if (name == "_all_bases") continue;
    if (v2 && name.size() > 12 && name.starts_with("_") && name.ends_with("_base_index")) {
      const std::string arg = name.substr(1, name.size() - 12);
      for (const char* suffix : {"_size", "_stride", "_storage_offset", "_slice_dim"})
        if (call.kwarg("_" + arg + suffix) != nullptr) throw error(ctx + ": mutated argument '" + arg + "' is a view of its base (not supported)");
      std::size_t m = 0;
      while (m < nm && kernel->mutated[m] != arg) ++m;
      if (m == nm) throw error(ctx + ": '" + name + "' names no mutated argument of the op");
      if (a.kind != OpArg::Kind::integer || a.integer < 0 || static_cast<std::size_t>(a.integer) >= bases.size())
        throw error(ctx + ": '" + name + "' must index _all_bases");
      base_of_mutated[m] = static_cast<std::size_t>(a.integer);
      input_of[*canonical(arg)] = static_cast<std::size_t>(bases[static_cast<std::size_t>(a.integer)]);
      continue;
    }
    if (a.kind != OpArg::Kind::tensor) continue;
    const std::optional<std::size_t> k = canonical(name);
    if (!k) throw error(ctx + ": unexpected tensor argument '" + name + "'");
    input_of[*k] = static_cast<std::size_t>(a.integer);
  }
  for (std::size_t k = 0; k < nt; ++k)
    if (input_of[k] == SIZE_MAX) throw error(ctx + ": missing tensor argument '" + std::string(kernel->tensors[k]) + "'");
  op_args::expect_tensor_inputs(call, nt, nt, op);
  std::vector<TensorShape> shapes;
  for (std::size_t k = 0; k < nt; ++k) shapes.push_back(call.tensors[input_of[k]].shape);
  const RuleSet canon = kernel->rules(shapes);
  // output columns: v1 [None, mutated in schema order]; v2 [None, bases in _all_bases order]
  std::vector<std::size_t> out_col(1 + nm);  // canonical output -> actual output column
  out_col[0] = 0;
  std::size_t nout = 1 + nm;
  if (v2) {
    nout = 1 + bases.size();
    std::vector<bool> taken(bases.size(), false);
    for (std::size_t m = 0; m < nm; ++m) {
      if (base_of_mutated[m] == SIZE_MAX) throw error(ctx + ": no _" + std::string(kernel->mutated[m]) + "_base_index");
      if (taken[base_of_mutated[m]]) throw error(ctx + ": two mutated arguments share a base (not supported)");
      taken[base_of_mutated[m]] = true;
      out_col[1 + m] = 1 + base_of_mutated[m];
    }
    if (bases.size() != nm) throw error(ctx + ": _all_bases holds a base no mutated argument uses (not supported)");
  } else {
    for (std::size_t m = 0; m < nm; ++m) out_col[1 + m] = 1 + m;
  }
  RuleSet rules(nout, nt);
  for (std::size_t o = 0; o < 1 + nm; ++o) rules.set_rank(out_col[o], canon.rank(o));
  for (std::size_t k = 0; k < nt; ++k) rules.set_rank(nout + input_of[k], canon.rank(1 + nm + k));
  std::vector<Placement> row(nout + nt, Replicate());
  for (std::size_t r = 0; r < canon.size(); ++r) {
    for (std::size_t o = 0; o < 1 + nm; ++o) row[out_col[o]] = canon.at(r, o);
    for (std::size_t k = 0; k < nt; ++k) row[nout + input_of[k]] = canon.at(r, 1 + nm + k);
    rules.add(row);
  }
  return OpRule{rules, UnevenInputs::reject};
}
}  // namespace detail

/// Registers apex.fused_layer_norm_affine_fwd / _bwd and higher_order.auto_functionalized /
/// auto_functionalized_v2 for vLLM's `_C.rms_norm`, `_C.fused_add_rms_norm`,
/// `_C.rotary_embedding`, `_C.silu_and_mul`, `vllm.unified_attention_with_output` and Entangle's
/// `tg.inplace_log_tensor`. Other wrapped ops throw ctshard::error naming them (the planner then
/// falls back visibly).
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
  registry.add({"higher_order.auto_functionalized"}, [](const OpCall& call) { return detail::auto_functionalized_rule(call, false); });
  registry.add({"higher_order.auto_functionalized_v2"}, [](const OpCall& call) { return detail::auto_functionalized_rule(call, true); });
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
