#pragma once
/// \file core/spec.hpp
/// Spec: one placement per mesh dim (DTensor `DTensorSpec.placements`), printed and parsed in
/// DTensor's short form with placements concatenated: `S(0)R` on a 2-D mesh.

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "ctshard/config.hpp"
#include "ctshard/core/checked.hpp"
#include "ctshard/core/fixed_string.hpp"
#include "ctshard/core/placement.hpp"
#include "ctshard/core/tensor_shape.hpp"

namespace ctshard {

/// Placements of one tensor on an N-dim mesh (N <= max_mesh_dims), mesh dim 0 first.
/// A structural value: no allocation, usable in constant expressions and as a template argument.
struct Spec {
  std::array<Placement, max_mesh_dims> placements{};
  std::uint8_t ndim = 0;  ///< mesh rank N

  /// An empty spec (0 mesh dims); push_back adds mesh dims.
  constexpr Spec() = default;
  /// All-Replicate spec on an `ndim`-dim mesh. Throws ctshard::error when ndim > max_mesh_dims.
  constexpr explicit Spec(std::size_t mesh_ndim) {
    if (mesh_ndim > max_mesh_dims) detail::invalid_tensor_dim("ctshard::Spec: mesh rank above max_mesh_dims", static_cast<int>(mesh_ndim));
    ndim = static_cast<std::uint8_t>(mesh_ndim);
  }
  /// Mesh rank N.
  [[nodiscard]] constexpr std::size_t size() const noexcept { return ndim; }
  /// Placement on `mesh_dim` (unchecked, mesh_dim < size()).
  [[nodiscard]] constexpr const Placement& operator[](std::size_t mesh_dim) const noexcept { return placements[mesh_dim]; }
  [[nodiscard]] constexpr Placement& operator[](std::size_t mesh_dim) noexcept { return placements[mesh_dim]; }
  /// Iteration over the size() placements, mesh dim 0 first.
  [[nodiscard]] constexpr const Placement* begin() const noexcept { return placements.data(); }
  [[nodiscard]] constexpr const Placement* end() const noexcept { return placements.data() + ndim; }
  /// Appends one mesh dim. Throws ctshard::error past max_mesh_dims.
  constexpr void push_back(Placement p) {
    if (ndim >= max_mesh_dims) detail::invalid_tensor_dim("ctshard::Spec: mesh rank above max_mesh_dims", ndim + 1);
    placements[ndim++] = p;
  }
  /// True when every mesh dim is Replicate (an empty spec counts as replicated).
  [[nodiscard]] constexpr bool is_replicated() const noexcept {
    for (const auto& p : *this)
      if (!p.is_replicate()) return false;
    return true;
  }
  friend constexpr bool operator==(const Spec&, const Spec&) = default;
};

/// Devices per mesh dim, mesh dim 0 first: one entry per mesh dim of the specs it goes with
/// (`MeshTopology::dim_sizes()`; what a FullMeshFilter receives).
using MeshSizes = std::span<const std::int64_t>;

/// Product of the mesh sizes of the mesh dims whose placement is `Shard` or `StridedShard`
/// (DTensor `DTensorSpec.num_shards`: devices holding distinct data; split factors do not count).
/// `mesh_sizes` has one entry per mesh dim of `spec`. Shards of one tensor dim: `num_shards_on_dim`.
template <class Sizes>
[[nodiscard]] constexpr std::int64_t num_shards(const Spec& spec, const Sizes& mesh_sizes) noexcept {
  std::int64_t n = 1;
  for (std::size_t i = 0; i < spec.size(); ++i)
    if (spec[i].is_any_shard()) n *= static_cast<std::int64_t>(mesh_sizes[i]);
  return n;
}

/// Pieces one mesh dim of `mesh_size` devices cuts its local block of a tensor dim into under
/// `p`: `mesh_size` for Shard, `mesh_size × split_factor` for StridedShard (each device then holds
/// `split_factor` of them, interleaved), 1 for Replicate and Partial. Saturates at int64 max.
///
/// The split-factor decision, made here once for every shard count in ctshard: a StridedShard's
/// split factor counts at its own mesh dim and is not carried to later mesh dims, because it
/// stands for the split that those later mesh dims make (DTensor's FSDP2 + TP layout
/// `[_S(0, tp), S(0)]` cuts dim 0 into dp × tp shards, not dp × tp × tp; DTensor
/// `is_tensor_shardable` checks `shards × split_factor` at the StridedShard's mesh dim only).
[[nodiscard]] constexpr std::int64_t shard_pieces(const Placement& p, std::int64_t mesh_size) noexcept {
  if (p.is_strided_shard()) return saturating_mul(mesh_size, p.split_factor);
  return p.is_shard() ? mesh_size : 1;
}

/// Adds one mesh dim that shards a tensor dim (placement `p`, `mesh_size` devices) to that dim's
/// running count: `devices` is the product of the sizes of the earlier mesh dims sharding the same
/// tensor dim and becomes the product including this one. Returns the shards of the tensor dim at
/// this mesh dim: `devices` before it × `shard_pieces(p, mesh_size)` (saturating). DTensor
/// `is_tensor_shardable`'s `num_shards` list and its `lower_bound`.
[[nodiscard]] constexpr std::int64_t add_mesh_dim_shards(std::int64_t& devices, const Placement& p, std::int64_t mesh_size) noexcept {
  const std::int64_t shards = saturating_mul(devices, shard_pieces(p, mesh_size));
  devices = saturating_mul(devices, mesh_size);
  return shards;
}

/// Shards of tensor dim `tensor_dim` under `spec` on a mesh of `mesh_sizes` (one entry per mesh
/// dim of `spec`): the most pieces any mesh dim sharding it leaves (`add_mesh_dim_shards`), 1 when
/// no mesh dim shards it. `[S(0), S(0)]` on 2x3: 6; `[_S(0, 2)]` on 4: 8; `[_S(0, 2), S(0)]` on 2x2: 4.
template <class Sizes>
[[nodiscard]] constexpr std::int64_t num_shards_on_dim(const Spec& spec, const Sizes& mesh_sizes, int tensor_dim) noexcept {
  std::int64_t devices = 1, shards = 1;
  for (std::size_t i = 0; i < spec.size(); ++i) {
    if (!spec[i].is_any_shard() || spec[i].dim != tensor_dim) continue;
    const std::int64_t here = add_mesh_dim_shards(devices, spec[i], static_cast<std::int64_t>(mesh_sizes[i]));
    shards = here > shards ? here : shards;
  }
  return shards;
}

/// The largest local shard of a tensor of `shape` placed as `spec` on a mesh of `mesh_sizes` (rank
/// 0's: the first torch.chunk piece is the largest): per tensor dim, each mesh dim sharding it in
/// order cuts the local size into `shard_pieces` ceil-sized pieces and keeps as many as one device
/// holds (1 for Shard, `split_factor` for StridedShard, capped at the size). `[33]` at `S(0)S(0)`
/// on 2x2: 17, then 9. Replicate and Partial keep the dim whole. Per-device memory of a plan
/// (docs/global_plan.md, "Memory per device") counts this, not the average.
template <class Sizes>
[[nodiscard]] constexpr TensorShape largest_local_shape(const TensorShape& shape, const Spec& spec, const Sizes& mesh_sizes) noexcept {
  TensorShape local = shape;
  for (std::size_t i = 0; i < spec.size(); ++i) {
    const Placement& p = spec[i];
    if (!p.is_any_shard() || p.dim < 0 || static_cast<std::size_t>(p.dim) >= shape.rank) continue;
    std::int64_t& x = local.dims[static_cast<std::size_t>(p.dim)];
    const std::int64_t pieces = shard_pieces(p, static_cast<std::int64_t>(mesh_sizes[i]));
    const std::int64_t held = p.is_strided_shard() ? p.split_factor : 1;
    const std::int64_t chunk = x / pieces + (x % pieces != 0 ? 1 : 0);
    x = chunk > x / held ? x : held * chunk;  // held * chunk capped at x, without overflow
  }
  return local;
}

namespace detail {
[[noreturn]] inline void invalid_placement_text(std::string_view api, std::string_view text, std::size_t column) {
  throw error(std::string(api) + ": cannot parse a placement at column " + std::to_string(column + 1) + " of '" + std::string(text) +
              "' (expected R, S(d), _S(d, sf), P(sum|avg|max|min))");
}

struct PlacementCursor {
  std::string_view text;
  std::size_t pos = 0;
  std::string_view api;
  bool soft = false;             ///< record the first failure instead of throwing
  std::size_t failed_at = npos;  ///< soft mode: column of the first failure, npos while none

