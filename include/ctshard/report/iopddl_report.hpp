#pragma once
/// \file iopddl_report.hpp
/// `ctshard iopddl FILE[.json|.json.gz]`: solve an IOPDDL contest instance (see
/// ctshard/solve/iopddl.hpp) with the exact solver under one deadline (reading included) and a
/// memory budget; report the cost, the proven lower bound, feasibility and the strategies.

#include <cstddef>
#include <iosfwd>
#include <string>

#include <nlohmann/json.hpp>

#include "ctshard/solve/budget.hpp"

namespace ctshard::report {

/// What `ctshard iopddl` may use.
struct IopddlOptions {
  double time_limit_s = 60;          ///< the whole request, reading included (checked_time_limit_s: "--time-limit-s")
  double max_memory_mib = 0;         ///< the text, the parsed instance, the graph and the solver (0: default_max_memory_mib)
  solve::Deadline deadline{};        ///< the request's deadline when it started earlier (the CLI's start-up)
  std::ostream* progress = nullptr;  ///< progress lines of a solve over 1 s (solve::SolveOptions::progress); null: none
};

/// The `iopddl --json` document: file, name, nodes, edges, usage_limit, limits (distinct maximal
/// sets of live nodes), cost, lower_bound, gap, feasible, optimal, status, seconds,
/// read_seconds, strategies (one index per node), solver statistics. Throws ctshard::error for a
/// bad file or option, solve::time_limit_reached when the time runs out before the instance is
/// read (no plan exists then).
nlohmann::json iopddl_json(const std::string& path, const IopddlOptions& options);
/// iopddl_json with a time limit only.
nlohmann::json iopddl_json(const std::string& path, double time_limit_s);

/// Text rendering of an iopddl_json() document (without the strategies).
void print_iopddl(const nlohmann::json& doc, std::ostream& out);

}  // namespace ctshard::report
