// Reference cases (../shared/cases/golden_dev.jsonl) checked end to end through the tool:
// `ctshard table --json` must list the same surviving strategies in the same order, the same
// per-input costs (1e-9 relative), the same filter counts and the same choice.
#include <catch2/catch.hpp>

#include <array>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "../sanitizer_scale.hpp"
#include "run_tool.hpp"

namespace {

std::string join(const nlohmann::json& items, const char* sep, bool as_shape) {
  std::string out;
  for (const auto& item : items) {
    if (!out.empty()) out += sep;
    if (as_shape) {
      std::string s;
      for (const auto& d : item) {
        if (!s.empty()) s += 'x';
        s += std::to_string(d.get<long long>());
      }
      out += s.empty() ? "scalar" : s;
    } else {
      out += item.get<std::string>();
    }
  }
  return out;
}

bool same_cost(const nlohmann::json& a, const nlohmann::json& b) {
  if (a.is_string() || b.is_string()) return a == b;
  const double x = a.get<double>(), y = b.get<double>();
  return std::fabs(x - y) <= 1e-9 * std::max({1.0, std::fabs(x), std::fabs(y)});
}

/// Empty when the tool's table equals the reference case, else what differs first.
std::string compare(const nlohmann::json& want, const nlohmann::json& got) {
  if (got["rules"] != want["rules"]) return "rules differ: got " + got["rules"].dump();
  if (got["filtered"] != want["filtered"]) return "filtered " + got["filtered"].dump() + " want " + want["filtered"].dump();
  const auto& ws = want["strategies"];
  const auto& gs = got["strategies"];
  if (ws.size() != gs.size()) return "strategy count " + std::to_string(gs.size()) + " want " + std::to_string(ws.size());
  for (std::size_t i = 0; i < ws.size(); ++i) {
    if (ws[i]["out"] != gs[i]["out"] || ws[i]["in"] != gs[i]["in"]) return "row " + std::to_string(i) + " " + gs[i].dump() + " want " + ws[i].dump();
    for (std::size_t k = 0; k < ws[i]["cost"].size(); ++k)
      if (!same_cost(ws[i]["cost"][k], gs[i]["cost"][k])) return "cost of row " + std::to_string(i) + " " + gs[i].dump() + " want " + ws[i].dump();
  }
  if (got["choice"] != want["choice"]) return "choice " + got["choice"].dump() + " want " + want["choice"].dump();
  if (got["plain_min_index"] != want["plain_min_index"]) return "plain_min_index differs";
  return {};
}

/// The `--algo search` document against the reference case: the same choice, first minimum,
/// filter counts and combinations, and its single row is the chosen row of the reference table.
std::string compare_search(const nlohmann::json& want, const nlohmann::json& got) {
  if (got["algo"] != "search") return "algo " + got["algo"].dump();
  if (got["choice"] != want["choice"]) return "search choice " + got["choice"].dump() + " want " + want["choice"].dump();
  if (got["plain_min_index"] != want["plain_min_index"]) return "search plain_min_index " + got["plain_min_index"].dump();
  if (got["filtered"] != want["filtered"]) return "search filtered " + got["filtered"].dump() + " want " + want["filtered"].dump();
  if (got["num_combinations"] != want["num_combinations"]) return "search num_combinations " + got["num_combinations"].dump();
  if (got["strategies"].size() != 1) return "search lists " + std::to_string(got["strategies"].size()) + " rows";
  const auto& w = want["strategies"][want["choice"]["index"].get<std::size_t>()];
  const auto& g = got["strategies"][0];
  if (w["out"] != g["out"] || w["in"] != g["in"]) return "search row " + g.dump() + " want " + w.dump();
  for (std::size_t k = 0; k < w["cost"].size(); ++k)
    if (!same_cost(w["cost"][k], g["cost"][k])) return "search row costs " + g.dump() + " want " + w.dump();
  if (!same_cost(w["total"], g["total"])) return "search total " + g.dump() + " want " + w.dump();
  return "";
}

}  // namespace

TEST_CASE("golden: reference cases match through `ctshard table --json`", "[golden][cli]") {
  const std::string path = std::string(CTSHARD_SHARED_DIR) + "/cases/golden_dev.jsonl";
  if (!std::filesystem::exists(path)) {
    WARN("../shared not found (" << path << "): skipping the reference cases");
    return;
  }
  std::ifstream in(path);
  std::string line;
  std::size_t total = 0, checked = 0, matched = 0;
  std::string failures;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    const auto want = nlohmann::json::parse(line);
    if (total++ % ctshard::test::sample_stride != 0) continue;  // every case (every 10th under ASan)
    ++checked;
    std::ostringstream cmd;
    cmd << "table --json --op '" << want["op"].get<std::string>() << "' --shapes '" << join(want["shapes"], ",", true) << "' --mesh '";
    std::string mesh;
    for (const auto& m : want["mesh"]) {
      if (!mesh.empty()) mesh += 'x';
      mesh += std::to_string(m.get<int>());
    }
    cmd << mesh << "' --inputs '" << join(want["inputs"], ";", false) << "' --devices-per-host " << want["devices_per_host"].get<int>() << " --dtype "
        << (want["itemsize"].get<int>() == 4   ? "float32"
            : want["itemsize"].get<int>() == 2 ? "bfloat16"
                                               : "float64");
    const std::string out = run_tool(cmd.str());
    const std::string searched = run_tool(cmd.str() + " --algo search");
    std::string diff;
    try {
      diff = compare(want, nlohmann::json::parse(out));
      if (diff.empty()) diff = compare_search(want, nlohmann::json::parse(searched));
    } catch (const std::exception& e) {
      diff = std::string("bad output: ") + out.substr(0, 300) + " / " + searched.substr(0, 300);
    }
    if (diff.empty()) ++matched;
    else if (failures.size() < 4000)
      failures += "case " + std::to_string(want["id"].get<int>()) + " (" + want["op"].get<std::string>() + "): " + diff + "\n";
  }
  std::printf("reference cases matched through ctshard table --json (and --algo search): %zu / %zu\n", matched, checked);
  INFO(failures);
  CHECK(total == 300);
  CHECK(checked == (total + ctshard::test::sample_stride - 1) / ctshard::test::sample_stride);
  CHECK(matched == checked);
}

