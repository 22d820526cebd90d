#pragma once
/// \file report/rules_file.hpp
/// The rules file of `--rules FILE` (and of `ctshard.register_rule`): the user's own ops' rules as
/// JSON, read into UserRules and added to a copy of a registry.
///
///     {"rules": [{"op": "tg.log_tensor.default", "kind": "identity"},
///                {"op": "mylib.rope.default", "outputs": 1,
///                 "rows": [["S?(0)", "S?(0)", "R"], ["S?(1)", "S?(1)", "R"]]}]}
///
/// Each rule: `op` (overload name), and `rows` (single-dim rows `[out..., in...]` of placement text:
/// `R`, `S(d)`, `_S(d, sf)`, `P(sum|avg|max|min)`, `S?(d)` placeholders), or `kind` (identity,
/// pointwise, replicate; `rows` then adds rows to the kind's), `outputs` (output columns, default
/// 1), `uneven` (UnevenInputs name, default "reject"). A rule for an op with a built-in rule
/// replaces it (as DTensor's `register_sharding` does).

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "ctshard/graph/greedy.hpp"
#include "ctshard/registry/op_registry.hpp"
#include "ctshard/registry/user_rules.hpp"

namespace ctshard::report {

/// One rule object of a rules document (`what` names it in errors: "rules.json: rule 1"). Throws
/// ctshard::error naming the rule and the entry: a missing or non-string `op`, an unknown key or
/// kind, neither `rows` nor `kind`, a row that is not a list of placement strings, rows of
/// different lengths, `outputs` not below the row length (fixed rows need an input), a bad
/// placement text.
UserRule parse_user_rule(const nlohmann::json& rule, const std::string& what);

/// The rules of a rules document: `{"rules": [rule, ...]}` (or a bare list of rules). `source`
/// names the document in errors. Throws ctshard::error as parse_user_rule, and for another shape,
/// or for two rules of one op.
std::vector<UserRule> parse_rules_json(const nlohmann::json& doc, const std::string& source);

/// parse_rules_json() of the file at `path`. Throws ctshard::error naming the file when it cannot
/// be read or is not JSON (the parser's message and position).
std::vector<UserRule> read_rules_file(const std::string& path);

/// A copy of `base` with `rules` added (a rule for an op `base` has replaces its factory; the
/// op's cost function stays). `base` itself is not changed.
OpRegistry with_user_rules(const OpRegistry& base, std::span<const UserRule> rules);

/// Throws ctshard::error naming the node and the rule's message when a node of `plan` whose op
/// has a user rule in `rules` fell back because the rule did not fit the call (a wrong rule is an
/// error, not a silent Replicate).
void check_user_rule_fallbacks(const graph::Plan& plan, std::span<const UserRule> rules);

}  // namespace ctshard::report
