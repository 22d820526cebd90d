#pragma once
/// \file commands.hpp
/// The `ctshard` subcommands as functions: each builds a JSON document (the `--json` output) and
/// a text rendering of the same content. Errors are ctshard::error with the offending text.

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ctshard/registry/op_registry.hpp"

namespace ctshard::cli {

/// `ctshard table`: one op's full filtered strategy table, per-input costs, and the choice.
struct TableOptions {
  std::string op;       ///< mm, bmm, addmm, baddbmm, dot, einsum:EQ, pointwise:NAME, or an aten name
  std::string shapes;   ///< "6x8,8x12" (0-d: "scalar")
  std::string mesh;     ///< "2x4"
  std::string inputs;   ///< "S(0)R;RS(1)" — one spec per tensor input
  std::int64_t devices_per_host = 8;
  std::string dtype = "float32";
  std::string einsum_linearity = "dtensor";  ///< "dtensor" (reference fidelity) or "sound"
  std::string args = "[]";    ///< JSON array: non-tensor positional arguments after the tensors
  std::string kwargs = "{}";  ///< JSON object: keyword arguments
};
nlohmann::json table_json(const TableOptions& options);

/// The registry for an einsum-linearity policy name ("dtensor" or "sound"). Throws ctshard::error
/// for another name.
const OpRegistry& registry_for(const std::string& einsum_linearity);

/// A JSON value as an op argument: integer, float, bool, null (None), string, list of integers.
/// Throws ctshard::error naming the value otherwise.
OpArg op_arg_from_json(const nlohmann::json& value);
void print_table(const nlohmann::json& table, std::ostream& out);

/// `ctshard cost`: price one redistribution and list its steps.
struct CostOptions {
  std::string shape, mesh, from, to;
  std::int64_t devices_per_host = 8;
  std::string dtype = "float32";
};
nlohmann::json cost_json(const CostOptions& options);
void print_cost(const nlohmann::json& cost, std::ostream& out);

/// A cost as JSON: a number, or the string "inf" (reference-case convention).
nlohmann::json cost_value(double us);

/// Splits on a separator, keeping empty parts.
std::vector<std::string> split(const std::string& text, char sep);

}  // namespace ctshard::cli
