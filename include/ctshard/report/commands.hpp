#pragma once
/// \file commands.hpp
/// The `ctshard` subcommands as functions over structured options: each builds the JSON document
/// of its `--json` output, and a text rendering of the same content. The command line and the
/// Python package both call these, so the two give the same fields. Errors are ctshard::error
/// (or fx::parse_error for graph text) naming the offending text.

#include <cstdint>
#include <iosfwd>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "ctshard/cost/mesh_topology.hpp"
#include "ctshard/registry/builtin_registry.hpp"
#include "ctshard/registry/op_registry.hpp"
#include "ctshard/select/enumerator.hpp"

namespace ctshard::report {

/// The text of a JSON document as the tool prints it (`indent` as nlohmann's dump): bytes that are
/// not UTF-8 (a graph file may hold them in names or literals) become U+FFFD instead of throwing.
template <class Json>
[[nodiscard]] std::string json_text(const Json& doc, int indent = -1) {
  return doc.dump(indent, ' ', false, Json::error_handler_t::replace);
}

/// `ctshard table`: one op's full filtered strategy table, per-input costs, and the choice.
struct TableOptions {
  std::string op;                                 ///< mm, bmm, addmm, baddbmm, dot, einsum:EQ, pointwise:NAME, or an op name
  std::vector<std::vector<std::int64_t>> shapes;  ///< global shape of each tensor input ({} = 0-d)
  std::vector<std::int64_t> mesh;                 ///< mesh sizes, mesh dim 0 first
  std::vector<std::string> inputs;                ///< current spec of each tensor input ("S(0)R")
  std::int64_t devices_per_host = 8;              ///< cost model: devices sharing a host
  std::vector<std::string> dtypes{"float32"};     ///< one dtype for every tensor, or one per tensor
  std::string einsum_linearity = "dtensor";       ///< "dtensor" (reference fidelity) or "sound"
  std::string partial_passthrough = "ctshard";    ///< "ctshard" or "dtensor" (PartialPassthrough)
  /// "ctshard" (ctshard's rules) or "dtensor" (RuleProfile::dtensor: DTensor 2.13's rows exactly;
  /// implies einsum_linearity and partial_passthrough "dtensor").
  std::string rule_set = "ctshard";
  CostModel cost_model = CostModel::dtensor;  ///< how redistributions are priced
  /// "enumerate" (table default: every row, DTensor's full expansion) or "search" (the exact
  /// search: only the chosen row, any table size; choice_json's default).
  std::string algo = "enumerate";
  /// Non-tensor positional arguments (JSON array). Without any "$i" item they follow the tensors;
  /// a string "$i" (also inside lists) stands for tensor input i, and then the array is the whole
  /// argument list: tensors must then be referenced in order $0, $1, ... each once.
  nlohmann::ordered_json args = nlohmann::ordered_json::array();
  /// Keyword arguments (JSON object; "$i" allowed), in call order: tensors among them are numbered
  /// in that order, as in the op's signature.
  nlohmann::ordered_json kwargs = nlohmann::ordered_json::object();
  /// When set, the op's rule comes from this registry (a copy of the built-in one with the user's
  /// rules, with_user_rules), which the caller keeps alive; otherwise from registry_for() of the
  /// three names above.
  const OpRegistry* registry = nullptr;
};

/// The `table --json` document: op, aten_op, shapes, mesh, devices_per_host, itemsize, inputs,
/// allow_uneven, uneven_inputs, placeholder_fill ("dtensor" or "shard_from_partial": how the rule
/// fills its placeholders), algo, rules_raw, rules, num_combinations, filtered, strategies, choice,
/// plain_min_index (the reference cases' format), rule_set ("ctshard" / "dtensor"). With `algo` "search", `strategies` holds the
/// chosen row only (found by the exact search; `choice.index` and `plain_min_index` are positions
/// among the surviving rows, counted without listing them; `filtered.op_filter` is absent, and
/// the two indices null, when an op filter would need more than 2^20 rows walked). Throws
/// ctshard::error naming the bad input ("above the enumeration limit" for "enumerate" beyond 2^20
/// rows).
nlohmann::json table_json(const TableOptions& options);

/// Only the chosen row of the table, without listing the table: {out, in, cost (per input, µs),
/// total, choice: {rule[, index]}}; `algo` "search" (the exact search) or "enumerate". `index` is
/// given when the table has at most 2^20 candidate rows (or with "enumerate"). Throws like
/// table_json().
nlohmann::json choice_json(const TableOptions& options);

/// A table request resolved to its parts: mesh, tensor metas (itemsize per tensor), current
/// specs, the op call, and the op's rule. Throws like table_json().
struct PreparedTable {
  MeshTopology mesh;
  std::vector<TensorMeta> tensors;
  std::vector<std::size_t> itemsizes;
  std::vector<Spec> specs;
  OpCall call;
  const RuleFactory* factory = nullptr;
  OpRule rule;
};
PreparedTable prepare_table(const TableOptions& options);

/// Text rendering of a table_json() document: one row per strategy, the chosen one marked `*`.
void print_table(const nlohmann::json& table, std::ostream& out);

/// `ctshard cost`: price one redistribution and list its steps.
struct CostOptions {
  std::vector<std::int64_t> shape;  ///< global shape ({} = 0-d)
  std::vector<std::int64_t> mesh;   ///< mesh sizes, mesh dim 0 first
  std::string from, to;             ///< current and target spec text
  std::int64_t devices_per_host = 8;
  std::string dtype = "float32";
  CostModel cost_model = CostModel::dtensor;
};

/// The `cost --json` document: shape ("8x8"), mesh, devices_per_host, from, to, bytes, steps
/// ({mesh_dim, from, to, collective, bytes, cost_us}), cost_us. Throws ctshard::error.
nlohmann::json cost_json(const CostOptions& options);

/// Text rendering of a cost_json() document.
void print_cost(const nlohmann::json& cost, std::ostream& out);

/// `ctshard ops --json`: {ops: [names], count}.
nlohmann::json ops_json();

/// The registry for an einsum-linearity policy name ("dtensor" or "sound"), a Partial passthrough
/// name ("ctshard" or "dtensor", PartialPassthrough) and a rule set name ("ctshard" or "dtensor",
/// RuleProfile: "dtensor" implies the other two as "dtensor", whatever they say). Throws
/// ctshard::error for another name.
const OpRegistry& registry_for(const std::string& einsum_linearity, const std::string& partial_passthrough = "ctshard",
                               const std::string& rule_set = "ctshard");

/// A rule set by name ("ctshard", "dtensor"). Throws ctshard::error naming the text.
RuleProfile parse_rule_set(std::string_view name);

/// Deepest nesting of lists (and objects) in table arguments: `[[1]]` is 2 levels. Deeper
/// --args / --kwargs JSON (or Python arguments) is refused with ctshard::error.
inline constexpr std::size_t max_arg_nesting = 64;
/// Longest --args / --kwargs JSON text, in bytes (64 MiB).
inline constexpr std::size_t max_arg_text_bytes = std::size_t{64} << 20;
/// Most values (numbers, strings, lists, ... each counted once) in one --args / --kwargs
/// document or Python args / kwargs: 2^18 (262,144). With the text limit alone, the reader's
/// memory grew ~110 bytes per input byte (a 24 MB `[1,1,...]` took 2.7 GB); with this bound and
/// max_arg_count it stays below ~100 MB whatever the text (docs/robustness.md).
inline constexpr std::size_t max_arg_values = std::size_t{1} << 18;
/// Most arguments of one table call (positional plus keyword), as the FX reader's
/// max_call_arguments: each is a full argument record (~100 bytes) copied into the op call.
inline constexpr std::size_t max_arg_count = 4096;

/// A JSON value as an op argument: integer, float, bool, null (None), string, "$i" (tensor input
/// i: `integer` holds i), or a list of these (int_list, tensor_list, or a mixed `list`; a list of
/// integers or of tensor references is read straight into `ints`). Throws ctshard::error naming
/// the value otherwise (objects, integers beyond int64, lists nested deeper than
/// max_arg_nesting).
OpArg op_arg_from_json(const nlohmann::ordered_json& value);

/// Parses the JSON text of `table --args` / `--kwargs` (`option` names it in errors). Throws
/// ctshard::error for invalid JSON (message cut to 200 characters of the text), nesting deeper
/// than max_arg_nesting, more than max_arg_values values, or text longer than
/// max_arg_text_bytes.
nlohmann::ordered_json parse_arg_json(std::string_view option, const std::string& text);

/// A cost as JSON: a number, or the string "inf" (reference-case convention).
nlohmann::json cost_value(double us);

/// A cost model by name ("dtensor", "consistent"). Throws ctshard::error naming the text.
CostModel parse_cost_model(std::string_view name);

/// A selection algorithm by name ("search", "enumerate"). Throws ctshard::error naming the text.
SelectAlgo parse_algo(std::string_view name);

/// Splits on a separator, keeping empty parts.
std::vector<std::string> split(const std::string& text, char sep);

/// Mesh sizes from text ("8", "2x4", "2x2x2"): the one mesh parser of the tools. Throws
/// ctshard::error naming the text (empty, a size below 1, more than max_mesh_dims dims).
std::vector<std::int64_t> parse_mesh(std::string_view text);

/// Shapes from `--shapes` text: "6x8,8x12", "scalar" for a 0-d tensor. Throws ctshard::error.
std::vector<std::vector<std::int64_t>> parse_shapes(const std::string& text);

/// "8x8" for {8, 8}, "scalar" for {}.
std::string shape_text(const std::vector<std::int64_t>& shape);

}  // namespace ctshard::report
