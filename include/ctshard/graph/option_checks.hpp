#pragma once
/// \file option_checks.hpp
/// The one rule set for the numbers a user passes to the whole-graph entry points (`ctshard plan
/// --global`, `ctshard iopddl`, Python `ctshard.plan(..., algo="global")`): time limits, rates
/// and budgets (devices per host and mesh sizes are checked by MeshTopology::build). The command line and the Python extension both call these, so a
/// value is accepted or refused the same way in both; only the field's name differs
/// (`--device-tflops` / `device_tflops`). Errors are ctshard::error naming the field and the
/// value (docs/robustness.md, "Validated numbers").

#include <cstddef>
#include <string>
#include <string_view>

#include "ctshard/graph/global_plan.hpp"

namespace ctshard::graph {

/// How a field is named in messages: as a command-line option or a Python keyword.
enum class OptionNames { cli, python };

/// The largest memory budget accepted (MiB): 2^40 MiB (1 EiB), so the byte count fits 64 bits.
inline constexpr double max_memory_mib_limit = 1099511627776.0;
/// The largest memory budget of --memory-budget-gib (GiB): 2^30 GiB, 2^60 bytes. A budget above
/// what the graph's values can use together is lowered to that (it cannot bind), so the limit and
/// the usages stay within the solver's usage range (solve::max_usage_total).
inline constexpr double max_memory_budget_gib = 1073741824.0;

/// The default --max-memory-mib: a quarter of the machine's memory (the smaller of the physical
/// memory and the cgroup's limit, when one is set), at least 64 MiB.
double default_max_memory_mib();

/// Bytes of a --max-memory-mib value (0: default_max_memory_mib()).
std::size_t memory_budget_bytes(double max_memory_mib);

/// A time limit in milliseconds (`field` names it): NaN or negative throws ctshard::error, above
/// solve::max_time_limit_s (10^9 ms) it is clamped. Returns the clamped value.
double checked_time_limit_ms(double ms, std::string_view api, std::string_view field);

/// Checks and clamps every number of `o` (time_limit_ms, device_tflops, device_gbps,
/// memory_budget_gib, max_memory_mib) under `names`; `api` starts the message ("ctshard plan",
/// "ctshard.plan"). Throws ctshard::error naming the field and the value:
/// - time_limit_ms: a number >= 0 (clamped to 10^9 ms);
/// - device_tflops, device_gbps: finite and > 0;
/// - memory_budget_gib: finite, >= 0 and at most 2^30;
/// - max_memory_mib: finite, 0 (the default) or in [1, 2^40];
/// - check_free_input_options.
void check_global_options(GlobalOptions& o, std::string_view api, OptionNames names);

/// What only free inputs use is an error without them, not silently dropped: memory_budget_gib > 0
/// and hand_plans need free_inputs. Throws ctshard::error naming the field (under `names`).
void check_free_input_options(const GlobalOptions& o, std::string_view api, OptionNames names);

/// The memory budget of `ctshard iopddl --max-memory-mib` (checked as in check_global_options).
std::size_t checked_memory_budget(double max_memory_mib, std::string_view api, OptionNames names);

}  // namespace ctshard::graph