  static constexpr std::size_t npos = static_cast<std::size_t>(-1);

  /// Reports a bad text at `column`: throws (a compile error when constant-evaluated), or in soft
  /// mode records the column and moves to the end so that parsing stops.
  constexpr void fail(std::size_t column) {
    if (!soft) invalid_placement_text(api, text, column);
    if (failed_at == npos) failed_at = column;
    pos = text.size();
  }
  [[nodiscard]] constexpr bool failed() const noexcept { return failed_at != npos; }

  /// The character at the cursor, or '\0' at the end.
  [[nodiscard]] constexpr char peek() const noexcept { return pos < text.size() ? text[pos] : '\0'; }
  constexpr void skip_space() {
    while (pos < text.size() && (text[pos] == ' ' || text[pos] == '\t')) ++pos;
  }
  constexpr bool eat(char c) {
    skip_space();
    if (pos < text.size() && text[pos] == c) {
      ++pos;
      return true;
    }
    return false;
  }
  constexpr void expect(char c, std::size_t start) {
    if (!eat(c)) fail(start);
  }
  constexpr bool eat_word(std::string_view w) {
    skip_space();
    if (text.substr(pos, w.size()) == w) {
      pos += w.size();
      return true;
    }
    return false;
  }
  constexpr int number(std::size_t start) {
    skip_space();
    int value = 0;
    std::size_t digits = 0;
    while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9' && digits < 6) {
      value = value * 10 + (text[pos] - '0');
      ++pos, ++digits;
    }
    if (digits == 0) fail(start);
    return value;
  }
  /// Parses one placement starting at `pos`; `allow_placeholder` admits `S?(d)`.
  constexpr Placement placement(bool allow_placeholder) {
    skip_space();
    const std::size_t start = pos;
    if (eat_word("_S(")) {
      const int d = number(start);
      expect(',', start);
      const int sf = number(start);
      expect(')', start);
      if (sf < 1 || sf > 65535) fail(start);  // split factor out of range
      if (failed() || (soft && d > 63)) return soft_failure(start);
      return StridedShard(d, sf);
    }
    if (allow_placeholder && eat_word("S?(")) {
      const int d = number(start);
      expect(')', start);
      if (failed() || (soft && d > 63)) return soft_failure(start);
      return ShardingPlaceholder(d);
    }
    if (eat_word("S(")) {
      const int d = number(start);
      expect(')', start);
      if (failed() || (soft && d > 63)) return soft_failure(start);
      return Shard(d);
    }
    if (eat_word("P")) {
      if (!eat('(')) return Partial(ReduceOp::sum);  // older DTensor prints a bare "P"
      ReduceOp op = ReduceOp::sum;
      if (eat_word("sum")) op = ReduceOp::sum;
      else if (eat_word("avg")) op = ReduceOp::avg;
      else if (eat_word("max")) op = ReduceOp::max;
      else if (eat_word("min")) op = ReduceOp::min;
      else fail(start);
      expect(')', start);
      return Partial(op);
    }
    if (eat_word("R")) return Replicate();
    fail(start);
    return Replicate();
  }
  /// Soft mode: what the placement constructors would reject (a dim past 63) fails at `start`.
  constexpr Placement soft_failure(std::size_t start) {
    fail(start);
    return Replicate();
  }
};
}  // namespace detail

