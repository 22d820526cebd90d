#pragma once
/// \file registry/dtensor_profile.hpp
/// The `dtensor` rules profile (RuleProfile::dtensor): per-op deviations layered on the built-in
/// rules so that every op DTensor 2.13 has a rule for gets exactly DTensor 2.13's strategies —
/// for plans that DTensor's own op dispatch executes (`ctshard.torch.run_plan(mode="dtensor")`).
/// The built-in rules stay the single definition of each op's domain: every deviation first runs
/// the built-in factory (which validates the call and fixes the operand count), then replaces or
/// filters its rows as DTensor 2.13 does, naming the DTensor function it follows.
///
/// Three kinds of deviation:
/// - **Single-dim rules** whose rows differ (convolution, batch norm, convolution_backward, ...):
///   DTensor's rows, DTensor's `allow_uneven_sharding`, no filter DTensor lacks.
/// - **Op-strategy functions with fixed lists** (`expand_to_full_mesh_op_strategy` over concrete
///   placements: pooling, sort / topk, histc, gather / scatter, SDPA, dot, tril / triu): the list
///   as a rule set, shardability as DTensor's (`UnevenInputs::reject`).
/// - **Op-strategy functions that follow the current input** (views, reductions, softmax, tensor
///   ops, factories, equal, t, nll_loss): DTensor's OpStrategy for the call's current specs
///   (OpCall::current, OpCall::mesh_sizes; registry/dtensor_strategies.hpp,
///   registry/dtensor_view_strategy.hpp) as `listed_rows` (exactly those rows, no shardability
///   check: `UnevenInputs::unchecked`). These ops are marked `reads_current_specs`; a call without
///   current specs (the whole-graph planner) gets the rows DTensor runs as they are for any input
///   (`fixed_point_rule`). Where DTensor's function raises, the
///   factory raises ctshard::error with DTensor's message ("DTensor 2.13 raises: ..."), so the
///   planner falls back visibly (it replicates the inputs, which DTensor then executes).
///
/// DTensor's rows include the unsound ones the default profile drops (docs/conformance.md,
/// `dtensor_unsound`: amax over an empty shard, gather off the gather dim with smaller index
/// sizes, FFTs passing P(max), `sum(x, [])` keeping a shard, ...): the profile reproduces what
/// DTensor computes, not what is right. Ops DTensor 2.13 has no rule for keep ctshard's rules.
///
/// Not reproduced (each a classified difference in docs/conformance.md): Partial(product)
/// (ctshard has no such placement), and DTensor's costs where its OpSpecs carry none or -0.1.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ctshard/registry/dtensor_strategies.hpp"
#include "ctshard/registry/dtensor_view_strategy.hpp"
#include "ctshard/registry/op_args.hpp"
#include "ctshard/registry/op_args_ext.hpp"
#include "ctshard/registry/op_registry.hpp"
#include "ctshard/rules/placeholder_fill.hpp"
#include "ctshard/rules/rule_set.hpp"
#include "ctshard/rules/view_rules.hpp"

