#pragma once
/// \file rules/grouped_mm_rules.hpp
/// Single-dim strategy of `_grouped_mm` (DTensor `_matrix_ops.py`: `grouped_mm_strategy`), the
/// mixture-of-experts matmul: one matmul per group, groups given by a batch dim or by `offs`
/// (cumulative group ends along one dim of a 2-d operand).
///
/// Expert parallelism is not a row here: with `mat_b [experts, k, n]` split by experts, a rank's
/// kernel would need the offsets of its own experts' token block, rebased to start at 0 — a token
/// all-to-all (MoE dispatch), not a local call on shards (`offs` split with the experts starts the
/// rank's first group at row 0 and sweeps in the earlier experts' tokens). DTensor has no such row
/// either.

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "ctshard/core/spec.hpp"
#include "ctshard/core/tensor_shape.hpp"
#include "ctshard/rules/rule_set.hpp"

namespace ctshard {

namespace detail {
[[noreturn]] inline void grouped_mm_ranks(std::size_t a, std::size_t b) {
  throw error("ctshard::grouped_mm_single_dim_strategy: mat_a and mat_b must be 2-d or 3-d, got ranks " + std::to_string(a) + " and " +
              std::to_string(b));
}
}  // namespace detail

/// `_grouped_mm(mat_a, mat_b, offs?, bias?, out_dtype?) -> out` for ranks `a_rank`, `b_rank` in
/// {2, 3}. Operands `[out, mat_a, mat_b, offs?]` (offs always Replicate); rows in DTensor's order:
/// `[P(sum), P(sum), R, R?]`, `[P(sum), R, P(sum), R?]` (linear in each matrix), then by ranks
/// (`offs` groups the dim named in brackets):
/// - 2d x 3d, a [M, K], b [G, K, N] -> [M, N] (M grouped): `[S?(1), R, S?(2)]` (N),
///   `[P(sum), S?(1), S?(1)]` (K); M is not split (offs are global row numbers);
/// - 3d x 2d, a [G, M, K], b [K, N] -> [M, N] (N grouped): `[P(sum), S?(2), S?(0)]` (K),
///   `[S?(0), S?(1), R]` (M);
/// - 2d x 2d, a [M, K], b [K, N] -> [G, M, N] (K grouped): `[S?(2), R, S?(1)]` (N),
///   `[S?(1), S?(0), R]` (M);
/// - 3d x 3d, a [G, M, K], b [G, K, N] -> [G, M, N]: `[S?(2), R, S?(2)]`, `[S?(1), S?(1), R]`,
///   `[P(sum), S?(2), S?(1)]`, `[S?(0), S?(0), S?(0)]`;
/// then `[P(avg), P(avg), R, R?]`, `[P(avg), R, P(avg), R?]` (ctshard's: linear). Use with
/// `grouped_mm_alignment_filter`. Throws ctshard::error for other ranks.
[[nodiscard]] constexpr RuleSet grouped_mm_single_dim_strategy(std::size_t a_rank, std::size_t b_rank, bool has_offs) {
  if (a_rank < 2 || a_rank > 3 || b_rank < 2 || b_rank > 3) detail::grouped_mm_ranks(a_rank, b_rank);
  RuleSet rules(1, has_offs ? 3 : 2);
  const int out_rank = (a_rank == 2 && b_rank == 2) || (a_rank == 3 && b_rank == 3) ? 3 : 2;
  rules.set_rank(0, out_rank);
  rules.set_rank(1, static_cast<int>(a_rank));
  rules.set_rank(2, static_cast<int>(b_rank));
  if (has_offs) rules.set_rank(3, 1);
  std::vector<Placement> row(rules.width(), Replicate());
  auto add = [&](Placement out, Placement a, Placement b) {
    row[0] = out;
    row[1] = a;
    row[2] = b;
    rules.add(row);
  };
  auto s = [](int d) { return ShardingPlaceholder(d); };
  const Placement rep = Replicate(), psum = Partial(ReduceOp::sum);
  add(psum, psum, rep);
  add(psum, rep, psum);
  if (a_rank == 2 && b_rank == 3) {
    add(s(1), rep, s(2));
    add(psum, s(1), s(1));
  } else if (a_rank == 3 && b_rank == 2) {
    add(psum, s(2), s(0));
    add(s(0), s(1), rep);
  } else if (a_rank == 2 && b_rank == 2) {
    add(s(2), rep, s(1));
    add(s(1), s(0), rep);
  } else {
    add(s(2), rep, s(2));
    add(s(1), s(1), rep);
    add(psum, s(2), s(1));
    add(s(0), s(0), s(0));
  }
  const Placement pavg = Partial(ReduceOp::avg);
  add(pavg, pavg, rep);
  add(pavg, rep, pavg);
  return rules;
}

/// The number of elements the `_grouped_mm` kernel needs a matrix's leading stride to be a
/// multiple of: 16 bytes over the item size.
[[nodiscard]] constexpr std::int64_t grouped_mm_alignment(std::size_t itemsize) noexcept {
  return itemsize == 0 || itemsize >= 16 ? 1 : static_cast<std::int64_t>(16 / itemsize);
}

/// True when every piece that `spec` cuts from each of the last two dims of `shape` has a
/// multiple of `alignment` elements: torch.chunk pieces, mesh dim by mesh dim (empty pieces count
/// as aligned); a StridedShard must split its dim evenly (else false).
[[nodiscard]] constexpr bool matrix_dims_stay_aligned(const TensorShape& shape, const Spec& spec, MeshSizes mesh, std::int64_t alignment) noexcept {
  if (alignment <= 1 || shape.rank < 2) return true;
  for (std::size_t d = shape.rank - 2; d < shape.rank; ++d) {
    // distinct piece sizes so far: torch.chunk of x into n gives ceil(x / n)-sized pieces and at
    // most one smaller remainder, so each split adds at most one size per size
    std::array<std::int64_t, 2 * max_mesh_dims + 2> sizes{shape[d]};
    std::size_t count = 1;
    bool split = false;
    for (std::size_t i = 0; i < spec.size(); ++i) {
      const Placement& p = spec[i];
      if (!p.is_any_shard() || static_cast<std::size_t>(p.dim) != d) continue;
      split = true;
      const std::int64_t n = mesh[i];
      std::array<std::int64_t, 2 * max_mesh_dims + 2> next{};
      std::size_t next_count = 0;
      auto keep = [&](std::int64_t v) {
        for (std::size_t k = 0; k < next_count; ++k)
          if (next[k] == v) return;
        if (next_count < next.size()) next[next_count++] = v;
      };
      for (std::size_t k = 0; k < count; ++k) {
        const std::int64_t x = sizes[k];
        if (p.is_strided_shard()) {
          if (x % shard_pieces(p, n) != 0) return false;
          keep(x / n);
          continue;
        }
        const std::int64_t chunk = x / n + (x % n != 0 ? 1 : 0);  // ceil without overflow
        if (chunk > 0) keep(chunk);
        if (chunk > 0 && x % chunk != 0) keep(x % chunk);
      }
      sizes = next;
      count = next_count;
    }
    for (std::size_t k = 0; split && k < count; ++k)
      if (sizes[k] % alignment != 0) return false;
  }
  return true;
}

}  // namespace ctshard
