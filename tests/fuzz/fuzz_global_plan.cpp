// libFuzzer target: the whole-graph plan end to end (`plan --global`). The first byte picks the
// mesh (1-3 dims), free inputs, every candidate and the cost model; the rest is FX graph text. A
// graph that reads must plan globally or raise ctshard::error (a budget, a range); the request
// runs under a 0.5 s deadline and a 256 MiB budget. Checked: the global plan's objective is never
// above the greedy plan's, its lower bound never above its objective, "optimal" means a zero
// gap, and the JSON document builds.
#include <cstdlib>
#include <vector>

#include "ctshard/fx/reader.hpp"
#include "ctshard/graph/global_plan.hpp"
#include "ctshard/graph/greedy.hpp"
#include "ctshard/report/commands.hpp"
#include "ctshard/report/global_report.hpp"
#include "ctshard/report/plan_report.hpp"
#include "fuzz_common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::uint8_t selector = data[0];
  ctshard::fx::Graph graph;
  try {
    graph = ctshard::fx::parse_fx_graph(ctshard::fuzz::as_text(data + 1, size - 1), "<fuzz>");
  } catch (const ctshard::fx::parse_error&) {
    return 0;
  }
  static const std::vector<std::int64_t> meshes[] = {{2}, {4}, {2, 2}, {2, 4}, {2, 2, 2}, {1, 4}, {3}, {8}};
  ctshard::graph::PlanOptions options;
  options.mesh = meshes[selector & 7u];
  options.cost_model = (selector & 8u) != 0 ? ctshard::CostModel::consistent : ctshard::CostModel::dtensor;
  ctshard::graph::GlobalOptions global;
  global.time_limit_ms = 500;
  global.max_memory_mib = 256;
  global.free_inputs = (selector & 16u) != 0;
  global.every_candidate = (selector & 32u) != 0;
  if ((selector & 64u) != 0) global.memory_budget_gib = 1e-6;
  try {
    const ctshard::graph::GlobalPlan g = ctshard::graph::global_plan(graph, options, global, ctshard::report::registry_for("sound"));
    if (g.built && g.result.feasible) {
      if (g.result.cost > g.graph.evaluate(g.greedy_labels) && g.graph.feasible(g.greedy_labels)) std::abort();
      if (g.result.lower_bound > g.result.cost) std::abort();
      if (g.result.optimal && g.optimality_gap != 0) std::abort();
    }
    (void)ctshard::report::json_text(ctshard::report::global_plan_json(g, options, global));
  } catch (const ctshard::error&) {
  } catch (const ctshard::solve::time_limit_reached&) {  // out of time in the greedy plan: no plan at all
  }
  return 0;
}