/// Parses one placement in DTensor short form (`R`, `S(1)`, `_S(0, 2)`, `P(avg)`, bare `P` =
/// `P(sum)`; `S?(d)` placeholders too). Surrounding blanks are ignored. Throws ctshard::error
/// naming the text and column; in a constant expression a bad text is a compile error.
[[nodiscard]] constexpr Placement parse_placement(std::string_view text) {
  detail::PlacementCursor c{text, 0, "ctshard::parse_placement"};
  const Placement p = c.placement(true);
  c.skip_space();
  if (c.pos != text.size()) detail::invalid_placement_text(c.api, text, c.pos);
  return p;
}

namespace detail {
/// parse_spec's body over a cursor: throws on a bad text, or in soft mode records the column.
[[nodiscard]] constexpr Spec parse_spec_with(PlacementCursor& c) {
  const std::string_view text = c.text;
  Spec spec;
  c.skip_space();
  const bool parenthesised = c.eat('(');
  while (true) {
    c.skip_space();
    if (c.pos == text.size() || (parenthesised && c.peek() == ')')) break;
    if (spec.size() > 0 && c.eat(',')) continue;
    if (spec.size() == max_mesh_dims) {
      if (!c.soft) invalid_placement_text("ctshard::parse_spec: more than max_mesh_dims placements", text, c.pos);
      c.fail(c.pos);
      break;
    }
    const Placement p = c.placement(false);
    if (c.failed()) break;
    spec.push_back(p);
  }
  if (parenthesised && !c.failed()) c.expect(')', c.pos);
  c.skip_space();
  if (!c.failed() && (c.pos != text.size() || spec.size() == 0)) c.fail(c.pos);
  return spec;
}

/// The column (0-based) where parse_spec would reject `text`, or PlacementCursor::npos when it
/// parses. Never throws: the `_spec` literal checks its text with it before parsing.
[[nodiscard]] constexpr std::size_t spec_text_error_column(std::string_view text) {
  PlacementCursor c{text, 0, "ctshard::parse_spec", true};
  (void)parse_spec_with(c);
  return c.failed_at;
}

/// The `_spec` literal's diagnostic: instantiated only for a bad text, its one failing
/// static_assert names the problem and `Column` (1-based) where the text stops parsing.
template <std::size_t Column>
struct invalid_placement_text_in_spec_literal {
  static_assert(Column == 0, "ctshard::_spec: invalid placement text (expected R, S(d), _S(d, sf), P(sum|avg|max|min) per mesh dim)");
  static constexpr bool value = false;
};
}  // namespace detail

