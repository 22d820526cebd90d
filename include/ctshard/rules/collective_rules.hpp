#pragma once
/// \file rules/collective_rules.hpp
/// Single-dim strategies of collectives written into a graph (Megatron's and vLLM's per-rank
/// graphs: `_c10d_functional.all_reduce`, `all_gather_into_tensor`, `reduce_scatter_tensor`,
/// `all_to_all_single`, `broadcast`, `wait_tensor`, `vllm.all_reduce`, ...). DTensor never sees
/// these ops; the semantics is ctshard's own (docs/semantics.md, "Collectives in graphs"):
///
/// A graph with collectives is the program of one rank r of a program-level process group G of
/// g ranks. ctshard's mesh distributes that rank's program, and the tensor it places is the rank's
/// tensor x_r. G is orthogonal to the mesh: the collective runs among the devices that hold the
/// same piece (the same mesh coordinate) on the g program ranks. So on a mesh device the
/// collective combines the g ranks' *local pieces* of x_0 .. x_{g-1}, and a row [out, in] is valid
/// when that combination of pieces is the piece `out` describes of the collective's result:
/// - all_reduce(op): out = op_r x_r elementwise: every Shard / StridedShard and Replicate passes;
///   Partial(p) passes when p commutes with op (sum / avg with sum / avg, max with max, min with min);
/// - all_gather(dim): out = cat_r x_r on dim: S(e) for e != dim, Replicate and every Partial pass;
///   S(dim) becomes _S(dim, g) (a device holds chunk m of every x_r), _S(dim, sf) becomes
///   _S(dim, g sf);
/// - reduce_scatter(op, dim): out_r = chunk_r(op_r' x_r') on dim: the mirror image, _S(dim, g) ->
///   S(dim), _S(dim, g sf) -> _S(dim, sf); S(dim) describes no piece of the output (no row);
///   Partials as for all_reduce(op);
/// - all_to_all(split dim s, concat dim c): out_r = cat_r' chunk_r(x_r', s) on c: the gather law
///   on c and the scatter law on s; with s == c (all_to_all_single) and equal splits
///   _S(s, g) -> _S(s, g); unequal splits keep no shard of s or c;
/// - identity (broadcast: out = x_src; wait_tensor): every placement passes.
/// A group of one (g = 1) is the identity.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "ctshard/core/checked.hpp"
#include "ctshard/core/tensor_shape.hpp"
#include "ctshard/error.hpp"
#include "ctshard/rules/rule_set.hpp"
#include "ctshard/rules/shard_regroup.hpp"

