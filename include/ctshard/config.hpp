#pragma once
/// \file config.hpp
/// Library-wide limits and the one place for compiler checks and workarounds.

#include <cstddef>

// clang 14 supports the class-type template parameters ctshard uses but still reports
// __cpp_nontype_template_args as 201411, so only the language version is checked.
#if __cplusplus < 202002L
#error "ctshard needs C++20 (-std=c++20); g++ >= 12 or clang >= 14"
#endif

namespace ctshard {

/// Largest device-mesh rank a Spec can describe. Mesh expansion of an S-row single-dim strategy
/// yields S^N rows, so N = 8 is already far past what enumeration can price.
inline constexpr std::size_t max_mesh_dims = 8;

/// Most operands (outputs + tensor inputs) one single-dim strategy row may have: `split` of a
/// dim into size-1 pieces or `unbind` of a long dim make one output per piece, so a user size
/// would otherwise decide the allocation. RuleSet refuses more with ctshard::error.
inline constexpr std::size_t max_rule_operands = 65536;
/// Largest tensor rank a TensorShape can hold (aten graphs of transformer models use <= 5).
inline constexpr std::size_t max_tensor_dims = 8;

}  // namespace ctshard