/// Parses a spec: placements concatenated, mesh dim 0 first (`S(0)R`, `RS(1)P(sum)`); blanks and
/// commas between placements and one pair of enclosing parentheses are accepted. Placeholders are
/// rejected. Throws ctshard::error naming the offending text (compile error when constant-evaluated).
[[nodiscard]] constexpr Spec parse_spec(std::string_view text) {
  detail::PlacementCursor c{text, 0, "ctshard::parse_spec"};
  return detail::parse_spec_with(c);
}

namespace literals {
/// `"S(0)R"_spec`: a Spec parsed at compile time. A bad text is one compile error, the
/// static_assert of `invalid_placement_text_in_spec_literal<column>` (validated before parsing,
/// so nothing else reports).
template <fixed_string Text>
consteval Spec operator""_spec() {
  constexpr std::size_t column = detail::spec_text_error_column(Text.view());
  if constexpr (column == detail::PlacementCursor::npos) {
    return parse_spec(Text.view());
  } else {
    [[maybe_unused]] constexpr bool valid = detail::invalid_placement_text_in_spec_literal<column + 1>::value;
    return Spec{};
  }
}
}  // namespace literals

/// Prints a spec in DTensor short form, placements concatenated (`S(0)R`).
[[nodiscard]] inline std::string to_string(const Spec& spec) {
  std::string s;
  for (const auto& p : spec) s += to_string(p);
  return s;
}

/// Throws ctshard::error (`what`: spec 'S(7)R' shards tensor dim 7 of a 2-d tensor) when a Shard
/// or StridedShard names a dim the tensor does not have. Used on run-time input specs, which the
/// filters would otherwise silently price.
inline void check_shard_dims(const Spec& spec, const TensorShape& shape, std::string_view what) {
  for (const auto& p : spec)
    if (p.is_any_shard() && p.dim >= shape.rank)
      throw error(std::string(what) + ": spec '" + to_string(spec) + "' shards tensor dim " + std::to_string(p.dim) + " of a " +
                  std::to_string(shape.rank) + "-d tensor");
}

}  // namespace ctshard
