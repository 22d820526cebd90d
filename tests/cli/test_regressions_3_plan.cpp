// Regression cases R12 (greedy dead end) and R17 (greedy plan quality) of
// ../shared/cases/regressions_3.json, through the `ctshard` tool, and `plan --data-parallel`.
// The dead-end repair itself is tested on graphs that dead-end whatever the collectives' rules
// are in tests/cli/test_plan_repair.cpp.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include <nlohmann/json.hpp>

#include "run_tool.hpp"

namespace {

std::string shared(const std::string& rel) { return std::string(CTSHARD_SHARED_DIR) + "/" + rel; }

double number(const nlohmann::json& j) { return j.is_string() ? INFINITY : j.get<double>(); }

/// Runs the tool with its standard output and standard error apart.
std::string run_split(const std::string& args, std::string& err, int& status) {
  const std::string err_path = (std::filesystem::temp_directory_path() / "ctshard_regressions_3_plan.err").string();
  const std::string out = run_tool_status(args + " 2>'" + err_path + "' ; exit $?", status);  // run_tool's own 2>&1 then applies to `exit`
  std::ifstream f(err_path);
  err.assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
  std::filesystem::remove(err_path);
  return out;
}

}  // namespace

TEST_CASE("R12: the greedy plan of greedy_dead_end_pmax is finite (exit 0), repaired where it dead-ended, never silently inf", "[regression][R12]") {
  const std::string graph = shared("cases/graphs/greedy_dead_end_pmax.fx.txt");
  if (!std::filesystem::exists(graph)) {
    WARN(graph << " not found: skipping");
    return;
  }
  int status = -1;
  const auto j = nlohmann::json::parse(run_tool_status("plan '" + graph + "' --mesh 2 --place 'x=S(1)' --json", status));
  REQUIRE(status == 0);
  const double total = number(j["total_cost_us"]);
  REQUIRE(std::isfinite(total));
  double sum = 0;
  for (const auto& n : j["nodes"]) sum += number(n["cost_us"]);
  CHECK(total == Approx(sum));
  const auto g = nlohmann::json::parse(run_tool_status("plan '" + graph + "' --mesh 2 --place 'x=S(1)' --global --json --quiet", status));
  REQUIRE(status == 0);
  REQUIRE(g["proven_optimal"] == true);
  const double optimum = number(g["total_cost_us"]);
  CHECK(optimum == Approx(7.2).epsilon(0.01));  // a reduce-scatter of the P(max) row-maxima (the issue's 7.2 us)
  CHECK(total >= optimum - 1e-9);
  CHECK(number(g["greedy_total_cost_us"]) == Approx(total));
  // With a sum all-reduce that refuses Replicate, DTensor's choice at all_reduce is (P(sum)) at inf:
  // the repair takes the cheapest row after which a finite plan exists, here the optimum itself.
  // (A sum all-reduce that takes Replicate has a finite choice there, and nothing is repaired.)
  if (j["nodes_repaired"].get<int>() > 0) {
    CHECK(j["nodes_repaired"] == 1);
    CHECK(j["nodes"][1]["name"] == "all_reduce");
    CHECK(j["nodes"][1]["repaired"] == true);
    CHECK(j["nodes"][1]["repair"].get<std::string>().find("costs inf (input 0 ('amax') P(max) -> P(sum))") != std::string::npos);
    CHECK(j["nodes"][1]["inputs"] == nlohmann::json::array({"S(0)"}));
    CHECK(total == Approx(optimum));
    CHECK_FALSE(j["nodes"][0].contains("repaired"));  // amax keeps DTensor's choice
    CHECK(j["nodes"][0]["outputs"] == nlohmann::json::array({"P(max)"}));
    const std::string text = run_tool_status("plan '" + graph + "' --mesh 2 --place 'x=S(1)'", status);
    CHECK(status == 0);
    CHECK(text.find("[repaired: DTensor's choice (P(sum)) -> P(sum) costs inf") != std::string::npos);
    CHECK(text.find("nodes repaired (dead ends of the greedy pass, docs/semantics.md): 1") != std::string::npos);
  }
  for (const char* model : {"dtensor", "consistent"}) {
    const auto m = nlohmann::json::parse(run_tool_status("plan '" + graph + "' --mesh 2 --place 'x=S(1)' --json --cost-model " + model, status));
    INFO(model);
    CHECK(status == 0);
    CHECK(std::isfinite(number(m["total_cost_us"])));
  }
}

