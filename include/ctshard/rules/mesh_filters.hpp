#pragma once
/// \file rules/mesh_filters.hpp
/// The full-mesh filters of the rule families (DTensor `full_mesh_strategy_filter`s): run-time
/// FullMeshFilter values over the constexpr predicates their rule headers define
/// (`is_evenly_sharded_on`, `has_no_empty_shard_on`, `num_shards_on_dim`,
/// `matrix_dims_stay_aligned`). Kept apart from the generators so that the compile-time tables
/// (`ctshard/ctshard.hpp`) do not pay for `std::function`; the registry attaches them to OpRules.

#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>

#include "ctshard/core/checked.hpp"
#include "ctshard/core/spec.hpp"
#include "ctshard/core/tensor_shape.hpp"
#include "ctshard/rules/conv_pool_rules.hpp"
#include "ctshard/rules/full_mesh_filter.hpp"
#include "ctshard/rules/grouped_mm_rules.hpp"
#include "ctshard/rules/nn_rules.hpp"
#include "ctshard/rules/reduction_rules.hpp"

namespace ctshard {

/// Full-mesh filter of mean-like reductions: keeps a candidate only when the input (operand
/// `input_operand`, outputs first) is evenly sharded on every reduced dim, because the average of
/// unequal-sized local means is not the global mean (P(avg) would be wrong).
/// DTensor `_mean_full_mesh_strategy_filter`.
[[nodiscard]] inline FullMeshFilter evenly_sharded_reduction_filter(std::uint64_t reduced, std::size_t input_operand = 1) {
  return [reduced, input_operand](std::span<const Spec> operands, std::span<const TensorMeta> inputs, MeshSizes mesh) {
    const std::size_t num_outputs = operands.size() - inputs.size();
    return is_evenly_sharded_on(inputs[input_operand - num_outputs].shape, operands[input_operand], mesh, reduced);
  };
}

/// Full-mesh filter of max / min reductions: a device whose shard of a reduced dim is empty has no
/// value to contribute (aten.amax raises on an empty reduced dim), so such a P(max) / P(min) row
/// is dropped. DTensor keeps these rows (`is_tensor_shardable` accepts uneven shards); the
/// simulated mesh shows the local op failing, e.g. amax over 4 rows on 3 devices (2, 2, 0).
[[nodiscard]] inline FullMeshFilter nonempty_reduction_filter(std::uint64_t reduced, std::size_t input_operand = 1) {
  return [reduced, input_operand](std::span<const Spec> operands, std::span<const TensorMeta> inputs, MeshSizes mesh) {
    const std::size_t num_outputs = operands.size() - inputs.size();
    return has_no_empty_shard_on(inputs[input_operand - num_outputs].shape, operands[input_operand], mesh, reduced);
  };
}

/// Full-mesh filter for kernels that fail on an empty input (a convolution whose weight or input
/// has no channels on some rank, batch norm over no elements): keeps a candidate only when no
/// tensor input has an empty shard on any dim (`has_no_empty_shard_on` over all dims).
/// `is_tensor_shardable` lets 4 channels on 3 devices through, which torch.chunk splits 2, 2, 0;
/// the simulated mesh shows the local convolution raising there. `also`, when set, must hold too
/// (an op's own filter).
[[nodiscard]] inline FullMeshFilter nonempty_input_shards_filter(FullMeshFilter also = {}) {
  return [also = std::move(also)](std::span<const Spec> operands, std::span<const TensorMeta> inputs, MeshSizes mesh) {
    const std::size_t num_outputs = operands.size() - inputs.size();
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      const TensorShape& shape = inputs[i].shape;
      const std::uint64_t all = shape.rank == 0 ? 0 : ~std::uint64_t{0} >> (64 - shape.rank);
      if (!has_no_empty_shard_on(shape, operands[num_outputs + i], mesh, all)) return false;
    }
    return !also || also(operands, inputs, mesh);
  };
}

/// Full-mesh filter for the last-dim convolution row: where the input shards its last
/// dim, every shard must hold whole windows, i.e. the dim's size must be a multiple of
/// `stride_last` times the dim's shard count (`num_shards_on_dim`). DTensor
/// `_convolution_full_mesh_strategy_filter` (which also rejects StridedShard and a dim split over
/// two mesh dims, limits of its `_tp_conv` runtime rather than of the math). `input_index` is the
/// tensor input holding the convolution's input (0 for `convolution`, 1 for
/// `convolution_backward`, whose first input is grad_output).
[[nodiscard]] inline FullMeshFilter convolution_last_dim_filter(std::int64_t stride_last, std::size_t input_index = 0) {
  return [stride_last, input_index](std::span<const Spec> operands, std::span<const TensorMeta> inputs, MeshSizes mesh) {
    const TensorShape& shape = inputs[input_index].shape;
    const std::size_t last = shape.rank - 1;
    const Spec& spec = operands[operands.size() - inputs.size() + input_index];
    const std::int64_t shards = num_shards_on_dim(spec, mesh, static_cast<int>(last));
    return shards == 1 || shape[last] % saturating_mul(shards, stride_last) == 0;
  };
}

