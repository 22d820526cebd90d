#include "ctshard/graph/option_checks.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <string>

#include "ctshard/error.hpp"
#include "ctshard/solve/budget.hpp"

namespace ctshard::graph {
namespace {

/// A field's name: "--device-tflops" (cli) or "device_tflops" (python) from "device_tflops".
std::string field_name(std::string_view key, OptionNames names) {
  if (names == OptionNames::python) return std::string(key);
  std::string out = "--";
  for (char c : key) out += c == '_' ? '-' : c;
  return out;
}

[[noreturn]] void refuse(std::string_view api, std::string_view key, OptionNames names, double value, std::string_view rule) {
  throw error(std::string(api) + ": " + field_name(key, names) + " must be " + std::string(rule) + ", got " + solve::number_text(value));
}

/// The cgroup (v2, then v1) memory limit in bytes, or 0 when none is readable.
double cgroup_limit_bytes() {
  for (const char* path : {"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"}) {
    std::ifstream f(path);
    std::string text;
    if (!(f >> text) || text == "max") continue;
    try {
      const double v = std::stod(text);
      if (v > 0 && v < 1e18) return v;
    } catch (const std::exception&) {}
  }
  return 0;
}

}  // namespace

double default_max_memory_mib() {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  double bytes = pages > 0 && page > 0 ? static_cast<double>(pages) * static_cast<double>(page) : 4294967296.0;
  if (const double cg = cgroup_limit_bytes(); cg > 0) bytes = std::min(bytes, cg);
  return std::max(64.0, std::floor(bytes / 4 / 1048576.0));
}

std::size_t memory_budget_bytes(double max_memory_mib) {
  const double mib = max_memory_mib > 0 ? max_memory_mib : default_max_memory_mib();
  return static_cast<std::size_t>(std::min(mib, max_memory_mib_limit) * 1048576.0);
}

double checked_time_limit_ms(double ms, std::string_view api, std::string_view field) {
  if (std::isnan(ms) || ms < 0)
    throw error(std::string(api) + ": " + std::string(field) + " must be a number of milliseconds >= 0, got " + solve::number_text(ms));
  return std::min(ms, solve::max_time_limit_s * 1000.0);
}

void check_global_options(GlobalOptions& o, std::string_view api, OptionNames names) {
  o.time_limit_ms = checked_time_limit_ms(o.time_limit_ms, api, field_name("time_limit_ms", names));
  if (!std::isfinite(o.device_tflops) || !(o.device_tflops > 0)) refuse(api, "device_tflops", names, o.device_tflops, "a finite number > 0");
  if (!std::isfinite(o.device_gbps) || !(o.device_gbps > 0)) refuse(api, "device_gbps", names, o.device_gbps, "a finite number > 0");
  if (!std::isfinite(o.memory_budget_gib) || o.memory_budget_gib < 0 || o.memory_budget_gib > max_memory_budget_gib)
    refuse(api, "memory_budget_gib", names, o.memory_budget_gib, "a finite number of GiB in [0, 2^30] (0: no budget)");
  (void)checked_memory_budget(o.max_memory_mib, api, names);
  check_free_input_options(o, api, names);
}

void check_free_input_options(const GlobalOptions& o, std::string_view api, OptionNames names) {
  const std::string free_inputs = names == OptionNames::python ? "free_inputs=True" : "--free-inputs";
  if (o.memory_budget_gib > 0 && !o.free_inputs)
    throw error(std::string(api) + ": " + field_name("memory_budget_gib", names) + " needs " + free_inputs +
                " (the budget bounds the bytes of the inputs the plan places)");
  if (o.hand_plans && !o.free_inputs)
    throw error(std::string(api) + ": " + field_name("hand_plans", names) + " needs " + free_inputs + " and the training step");
}

std::size_t checked_memory_budget(double max_memory_mib, std::string_view api, OptionNames names) {
  if (!std::isfinite(max_memory_mib) || max_memory_mib < 0 || (max_memory_mib > 0 && max_memory_mib < 1) || max_memory_mib > max_memory_mib_limit)
    refuse(api, "max_memory_mib", names, max_memory_mib, "0 (a quarter of the machine's memory) or a number of MiB in [1, 2^40]");
  return memory_budget_bytes(max_memory_mib);
}

}  // namespace ctshard::graph
