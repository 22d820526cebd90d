#pragma once
/// \file registry/op_registry.hpp
/// OpRegistry: aten overload name ("aten.mm.default") → the op's single-dim rule factory and,
/// optionally, its cost function (FLOPs and bytes of a call, registry/op_compute.hpp). A rule
/// written once serves every overload it is registered under; so does its cost function, given in
/// the same `add`.

#include <algorithm>
#include <concepts>
#include <functional>
#include <map>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "ctshard/error.hpp"
#include "ctshard/registry/op_call.hpp"
#include "ctshard/registry/op_compute.hpp"
#include "ctshard/registry/op_rule.hpp"
#include "ctshard/registry/user_rules.hpp"
#include "ctshard/rules/rule_set.hpp"

namespace ctshard {

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
  /// Registers `factory` under `name` (one name; a user's op). Throws ctshard::error on a
  /// duplicate name (`replace` changes a registered op's rule).
  void add(std::string_view name, const RuleFactory& factory) { add({name}, factory); }
  /// Registers a user's fixed single-dim strategy under `name`: rows `[outputs..., inputs...]`
  /// valid on one mesh dim, `S?(d)` placeholders allowed (an all-Replicate row is dropped: the
  /// framework inserts it). Expanded and filtered like a built-in rule; each call is checked
  /// against it (user_rule_factory: tensor count, dims within rank; errors name the rule and the
  /// entry). Throws ctshard::error on a duplicate name.
  void add(std::string_view name, const RuleSet& rows, const UserRuleOptions& options = {}) {
    add(name, user_rule_factory(UserRule{std::string(name), std::nullopt, rows.num_outputs(), rows, options}));
  }
  /// Registers a frozen constexpr strategy (SingleDimStrategy, `make_single_dim_strategy<G>()`:
  /// anything with `to_rule_set()`) under `name`, as add(name, RuleSet).
  template <class Strategy>
  requires requires(const Strategy& s) {
    { s.to_rule_set() } -> std::convertible_to<RuleSet>;
  }
  void add(std::string_view name, const Strategy& strategy, const UserRuleOptions& options = {}) {
    add(name, RuleSet(strategy.to_rule_set()), options);
  }
  /// Registers a rule of kind `kind` (RuleKind: identity, pointwise, replicate) under `name`, with
  /// `outputs` output columns and the rows of `extra` (same width as the call's rows) appended.
  void add(std::string_view name, RuleKind kind, std::size_t outputs = 1, const RuleSet& extra = {}, const UserRuleOptions& options = {}) {
    add(name, user_rule_factory(UserRule{std::string(name), kind, outputs, extra, options}));
  }
  /// Registers a factory of the call that returns the op's single-dim rows (`RuleSet(const OpCall&)`:
  /// rules that depend on shapes or arguments), its rows checked against each call as fixed rows.
  template <class RowsOf>
  requires std::is_invocable_r_v<RuleSet, RowsOf, const OpCall&> &&
      (!std::is_invocable_r_v<OpRule, RowsOf, const OpCall&>)void add(std::string_view name, RowsOf rows_of, const UserRuleOptions& options = {}) {
    add(name, user_rows_factory(std::string(name), std::move(rows_of), options));
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
