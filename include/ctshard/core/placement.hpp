#pragma once
/// \file core/placement.hpp
/// Placement: how a tensor lives on ONE device-mesh dimension (DTensor's `Placement`).

#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>

#include "ctshard/error.hpp"

namespace ctshard {

/// Reduction a `Partial` placement still owes. DTensor: `Partial.reduce_op` ("sum", "avg", "max",
/// "min"); `sum` and `avg` are the linear ones (`Partial.LINEAR_REDUCE_OPS`).
enum class ReduceOp : std::uint8_t { sum, avg, max, min };

/// What kind of placement a `Placement` value is. `placeholder` exists only inside rules
/// (`ShardingPlaceholder`), never in a runtime spec.
enum class PlacementKind : std::uint8_t { replicate, shard, strided_shard, partial, placeholder };

/// One placement on one mesh dim. A structural literal type: usable as a `constexpr` value and as
/// a non-type template argument (`placement_c<Shard(0)>` is its type-level form). Build values
/// with `Replicate()`, `Shard(d)`, `StridedShard(d, sf)`, `Partial(op)` and
/// `ShardingPlaceholder(d)`; those keep unused fields zero so that `==` is exact.
/// Printed in DTensor's short form by `to_string`: `R`, `S(0)`, `_S(0, 2)`, `P(sum)`, `S?(0)`.
struct Placement {
  PlacementKind kind = PlacementKind::replicate;
  std::int8_t dim = 0;                 ///< tensor dim (shard, strided_shard, placeholder), else 0
  std::uint16_t split_factor = 0;      ///< strided_shard only (DTensor `_StridedShard.split_factor`)
  ReduceOp reduce_op = ReduceOp::sum;  ///< partial only

  /// True for Replicate.
  [[nodiscard]] constexpr bool is_replicate() const noexcept { return kind == PlacementKind::replicate; }
  /// True for `Shard(d)` only; like newest DTensor, a `StridedShard` is not `is_shard()`.
  [[nodiscard]] constexpr bool is_shard() const noexcept { return kind == PlacementKind::shard; }
  /// True for StridedShard.
  [[nodiscard]] constexpr bool is_strided_shard() const noexcept { return kind == PlacementKind::strided_shard; }
  /// Shard or StridedShard: the tensor dim `dim` is split across the mesh dim.
  [[nodiscard]] constexpr bool is_any_shard() const noexcept { return is_shard() || is_strided_shard(); }
  /// True for Partial of any reduce op.
  [[nodiscard]] constexpr bool is_partial() const noexcept { return kind == PlacementKind::partial; }
  /// True for a rule-side ShardingPlaceholder.
  [[nodiscard]] constexpr bool is_placeholder() const noexcept { return kind == PlacementKind::placeholder; }

  friend constexpr bool operator==(const Placement&, const Placement&) = default;
};

namespace detail {
// Non-constexpr reporters: reached during constant evaluation they stop compilation at a call
// whose function name states the problem (the {fmt} pattern); at run time they throw.
[[noreturn]] inline void invalid_tensor_dim(const char* api, int dim) {
  throw error(std::string(api) + ": tensor dim must be in [0, 63], got " + std::to_string(dim));
}
[[noreturn]] inline void invalid_split_factor(const char* api, int split_factor) {
  throw error(std::string(api) + ": split factor must be in [1, 65535], got " + std::to_string(split_factor));
}
}  // namespace detail

/// `Replicate()`: a full copy on every device of the mesh dim (DTensor `Replicate`).
[[nodiscard]] constexpr Placement Replicate() noexcept { return {}; }

/// `Shard(d)`: tensor dim `d` (0 <= d < max_tensor_dims) split in `torch.chunk` fashion
/// (DTensor `Shard`). Throws ctshard::error (a compile error in a constant expression) for a bad d.
[[nodiscard]] constexpr Placement Shard(int dim) {
  if (dim < 0 || dim > 63) detail::invalid_tensor_dim("ctshard::Shard", dim);
  return {PlacementKind::shard, static_cast<std::int8_t>(dim), 0, ReduceOp::sum};
}

/// `StridedShard(d, sf)`: DTensor `_StridedShard(dim=d, split_factor=sf)`, the right-to-left nested
/// sharding of FSDP2 + TP. Throws ctshard::error for a bad dim or a split factor < 1.
[[nodiscard]] constexpr Placement StridedShard(int dim, int split_factor) {
  if (dim < 0 || dim > 63) detail::invalid_tensor_dim("ctshard::StridedShard", dim);
  if (split_factor < 1 || split_factor > 65535) detail::invalid_split_factor("ctshard::StridedShard", split_factor);
  return {PlacementKind::strided_shard, static_cast<std::int8_t>(dim), static_cast<std::uint16_t>(split_factor), ReduceOp::sum};
}

/// `Partial(op)`: every device holds a partial value; the tensor is the `op`-reduction over the
/// mesh dim (DTensor `Partial(reduce_op)`, default "sum").
[[nodiscard]] constexpr Placement Partial(ReduceOp op = ReduceOp::sum) noexcept { return {PlacementKind::partial, 0, 0, op}; }

/// `ShardingPlaceholder(d)`: rule-side stand-in for "whatever shard kind the inputs use on tensor
/// dim d" (DTensor `_ShardingPlaceholder`). Filled at run time by `fill_placeholders`.
[[nodiscard]] constexpr Placement ShardingPlaceholder(int dim) {
  if (dim < 0 || dim > 63) detail::invalid_tensor_dim("ctshard::ShardingPlaceholder", dim);
  return {PlacementKind::placeholder, static_cast<std::int8_t>(dim), 0, ReduceOp::sum};
}

/// Type-level form of a placement value: `placement_c<Shard(0)>::value == Shard(0)`.
template <Placement P>
using placement_c = std::integral_constant<Placement, P>;

/// Name of a reduce op as DTensor prints it: "sum", "avg", "max", "min".
[[nodiscard]] constexpr std::string_view to_string(ReduceOp op) noexcept {
  switch (op) {
    case ReduceOp::sum: return "sum";
    case ReduceOp::avg: return "avg";
    case ReduceOp::max: return "max";
    case ReduceOp::min: return "min";
  }
  return "?";
}

/// DTensor short form: `R`, `S(d)`, `_S(d, sf)`, `P(op)`; placeholders print `S?(d)` as in the
/// reference cases' `rules_raw`.
[[nodiscard]] inline std::string to_string(const Placement& p) {
  switch (p.kind) {
    case PlacementKind::replicate: return "R";
    case PlacementKind::shard: return "S(" + std::to_string(p.dim) + ")";
    case PlacementKind::strided_shard: return "_S(" + std::to_string(p.dim) + ", " + std::to_string(p.split_factor) + ")";
    case PlacementKind::partial: return "P(" + std::string(to_string(p.reduce_op)) + ")";
    case PlacementKind::placeholder: return "S?(" + std::to_string(p.dim) + ")";
  }
  return "?";
}

}  // namespace ctshard
