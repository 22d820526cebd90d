#include "ctshard/report/iopddl_report.hpp"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <ostream>

#include "ctshard/error.hpp"
#include "ctshard/graph/option_checks.hpp"
#include "ctshard/io/gzip_file.hpp"
#include "ctshard/solve/iopddl.hpp"
#include "ctshard/solve/solver.hpp"

namespace ctshard::report {

using namespace ctshard::graph;  // NOLINT(google-build-using-namespace): the documents render the planners' types
using namespace ctshard::io;     // NOLINT(google-build-using-namespace)

nlohmann::json iopddl_json(const std::string& path, double time_limit_s) {
  IopddlOptions o;
  o.time_limit_s = time_limit_s;
  return iopddl_json(path, o);
}

nlohmann::json iopddl_json(const std::string& path, const IopddlOptions& options) {
  const auto t0 = std::chrono::steady_clock::now();
  // one deadline from here (or from the caller's start-up): reading, the graph, the solve
  const double limit_s = solve::checked_time_limit_s(options.time_limit_s, "ctshard iopddl: --time-limit-s");
  const solve::Deadline deadline = solve::Deadline::after(limit_s).earlier(options.deadline);
  const std::size_t budget = checked_memory_budget(options.max_memory_mib, "ctshard iopddl", OptionNames::cli);
  solve::IopddlInstance inst;
  {
    const std::string text = read_maybe_gzip(path, std::min(max_input_bytes, budget), deadline);
    solve::IopddlReadOptions ro;
    ro.max_memory_bytes = budget - text.size();
    ro.deadline = deadline;
    inst = solve::read_iopddl(text, ro);
  }
  const double read_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  solve::SolveOptions o;
  o.time_limit_s = solve::max_time_limit_s;  // the deadline decides
  o.deadline = deadline;
  o.max_memory_bytes = budget;
  o.progress = options.progress;
  const solve::SolveResult r = solve::solve(inst.graph, o);
  const auto& s = r.stats;
  nlohmann::json j;
  j["file"] = path;
  j["name"] = inst.name;
  j["nodes"] = inst.graph.num_nodes();
  j["edges"] = inst.graph.edges.size();
  j["usage_limit"] = inst.usage_limit >= 0 ? nlohmann::json(inst.usage_limit) : nlohmann::json(nullptr);
  j["limits"] = inst.graph.interval_limit ? solve::count_interval_limits(inst.graph.intervals, false) : inst.graph.limits.size();
  j["feasible"] = r.feasible;
  j["cost"] = r.feasible ? nlohmann::json(r.cost) : nlohmann::json(nullptr);
  j["lower_bound"] = solve::is_forbidden(r.lower_bound) ? nlohmann::json("inf") : nlohmann::json(r.lower_bound);
  j["gap"] = r.gap();
  j["optimal"] = r.optimal;
  j["status"] = r.status;
  j["seconds"] = read_s + r.seconds;
  j["read_seconds"] = read_s;
  j["time_limit_s"] = limit_s;
  j["memory_mib"] = static_cast<double>(inst.graph.memory_bytes()) / 1048576.0;
  j["strategies"] = r.labels;
  j["solver"] = {{"live_after_reduction", {{"nodes", s.live_nodes}, {"labels", s.live_labels}, {"edges", s.live_edges}}},
                 {"search_core", {{"nodes", s.core_nodes}, {"labels", s.core_labels}}},
                 {"eliminated", s.eliminated},
                 {"dominated_labels", s.dominated},
                 {"labels_removed", s.labels_removed},
                 {"reduced_cost_fixed", s.reduced_cost_fixed},
                 {"threshold_fixed", s.threshold_fixed},
                 {"dual_iterations", s.dual_iterations},
                 {"search_nodes", s.search_nodes},
                 {"search_splits", s.search_splits},
                 {"rounds", s.rounds},
                 {"enforced_limits", s.enforced_limits},
                 {"lagrangian_ms", s.lagrangian_ms},
                 {"repair_ms", s.repair_ms},
                 {"peak_memory_bytes", s.peak_memory_bytes}};
  // the Lagrangian bound of the usage limits or time steps; null when it was not computed
  j["solver"]["lagrangian_bound"] =
      s.lagrangian_bound == std::numeric_limits<std::int64_t>::min() ? nlohmann::json(nullptr) : nlohmann::json(s.lagrangian_bound);
  return j;
}

void print_iopddl(const nlohmann::json& j, std::ostream& out) {
  out << "instance " << j["name"].get<std::string>() << " (" << j["file"].get<std::string>() << "): " << j["nodes"] << " nodes, " << j["edges"]
      << " edges, usage limit " << j["usage_limit"] << " (" << j["limits"] << " distinct live sets)\n";
  out << "status: " << j["status"].get<std::string>() << ", feasible: " << (j["feasible"].get<bool>() ? "yes" : "no") << '\n';
  out << "cost: " << j["cost"] << ", lower bound: " << j["lower_bound"] << ", gap: " << j["gap"] << '\n';
  out << "time: " << j["seconds"] << " s (limit " << j["time_limit_s"] << " s)\n";
  const auto& s = j["solver"];
  out << "solver: after reduction " << s["live_after_reduction"]["nodes"] << " nodes / " << s["live_after_reduction"]["labels"] << " labels; "
      << s["dual_iterations"] << " dual iterations, " << s["search_nodes"] << " search nodes, " << s["rounds"] << " round(s)\n";
}

}  // namespace ctshard::report
