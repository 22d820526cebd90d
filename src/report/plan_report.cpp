// The greedy plan's `plan --json` document and text rendering, and the embedded default graph.

#include "ctshard/report/plan_report.hpp"

#include <algorithm>
#include <filesystem>
#include <iomanip>
#include <ostream>
#include <sstream>
#include <utility>
#include <vector>

#include "ctshard/error.hpp"
#include "ctshard/fx/reader.hpp"
#include "ctshard/report/commands.hpp"
#include "default_graph.hpp"

namespace ctshard::report {

using namespace ctshard::graph;  // NOLINT(google-build-using-namespace): the documents render the planners' types

nlohmann::json plan_json(const Plan& plan, const PlanOptions& options) {
  nlohmann::json j;
  j["source"] = plan.source;
  j["mesh"] = options.mesh;
  j["rule_set"] = std::string(to_string(options.rule_set));
  j["cost_model"] = to_string(options.cost_model);
  j["algo"] = options.algo == SelectAlgo::search ? "search" : "enumerate";
  j["placements"] = nlohmann::json::object();
  for (const auto& [name, spec] : plan.placements) j["placements"][name] = to_string(spec);
  j["symbols"] = nlohmann::json::array();
  for (const auto& s : plan.symbols) j["symbols"].push_back({{"name", s.name}, {"value", s.value}, {"bound", s.bound}});
  j["nodes"] = nlohmann::json::array();
  for (const auto& n : plan.nodes) {
    nlohmann::json node = {{"name", n.name},
                           {"op", n.op},
                           {"inputs", spec_texts(n.inputs)},
                           {"outputs", spec_texts(n.outputs)},
                           {"cost_us", cost_value(n.cost_us)},
                           {"fallback", n.fallback}};
    if (n.fallback) node["reason"] = n.reason;
    if (n.repaired) {  // as `reason` of a fallback: only where it applies
      node["repaired"] = true;
      node["repair"] = n.repair;
    }
    j["nodes"].push_back(std::move(node));
  }
  j["total_cost_us"] = cost_value(plan.total_cost_us);
  j["nodes_with_rule"] = plan.nodes_with_rule;
  j["nodes_fallback"] = plan.nodes_fallback;
  j["fallback_ops"] = plan.fallback_ops;
  j["nodes_repaired"] = plan.nodes_repaired;
  if (plan.data_parallel) {
    const DataParallelInputs& dp = *plan.data_parallel;
    j["data_parallel"] = {
        {"batch_size", dp.value}, {"batch_size_text", dp.batch}, {"inferred", dp.inferred}, {"inputs", dp.inputs}, {"note", dp.note}};
  }
  return j;
}

std::string fallback_warning(std::size_t nodes_with_rule, std::size_t nodes_fallback, const std::map<std::string, std::size_t>& fallback_ops) {
  const std::size_t op_nodes = nodes_with_rule + nodes_fallback;
  if (op_nodes == 0 || static_cast<double>(nodes_fallback) <= fallback_warning_share * static_cast<double>(op_nodes)) return {};
  std::vector<std::pair<std::string, std::size_t>> ops(fallback_ops.begin(), fallback_ops.end());
  std::stable_sort(ops.begin(), ops.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  std::ostringstream text;
  text << nodes_fallback << " of " << op_nodes << " op nodes (" << std::fixed << std::setprecision(1)
       << 100.0 * static_cast<double>(nodes_fallback) / static_cast<double>(op_nodes)
       << " %) fall back (no sharding rule, or a table past the enumeration limit: inputs Replicate), so the plan's costs say little: ";
  for (std::size_t i = 0; i < ops.size() && i < 8; ++i) text << (i ? ", " : "") << ops[i].first << " x" << ops[i].second;
  if (ops.size() > 8) text << ", ... (" << ops.size() << " ops)";
  text << ". Is the graph at the aten level? Capture it with make_fx, AOT autograd or "
          "torch.export(...).run_decompositions(), not a Dynamo backend's or symbolic_trace's graph";
  return text.str();
}

void print_plan(const Plan& plan, const PlanOptions& options, std::ostream& out, std::span<const std::string_view> node_marks) {
  out << "plan of " << plan.source << " on mesh ";
  for (std::size_t i = 0; i < options.mesh.size(); ++i) {
    if (i > 0) out << 'x';
    out << options.mesh[i];
  }
  out << "\ninput placements:";
  for (const auto& [name, spec] : plan.placements) out << ' ' << name << '=' << to_string(spec);
  out << (plan.placements.empty() ? " all Replicate\n" : " (others Replicate)\n");
  if (plan.data_parallel) {
    const DataParallelInputs& dp = *plan.data_parallel;
    out << "data parallel: batch size " << dp.batch << (dp.inferred ? " (inferred)" : "") << ", " << dp.inputs.size() << " inputs S(0) on mesh dim 0"
        << (dp.note.empty() ? "" : " (" + dp.note + ")") << '\n';
  }
  if (!plan.symbols.empty()) {
    out << "symbols:";
    for (const auto& s : plan.symbols) out << ' ' << s.name << '=' << s.value << (s.bound ? "" : " (unbound: prime hint)");
    out << '\n';
  }
  for (std::size_t k = 0; k < plan.nodes.size(); ++k) {
    const PlannedNode& n = plan.nodes[k];
    const std::string ins = specs_text(n.inputs), outs = specs_text(n.outputs);
    out << std::left << std::setw(28) << n.name << ' ' << std::setw(40) << n.op << " (" << ins << ") -> " << outs << "   " << std::fixed
        << std::setprecision(3) << n.cost_us << std::defaultfloat << " us" << (n.fallback ? "   [fallback: " + n.reason + "]" : "")
        << (n.repaired ? "   [repaired: " + n.repair + "]" : "") << (k < node_marks.size() ? node_marks[k] : std::string_view()) << '\n';
  }
  out << "total redistribution cost: " << std::fixed << std::setprecision(3) << plan.total_cost_us << std::defaultfloat << " us\n";
  out << "nodes with a rule: " << plan.nodes_with_rule << ", fallback: " << plan.nodes_fallback << '\n';
  if (plan.nodes_repaired > 0) out << "nodes repaired (dead ends of the greedy pass, docs/semantics.md): " << plan.nodes_repaired << '\n';
  for (const auto& [op, count] : plan.fallback_ops) out << "  fallback " << op << " x" << count << '\n';
}

std::map<std::string, Spec> default_placements(std::size_t mesh_ndim) {
  auto spec = [&](Placement first, Placement last) {
    Spec s(mesh_ndim);
    s[0] = first;
    if (mesh_ndim > 1) s[mesh_ndim - 1] = last;
    return s;
  };
  std::map<std::string, Spec> p{{"primals_1", spec(Shard(0), Replicate())}};
  if (mesh_ndim > 1) {
    p["primals_2"] = spec(Replicate(), Shard(0));
    p["primals_6"] = spec(Replicate(), Shard(0));
    p["primals_4"] = spec(Replicate(), Shard(1));
    p["primals_8"] = spec(Replicate(), Shard(1));
  }
  return p;
}

graph::Graph default_graph() { return fx::parse_fx_graph(default_graph_text, "<embedded default: src/report/default_graph.fx.txt>"); }

nlohmann::json coverage_json(const std::string& dir, const PlanOptions& options, const OpRegistry& registry) {
  if (!std::filesystem::is_directory(dir)) throw error("ctshard plan --coverage: '" + dir + "' is not a directory");
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.is_regular_file() && e.path().string().ends_with(".fx.txt")) files.push_back(e.path());
  if (files.empty()) throw error("ctshard plan --coverage: no *.fx.txt files in '" + dir + "'");
  std::sort(files.begin(), files.end());
  nlohmann::json report = nlohmann::json::array();
  for (const auto& f : files) {
    Plan plan;
    try {
      plan = plan_graph(fx::read_fx_graph_file(f.string()), options, registry);
    } catch (const std::exception& e) {  // one unreadable graph does not hide the others
      report.push_back({{"file", f.filename().string()}, {"error", e.what()}});
      continue;
    }
    const double share = plan.nodes.empty() ? 1.0 : static_cast<double>(plan.nodes_with_rule) / static_cast<double>(plan.nodes.size());
    report.push_back({{"file", f.filename().string()},
                      {"nodes_with_rule", plan.nodes_with_rule},
                      {"nodes_fallback", plan.nodes_fallback},
                      {"rule_share", share},
                      {"fallback_ops", plan.fallback_ops}});
  }
  return nlohmann::json{{"files", report}};
}

bool coverage_read_any(const nlohmann::json& coverage) {
  for (const auto& f : coverage.at("files"))
    if (!f.contains("error")) return true;
  return false;
}

void print_coverage(const nlohmann::json& coverage, std::ostream& out) {
  for (const auto& f : coverage.at("files")) {
    const std::string file = f.at("file").get<std::string>();
    if (f.contains("error")) {
      out << file << ": error: " << f.at("error").get<std::string>() << '\n';
      continue;
    }
    out << file << ": " << f.at("nodes_with_rule").get<std::size_t>() << " with a rule, " << f.at("nodes_fallback").get<std::size_t>()
        << " fallback (" << std::fixed << std::setprecision(1) << 100.0 * f.at("rule_share").get<double>() << std::defaultfloat << "% covered)\n";
    for (const auto& [op, count] : f.at("fallback_ops").items()) out << "  " << op << " x" << count.get<std::size_t>() << '\n';
  }
}

}  // namespace ctshard::report
