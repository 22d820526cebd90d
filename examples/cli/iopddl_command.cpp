#include "iopddl_command.hpp"

#include <zlib.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ostream>

#include "ctshard/error.hpp"
#include "ctshard/solve/iopddl.hpp"
#include "ctshard/solve/solver.hpp"

namespace ctshard::cli {

std::string read_maybe_gzip(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");  // reads plain files as they are
  if (f == nullptr) throw error("cannot open '" + path + "'");
  std::string text;
  char buf[1 << 16];
  int n = 0;
  while ((n = gzread(f, buf, sizeof buf)) > 0) text.append(buf, static_cast<std::size_t>(n));
  const bool failed = n < 0;
  gzclose(f);
  if (failed) throw error("cannot read '" + path + "' (corrupt gzip data?)");
  return text;
}

void write_maybe_gzip(const std::string& path, const std::string& text, std::size_t chunk_bytes) {
  const bool gz = path.size() > 3 && path.compare(path.size() - 3, 3, ".gz") == 0;
  // whole or nothing: written beside the target, renamed over it once complete
  const std::string tmp = path + ".tmp";
  gzFile f = gzopen(tmp.c_str(), gz ? "wb" : "wbT");  // T: no compression
  if (f == nullptr) throw error("cannot write '" + path + "'");
  // gzwrite takes an unsigned length and returns an int: large texts (a 3-D mesh's cost graph
  // reaches gigabytes) go in chunks that fit both
  const std::size_t chunk = std::clamp<std::size_t>(chunk_bytes, 1, std::size_t{1} << 30);
  bool ok = true;
  for (std::size_t at = 0; at < text.size() && ok; at += chunk) {
    const auto len = static_cast<unsigned>(std::min(chunk, text.size() - at));
    ok = gzwrite(f, text.data() + at, len) == static_cast<int>(len);
  }
  ok = gzclose(f) == Z_OK && ok;
  if (ok) ok = std::rename(tmp.c_str(), path.c_str()) == 0;
  if (!ok) {
    std::remove(tmp.c_str());
    throw error("cannot write '" + path + "'");
  }
}

nlohmann::json iopddl_json(const std::string& path, double time_limit_s) {
  const auto t0 = std::chrono::steady_clock::now();
  const solve::IopddlInstance inst = solve::read_iopddl(read_maybe_gzip(path));
  const double read_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  solve::SolveOptions o;
  o.time_limit_s = std::max(0.0, time_limit_s - read_s);
  const solve::SolveResult r = solve::solve(inst.graph, o);
  const auto& s = r.stats;
  nlohmann::json j;
  j["file"] = path;
  j["name"] = inst.name;
  j["nodes"] = inst.graph.num_nodes();
  j["edges"] = inst.graph.edges.size();
  j["usage_limit"] = inst.usage_limit >= 0 ? nlohmann::json(inst.usage_limit) : nlohmann::json(nullptr);
  j["limits"] = inst.graph.limits.size();
  j["feasible"] = r.feasible;
  j["cost"] = r.feasible ? nlohmann::json(r.cost) : nlohmann::json(nullptr);
  j["lower_bound"] = solve::is_forbidden(r.lower_bound) ? nlohmann::json("inf") : nlohmann::json(r.lower_bound);
  j["gap"] = r.gap();
  j["optimal"] = r.optimal;
  j["status"] = r.status;
  j["seconds"] = read_s + r.seconds;
  j["read_seconds"] = read_s;
  j["time_limit_s"] = time_limit_s;
  j["strategies"] = r.labels;
  j["solver"] = {{"live_after_reduction", {{"nodes", s.live_nodes}, {"labels", s.live_labels}, {"edges", s.live_edges}}},
                 {"search_core", {{"nodes", s.core_nodes}, {"labels", s.core_labels}}},
                 {"eliminated", s.eliminated},
                 {"dominated_labels", s.dominated},
                 {"labels_removed", s.labels_removed},
                 {"reduced_cost_fixed", s.reduced_cost_fixed},
                 {"dual_iterations", s.dual_iterations},
                 {"search_nodes", s.search_nodes},
                 {"search_splits", s.search_splits},
                 {"rounds", s.rounds},
                 {"enforced_limits", s.enforced_limits}};
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

}  // namespace ctshard::cli
