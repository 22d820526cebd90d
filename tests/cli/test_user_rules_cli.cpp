// `--rules FILE` on `ctshard table` and `ctshard plan` (report/rules_file.hpp): the user's own
// ops get their rows from a JSON rules file, expanded like built-in rules; the errors of a bad
// file name the rule and the entry; a rule that does not fit a node's call is an error of the plan.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <string>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "ctshard/registry.hpp"
#include "ctshard/report/rules_file.hpp"
#include "run_tool.hpp"

namespace {

const std::string kData = std::string(CTSHARD_TEST_DATA_DIR) + "/custom_rules";
const std::string kJoint = std::string(CTSHARD_SHARED_DIR) + "/graphs/more/gpt_tp2_joint.fx.txt";

/// A file holding `text` in a fresh temporary directory, removed with the object.
struct TempFile {
  std::filesystem::path dir, path;
  TempFile(const std::string& name, const std::string& text) {
    dir = std::filesystem::temp_directory_path() / ("ctshard_rules_" + std::to_string(::getpid()) + "_" + name);
    std::filesystem::create_directories(dir);
    path = dir / name;
    std::ofstream(path) << text;
  }
  ~TempFile() { std::filesystem::remove_all(dir); }
};

/// The tool's output for a rules file holding `text`, with `args` after `--rules FILE`.
std::string with_rules(const std::string& text, const std::string& args, int& status) {
  const TempFile f("rules.json", text);
  return run_tool_status(args + " --rules " + f.path.string(), status);
}

}  // namespace

TEST_CASE("table --rules: a user's rows are expanded like a built-in rule", "[cli][rules]") {
  const std::string table =
      "table --op mylib.rope.default --shapes 8x128x8x64,128x64 --mesh 2x2 --inputs 'S(0)S(2);RR' --json --rules " + kData + "/rope_block.rules.json";
  const auto j = nlohmann::json::parse(run_tool(table));
  CHECK(j["rules_raw"] == nlohmann::json::parse(R"j([["S?(0)", "S?(0)", "R"], ["S?(1)", "S?(1)", "S?(0)"], ["S?(2)", "S?(2)", "R"]])j"));
  CHECK(j["num_combinations"] == 16);  // (3 rows + all-Replicate)^2
  const auto& chosen = j["strategies"][j["choice"]["index"].get<std::size_t>()];
  CHECK(chosen["out"] == "S(0)S(2)");
  CHECK(chosen["total"] == 0.0);
  // without the file the op has no rule
  int status = 0;
  const std::string out = run_tool_status("table --op mylib.rope.default --shapes 8x128x8x64,128x64 --mesh 2x2 --inputs 'S(0)S(2);RR'", status);
  CHECK(status != 0);
  CHECK(out.find("has no sharding rule") != std::string::npos);
}

TEST_CASE("plan --rules: a graph of custom ops plans with a rule on every node", "[cli][rules][plan]") {
  const std::string graph = kData + "/rope_block.fx.txt";
  const auto without = nlohmann::json::parse(run_tool("plan " + graph + " --mesh 2x2 --place x='S(0)R' --place wq='RS(1)' --json --quiet"));
  CHECK(without["nodes_fallback"] == 3);
  CHECK(without["fallback_ops"].contains("mylib.rope.default"));
  const std::string rules = " --rules " + kData + "/rope_block.rules.json";
  const auto with = nlohmann::json::parse(run_tool("plan " + graph + " --mesh 2x2 --place x='S(0)R' --place wq='RS(1)' --json --quiet" + rules));
  CHECK(with["nodes_fallback"] == 0);
  CHECK(with["fallback_ops"].empty());
  for (const auto& n : with["nodes"]) {
    INFO(n.dump());
    // batch- and head-sharded q stays: a local rope; the logging op passes it through
    if (n["op"] == "mylib.rope.default" || n["op"] == "mylib.log_tensor.default") CHECK(n["inputs"][0] == "S(0)S(2)");
    // a pointwise rule has no Partial row: the row-parallel mm's P(sum) is reduce-scattered before the GeLU
    if (n["op"] == "mylib.bias_gelu.default") CHECK(n["inputs"][0] == "S(0)S(0)");
  }
  CHECK(with["total_cost_us"].get<double>() < without["total_cost_us"].get<double>());
  // --coverage with the rules: every node of the directory's graph has a rule
  const auto cov = nlohmann::json::parse(run_tool("plan --coverage " + kData + " --json" + rules));
  REQUIRE(cov["files"].size() == 1);
  CHECK(cov["files"][0]["nodes_fallback"] == 0);
  CHECK(cov["files"][0]["rule_share"] == 1.0);
  // --global takes the same rules
  const auto global = nlohmann::json::parse(run_tool("plan " + graph + " --mesh 2x2 --place x='S(0)R' --json --quiet --global" + rules));
  CHECK(global["nodes_fallback"] == 0);
  CHECK(global["objective_us"].get<double>() <= global["greedy_objective_us"].get<double>() + 1e-6);
}

