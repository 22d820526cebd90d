#pragma once
/// \file rules/regroup_on_mesh.hpp
/// The local-size law of views on meshes of several dims (docs/semantics.md): the shard a later
/// mesh dim takes of a flatten / split group is re-expressed on the local sizes the earlier mesh
/// dims leave (`regroup_mesh_dim`, used mesh dim by mesh dim by `view_output_spec`), and the
/// placeholder fill given the mesh sizes lists a regrouped row once per placement those local sizes
/// can call for (`regroup_shard_alternatives`, `fill_placeholders(rules, kinds, mesh_sizes)`).
/// DTensor: `_ViewShardingPropagator.rewrite_output_placements` with `local_tensor_shapes`. Kept out
/// of the compile-time core (`ctshard.hpp`), which fills tables without mesh sizes.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "ctshard/core/checked.hpp"
#include "ctshard/core/tensor_shape.hpp"
#include "ctshard/rules/placeholder_fill.hpp"
#include "ctshard/rules/rule_set.hpp"
#include "ctshard/rules/shard_regroup.hpp"

namespace ctshard {

/// The local sizes of a regroup's two runs on one class of ranks: every rank whose mesh
/// coordinates so far left it pieces of exactly these sizes (`input.numel() == output.numel()`).
struct RegroupLocal {
  TensorShape input;   ///< local sizes of the input run
  TensorShape output;  ///< local sizes of the output run
  friend constexpr bool operator==(const RegroupLocal&, const RegroupLocal&) = default;
};

/// One mesh dim of `n` ranks sharding input-run dim `from.dim` (split factor `from.split_factor`,
/// 1 = Shard) of a regroup whose ranks hold the local sizes `ranks` (one entry per distinct class,
/// the global sizes before any mesh dim): the output-run shard that describes every rank's piece,
/// and `ranks` replaced by the classes after the split (each class cut into its torch.chunk pieces
/// on both runs; empty pieces dropped, since a rank holding nothing is described by any later
/// placement). A class whose blocks hold Y >= 2 rows of the split dim needs the `regroup_shard` of
/// its local sizes, exact on n shards (`regroup_is_exact`); a class with Y = 1 (one row per block:
/// the mesh dim's first rank keeps the whole piece, the others nothing) is described by any
/// placement that gives the first rank all of output dim i: `StridedShard(i, k)` with k >= g_i
/// (torch.chunk cuts g_i into blocks of one row, each kept by the first rank), or `Shard(i)` where
/// g_i = 1; it takes the placement the other classes need, or, when every class has Y = 1,
/// `StridedShard(0, largest g_0)` (`Shard(0)` when that is 1) on the outermost output dim.
/// nullopt, `ranks` unchanged, when `ranks` is empty, a class has no re-expression, two classes
/// need different ones, or one is not exact. This is the multi-mesh-dim law of views: mesh dims
/// apply in order to the local tensors the earlier ones leave (DTensor
/// `rewrite_output_placements` with `local_tensor_shapes`), so `[2, 2, 3]` `S(0)S(1)` viewed as
/// `[4, 3]` is `S(0)S(0)`: after mesh dim 0 each rank holds `[1, 2, 3]`, whose dim 1 is the
/// outermost non-trivial dim of its flattened `[2, 3]`.
[[nodiscard]] constexpr std::optional<RunShard> regroup_mesh_dim(std::vector<RegroupLocal>& ranks, RunShard from, std::int64_t n) {
  const std::size_t j = from.dim;
  const std::int64_t s = from.split_factor;
  if (ranks.empty() || n < 1 || s < 1) return std::nullopt;
  std::optional<RunShard> to;
  bool single_rows = false;  // some class has Y = 1
  for (const RegroupLocal& r : ranks) {
    if (j >= r.input.rank || r.input[j] % s != 0) return std::nullopt;
    if (r.input[j] / s == 1) {
      single_rows = true;
      continue;
    }
    const std::optional<RunShard> t = regroup_shard(r.input, from, r.output);
    if (!t || (to && *t != *to) || !regroup_is_exact(r.input, from, r.output, *t, n)) return std::nullopt;
    to = t;
  }
  if (!to && ranks.front().output.rank > 0) {
    // every class has Y = 1: the outermost output dim, blocks of one row on every class
    std::int64_t k = 1;
    for (const RegroupLocal& r : ranks) k = r.output[0] > k ? r.output[0] : k;
    to = RunShard{0, k};
  }
  if (!to) return std::nullopt;
  // a class with Y = 1 keeps its piece on the first rank; so does the output placement when its
  // first split leaves blocks of at most one row (torch.chunk of g_i into split_factor pieces)
  if (single_rows)
    for (const RegroupLocal& r : ranks)
      if (r.input[j] / s == 1 && (to->dim >= r.output.rank || r.output[to->dim] > to->split_factor)) return std::nullopt;
  std::vector<RegroupLocal> next;
  for (const RegroupLocal& r : ranks) {
    const std::int64_t y = r.input[j] / s;
    if (y == 1) {
      bool seen = false;
      for (const RegroupLocal& q : next) seen = seen || q == r;
      if (!seen) next.push_back(r);
      continue;
    }
    const std::int64_t z = r.output[to->dim] / to->split_factor;
    const std::int64_t full = chunk_piece(y, n, 0);
    // the distinct pieces: the full one, and the remainder piece when there is one
    for (const std::int64_t c : {std::int64_t{0}, y % full != 0 ? y / full : std::int64_t{0}}) {
      RegroupLocal piece = r;
      piece.input[j] = s * chunk_piece(y, n, c);
      piece.output[to->dim] = to->split_factor * chunk_piece(z, n, c);
      bool seen = false;
      for (const RegroupLocal& q : next) seen = seen || q == piece;
      if (!seen && piece.input[j] > 0) next.push_back(piece);
    }
  }
  ranks = std::move(next);
  return to;
}

/// Local-size states `regroup_shard_alternatives` follows per mesh dim at most; past it the
/// remaining states are not explored (fewer rows, never a wrong one).
inline constexpr std::size_t max_regroup_states = 64;

/// Every output-run shard that a mesh dim's shard `from` of the input run can become on a mesh of
/// `mesh_sizes` (mesh dim 0 first), when the earlier mesh dims shard the same run with the split
/// factors `split_factors` (1 = Shard) or leave it alone: first `regroup_shard` on the global sizes
/// (what one mesh dim alone gives, exact or not), then, mesh dim by mesh dim, the re-expression
/// `regroup_mesh_dim` finds on each set of local sizes earlier mesh dims can leave, when it is
/// exact there. Distinct, in the order found. The placeholder fill lists a view row per entry; the
/// view's full-mesh check (`view_output_spec`) keeps, for each input spec, the one its mesh dims'
/// local sizes call for. At most max_regroup_states states per mesh dim are followed.
[[nodiscard]] constexpr std::vector<RunShard> regroup_shard_alternatives(const TensorShape& input, RunShard from, const TensorShape& output,
                                                                         std::span<const std::int64_t> mesh_sizes,
                                                                         std::span<const std::int64_t> split_factors) {
  std::vector<RunShard> found;
  const auto record = [&found](RunShard t) {
    for (const RunShard& f : found)
      if (f == t) return;
    found.push_back(t);
  };
  if (const std::optional<RunShard> t = regroup_shard(input, from, output)) record(*t);
  if (mesh_sizes.size() < 2) return found;
  std::vector<std::vector<RegroupLocal>> states{{RegroupLocal{input, output}}};
  for (std::size_t m = 0; m < mesh_sizes.size(); ++m) {
    for (const auto& s : states) {
      std::vector<RegroupLocal> ranks = s;
      if (const std::optional<RunShard> t = regroup_mesh_dim(ranks, from, mesh_sizes[m])) record(*t);
    }
    if (m + 1 == mesh_sizes.size()) break;
    const std::size_t reached = states.size();
    for (std::size_t q = 0; q < reached && states.size() < max_regroup_states; ++q)
      for (std::size_t k = 0; k < input.rank; ++k)
        for (const std::int64_t sf : split_factors) {
          std::vector<RegroupLocal> ranks = states[q];
          if (!regroup_mesh_dim(ranks, RunShard{k, sf}, mesh_sizes[m])) continue;
          bool seen = false;
          for (const auto& s : states) seen = seen || s == ranks;
          if (!seen && states.size() < max_regroup_states) states.push_back(std::move(ranks));
        }
  }
  return found;
}

namespace detail {
/// The split factors of `kinds` in fill order, 1 standing for plain Shard.
constexpr std::vector<std::int64_t> kind_split_factors(const ShardKinds& kinds) {
  std::vector<std::int64_t> factors;
  if (kinds.shard) factors.push_back(1);
  for (std::size_t i = 0; i < kinds.num_strided; ++i) factors.push_back(kinds.split_factors[i]);
  return factors;
}
}  // namespace detail

/// `fill_placeholders(rules, kinds)` on a mesh of `mesh_sizes` (one entry per mesh dim, mesh dim 0
/// first): with 2 or more mesh dims a regrouped row is emitted once per placement its shard can
/// take on some mesh dim after earlier mesh dims shard the same group with these kinds
/// (`regroup_shard_alternatives`: `[2, 2, 3]` viewed as `[4, 3]` gets `[_S(0, 2), S(1)]` and, for
/// `S(0)S(1)` on 2x2, `[S(0), S(1)]`), right after one another; the op's full-mesh check
/// (`view_output_spec`) picks the one each input spec's local sizes call for. With fewer mesh
/// dims, or when those placements would make more than `max_rows` rows (a compact row indexes at
/// most 255 rules), exactly `fill_placeholders(rules, kinds)`; a collective's row
/// (`ShardRegroup::program_ranks`) always takes the global-size placement.
[[nodiscard]] constexpr RuleSet fill_placeholders(const RuleSet& rules, const ShardKinds& kinds, std::span<const std::int64_t> mesh_sizes,
                                                  std::size_t max_rows = 255) {
  if (mesh_sizes.size() < 2) return fill_placeholders(rules, kinds);
  const std::vector<std::int64_t> factors = detail::kind_split_factors(kinds);
  RuleSet out = detail::fill_placeholders_by(rules, kinds, [&](const ShardRegroup& g, RunShard from, auto&& emit) {
    if (g.program_ranks) {
      if (const std::optional<RunShard> to = regroup_shard(g.input, from, g.output)) emit(*to);
      return;
    }
    for (const RunShard& to : regroup_shard_alternatives(g.input, from, g.output, mesh_sizes, factors)) emit(to);
  });
  if (out.size() > max_rows) return fill_placeholders(rules, kinds);
  return out;
}

}  // namespace ctshard