namespace ctshard {

namespace detail::dtensor_profile {

using ::ctshard::MeshStrategy;

/// The current input specs and mesh of a call (OpCall::current, OpCall::mesh_sizes) for a
/// deviation that follows them. Throws ctshard::error naming `function` when the call has none or
/// they do not fit its tensors.
inline std::span<const Spec> current_specs(const OpCall& call, std::string_view function) {
  if (call.current.size() != call.tensors.size() || call.mesh_sizes.empty())
    throw error("ctshard: " + call.op + ": the dtensor rule set follows the current input specs (DTensor 2.13 " + std::string(function) +
                "), but the call carries " + std::to_string(call.current.size()) + " current specs for " + std::to_string(call.tensors.size()) +
                " tensors" + (call.mesh_sizes.empty() ? " and no mesh" : ""));
  for (const Spec& s : call.current)
    if (s.size() != call.mesh_sizes.size())
      throw error("ctshard: " + call.op + ": current spec '" + to_string(s) + "' does not fit a " + std::to_string(call.mesh_sizes.size()) +
                  "-dim mesh");
  return call.current;
}

/// Tensor dims `[0, rank)` as a mask.
[[nodiscard]] constexpr TensorDimMask all_dims(std::size_t rank) noexcept { return rank == 0 ? 0 : ~TensorDimMask{0} >> (64 - rank); }

/// DTensor `normalize_dim(dim, ndim)` with ctshard's range check.
inline int norm_dim(const OpCall& call, std::int64_t dim, std::size_t rank, std::string_view name = "dim") {
  return op_args::wrap_dim(call, name, dim, rank);
}

/// A positional integer argument as DTensor reads `op_schema.args_schema[i]` (keywords ignored),
/// `fallback` when absent or None.
inline std::int64_t positional_int(const OpCall& call, std::size_t i, std::int64_t fallback) {
  const OpArg* a = call.arg(i);
  if (a == nullptr || a->kind == OpArg::Kind::none) return fallback;
  if (a->kind != OpArg::Kind::integer) op_args::bad_argument(call, "#" + std::to_string(i), "must be an integer");
  return a->integer;
}

/// DTensor `len(args_schema) > i and bool(args_schema[i])` (positional only).
inline bool positional_flag(const OpCall& call, std::size_t i) {
  const OpArg* a = call.arg(i);
  return a != nullptr && (a->kind == OpArg::Kind::boolean || a->kind == OpArg::Kind::integer) && a->integer != 0;
}

/// DTensor `kwargs_schema.get(name, False)` (keyword only).
inline bool keyword_flag(const OpCall& call, std::string_view name) {
  const OpArg* a = call.kwarg(std::string(name));
  return a != nullptr && (a->kind == OpArg::Kind::boolean || a->kind == OpArg::Kind::integer) && a->integer != 0;
}

/// DTensor `_infer_reduction_dims(args_schema[1], ndim)` as a mask (positional only): absent or
/// None reduce every dim, an integer or list reduces those (so `[]` reduces none — DTensor's
/// reading); a 0-d tensor reduces nothing.
inline TensorDimMask reduction_dims(const OpCall& call, std::size_t rank) {
  const OpArg* a = call.arg(1);
  if (a == nullptr || a->kind == OpArg::Kind::none || rank == 0) return all_dims(rank);
  if (a->kind != OpArg::Kind::integer && a->kind != OpArg::Kind::int_list)
    op_args::bad_argument(call, "dim", "must be an integer or a list of integers");
  const std::vector<std::int64_t> dims = a->kind == OpArg::Kind::integer ? std::vector<std::int64_t>{a->integer} : a->ints;
  TensorDimMask mask = 0;
  for (auto d : dims) mask |= TensorDimMask{1} << norm_dim(call, d, rank);
  return mask;
}

/// An OpRule listing exactly `rows` (DTensor's OpStrategy for the call): `listed_rows`, and
/// UnevenInputs::unchecked (DTensor's op strategies check neither shardability nor mixed
/// Partials).
inline OpRule listed_rule(const OpCall& call, std::vector<MeshStrategy> rows, std::size_t num_outputs) {
  ListedRows l = listed_rows(std::move(rows), num_outputs, call.tensors.size(), call.mesh_sizes.size());
  return OpRule{std::move(l.rules), UnevenInputs::unchecked, std::move(l.filter)};
}

/// What a follow deviation computes: DTensor's strategies for the call, its current specs and the
/// built-in rule (for the operand counts).
using FollowRows = std::function<std::vector<MeshStrategy>(const OpCall& call, std::span<const Spec> current, const OpRule& builtin)>;

/// True when `row` is one of `rows`.
inline bool listed(const std::vector<MeshStrategy>& rows, std::span<const Spec> row) {
  for (const MeshStrategy& r : rows)
    if (std::equal(r.begin(), r.end(), row.begin(), row.end())) return true;
  return false;
}

/// The rows DTensor executes as they are, whatever the current inputs: the built-in rule's rows
/// whose input specs, taken as the current specs, make `rows` list exactly that row (the fixed
/// points of DTensor's follow function; a call DTensor refuses keeps none). For callers that do
/// not know the current specs when they build the rule (`plan --global`): moving the inputs to a
/// kept row's inputs first (as `ctshard.torch.run_plan` does), DTensor's dispatch then runs that
/// row without a collective of its own. No shardability check (as DTensor's op strategies).
inline OpRule fixed_point_rule(const OpCall& call, OpRule base, const FollowRows& rows) {
  const std::size_t nout = base.rules.num_outputs();
  OpRule shape_only{base.rules, base.uneven_inputs, {}};
  base.filter = [call, rows, nout, shape_only = std::move(shape_only), inner = std::move(base.filter)](
                    std::span<const Spec> operands, std::span<const TensorMeta> metas, MeshSizes mesh) {
    if (inner && !inner(operands, metas, mesh)) return false;
    OpCall at = call;
    at.current.assign(operands.begin() + static_cast<std::ptrdiff_t>(nout), operands.end());
    at.mesh_sizes.assign(mesh.begin(), mesh.end());
    try {
      return listed(rows(at, at.current, shape_only), operands);
    } catch (const error&) {
      return false;  // DTensor raises for these inputs
    }
  };
  base.uneven_inputs = UnevenInputs::unchecked;
  return base;
}

/// Replaces each of `ops` by a deviation that follows the current input specs: the built-in factory
/// validates the call, `rows` gives DTensor's strategies for the call's current specs
/// (`listed_rule`; `function` names DTensor's function in errors), and the op is marked
/// `reads_current_specs`. A call without current specs (OpCall::current empty) gets the rows
/// DTensor runs unchanged for any current input (`fixed_point_rule`).
inline void follow(OpRegistry& r, std::initializer_list<std::string_view> ops, std::string_view function, FollowRows rows) {
  for (const std::string_view op : ops) {
    const RuleFactory* found = r.find(op);
    if (found == nullptr) continue;
    r.replace(op, [builtin = *found, rows, function = std::string(function)](const OpCall& call) {
      OpRule base = builtin(call);
      if (call.current.empty() && call.mesh_sizes.empty()) return fixed_point_rule(call, std::move(base), rows);
      const std::span<const Spec> current = current_specs(call, function);
      return op_args::in_op_context(call, [&] { return listed_rule(call, rows(call, current, base), base.rules.num_outputs()); });
    });
    r.mark_reads_current_specs(op);
  }
}

/// Replaces each of `ops` by `modify(call, builtin rule)` (a deviation that does not read the
/// current specs).
inline void deviate(OpRegistry& r, std::initializer_list<std::string_view> ops, std::function<OpRule(const OpCall&, OpRule)> modify) {
  for (const std::string_view op : ops) {
    const RuleFactory* found = r.find(op);
    if (found == nullptr) continue;
    r.replace(op,
              [builtin = *found, modify](const OpCall& call) { return op_args::in_op_context(call, [&] { return modify(call, builtin(call)); }); });
  }
}

/// A rule set of `rows` (concrete placements or placeholders) with the operand counts of `like`.
inline RuleSet rows_like(const RuleSet& like, std::initializer_list<std::vector<Placement>> rows) {
  RuleSet out(like.num_outputs(), like.num_inputs());
  for (std::size_t k = 0; k < like.width(); ++k) out.set_rank(k, like.rank(k));
  for (const auto& row : rows) out.add(row);
  return out;
}

/// `rules` with every ShardingPlaceholder(d) replaced by Shard(d): DTensor 2.13's op-strategy
/// functions that list concrete Shard rows (`expand_to_full_mesh_op_strategy`) keep them even when
/// no input is sharded.
inline RuleSet concrete_shards(const RuleSet& rules) {
  RuleSet out(rules.num_outputs(), rules.num_inputs());
  for (std::size_t k = 0; k < rules.width(); ++k) out.set_rank(k, rules.rank(k));
  std::vector<Placement> row(rules.width());
  for (std::size_t r = 0; r < rules.size(); ++r) {
    for (std::size_t k = 0; k < rules.width(); ++k) {
      const Placement& p = rules.cell(r, k);
      row[k] = p.is_placeholder() ? Shard(p.dim) : p;
    }
    out.add(row);
  }
  return out;
}

/// An empty rule set (only the framework's all-Replicate row) with the operand counts of `like`.
inline RuleSet replicate_only(const RuleSet& like) { return rows_like(like, {}); }

// ---------------------------------------------------------------------------------------------
// the deviations

/// Views (DTensor `register_op_strategy_map` → `reshape_strategy`): the dim map as the built-in
/// view rules build it, `propagate_shape_and_sharding` on the current spec. `strict`: DTensor's
/// strict_view flag (view, _unsafe_view, squeeze).
inline void follow_views(OpRegistry& r) {
  using dtensor_ops::reshape_strategy;
  using dtensor_ops::view_rule_of;
  const auto view = [](bool strict, ViewDimMap (*map_of)(const OpCall&)) {
    return [strict, map_of](const OpCall& call, std::span<const Spec> cur, const OpRule&) {
      const ViewDimMap map = map_of(call);
      return std::vector<MeshStrategy>{reshape_strategy(cur[0], call.tensors[0].shape, view_rule_of(map), call.mesh_sizes, strict)};
    };
  };
  static constexpr auto sizes_map = [](const OpCall& c) {
    return view_dim_map(c.tensors[0].shape, op_args::int_list(c, 1, "size"), "ctshard: view");
  };
  follow(r, {"aten.view.default", "aten._unsafe_view.default"}, "reshape_strategy (view, strict)", view(true, +sizes_map));
  follow(r, {"aten.reshape.default"}, "reshape_strategy (reshape)", view(false, +sizes_map));
  follow(r, {"aten.transpose.int"}, "reshape_strategy (transpose)",
         view(
             false, +[](const OpCall& c) {
               return transpose_dim_map(c.tensors[0].shape, op_args::required_int(c, 1, "dim0"), op_args::required_int(c, 2, "dim1"),
                                        "ctshard: transpose");
             }));
  follow(r, {"aten.permute.default"}, "reshape_strategy (permute)",
         view(
             false, +[](const OpCall& c) { return permute_dim_map(c.tensors[0].shape, op_args::int_list(c, 1, "dims"), "ctshard: permute"); }));
  follow(
      r, {"aten.unsqueeze.default"}, "reshape_strategy (unsqueeze)",
      view(
          false, +[](const OpCall& c) { return unsqueeze_dim_map(c.tensors[0].shape, op_args::required_int(c, 1, "dim"), "ctshard: unsqueeze"); }));
  follow(r, {"aten.squeeze.default"}, "reshape_strategy (squeeze, strict)",
         view(
             true, +[](const OpCall& c) { return squeeze_dim_map(c.tensors[0].shape, {}, SqueezeDims::every_singleton, "ctshard: squeeze"); }));
  follow(r, {"aten.squeeze.dim"}, "reshape_strategy (squeeze, strict)",
         view(
             true, +[](const OpCall& c) {
               const std::int64_t d = op_args::required_int(c, 1, "dim");
               return squeeze_dim_map(c.tensors[0].shape, std::span<const std::int64_t>(&d, 1), SqueezeDims::listed, "ctshard: squeeze");
             }));
  follow(r, {"aten.squeeze.dims"}, "reshape_strategy (squeeze, strict)",
         view(
             true, +[](const OpCall& c) {
               return squeeze_dim_map(c.tensors[0].shape, op_args::int_list(c, 1, "dim"), SqueezeDims::listed, "ctshard: squeeze");
             }));
  follow(r, {"aten.expand.default"}, "reshape_strategy (expand)",
         view(
             false, +[](const OpCall& c) { return expand_dim_map(c.tensors[0].shape, op_args::int_list(c, 1, "size"), "ctshard: expand"); }));
  // repeat: DTensor's `dim_repeat` DimMap, where `Repeat(InputDim(i), n > 1)` marks input dim i
  // unshardable (it is replicated first); ctshard's dim map has it as a broadcast of dim i, which
  // `reshape_strategy` would read as expand's `Broadcast(InputDim(i))`, so the input dim is dropped
  follow(r, {"aten.repeat.default"}, "reshape_strategy (repeat)", [](const OpCall& call, std::span<const Spec> cur, const OpRule&) {
    dtensor_ops::ViewRule rule = view_rule_of(repeat_dim_map(call.tensors[0].shape, op_args::int_list(call, 1, "repeats"), "ctshard: repeat"));
    for (dtensor_ops::ViewRuleDim& d : rule)
      if (d.kind == dtensor_ops::ViewRuleDim::Kind::broadcast) d.first = d.last = -1;
    return std::vector<MeshStrategy>{reshape_strategy(cur[0], call.tensors[0].shape, rule, call.mesh_sizes, false)};
  });
  follow(r, {"aten.view_as_real.default"}, "reshape_strategy (view_as_real)", [](const OpCall& call, std::span<const Spec> cur, const OpRule&) {
    return std::vector<MeshStrategy>{
        reshape_strategy(cur[0], call.tensors[0].shape, dtensor_ops::view_as_real_rule(call.tensors[0].shape), call.mesh_sizes, false)};
  });
  // t.default is DTensor's transpose_strategy, not a reshape
  follow(r, {"aten.t.default"}, "transpose_strategy", [](const OpCall& call, std::span<const Spec> cur, const OpRule&) {
    return std::vector<MeshStrategy>{dtensor_ops::transpose_strategy(cur[0], call.tensors[0].shape.rank)};
  });
}

/// Reductions: DTensor `linear_reduction_strategy` (sum, mean, amax, amin, max, min: dims and
/// keepdim read positionally), `argmax_argmin_strategy`, `std_var_reduction_strategy` and
/// `logsumexp_strategy` (keepdim from the keywords only), `scan_strategy` (cumsum, the raw dim),
/// all through `common_reduction_strategy`.
inline void follow_reductions(OpRegistry& r) {
  using dtensor_ops::common_reduction_strategy;
  const auto linear = [](ReduceOp op) {
    return [op](const OpCall& call, std::span<const Spec> cur, const OpRule& base) {
      const TensorShape& shape = call.tensors[0].shape;
      MeshStrategy row =
          common_reduction_strategy(cur[0], shape, call.mesh_sizes, reduction_dims(call, shape.rank), positional_flag(call, 2), true, op);
      (void)base;
      return std::vector<MeshStrategy>{row};
    };
  };
  follow(r, {"aten.sum.default", "aten.sum.dim_IntList"}, "linear_reduction_strategy", linear(ReduceOp::sum));
  follow(r, {"aten.mean.default", "aten.mean.dim"}, "linear_reduction_strategy", linear(ReduceOp::avg));
  follow(r, {"aten.amax.default", "aten.max.default"}, "linear_reduction_strategy", linear(ReduceOp::max));
  follow(r, {"aten.amin.default", "aten.min.default"}, "linear_reduction_strategy", linear(ReduceOp::min));
  follow(r, {"aten.argmax.default", "aten.argmin.default"}, "argmax_argmin_strategy",
         [](const OpCall& call, std::span<const Spec> cur, const OpRule&) {
           const TensorShape& shape = call.tensors[0].shape;
           return std::vector<MeshStrategy>{common_reduction_strategy(cur[0], shape, call.mesh_sizes, reduction_dims(call, shape.rank),
                                                                      positional_flag(call, 2), false, ReduceOp::max)};
         });
  // std / var / var_mean / logsumexp: keepdim is keyword-only in DTensor's reading; one output spec
  // per output (var_mean's OpSpec has one spec for both outputs)
  follow(r, {"aten.var.correction", "aten.std.correction", "aten.var_mean.correction", "aten.logsumexp.default"},
         "std_var_reduction_strategy / logsumexp_strategy", [](const OpCall& call, std::span<const Spec> cur, const OpRule& base) {
           const TensorShape& shape = call.tensors[0].shape;
           MeshStrategy row = common_reduction_strategy(cur[0], shape, call.mesh_sizes, reduction_dims(call, shape.rank),
                                                        keyword_flag(call, "keepdim"), false, ReduceOp::sum);
           while (row.size() < base.rules.width()) row.insert(row.begin(), row.front());
           return std::vector<MeshStrategy>{row};
         });
  follow(r, {"aten.cumsum.default"}, "scan_strategy", [](const OpCall& call, std::span<const Spec> cur, const OpRule&) {
    // DTensor passes the raw dim: a negative one matches no shard (the shards then stay)
    const std::int64_t dim = op_args::required_int(call, 1, "dim");
    const TensorShape& shape = call.tensors[0].shape;
    const TensorDimMask mask = dim >= 0 && dim < 64 ? TensorDimMask{1} << dim : 0;
    return std::vector<MeshStrategy>{common_reduction_strategy(cur[0], shape, call.mesh_sizes, mask, true, false, ReduceOp::sum)};
  });
}

/// Softmax: DTensor `softmax_strategy`, `softmax_backward_strategy`.
inline void follow_softmax(OpRegistry& r) {
  follow(r, {"aten._softmax.default", "aten._log_softmax.default", "aten._safe_softmax.default"}, "softmax_strategy",
         [](const OpCall& call, std::span<const Spec> cur, const OpRule&) {
           const int dim = norm_dim(call, op_args::required_int(call, 1, "dim"), call.tensors[0].shape.rank);
           return std::vector<MeshStrategy>{dtensor_ops::softmax_strategy(cur[0], dim)};
         });
  follow(r, {"aten._softmax_backward_data.default", "aten._log_softmax_backward_data.default"}, "softmax_backward_strategy",
         [](const OpCall& call, std::span<const Spec> cur, const OpRule&) {
           const int dim = norm_dim(call, op_args::required_int(call, 2, "dim"), call.tensors[0].shape.rank);
           return std::vector<MeshStrategy>{dtensor_ops::softmax_backward_strategy(cur[0], cur[1], call.mesh_sizes, dim)};
         });
}

/// Tensor ops and factories: DTensor `select_int_strategy`, `gen_slice_strategy`,
/// `slice_backward_rules`, `gen_slice_scatter_strategy`, `split_strategy`, `gen_unbind_strategy`,
/// `cat_strategy`, `stack_strategy`, `equal_strategy`, `propagate_single_input_strategy`,
/// `create_like_strategy`, `new_factory_strategy`.
inline void follow_tensor_ops(OpRegistry& r) {
  using namespace dtensor_ops;
  using Rows = std::vector<MeshStrategy>;
  follow(r, {"aten.select.int"}, "select_int_strategy", [](const OpCall& call, std::span<const Spec> cur, const OpRule&) {
    return Rows{select_int_strategy(cur[0], norm_dim(call, op_args::required_int(call, 1, "dim"), call.tensors[0].shape.rank))};
  });
  follow(r, {"aten.slice.Tensor"}, "gen_slice_strategy", [](const OpCall& call, std::span<const Spec> cur, const OpRule&) {
    // DTensor reads (dim, start, end, step) positionally with defaults (0, None, None, 1)
    const TensorShape& shape = call.tensors[0].shape;
    const std::int64_t raw = positional_int(call, 1, 0);
    const int dim = norm_dim(call, raw, shape.rank);
    const std::int64_t size = shape[static_cast<std::size_t>(dim)];
    std::int64_t start = positional_int(call, 2, 0), end = positional_int(call, 3, size);
    if (end > size) end = size;
    if (start < 0) start += size;
    if (end < 0) end += size;
    const bool whole = start == 0 && end == size && positional_int(call, 4, 1) == 1;
    return Rows{slice_strategy(cur[0], dim, whole)};
  });
  follow(r, {"aten.slice_backward.default"}, "slice_backward_rules", [](const OpCall& call, std::span<const Spec> cur, const OpRule&) {
    return Rows{slice_backward_strategy(cur[0], op_args::required_int(call, 2, "dim"))};
  });
  follow(r, {"aten.slice_scatter.default"}, "gen_slice_scatter_strategy", [](const OpCall& call, std::span<const Spec> cur, const OpRule&) {
    return Rows{slice_scatter_strategy(cur[0], norm_dim(call, positional_int(call, 2, 0), call.tensors[0].shape.rank))};
  });
  follow(r, {"aten.split.Tensor", "aten.split_with_sizes.default"}, "split_strategy",
         [](const OpCall& call, std::span<const Spec> cur, const OpRule& base) {
           return Rows{split_strategy(cur[0], norm_dim(call, positional_int(call, 2, 0), call.tensors[0].shape.rank), base.rules.num_outputs())};
         });
  follow(r, {"aten.unbind.int"}, "gen_unbind_strategy", [](const OpCall& call, std::span<const Spec> cur, const OpRule& base) {
    return Rows{unbind_strategy(cur[0], norm_dim(call, positional_int(call, 1, 0), call.tensors[0].shape.rank), base.rules.num_outputs())};
  });
  follow(r, {"aten.cat.default"}, "cat_strategy", [](const OpCall& call, std::span<const Spec> cur, const OpRule&) {
    return cat_strategy(cur, norm_dim(call, positional_int(call, 1, 0), call.tensors[0].shape.rank));
  });
  follow(r, {"aten.stack.default"}, "stack_strategy", [](const OpCall& call, std::span<const Spec> cur, const OpRule&) {
    return Rows{stack_strategy(cur, norm_dim(call, positional_int(call, 1, 0), call.tensors[0].shape.rank + 1))};
  });
  follow(r, {"aten.equal.default"}, "equal_strategy", [](const OpCall& call, std::span<const Spec> cur, const OpRule& base) {
    MeshStrategy row = equal_strategy(cur[0], cur[1], call.mesh_sizes, call.tensors[0].shape.rank == 0 || call.tensors[1].shape.rank == 0);
    for (std::size_t k = 0; k < base.rules.num_outputs(); ++k) row.insert(row.begin(), Spec(call.mesh_sizes.size()));
    return Rows{row};
  });
  follow(r, {"aten.alias.default", "aten.detach.default", "aten.empty_like.default"}, "propagate_single_input_strategy",
         [](const OpCall&, std::span<const Spec> cur, const OpRule&) { return Rows{propagate_single_input_strategy(cur[0])}; });
  follow(r, {"aten.zeros_like.default", "aten.ones_like.default", "aten.full_like.default", "aten.rand_like.default", "aten.randn_like.default"},
         "create_like_strategy", [](const OpCall&, std::span<const Spec> cur, const OpRule&) { return Rows{create_like_strategy(cur[0])}; });
  for (const bool uninitialized : {true, false}) {
    const FollowRows rows = [uninitialized](const OpCall& call, std::span<const Spec> cur, const OpRule&) {
      const auto sizes = op_args::int_list(call, 1, "size");
      return new_factory_strategy(cur[0], call.tensors[0].shape, TensorShape(std::span<const std::int64_t>(sizes)), uninitialized);
    };
    if (uninitialized) follow(r, {"aten.new_empty.default", "aten.new_empty_strided.default"}, "new_factory_strategy", rows);
    else follow(r, {"aten.new_zeros.default", "aten.new_ones.default", "aten.new_full.default"}, "new_factory_strategy", rows);
  }
}

/// nll_loss: DTensor `nll_loss_forward_strategy`, `nll_loss_backward_strategy`.
inline void follow_losses(OpRegistry& r) {
  using dtensor_ops::NllReduction;
  follow(r, {"aten.nll_loss_forward.default"}, "nll_loss_forward_strategy", [](const OpCall& call, std::span<const Spec> cur, const OpRule&) {
    const bool weight = call.tensors.size() == 3;
    const auto reduction = static_cast<NllReduction>(op_args::required_int(call, 3, "reduction"));
    return std::vector<MeshStrategy>{dtensor_ops::nll_loss_forward_strategy(cur[0], weight ? &cur[2] : nullptr, call.tensors[0].shape,
                                                                            call.tensors[1].shape, call.mesh_sizes, reduction)};
  });
  follow(r, {"aten.nll_loss_backward.default"}, "nll_loss_backward_strategy", [](const OpCall& call, std::span<const Spec> cur, const OpRule&) {
    const bool weight = call.tensors.size() == 5;
    const auto reduction = static_cast<NllReduction>(op_args::required_int(call, 4, "reduction"));
    return std::vector<MeshStrategy>{
        dtensor_ops::nll_loss_backward_strategy(cur[0], cur[1], weight ? &cur[3] : nullptr, cur.back(), call.tensors[1].shape, reduction)};
  });
}

/// DTensor `grouped_mm_strategy`'s `valid_grouped_mm_strides` for contiguous operands: the local
/// shard of this rank (DTensor's propagation runs on rank 0: the first `torch.chunk` piece on every
/// mesh dim) of each matrix must have its innermost size a multiple of 16 bytes.
inline FullMeshFilter grouped_mm_stride_filter() {
  return [](std::span<const Spec> operands, std::span<const TensorMeta> inputs, MeshSizes mesh) {
    for (std::size_t i = 0; i < 2 && i < inputs.size(); ++i) {
      const TensorShape& shape = inputs[i].shape;
      if (shape.rank == 0 || inputs[i].itemsize == 0) continue;
      const int last = static_cast<int>(shape.rank) - 1;
      std::int64_t local = shape[shape.rank - 1];
      const Spec& spec = operands[1 + i];
      for (std::size_t m = 0; m < spec.size(); ++m)
        if (spec[m].is_any_shard() && spec[m].dim == last) local = (local + mesh[m] - 1) / mesh[m];
      const auto alignment = static_cast<std::int64_t>(16 / inputs[i].itemsize);
      if (alignment > 0 && local % alignment != 0) return false;
    }
    return true;
  };
}

/// The op-strategy functions that expand a fixed list (`expand_to_full_mesh_op_strategy`):
/// `pooling_strategy`, `sort_strategy` (sort, topk), `histc_strategy`, `gather_strategy`,
/// `scatter_strategy`, `scatter_add_strategy`, `dot_strategy` (the legacy einsum
/// `gen_einsum_strategies("i,i->")`), `linalg_replicate_strategy` (tril, triu), the SDPA
/// strategies (`_scaled_dot_product_*_base_strategies`: batch and head rows listed concretely) and
/// `grouped_mm_strategy` (with its stride check, `grouped_mm_stride_filter`).
inline void fixed_lists(OpRegistry& r) {
  const auto S = [](std::size_t d) { return Shard(static_cast<int>(d)); };
  deviate(r, {"aten.max_pool2d_with_indices.default"}, [S](const OpCall& call, OpRule base) {
    const bool batched = call.tensors[0].shape.rank >= 4;
    RuleSet rules = rows_like(base.rules, {{S(0), S(0), S(0)}});
    if (batched) rules.add({S(1), S(1), S(1)});
    return OpRule{std::move(rules), UnevenInputs::reject};
  });
  const auto sort_rule = [S](const OpCall& call, OpRule base, std::int64_t raw_dim) {
    const std::size_t rank = call.tensors[0].shape.rank;
    const int dim = norm_dim(call, raw_dim, rank);
    RuleSet rules = replicate_only(base.rules);
    for (std::size_t d = 0; d < rank; ++d)
      if (static_cast<int>(d) != dim) rules.add({S(d), S(d), S(d)});
    return OpRule{std::move(rules), UnevenInputs::reject};
  };
  deviate(r, {"aten.sort.default"},
          [sort_rule](const OpCall& call, OpRule base) { return sort_rule(call, std::move(base), positional_int(call, 1, -1)); });
  deviate(r, {"aten.topk.default"},
          [sort_rule](const OpCall& call, OpRule base) { return sort_rule(call, std::move(base), positional_int(call, 2, -1)); });
  deviate(r, {"aten.sort.stable"}, [sort_rule](const OpCall& call, OpRule base) {
    const OpArg* d = call.kwarg("dim");
    return sort_rule(call, std::move(base), d != nullptr && d->kind == OpArg::Kind::integer ? d->integer : -1);
  });
  deviate(r, {"aten.histc.default"}, [S](const OpCall& call, OpRule base) {
    RuleSet rules = replicate_only(base.rules);
    if (call.args.size() == 4)  // DTensor: min and max given (positionally), whatever their values
      for (std::size_t d = 0; d < call.tensors[0].shape.rank; ++d) rules.add({Partial(), S(d)});
    return OpRule{std::move(rules), UnevenInputs::reject};
  });
  deviate(r, {"aten.gather.default"}, [S](const OpCall& call, OpRule base) {
    const TensorShape& self = call.tensors[0].shape;
    const TensorShape& index = call.tensors[1].shape;
    const auto dim = static_cast<std::size_t>(norm_dim(call, op_args::required_int(call, 1, "dim"), self.rank));
    RuleSet rules = replicate_only(base.rules);
    // DTensor's _MaskPartial row: ctshard writes it [P(sum), S(dim), R] (as embedding)
    if (dim < index.rank && index[dim] == 1) rules.add({Partial(), S(dim), Replicate()});
    rules.add({S(dim), Replicate(), S(dim)});
    if (self.rank == index.rank)
      for (std::size_t d = 0; d < self.rank; ++d)
        if (d != dim) rules.add({S(d), S(d), S(d)});
    return OpRule{std::move(rules), UnevenInputs::reject};
  });
  deviate(r, {"aten.scatter.value", "aten.scatter.src", "aten.scatter_add.default"}, [S](const OpCall& call, OpRule base) {
    const TensorShape& self = call.tensors[0].shape;
    const TensorShape& index = call.tensors[1].shape;
    const bool src = call.tensors.size() == 3, add = call.op == "aten.scatter_add.default";
    const auto dim = static_cast<std::size_t>(norm_dim(call, op_args::required_int(call, 1, "dim"), self.rank));
    RuleSet rules = replicate_only(base.rules);
    if (self.rank == index.rank)
      for (std::size_t d = 0; d < self.rank; ++d) {
        if (d == dim || self[d] != index[d]) continue;
        if (src && !add && call.tensors[2].shape[d] != index[d]) continue;  // scatter checks src too, scatter_add does not
        std::vector<Placement> row(base.rules.width(), S(d));
        rules.add(row);
      }
    return OpRule{std::move(rules), UnevenInputs::reject};
  });
  deviate(r, {"aten.dot.default"}, [S](const OpCall&, OpRule base) {
    return OpRule{rows_like(base.rules, {{Partial(), S(0), S(0)}}), UnevenInputs::reject};
  });
  deviate(r, {"aten.tril.default", "aten.triu.default"}, [](const OpCall&, OpRule base) {
    return OpRule{replicate_only(base.rules), UnevenInputs::reject};
  });
  deviate(r,
          {"aten._scaled_dot_product_flash_attention.default", "aten._scaled_dot_product_flash_attention_backward.default",
           "aten._scaled_dot_product_efficient_attention.default", "aten._scaled_dot_product_efficient_attention_backward.default",
           "aten._scaled_dot_product_cudnn_attention.default", "aten._scaled_dot_product_cudnn_attention_backward.default"},
          [](const OpCall&, OpRule base) {
            return OpRule{concrete_shards(base.rules), UnevenInputs::reject};
          });
  deviate(r, {"aten._grouped_mm.default"}, [S](const OpCall& call, OpRule base) {
    const std::size_t a = call.tensors[0].shape.rank, b = call.tensors[1].shape.rank;
    const bool offs = call.tensors.size() == 3;
    const auto row = [&](Placement out, Placement m1, Placement m2) {
      std::vector<Placement> v{out, m1, m2};
      if (offs) v.push_back(Replicate());
      return v;
    };
    RuleSet rules = replicate_only(base.rules);
    rules.add(row(Partial(), Partial(), Replicate()));
    rules.add(row(Partial(), Replicate(), Partial()));
    if (a == 2 && b == 3) {
      rules.add(row(S(1), Replicate(), S(2)));
      rules.add(row(Partial(), S(1), S(1)));
    } else if (a == 3 && b == 2) {
      rules.add(row(Partial(), S(2), S(0)));
      rules.add(row(S(0), S(1), Replicate()));
    } else if (a == 2 && b == 2) {
      rules.add(row(S(2), Replicate(), S(1)));
      rules.add(row(S(1), S(0), Replicate()));
    } else if (a == 3 && b == 3) {
      rules.add(row(S(2), Replicate(), S(2)));
      rules.add(row(S(1), S(1), Replicate()));
      rules.add(row(Partial(), S(2), S(1)));
      rules.add(row(S(0), S(0), S(0)));
    }
    return OpRule{std::move(rules), UnevenInputs::reject, grouped_mm_stride_filter()};
  });
}

/// Single-dim rules whose rows differ: DTensor `convolution_single_dim_strategy` (batch only),
/// `convolution_backward_single_dim_strategy`, `batch_norm_strategy` (channels only; the
/// functional variant adds the updated running stats as outputs, `_make_functional_variant`),
/// `batch_norm_backward_strategy`, `pool_backward_strategy` (no channel filter),
/// `rms_norm_bwd_single_dim_strategy`, `embedding_dense_backward_strategy` (every batch row, also
/// with scale_grad_by_freq), `fft_single_dim_strategy` (every Partial, no empty-shard filter), and
/// the in-place random ops (`bernoulli_.float`: the expansion keeps only rows where self and the
/// output stay as they are, and raises when none does).
inline void single_dim_rules(OpRegistry& r) {
  const auto Sp = [](std::size_t d) { return ShardingPlaceholder(static_cast<int>(d)); };
  deviate(r, {"aten.convolution.default"}, [Sp](const OpCall&, OpRule base) {
    std::vector<Placement> row{Sp(0), Sp(0), Replicate()};
    if (base.rules.num_inputs() == 3) row.push_back(Replicate());
    RuleSet rules = rows_like(base.rules, {});
    rules.add(row);
    return OpRule{std::move(rules), UnevenInputs::reject};
  });
  deviate(r, {"aten.convolution_backward.default"}, [Sp](const OpCall& call, OpRule base) {
    const bool bias = op_args::find(call, 3, "bias_sizes") != nullptr;
    return OpRule{rows_like(base.rules, {{Sp(0), Partial(), bias ? Partial() : Replicate(), Sp(0), Sp(0), Replicate()}}), UnevenInputs::reject};
  });
  deviate(r,
          {"aten.native_batch_norm.default", "aten._native_batch_norm_legit.default", "aten._native_batch_norm_legit.no_stats",
           "aten._native_batch_norm_legit_no_training.default", "aten._native_batch_norm_legit_functional.default"},
          [Sp](const OpCall& call, OpRule base) {
            std::vector<Placement> row{Sp(1), Sp(0), Sp(0)};
            while (row.size() < base.rules.num_outputs()) row.push_back(Sp(0));  // functional: running_mean, running_var
            row.push_back(Sp(1));
            for (std::size_t i = 1; i < call.tensors.size(); ++i) row.push_back(Sp(0));
            RuleSet rules = rows_like(base.rules, {});
            rules.add(row);
            return OpRule{std::move(rules), UnevenInputs::reject};
          });
  deviate(r, {"aten.native_batch_norm_backward.default"}, [Sp](const OpCall& call, OpRule base) {
    std::vector<Placement> row{Sp(1), Sp(0), Sp(0), Sp(1), Sp(1)};
    for (std::size_t i = 2; i < call.tensors.size(); ++i) row.push_back(Sp(0));
    RuleSet rules = rows_like(base.rules, {});
    rules.add(row);
    return OpRule{std::move(rules), UnevenInputs::reject};
  });
  deviate(r, {"aten.max_pool2d_with_indices_backward.default"}, [](const OpCall&, OpRule base) {
    base.filter = {};
    base.uneven_inputs = UnevenInputs::reject;
    return base;
  });
  // clamp / clamp_min / clamp_max with scalar bounds: `_register_single_dim_pointwise` as a plain
  // pointwise op (no Partial rows; ctshard passes P(max) / P(min), the ops being non-decreasing)
  deviate(r, {"aten.clamp.default", "aten.clamp_min.default", "aten.clamp_max.default"}, [](const OpCall&, OpRule base) {
    base.rules = without_partial_input_rows(base.rules);
    return base;
  });
  deviate(r, {"aten._fused_rms_norm_backward.default"}, [](const OpCall&, OpRule base) {
    base.rules = without_partial_input_rows(base.rules);
    return base;
  });
  deviate(r, {"aten.embedding_dense_backward.default"}, [](const OpCall& call, OpRule base) {
    const std::size_t grad_rank = call.tensors[0].shape.rank, index_rank = call.tensors[1].shape.rank;
    RuleSet rules = rows_like(base.rules, {{Shard(1), Shard(static_cast<int>(grad_rank) - 1), Replicate()}});
    for (std::size_t i = 0; i < index_rank; ++i) rules.add({Partial(), Shard(static_cast<int>(i)), Shard(static_cast<int>(i))});
    rules.add({Partial(), Partial(), Replicate()});
    return OpRule{std::move(rules), UnevenInputs::reject};
  });
  deviate(r, {"aten._fft_c2c.default", "aten._fft_r2c.default", "aten._fft_c2r.default"}, [](const OpCall&, OpRule base) {
    for (ReduceOp op : {ReduceOp::max, ReduceOp::min}) base.rules.add({Partial(op), Partial(op)});
    base.filter = {};
    return base;
  });
  // in-place ops (DTensor `expand_to_full_mesh_op_strategy(inplace_op=True)`): self and the output
  // keep self's current spec
  for (const std::string_view op : {std::string_view("aten.bernoulli_.float")}) {
    const RuleFactory* found = r.find(op);
    if (found == nullptr) continue;
    r.replace(op, [builtin = *found](const OpCall& call) {
      OpRule base = builtin(call);
      const std::size_t nout = base.rules.num_outputs();
      if (call.current.empty() && call.mesh_sizes.empty()) {  // any self: the output and self keep self's spec
        base.filter = [nout, inner = std::move(base.filter)](std::span<const Spec> operands, std::span<const TensorMeta> metas, MeshSizes mesh) {
          return operands[0] == operands[nout] && (!inner || inner(operands, metas, mesh));
        };
        return base;
      }
      const std::span<const Spec> cur = current_specs(call, "expand_to_full_mesh_op_strategy (in-place)");
      const Spec self = cur[0];
      const std::size_t outputs = nout;
      const RuleSet filled = fill_placeholders(with_replicate_row(base.rules), shard_kinds_of(cur));
      for (std::size_t m = 0; m < self.size(); ++m) {
        bool kept = false;
        for (std::size_t row = 0; row < filled.size() && !kept; ++row) kept = filled.cell(row, 0) == self[m] && filled.cell(row, outputs) == self[m];
        if (!kept)
          throw error("ctshard: " + call.op +
                      ": DTensor 2.13 raises: in-place operations that require placement changes are not supported. The input has placement " +
                      to_string(self) + ", but no valid strategy preserves this placement.");
      }
      base.filter = [self, outputs, inner = std::move(base.filter)](std::span<const Spec> operands, std::span<const TensorMeta> metas,
                                                                    MeshSizes mesh) {
        return operands[0] == self && operands[outputs] == self && (!inner || inner(operands, metas, mesh));
      };
      return base;
    });
    r.mark_reads_current_specs(op);
  }
}

}  // namespace detail::dtensor_profile

/// Applies the `dtensor` rules profile to a registry of the built-in rules (see the file comment):
/// every op DTensor 2.13 has a rule for, and ctshard too, gets DTensor's strategies. The ops whose
/// rows follow the current input are marked `OpRegistry::reads_current_specs`. Ops not registered
/// in `r` are skipped.
///
/// R15 (DTensor's placeholder fill): DTensor drops placeholder rows when no input is sharded (a
/// Partial-only input gets no shard row). When `OpRule` carries the choice of fill
/// (`OpRule::placeholder_fill`, another branch), the marked line at the end of this function is
/// the single place that selects DTensor's fill for every rule of the profile.
inline void apply_dtensor_profile(OpRegistry& r) {
  using namespace detail::dtensor_profile;
  follow_views(r);
  follow_reductions(r);
  follow_softmax(r);
  follow_tensor_ops(r);
  follow_losses(r);
  fixed_lists(r);
  single_dim_rules(r);
  // DTensor's placeholder fill for every rule (R15's shard_from_partial is ctshard's): set by
  // make_builtin_registry through RegistryOptions::placeholder_fill, which the profile forces to
  // PlaceholderFill::dtensor.
}

}  // namespace ctshard
