#pragma once
/// \file rules/uneven_inputs.hpp
/// UnevenInputs: which unshardable input targets an op's rules let through the shardability
/// filter (DTensor `allow_uneven_sharding`).

namespace ctshard {

/// Which candidate input placements pass the shardability filter although `is_tensor_shardable`
/// rejects them (some tensor dim would have fewer elements than shards: empty shards).
enum class UnevenInputs : unsigned char {
  /// Never: every input target must be shardable (DTensor `allow_uneven_sharding=False`: the
  /// einsum family, max.dim / min.dim, layer norm, embedding, index).
  reject,
  /// When the input already has exactly that spec (DTensor `allow_uneven_sharding=True`:
  /// pointwise ops, dropout).
  keep_current,
  /// When the target makes no new empty shard: every tensor dim it splits into more shards than
  /// elements is split by the same mesh dims with the same placements in the input's current
  /// spec (the empty shards exist already). DTensor 2.13's op-strategy functions (views,
  /// reductions, softmax, split / cat / stack / select / slice, factories `*_like` / `new_*`,
  /// SDPA) follow the input without any shardability check; this keeps their rows that merely
  /// keep an input's existing layout, without creating empty shards that were not there.
  keep_existing_shards,
  /// Always, and the rows are not checked for mixed Partial kinds either: the rule lists its
  /// full-mesh rows itself (a full-mesh filter keeps exactly them). DTensor 2.13's op-strategy
  /// functions that follow the current input apply its spec to every input without
  /// `is_tensor_shardable` (a target may create new empty shards) and pass mixed Partials such as
  /// `P(max)P(sum)` through; the `dtensor` rule set (RuleProfile::dtensor) uses this for those ops
  /// so that it lists exactly their rows. A target that shards a dim the tensor lacks still fails.
  unchecked,
};

/// The name of an UnevenInputs value ("reject", "keep_current", "keep_existing_shards", "unchecked").
[[nodiscard]] constexpr const char* to_string(UnevenInputs u) noexcept {
  switch (u) {
    case UnevenInputs::reject: return "reject";
    case UnevenInputs::keep_current: return "keep_current";
    case UnevenInputs::keep_existing_shards: return "keep_existing_shards";
    case UnevenInputs::unchecked: return "unchecked";
  }
  return "?";
}

}  // namespace ctshard
