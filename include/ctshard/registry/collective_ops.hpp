#pragma once
/// \file registry/collective_ops.hpp
/// Communication ops already written into a graph (Megatron's `_c10d_functional.*`, vLLM's
/// `vllm.all_reduce`). ctshard plans on logical (global) tensors, so such an op is
/// value-preserving there: its output keeps the input's placement (passthrough_single_dim_strategy)
/// and ctshard prices only the redistribution its own plan adds. This differs from DTensor, which
/// never sees these ops (they live in per-rank graphs below it).

#include "ctshard/registry/op_registry.hpp"
#include "ctshard/rules/passthrough_rules.hpp"

namespace ctshard {

/// Registers `_c10d_functional.{all_reduce, all_gather_into_tensor, reduce_scatter_tensor,
/// wait_tensor}.default` and `vllm.all_reduce.default`. The output shape comes from the call's
/// output annotation when known (all-gather / reduce-scatter change dim 0), else equals the input's.
/// Throws ctshard::error when the call has no tensor input.
inline void register_collective_ops(OpRegistry& registry) {
  registry.add({"_c10d_functional.all_reduce.default", "_c10d_functional.all_gather_into_tensor.default",
                "_c10d_functional.reduce_scatter_tensor.default", "_c10d_functional.wait_tensor.default", "vllm.all_reduce.default"},
               [](const OpCall& call) {
                 if (call.tensors.size() != 1) throw error("ctshard: op '" + call.op + "' takes one tensor input, got " + std::to_string(call.tensors.size()));
                 const TensorShape& in = call.tensors[0].shape;
                 const TensorShape out = call.outputs.empty() || call.outputs[0].shape.rank == 0 ? in : call.outputs[0].shape;
                 return OpRule{passthrough_single_dim_strategy(in, out), UnevenInputs::keep_current};
               });
}

}  // namespace ctshard