TEST_CASE("R12: no finite plan is a clear error and exit 1, with nothing on standard output", "[regression][R12]") {
  // A P(max) value of one element into a sum all-reduce: its shard rows are unshardable (1 element
  // on 2 devices) and its filter refuses Replicate, so only P(sum) is left, out of reach of P(max).
  int status = -1;
  const auto table = nlohmann::json::parse(
      run_tool_status("table --op vllm.all_reduce.default --shapes 1 --mesh 2 --inputs 'P(max)' --args '[\"tp:0\"]' --json", status));
  REQUIRE(status == 0);
  bool replicate_row = false;
  for (const auto& s : table["strategies"]) replicate_row = replicate_row || s["in"][0] == "R";
  if (replicate_row || table["strategies"].size() != 1) {
    // Once every built-in table has its all-Replicate row, no built-in graph can dead-end
    // (docs/semantics.md, "Dead ends"); tests/cli/test_plan_repair.cpp covers the error.
    WARN("the sum all-reduce now takes Replicate: no built-in op without an all-Replicate row is left for this CLI check");
    return;
  }
  const std::string path = (std::filesystem::temp_directory_path() / "ctshard_no_finite_plan.fx.txt").string();
  {
    std::ofstream f(path);
    f << "class GraphModule(torch.nn.Module):\n    def forward(self, x: \"f32[1]\"):\n"
         "        all_reduce: \"f32[1]\" = torch.ops.vllm.all_reduce.default(x, \"tp:0\")\n        return (all_reduce,)\n";
  }
  for (const char* json : {"", " --json", " --global --json"}) {
    INFO("plan" << json);
    std::string err;
    const std::string out = run_split("plan '" + path + "' --mesh 2 --place 'x=P(max)'" + json, err, status);
    CHECK(status == 1);
    CHECK(out.empty());  // nothing half-written: the plan fails before any output
    CHECK(err.find("error: ctshard plan: no finite plan for " + path +
                   ": node 'all_reduce' (vllm.all_reduce.default) has no finite row: DTensor's choice (P(sum)) -> P(sum) needs input 0 ('x') "
                   "P(max) -> P(sum)") != std::string::npos);
  }
  std::filesystem::remove(path);
}

TEST_CASE("plan --data-parallel: the batch size inferred, the inputs whose dim 0 it is S(0) on mesh dim 0, --place wins", "[plan][data-parallel]") {
  const std::string graph = shared("graphs/more/vit_b16_bw.fx.txt");
  if (!std::filesystem::exists(graph)) {
    WARN(graph << " not found: skipping");
    return;
  }
  int status = -1;
  const auto j = nlohmann::json::parse(run_tool_status("plan '" + graph + "' --mesh 2x4 --data-parallel --place 'mul=RR' --json", status));
  REQUIRE(status == 0);
  const auto& dp = j["data_parallel"];
  CHECK(dp["batch_size"] == 8);
  CHECK(dp["batch_size_text"] == "8");
  CHECK(dp["inferred"] == true);
  CHECK(dp["inputs"].size() == 113);  // tangents_1 [8, 1000], primals_153 [8, 3, 224, 224] and the saved [8, ...] activations
  CHECK(dp["note"] == "");
  CHECK(j["placements"]["tangents_1"] == "S(0)R");
  CHECK(j["placements"]["primals_153"] == "S(0)R");
  CHECK(j["placements"]["mul"] == "RR");               // --place wins
  CHECK_FALSE(j["placements"].contains("view_1"));     // [1576, 768]: batch x tokens flattened, not dim 0 = 8
  CHECK_FALSE(j["placements"].contains("primals_3"));  // a parameter [768, 3, 16, 16]
  CHECK(j["placements"].size() == 113);                // mul is one of the 113
  const auto b = nlohmann::json::parse(run_tool_status("plan '" + graph + "' --mesh 2x4 --data-parallel --batch-size 1576 --json", status));
  REQUIRE(status == 0);
  CHECK(b["data_parallel"]["inferred"] == false);
  CHECK(b["data_parallel"]["inputs"].size() == 60);  // the [1576, ...] saved views
  CHECK(b["placements"]["view_1"] == "S(0)R");
  // batch 1 (BART's layer): below mesh dim 0, nothing placed, the note says why
  const auto bart = nlohmann::json::parse(run_tool_status("plan '" + shared("graphs/bart_layer_bw.fx.txt") + "' --data-parallel --json", status));
  REQUIRE(status == 0);
  CHECK(bart["data_parallel"]["batch_size"] == 1);
  CHECK(bart["data_parallel"]["inputs"].empty());
  CHECK(bart["data_parallel"]["note"] == "batch size 1 is below the size of mesh dim 0 (2): no input placed");
  // the text says what was placed
  const std::string text = run_tool_status("plan '" + graph + "' --mesh 2x4 --data-parallel", status);
  CHECK(text.find("data parallel: batch size 8 (inferred), 113 inputs S(0) on mesh dim 0\n") != std::string::npos);
  // errors
  CHECK(run_tool_status("plan '" + graph + "' --batch-size 8", status).find("--batch-size needs --data-parallel") != std::string::npos);
  CHECK(status == 1);
  CHECK(run_tool_status("plan '" + graph + "' --data-parallel --batch-size 0", status).find("a batch size must be at least 1") != std::string::npos);
  CHECK(status == 1);
}

