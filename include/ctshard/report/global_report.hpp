#pragma once
/// \file global_report.hpp
/// The whole-graph plan as the tools show it: the `plan --global --json` document and its text
/// rendering.

#include <iosfwd>

#include <nlohmann/json.hpp>

#include "ctshard/graph/global_plan.hpp"

namespace ctshard::report {

using graph::GlobalOptions;
using graph::GlobalPlan;
using graph::PlanOptions;

/// The `plan --global --json` document: `plan --json`'s fields (nodes with a `changed` flag)
/// plus algo, lower_bound_us, optimality_gap, proven_optimal, greedy_total_cost_us,
/// greedy_nodes_repaired (the greedy plan's dead-end repairs; the global plan's own nodes are never "repaired"),
/// nodes_changed, changes (per changed node: greedy and global inputs, outputs, cost), solver
/// statistics, and with free inputs objective_us, compute_us and the input placements chosen.
nlohmann::json global_plan_json(const GlobalPlan& plan, const PlanOptions& options, const GlobalOptions& global);

/// Text rendering: the plan as `print_plan` prints it, each changed node's line ending in
/// `   [changed]`, then the comparison with the greedy plan and the proof (lower bound, gap).
void print_global_plan(const GlobalPlan& plan, const PlanOptions& options, const GlobalOptions& global, std::ostream& out);

}  // namespace ctshard::report
