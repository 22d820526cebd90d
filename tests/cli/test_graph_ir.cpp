// The graph layer as a library: graphs built in memory (GraphBuilder), the greedy plan with its
// record (what the cost-graph builder takes as input), and each rule factory run once per call.
#include <catch2/catch.hpp>

#include <string>

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
