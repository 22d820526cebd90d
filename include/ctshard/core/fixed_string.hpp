#pragma once
/// \file core/fixed_string.hpp
/// fixed_string: a string literal usable as a class-type non-type template parameter
/// (`einsum_strategy<"mk,kn->mn">`), the CTRE / C++20 NTTP idiom.

#include <cstddef>
#include <string_view>

namespace ctshard {

/// A compile-time string of N characters (no terminator counted). Built from a string literal;
/// the deduction guide below makes `fixed_string{"ab"}` a `fixed_string<2>`.
template <std::size_t N>
struct fixed_string {
  char data[N + 1]{};  // public: structural type requirement

  /// An empty (all-zero) string of N characters.
  constexpr fixed_string() = default;
  // clang 14-16 need this converting constructor plus the deduction guide to deduce N from a
  // literal in a template argument.
  constexpr fixed_string(const char (&text)[N + 1]) noexcept {  // NOLINT(google-explicit-constructor): implicit by design
    for (std::size_t i = 0; i < N; ++i) data[i] = text[i];
  }
  /// Number of characters (no terminator).
  [[nodiscard]] static constexpr std::size_t size() noexcept { return N; }
  /// The characters as a string_view.
  [[nodiscard]] constexpr std::string_view view() const noexcept { return {data, N}; }
  /// Implicit view, so a fixed_string works where a string_view is expected.
  constexpr operator std::string_view() const noexcept { return view(); }  // NOLINT(google-explicit-constructor)
  /// Character i (unchecked, i < N).
  [[nodiscard]] constexpr char operator[](std::size_t i) const noexcept { return data[i]; }
};

template <std::size_t M>
fixed_string(const char (&)[M]) -> fixed_string<M - 1>;

}  // namespace ctshard
