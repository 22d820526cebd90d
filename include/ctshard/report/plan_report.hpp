#pragma once
/// \file plan_report.hpp
/// The greedy plan as the tools show it: the `plan --json` document and its text rendering, and
/// the embedded default graph `ctshard plan` runs without a file.

#include <cstddef>
#include <iosfwd>
#include <map>
#include <span>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "ctshard/core/spec.hpp"
#include "ctshard/graph/greedy.hpp"
#include "ctshard/graph/ir.hpp"
#include "ctshard/registry/op_registry.hpp"

namespace ctshard::report {

using graph::Plan;
using graph::PlanOptions;

/// The `plan --json` document: source, mesh, rule_set, placements, symbols ([{name, value,
/// bound}]), nodes ({name, op, inputs, outputs, cost_us, fallback[, reason][, repaired: true,
/// repair]}), total_cost_us, nodes_with_rule, nodes_fallback, fallback_ops, nodes_repaired, and
/// with --data-parallel data_parallel ({batch_size, batch_size_text, inferred, inputs, note}).
nlohmann::json plan_json(const Plan& plan, const PlanOptions& options);

/// Share of a plan's op nodes (with a rule + fallback) above which `fallback_warning` warns.
inline constexpr double fallback_warning_share = 0.05;

/// The warning for a plan in which more than 5 % of the op nodes fall back (no rule, or a table
/// past `--algo enumerate`'s limit: every input read Replicate; costs then mean little): the count and
/// share, the fallback ops (most frequent first, at most 8) and how to capture an aten-level
/// graph. Empty when the share is at most 5 % or the plan has no op node. The tool prints it on
/// stderr (`plan`, unless --quiet), the Python package as a `warnings.warn`.
std::string fallback_warning(std::size_t nodes_with_rule, std::size_t nodes_fallback, const std::map<std::string, std::size_t>& fallback_ops);

/// Text rendering of a plan: the header (source and mesh, input placements, the data-parallel
/// inputs and the symbols when there are any), one line per op node, then totals and the fallback
/// ops. `node_marks`, when not empty, holds one text per node of `plan.nodes` ("" for none),
/// written at the end of that node's line as the line is written, so it lands there whatever
/// the header holds (a source path with a newline); print_global_plan marks changed nodes so.
void print_plan(const Plan& plan, const PlanOptions& options, std::ostream& out, std::span<const std::string_view> node_marks = {});

/// The embedded default graph (`src/report/default_graph.fx.txt`: one pre-norm transformer block).
graph::Graph default_graph();

/// Placements the embedded default block starts from when none are given: activations
/// batch-sharded on mesh dim 0 (data parallel) and, on a mesh of 2+ dims, Megatron-style tensor
/// parallelism on the last mesh dim (QKV and MLP-up weights split by output rows, attention-out
/// and MLP-down weights by input columns).
std::map<std::string, Spec> default_placements(std::size_t mesh_ndim);

/// Rule coverage of every `*.fx.txt` graph in directory `dir` (`plan --coverage`), each planned
/// greedily under `options` with `registry`, files in name order: `{files: [{file,
/// nodes_with_rule, nodes_fallback, rule_share, fallback_ops}, ...]}`; a graph that does not
/// read or plan is `{file, error}` (one unreadable graph does not hide the others). Throws
/// ctshard::error when `dir` is not a directory or holds no `*.fx.txt` file.
nlohmann::json coverage_json(const std::string& dir, const PlanOptions& options, const OpRegistry& registry);

/// Whether some graph of a coverage_json() document was read.
bool coverage_read_any(const nlohmann::json& coverage);

/// Text rendering of a coverage_json() document: per file its counts and share, then its
/// fallback ops, or its error.
void print_coverage(const nlohmann::json& coverage, std::ostream& out);

}  // namespace ctshard::report
