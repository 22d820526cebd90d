#pragma once
/// \file registry/op_registry.hpp
/// OpRegistry: aten overload name ("aten.mm.default") → the op's single-dim rule factory. A rule
/// written once serves every overload it is registered under.

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "ctshard/error.hpp"
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

/// Maps aten overload names to rule factories.
class OpRegistry {
 public:
  /// Registers `factory` under every name in `names`. Throws ctshard::error on a duplicate name.
  void add(std::initializer_list<std::string_view> names, const RuleFactory& factory) {
    for (auto name : names) {
      if (!rules_.emplace(std::string(name), factory).second) throw error("ctshard::OpRegistry: op '" + std::string(name) + "' registered twice");
    }
  }
  /// Replaces the factory of the registered op `name` by `factory`. Throws ctshard::error when
  /// `name` has no rule.
  void replace(std::string_view name, const RuleFactory& factory) {
    const auto it = rules_.find(name);
    if (it == rules_.end()) throw error("ctshard::OpRegistry: cannot replace the rule of '" + std::string(name) + "': not registered");
    it->second = factory;
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
    const auto it = rules_.find(std::string(op));
    return it == rules_.end() ? nullptr : &it->second;
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
  std::map<std::string, RuleFactory, std::less<>> rules_;
  std::set<std::string, std::less<>> current_readers_;
};

}  // namespace ctshard
