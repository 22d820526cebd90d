// libFuzzer target: parse + plan end to end. The first byte picks the mesh (1-3 dims) and the
// einsum linearity; the rest is FX graph text. A graph that reads must plan or raise
// ctshard::error; the plan's JSON document must build.
#include <vector>

#include "commands.hpp"
#include "fuzz_common.hpp"
#include "fx_graph.hpp"
#include "plan.hpp"

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
  ctshard::cli::PlanOptions options;
  options.mesh = meshes[selector & 7u];
  options.cost_model = (selector & 8u) != 0 ? ctshard::CostModel::consistent : ctshard::CostModel::dtensor;
  try {
    const ctshard::cli::Plan plan = ctshard::cli::plan_graph(graph, options, ctshard::cli::registry_for((selector & 16u) != 0 ? "sound" : "dtensor"));
    (void)ctshard::cli::json_text(ctshard::cli::plan_json(plan, options));
  } catch (const ctshard::error&) {}
  return 0;
}
