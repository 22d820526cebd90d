#pragma once
/// \file iopddl_command.hpp
/// `ctshard iopddl FILE[.json|.json.gz]`: solve an IOPDDL contest instance (see
/// ctshard/solve/iopddl.hpp) with the exact solver under one deadline (reading included) and a
/// memory budget; report the cost, the proven lower bound, feasibility and the strategies.

#include <cstddef>
#include <iosfwd>
#include <string>

#include <nlohmann/json.hpp>

#include "ctshard/solve/budget.hpp"

namespace ctshard::cli {

/// The most bytes an input file may hold once inflated (1 GiB): a gzip stream expands up to
/// ~1000x, so a 1 MB `.json.gz` could otherwise fill the machine. The largest public contest
/// instance here (A) inflates to 93 MB.
inline constexpr std::size_t max_input_bytes = std::size_t{1} << 30;

/// The text of a file, gunzipped when it is gzip-compressed, at most `max_bytes` of it (checked as
/// it inflates), polling `deadline` every MiB. Throws ctshard::error naming the path (unreadable,
/// corrupt, or longer than `max_bytes`), solve::time_limit_reached once the deadline passes.
std::string read_maybe_gzip(const std::string& path, std::size_t max_bytes = max_input_bytes, const solve::Deadline& deadline = {});

/// Writes `text` to `path`, gzip-compressed when the name ends in `.gz`, in pieces of at most
/// `chunk_bytes` (capped at 1 GiB: zlib takes 32-bit lengths), whole or not at all: into a
/// temporary file created exclusively beside `path` (output_file.hpp), renamed over `path` once
/// every write and the close succeeded. `path` may only name a regular file or nothing: a
/// symbolic link, FIFO, device or directory is refused. Throws ctshard::error naming `path`.
void write_maybe_gzip(const std::string& path, const std::string& text, std::size_t chunk_bytes = std::size_t{1} << 30);

/// What `ctshard iopddl` may use.
struct IopddlOptions {
  double time_limit_s = 60;    ///< the whole request, reading included (checked_time_limit_s: "--time-limit-s")
  double max_memory_mib = 0;   ///< the text, the parsed instance, the graph and the solver (0: default_max_memory_mib)
  solve::Deadline deadline{};  ///< the request's deadline when it started earlier (the CLI's start-up)
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

}  // namespace ctshard::cli
