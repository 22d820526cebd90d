#pragma once
/// \file core/tensor_shape.hpp
/// TensorShape (global sizes of a tensor) and TensorMeta (shape + dtype itemsize in bytes), plus
/// DTensor's broadcasting helpers.

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>

#include "ctshard/config.hpp"
#include "ctshard/core/checked.hpp"
#include "ctshard/error.hpp"

namespace ctshard {

/// Global sizes of a tensor, rank <= max_tensor_dims; rank 0 is a 0-d (scalar) tensor.
/// A structural value, usable in constant expressions.
struct TensorShape {
  std::array<std::int64_t, max_tensor_dims> dims{};
  std::uint8_t rank = 0;

  /// A 0-d shape.
  constexpr TensorShape() = default;
  /// Throws ctshard::error for a negative size or a rank above max_tensor_dims.
  constexpr TensorShape(std::initializer_list<std::int64_t> sizes) {
    for (auto s : sizes) push_back(s);
  }
  /// Sizes from a span; throws ctshard::error like the list constructor.
  constexpr explicit TensorShape(std::span<const std::int64_t> sizes) {
    for (auto s : sizes) push_back(s);
  }
  /// Appends a dim. Throws ctshard::error for a negative size, past max_tensor_dims, or when the
  /// product of the nonzero sizes no longer fits in int64 (so every partial product of a shape's
  /// sizes fits).
  constexpr void push_back(std::int64_t size) {
    if (rank == max_tensor_dims) throw error("ctshard::TensorShape: rank above max_tensor_dims (" + std::to_string(max_tensor_dims) + ")");
    if (size < 0) throw error("ctshard::TensorShape: negative size " + std::to_string(size));
    std::int64_t n = size == 0 ? 1 : size;
    for (std::size_t d = 0; d < rank; ++d)
      if (dims[d] != 0) n = checked_mul(n, dims[d], "TensorShape: product of sizes");
    dims[rank++] = size;
  }
  /// Tensor rank.
  [[nodiscard]] constexpr std::size_t size() const noexcept { return rank; }
  /// Size of dim d (unchecked, d < rank).
  [[nodiscard]] constexpr std::int64_t operator[](std::size_t d) const noexcept { return dims[d]; }
  [[nodiscard]] constexpr std::int64_t& operator[](std::size_t d) noexcept { return dims[d]; }
  /// Number of elements (1 for a 0-d tensor). Throws ctshard::error when it does not fit in int64
  /// (possible only after sizes were set through operator[]).
  [[nodiscard]] constexpr std::int64_t numel() const {
    std::int64_t n = 1;
    for (std::size_t d = 0; d < rank; ++d) n = checked_mul(n, dims[d], "TensorShape::numel");
    return n;
  }
  friend constexpr bool operator==(const TensorShape&, const TensorShape&) = default;
};

/// A tensor's shape and the size in bytes of one element (float32: 4).
struct TensorMeta {
  TensorShape shape{};
  std::size_t itemsize = 4;
  /// Total bytes of the global tensor (DTensor `spec_to_bytes`); a double, so itemsize x numel
  /// never wraps. Throws ctshard::error when numel does not fit in int64.
  [[nodiscard]] constexpr double bytes() const { return static_cast<double>(itemsize) * static_cast<double>(shape.numel()); }
  friend constexpr bool operator==(const TensorMeta&, const TensorMeta&) = default;
};

/// "6x8" -> {6, 8}; "scalar" (or "") -> 0-d. Throws ctshard::error naming the text.
[[nodiscard]] inline TensorShape parse_shape(std::string_view text) {
  TensorShape shape;
  if (text.empty() || text == "scalar" || text == "[]") return shape;
  std::size_t pos = 0;
  while (pos <= text.size()) {
    const std::size_t end = std::min(text.find('x', pos), text.size());
    const auto part = text.substr(pos, end - pos);
    std::int64_t v = 0;
    if (part.empty() || part.size() > 15) throw error("ctshard::parse_shape: bad shape '" + std::string(text) + "' (expected e.g. 6x8 or scalar)");
    for (char c : part) {
      if (c < '0' || c > '9') throw error("ctshard::parse_shape: bad shape '" + std::string(text) + "' (expected e.g. 6x8 or scalar)");
      v = v * 10 + (c - '0');
    }
    shape.push_back(v);
    pos = end + 1;
  }
  return shape;
}

/// Prints "6x8", or "scalar" for a 0-d shape.
[[nodiscard]] inline std::string to_string(const TensorShape& s) {
  if (s.rank == 0) return "scalar";
  std::string out;
  for (std::size_t d = 0; d < s.rank; ++d) {
    out += (d ? "x" : "");
    out += std::to_string(s[d]);
  }
  return out;
}

namespace detail {
[[noreturn]] inline void shapes_not_broadcastable(std::int64_t a, std::int64_t b) {
  throw error("ctshard::broadcast_shapes: sizes " + std::to_string(a) + " and " + std::to_string(b) + " do not broadcast");
}
}  // namespace detail

/// NumPy/PyTorch broadcast of several shapes (trailing dims aligned, size 1 stretches).
/// Throws ctshard::error when two sizes differ and neither is 1.
[[nodiscard]] constexpr TensorShape broadcast_shapes(std::span<const TensorShape> shapes) {
  std::size_t rank = 0;
  for (const auto& s : shapes) rank = s.rank > rank ? s.rank : rank;
  TensorShape out;
  for (std::size_t i = 0; i < rank; ++i) out.push_back(1);
  for (const auto& s : shapes)
    for (std::size_t j = 0; j < s.rank; ++j) {
      const std::size_t i = rank - s.rank + j;
      if (s[j] == out[i] || s[j] == 1) continue;
      if (out[i] != 1) detail::shapes_not_broadcastable(out[i], s[j]);
      out[i] = s[j];
    }
  return out;
}

/// DTensor `infer_broadcast_dims_map(common, input)`: for each dim i of `common`, the input dim
/// aligned with it when their sizes are equal, else -1 (a broadcast size-1 or missing dim).
[[nodiscard]] constexpr std::array<int, max_tensor_dims> infer_broadcast_dims_map(const TensorShape& common, const TensorShape& input) noexcept {
  std::array<int, max_tensor_dims> map{};
  for (std::size_t i = 0; i < common.rank; ++i) {
    map[i] = -1;
    const std::ptrdiff_t j = static_cast<std::ptrdiff_t>(i) - (static_cast<std::ptrdiff_t>(common.rank) - input.rank);
    if (j >= 0 && input[static_cast<std::size_t>(j)] == common[i]) map[i] = static_cast<int>(j);
  }
  return map;
}

}  // namespace ctshard