/// Full-mesh filter for the channel rows of a convolution: no device may hold an empty block of
/// the input's channel dim (operand 1, dim 1) or the weight's two channel dims (operand 2, dims 0
/// and 1) — a convolution with zero output channels raises, and one with zero input channels
/// returns a wrongly shaped output (4 channels over 3 devices chunk as 2, 2, 0). DTensor's batch
/// row does not shard channels; the simulated mesh shows the failures.
[[nodiscard]] inline FullMeshFilter convolution_channel_filter() {
  return [](std::span<const Spec> operands, std::span<const TensorMeta> inputs, MeshSizes mesh) {
    const std::size_t nout = operands.size() - inputs.size();
    return has_no_empty_shard_on(inputs[0].shape, operands[nout], mesh, std::uint64_t{1} << 1) &&
           has_no_empty_shard_on(inputs[1].shape, operands[nout + 1], mesh, std::uint64_t{0b11});
  };
}

/// Full-mesh filter for the channel rows of `convolution_backward` (as `convolution_channel_filter`
/// for the forward): no device may hold an empty block of a channel dim — grad_output's and the
/// input's dim 1, the weight's dims 0 and 1 (4 channels over 3 devices chunk 2, 2, 0; the local
/// kernel raises on an empty weight and leaves grad_bias unset on an empty input). An empty block
/// of the batch is fine (its gradients are zeros).
[[nodiscard]] inline FullMeshFilter convolution_backward_channel_filter() {
  return [](std::span<const Spec> operands, std::span<const TensorMeta> inputs, MeshSizes mesh) {
    const std::size_t nout = operands.size() - inputs.size();
    constexpr std::uint64_t channel = std::uint64_t{1} << 1, both = 0b11;
    return has_no_empty_shard_on(inputs[0].shape, operands[nout], mesh, channel) &&
           has_no_empty_shard_on(inputs[1].shape, operands[nout + 1], mesh, channel) &&
           has_no_empty_shard_on(inputs[2].shape, operands[nout + 2], mesh, both);
  };
}

/// Full-mesh filter of 2-d max pooling (forward and backward): no device may hold an empty block
/// of the channel dim (dim 1 of a batched input, dim 0 of an unbatched one) of any tensor input —
/// the kernel accepts an empty batch but raises on zero channels (3 channels over 3 devices with
/// a StridedShard of split factor 2 leave one device none, and `keep_existing_shards` keeps an
/// input already laid out so).
[[nodiscard]] inline FullMeshFilter pooling_channel_filter(std::size_t rank) {
  return [rank](std::span<const Spec> operands, std::span<const TensorMeta> inputs, MeshSizes mesh) {
    const std::size_t nout = operands.size() - inputs.size();
    const std::uint64_t channel = std::uint64_t{1} << (rank >= 4 ? 1 : 0);
    for (std::size_t i = 0; i < inputs.size(); ++i)
      if (inputs[i].shape.rank == rank && !has_no_empty_shard_on(inputs[i].shape, operands[nout + i], mesh, channel)) return false;
    return true;
  };
}

/// Full-mesh filter of `_grouped_mm`: the kernel (CPU and CUDA alike) needs each matrix's leading
/// stride to be a multiple of 16 bytes, so every split of one of the last two dims of mat_a or
/// mat_b must leave pieces whose size is a multiple of `grouped_mm_alignment(itemsize)`. DTensor's
/// `valid_grouped_mm_strides` checks the one dim that the tensor's strides make the leading
/// stride; ctshard does not see strides and checks both (a split of the other dim may be dropped
/// where DTensor keeps it).
[[nodiscard]] inline FullMeshFilter grouped_mm_alignment_filter() {
  return [](std::span<const Spec> operands, std::span<const TensorMeta> inputs, MeshSizes mesh) {
    const std::size_t first = operands.size() - inputs.size();
    for (std::size_t i = 0; i < 2 && i < inputs.size(); ++i)
      if (!matrix_dims_stay_aligned(inputs[i].shape, operands[first + i], mesh, grouped_mm_alignment(inputs[i].itemsize))) return false;
    return true;
  };
}

}  // namespace ctshard
