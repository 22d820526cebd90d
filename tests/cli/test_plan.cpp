// `ctshard plan`: propagation through real FX graphs on meshes 8, 2x4, 2x2x2 (no error,
// deterministic totals), the embedded default, JSON fields, and bad --place input.
#include <catch2/catch.hpp>

#include <array>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "ctshard/fx/reader.hpp"
#include "ctshard/graph/greedy.hpp"
#include "ctshard/registry.hpp"
#include "ctshard/report/plan_report.hpp"
#include "run_tool.hpp"

using namespace ctshard;

TEST_CASE("plan: every real graph on meshes 8, 2x4, 2x2x2, deterministically", "[plan]") {
  const std::string dir = std::string(CTSHARD_SHARED_DIR) + "/graphs";
  if (!std::filesystem::exists(dir)) {
    WARN("../shared not found (" << dir << "): skipping real-graph plans");
    return;
  }
  std::size_t files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (!entry.path().string().ends_with(".fx.txt")) continue;
    ++files;
    const fx::Graph graph = fx::read_fx_graph_file(entry.path().string());
    std::size_t op_nodes = 0;
    for (const auto& n : graph.nodes) op_nodes += n.kind == "call_function" && n.target != "getitem";
    for (const auto& mesh : {std::vector<std::int64_t>{8}, std::vector<std::int64_t>{2, 4}, std::vector<std::int64_t>{2, 2, 2}}) {
      graph::PlanOptions options;
      options.mesh = mesh;
      const graph::Plan first = graph::plan_graph(graph, options, builtin_registry());
      const graph::Plan second = graph::plan_graph(graph, options, builtin_registry());
      INFO(entry.path().filename().string() << " on a " << mesh.size() << "-dim mesh");
      CHECK(first.nodes.size() == op_nodes);
      CHECK(first.nodes_with_rule + first.nodes_fallback == op_nodes);
      CHECK(first.total_cost_us == second.total_cost_us);
      CHECK(std::isfinite(first.total_cost_us));
      for (const auto& n : first.nodes) CHECK(!n.outputs.empty());
    }
  }
  CHECK(files == 8);
}

TEST_CASE("plan: sharded weights propagate through the default block", "[plan]") {
  const std::string out = run_tool("plan --json --mesh 2x4 --place 'primals_1=S(0)R'");
  const auto j = nlohmann::json::parse(out);
  REQUIRE(j.contains("nodes"));
  for (const char* key : {"total_cost_us", "nodes_with_rule", "nodes_fallback"}) CHECK(j.contains(key));
  std::size_t with_rule = 0;
  for (const auto& n : j["nodes"]) {
    for (const char* key : {"name", "op", "inputs", "outputs", "cost_us", "fallback"}) CHECK(n.contains(key));
    with_rule += n["fallback"].get<bool>() ? 0 : 1;
  }
  CHECK(with_rule == j["nodes_with_rule"].get<std::size_t>());
  CHECK(j["nodes"].size() == j["nodes_with_rule"].get<std::size_t>() + j["nodes_fallback"].get<std::size_t>());
  // the first addmm consumes the row-sharded activations: no redistribution of the lhs needed
  bool found = false;
  for (const auto& n : j["nodes"])
    if (n["name"] == "add_1") {
      found = true;
      CHECK(n["outputs"][0].get<std::string>().size() >= 2);
    }
  CHECK(found);
}

