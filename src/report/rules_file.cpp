// The rules file of `--rules FILE` (report/rules_file.hpp).
#include "ctshard/report/rules_file.hpp"

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "ctshard/core/spec.hpp"
#include "ctshard/error.hpp"

namespace ctshard::report {
namespace {

/// A JSON value's text for an error message, cut to 80 characters.
std::string shown(const nlohmann::json& v) {
  std::string t = v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return t.size() > 80 ? t.substr(0, 77) + "..." : t;
}

UnevenInputs parse_uneven(const std::string& who, const nlohmann::json& v) {
  for (UnevenInputs u : {UnevenInputs::reject, UnevenInputs::keep_current, UnevenInputs::keep_existing_shards, UnevenInputs::unchecked})
    if (v.is_string() && v.get<std::string>() == to_string(u)) return u;
  throw error(who + ": uneven must be \"reject\", \"keep_current\", \"keep_existing_shards\" or \"unchecked\", got " + shown(v));
}

}  // namespace

UserRule parse_user_rule(const nlohmann::json& rule, const std::string& what) {
  if (!rule.is_object()) throw error(what + ": a rule is an object {\"op\": ..., \"rows\" or \"kind\": ...}, got " + shown(rule));
  if (!rule.contains("op") || !rule["op"].is_string() || rule["op"].get<std::string>().empty())
    throw error(what + ": \"op\" must name the op (\"mylib.rope.default\")");
  UserRule out;
  out.op = rule["op"].get<std::string>();
  const std::string who = what + " ('" + out.op + "')";
  for (const auto& [key, value] : rule.items())
    if (key != "op" && key != "kind" && key != "rows" && key != "outputs" && key != "uneven")
      throw error(who + ": unknown key \"" + key + "\" (op, kind, rows, outputs, uneven)");
  if (rule.contains("kind")) {
    if (!rule["kind"].is_string()) throw error(who + ": kind must be a string, got " + shown(rule["kind"]));
    try {
      out.kind = parse_rule_kind(out.op, rule["kind"].get<std::string>());
    } catch (const error& e) {
      throw error(what + ": " + e.what());
    }
  }
  if (rule.contains("outputs")) {
    const auto& o = rule["outputs"];
    if (!o.is_number_integer() || o.get<std::int64_t>() < 1 || o.get<std::int64_t>() > static_cast<std::int64_t>(max_rule_operands))
      throw error(who + ": outputs must be an integer from 1 to " + std::to_string(max_rule_operands) + ", got " + shown(o));
    out.outputs = o.get<std::size_t>();
  }
  if (rule.contains("uneven")) out.options.uneven_inputs = parse_uneven(who, rule["uneven"]);
  if (!rule.contains("rows")) {
    if (!out.kind) throw error(who + ": give \"rows\" or a \"kind\" (identity, pointwise, replicate)");
    return out;
  }
  const auto& rows = rule["rows"];
  if (!rows.is_array() || (rows.empty() && !out.kind))
    throw error(who + ": rows must be a non-empty list of rows (lists of placements: [\"S?(0)\", \"S?(0)\", \"R\"]), got " + shown(rows));
  std::size_t width = 0;
  for (std::size_t r = 0; r < rows.size(); ++r) {
    const auto& row = rows[r];
    if (!row.is_array() || row.empty())
      throw error(who + ": row " + std::to_string(r) + " must be a non-empty list of placements, got " + shown(row));
    if (r == 0) {
      width = row.size();
      if (width <= out.outputs && !out.kind)
        throw error(who + ": row 0 has " + std::to_string(width) + " entries for " + std::to_string(out.outputs) +
                    " output(s): a row lists the outputs, then the tensor inputs");
      if (width > max_rule_operands)
        throw error(who + ": row 0 has " + std::to_string(width) + " entries, more than max_rule_operands (" + std::to_string(max_rule_operands) +
                    ")");
      out.rows = RuleSet(out.outputs, width - std::min(width, out.outputs));
    } else if (row.size() != width) {
      throw error(who + ": row " + std::to_string(r) + " has " + std::to_string(row.size()) + " entries, row 0 has " + std::to_string(width) + " (" +
                  std::to_string(out.outputs) + " output(s) + " + std::to_string(width - out.outputs) + " input(s))");
    }
    std::vector<Placement> cells;
    for (std::size_t k = 0; k < row.size(); ++k) {
      const std::string entry = who + ": row " + std::to_string(r) + ", entry " + std::to_string(k);
      if (!row[k].is_string()) throw error(entry + ": a placement is a string (\"R\", \"S(0)\", \"S?(1)\", \"P(sum)\"), got " + shown(row[k]));
      try {
        cells.push_back(parse_placement(row[k].get<std::string>()));
      } catch (const error& e) {
        throw error(entry + ": " + e.what());
      }
    }
    out.rows.add(cells);
  }
  return out;
}

std::vector<UserRule> parse_rules_json(const nlohmann::json& doc, const std::string& source) {
  const nlohmann::json* list = &doc;
  if (doc.is_object()) {
    for (const auto& [key, value] : doc.items())
      if (key != "rules") throw error(source + ": unknown key \"" + key + "\" (a rules file is {\"rules\": [...]})");
    if (!doc.contains("rules")) throw error(source + ": a rules file is {\"rules\": [...]}: no \"rules\"");
    list = &doc["rules"];
  }
  if (!list->is_array()) throw error(source + ": \"rules\" must be a list of rules, got " + shown(*list));
  std::vector<UserRule> out;
  std::set<std::string, std::less<>> seen;
  for (std::size_t i = 0; i < list->size(); ++i) {
    out.push_back(parse_user_rule((*list)[i], source + ": rule " + std::to_string(i)));
    if (!seen.insert(out.back().op).second) throw error(source + ": rule " + std::to_string(i) + ": a second rule for '" + out.back().op + "'");
  }
  return out;
}

std::vector<UserRule> read_rules_file(const std::string& path) {
  if (std::filesystem::is_directory(path)) throw error("ctshard: --rules: '" + path + "' is a directory");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw error("ctshard: --rules: cannot open '" + path + "'");
  std::ostringstream text;
  text << in.rdbuf();
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(text.str());
  } catch (const nlohmann::json::parse_error& e) {
    throw error("ctshard: --rules " + path + ": not JSON: " + e.what());
  }
  return parse_rules_json(doc, path);
}

OpRegistry with_user_rules(const OpRegistry& base, std::span<const UserRule> rules) {
  OpRegistry out = base;
  for (const UserRule& r : rules) {
    RuleFactory f = user_rule_factory(r);
    if (out.contains(r.op)) out.replace(r.op, f);
    else out.add(r.op, f);
  }
  return out;
}

void check_user_rule_fallbacks(const graph::Plan& plan, std::span<const UserRule> rules) {
  for (const auto& node : plan.nodes) {
    if (!node.fallback) continue;
    for (const UserRule& r : rules)
      if (r.op == node.op && node.reason.starts_with("ctshard: rule '"))
        throw error("ctshard plan: node '" + node.name + "' (" + node.op + "): " + node.reason);
  }
}

}  // namespace ctshard::report
