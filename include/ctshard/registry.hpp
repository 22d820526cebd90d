#pragma once
/// \file registry.hpp
/// Umbrella header of the run-time op registry: `ctshard/runtime.hpp` plus OpCall, OpRegistry, the
/// per-family rule factories (aten overload name → rules for one call) and `builtin_registry()`.
/// For tools that plan real graphs (the CLI, the Python extension).

#include "ctshard/runtime.hpp"

#include "ctshard/registry/builtin_registry.hpp"
#include "ctshard/registry/collective_ops.hpp"
#include "ctshard/registry/einsum_ops.hpp"
#include "ctshard/registry/fused_kernel_ops.hpp"
#include "ctshard/registry/layout_ops.hpp"
#include "ctshard/registry/math_ops.hpp"
#include "ctshard/registry/nn_ops.hpp"
#include "ctshard/registry/op_args.hpp"
#include "ctshard/registry/op_args_ext.hpp"
#include "ctshard/registry/op_call.hpp"
#include "ctshard/registry/op_registry.hpp"
#include "ctshard/registry/pointwise_ops.hpp"
#include "ctshard/registry/random_ops.hpp"
#include "ctshard/registry/tensor_ops.hpp"
#include "ctshard/registry/training_ops.hpp"
#include "ctshard/registry/view_ops.hpp"
