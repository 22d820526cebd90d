// The graph layer as a library: graphs built in memory (GraphBuilder), the greedy plan with its
// record (what the cost-graph builder takes as input), and each rule factory run once per call.
#include <catch2/catch.hpp>

#include <limits>
#include <string>
#include <vector>

#include "ctshard/fx/reader.hpp"
#include "ctshard/graph/global_plan.hpp"
#include "ctshard/graph/greedy.hpp"
#include "ctshard/graph/ir.hpp"
#include "ctshard/registry.hpp"

using namespace ctshard;

namespace {

/// Two identical mm nodes and a relu: y = relu(x @ w) @ w2 with w2 of w's shape transposed back.
graph::Graph two_mm_graph() {
  graph::GraphBuilder b("two_mm");
  b.input("x", "f32[64, 128]").input("w", "f32[128, 128]");
  b.call("mm", "aten.mm.default", {b.ref("x"), b.ref("w")}, "f32[64, 128]");
  b.call("relu", "aten.relu.default", {b.ref("mm")}, "f32[64, 128]");
  b.call("mm_1", "aten.mm.default", {b.ref("relu"), b.ref("w")}, "f32[64, 128]");
  return std::move(b).finish({"mm_1"});
}

constexpr const char* kTwoMmText = R"(class GraphModule(torch.nn.Module):
    def forward(self, x: "f32[64, 128]", w: "f32[128, 128]"):
        mm: "f32[64, 128]" = torch.ops.aten.mm.default(x, w)
        relu: "f32[64, 128]" = torch.ops.aten.relu.default(mm)
        mm_1: "f32[64, 128]" = torch.ops.aten.mm.default(relu, w)
        return (mm_1,)
)";

}  // namespace

TEST_CASE("graph: a graph built in memory plans as the same graph read from FX text", "[graph]") {
  graph::PlanOptions o;
  o.placements.emplace("x", parse_spec("RS(1)"));
  o.placements.emplace("w", parse_spec("S(0)R"));
  const graph::Plan built = graph::plan_graph(two_mm_graph(), o, builtin_registry());
  const graph::Plan read = graph::plan_graph(fx::parse_fx_graph(kTwoMmText), o, builtin_registry());
  REQUIRE(built.nodes.size() == 3);
  REQUIRE(read.nodes.size() == 3);
  CHECK(built.total_cost_us == read.total_cost_us);
  CHECK(built.total_cost_us > 0);
  for (std::size_t i = 0; i < built.nodes.size(); ++i) {
    CHECK(built.nodes[i].inputs == read.nodes[i].inputs);
    CHECK(built.nodes[i].outputs == read.nodes[i].outputs);
  }
}

TEST_CASE("graph: GraphBuilder refuses duplicate names, unknown references and bad types, naming them", "[graph]") {
  graph::GraphBuilder b("bad");
  b.input("x", "f32[4, 4]");
  CHECK_THROWS_WITH(b.input("x", "f32[4]"), Catch::Contains("'x' already exists"));
  CHECK_THROWS_WITH(b.ref("nosuch"), Catch::Contains("no node named 'nosuch'"));
  CHECK_THROWS_WITH(b.call("y", "aten.relu.default", {graph::Arg::make_node("nosuch")}, "f32[4, 4]"), Catch::Contains("reads 'nosuch'"));
  CHECK_THROWS_WITH(b.input("z", "q32[4]"), Catch::Contains("'q32[4]'"));
  CHECK_THROWS_WITH(b.item("g", "x", 3, "f32[4, 4]"), Catch::Contains("result 3 of 'x'"));
  // a type built by the program is checked as an annotation is (an unknown dtype was a
  // std::invalid_argument from the planner)
  CHECK_THROWS_WITH(b.input("t", graph::TensorType{"zz", {8, 4}}), "graph builder: the type of 't' has an unknown dtype 'zz'");
  CHECK_THROWS_WITH(b.input("u", graph::TensorType{"f32", {8, -4}}), "graph builder: the type of 'u' has size -4 at dim 1");
  CHECK_THROWS_WITH(b.call("v", "aten.relu.default", {b.ref("x")}, std::vector<graph::TensorType>{graph::TensorType{"zz", {4, 4}}}),
                    Catch::Contains("unknown dtype 'zz'"));
}

