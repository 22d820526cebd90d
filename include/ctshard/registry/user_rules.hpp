#pragma once
/// \file registry/user_rules.hpp
/// Rules for the user's own ops (custom kernels, `torch.library.custom_op`, logging ops): a fixed
/// single-dim strategy (the RuleSet rows the built-in rules use, `S?(d)` placeholders included),
/// a kind (identity, pointwise, replicate), or a factory of the call, turned into the RuleFactory
/// an OpRegistry holds. The factory checks each call against the rule (tensor count, every Shard
/// and placeholder dim within its tensor's rank) and names the rule and the entry when it does
/// not fit, so a user rule is expanded and filtered exactly like a built-in one
/// (StrategyEnumerator). DTensor's counterparts: `register_single_dim_strategy` and
/// `register_sharding`.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ctshard/core/placement.hpp"
#include "ctshard/core/tensor_shape.hpp"
#include "ctshard/error.hpp"
#include "ctshard/registry/op_call.hpp"
#include "ctshard/registry/op_rule.hpp"
#include "ctshard/rules/passthrough_rules.hpp"
#include "ctshard/rules/placeholder_fill.hpp"
#include "ctshard/rules/pointwise_rules.hpp"
#include "ctshard/rules/rule_set.hpp"
#include "ctshard/rules/uneven_inputs.hpp"

