#pragma once
/// \file registry/op_registry.hpp
/// OpRegistry: aten overload name ("aten.mm.default") → the op's single-dim rule factory and,
/// optionally, its cost function (FLOPs and bytes of a call, registry/op_compute.hpp). A rule
/// written once serves every overload it is registered under; so does its cost function, given in
/// the same `add`.

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ctshard/error.hpp"
#include "ctshard/registry/op_call.hpp"
#include "ctshard/registry/op_compute.hpp"
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

/// Maps aten overload names to rule factories and cost functions.
class OpRegistry {
 public:
  /// Registers `factory` under every name in `names`; the op costs elementwise_compute. Throws
  /// ctshard::error on a duplicate name.
  void add(std::initializer_list<std::string_view> names, const RuleFactory& factory) { add(names, ComputeFunction{}, factory); }
  /// Registers the cost function `compute` and the rule factory `factory` under every name in
  /// `names`. Throws ctshard::error on a duplicate name.
  void add(std::initializer_list<std::string_view> names, const ComputeFunction& compute, const RuleFactory& factory) {
    for (auto name : names) {
      if (!rules_.emplace(std::string(name), Entry{factory, compute}).second)
        throw error("ctshard::OpRegistry: op '" + std::string(name) + "' registered twice");
    }
  }
  /// Replaces the factory of the registered op `name` by `factory`; its cost function stays.
  /// Throws ctshard::error when `name` has no rule.
  void replace(std::string_view name, const RuleFactory& factory) {
    const auto it = rules_.find(name);
    if (it == rules_.end()) throw error("ctshard::OpRegistry: cannot replace the rule of '" + std::string(name) + "': not registered");
    it->second.factory = factory;
  }
  /// Gives the registered op `name` the cost function `compute` (empty: elementwise_compute).
  /// Throws ctshard::error when `name` has no rule.
  void set_compute(std::string_view name, const ComputeFunction& compute) {
    const auto it = rules_.find(name);
    if (it == rules_.end()) throw error("ctshard::OpRegistry: cannot set the cost of '" + std::string(name) + "': not registered");
    it->second.compute = compute;
  }
  /// The cost function registered for `op`, or nullptr when it has none (or no rule).
  [[nodiscard]] const ComputeFunction* find_compute(std::string_view op) const {
    const auto it = rules_.find(op);
    return it == rules_.end() || !it->second.compute ? nullptr : &it->second.compute;
  }
  /// FLOPs and bytes of one call of `op` over global `inputs` and `outputs`: its cost function's,
  /// or elementwise_compute for an op without one (or without a rule).
  [[nodiscard]] OpCompute compute(std::string_view op, std::span<const TensorMeta> inputs, std::span<const TensorMeta> outputs) const {
    if (const ComputeFunction* f = find_compute(op)) return (*f)(inputs, outputs);
    return elementwise_compute(inputs, outputs);
  }
  /// Marks the registered op `name` as one whose factory reads OpCall::current (its rows follow the
  /// current input specs, as DTensor 2.13's op-strategy functions do): callers that cache rules per
  /// call must then key them by the current specs too. Throws ctshard::error when `name` has no rule.
  void mark_reads_current_specs(std::string_view name) {
    if (find(name) == nullptr) throw error("ctshard::OpRegistry: cannot mark '" + std::string(name) + "': not registered");
    current_readers_.emplace(name);
  }
  /// True when the factory of `op` reads OpCall::current (mark_reads_current_specs).
  [[nodiscard]] bool reads_current_specs(std::string_view op) const { return current_readers_.find(op) != current_readers_.end(); }
  /// Number of ops whose factory reads OpCall::current.
  [[nodiscard]] std::size_t current_spec_readers() const noexcept { return current_readers_.size(); }
  /// The factory for `op`, or nullptr when the op has no rule.
  [[nodiscard]] const RuleFactory* find(std::string_view op) const {
    const auto it = rules_.find(op);
    return it == rules_.end() ? nullptr : &it->second.factory;
  }
  /// True when `op` has a rule.
  [[nodiscard]] bool contains(std::string_view op) const { return find(op) != nullptr; }
  /// Registered names, sorted.
  [[nodiscard]] std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const auto& [k, v] : rules_) out.push_back(k);
    return out;
  }
  /// Number of registered op names.
  [[nodiscard]] std::size_t size() const noexcept { return rules_.size(); }

 private:
  struct Entry {
    RuleFactory factory;
    ComputeFunction compute;  ///< empty: elementwise_compute
  };
  std::map<std::string, Entry, std::less<>> rules_;
  std::set<std::string, std::less<>> current_readers_;
};

}  // namespace ctshard