TEST_CASE("R17: a batch-sharded gradient through the q/k/v gradient cat stays sharded at no cost (the smallest graph of the mechanism)",
          "[regression][R17]") {
  // ViT's attention backward in miniature: three batch-sharded gradients concatenated along the
  // batch dim, then viewed as [3, B, ...] and laid out for the qkv weight gradient. Before the cat
  // row [_S(0, 3), S(0) * 3] the cat moved every piece off dim 0 (an all-to-all), sharding mesh
  // dim 1 on the way, and the following view, permute and mm paid again.
  const std::string path = (std::filesystem::temp_directory_path() / "ctshard_r17_cat.fx.txt").string();
  {
    std::ofstream f(path);
    f << "class GraphModule(torch.nn.Module):\n"
         "    def forward(self, gq: \"f32[8, 12, 16, 4]\", gk: \"f32[8, 12, 16, 4]\", gv: \"f32[8, 12, 16, 4]\", x: \"f32[128, 48]\"):\n"
         "        cat: \"f32[24, 12, 16, 4]\" = torch.ops.aten.cat.default([gq, gk, gv])\n"
         "        view: \"f32[3, 8, 12, 16, 4]\" = torch.ops.aten.view.default(cat, [3, 8, 12, 16, 4])\n"
         "        permute: \"f32[8, 16, 3, 12, 4]\" = torch.ops.aten.permute.default(view, [1, 3, 0, 2, 4])\n"
         "        clone: \"f32[8, 16, 3, 12, 4]\" = torch.ops.aten.clone.default(permute, memory_format = torch.contiguous_format)\n"
         "        view_1: \"f32[128, 144]\" = torch.ops.aten.view.default(clone, [128, 144])\n"
         "        permute_1: \"f32[144, 128]\" = torch.ops.aten.permute.default(view_1, [1, 0])\n"
         "        mm: \"f32[144, 48]\" = torch.ops.aten.mm.default(permute_1, x)\n"
         "        return (mm, view_1)\n";
  }
  int status = -1;
  const auto j = nlohmann::json::parse(
      run_tool_status("plan '" + path + "' --mesh 2x4 --place 'gq=S(0)R' --place 'gk=S(0)R' --place 'gv=S(0)R' --place 'x=S(0)R' --json", status));
  REQUIRE(status == 0);
  CHECK(number(j["total_cost_us"]) == 0.0);
  REQUIRE(j["nodes"].size() == 7);
  CHECK(j["nodes"][0]["name"] == "cat");
  CHECK(j["nodes"][0]["outputs"] == nlohmann::json::array({"_S(0, 3)R"}));
  CHECK(j["nodes"][1]["outputs"] == nlohmann::json::array({"S(1)R"}));    // [3, B, ...]: the batch dim
  CHECK(j["nodes"][4]["outputs"] == nlohmann::json::array({"S(0)R"}));    // [B * T, 3 * H * D]
  CHECK(j["nodes"][6]["outputs"] == nlohmann::json::array({"P(sum)R"}));  // the weight gradient, summed over the batch
  std::filesystem::remove(path);
}

TEST_CASE("R17: ViT-B/16 backward with data-parallel gradients on 2x4: greedy at the proven optimum again", "[regression][R17]") {
  const std::string graph = shared("graphs/more/vit_b16_bw.fx.txt");
  if (!std::filesystem::exists(graph)) {
    WARN(graph << " not found: skipping");
    return;
  }
  int status = -1;
  // the issue's setting (the batch-carrying tangent and image S(0)R): 1,927.7 us before, optimum 7.33
  const auto t = nlohmann::json::parse(
      run_tool_status("plan '" + graph + "' --mesh 2x4 --place 'tangents_1=S(0)R' --place 'primals_153=S(0)R' --global --json --quiet", status));
  REQUIRE(status == 0);
  CHECK(t["proven_optimal"] == true);
  CHECK(number(t["greedy_total_cost_us"]) == Approx(number(t["total_cost_us"])).margin(1e-6));
  CHECK(number(t["greedy_total_cost_us"]) < 7.33);
  // --data-parallel (113 inputs): 2,539.6 us before against an optimum of 922.9 us; both 0 now
  const auto d = nlohmann::json::parse(run_tool_status("plan '" + graph + "' --mesh 2x4 --data-parallel --global --json --quiet", status));
  REQUIRE(status == 0);
  CHECK(number(d["greedy_total_cost_us"]) == 0.0);
  CHECK(number(d["total_cost_us"]) == 0.0);
  CHECK(d["proven_optimal"] == true);
}