TEST_CASE("plan: the embedded block on an 8-dim mesh, by search, with no op falling back for its table size", "[plan]") {
  const auto p = nlohmann::json::parse(run_tool("plan --json --mesh 2x2x2x2x2x2x2x2 --algo search"));
  REQUIRE(p["nodes"].size() > 10);
  CHECK(p["algo"] == "search");
  for (const auto& n : p["nodes"]) {
    INFO(n.dump());
    CHECK(n["fallback"] == false);
    CHECK_FALSE(n.contains("reason"));  // a fallback names its reason
    CHECK(n["outputs"][0].get<std::string>().size() >= 8);
  }
  CHECK(p["nodes_fallback"] == 0);
  // the same plan by enumeration falls back where a table exceeds 2^20 rows (--quiet: without the
  // fallback warning on stderr, which run_tool merges)
  const auto e = nlohmann::json::parse(run_tool("plan --json --quiet --mesh 2x2x2x2x2x2x2x2 --algo enumerate"));
  CHECK(e["nodes_fallback"].get<int>() > 0);
  // on a mesh where every table fits, search and enumeration plan identically
  const auto s4 = nlohmann::json::parse(run_tool("plan --json --mesh 2x2x2 --algo search"));
  auto e4 = nlohmann::json::parse(run_tool("plan --json --mesh 2x2x2 --algo enumerate"));
  e4["algo"] = "search";
  CHECK(s4 == e4);
}

TEST_CASE("plan: bad --place input is a clear error", "[plan]") {
  CHECK_THAT(run_tool("plan --place 'nosuch=S(0)'"), Catch::Contains("'nosuch', which is not an input"));
  CHECK_THAT(run_tool("plan --mesh 2x4 --place 'primals_1=S(0)'"), Catch::Contains("has 1 placements for a 2-dim mesh"));
  CHECK_THAT(run_tool("plan --place primals_1"), Catch::Contains("expects NAME=SPEC"));
  CHECK_THAT(run_tool("plan --mesh 2y4"), Catch::Contains("bad mesh '2y4'"));
  CHECK_THAT(run_tool("plan /nonexistent/graph.fx.txt"), Catch::Contains("/nonexistent/graph.fx.txt"));
}