namespace ctshard {

/// How a user rule's rows are expanded: which unshardable inputs still pass the shardability
/// filter and how its placeholders are filled (OpRule's fields; defaults as for a built-in rule).
struct UserRuleOptions {
  UnevenInputs uneven_inputs = UnevenInputs::reject;
  PlaceholderFill placeholder_fill = PlaceholderFill::shard_from_partial;
};

/// Rules written by kind instead of rows, for one call's tensor inputs:
enum class RuleKind : std::uint8_t {
  /// output = its one tensor input (a logging or debugging op): `[S?(d), S?(d)]` for every dim,
  /// then `[P(r), P(r)]` for sum, avg, max, min (passthrough_single_dim_strategy). One output.
  identity,
  /// elementwise over broadcast tensor inputs (DTensor `_common_pointwise_single_dim_strategy`):
  /// `[S?(i), per input S?(aligned dim) or R]` for every dim of the broadcast shape, no Partial
  /// row (a nonlinear op does not commute with a sum; give the rows that do as extra rows). One
  /// output.
  pointwise,
  /// only the all-Replicate row (the framework's): every operand replicated.
  replicate,
};

/// "identity", "pointwise", "replicate".
[[nodiscard]] constexpr std::string_view to_string(RuleKind k) noexcept {
  return k == RuleKind::identity ? "identity" : k == RuleKind::pointwise ? "pointwise" : "replicate";
}

/// A kind by name. Throws ctshard::error naming the text and the rule `op` otherwise.
[[nodiscard]] inline RuleKind parse_rule_kind(std::string_view op, std::string_view name) {
  if (name == "identity") return RuleKind::identity;
  if (name == "pointwise") return RuleKind::pointwise;
  if (name == "replicate") return RuleKind::replicate;
  throw error("ctshard: rule '" + std::string(op) + "': unknown kind '" + std::string(name) + "' (identity, pointwise or replicate)");
}

namespace detail {
/// "output k" / "input k" for operand `column` of a rule with `outputs` outputs.
[[nodiscard]] inline std::string user_rule_operand(std::size_t column, std::size_t outputs) {
  return column < outputs ? "output " + std::to_string(column) : "input " + std::to_string(column - outputs);
}

/// Checks rule `rules` of op `op` against one call and sets its ranks: as many tensor inputs as
/// the rows have input columns, every Shard / placeholder dim below its tensor's rank (outputs
/// checked where the graph annotates a non-0-d output), no mixed-up all-Replicate row (dropped: it
/// is the framework's). Throws ctshard::error naming the rule, the row and the entry.
[[nodiscard]] inline RuleSet checked_user_rows(std::string_view op, const RuleSet& rules, const OpCall& call) {
  const std::string who = "ctshard: rule '" + std::string(op) + "'";
  if (call.tensors.size() != rules.num_inputs())
    throw error(who + ": its rows have " + std::to_string(rules.num_outputs()) + " output(s) + " + std::to_string(rules.num_inputs()) +
                " input(s) = " + std::to_string(rules.width()) + " entries, but the call has " + std::to_string(call.tensors.size()) +
                " tensor input(s)");
  RuleSet out(rules.num_outputs(), rules.num_inputs());
  std::vector<int> ranks(rules.width(), -1);
  for (std::size_t k = 0; k < rules.width(); ++k) {
    if (k >= rules.num_outputs()) ranks[k] = static_cast<int>(call.tensors[k - rules.num_outputs()].shape.rank);
    else if (k < call.outputs.size() && call.outputs[k].shape.rank > 0) ranks[k] = static_cast<int>(call.outputs[k].shape.rank);
    else ranks[k] = rules.rank(k);
    out.set_rank(k, ranks[k]);
  }
  for (std::size_t r = 0; r < rules.size(); ++r) {
    const auto row = rules.row(r);
    if (is_replicate_row(row)) continue;
    for (std::size_t k = 0; k < row.size(); ++k) {
      if ((row[k].is_any_shard() || row[k].is_placeholder()) && ranks[k] >= 0 && row[k].dim >= ranks[k])
        throw error(who + ": row " + std::to_string(r) + ", entry " + std::to_string(k) + " (" + user_rule_operand(k, rules.num_outputs()) +
                    "): " + to_string(row[k]) + " names dim " + std::to_string(row[k].dim) + " of a rank-" + std::to_string(ranks[k]) + " tensor");
    }
    out.add_row_of(rules, r);
  }
  return out;
}

/// The rows of kind `kind` for one call (`outputs` outputs). Throws ctshard::error naming the
/// rule when the call does not fit the kind (identity: not one tensor input; identity and
/// pointwise: not one output; pointwise: shapes that do not broadcast).
[[nodiscard]] inline RuleSet user_kind_rows(std::string_view op, RuleKind kind, std::size_t outputs, const OpCall& call) {
  const std::string who = "ctshard: rule '" + std::string(op) + "' (" + std::string(to_string(kind)) + ")";
  if (kind == RuleKind::replicate) {
    RuleSet rules(outputs, call.tensors.size());
    for (std::size_t i = 0; i < call.tensors.size(); ++i) rules.set_rank(outputs + i, static_cast<int>(call.tensors[i].shape.rank));
    return rules;
  }
  if (outputs != 1) throw error(who + ": has one output, not " + std::to_string(outputs));
  if (kind == RuleKind::identity) {
    if (call.tensors.size() != 1) throw error(who + ": takes one tensor input, the call has " + std::to_string(call.tensors.size()));
    return passthrough_single_dim_strategy(call.tensors[0].shape, call.tensors[0].shape);
  }
  std::vector<TensorShape> shapes;
  for (const auto& t : call.tensors) shapes.push_back(t.shape);
  try {
    return pointwise_single_dim_strategy(shapes);
  } catch (const error& e) {
    throw error(who + ": " + e.what());
  }
}

/// Appends the rows of `extra` (same width) to `rules`. Throws ctshard::error naming the rule.
inline void append_user_rows(std::string_view op, RuleSet& rules, const RuleSet& extra) {
  if (extra.empty()) return;
  if (extra.width() != rules.width() || extra.num_outputs() != rules.num_outputs())
    throw error("ctshard: rule '" + std::string(op) + "': its extra rows have " + std::to_string(extra.width()) + " entries, the call's rows " +
                std::to_string(rules.width()) + " (" + std::to_string(rules.num_outputs()) + " output(s) + " + std::to_string(rules.num_inputs()) +
                " input(s))");
  for (std::size_t r = 0; r < extra.size(); ++r) rules.add_row_of(extra, r);
}
}  // namespace detail

/// What one user rule says: fixed `rows` (a single-dim strategy, placeholders allowed), or rows of
/// `kind` built per call plus `rows` as extra rows (a pointwise op's sound Partial rows). `outputs`
/// counts the output columns (kinds; fixed rows carry their own count).
struct UserRule {
  std::string op;  ///< overload name: "mylib.rope.default"
  std::optional<RuleKind> kind{};
  std::size_t outputs = 1;  ///< with `kind`: output columns
  RuleSet rows{};           ///< fixed rows, or with `kind` extra rows (may be empty)
  UserRuleOptions options{};
};

/// The rule factory of a user rule: per call, the kind's rows plus the extra rows, or the fixed
/// rows, checked against the call (detail::checked_user_rows). Throws ctshard::error (at call
/// time, naming the rule and the entry) when the call does not fit; at construction when a rule
/// has neither kind nor rows.
[[nodiscard]] inline RuleFactory user_rule_factory(const UserRule& rule) {
  if (!rule.kind && rule.rows.width() == 0) throw error("ctshard: rule '" + rule.op + "': give rows or a kind");
  return [rule](const OpCall& call) {
    RuleSet rows = rule.rows;
    if (rule.kind) {
      rows = detail::user_kind_rows(rule.op, *rule.kind, rule.outputs, call);
      detail::append_user_rows(rule.op, rows, rule.rows);
    }
    return OpRule{detail::checked_user_rows(rule.op, rows, call), rule.options.uneven_inputs, {}, rule.options.placeholder_fill};
  };
}

/// The rule factory of a factory of the call that returns its single-dim rows (shape- or
/// argument-dependent rules), checked as fixed rows are. Errors the factory throws are prefixed
/// with the rule's name.
template <class F>
[[nodiscard]] RuleFactory user_rows_factory(std::string op, F rows_of, UserRuleOptions options = {}) {
  return [op = std::move(op), rows_of = std::move(rows_of), options](const OpCall& call) {
    RuleSet rows;
    try {
      rows = rows_of(call);
    } catch (const error& e) {
      const std::string what = e.what();
      if (what.find("rule '" + op + "'") != std::string::npos) throw;
      throw error("ctshard: rule '" + op + "': " + what);
    }
    return OpRule{detail::checked_user_rows(op, rows, call), options.uneven_inputs, {}, options.placeholder_fill};
  };
}

}  // namespace ctshard
