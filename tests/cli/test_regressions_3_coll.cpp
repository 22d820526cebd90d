// The third set of regression cases (../shared/cases/regressions_3.json), the FX-reader part: R14
// (a dict literal in flex attention's arguments rejected the whole file; flex attention had no
// rule), R12's example graph under the collectives' semantics (R13), and R18's broadcast /
// auto_functionalized_v2 on the real joint graph. Rule-level tests: tests/unit/test_regressions_3_coll.cpp.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "ctshard/fx/reader.hpp"
#include "ctshard/graph/greedy.hpp"
#include "ctshard/registry.hpp"
#include "ctshard/report/plan_report.hpp"
#include "run_tool.hpp"

using namespace ctshard;
using Catch::Matchers::Contains;

namespace {
std::string shared(const std::string& rel) { return std::string(CTSHARD_SHARED_DIR) + "/" + rel; }
std::string data(const std::string& name) { return (std::filesystem::path(__FILE__).parent_path() / "data" / name).string(); }

const graph::PlannedNode& planned(const graph::Plan& plan, const std::string& name) {
  for (const auto& n : plan.nodes)
    if (n.name == name) return n;
  FAIL("no planned node " << name);
  throw;
}

graph::Plan plan_of(const fx::Graph& g, std::vector<std::int64_t> mesh, std::map<std::string, Spec> place = {}) {
  graph::PlanOptions o;
  o.mesh = std::move(mesh);
  o.placements = std::move(place);
  return graph::plan_graph(g, o, builtin_registry());
}
}  // namespace

TEST_CASE("R14: the flex attention graph with a dict argument plans, out and logsumexp follow q's S(0) at cost 0", "[regressions_3][fx]") {
  const std::string path = shared("cases/graphs/flex_attention_dict_arg.fx.txt");
  if (!std::filesystem::exists(path)) {
    WARN("../shared not found: skipping R14");
    return;
  }
  // ctshard plan graphs/flex_attention_dict_arg.fx.txt --mesh 2 --place q=S(0)
  int status = 0;
  const std::string out = run_tool_status("plan " + path + " --mesh 2 --place 'q=S(0)' --json", status);
  REQUIRE(status == 0);
  const auto j = nlohmann::json::parse(out);
  CHECK(j["nodes_fallback"] == 0);
  CHECK(j["total_cost_us"] == 0.0);
  const auto& flex = j["nodes"][0];
  CHECK(flex["op"] == "higher_order.flex_attention");
  CHECK(flex["fallback"] == false);
  // q, k, v and the two block-mask tensors (score_mod / mask_mod are submodules, not inputs)
  CHECK(flex["inputs"] == nlohmann::json::array({"S(0)", "S(0)", "S(0)", "S(0)", "S(0)"}));
  CHECK(flex["outputs"][0] == "S(0)");
  CHECK(flex["outputs"][1] == "S(0)");
  CHECK(flex["cost_us"] == 0.0);
  CHECK(j["nodes"][1]["inputs"] == nlohmann::json::array({"S(0)"}));
  // the dict reads as a dict, the block-mask tuple as a list mixing ints, tensors, None and the mask
  const fx::Graph g = fx::read_fx_graph_file(path);
  const fx::Node* n = g.find("flex_attention");
  REQUIRE(n != nullptr);
  REQUIRE(n->args.size() == 9);
  CHECK(n->args[6].kind == fx::ArgKind::dict);
  CHECK(n->args[6].to_string() == "{'BACKEND': 'AUTO', 'PRESCALE_QK': False, 'ROWS_GUARANTEED_SAFE': False, 'OUTPUT_LOGSUMEXP': True}");
  CHECK(n->args[4].items.size() == 11);
  CHECK(n->args[7] == fx::Arg::make_list({}));
  // heads: q S(1) on 2x2 together with S(0)
  const graph::Plan p = plan_of(g, {2, 2}, {{"q", parse_spec("S(0)S(1)")}});
  CHECK(ctshard::to_string(planned(p, "flex_attention").outputs[0]) == "S(0)S(1)");
  CHECK(p.total_cost_us == 0.0);
}

