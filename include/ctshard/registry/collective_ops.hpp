#pragma once
/// \file registry/collective_ops.hpp
/// Communication ops already written into a graph (Megatron's `_c10d_functional.*`, vLLM's
/// `vllm.*`, DTensor's own `_dtensor.shard_dim_alltoall`). Such a graph is one rank's program of a
/// program-level process group of g ranks; ctshard's mesh distributes that rank's program and the
/// collective runs, per mesh device, among the g ranks' pieces (`rules/collective_rules.hpp`,
/// docs/semantics.md "Collectives in graphs"). ctshard prices only the redistribution its own
/// plan adds, never the collective itself. DTensor never sees these ops (they live in per-rank
/// graphs below it).

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ctshard/registry/op_args.hpp"
#include "ctshard/registry/op_registry.hpp"
#include "ctshard/rules/collective_rules.hpp"

namespace ctshard {

namespace detail {
/// The reduce op named by a collective's argument ("sum", "avg", "max", "min"; c10d also spells
/// avg "mean"; case-insensitive): nullopt for another op ("product", "premul_sum", "band", ...),
/// which no Partial commutes with. An absent argument reads as `fallback` ("sum" for vLLM).
/// Throws ctshard::error when the argument is present but not a string.
inline std::optional<ReduceOp> collective_reduce_op(const OpCall& call, std::size_t pos, std::string_view fallback) {
  const OpArg* a = op_args::find(call, pos, "reduce_op");
  if (a == nullptr) a = op_args::find(call, pos, "reduceOp");
  if (a != nullptr && a->kind != OpArg::Kind::string) op_args::bad_argument(call, "reduce_op", "must be a string such as 'sum'");
  std::string name = a == nullptr ? std::string(fallback) : a->text;
  for (auto& c : name) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  if (name == "sum") return ReduceOp::sum;
  if (name == "avg" || name == "mean") return ReduceOp::avg;
  if (name == "max") return ReduceOp::max;
  if (name == "min") return ReduceOp::min;
  return std::nullopt;
}

/// Whether the call's first output annotation is known (a rank-0 annotation counts as unknown,
/// as an untyped output does: collectives move whole dims).
inline bool output_annotated(const OpCall& call, std::size_t k = 0) { return k < call.outputs.size() && call.outputs[k].shape.rank > 0; }

/// The group size of a gather / scatter on `dim`: the argument at `pos` / keyword `name` when
/// given, else what the output annotation implies (out / in sizes on `dim`). Throws ctshard::error
/// when neither gives it, when it is below 1, or when the two disagree.
inline std::int64_t collective_group_size(const OpCall& call, std::size_t pos, std::string_view name, const TensorShape& in,
                                          const std::optional<TensorShape>& out, int dim, bool gather) {
  const std::optional<std::int64_t> given = op_args::optional_int(call, pos, name);
  std::optional<std::int64_t> implied;
  if (out && dim >= 0 && static_cast<std::size_t>(dim) < in.rank && static_cast<std::size_t>(dim) < out->rank) {
    const std::int64_t a = in[static_cast<std::size_t>(dim)], b = (*out)[static_cast<std::size_t>(dim)];
    const std::int64_t num = gather ? b : a, den = gather ? a : b;
    if (den > 0 && num % den == 0) implied = num / den;
  }
  if (given && *given < 1) op_args::bad_argument(call, name, "must be at least 1, got " + std::to_string(*given));
  if (given && implied && *given != *implied)
    op_args::bad_argument(call, name,
                          "is " + std::to_string(*given) + " but the output annotation " + to_string(*out) + " of input " + to_string(in) +
                              " means " + std::to_string(*implied));
  if (given) return *given;
  if (implied) return *implied;
  op_args::bad_argument(call, name,
                        out ? "does not match the output annotation " + to_string(*out) + " of input " + to_string(in)
                            : "is missing and no output annotation gives it");
}

/// The output shape of a gather / scatter of `in` on `dim` over g ranks.
inline TensorShape moved_shape(const OpCall& call, const TensorShape& in, int dim, std::int64_t g, bool gather) {
  TensorShape out = in;
  if (dim < 0 || static_cast<std::size_t>(dim) >= in.rank)
    op_args::bad_argument(call, "dim", "is out of range for a " + std::to_string(in.rank) + "-d tensor");
  std::int64_t& n = out.dims[static_cast<std::size_t>(dim)];
  if (gather) {
    n = checked_mul(n, g, "ctshard: " + call.op + ": gathered size");
  } else {
    if (n % g != 0)
      op_args::bad_argument(call, "input",
                            "has " + std::to_string(n) + " on dim " + std::to_string(dim) + ", not divisible by the group size " + std::to_string(g));
    n /= g;
  }
  return out;
}

/// Where a collective reads its arguments (positions in its schema).
struct CollectiveSchema {
  CollectiveKind kind = CollectiveKind::identity;
  std::size_t reduce_pos = 0;          ///< reduce / scatter: the reduce op argument
  std::string_view reduce_fallback{};  ///< the op when the call has none (vLLM: "sum")
  std::size_t group_pos = 0;           ///< gather / scatter: the group size argument
  std::string_view group_name = "group_size";
  std::optional<std::size_t> dim_pos{};  ///< vLLM's gather / scatter: the dim argument (else dim 0)
  bool coalesced = false;                ///< a list of tensors in, one out per tensor
  bool out_buffer = false;               ///< an `out=` tensor keyword (the `_out` variants)
};

/// The law and shapes of one tensor of a non-coalesced or coalesced collective.
inline CollectiveLaw law_for(const OpCall& call, const CollectiveSchema& s, const TensorShape& in, const std::optional<TensorShape>& out,
                             TensorShape& out_shape) {
  CollectiveLaw law{.kind = s.kind};
  if (s.kind == CollectiveKind::reduce || s.kind == CollectiveKind::scatter)
    law.reduce_op = collective_reduce_op(call, s.reduce_pos, s.reduce_fallback);
  out_shape = out ? *out : in;
  if (s.kind == CollectiveKind::gather || s.kind == CollectiveKind::scatter) {
    int dim = 0;
    if (s.dim_pos) {
      const std::int64_t d = op_args::required_int(call, *s.dim_pos, "dim");
      if (d < -static_cast<std::int64_t>(in.rank) || d >= static_cast<std::int64_t>(in.rank))
        op_args::bad_argument(call, "dim", "is out of range for a " + std::to_string(in.rank) + "-d tensor");
      dim = static_cast<int>(d < 0 ? d + static_cast<std::int64_t>(in.rank) : d);
    }
    const bool gather = s.kind == CollectiveKind::gather;
    law.dim = dim;
    law.group_size = collective_group_size(call, s.group_pos, s.group_name, in, out, dim, gather);
    if (!out) out_shape = moved_shape(call, in, dim, law.group_size, gather);
  }
  return law;
}

/// The rule of a collective with schema `s`. Every collective's rows are what
/// `collective_single_dim_strategy` (`collective_coalesced_strategy`) gives; an `out=` buffer is
/// one more input that takes the output's placement (Replicate in the Partial rows: it is
/// overwritten, only its local shape matters). UnevenInputs::keep_current: every rank's pieces
/// have the same shape, so uneven and empty shards are exact.
inline OpRule collective_rule(const OpCall& call, const CollectiveSchema& s) {
  return op_args::in_op_context(call, [&] {
    if (s.coalesced) {
      const OpArg* list = op_args::find(call, 0, "inputs");
      if (list == nullptr || list->kind != OpArg::Kind::tensor_list) op_args::bad_argument(call, "inputs", "must be a list of tensors");
      const std::size_t n = list->ints.size();
      op_args::expect_tensor_inputs(call, n);
      std::vector<TensorShape> ins, outs;
      CollectiveLaw law;
      for (std::size_t i = 0; i < n; ++i) {
        const std::int64_t ref = list->ints[i];
        if (ref < 0 || static_cast<std::size_t>(ref) >= call.tensors.size())
          op_args::bad_argument(call, "inputs", "refers to tensor input " + std::to_string(ref) + " of " + std::to_string(call.tensors.size()));
        const TensorShape& in = call.tensors[static_cast<std::size_t>(ref)].shape;
        std::optional<TensorShape> annotated;
        if (output_annotated(call, i)) annotated = call.outputs[i].shape;
        TensorShape out;
        const CollectiveLaw own = law_for(call, s, in, annotated, out);
        if (i > 0 && own.group_size != law.group_size) op_args::bad_argument(call, "group_size", "differs between the tensors' output annotations");
        law = own;
        ins.push_back(in);
        outs.push_back(out);
      }
      if (n == 0) op_args::bad_argument(call, "inputs", "is empty");
      // every tensor of one call has the same group size and op; law_for checks each against its shapes
      return OpRule{collective_coalesced_strategy(ins, outs, law), UnevenInputs::keep_current};
    }
    op_args::expect_tensor_inputs(call, s.out_buffer ? 2 : 1);
    const TensorShape& in = call.tensors[0].shape;
    std::optional<TensorShape> annotated;
    if (output_annotated(call)) annotated = call.outputs[0].shape;
    TensorShape out;
    const CollectiveLaw law = law_for(call, s, in, annotated, out);
    const RuleSet one = collective_single_dim_strategy(in, out, law);
    if (!s.out_buffer) return OpRule{one, UnevenInputs::keep_current};
    if (call.tensors[1].shape != out)
      op_args::bad_argument(call, "out", "has shape " + to_string(call.tensors[1].shape) + ", the result " + to_string(out));
    RuleSet rules(1, 2);
    rules.set_rank(0, one.rank(0));
    rules.set_rank(1, one.rank(1));
    rules.set_rank(2, one.rank(0));
    for (std::size_t r = 0; r < one.size(); ++r) {
      const Placement o = one.at(r, 0);
      const Placement row[] = {o, one.at(r, 1), o.is_partial() ? Replicate() : o};
      if (const ShardRegroup* g = one.regroup(r)) rules.add(row, *g);
      else rules.add(row);
    }
    return OpRule{rules, UnevenInputs::keep_current};
  });
}

/// `all_to_all_single(input, output_split_sizes, input_split_sizes, group...)`: dim 0 both split
/// and concatenated; the group size is the number of split sizes (unknown when both are None,
/// then no row shards dim 0); equal splits when every given list is all-equal. The output shape is
/// the annotation's, else the input's (equal splits) or the sum of the output split sizes.
inline OpRule all_to_all_rule(const OpCall& call) {
  return op_args::in_op_context(call, [&] {
    op_args::expect_tensor_inputs(call, 1);
    const TensorShape& in = call.tensors[0].shape;
    if (in.rank == 0) op_args::bad_argument(call, "input", "must have a dim 0");
    CollectiveLaw law{.kind = CollectiveKind::all_to_all};
    std::optional<std::int64_t> g;
    std::int64_t out_rows = -1;
    for (auto [pos, name] : {std::pair<std::size_t, std::string_view>{1, "output_split_sizes"}, {2, "input_split_sizes"}}) {
      const OpArg* a = op_args::find(call, pos, name);
      if (a == nullptr) continue;
      const std::vector<std::int64_t> sizes = op_args::int_list(call, pos, name);
      if (sizes.empty()) continue;
      if (g && *g != static_cast<std::int64_t>(sizes.size()))
        op_args::bad_argument(call, name, "lists another number of ranks than the other split sizes");
      g = static_cast<std::int64_t>(sizes.size());
      for (auto v : sizes)
        if (v != sizes.front()) law.equal_splits = false;
      if (pos == 1) {
        out_rows = 0;
        for (auto v : sizes) out_rows = checked_add(out_rows, v, "ctshard: all_to_all_single: output rows");
      }
    }
    law.group_size = g.value_or(0);
    TensorShape out = in;
    if (output_annotated(call)) out = call.outputs[0].shape;
    else if (out_rows >= 0) out.dims[0] = out_rows;
    if (!law.equal_splits || law.group_size == 0) {
      // no shard of dim 0; dim 0 may change size (unequal splits): the other dims' rows only
      if (out.rank != in.rank) op_args::bad_argument(call, "input", "and the output differ in rank");
      RuleSet rules(1, 1);
      rules.set_rank(0, static_cast<int>(out.rank));
      rules.set_rank(1, static_cast<int>(in.rank));
      for (std::size_t d = 1; d < in.rank; ++d) {
        if (in[d] != out[d])
          op_args::bad_argument(call, "input", to_string(in) + " and the output " + to_string(out) + " differ on dim " + std::to_string(d));
        rules.add({ShardingPlaceholder(static_cast<int>(d)), ShardingPlaceholder(static_cast<int>(d))});
      }
      for (ReduceOp r : {ReduceOp::sum, ReduceOp::avg, ReduceOp::max, ReduceOp::min}) rules.add({Partial(r), Partial(r)});
      return OpRule{rules, UnevenInputs::keep_current};
    }
    return OpRule{collective_single_dim_strategy(in, out, law), UnevenInputs::keep_current};
  });
}

/// `_dtensor.shard_dim_alltoall(input, gather_dim, shard_dim, group_name)`: out_r = cat over r' of
/// chunk_r(x_r', shard_dim) on gather_dim; the group size comes from the output annotation (none:
/// no row shards either dim).
inline OpRule shard_dim_alltoall_rule(const OpCall& call) {
  return op_args::in_op_context(call, [&] {
    op_args::expect_tensor_inputs(call, 1);
    const TensorShape& in = call.tensors[0].shape;
    const auto wrap = [&](std::size_t pos, std::string_view name) {
      const std::int64_t d = op_args::required_int(call, pos, name);
      if (d < -static_cast<std::int64_t>(in.rank) || d >= static_cast<std::int64_t>(in.rank))
        op_args::bad_argument(call, name, "is out of range for a " + std::to_string(in.rank) + "-d tensor");
      return static_cast<int>(d < 0 ? d + static_cast<std::int64_t>(in.rank) : d);
    };
    CollectiveLaw law{.kind = CollectiveKind::all_to_all};
    law.concat_dim = wrap(1, "gather_dim");
    law.dim = wrap(2, "shard_dim");
    TensorShape out = in;
    if (output_annotated(call)) {
      out = call.outputs[0].shape;
      const std::int64_t a = in[static_cast<std::size_t>(law.concat_dim)], b = out[static_cast<std::size_t>(law.concat_dim)];
      if (law.dim != law.concat_dim && a > 0 && b % a == 0) law.group_size = b / a;
    }
    return OpRule{collective_single_dim_strategy(in, out, law), UnevenInputs::keep_current};
  });
}
}  // namespace detail

/// Registers the collectives of every namespace real graphs use, each with its law
/// (`rules/collective_rules.hpp`):
/// - `_c10d_functional`: `all_reduce` / `all_reduce_` (input, reduce_op, group_name),
///   `all_reduce_coalesced` / `_coalesced_` (inputs, reduce_op, group_name),
///   `all_gather_into_tensor` (input, group_size, group_name), `_out` (..., *, out), `_coalesced`,
///   `reduce_scatter_tensor` (input, reduce_op, group_size, group_name), `_out`, `_coalesced`,
///   `all_to_all_single` (input, output_split_sizes, input_split_sizes, group_name),
///   `broadcast` / `broadcast_` (input, src, group_name), `wait_tensor` (tensor);
/// - `_c10d_functional_autograd`: all_gather_into_tensor, reduce_scatter_tensor, all_to_all_single
///   (and all_reduce / wait_tensor, as older graphs name them);
/// - the legacy `c10d_functional` (tag, ranks, group_size trailing): all_reduce, all_reduce_coalesced (+ `_`),
///   all_gather_into_tensor (+ _coalesced), reduce_scatter_tensor (+ _coalesced), all_to_all_single,
///   broadcast, wait_tensor;
/// - vLLM: `vllm.all_reduce` (tensor, group_name: a sum), `vllm.all_gather` and
///   `vllm.reduce_scatter` (tensor, dim, world_size, group_name; a sum);
/// - DTensor's `_dtensor.shard_dim_alltoall` (input, gather_dim, shard_dim, group_name).
/// The output shape is the call's output annotation when known (checked against the law), else
/// computed from the group size. Throws ctshard::error naming the op and argument for a wrong
/// tensor count, a missing or contradictory group size, or shapes the law cannot produce.
inline void register_collective_ops(OpRegistry& registry) {
  using K = CollectiveKind;
  const auto add = [&registry](std::string name, detail::CollectiveSchema s) {
    registry.add({std::move(name)}, [s](const OpCall& call) { return detail::collective_rule(call, s); });
  };
  const detail::CollectiveSchema identity{};
  const detail::CollectiveSchema reduce{.kind = K::reduce, .reduce_pos = 1};
  // _c10d_functional (torch 2.x) and its autograd twin
  for (std::string ns : {"_c10d_functional.", "_c10d_functional_autograd."}) {
    add(ns + "all_reduce.default", reduce);
    add(ns + "wait_tensor.default", identity);
    add(ns + "all_gather_into_tensor.default", {.kind = K::gather, .group_pos = 1});
    add(ns + "reduce_scatter_tensor.default", {.kind = K::scatter, .reduce_pos = 1, .group_pos = 2});
    registry.add({ns + "all_to_all_single.default"}, [](const OpCall& call) { return detail::all_to_all_rule(call); });
  }
  const std::string ns = "_c10d_functional.";
  add(ns + "all_reduce_.default", reduce);
  add(ns + "all_reduce_coalesced.default", {.kind = K::reduce, .reduce_pos = 1, .coalesced = true});
  add(ns + "all_reduce_coalesced_.default", {.kind = K::reduce, .reduce_pos = 1, .coalesced = true});
  add(ns + "all_gather_into_tensor_out.default", {.kind = K::gather, .group_pos = 1, .out_buffer = true});
  add(ns + "all_gather_into_tensor_coalesced.default", {.kind = K::gather, .group_pos = 1, .coalesced = true});
  add(ns + "reduce_scatter_tensor_out.default", {.kind = K::scatter, .reduce_pos = 1, .group_pos = 2, .out_buffer = true});
  add(ns + "reduce_scatter_tensor_coalesced.default", {.kind = K::scatter, .reduce_pos = 1, .group_pos = 2, .coalesced = true});
  add(ns + "broadcast.default", identity);
  add(ns + "broadcast_.default", identity);
  // legacy c10d_functional: (..., tag, ranks, group_size)
  const std::string legacy = "c10d_functional.";
  add(legacy + "all_reduce.default", reduce);
  add(legacy + "all_reduce_coalesced.default", {.kind = K::reduce, .reduce_pos = 1, .coalesced = true});
  add(legacy + "all_reduce_coalesced_.default", {.kind = K::reduce, .reduce_pos = 1, .coalesced = true});
  add(legacy + "wait_tensor.default", identity);
  add(legacy + "broadcast.default", identity);
  add(legacy + "all_gather_into_tensor.default", {.kind = K::gather, .group_pos = 3});
  add(legacy + "all_gather_into_tensor_coalesced.default", {.kind = K::gather, .group_pos = 3, .coalesced = true});
  add(legacy + "reduce_scatter_tensor.default", {.kind = K::scatter, .reduce_pos = 1, .group_pos = 4});
  add(legacy + "reduce_scatter_tensor_coalesced.default", {.kind = K::scatter, .reduce_pos = 1, .group_pos = 4, .coalesced = true});
  registry.add({legacy + "all_to_all_single.default"}, [](const OpCall& call) { return detail::all_to_all_rule(call); });
  // vLLM: sums over the tensor-parallel group
  add("vllm.all_reduce.default", {.kind = K::reduce, .reduce_pos = 99, .reduce_fallback = "sum"});
  add("vllm.all_gather.default", {.kind = K::gather, .group_pos = 2, .group_name = "world_size", .dim_pos = 1});
  add("vllm.reduce_scatter.default",
      {.kind = K::scatter, .reduce_pos = 99, .reduce_fallback = "sum", .group_pos = 2, .group_name = "world_size", .dim_pos = 1});
  registry.add({"_dtensor.shard_dim_alltoall.default"}, [](const OpCall& call) { return detail::shard_dim_alltoall_rule(call); });
}

}  // namespace ctshard