TEST_CASE("graph: a Graph filled in field by field is checked by every planner", "[graph]") {
  // the fields are public: a cycle, a dangling reference, a repeated name or an output that is
  // no node was planned (the node fell back, the global plan "optimal"); now check_graph refuses
  graph::Graph good = two_mm_graph();
  const graph::PlanOptions o;
  CHECK_NOTHROW(graph::check_graph(good, "test"));
  graph::Graph cycle = good;  // mm reads relu, defined after it
  cycle.nodes[2].args[0] = graph::Arg::make_node("relu");
  CHECK_THROWS_WITH(graph::plan_graph(cycle, o, builtin_registry()),
                    "ctshard plan: node 'mm' of two_mm reads 'relu', which is not defined before it");
  graph::GlobalOptions g;
  CHECK_THROWS_WITH(graph::global_plan(cycle, o, g, builtin_registry()), Catch::Contains("reads 'relu', which is not defined before it"));
  graph::Graph dangling = good;
  dangling.nodes[4].args[1] = graph::Arg::make_node("ghost");
  CHECK_THROWS_WITH(graph::plan_graph(dangling, o, builtin_registry()), Catch::Contains("node 'mm_1' of two_mm reads 'ghost'"));
  graph::Graph twice = good;
  twice.nodes[3].name = "mm";
  CHECK_THROWS_WITH(graph::plan_graph(twice, o, builtin_registry()), "ctshard plan: two nodes of two_mm are named 'mm'");
  graph::Graph nowhere = good;
  nowhere.outputs = {"nowhere"};
  CHECK_THROWS_WITH(graph::plan_graph(nowhere, o, builtin_registry()), "ctshard plan: the output 'nowhere' of two_mm is not a node");
}

TEST_CASE("graph: global_plan checks its numbers itself, not only through the front ends", "[graph]") {
  graph::PlanOptions o;
  graph::GlobalOptions g;
  g.free_inputs = true;
  g.memory_budget_gib = std::numeric_limits<double>::quiet_NaN();  // was undefined behaviour in the budget's integer conversion
  CHECK_THROWS_WITH(graph::global_plan(two_mm_graph(), o, g, builtin_registry()), Catch::Contains("--memory-budget-gib must be a finite number"));
  g.memory_budget_gib = 0;
  g.device_tflops = 0;  // was "infeasible" with an infinite objective
  CHECK_THROWS_WITH(graph::global_plan(two_mm_graph(), o, g, builtin_registry()),
                    Catch::Contains("--device-tflops must be a finite number > 0, got 0"));
  g.device_tflops = 100;
  g.max_memory_mib = -1;
  CHECK_THROWS_WITH(graph::build_cost_graph(two_mm_graph(), o, g, builtin_registry()), Catch::Contains("--max-memory-mib must be 0"));
}

TEST_CASE("graph: a reader's parse_error is a ctshard::error", "[graph]") {
  try {
    (void)fx::parse_fx_graph("def forward(self, x: \"f32[4]\"):\n    y = torch.ops.aten.relu.default(\n", "broken");
    FAIL("parsed");
  } catch (const ctshard::error& e) {  // (fx::parse_error derives from it)
    CHECK_THAT(e.what(), Catch::Contains("broken:"));
    CHECK(dynamic_cast<const fx::parse_error*>(&e) != nullptr);
  }
}

TEST_CASE("graph: the greedy record holds every source and op node, typed, and each factory runs once per distinct call", "[graph]") {
  OpRegistry counting = builtin_registry();
  int mm_calls = 0;
  counting.replace("aten.mm.default", [&mm_calls, rule = *builtin_registry().find("aten.mm.default")](const OpCall& call) {
    ++mm_calls;
    return rule(call);
  });
  graph::PlanOptions o;
  o.placements.emplace("x", parse_spec("S(0)R"));
  const graph::RecordedPlan r = graph::plan_graph_recorded(two_mm_graph(), o, counting);
  CHECK(mm_calls == 1);  // the two mm calls are the same call: one rule, one table
  REQUIRE(r.record.sources.size() == 2);
  CHECK(r.record.sources[0].name == "x");
  CHECK(r.record.sources[0].spec == parse_spec("S(0)R"));
  CHECK(r.record.sources[0].placeholder);
  REQUIRE(r.record.ops.size() == 3);
  CHECK(r.record.ops[2].name == "mm_1");
  CHECK(r.record.ops[2].rule.has_value());
  CHECK(r.record.ops[2].inputs[0].node == "relu");
  CHECK(r.record.ops[2].planned.outputs == r.plan.nodes[2].outputs);

  // the whole-graph plan builds its cost graph from that record: still one factory run per call
  mm_calls = 0;
  const graph::GlobalPlan g = graph::global_plan(two_mm_graph(), o, graph::GlobalOptions{}, counting);
  CHECK(mm_calls == 1);
  CHECK(g.result.optimal);
  CHECK(g.plan.total_cost_us <= g.greedy.total_cost_us);
}
