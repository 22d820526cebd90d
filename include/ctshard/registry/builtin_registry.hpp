#pragma once
/// \file registry/builtin_registry.hpp
/// The registry of every rule family ctshard ships.

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "ctshard/registry/collective_ops.hpp"
#include "ctshard/registry/dtensor_profile.hpp"
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

/// Which rows ctshard gives the ops through which it passes a pending reduction that DTensor
/// 2.13 reduces first (`partial_passthrough_ops`).
enum class PartialPassthrough : std::uint8_t {
  /// ctshard's rows: a Partial input passes through an op linear in it (`[P(r), P(r)]` for clone
  /// and casts, the gradient of the activation backwards and of native_layer_norm_backward); sound
  /// (docs/conformance.md, class ctshard_extension) and never more expensive.
  ctshard,
  /// DTensor 2.13's rows: those ops take no Partial input, and fill their placeholders as DTensor
  /// does (PlaceholderFill::dtensor: a Partial-only input is reduced to Replicate), so a plan
  /// reduces before them exactly where and as DTensor's dispatch does. For plans that DTensor's own op dispatch executes
  /// (`ctshard.torch.run_plan(..., mode="dtensor")`), whose output placements then match.
  dtensor,
};

/// The ops that PartialPassthrough selects rows for: each lists `[.., P(r), ..]` input rows in
/// ctshard and none in DTensor 2.13 (checked op by op against DTensor's tables in
/// tests/python/test_partial_passthrough.py).
inline constexpr std::array<std::string_view, 9> partial_passthrough_ops{
    "aten.clone.default",
    "prims.convert_element_type.default",
    "aten.native_dropout_backward.default",
    "aten.gelu_backward.default",
    "aten.sigmoid_backward.default",
    "aten.tanh_backward.default",
    "aten.threshold_backward.default",
    "aten.silu_backward.default",
    "aten.native_layer_norm_backward.default",
};

/// Which rows the built-in registry gives the ops DTensor 2.13 also has a rule for.
enum class RuleProfile : std::uint8_t {
  /// ctshard's rules: DTensor's semantics plus ctshard's sound extra rows (docs/conformance.md,
  /// class ctshard_extension), without DTensor's rows the simulated mesh finds unsound, and every
  /// single-dim combination for the ops DTensor 2.13 still implements as op-strategy functions.
  ctshard,
  /// DTensor 2.13's rows exactly, unsound ones included (apply_dtensor_profile,
  /// registry/dtensor_profile.hpp), for plans DTensor's own op dispatch executes
  /// (`ctshard.torch.run_plan(mode="dtensor")`). Implies EinsumLinearity::dtensor and
  /// PartialPassthrough::dtensor, whatever RegistryOptions says for those. The rules of the ops
  /// whose DTensor rows follow the current input read OpCall::current and OpCall::mesh_sizes.
  dtensor,
};

/// "ctshard" or "dtensor".
[[nodiscard]] constexpr std::string_view to_string(RuleProfile p) noexcept { return p == RuleProfile::dtensor ? "dtensor" : "ctshard"; }

/// How the built-in registry is assembled (defaults: DTensor's einsum Partial rows, ctshard's
/// Partial passthrough, each rule's own placeholder fill, ctshard's rules). `rule_set` =
/// RuleProfile::dtensor overrides the others with DTensor's choices (EinsumLinearity::dtensor,
/// PartialPassthrough::dtensor, PlaceholderFill::dtensor); PartialPassthrough::dtensor with
/// RuleProfile::ctshard changes only the ops of partial_passthrough_ops, as before the profile
/// existed.
struct RegistryOptions {
  EinsumLinearity einsum_linearity = EinsumLinearity::dtensor;
  PartialPassthrough partial_passthrough = PartialPassthrough::ctshard;
  /// When set, every rule's OpRule::placeholder_fill is this value (`PlaceholderFill::dtensor`:
  /// DTensor's `_fill_single_dim_strategy_placeholders` for every op). Unset: each rule's own —
  /// DTensor's for the einsum and pointwise families (the reference cases pin them), ctshard's
  /// `shard_from_partial` for every other rule. RuleProfile::dtensor sets it to dtensor.
  std::optional<PlaceholderFill> placeholder_fill{};
  RuleProfile rule_set = RuleProfile::ctshard;
};

/// A registry with all built-in rule families (einsum family, pointwise, math, nn, views, tensor
/// ops, collectives, fused kernels, training ops, layout ops, random ops), assembled as `options`
/// say, and the wrapper ops (`register_wrapper_ops`: graphsafe_run_with_rng_state), which take the
/// rules of the ops they wrap from the registry so assembled.
[[nodiscard]] inline OpRegistry make_builtin_registry(const RegistryOptions& requested) {
  RegistryOptions options = requested;
  if (options.rule_set == RuleProfile::dtensor) {
    options.einsum_linearity = EinsumLinearity::dtensor;
    options.partial_passthrough = PartialPassthrough::dtensor;
    options.placeholder_fill = PlaceholderFill::dtensor;
  }
  OpRegistry r;
  register_einsum_ops(r, options.einsum_linearity);
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
  if (options.partial_passthrough == PartialPassthrough::dtensor) {
    for (const std::string_view op : partial_passthrough_ops) {
      r.replace(op, [rule = *r.find(op)](const OpCall& call) {
        OpRule out = rule(call);
        out.rules = without_partial_input_rows(out.rules);
        out.placeholder_fill = PlaceholderFill::dtensor;  // DTensor's table for a Partial-only input too: Replicate
        return out;
      });
    }
  }
  if (options.rule_set == RuleProfile::dtensor) apply_dtensor_profile(r);
  if (options.placeholder_fill) {
    for (const std::string& op : r.names()) {
      r.replace(op, [rule = *r.find(op), fill = *options.placeholder_fill](const OpCall& call) {
        OpRule out = rule(call);
        out.placeholder_fill = fill;
        return out;
      });
    }
  }
  register_wrapper_ops(r);  // last: wrappers take a snapshot of every rule above, options applied
  return r;
}

/// The built-in registry with einsum Partial rows as `linearity` says (DTensor's by default) and
/// ctshard's Partial passthrough.
[[nodiscard]] inline OpRegistry make_builtin_registry(EinsumLinearity linearity = EinsumLinearity::dtensor) {
  return make_builtin_registry(RegistryOptions{.einsum_linearity = linearity});
}

/// The shared built-in registry (DTensor einsum linearity), built on first use.
[[nodiscard]] inline const OpRegistry& builtin_registry() {
  static const OpRegistry registry = make_builtin_registry();
  return registry;
}

}  // namespace ctshard