TEST_CASE("table and cost: text and JSON interfaces", "[cli]") {
  const auto t = nlohmann::json::parse(run_tool("table --op mm --shapes 6x8,8x12 --mesh 2x4 --inputs \"S(0)R;RS(1)\" --json"));
  CHECK(t["strategies"].size() == 63);  // 8^2 = 64 rows, one unshardable (8 rows over 2x4 = 8 shards of dim 0 of 6)
  CHECK(t["choice"]["rule"] == "no_redistribute");
  const auto& chosen = t["strategies"][t["choice"]["index"].get<std::size_t>()];
  CHECK(chosen["in"] == nlohmann::json::array({"S(0)R", "RS(1)"}));
  CHECK(chosen["out"] == "S(0)S(1)");
  const auto c = nlohmann::json::parse(run_tool("cost --shape 4x4 --mesh 2x2 --from \"S(0)S(0)\" --to \"RS(0)\" --json"));
  CHECK(c["cost_us"].get<double>() == Approx(14.4005).epsilon(1e-5));
  CHECK(c["steps"].size() == 3);
  CHECK(c["steps"][0]["collective"] == "all_gather");
  CHECK_THAT(run_tool("table --op nosuch --shapes 2 --mesh 2 --inputs R"), Catch::Contains("unknown op 'nosuch'"));
  CHECK_THAT(run_tool("table --op mm --shapes 6x8,8x12 --mesh 2 --inputs \"S(0);Q\""), Catch::Contains("'Q'"));
  CHECK_THAT(run_tool("table --op 'einsum:mk,kn->mz' --shapes 6x8,8x12 --mesh 2 --inputs 'R;R'"),
             Catch::Contains("an output label does not occur in any input"));
  CHECK_THAT(run_tool("cost --shape 4x4 --mesh 2 --from 'S(0)' --to 'P(sum)'"), Catch::Contains("total: inf"));
  // bad input named, never priced
  CHECK_THAT(run_tool("table --op mm --shapes 6x8,9x12 --mesh 2 --inputs 'R;R'"), Catch::Contains("label 'k' has sizes 8 and 9"));
  CHECK_THAT(run_tool("table --op addmm --shapes 5,6x8,8x12 --mesh 2 --inputs 'R;R;R'"),
             Catch::Contains("bias of shape 5 does not broadcast to the output 6x12"));
  CHECK_THAT(run_tool("table --op mm --shapes 6x8,8x12 --mesh 2x4 --inputs 'S(7)R;RS(1)'"),
             Catch::Contains("spec 'S(7)R' shards tensor dim 7 of a 2-d tensor"));
  CHECK_THAT(run_tool("cost --shape 8x8 --mesh 2x2 --from 'S(5)R' --to RR"), Catch::Contains("shards tensor dim 5"));
  CHECK_THAT(run_tool("table --op pointwise:add --shapes 6x8 --mesh 2 --inputs 'S(0)'"), Catch::Contains("takes 2 tensor inputs, got 1"));
  CHECK_THAT(run_tool("table --op mm --shapes 64x64,64x64 --mesh 2x2x2x2x2x2x2x2 --inputs 'S(0)RRRRRRR;RRRRRRRR'"),
             Catch::Contains("above the enumeration limit"));
  // the search has no row limit: the same table's choice, counted without listing it
  const auto big = nlohmann::json::parse(
      run_tool("table --json --algo search --op mm --shapes 64x64,64x64 --mesh 2x2x2x2x2x2x2x2 --inputs 'S(0)RRRRRRR;RRRRRRRR'"));
  CHECK(big["num_combinations"] == 16777216);  // 8^8
  CHECK(big["strategies"].size() == 1);
  CHECK(big["strategies"][0]["in"] == nlohmann::json::array({"S(0)RRRRRRR", "RRRRRRRR"}));
  CHECK(big["choice"]["rule"] == "no_redistribute");
  CHECK(big["choice"]["index"].is_number());
  CHECK_THAT(run_tool("table --algo search --op mm --shapes 64x64,64x64 --mesh 2x2x2x2x2x2x2x2 --inputs 'S(0)RRRRRRR;RRRRRRRR'"),
             Catch::Contains("only the chosen row"));
  CHECK_THAT(run_tool("plan --coverage /nonexistent"), Catch::Contains("'/nonexistent' is not a directory"));
  CHECK_THAT(run_tool("plan --mesh 2x4 --place 'primals_1=S(5)R'"), Catch::Contains("shards tensor dim 5 of a 2-d tensor"));
  // non-tensor arguments through --args: a view keeps the shard of its outermost flattened dim
  const auto v = nlohmann::json::parse(run_tool("table --json --op aten.view.default --shapes 4x6x8 --mesh 2 --inputs 'S(0)' --args '[[24, 8]]'"));
  CHECK(v["strategies"][v["choice"]["index"].get<std::size_t>()]["out"] == "S(0)");
  // the sound einsum policy drops DTensor's all-Partial row of a batch-only einsum
  const auto dt = nlohmann::json::parse(run_tool("table --json --op 'einsum:b,b->b' --shapes 8,8 --mesh 2 --inputs 'P(sum);P(sum)'"));
  const auto so = nlohmann::json::parse(run_tool("table --json --sound --op 'einsum:b,b->b' --shapes 8,8 --mesh 2 --inputs 'P(sum);P(sum)'"));
  CHECK(dt["strategies"][dt["choice"]["index"].get<std::size_t>()]["total"] == 0.0);
  CHECK(so["strategies"][so["choice"]["index"].get<std::size_t>()]["total"].get<double>() > 0.0);
}

