#pragma once
/// \file registry/op_rule.hpp
/// OpRule (what a rule factory returns for one call) and RuleFactory.

#include <functional>

#include "ctshard/registry/op_call.hpp"
#include "ctshard/rules/full_mesh_filter.hpp"
#include "ctshard/rules/placeholder_fill.hpp"
#include "ctshard/rules/rule_set.hpp"
#include "ctshard/rules/uneven_inputs.hpp"

namespace ctshard {

/// What a factory returns for one call: the single-dim rules over the call's tensor inputs
/// (outputs first, no all-Replicate row), which unshardable input targets still pass the
/// shardability filter (DTensor `allow_uneven_sharding`, see UnevenInputs), an optional full-mesh
/// filter, and how the placeholders are filled for the runtime inputs.
struct OpRule {
  RuleSet rules;
  UnevenInputs uneven_inputs = UnevenInputs::reject;
  FullMeshFilter filter{};  ///< optional full-mesh check (DTensor `full_mesh_strategy_filter`)
  /// Shard kinds for the placeholders (PlaceholderFill): ctshard's `shard_from_partial` (a Partial
  /// input reaches the sharded rows by reduce-scatter) unless the rule says otherwise; the einsum
  /// and pointwise families, which the reference cases pin to DTensor's rows, carry
  /// `PlaceholderFill::dtensor`, and so does every rule of a registry built with
  /// `RegistryOptions::placeholder_fill = PlaceholderFill::dtensor`.
  PlaceholderFill placeholder_fill = PlaceholderFill::shard_from_partial;
};

/// A rule factory: builds the rules for one call. Throws ctshard::error when the call does not fit
/// (wrong tensor count, bad argument), naming the op and the problem.
using RuleFactory = std::function<OpRule(const OpCall&)>;

}  // namespace ctshard
