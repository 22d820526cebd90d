// Planning a graph a program holds in memory: a 2-layer MLP (mm, add, relu, mm)
// built with GraphBuilder, planned greedily (as DTensor propagates) and globally (the proven
// optimum) with the compiled built-in registry. Prints one line per plan:
//   <greedy|global> <total_cost_us> <proven 0|1> <node>=<output spec> ...
// (tests/install/check_install.cmake builds this file against the installed package and compares
// it with `ctshard plan --json` on examples/mlp.fx.txt, the same graph as FX text). Input placements: pinned (x RS(1), w1 S(0)R, w2 RS(1)), or with
// argument "free" the batch S(0) on mesh dim 0 and the weights free (the global plan chooses, compute term included).
#include <cstdio>
#include <string>

#include <ctshard/graph/global_plan.hpp>
#include <ctshard/graph/greedy.hpp>
#include <ctshard/graph/ir.hpp>
#include <ctshard/report/commands.hpp>

namespace {

void print(const char* name, const ctshard::graph::Plan& plan, bool proven) {
  // the total as the tool's JSON prints it (shortest round-trip text; "inf" for no finite plan)
  std::printf("%s %s %d", name, ctshard::report::cost_value(plan.total_cost_us).dump().c_str(), proven ? 1 : 0);
  for (const auto& n : plan.nodes) std::printf(" %s=%s", n.name.c_str(), n.outputs.empty() ? "-" : ctshard::to_string(n.outputs.front()).c_str());
  std::printf("\n");
}

}  // namespace

int main(int argc, char** argv) {
  using namespace ctshard;
  const bool pinned = !(argc > 1 && std::string(argv[1]) == "free");
  graph::GraphBuilder b("mlp");
  b.input("x", "f32[64, 128]").input("w1", "f32[128, 256]").input("b1", "f32[256]").input("w2", "f32[256, 64]");
  b.call("mm", "aten.mm.default", {b.ref("x"), b.ref("w1")}, "f32[64, 256]");
  b.call("add", "aten.add.Tensor", {b.ref("mm"), b.ref("b1")}, "f32[64, 256]");
  b.call("relu", "aten.relu.default", {b.ref("add")}, "f32[64, 256]");
  b.call("mm_1", "aten.mm.default", {b.ref("relu"), b.ref("w2")}, "f32[64, 64]");
  const graph::Graph g = std::move(b).finish({"mm_1"});

  graph::PlanOptions options;  // mesh 2x4, DTensor's cost model
  if (pinned) {                // x and w1 sharded on the contracted dim, w2 by columns: greedy pays 19.1 us, the optimum 16.2 us
    options.placements.emplace("x", parse_spec("RS(1)"));
    options.placements.emplace("w1", parse_spec("S(0)R"));
    options.placements.emplace("w2", parse_spec("RS(1)"));
  } else {
    options.placements.emplace("x", parse_spec("S(0)R"));
  }
  const OpRegistry& registry = report::registry_for("sound");  // the tool's default rules (`plan --einsum-linearity sound`)
  print("greedy", graph::plan_graph(g, options, registry), false);
  graph::GlobalOptions global;
  global.free_inputs = !pinned;
  const graph::GlobalPlan best = graph::global_plan(g, options, global, registry);
  print("global", best.plan, best.result.optimal);
  return 0;
}