TEST_CASE("plan: batch-sharded Megatron inputs make StridedShard values and a finite total", "[plan][strided]") {
  const std::string graph = std::string(CTSHARD_SHARED_DIR) + "/graphs/gpt_megatron_l1_fw.fx.txt";
  if (!std::filesystem::exists(graph)) {
    WARN("../shared not found (" << graph << "): skipping the StridedShard plan");
    return;
  }
  // token ids, masks and loss mask sharded on the batch (dim 0) over mesh dim 0; the graph's
  // [seq, batch] views flatten a batch-sharded dim under the sequence dim, which gives _S(0, 1536)
  std::string args = "plan --json --mesh 2x4 '" + graph + "'";
  for (const char* p : {"primals_18", "primals_19", "primals_20", "primals_21", "primals_22"}) args += std::string(" --place '") + p + "=S(0)R'";
  for (const char* model : {"dtensor", "consistent"}) {
    INFO("cost model " << model);
    const auto j = nlohmann::json::parse(run_tool(args + " --cost-model " + model));
    REQUIRE(j["total_cost_us"].is_number());
    const double total = j["total_cost_us"].get<double>();
    CHECK(std::isfinite(total));
    double sum = 0;
    std::size_t strided_values = 0;
    for (const auto& n : j["nodes"]) {
      REQUIRE(n["cost_us"].is_number());
      sum += n["cost_us"].get<double>();
      for (const auto& s : n["outputs"]) strided_values += s.get<std::string>().find("_S(") != std::string::npos;
    }
    CHECK(strided_values >= 5);
    CHECK_THAT(sum, Catch::Matchers::WithinRel(total, 1e-9));
    // the search gives full enumeration's plan with StridedShard values too
    auto enumerated = nlohmann::json::parse(run_tool(args + " --cost-model " + model + " --algo enumerate"));
    CHECK(enumerated["algo"] == "enumerate");
    enumerated["algo"] = j["algo"];
    CHECK(enumerated == j);
  }
  // The loss: mul(view_38, view_37) with view_38 = _S(0, 8)_S(0, 8) (f32[12288], a transposed
  // [8, 1536] flattened) and view_37 = S(0)R. Under DTensor's model view_37 moves to
  // _S(0, 8)_S(0, 8): mesh dim 0 all-gathers the 12288 floats and chunks them strided, mesh dim 1
  // chunks locally. 8 devices on one host: 87.7 GB/s, 0.6 us per hop.
  const auto j = nlohmann::json::parse(run_tool(args));
  const nlohmann::json* mul = nullptr;
  for (const auto& n : j["nodes"])
    if (n["name"] == "mul") mul = &n;
  REQUIRE(mul != nullptr);
  CHECK((*mul)["inputs"][0] == "_S(0, 8)_S(0, 8)");
  CHECK((*mul)["inputs"][1] == "_S(0, 8)_S(0, 8)");
  const double bytes = 12288.0 * 4;
  const double all_gather_us = 6.6 + 1 * 0.6 + bytes / 1024 / 1024 / 1024 * (1.0 / 2.0) / 87.7 * 1e6;
  CHECK_THAT((*mul)["cost_us"].get<double>(), Catch::Matchers::WithinRel(all_gather_us, 1e-9));
  const auto steps = nlohmann::json::parse(run_tool("cost --json --shape 12288 --mesh 2x4 --from 'S(0)R' --to '_S(0, 8)_S(0, 8)'"));
  REQUIRE(steps["steps"].size() == 3);
  CHECK(steps["steps"][0]["collective"] == "all_gather");
  CHECK(steps["steps"][0]["mesh_dim"] == 0);
  CHECK(steps["steps"][1]["collective"] == "local");
  CHECK(steps["steps"][2]["collective"] == "local");
}

TEST_CASE("plan: FSDP2 + TP parameters as StridedShard inputs of the default block", "[plan][strided]") {
  // Column-parallel weights [out, in] sharded by TP on dim 0 (mesh dim 1), then by FSDP on dim 0
  // again (mesh dim 0): _S(0, 4)S(0); row-parallel ones FSDP on dim 0, TP on dim 1: S(0)S(1).
  const std::string args =
      "plan --json --mesh 2x4 --place 'primals_1=S(0)R' --place 'primals_2=_S(0, 4)S(0)' --place 'primals_4=S(0)S(1)'"
      " --place 'primals_6=_S(0, 4)S(0)' --place 'primals_8=S(0)S(1)'";
  const auto before = nlohmann::json::parse(run_tool("plan --json --mesh 2x4"));
  for (const char* model : {"dtensor", "consistent"}) {
    INFO("cost model " << model);
    const auto j = nlohmann::json::parse(run_tool(args + " --cost-model " + std::string(model)));
    REQUIRE(j["total_cost_us"].is_number());
    CHECK(std::isfinite(j["total_cost_us"].get<double>()));
    // gathering the FSDP shards costs more than the TP-only layout of the default placements
    CHECK(j["total_cost_us"].get<double>() > before["total_cost_us"].get<double>());
  }
}
