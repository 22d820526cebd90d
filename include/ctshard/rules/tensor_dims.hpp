#pragma once
/// \file rules/tensor_dims.hpp
/// Normalising a possibly negative tensor dim argument (PyTorch / DTensor `normalize_dim`), shared
/// by the view and tensor-op rule generators.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "ctshard/error.hpp"

namespace ctshard {

namespace detail {
[[noreturn]] inline void dim_out_of_range(std::string_view api, std::int64_t dim, std::size_t rank) {
  throw error(std::string(api) + ": dim " + std::to_string(dim) + " is out of range for a tensor of rank " + std::to_string(rank) + " (expected [" +
              std::to_string(-static_cast<std::int64_t>(rank)) + ", " + std::to_string(static_cast<std::int64_t>(rank) - 1) + "])");
}
}  // namespace detail

/// `dim` in `[-rank, rank)` mapped to `[0, rank)` (DTensor `normalize_dim`; a 0-d tensor accepts
/// 0 and -1 as PyTorch does, returning 0). Throws ctshard::error naming `api` when out of range.
[[nodiscard]] constexpr std::size_t normalize_dim(std::int64_t dim, std::size_t rank, std::string_view api) {
  const auto r = static_cast<std::int64_t>(rank == 0 ? 1 : rank);
  if (dim < -r || dim >= r) detail::dim_out_of_range(api, dim, rank);
  return static_cast<std::size_t>(dim < 0 ? dim + r : dim);
}

}  // namespace ctshard
