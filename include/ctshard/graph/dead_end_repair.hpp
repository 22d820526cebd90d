#pragma once
/// \file dead_end_repair.hpp
/// The dead-end repair of plan_graph (docs/semantics.md, "Dead ends"), defined in
/// src/graph/global_plan.cpp beside the cost-graph builder whose candidate rows it searches.

#include "ctshard/graph/greedy.hpp"

namespace ctshard::graph {

/// Repairs `first`, a greedy pass of `graph` under `options` (data-parallel inputs already
/// resolved) whose total is infinite: while some node's cost is infinite, the earliest node j
/// after which no finite completion exists over the candidate rows of `plan --global
/// --every-candidate` (built from the unrepaired pass) takes the cheapest candidate row from
/// which one exists, and the graph is planned again with that row forced. Returns the finite
/// plan; with `record`, it is replaced by what the final pass saw. Throws
/// ctshard::error naming the dead-end node and why when no finite plan exists over those rows,
/// or when the exact checks do not finish within `options.repair_time_limit_ms`.
Plan repair_dead_ends(const Graph& graph, const PlanOptions& options, const OpRegistry& registry, GreedyRecord* record, Plan first);

}  // namespace ctshard::graph