TEST_CASE("R14: a score_mod that reads the head index keeps heads whole, one that does not may split them", "[regressions_3][fx]") {
  // print_readable of torch.export (nested submodule classes after the forward; `# File` comments)
  const fx::Graph plain = fx::read_fx_graph_file(data("flex_attention_nested.fx.txt"));
  const fx::Graph alibi = fx::read_fx_graph_file(data("flex_attention_nested_alibi.fx.txt"));
  REQUIRE(plain.submodule("sdpa_score0") != nullptr);
  REQUIRE(alibi.submodule("sdpa_score0") != nullptr);
  CHECK(alibi.submodule("sdpa_score0")->graph.uses_placeholder(2) == true);   // score + h
  CHECK(plain.submodule("sdpa_score0")->graph.uses_placeholder(2) == false);  // score * 2 + (q - kv)
  for (const fx::Graph* g : {&plain, &alibi}) {
    const graph::Plan batch = plan_of(*g, {2}, {{"q", parse_spec("S(0)")}});
    CHECK(ctshard::to_string(planned(batch, "flex_attention").outputs[0]) == "S(0)");
    CHECK(batch.total_cost_us == 0.0);
    CHECK(batch.nodes_fallback == 0);
  }
  const graph::Plan heads_plain = plan_of(plain, {2}, {{"q", parse_spec("S(1)")}});
  CHECK(ctshard::to_string(planned(heads_plain, "flex_attention").outputs[0]) == "S(1)");
  CHECK(heads_plain.total_cost_us == 0.0);
  const graph::Plan heads_alibi = plan_of(alibi, {2}, {{"q", parse_spec("S(1)")}});
  CHECK(ctshard::to_string(planned(heads_alibi, "flex_attention").outputs[0]) == "R");
  CHECK(heads_alibi.total_cost_us > 0.0);
}

TEST_CASE("R14: an argument the reader cannot interpret makes only that node fall back, with the reason", "[regressions_3][fx]") {
  const std::string text = R"(class GraphModule(torch.nn.Module):
    def forward(self, x: "f32[8, 4]"):
        a: "f32[8, 4]" = torch.ops.aten.relu.default(x)
        b: "f32[8, 4]" = torch.ops.my.op.default(a, frobnicate(3), {'k': a})
        c: "f32[8, 4]" = torch.ops.aten.neg.default(b)
        return (c,)
)";
  const fx::Graph g = fx::parse_fx_graph(text, "odd.fx");
  const graph::Plan p = plan_of(g, {2}, {{"x", parse_spec("S(0)")}});
  REQUIRE(p.nodes.size() == 3);
  CHECK(p.nodes_fallback == 1);
  CHECK(ctshard::to_string(planned(p, "a").outputs[0]) == "S(0)");
  const graph::PlannedNode& b = planned(p, "b");
  CHECK(b.fallback);
  CHECK_THAT(b.reason, Contains("cannot read the arguments") && Contains("unknown call 'frobnicate(...)'"));
  CHECK(ctshard::graph::spec_texts(b.inputs) == std::vector<std::string>{"R"});  // its one node reference, gathered
  CHECK(b.cost_us > 0.0);
  CHECK(ctshard::to_string(planned(p, "c").outputs[0]) == "R");
  CHECK_FALSE(planned(p, "c").fallback);
  // the CLI prints the reason and exits 0
  const std::string file = (std::filesystem::temp_directory_path() / "ctshard_r14_unreadable.fx.txt").string();
  {
    std::FILE* f = std::fopen(file.c_str(), "w");
    REQUIRE(f != nullptr);
    std::fputs(text.c_str(), f);
    std::fclose(f);
  }
  int status = 0;
  const std::string out = run_tool_status("plan " + file + " --mesh 2 --place 'x=S(0)'", status);
  CHECK(status == 0);
  CHECK_THAT(out, Contains("[fallback: cannot read the arguments: unknown call 'frobnicate(...)'"));
  std::filesystem::remove(file);
}

TEST_CASE("R12 / R13: the greedy dead end through vllm.all_reduce of a P(max) is finite under the collectives' semantics", "[regressions_3]") {
  const std::string path = shared("cases/graphs/greedy_dead_end_pmax.fx.txt");
  if (!std::filesystem::exists(path)) {
    WARN("../shared not found: skipping");
    return;
  }
  const graph::Plan p = plan_of(fx::read_fx_graph_file(path), {2}, {{"x", parse_spec("S(1)")}});
  CHECK(std::isfinite(p.total_cost_us));
  CHECK(p.total_cost_us > 0.0);
  CHECK(ctshard::to_string(planned(p, "amax").outputs[0]) == "P(max)");
  // the sum all-reduce takes R (after the mesh reduces the pending max), no longer refused
  CHECK(ctshard::graph::spec_texts(planned(p, "all_reduce").inputs) == std::vector<std::string>{"R"});
}

TEST_CASE("R18: broadcast and auto_functionalized_v2 on the real joint graph", "[regressions_3][fx]") {
  const std::string path = shared("graphs/more/gpt_tp2_joint.fx.txt");
  if (!std::filesystem::exists(path)) {
    WARN("../shared not found: skipping");
    return;
  }
  const fx::Graph g = fx::read_fx_graph_file(path);
  const graph::Plan p = plan_of(g, {2, 4});
  std::size_t broadcasts = 0, v2 = 0;
  for (const auto& n : p.nodes) {
    if (n.op == "_c10d_functional.broadcast.default") {
      ++broadcasts;
      CHECK_FALSE(n.fallback);
      CHECK(n.cost_us == 0.0);
    }
    if (n.op == "higher_order.auto_functionalized_v2") {
      ++v2;
      CHECK_FALSE(n.fallback);
    }
  }
  CHECK(broadcasts == 5);
  CHECK(v2 == 20);
}