TEST_CASE("plan --rules on the Megatron joint graph: its custom ops' rules from a file", "[cli][rules][plan]") {
  if (!std::filesystem::exists(kJoint)) {
    WARN("../shared not found (" << kJoint << "): skipping");
    return;
  }
  // tg.log_tensor has a built-in identity rule; the file's rule replaces it. As an identity it
  // plans exactly as the built-in one does; declared replicate, the greedy plan changes (each
  // logged batch is gathered there, which here happens to steer greedy to a cheaper plan).
  const std::string plan = "plan " + kJoint + " --mesh 2 --data-parallel --batch-size 32 --json --quiet";
  const auto builtin = nlohmann::json::parse(run_tool(plan));
  int status = 0;
  const auto identity = nlohmann::json::parse(with_rules(R"j({"rules": [{"op": "tg.log_tensor.default", "kind": "identity"}]})j", plan, status));
  CHECK(status == 0);
  CHECK(identity["nodes_fallback"] == 0);
  CHECK(identity["nodes_with_rule"] == 388);
  CHECK(identity["total_cost_us"] == builtin["total_cost_us"]);
  CHECK(identity["nodes"] == builtin["nodes"]);
  const auto replicate = nlohmann::json::parse(with_rules(R"j({"rules": [{"op": "tg.log_tensor.default", "kind": "replicate"}]})j", plan, status));
  CHECK(replicate["nodes_fallback"] == 0);
  CHECK(replicate["total_cost_us"] != identity["total_cost_us"]);
  for (const auto& n : replicate["nodes"])
    if (n["op"] == "tg.log_tensor.default") CHECK(n["inputs"][0] == "R");
}

TEST_CASE("rules file (--rules): a bad one names the rule and the entry", "[cli][rules][errors]") {
  const std::string table = "table --op mylib.x.default --shapes 4x4 --mesh 2 --inputs R";
  const auto error_of = [&](const std::string& text) {
    int status = 0;
    const std::string out = with_rules(text, table, status);
    CHECK(status != 0);
    return out;
  };
  CHECK_THAT(error_of("{\"rules\": [ {\"op\": "), Catch::Contains("not JSON"));
  CHECK_THAT(error_of(R"j({"rules": [{"op": "mylib.x.default", "kind": "elementwise"}]})j"),
             Catch::Contains("rule 0: ctshard: rule 'mylib.x.default': unknown kind 'elementwise' (identity, pointwise or replicate)"));
  CHECK_THAT(error_of(R"j({"rules": [{"op": "mylib.x.default", "rows": [["S?(0)", "S?(0)"], ["S?(1)", "S?(1)", "R"]]}]})j"),
             Catch::Contains("rule 0 ('mylib.x.default'): row 1 has 3 entries, row 0 has 2 (1 output(s) + 1 input(s))"));
  CHECK_THAT(error_of(R"j({"rules": [{"op": "mylib.x.default", "rows": [["S?(0)", "Q(1)"]]}]})j"),
             Catch::Contains("rule 0 ('mylib.x.default'): row 0, entry 1: "));
  CHECK_THAT(error_of(R"j({"rules": [{"op": "mylib.x.default", "rows": [["S?(0)", "S?(0)"]], "output": 1}]})j"),
             Catch::Contains("rule 0 ('mylib.x.default'): unknown key \"output\""));
  CHECK_THAT(error_of(R"j({"rules": [{"kind": "identity"}]})j"), Catch::Contains("rule 0: \"op\" must name the op"));
  // a placeholder dim past the tensor's rank: known once the call's shapes are
  CHECK_THAT(error_of(R"j({"rules": [{"op": "mylib.x.default", "rows": [["S?(2)", "S?(2)"]]}]})j"),
             Catch::Contains("ctshard: rule 'mylib.x.default': row 0, entry 0 (output 0): S?(2) names dim 2 of a rank-2 tensor") ||
                 Catch::Contains("ctshard: rule 'mylib.x.default': row 0, entry 1 (input 0): S?(2) names dim 2 of a rank-2 tensor"));
  // ... and in a plan, an error naming the node, not a silent Replicate
  int status = 0;
  const std::string out = with_rules(R"j({"rules": [{"op": "mylib.rope.default", "rows": [["S?(3)", "S?(3)", "S?(3)"]]}]})j",
                                     "plan " + kData + "/rope_block.fx.txt --mesh 2 --quiet", status);
  CHECK(status != 0);
  CHECK_THAT(out, Catch::Contains("node 'rope' (mylib.rope.default): ctshard: rule 'mylib.rope.default': row 0, entry 2 (input 1): S?(3) "
                                  "names dim 3 of a rank-2 tensor"));
}

TEST_CASE("with_user_rules: a copy of the registry, the original unchanged", "[rules]") {
  const auto rules = ctshard::report::parse_rules_json(nlohmann::json::parse(R"j({"rules": [{"op": "mylib.x.default", "kind": "identity"},
      {"op": "aten.relu.default", "kind": "replicate"}]})j"),
                                                       "doc");
  const ctshard::OpRegistry mine = ctshard::report::with_user_rules(ctshard::builtin_registry(), rules);
  CHECK(mine.contains("mylib.x.default"));
  CHECK_FALSE(ctshard::builtin_registry().contains("mylib.x.default"));
  ctshard::OpCall relu;
  relu.op = "aten.relu.default";
  relu.tensors = {ctshard::TensorMeta{ctshard::TensorShape{4, 4}, 4}};
  ctshard::OpArg self;
  self.kind = ctshard::OpArg::Kind::tensor;
  relu.args.push_back(self);
  CHECK((*mine.find("aten.relu.default"))(relu).rules.size() == 0);                        // replaced: replicate
  CHECK((*ctshard::builtin_registry().find("aten.relu.default"))(relu).rules.size() > 0);  // the built-in one as it was
  CHECK_THROWS_WITH(
      ctshard::report::parse_rules_json(nlohmann::json::parse(R"j([{"op": "a.b", "kind": "identity"}, {"op": "a.b", "kind": "replicate"}])j"), "doc"),
      "doc: rule 1: a second rule for 'a.b'");
}
