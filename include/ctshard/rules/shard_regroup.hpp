#pragma once
/// \file rules/shard_regroup.hpp
/// Re-expressing a shard across a regrouping of dims: a run of input dims read as a run of output
/// dims holding the same elements in the same row-major order (a view's flatten, split, or split of
/// a flatten). Where do the elements one rank holds land, and is the local view exact on n ranks?
/// Used by the placeholder fill of view rows (`fill_placeholders`) and by the views' full-mesh
/// check (`view_output_spec`). With several mesh dims on one group, each is re-expressed on the
/// local sizes the earlier ones leave (`rules/regroup_on_mesh.hpp`: the local-size law,
/// docs/semantics.md).
/// DTensor follows the same picture in `_ViewShardingPropagator` (`_rewrite_plain_shard`,
/// `_rewrite_strided_shard`, `_expected_split_factor`, `local_tensor_shapes`).

#include <cstddef>
#include <cstdint>
#include <optional>

#include "ctshard/core/checked.hpp"
#include "ctshard/core/tensor_shape.hpp"

namespace ctshard {

/// A regrouping of dims attached to a rule row (RuleSet::add with a regroup): the row's placeholder
/// in operand column `source` lies on input dims `[input_first, input_first + input.rank)` of sizes
/// `input`; the row's other placeholders lie on output dims `[output_first, output_first +
/// output.rank)` of sizes `output`, which hold the same elements in the same row-major order
/// (`input.numel() == output.numel()`). Size-1 dims may appear on either side. A run may start
/// before dim 0 (`input_first` / `output_first` < 0): its leading dims are then virtual — the
/// program ranks of a collective (`rules/collective_rules.hpp`) — and a shard that lands on one
/// fills no row (`fill_placeholders`).
struct ShardRegroup {
  TensorShape input;             ///< sizes of the input run, outermost first
  TensorShape output;            ///< sizes of the output run, outermost first
  std::int8_t input_first = 0;   ///< tensor dim of the input run's first dim
  std::int8_t output_first = 0;  ///< tensor dim of the output run's first dim
  std::uint8_t source = 0;       ///< operand column (outputs first) of the input-side placeholder
  /// The run's leading dim on one side is the program ranks of a collective, not a tensor dim the
  /// mesh can shard: the mesh-size fill (`rules/regroup_on_mesh.hpp`) lists only the global-size
  /// placement for such a row (no full-mesh check picks among local-size alternatives there).
  bool program_ranks = false;
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

}  // namespace ctshard
