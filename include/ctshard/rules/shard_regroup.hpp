#pragma once
/// \file rules/shard_regroup.hpp
/// Re-expressing a shard across a regrouping of dims: a run of input dims read as a run of output
/// dims holding the same elements in the same row-major order (a view's flatten, split, or split of
/// a flatten). Where do the elements one rank holds land, and is the local view exact on n ranks?
/// Used by the placeholder fill of view rows (`fill_placeholders`) and by the views' full-mesh
/// check (`view_output_spec`). With several mesh dims on one group, each is re-expressed on the
/// local sizes the earlier ones leave (`regroup_mesh_dim`: the local-size law, docs/semantics.md).
/// DTensor follows the same picture in `_ViewShardingPropagator` (`_rewrite_plain_shard`,
/// `_rewrite_strided_shard`, `_expected_split_factor`, `local_tensor_shapes`).

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "ctshard/core/checked.hpp"
#include "ctshard/core/tensor_shape.hpp"

namespace ctshard {

/// A regrouping of dims attached to a rule row (RuleSet::add with a regroup): the row's placeholder
/// in operand column `source` lies on input dims `[input_first, input_first + input.rank)` of sizes
/// `input`; the row's other placeholders lie on output dims `[output_first, output_first +
/// output.rank)` of sizes `output`, which hold the same elements in the same row-major order
/// (`input.numel() == output.numel()`). Size-1 dims may appear on either side.
struct ShardRegroup {
  TensorShape input;             ///< sizes of the input run, outermost first
  TensorShape output;            ///< sizes of the output run, outermost first
  std::int8_t input_first = 0;   ///< tensor dim of the input run's first dim
  std::int8_t output_first = 0;  ///< tensor dim of the output run's first dim
  std::uint8_t source = 0;       ///< operand column (outputs first) of the input-side placeholder
  friend constexpr bool operator==(const ShardRegroup&, const ShardRegroup&) = default;
};

/// A shard of one dim of a run: `dim` counts from the run's first dim; `split_factor` 1 means a
/// plain `Shard`, more a `StridedShard` with that split factor.
struct RunShard {
  std::size_t dim = 0;
  std::int64_t split_factor = 1;
  friend constexpr bool operator==(const RunShard&, const RunShard&) = default;
};

/// Where a shard of input-run dim `shard.dim` (split factor `shard.split_factor`, 1 = Shard) lands
/// on the output run. The input dim j of size h_j, read as [s, h_j / s] with the second factor
/// split (DTensor `_StridedShard`), makes the run `[F, Y, T]` with the middle split: F = (product of
/// the run's sizes before j) · s blocks, Y = h_j / s, T = product of the sizes after j. The output
/// run holds the same elements as `[P_i · m, g_i / m, R_i]` for the unique output dim i of size g_i
/// > 1 with F = P_i · m, m dividing g_i and m < g_i (P_i, R_i: products of the output sizes before
/// / after i); the shard becomes `StridedShard(i, m)` there, or `Shard(i)` for m = 1. Examples:
/// [16] as _S(0, 2) -> [2, 8]: F = 2 = P_1, so Shard(1); _S(0, 4) -> [2, 8]: F = 4 = 2 · 2, so
/// _S(1, 2); [a, b] with Shard(1) -> [a·b]: F = a, so _S(0, a).
/// nullopt when no such i exists, when s does not divide h_j, or when Y < 2 (a one-element dim
/// cannot be split without empty shards). Whether the local view is exact also depends on the
/// number of shards: `regroup_is_exact`.
[[nodiscard]] constexpr std::optional<RunShard> regroup_shard(const TensorShape& input, RunShard shard, const TensorShape& output) noexcept {
  const std::size_t j = shard.dim;
  const std::int64_t s = shard.split_factor;
  if (j >= input.rank || s < 1 || input[j] % s != 0 || input[j] / s < 2) return std::nullopt;
  std::int64_t blocks = s;
  for (std::size_t k = 0; k < j; ++k) blocks = saturating_mul(blocks, input[k]);
  if (blocks == INT64_MAX) return std::nullopt;  // more blocks than any shape holds
  std::int64_t before = 1;
  for (std::size_t i = 0; i < output.rank && before <= blocks; ++i) {
    const std::int64_t g = output[i];
    if (g == 1) continue;
    if (blocks % before == 0) {
      const std::int64_t m = blocks / before;
      if (m < g && g % m == 0) return RunShard{i, m};
    }
    before = saturating_mul(before, g);
  }
  return std::nullopt;
}

/// Size of piece `c` (0-based, c < n) when a dim of `size` elements is cut into `n` pieces the
/// torch.chunk way (DTensor `Shard._split_tensor`): pieces of ceil(size / n) elements, the last
/// non-empty one smaller, the rest empty (5 over 4: 2, 2, 1, 0).
[[nodiscard]] constexpr std::int64_t chunk_piece(std::int64_t size, std::int64_t n, std::int64_t c) noexcept {
  if (size <= 0 || n < 1) return 0;
  const std::int64_t full = size / n + (size % n != 0 ? 1 : 0);  // ceil without overflow
  if (c >= size / full + 1) return 0;                            // c * full would pass size
  const std::int64_t rest = size - c * full;
  return rest <= 0 ? 0 : rest < full ? rest : full;
}

/// True when the re-expression `to` of input-run shard `from` (as `regroup_shard` returns it) is an
/// exact local view on `n` shards: every rank's piece of the input run `[F, Y, T]` (Y cut in
/// torch.chunk fashion) is its piece of the output run `[F, Z, R]` (Z = g_i / m cut likewise).
/// Within each of the F blocks (Y·T = Z·R elements) rank c holds elements
/// [c·ceil(Y/n)·T, min((c+1)·ceil(Y/n), Y)·T) on the input side and the same with Z, R on the
/// output side, so the pieces coincide exactly when ceil(Y/n)·T == ceil(Z/n)·R. That holds when
/// n divides both Y and Z, when T == R (the shard lies on the innermost non-trivial dim of both
/// runs, so Y == Z), and in a few uneven cases besides ([3, 2] -> [6] with Shard(0) on 4 ranks:
/// pieces of 1 row of 2 and of 2 elements). DTensor: the even-division checks of
/// `_analyze_flatten` / `_analyze_split` with their exemptions for the last flattened dim and the
/// last split piece (which this condition contains).
[[nodiscard]] constexpr bool regroup_is_exact(const TensorShape& input, RunShard from, const TensorShape& output, RunShard to,
                                              std::int64_t n) noexcept {
  if (from.dim >= input.rank || to.dim >= output.rank || n < 1 || from.split_factor < 1 || to.split_factor < 1) return false;
  std::int64_t inner_in = 1, inner_out = 1;
  for (std::size_t k = from.dim + 1; k < input.rank; ++k) inner_in = saturating_mul(inner_in, input[k]);
  for (std::size_t k = to.dim + 1; k < output.rank; ++k) inner_out = saturating_mul(inner_out, output[k]);
  const std::int64_t y = input[from.dim] / from.split_factor, z = output[to.dim] / to.split_factor;
  if (inner_in == inner_out) return true;
  return saturating_mul(chunk_piece(y, n, 0), inner_in) == saturating_mul(chunk_piece(z, n, 0), inner_out) && inner_in != INT64_MAX &&
         inner_out != INT64_MAX;
}

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

}  // namespace ctshard
