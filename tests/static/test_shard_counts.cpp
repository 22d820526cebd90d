// Shard counts of one tensor dim: the split-factor decision of core/spec.hpp (`shard_pieces`).
#include <array>
#include <cstdint>

#include "ctshard/core/spec.hpp"

namespace {
using namespace ctshard;
using namespace ctshard::literals;
constexpr std::array<std::int64_t, 2> mesh_2x3{2, 3}, mesh_2x2{2, 2};
constexpr std::array<std::int64_t, 1> mesh_4{4};

static_assert(shard_pieces(Shard(0), 4) == 4 && shard_pieces(StridedShard(0, 2), 4) == 8 && shard_pieces(Replicate(), 4) == 1);
static_assert(num_shards_on_dim("S(0)S(0)"_spec, mesh_2x3, 0) == 6);
static_assert(num_shards_on_dim("S(0)S(1)"_spec, mesh_2x3, 1) == 3 && num_shards_on_dim("S(0)S(1)"_spec, mesh_2x3, 2) == 1);
static_assert(num_shards_on_dim("_S(0, 2)"_spec, mesh_4, 0) == 8);
// the largest local shard (rank 0's torch.chunk pieces): 33 -> 17 -> 9 rows; a StridedShard
// keeps split_factor pieces of its mesh dim's cut, at most the whole dim
static_assert(largest_local_shape(TensorShape{33, 16}, "S(0)S(0)"_spec, mesh_2x2).dims[0] == 9);
static_assert(largest_local_shape(TensorShape{33, 16}, "S(0)S(0)"_spec, mesh_2x2).dims[1] == 16);
static_assert(largest_local_shape(TensorShape{10}, "_S(0, 3)"_spec, std::array<std::int64_t, 1>{2}).dims[0] == 6);  // pieces of 2
static_assert(largest_local_shape(TensorShape{2}, "_S(0, 3)"_spec, std::array<std::int64_t, 1>{2}).dims[0] == 2);
static_assert(largest_local_shape(TensorShape{8, 4}, "RP(sum)"_spec, mesh_2x2).dims[0] == 8);
// FSDP2 + TP: the split factor stands for the later mesh dim's split, counted once
static_assert(num_shards_on_dim("_S(0, 2)S(0)"_spec, mesh_2x2, 0) == 4);
static_assert(num_shards_on_dim("S(0)_S(0, 2)"_spec, mesh_2x2, 0) == 8);
// DTensor num_shards: devices, split factors not counted
static_assert(num_shards("_S(0, 2)S(0)"_spec, mesh_2x2) == 4);
// the running count of one dim, mesh dim by mesh dim (is_tensor_shardable's lower bounds)
constexpr std::int64_t strided_then_shard() {
  std::int64_t devices = 1;
  const std::int64_t first = add_mesh_dim_shards(devices, StridedShard(0, 3), 2);  // 1 * 2 * 3
  const std::int64_t second = add_mesh_dim_shards(devices, Shard(0), 4);           // 2 * 4
  return first * 100 + second * 10 + devices;                                      // devices 8
}
static_assert(strided_then_shard() == 6 * 100 + 8 * 10 + 8);
// saturates instead of wrapping
static_assert(shard_pieces(StridedShard(0, 65535), std::int64_t{1} << 62) == INT64_MAX);
}  // namespace