namespace ctshard {

/// What a collective does to the program ranks' tensors (see the file comment).
enum class CollectiveKind : std::uint8_t { identity, reduce, gather, scatter, all_to_all };

/// One collective's law on one tensor.
struct CollectiveLaw {
  CollectiveKind kind = CollectiveKind::identity;
  /// reduce / scatter: the reduce op when it is sum, avg, max or min; nullopt for another op
  /// (product, premul_sum, band, ...), which no Partial commutes with.
  std::optional<ReduceOp> reduce_op{};
  /// gather / scatter / all_to_all: the group size g (>= 1); 0 when unknown (all_to_all only:
  /// then no row shards the split or concat dim).
  std::int64_t group_size = 0;
  int dim = 0;               ///< gather / scatter dim; all_to_all: the split dim (each rank's input is chunked on it)
  int concat_dim = 0;        ///< all_to_all: the dim the received pieces are concatenated on
  bool equal_splits = true;  ///< all_to_all: every rank sends equal chunks (None or all-equal split sizes)
};

/// Whether a Partial(`p`) input gives a Partial(`p`) output under `law`: always for identity,
/// gather and all_to_all (selection and concatenation are elementwise and linear); for reduce and
/// scatter when `p` commutes with the reduce op: sum / avg with sum / avg (linear), max with max,
/// min with min. `all_reduce(x, "max")` of a P(sum) value is not the max of anything: parts 2 and
/// 3 of 5 on one rank, 4 and 1 of 5 on the other, give max parts 4 and 3 (sum 7), not 5.
[[nodiscard]] constexpr bool collective_passes_partial(const CollectiveLaw& law, ReduceOp p) noexcept {
  if (law.kind != CollectiveKind::reduce && law.kind != CollectiveKind::scatter) return true;
  if (!law.reduce_op) return false;
  const auto linear = [](ReduceOp r) { return r == ReduceOp::sum || r == ReduceOp::avg; };
  return linear(p) ? linear(*law.reduce_op) : p == *law.reduce_op;
}

namespace detail {
[[noreturn]] inline void collective_shape_error(const std::string& what) { throw error("ctshard::collective: " + what); }

/// The row that gathers dim `dim` of `in` over g ranks: `[S?(dim), S?(dim)]` regrouped from the
/// ranks' stacked input `[g, in[dim]]` (a virtual leading dim) to the output's `[g in[dim]]`, so
/// that a Shard input becomes `_S(dim, g)` and `_S(dim, sf)` becomes `_S(dim, g sf)`
/// (`regroup_shard`; no row when sf does not divide the dim).
constexpr void add_gather_row(RuleSet& rules, std::size_t in_col, std::size_t out_col, std::size_t width, const TensorShape& in, int dim,
                              std::int64_t g) {
  std::vector<Placement> row(width, Replicate());
  row[out_col] = ShardingPlaceholder(dim);
  row[in_col] = ShardingPlaceholder(dim);
  const std::int64_t n = in[static_cast<std::size_t>(dim)];
  rules.add(row, ShardRegroup{TensorShape{g, n}, TensorShape{checked_mul(g, n, "ctshard::collective: gathered size")},
                              static_cast<std::int8_t>(dim - 1), static_cast<std::int8_t>(dim), static_cast<std::uint8_t>(in_col), true});
}

/// The row that scatters dim `dim` of `in` over g ranks. On dim 0, `[S?(0), S?(0)]` regrouped from
/// the input's `[g L]` to the ranks' stacked outputs `[g, L]` (a virtual leading dim at -1): a
/// `_S(0, g sf)` input becomes `_S(0, sf)` (Shard for sf = 1), and a shard that lands on the
/// virtual dim (a Shard input) is no placement, so it fills no row (`fill_placeholders`). On a
/// later dim the virtual dim cannot precede it, so the row is the concrete `[S(dim), _S(dim, g)]`.
constexpr void add_scatter_row(RuleSet& rules, std::size_t in_col, std::size_t out_col, std::size_t width, const TensorShape& in, int dim,
                               std::int64_t g) {
  std::vector<Placement> row(width, Replicate());
  if (dim == 0) {
    row[out_col] = ShardingPlaceholder(0);
    row[in_col] = ShardingPlaceholder(0);
    const std::int64_t n = in[0];
    rules.add(row, ShardRegroup{TensorShape{n}, TensorShape{g, n / g}, 0, -1, static_cast<std::uint8_t>(in_col), true});
    return;
  }
  if (g > 65535) return;  // no StridedShard holds such a split factor
  row[out_col] = Shard(dim);
  row[in_col] = StridedShard(dim, static_cast<int>(g));
  rules.add(row);
}

/// Rows of one tensor pair (output column `out_col`, input column `in_col`, the other columns
/// Replicate) of `law`, with `in` / `out` checked against the law. Throws ctshard::error naming
/// the shapes when they do not fit it.
constexpr void add_collective_rows(RuleSet& rules, std::size_t out_col, std::size_t in_col, const TensorShape& in, const TensorShape& out,
                                   CollectiveLaw law) {
  const std::size_t width = rules.width();
  const std::int64_t g = law.group_size;
  const bool moves_dims = law.kind == CollectiveKind::gather || law.kind == CollectiveKind::scatter || law.kind == CollectiveKind::all_to_all;
  if (moves_dims && g < 0) collective_shape_error("group size " + std::to_string(g) + " is negative");
  if (law.kind == CollectiveKind::gather || law.kind == CollectiveKind::scatter) {
    if (g < 1) collective_shape_error("group size " + std::to_string(g) + " must be at least 1");
    if (law.dim < 0 || static_cast<std::size_t>(law.dim) >= in.rank)
      collective_shape_error("dim " + std::to_string(law.dim) + " out of range for a " + std::to_string(in.rank) + "-d tensor");
  }
  if (law.kind == CollectiveKind::all_to_all)
    for (int d : {law.dim, law.concat_dim})
      if (d < 0 || static_cast<std::size_t>(d) >= in.rank)
        collective_shape_error("all_to_all dim " + std::to_string(d) + " out of range for a " + std::to_string(in.rank) + "-d tensor");
  // A group of one is the identity on the tensor.
  if (moves_dims && g == 1) law = CollectiveLaw{};
  if (in.rank != out.rank) collective_shape_error("input " + to_string(in) + " and output " + to_string(out) + " differ in rank");
  std::uint64_t touched = 0;  // dims whose size the collective changes or whose elements it moves
  const auto touch = [&](int d) { touched |= std::uint64_t{1} << d; };
  const auto size = [](const TensorShape& s, int d) { return s[static_cast<std::size_t>(d)]; };
  switch (law.kind) {
    case CollectiveKind::identity:
    case CollectiveKind::reduce: break;
    case CollectiveKind::gather:
      touch(law.dim);
      if (size(out, law.dim) != checked_mul(g, size(in, law.dim), "ctshard::collective: gathered size"))
        collective_shape_error("all_gather over " + std::to_string(g) + " ranks of " + to_string(in) + " on dim " + std::to_string(law.dim) +
                               " cannot give " + to_string(out));
      break;
    case CollectiveKind::scatter:
      touch(law.dim);
      if (size(in, law.dim) != checked_mul(g, size(out, law.dim), "ctshard::collective: scattered size"))
        collective_shape_error("reduce_scatter over " + std::to_string(g) + " ranks of " + to_string(in) + " on dim " + std::to_string(law.dim) +
                               " cannot give " + to_string(out));
      break;
    case CollectiveKind::all_to_all:
      touch(law.dim);
      touch(law.concat_dim);
      if (g > 0 && law.equal_splits && law.dim != law.concat_dim &&
          (size(in, law.dim) != checked_mul(g, size(out, law.dim), "ctshard::collective: size") ||
           size(out, law.concat_dim) != checked_mul(g, size(in, law.concat_dim), "ctshard::collective: size")))
        collective_shape_error("all_to_all over " + std::to_string(g) + " ranks of " + to_string(in) + " (split dim " + std::to_string(law.dim) +
                               ", concat dim " + std::to_string(law.concat_dim) + ") cannot give " + to_string(out));
      break;
  }
  for (std::size_t d = 0; d < in.rank; ++d)
    if ((touched >> d & 1u) == 0 && in[d] != out[d])
      collective_shape_error("input " + to_string(in) + " and output " + to_string(out) + " differ on dim " + std::to_string(d));
  std::vector<Placement> row(width, Replicate());
  for (std::size_t d = 0; d < in.rank; ++d) {
    if ((touched >> d & 1u) != 0) continue;
    row[out_col] = ShardingPlaceholder(static_cast<int>(d));
    row[in_col] = ShardingPlaceholder(static_cast<int>(d));
    rules.add(row);
  }
  if (law.kind == CollectiveKind::gather) add_gather_row(rules, in_col, out_col, width, in, law.dim, g);
  if (law.kind == CollectiveKind::scatter) add_scatter_row(rules, in_col, out_col, width, in, law.dim, g);
  if (law.kind == CollectiveKind::all_to_all && g >= 2 && law.equal_splits) {
    if (law.dim == law.concat_dim) {
      if (g <= 65535) {
        row[out_col] = StridedShard(law.dim, static_cast<int>(g));
        row[in_col] = StridedShard(law.dim, static_cast<int>(g));
        rules.add(row);
      }
    } else {
      add_gather_row(rules, in_col, out_col, width, in, law.concat_dim, g);
      add_scatter_row(rules, in_col, out_col, width, in, law.dim, g);
    }
  }
  for (ReduceOp r : {ReduceOp::sum, ReduceOp::avg, ReduceOp::max, ReduceOp::min}) {
    if (!collective_passes_partial(law, r)) continue;
    row[out_col] = Partial(r);
    row[in_col] = Partial(r);
    rules.add(row);
  }
}
}  // namespace detail

/// The single-dim strategy `[out, in]` of one collective on one tensor (`in`: the program rank's
/// input shape, `out`: its output shape) under `law` (file comment; docs/semantics.md):
/// `[S?(d), S?(d)]` for every dim the collective leaves alone, the gather / scatter / all-to-all
/// rows of the dims it moves, then `[P(r), P(r)]` for r = sum, avg, max, min where
/// `collective_passes_partial`. Throws ctshard::error ("ctshard::collective: ...") when the shapes
/// do not fit the law (an all-gather output that is not g times the input on its dim, ...) or a
/// dim or group size is out of range.
[[nodiscard]] constexpr RuleSet collective_single_dim_strategy(const TensorShape& in, const TensorShape& out, const CollectiveLaw& law) {
  RuleSet rules(1, 1);
  rules.set_rank(0, static_cast<int>(out.rank));
  rules.set_rank(1, static_cast<int>(in.rank));
  detail::add_collective_rows(rules, 0, 1, in, out, law);
  return rules;
}

/// Most tensors a coalesced collective's rule pairs up in one row set: regrouped rows name their
/// source column in a byte (ShardRegroup::source), so columns stay below 256.
inline constexpr std::size_t max_coalesced_tensors = 127;

/// The single-dim strategy of a coalesced collective on n tensors (`ins[i]` -> `outs[i]`, the same
/// law on each): outputs `out_0 .. out_{n-1}`, then inputs `in_0 .. in_{n-1}`. Rows: every row of
/// each tensor's own strategy with the other tensors Replicate (R -> R is valid for every law),
/// then the rows that shard every tensor on the same untouched dim d together (`[S?(d), S?(d)]`
/// per tensor), then `[P(r), P(r)]` on every tensor for each Partial r the law passes. Tensors
/// may not mix their own shard rows within one row otherwise (a sound subset of the per-tensor
/// product). Throws ctshard::error when the counts differ, n is 0 or above
/// `max_coalesced_tensors`, or a tensor's shapes do not fit the law.
[[nodiscard]] constexpr RuleSet collective_coalesced_strategy(std::span<const TensorShape> ins, std::span<const TensorShape> outs,
                                                              const CollectiveLaw& law) {
  const std::size_t n = ins.size();
  if (n != outs.size()) detail::collective_shape_error(std::to_string(n) + " inputs for " + std::to_string(outs.size()) + " outputs");
  if (n == 0 || n > max_coalesced_tensors)
    detail::collective_shape_error("a coalesced collective of " + std::to_string(n) + " tensors (1 to " + std::to_string(max_coalesced_tensors) +
                                   " are supported)");
  if (n == 1) return collective_single_dim_strategy(ins[0], outs[0], law);
  RuleSet rules(n, n);
  for (std::size_t i = 0; i < n; ++i) {
    rules.set_rank(i, static_cast<int>(outs[i].rank));
    rules.set_rank(n + i, static_cast<int>(ins[i].rank));
  }
  for (std::size_t i = 0; i < n; ++i) detail::add_collective_rows(rules, i, n + i, ins[i], outs[i], law);
  // every tensor sharded on the same dim it keeps, together
  std::size_t max_rank = 0;
  for (std::size_t i = 0; i < n; ++i) max_rank = ins[i].rank > max_rank ? ins[i].rank : max_rank;
  std::vector<Placement> row(2 * n, Replicate());
  for (std::size_t d = 0; d < max_rank; ++d) {
    bool all = true;
    for (std::size_t i = 0; i < n && all; ++i) {
      const RuleSet own = collective_single_dim_strategy(ins[i], outs[i], law);
      bool has = false;
      for (std::size_t r = 0; r < own.size() && !has; ++r)
        has = own.regroup(r) == nullptr && own.at(r, 0) == ShardingPlaceholder(static_cast<int>(d)) &&
              own.at(r, 1) == ShardingPlaceholder(static_cast<int>(d));
      all = has;
    }
    if (!all) continue;
    for (std::size_t i = 0; i < n; ++i) row[i] = row[n + i] = ShardingPlaceholder(static_cast<int>(d));
    rules.add(row);
  }
  for (ReduceOp r : {ReduceOp::sum, ReduceOp::avg, ReduceOp::max, ReduceOp::min}) {
    if (!collective_passes_partial(law, r)) continue;
    for (std::size_t i = 0; i < 2 * n; ++i) row[i] = Partial(r);
    rules.add(row);
  }
  return rules;
}

}  // namespace ctshard
