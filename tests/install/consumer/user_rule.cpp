// A downstream project's own op: a rotary embedding `mylib.rope.default` whose sharding rule is a
// constexpr single-dim strategy (its table laws checked by static_assert), a logging op and a
// fused bias-GeLU given by kind, all registered on the project's copy of the built-in registry;
// then a block that uses them (tests/data/custom_rules/rope_block.fx.txt, built in memory) is
// planned greedily. Prints `greedy <total_cost_us> <node>=<output spec> ...` like plan_mlp.cpp;
// check_install.cmake compares it with `ctshard plan --rules rope_block.rules.json` on the text.
#include <cstdint>
#include <cstdio>
#include <initializer_list>
#include <utility>
#include <vector>

#include <ctshard/expand/mesh_expansion.hpp>
#include <ctshard/expand/single_dim_strategy.hpp>
#include <ctshard/graph/greedy.hpp>
#include <ctshard/graph/ir.hpp>
#include <ctshard/report/commands.hpp>

namespace {

using namespace ctshard;

/// rope(x [b, s, h, d], freqs [s, d/2]): local on batch and heads (freqs replicated) and on the
/// sequence (freqs sharded alike), never on the rotated dim d.
struct rope_rule {
  constexpr RuleSet operator()() const {
    RuleSet r(1, 2);
    r.add({ShardingPlaceholder(0), ShardingPlaceholder(0), Replicate()});
    r.add({ShardingPlaceholder(1), ShardingPlaceholder(1), ShardingPlaceholder(0)});
    r.add({ShardingPlaceholder(2), ShardingPlaceholder(2), Replicate()});
    return r;
  }
};
constexpr auto rope = make_single_dim_strategy<rope_rule>();
static_assert(table_laws_hold(mesh_expansion_v<rope, 2>));

/// A list of integers as a graph argument (`[1024, 512]`).
graph::Arg ints(std::initializer_list<std::int64_t> values) {
  std::vector<graph::Arg> items;
  for (auto v : values) items.push_back(graph::Arg::make_int(v));
  return graph::Arg::make_list(std::move(items));
}

}  // namespace

int main() {
  OpRegistry registry = report::registry_for("sound");  // a copy: the tool's default rules, plus ours
  registry.add("mylib.rope.default", rope);
  registry.add("mylib.log_tensor.default", RuleKind::identity);
  registry.add("mylib.bias_gelu.default", RuleKind::pointwise);

  graph::GraphBuilder b("rope_block");
  b.input("x", "f32[8, 128, 512]").input("wq", "f32[512, 512]").input("freqs", "f32[128, 64]");
  b.input("w1", "f32[512, 2048]").input("b1", "f32[2048]").input("w2", "f32[2048, 512]");
  b.call("view", "aten.view.default", {b.ref("x"), ints({1024, 512})}, "f32[1024, 512]");
  b.call("mm", "aten.mm.default", {b.ref("view"), b.ref("wq")}, "f32[1024, 512]");
  b.call("view_1", "aten.view.default", {b.ref("mm"), ints({8, 128, 8, 64})}, "f32[8, 128, 8, 64]");
  b.call("rope", "mylib.rope.default", {b.ref("view_1"), b.ref("freqs")}, "f32[8, 128, 8, 64]");
  b.call("log", "mylib.log_tensor.default", {b.ref("rope"), graph::Arg::make_string("q")}, "f32[8, 128, 8, 64]");
  b.call("view_2", "aten.view.default", {b.ref("log"), ints({1024, 512})}, "f32[1024, 512]");
  b.call("mm_1", "aten.mm.default", {b.ref("view_2"), b.ref("w1")}, "f32[1024, 2048]");
  b.call("gelu", "mylib.bias_gelu.default", {b.ref("mm_1"), b.ref("b1")}, "f32[1024, 2048]");
  b.call("mm_2", "aten.mm.default", {b.ref("gelu"), b.ref("w2")}, "f32[1024, 512]");
  const graph::Graph g = std::move(b).finish({"mm_2"});

  graph::PlanOptions options;
  options.mesh = {2, 2};
  options.placements.emplace("x", parse_spec("S(0)R"));
  options.placements.emplace("wq", parse_spec("RS(1)"));
  const graph::Plan plan = graph::plan_graph(g, options, registry);
  if (plan.nodes_fallback != 0) {
    std::printf("a node fell back\n");
    return 1;
  }
  std::printf("greedy %s", report::cost_value(plan.total_cost_us).dump().c_str());
  for (const auto& n : plan.nodes) std::printf(" %s=%s", n.name.c_str(), to_string(n.outputs.front()).c_str());
  std::printf("\n");
  return 0;
}
