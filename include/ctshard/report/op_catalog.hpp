#pragma once
/// \file op_catalog.hpp
/// The short op names of `ctshard table --op` (as in the reference cases: mm, bmm, addmm, baddbmm,
/// dot, einsum:EQ, pointwise:NAME) mapped to aten calls of the op registry.

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ctshard/registry/op_call.hpp"

namespace ctshard::report {

/// Where a table call's tensors stand among its positional arguments.
enum class TensorArgs {
  first,       ///< the tensors come first, then the given arguments (a view's target shape, ...)
  referenced,  ///< the given arguments are the whole list and reference the tensors themselves
};

/// Builds the OpCall for an op name (short or full) and tensor input metas; `args` are placed as
/// `layout` says, `kwargs` by name. Throws ctshard::error naming an unknown op (and listing the
/// known names) or a short name given the wrong number of tensors.
OpCall make_table_call(std::string_view op, std::vector<TensorMeta> tensors, std::vector<OpArg> args = {},
                       std::vector<std::pair<std::string, OpArg>> kwargs = {}, TensorArgs layout = TensorArgs::first);

/// Short names `ctshard table` accepts (pointwise names without the prefix), for help texts.
std::vector<std::string> table_op_names();

/// Element size in bytes of a dtype by any name of the dtype table (ctshard/core/dtype.hpp):
/// torch's ("float32", "bfloat16", "float8_e4m3fnuz"), an alias ("float", "half", "long") or the
/// FX short name ("f32", "bf16", "f8e4m3fnuz"). Throws ctshard::error naming an unknown dtype.
std::size_t dtype_itemsize(std::string_view dtype);

}  // namespace ctshard::report
