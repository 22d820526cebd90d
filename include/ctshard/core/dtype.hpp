#pragma once
/// \file core/dtype.hpp
/// The one dtype table: every tensor dtype ctshard knows, under each name it goes by — torch's
/// (`torch.float8_e4m3fnuz` without the prefix: "float8_e4m3fnuz"), the short name FX annotations
/// print ("f8e4m3fnuz", as in `f8e4m3fnuz[16, 64]`), and the aliases torch accepts ("float",
/// "half", "long", ...) — with its element size in bytes. The FX reader (graph/ir.hpp) accepts the
/// short names in annotations; `ctshard table --dtype` and `ctshard cost --dtype` accept every name.
///
/// \code
///   static_assert(ctshard::itemsize_of("float8_e4m3fnuz") == 1);
///   static_assert(ctshard::itemsize_of("bf16") == 2);
///   static_assert(ctshard::find_dtype("half")->torch_name == "float16");
///   static_assert(!ctshard::fx_itemsize_of("float32"));  // annotations print "f32"
/// \endcode

#include <array>
#include <cstddef>
#include <optional>
#include <string_view>

namespace ctshard {

/// One dtype: torch's name, the FX annotation name, another name torch accepts ("" when none),
/// and the size of one element in bytes.
struct DtypeInfo {
  std::string_view torch_name;  ///< `torch.<name>`: "float32", "bfloat16", "float8_e4m3fnuz"
  std::string_view fx_name;     ///< as FX annotations print it: "f32", "bf16", "f8e4m3fnuz"
  std::string_view alias{};     ///< another name torch accepts: "float" for float32; "" when none
  std::size_t itemsize = 0;     ///< bytes per element

  /// True when `name` is one of this dtype's names (never for "").
  [[nodiscard]] constexpr bool named(std::string_view name) const noexcept {
    if (name.empty()) return false;
    return name == torch_name || name == fx_name || name == alias;
  }
};

/// Every dtype, floating ones first (the FX names are torch.fx's `dtype_abbrs`).
inline constexpr std::array<DtypeInfo, 20> dtypes{{
    {"float64", "f64", "double", 8},
    {"float32", "f32", "float", 4},
    {"float16", "f16", "half", 2},
    {"bfloat16", "bf16", "", 2},
    {"float8_e4m3fn", "f8e4m3fn", "", 1},
    {"float8_e5m2", "f8e5m2", "", 1},
    {"float8_e4m3fnuz", "f8e4m3fnuz", "", 1},
    {"float8_e5m2fnuz", "f8e5m2fnuz", "", 1},
    {"complex128", "c128", "cdouble", 16},
    {"complex64", "c64", "cfloat", 8},
    {"complex32", "c32", "", 4},
    {"int64", "i64", "long", 8},
    {"int32", "i32", "int", 4},
    {"int16", "i16", "", 2},
    {"int8", "i8", "", 1},
    {"uint64", "u64", "", 8},
    {"uint32", "u32", "", 4},
    {"uint16", "u16", "", 2},
    {"uint8", "u8", "", 1},
    {"bool", "b8", "", 1},
}};

/// The dtype called `name` by any of its names (torch's, the FX short name, an alias), or
/// nullptr. Names are case-sensitive and carry no `torch.` prefix.
[[nodiscard]] constexpr const DtypeInfo* find_dtype(std::string_view name) noexcept {
  for (const DtypeInfo& d : dtypes)
    if (d.named(name)) return &d;
  return nullptr;
}

/// The dtype whose FX annotation name is `name` ("f32", "bf16", "b8"), or nullptr: FX printouts
/// use only these names.
[[nodiscard]] constexpr const DtypeInfo* find_fx_dtype(std::string_view name) noexcept {
  for (const DtypeInfo& d : dtypes)
    if (!name.empty() && d.fx_name == name) return &d;
  return nullptr;
}

/// Bytes per element of the dtype called `name` by any of its names, or nullopt when unknown.
[[nodiscard]] constexpr std::optional<std::size_t> itemsize_of(std::string_view name) noexcept {
  if (const DtypeInfo* d = find_dtype(name)) return d->itemsize;
  return std::nullopt;
}

/// Bytes per element of the dtype whose FX annotation name is `name`, or nullopt.
[[nodiscard]] constexpr std::optional<std::size_t> fx_itemsize_of(std::string_view name) noexcept {
  if (const DtypeInfo* d = find_fx_dtype(name)) return d->itemsize;
  return std::nullopt;
}

namespace detail {
/// No name (torch, FX or alias) belongs to two dtypes, and every dtype has a torch name, an FX
/// name and a nonzero size.
[[nodiscard]] constexpr bool dtype_table_is_consistent() noexcept {
  for (std::size_t i = 0; i < dtypes.size(); ++i) {
    const DtypeInfo& d = dtypes[i];
    if (d.torch_name.empty() || d.fx_name.empty() || d.itemsize == 0) return false;
    for (std::size_t j = 0; j < dtypes.size(); ++j) {
      if (j == i) continue;
      if (dtypes[j].named(d.torch_name) || dtypes[j].named(d.fx_name) || dtypes[j].named(d.alias)) return false;
    }
  }
  return true;
}
}  // namespace detail

static_assert(detail::dtype_table_is_consistent(), "ctshard::dtypes: a name is ambiguous or an entry incomplete");

}  // namespace ctshard
