#pragma once
/// \file rules/full_mesh_filter.hpp
/// FullMeshFilter: an op's check of a whole full-mesh candidate row (DTensor
/// `full_mesh_strategy_filter`), over the mesh dim sizes only, so rules can state one without
/// depending on the cost model or the enumerator.

#include <cstdint>
#include <functional>
#include <span>

#include "ctshard/core/spec.hpp"
#include "ctshard/core/tensor_shape.hpp"

namespace ctshard {

/// An op-specific check of a whole full-mesh candidate (DTensor `full_mesh_strategy_filter`):
/// receives one spec per operand (outputs first, then inputs), the input metas and the mesh dim
/// sizes (DTensor's filter receives `mesh`; only its shape matters); false drops the row. Example:
/// mean needs the reduced dims evenly sharded, which depends on the mesh dim sizes.
using FullMeshFilter = std::function<bool(std::span<const Spec> operand_specs, std::span<const TensorMeta> inputs, MeshSizes mesh)>;

}  // namespace ctshard
