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
  std::size_t total = 0, matched = 0;
  std::string failures;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    const auto want = nlohmann::json::parse(line);
    ++total;
    std::ostringstream cmd;
    cmd << "table --json --op '" << want["op"].get<std::string>() << "' --shapes '" << join(want["shapes"], ",", true)
        << "' --mesh '";
    std::string mesh;
    for (const auto& m : want["mesh"]) {
      if (!mesh.empty()) mesh += 'x';
      mesh += std::to_string(m.get<int>());
    }
    cmd << mesh << "' --inputs '" << join(want["inputs"], ";", false) << "' --devices-per-host " << want["devices_per_host"].get<int>()
        << " --dtype " << (want["itemsize"].get<int>() == 4 ? "float32" : want["itemsize"].get<int>() == 2 ? "bfloat16" : "float64") ;
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
    else if (failures.size() < 4000) failures += "case " + std::to_string(want["id"].get<int>()) + " (" + want["op"].get<std::string>() + "): " + diff + "\n";
  }
  std::printf("reference cases matched through ctshard table --json (and --algo search): %zu / %zu\n", matched, total);
  INFO(failures);
  CHECK(total == 300);
  CHECK(matched == total);
}
