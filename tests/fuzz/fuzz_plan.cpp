// libFuzzer target: parse + plan end to end. The first byte picks the mesh (1-3 dims) and the
// einsum linearity; the rest is FX graph text. A graph that reads must plan or raise
// ctshard::error; the plan's JSON document must build.
#include <vector>

#include "ctshard/fx/reader.hpp"
#include "ctshard/graph/greedy.hpp"
#include "ctshard/report/commands.hpp"
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
  static const std::vector<std::int64_t> meshes[] = {{2}, {3}, {2, 2}, {2, 4}, {2, 2, 2}, {1, 4}, {4}, {8}};
  ctshard::graph::PlanOptions options;
  options.mesh = meshes[selector & 7u];
  options.cost_model = (selector & 8u) != 0 ? ctshard::CostModel::consistent : ctshard::CostModel::dtensor;
  try {
    const ctshard::graph::Plan plan =
        ctshard::graph::plan_graph(graph, options, ctshard::report::registry_for((selector & 16u) != 0 ? "sound" : "dtensor"));
    (void)ctshard::report::json_text(ctshard::report::plan_json(plan, options));
  } catch (const ctshard::error&) {}
  return 0;
}
