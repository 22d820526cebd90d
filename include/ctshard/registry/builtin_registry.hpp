#pragma once
/// \file registry/builtin_registry.hpp
/// The registry of every rule family ctshard ships.

#include "ctshard/registry/collective_ops.hpp"
#include "ctshard/registry/einsum_ops.hpp"
#include "ctshard/registry/fused_kernel_ops.hpp"
#include "ctshard/registry/layout_ops.hpp"
#include "ctshard/registry/math_ops.hpp"
#include "ctshard/registry/nn_ops.hpp"
#include "ctshard/registry/op_registry.hpp"
#include "ctshard/registry/pointwise_ops.hpp"
#include "ctshard/registry/random_ops.hpp"
#include "ctshard/registry/tensor_ops.hpp"
#include "ctshard/registry/training_ops.hpp"
#include "ctshard/registry/view_ops.hpp"

namespace ctshard {

/// A registry with all built-in rule families (einsum family, pointwise, math, nn, views, tensor ops, collectives, fused kernels, training ops, layout ops, random ops), einsum Partial rows as
/// DTensor writes them (`EinsumLinearity::dtensor`) unless told otherwise.
[[nodiscard]] inline OpRegistry make_builtin_registry(EinsumLinearity linearity = EinsumLinearity::dtensor) {
  OpRegistry r;
  register_einsum_ops(r, linearity);
  register_pointwise_ops(r);
  register_math_ops(r);
  register_nn_ops(r);
  register_view_ops(r);
  register_tensor_ops(r);
  register_collective_ops(r);
  register_fused_kernel_ops(r);
  register_training_ops(r);
  register_layout_ops(r);
  register_random_ops(r);
  return r;
}

/// The shared built-in registry (DTensor einsum linearity), built on first use.
[[nodiscard]] inline const OpRegistry& builtin_registry() {
  static const OpRegistry registry = make_builtin_registry();
  return registry;
}

}  // namespace ctshard
