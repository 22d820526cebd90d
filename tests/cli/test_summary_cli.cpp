// The plan summary (report/summary_report.hpp, `ctshard plan --summary`): layers that add up to
// the plan, module grouping, the parameters, and the tool's text and JSON.
#include <catch2/catch.hpp>

#include <cmath>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "ctshard/graph/greedy.hpp"
#include "ctshard/registry.hpp"
#include "ctshard/report/plan_report.hpp"
#include "ctshard/report/summary_report.hpp"
#include "run_tool.hpp"

using namespace ctshard;

namespace {

graph::PlanOptions default_options() {
  graph::PlanOptions options;
  options.mesh = {2, 4};
  options.placements = report::default_placements(2);
  return options;
}

}  // namespace

TEST_CASE("summary: the layers of the default block add up to its plan", "[summary]") {
  const graph::Graph g = report::default_graph();
  const graph::PlanOptions options = default_options();
  const graph::RecordedPlan rp = graph::plan_graph_recorded(g, options, builtin_registry());
  const nlohmann::json s = report::plan_summary_json(rp.record, rp.plan, {}, options.mesh, builtin_registry());
  CHECK(s.at("grouping") == "contraction");
  double comm = 0, compute = 0;
  std::size_t nodes = 0;
  for (const auto& l : s.at("layers")) {
    comm += l.at("comm_us").get<double>();
    compute += l.at("compute_us").get<double>();
    nodes += l.at("nodes").get<std::size_t>();
    CHECK(l.at("memory_bytes").get<double>() == l.at("parameter_bytes").get<double>() + l.at("activation_bytes").get<double>());
    if (l.at("name") != "(tail)") CHECK(report::is_layer_anchor(l.at("anchor_op").get<std::string>()));
  }
  CHECK(rp.plan.total_cost_us > 0);
  CHECK(std::abs(comm - rp.plan.total_cost_us) <= 1e-9 * rp.plan.total_cost_us);
  CHECK(std::abs(s.at("comm_us").get<double>() - rp.plan.total_cost_us) <= 1e-9 * rp.plan.total_cost_us);
  CHECK(compute > 0);
  CHECK(nodes == rp.plan.nodes.size());
  // every pinned input is a parameter of some layer, at its placement
  for (const auto& [name, spec] : options.placements) {
    bool found = false;
    for (const auto& p : s.at("parameters"))
      if (p.at("name") == name) {
        found = true;
        CHECK(p.at("placement") == to_string(spec));
        CHECK(!p.at("layer").get<std::string>().empty());
      }
    CHECK(found);
  }
  std::ostringstream text;
  report::print_plan_summary(s, text);
  CHECK(text.str().find("parameters (graph inputs and constants):") != std::string::npos);
}

TEST_CASE("summary: layers by module when the nodes name theirs", "[summary]") {
  const graph::Graph g = report::default_graph();
  const graph::PlanOptions options = default_options();
  const graph::RecordedPlan rp = graph::plan_graph_recorded(g, options, builtin_registry());
  report::SummaryOptions by_module;
  for (std::size_t i = 0; i < rp.record.ops.size(); ++i) by_module.node_layers[rp.record.ops[i].name] = i < 3 ? "first" : "";
  const nlohmann::json s = report::plan_summary_json(rp.record, rp.plan, {}, options.mesh, builtin_registry(), by_module);
  CHECK(s.at("grouping") == "module");
  REQUIRE(s.at("layers").size() == 2);
  CHECK(s.at("layers")[0].at("name") == "first");
  CHECK(s.at("layers")[0].at("nodes") == 3);
  CHECK(s.at("layers")[1].at("name") == "(root)");
}

TEST_CASE("summary: is_layer_anchor names contractions and weighted ops", "[summary]") {
  for (const char* op : {"aten.mm.default", "aten.addmm.default", "aten.bmm.default", "aten.convolution.default", "aten.embedding.default",
                         "aten._scaled_dot_product_efficient_attention.default", "aten.convolution_backward.default"})
    CHECK(report::is_layer_anchor(op));
  for (const char* op : {"aten.add.Tensor", "aten.view.default", "aten.relu.default", "aten.sum.dim_IntList", "prims.convert_element_type.default",
                         "aten._to_copy.default"})
    CHECK_FALSE(report::is_layer_anchor(op));
}

TEST_CASE("summary: plan --summary prints the layers, --json adds the document", "[summary][cli]") {
  const std::string text = run_tool("plan --summary");
  CHECK(text.rfind("plan search of ", 0) == 0);
  CHECK(text.find("\nlayer ") != std::string::npos);
  CHECK(text.find("\ntotal ") != std::string::npos);
  const auto doc = nlohmann::json::parse(run_tool("plan --summary --json"));
  REQUIRE(doc.contains("summary"));
  CHECK(std::abs(doc.at("summary").at("comm_us").get<double>() - doc.at("total_cost_us").get<double>()) < 1e-6);
  CHECK_FALSE(nlohmann::json::parse(run_tool("plan --json")).contains("summary"));
  const auto global = nlohmann::json::parse(run_tool("plan --summary --json --global --quiet"));
  CHECK(std::abs(global.at("summary").at("comm_us").get<double>() - global.at("total_cost_us").get<double>()) < 1e-6);
}
