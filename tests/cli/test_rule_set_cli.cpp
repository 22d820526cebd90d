// `--rule-set ctshard|dtensor` on `ctshard table` and `ctshard plan`: R16's table under both rule
// sets, the JSON `rule_set` field, the options the dtensor rule set implies (and the errors for an
// explicit contrary choice), DTensor's errors, and the greedy / whole-graph planner with it.
#include <catch2/catch.hpp>

#include <string>

#include <nlohmann/json.hpp>

#include "ctshard/fx/reader.hpp"
#include "ctshard/graph/greedy.hpp"
#include "ctshard/registry.hpp"
#include "ctshard/report/commands.hpp"
#include "ctshard/report/plan_report.hpp"
#include "run_tool.hpp"

using namespace ctshard;

namespace {
const std::string r16 =
    "table --op aten._native_batch_norm_legit_no_training.default --shapes 8x16x32x32,16,16,16,16 --mesh 2x2 "
    "--inputs 'S(0)R;RR;RR;RR;RR' --args '[\"$0\",\"$1\",\"$2\",\"$3\",\"$4\",0.1,1e-5]' --json";
}  // namespace

TEST_CASE("rule set cli: R16's table under both rule sets", "[cli][rule_set]") {
  const auto ours = nlohmann::json::parse(run_tool(r16));
  const auto dt = nlohmann::json::parse(run_tool(r16 + " --rule-set dtensor"));
  CHECK(ours["rule_set"] == "ctshard");
  CHECK(dt["rule_set"] == "dtensor");
  CHECK(dt["rules_raw"] == nlohmann::json::parse(R"j([["S?(1)","S?(0)","S?(0)","S?(1)","S?(0)","S?(0)","S?(0)","S?(0)"]])j"));
  CHECK(dt["strategies"].size() == 4);
  const auto& mine = ours["strategies"][ours["choice"]["index"].get<std::size_t>()];
  const auto& theirs = dt["strategies"][dt["choice"]["index"].get<std::size_t>()];
  CHECK(mine["in"][0] == "S(0)R");
  CHECK(mine["total"].get<double>() == 0.0);
  CHECK(theirs["in"][0] == "RS(1)");
  CHECK(theirs["total"].get<double>() > 0.0);
  // the text form names the rule set's rows too
  CHECK(run_tool(r16.substr(0, r16.size() - 7) + " --rule-set dtensor").find("(RS(1), RS(0), RS(0), RS(0), RS(0))") != std::string::npos);
}

TEST_CASE("rule set cli: the dtensor rule set implies DTensor's einsum linearity and Partial passthrough", "[cli][rule_set]") {
  int status = 0;
  const std::string clone = "table --op aten.clone.default --shapes 8 --mesh 2 --inputs 'P(sum)' --json";
  // implied: no Partial-input row of clone
  const auto t = nlohmann::json::parse(run_tool(clone + " --rule-set dtensor"));
  for (const auto& s : t["strategies"]) CHECK(s["in"][0].get<std::string>().find("P(") == std::string::npos);
  // an explicit contrary choice is an error naming the option
  const std::string pp = run_tool_status(clone + " --rule-set dtensor --partial-passthrough ctshard", status);
  CHECK(status == 1);
  CHECK_THAT(pp, Catch::Contains("--rule-set dtensor implies --partial-passthrough dtensor"));
  const std::string lin = run_tool_status("table --op mm --shapes 4x4,4x4 --mesh 2 --inputs 'R;R' --rule-set dtensor --sound", status);
  CHECK(status == 1);
  CHECK_THAT(lin, Catch::Contains("--rule-set dtensor implies --einsum-linearity dtensor"));
  CHECK(run_tool_status("plan --mesh 2x2 --rule-set dtensor --einsum-linearity sound", status).find("implies --einsum-linearity") !=
        std::string::npos);
  CHECK(status == 1);
  // an explicit agreeing one is fine, and --partial-passthrough dtensor alone still works
  CHECK(nlohmann::json::parse(run_tool(clone + " --rule-set dtensor --partial-passthrough dtensor"))["rule_set"] == "dtensor");
  CHECK(nlohmann::json::parse(run_tool(clone + " --partial-passthrough dtensor"))["rule_set"] == "ctshard");
  // an unknown rule set: CLI11 names the choices
  const std::string bad = run_tool_status(clone + " --rule-set pytorch", status);
  CHECK(status != 0);
  CHECK_THAT(bad, Catch::Contains("--rule-set"));
}

TEST_CASE("rule set cli: DTensor's errors, and the planner with the dtensor rule set", "[cli][rule_set]") {
  int status = 0;
  const std::string refused =
      run_tool_status("table --op aten.view.default --shapes 3x4 --mesh 2 --inputs 'S(0)' --args '[[12]]' --rule-set dtensor", status);
  CHECK(status == 1);
  CHECK_THAT(refused, Catch::Contains("DTensor 2.13 raises: Cannot flatten unevenly sharded tensor"));
  // the greedy plan of the embedded block: every node has a rule, rule_set recorded
  const auto greedy = nlohmann::json::parse(run_tool("plan --mesh 2x2 --rule-set dtensor --json"));
  CHECK(greedy["rule_set"] == "dtensor");
  CHECK(greedy["nodes_fallback"] == 0);
  const auto ours = nlohmann::json::parse(run_tool("plan --mesh 2x2 --json"));
  CHECK(ours["rule_set"] == "ctshard");
  // the whole-graph planner offers the rows DTensor runs unchanged: no worse than greedy
  const auto global = nlohmann::json::parse(run_tool("plan --mesh 2x2 --rule-set dtensor --global --json --quiet"));
  CHECK(global["total_cost_us"].get<double>() <= greedy["total_cost_us"].get<double>() + 1e-6);
  CHECK(global["optimality_gap"].get<double>() == 0.0);
}

TEST_CASE("rule set cli: the planner keys its rules by the current specs where DTensor's rows follow them", "[cli][rule_set]") {
  // two identical sum calls on differently placed inputs: DTensor's rows differ, so the cached
  // enumerator of the first call must not serve the second
  const fx::Graph g = fx::parse_fx_graph(R"(
def forward(self, x: "f32[8, 8]", y: "f32[8, 8]"):
    sum_1: "f32[8]" = torch.ops.aten.sum.dim_IntList(x, [0])
    sum_2: "f32[8]" = torch.ops.aten.sum.dim_IntList(y, [0])
    return (sum_1, sum_2)
)",
                                         "two_sums");
  graph::PlanOptions o;
  o.mesh = {2};
  o.placements = {{"x", parse_spec("S(0)")}, {"y", parse_spec("S(1)")}};
  o.rule_set = RuleProfile::dtensor;
  const graph::Plan p = graph::plan_graph(g, o, report::registry_for("dtensor", "ctshard", "dtensor"));
  REQUIRE(p.nodes.size() == 2);
  CHECK(ctshard::graph::spec_texts(p.nodes[0].inputs) == std::vector<std::string>{"S(0)"});
  CHECK(ctshard::graph::spec_texts(p.nodes[0].outputs) == std::vector<std::string>{"P(sum)"});
  CHECK(ctshard::graph::spec_texts(p.nodes[1].inputs) == std::vector<std::string>{"S(1)"});
  CHECK(ctshard::graph::spec_texts(p.nodes[1].outputs) == std::vector<std::string>{"S(0)"});
  CHECK(p.total_cost_us == 0.0);
}