TEST_CASE("golden: the StridedShard reference cases (regressions B12, R05) hold through `ctshard table --json`", "[golden][cli][strided]") {
  const std::string dir = std::string(CTSHARD_SHARED_DIR) + "/cases";
  if (!std::filesystem::exists(dir + "/regressions.json")) {
    WARN("../shared not found (" << dir << "): skipping the StridedShard reference cases");
    return;
  }
  // every reference case that names a StridedShard is one of the two checked here
  std::size_t strided_cases = 0, golden_strided = 0;
  for (const char* file : {"/regressions.json", "/regressions_2.json"}) {
    std::ifstream in(dir + file);
    const auto doc = nlohmann::json::parse(in);
    const auto& cases = doc.is_array() ? doc : doc["cases"];
    for (const auto& c : cases)
      if (c.dump().find("_S(") != std::string::npos) {
        ++strided_cases;
        CHECK((c["id"] == "B12" || c["id"] == "R05"));
      }
  }
  std::ifstream golden(dir + "/golden_dev.jsonl");
  for (std::string line; std::getline(golden, line);) golden_strided += line.find("_S(") != std::string::npos;
  std::printf("StridedShard reference cases: %zu in regressions*.json, %zu in golden_dev.jsonl\n", strided_cases, golden_strided);
  CHECK(strided_cases == 2);

  const auto chosen = [](const nlohmann::json& t) { return t["strategies"][t["choice"]["index"].get<std::size_t>()]; };
  // B12: x = _S(0, 2)S(0), y = S(0)S(0) on 2x2 hold different blocks (rank (i, j) holds block 2j+i
  // of x, 2i+j of y): no row may keep both as they are, and the choice moves one at a finite cost.
  const auto b12 = nlohmann::json::parse(run_tool("table --json --op aten.add.Tensor --shapes 8,8 --mesh 2x2 --inputs '_S(0, 2)S(0);S(0)S(0)'"));
  for (const auto& s : b12["strategies"]) CHECK_FALSE((s["in"][0] == "_S(0, 2)S(0)" && s["in"][1] == "S(0)S(0)"));
  const auto pick = chosen(b12);
  REQUIRE(pick["total"].is_number());
  // x -> S(0)S(0) under DTensor's greedy order: mesh dim 1 all-gathers 16 bytes (its target is
  // nested under a different mesh dim 0), mesh dim 0 all-gathers 32 bytes and chunks, mesh dim 1
  // chunks again; 4 devices on one host (87.7 GB/s, 0.6 us per hop)
  const auto ag = [](double bytes) { return 6.6 + 0.6 + bytes / 1024 / 1024 / 1024 * 0.5 / 87.7 * 1e6; };
  CHECK(pick["in"][0] == "S(0)S(0)");
  CHECK_THAT(pick["total"].get<double>(), Catch::Matchers::WithinRel(ag(16) + ag(32), 1e-9));
  // controls: equal StridedShard inputs (and a unary op) keep them at no cost
  const auto same =
      chosen(nlohmann::json::parse(run_tool("table --json --op aten.add.Tensor --shapes 8,8 --mesh 2x2 --inputs '_S(0, 2)S(0);_S(0, 2)S(0)'")));
  CHECK(same["out"] == "_S(0, 2)S(0)");
  CHECK(same["total"] == 0.0);
  const auto neg = chosen(nlohmann::json::parse(run_tool("table --json --op aten.neg.default --shapes 8 --mesh 2x2 --inputs '_S(0, 2)S(0)'")));
  CHECK(neg["out"] == "_S(0, 2)S(0)");
  CHECK(neg["total"] == 0.0);
  // R05: [16, 4] as _S(0, 2) on mesh 2 viewed as [2, 8, 4] is S(1), at no cost
  const auto r05 =
      chosen(nlohmann::json::parse(run_tool("table --json --op aten.view.default --shapes 16x4 --mesh 2 --inputs '_S(0, 2)' --args '[[2, 8, 4]]'")));
  CHECK(r05["out"] == "S(1)");
  CHECK(r05["total"] == 0.0);
}
