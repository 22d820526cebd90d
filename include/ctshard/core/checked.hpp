#pragma once
/// \file core/checked.hpp
/// Overflow-checked arithmetic on int64 sizes. Every product or sum of user-supplied sizes (numel,
/// bytes, mesh size, view / reshape sizes, split factors) goes through these helpers, so a size
/// that wraps past 2^63 is refused with ctshard::error instead of yielding a negative cost or a
/// view that agrees only modulo 2^64.

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "ctshard/error.hpp"

namespace ctshard {

namespace detail {
[[noreturn]] inline void size_overflow(std::string_view what, char op, std::int64_t a, std::int64_t b) {
  throw error("ctshard: " + std::string(what) + ": " + std::to_string(a) + " " + op + " " + std::to_string(b) + " overflows a 64-bit size");
}
}  // namespace detail

/// a * b for sizes. Throws ctshard::error "ctshard: <what>: a * b overflows a 64-bit size" when the
/// product does not fit in int64 (in a constant expression: fails to compile).
[[nodiscard]] constexpr std::int64_t checked_mul(std::int64_t a, std::int64_t b, std::string_view what) {
  std::int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) detail::size_overflow(what, '*', a, b);
  return r;
}

/// a + b for sizes. Throws ctshard::error "ctshard: <what>: a + b overflows a 64-bit size" when the
/// sum does not fit in int64.
[[nodiscard]] constexpr std::int64_t checked_add(std::int64_t a, std::int64_t b, std::string_view what) {
  std::int64_t r = 0;
  if (__builtin_add_overflow(a, b, &r)) detail::size_overflow(what, '+', a, b);
  return r;
}

/// Product of `sizes` (1 for none). Throws ctshard::error like checked_mul.
[[nodiscard]] constexpr std::int64_t checked_product(std::span<const std::int64_t> sizes, std::string_view what) {
  std::int64_t n = 1;
  for (auto s : sizes) n = checked_mul(n, s, what);
  return n;
}

/// a * b for non-negative sizes, clamped to INT64_MAX. For predicates that compare a product of
/// shard counts (mesh sizes x split factors) against a size: a clamped product is larger than any
/// size, so "fewer elements than shards" stays true and "divides evenly" false (for a nonzero
/// size) without wrapping.
[[nodiscard]] constexpr std::int64_t saturating_mul(std::int64_t a, std::int64_t b) noexcept {
  std::int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) return INT64_MAX;
  return r;
}

}  // namespace ctshard
