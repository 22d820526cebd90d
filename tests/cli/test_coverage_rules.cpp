// `ctshard plan --coverage` over the real graphs of ../shared (graphs/ and graphs/more/): every op
// node has a rule (collectives, auto_functionalized_v2 and flex_attention included:
// regressions_3.json R13 / R14 / R18), so every file is above issue 21's 99.5 %. Also the R10 /
// R15 / R18 table runs of regressions_3.json through the tool.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <string>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "run_tool.hpp"

namespace {

const std::string kGraphs = std::string(CTSHARD_SHARED_DIR) + "/graphs";

}  // namespace

TEST_CASE("plan --coverage: every op node of the real graphs has a rule", "[plan][cli][coverage]") {
  if (!std::filesystem::exists(kGraphs + "/more")) {
    WARN("../shared not found (" << kGraphs << "): skipping");
    return;
  }
  std::size_t files = 0, nodes = 0;
  for (const std::string& dir : {kGraphs, kGraphs + "/more"}) {
    int status = 0;
    const auto j = nlohmann::json::parse(run_tool_status("plan --coverage " + dir + " --json", status));
    CHECK(status == 0);
    for (const auto& f : j["files"]) {
      INFO(f.dump());
      REQUIRE_FALSE(f.contains("error"));
      const std::size_t with = f["nodes_with_rule"].get<std::size_t>(), fallback = f["nodes_fallback"].get<std::size_t>();
      CHECK(f["fallback_ops"].empty());
      CHECK(fallback == 0);
      CHECK(static_cast<double>(with) >= 0.995 * static_cast<double>(with + fallback));
      ++files;
      nodes += with + fallback;
    }
  }
  CHECK(files >= 26);
  CHECK(nodes > 17000);
}

TEST_CASE("R10 / R15 / R18 table runs of regressions_3.json", "[cli][regressions_3]") {
  // R10: histc with min == max takes the data range: the input is replicated first
  auto j = nlohmann::json::parse(run_tool("table --op aten.histc.default --shapes 8 --mesh 2 --inputs 'S(0)' --args '[4, 3, 3]' --json"));
  CHECK(j["rules"] == nlohmann::json::parse(R"([["R", "R"]])"));
  CHECK(j["strategies"][j["choice"]["index"].get<std::size_t>()]["out"] == "R");
  CHECK(j["strategies"][0]["total"].get<double>() > 0.0);
  // R15: sort of a P(sum) input reduce-scatters to S(0)
  j = nlohmann::json::parse(run_tool("table --op aten.sort.default --shapes 1024x2048 --mesh 8 --inputs 'P(sum)' --args '[1]' --json"));
  CHECK(j["placeholder_fill"] == "shard_from_partial");
  const auto& chosen = j["strategies"][j["choice"]["index"].get<std::size_t>()];
  CHECK(chosen["in"] == nlohmann::json::parse(R"j(["S(0)"])j"));
  CHECK(chosen["total"].get<double>() == Approx(88.747).epsilon(1e-4));
  CHECK(j["strategies"][0]["total"].get<double>() == Approx(170.894).epsilon(1e-4));
  // the reference families keep DTensor's fill
  j = nlohmann::json::parse(run_tool("table --op pointwise:sin --shapes 8x4 --mesh 2 --inputs 'P(sum)' --json"));
  CHECK(j["placeholder_fill"] == "dtensor");
  CHECK(j["rules"].size() == 1);
  // R18: prims.fma keeps S(0) on all three inputs, free
  j = nlohmann::json::parse(run_tool("table --op prims.fma.default --shapes 8x4,8x4,8x4 --mesh 2 --inputs 'S(0);S(0);S(0)' --json"));
  const auto& fma = j["strategies"][j["choice"]["index"].get<std::size_t>()];
  CHECK(fma["out"] == "S(0)");
  CHECK(fma["total"].get<double>() == 0.0);
  CHECK(j["choice"]["rule"] == "no_redistribute");
}

TEST_CASE("R15 in plans: the greedy planner keeps DTensor's fill unless --greedy-fill rule", "[plan][cli][regressions_3]") {
  const auto path = std::filesystem::temp_directory_path() / ("ctshard_r15_sort_" + std::to_string(::getpid()) + ".fx.txt");
  std::ofstream(path) << "class GraphModule(torch.nn.Module):\n"
                         "    def forward(self, x: \"f32[1024, 2048]\"):\n"
                         "        sort = torch.ops.aten.sort.default(x, 1);  x = None\n"
                         "        getitem: \"f32[1024, 2048]\" = sort[0]\n"
                         "        getitem_1: \"i64[1024, 2048]\" = sort[1];  sort = None\n"
                         "        return (getitem, getitem_1)\n";
  const std::string base = "plan " + path.string() + " --mesh 8 --place 'x=P(sum)' --json";
  const auto greedy = nlohmann::json::parse(run_tool(base));
  CHECK(greedy["nodes"][0]["inputs"] == nlohmann::json::parse(R"(["R"])"));
  CHECK(greedy["total_cost_us"].get<double>() == Approx(170.894).epsilon(1e-4));
  const auto rule = nlohmann::json::parse(run_tool(base + " --greedy-fill rule"));
  CHECK(rule["nodes"][0]["inputs"] == nlohmann::json::parse(R"j(["S(0)"])j"));
  CHECK(rule["total_cost_us"].get<double>() == Approx(88.747).epsilon(1e-4));
  CHECK_THAT(run_tool(base + " --greedy-fill other"), Catch::Contains("--greedy-fill"));
  std::filesystem::remove(path);
}
