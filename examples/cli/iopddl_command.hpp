#pragma once
/// \file iopddl_command.hpp
/// `ctshard iopddl FILE[.json|.json.gz]`: solve an IOPDDL contest instance (see
/// ctshard/solve/iopddl.hpp) with the exact solver under a time limit; report the cost, the
/// proven lower bound, feasibility and the strategies.

#include <cstddef>
#include <iosfwd>
#include <string>

#include <nlohmann/json.hpp>

namespace ctshard::cli {

/// The text of a file, gunzipped when it is gzip-compressed. Throws ctshard::error.
std::string read_maybe_gzip(const std::string& path);

/// Writes `text` to `path`, gzip-compressed when the name ends in `.gz`, in pieces of at most
/// `chunk_bytes` (capped at 1 GiB: zlib takes 32-bit lengths), whole or not at all (a temporary
/// `path.tmp` is renamed over `path` once complete). Throws ctshard::error naming `path`.
void write_maybe_gzip(const std::string& path, const std::string& text, std::size_t chunk_bytes = std::size_t{1} << 30);

/// The `iopddl --json` document: file, name, nodes, edges, usage_limit, limits (distinct usage
/// rows), cost, lower_bound, gap, feasible, optimal, status, seconds, strategies (one index per
/// node), solver statistics.
nlohmann::json iopddl_json(const std::string& path, double time_limit_s);

/// Text rendering of an iopddl_json() document (without the strategies).
void print_iopddl(const nlohmann::json& doc, std::ostream& out);

}  // namespace ctshard::cli
