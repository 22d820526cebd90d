#pragma once
/// \file registry/op_compute.hpp
/// OpCompute: what one call of an op computes and moves — FLOPs and bytes of the whole call, from
/// the global metas of its tensor inputs and outputs. An op registers its cost function with its
/// rule (OpRegistry::add); an op without one costs `elementwise_compute`. The whole-graph planner
/// prices its compute term with it (`plan --global --free-inputs`, docs/global_plan.md).

#include <algorithm>
#include <functional>
#include <span>

#include "ctshard/core/tensor_shape.hpp"

namespace ctshard {

/// FLOPs and bytes of one op call over global tensors. `bytes` counts every byte the call reads
/// or writes; the whole-graph planner prices the operands' own bytes (`operand_bytes`) at their
/// local sizes under each candidate and divides what lies beyond them (an intermediate the kernel
/// materializes) among the devices that share the work, as it does the FLOPs.
struct OpCompute {
  double flops = 0;  ///< floating-point operations of the call
  double bytes = 0;  ///< bytes read and written by the call
};

/// A cost function: the call's OpCompute from its tensor inputs (in argument order, as
/// OpCall::tensors) and outputs (OpCall::outputs; a graph may leave some unknown: rank 0). Must
/// not throw: a call the formula does not fit takes `elementwise_compute`.
using ComputeFunction = std::function<OpCompute(std::span<const TensorMeta> inputs, std::span<const TensorMeta> outputs)>;

namespace op_compute {

/// Elements of a tensor, as a double.
[[nodiscard]] constexpr double numel(const TensorMeta& m) noexcept { return static_cast<double>(m.shape.numel()); }

/// Size of the last dim (1 for a 0-d tensor), as a double.
[[nodiscard]] constexpr double last_dim(const TensorMeta& m) noexcept {
  return m.shape.rank == 0 ? 1.0 : static_cast<double>(m.shape[m.shape.rank - 1]);
}

/// Product of dims 1.. of `m` (a weight's elements per output channel), as a double.
[[nodiscard]] constexpr double trailing_numel(const TensorMeta& m) noexcept {
  double k = 1;
  for (std::size_t d = 1; d < m.shape.rank; ++d) k *= static_cast<double>(m.shape[d]);
  return k;
}

/// Elements of the largest operand (inputs, then outputs).
[[nodiscard]] constexpr double largest_numel(std::span<const TensorMeta> inputs, std::span<const TensorMeta> outputs) noexcept {
  double largest = 0;
  for (const auto& m : inputs) largest = std::max(largest, numel(m));
  for (const auto& m : outputs) largest = std::max(largest, numel(m));
  return largest;
}

/// Bytes of every operand: each output written once, then each input read once.
[[nodiscard]] constexpr double operand_bytes(std::span<const TensorMeta> inputs, std::span<const TensorMeta> outputs) noexcept {
  double bytes = 0;
  for (const auto& m : outputs) bytes += m.bytes();
  for (const auto& m : inputs) bytes += m.bytes();
  return bytes;
}

/// Whether the first output is known and not 0-d (the formulas over an output's elements need it).
[[nodiscard]] constexpr bool has_output(std::span<const TensorMeta> outputs) noexcept { return !outputs.empty() && outputs[0].shape.rank > 0; }

}  // namespace op_compute

/// The cost of an op without a cost function: one FLOP per element of its largest operand, and
/// its operands' bytes.
[[nodiscard]] constexpr OpCompute elementwise_compute(std::span<const TensorMeta> inputs, std::span<const TensorMeta> outputs) noexcept {
  return OpCompute{op_compute::largest_numel(inputs, outputs), op_compute::operand_bytes(inputs, outputs)};
}

}  // namespace ctshard
