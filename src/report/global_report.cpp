// The whole-graph plan's `plan --global --json` document and text rendering.

#include "ctshard/report/global_report.hpp"

#include <cmath>
#include <iomanip>
#include <ostream>
#include <string_view>
#include <vector>

#include "ctshard/graph/option_checks.hpp"
#include "ctshard/report/commands.hpp"
#include "ctshard/report/plan_report.hpp"
#include "ctshard/solve/budget.hpp"

namespace ctshard::report {

using namespace ctshard::graph;  // NOLINT(google-build-using-namespace): the documents render the planners' types

namespace {

constexpr double bytes_per_gib = 1073741824.0;

/// {"parameters", "gradients", "optimizer", "activations", "total"} in GiB per device.
nlohmann::json memory_json(const MemoryFigures& m) {
  return {{"parameters", m.parameters / bytes_per_gib},
          {"gradients", m.gradients / bytes_per_gib},
          {"optimizer", m.optimizer / bytes_per_gib},
          {"activations", m.activations / bytes_per_gib},
          {"total", m.total() / bytes_per_gib}};
}

void print_memory(const MemoryFigures& m, std::ostream& out) {
  out << std::setprecision(6) << m.total() / bytes_per_gib << " GiB (parameters " << m.parameters / bytes_per_gib << ", gradients "
      << m.gradients / bytes_per_gib << ", optimizer " << m.optimizer / bytes_per_gib << ", activations " << m.activations / bytes_per_gib << ")"
      << std::defaultfloat;
}

}  // namespace

nlohmann::json global_plan_json(const GlobalPlan& g, const PlanOptions& options, const GlobalOptions& global) {
  nlohmann::json j = plan_json(g.plan, options);
  for (std::size_t i = 0; i < g.plan.nodes.size(); ++i) j["nodes"][i]["changed"] = static_cast<bool>(g.changed[i]);
  j["algo"] = "global";
  j["lower_bound_us"] = cost_value(g.lower_bound_us);
  j["optimality_gap"] = g.optimality_gap;
  j["proven_optimal"] = g.result.optimal;
  j["status"] = g.result.status;
  j["greedy_total_cost_us"] = cost_value(g.greedy.total_cost_us);
  j["greedy_nodes_repaired"] = g.greedy.nodes_repaired;
  j["objective_us"] = cost_value(g.objective_us);
  j["greedy_objective_us"] = cost_value(g.greedy_objective_us);
  std::size_t changed = 0;
  nlohmann::json changes = nlohmann::json::array();
  for (std::size_t i = 0; i < g.plan.nodes.size(); ++i) {
    if (!g.changed[i]) continue;
    ++changed;
    const auto& a = g.greedy.nodes[i];
    const auto& b = g.plan.nodes[i];
    changes.push_back({{"name", b.name},
                       {"op", b.op},
                       {"greedy", {{"inputs", spec_texts(a.inputs)}, {"outputs", spec_texts(a.outputs)}, {"cost_us", cost_value(a.cost_us)}}},
                       {"global", {{"inputs", spec_texts(b.inputs)}, {"outputs", spec_texts(b.outputs)}, {"cost_us", cost_value(b.cost_us)}}}});
  }
  j["nodes_changed"] = changed;
  j["changes"] = changes;
  nlohmann::json inputs = nlohmann::json::object();
  for (const auto& [name, spec] : g.inputs) inputs[name] = to_string(spec);
  j["input_placements"] = inputs;
  if (global.free_inputs) {
    j["free_inputs"] = true;
    j["compute_us"] = g.compute_us;
    j["greedy_compute_us"] = g.greedy_compute_us;
    j["device_tflops"] = global.device_tflops;
    j["device_gbps"] = global.device_gbps;
    if (global.memory_budget_gib > 0) j["memory_budget_gib"] = global.memory_budget_gib;
  }
  if (g.result.status == "infeasible" && g.min_memory_bytes > 0) j["min_memory_gib"] = cost_value(g.min_memory_bytes / bytes_per_gib);
  if (g.training) {
    j["training"] = true;
    j["optimizer"] = to_string(g.optimizer);
    nlohmann::json grads = nlohmann::json::object();
    for (const auto& [grad, param] : g.gradients) grads[grad] = param;
    j["gradients"] = grads;
    j["gradient_reduction_us"] = g.gradient_reduction_us;
    j["step_time_us"] = cost_value(g.objective_us);
    j["memory"] = memory_json(g.memory);
    j["greedy_memory"] = memory_json(g.greedy_memory);
  }
  if (global.hand_plans) {
    nlohmann::json hands = nlohmann::json::array();
    for (const HandPlan& h : g.hand_plans) {
      nlohmann::json in = nlohmann::json::object();
      for (const auto& [name, spec] : h.inputs) in[name] = to_string(spec);
      hands.push_back({{"name", h.name},
                       {"step_time_us", cost_value(h.step_time_us)},
                       {"redistribution_us", cost_value(h.redistribution_us)},
                       {"memory", memory_json(h.memory)},
                       {"status", h.status},
                       {"input_placements", in}});
    }
    j["hand_plans"] = hands;
  }
  const auto& s = g.result.stats;
  j["solver"] = {{"variables", g.variables},
                 {"candidates", g.candidates},
                 {"max_candidates", g.max_candidates},
                 {"edges", g.graph.edges.size()},
                 {"greedy_rows_added", g.greedy_rows_added},
                 {"undelivered_rows", g.undelivered_rows},
                 {"live_after_reduction", {{"nodes", s.live_nodes}, {"labels", s.live_labels}, {"edges", s.live_edges}}},
                 {"search_core", {{"nodes", s.core_nodes}, {"labels", s.core_labels}}},
                 {"eliminated", s.eliminated},
                 {"dominated_labels", s.dominated},
                 {"limits_dominated_labels", s.limits_dominated},
                 {"reduced_cost_fixed", s.reduced_cost_fixed},
                 {"threshold_fixed", s.threshold_fixed},
                 {"dual_iterations", s.dual_iterations},
                 {"search_nodes", s.search_nodes},
                 {"search_splits", s.search_splits},
                 {"elimination_work", s.elimination_work},
                 {"phase_ms",
                  {{"reduce", s.reduce_ms},
                   {"dual", s.dual_ms},
                   {"elimination", s.elimination_ms},
                   {"search", s.search_ms},
                   {"lagrangian", s.lagrangian_ms},
                   {"limits_dominance", s.limits_dominance_ms}}},
                 {"build_complete", g.built},
                 {"memory_mib", static_cast<double>(g.memory_bytes) / 1048576.0},
                 {"build_ms", g.build_ms},
                 {"solve_ms", g.solve_ms},
                 {"solve_cpu_ms", g.result.cpu_seconds * 1000.0},
                 {"peak_memory_bytes", s.peak_memory_bytes},
                 {"time_limit_ms", global.time_limit_ms},
                 {"max_memory_mib", static_cast<double>(memory_budget_bytes(global.max_memory_mib)) / 1048576.0}};
  nlohmann::json restricted = nullptr;
  if (g.restricted)
    restricted = {{"why", g.restricted->why == RestrictedCandidates::Why::memory ? "memory" : "time"},
                  {"tied_mesh_dims", g.restricted->tied_mesh_dims},
                  {"full_candidates", g.restricted->full_candidates},
                  {"full_cells", g.restricted->full_cells},
                  {"full_mib", static_cast<double>(g.restricted->full_bytes) / 1048576.0}};
  j["solver"]["restricted_candidates"] = restricted;
  return j;
}

void print_global_plan(const GlobalPlan& g, const PlanOptions& options, const GlobalOptions& global, std::ostream& out) {
  std::vector<std::string_view> marks(g.plan.nodes.size());
  for (std::size_t i = 0; i < marks.size() && i < g.changed.size(); ++i)
    if (g.changed[i]) marks[i] = "   [changed]";
  if (global.free_inputs) {  // the inputs' placements are the plan's, not only the pins
    Plan shown = g.plan;
    shown.placements = g.inputs;
    print_plan(shown, options, out, marks);
  } else {
    print_plan(g.plan, options, out, marks);
  }
  std::size_t changed = 0;
  for (bool c : g.changed) changed += c ? 1 : 0;
  out << std::fixed << std::setprecision(3);
  out << "global plan: redistribution " << g.plan.total_cost_us << " us (greedy " << g.greedy.total_cost_us << " us), " << changed << " of "
      << g.plan.nodes.size() << " nodes changed\n";
  if (global.free_inputs)
    out << "objective (redistribution + compute): " << g.objective_us << " us (greedy " << g.greedy_objective_us << " us); compute " << g.compute_us
        << " us (greedy " << g.greedy_compute_us << " us)\n";
  if (g.training) {
    out << "training step (" << to_string(g.optimizer) << ", " << g.gradients.size() << " parameters): gradient reductions " << std::fixed
        << std::setprecision(3) << g.gradient_reduction_us << " us; memory per device ";
    print_memory(g.memory, out);
    out << "; greedy ";
    print_memory(g.greedy_memory, out);
    out << '\n';
  }
  if (g.result.status == "infeasible" && g.min_memory_bytes > 0)
    out << "infeasible memory budget: the smallest footprint of any plan is " << solve::number_text(g.min_memory_bytes / bytes_per_gib)
        << " GiB per device\n";  // (every digit: a budget of the printed value fits it)
  for (const HandPlan& h : g.hand_plans) {
    out << "hand plan " << h.name << ": step " << std::fixed << std::setprecision(3) << h.step_time_us << " us (redistribution "
        << h.redistribution_us << " us), memory ";
    print_memory(h.memory, out);
    out << '\n';
  }
  if (g.restricted)
    out << "the full cost graph (" << g.restricted->full_cells << " matrix cells, " << static_cast<double>(g.restricted->full_bytes) / 1048576.0
        << " MiB) would not fit "
        << (g.restricted->why == RestrictedCandidates::Why::memory ? "the solver's share of the memory budget (--max-memory-mib)" : "the time left")
        << ": candidates restricted to one placement on the " << g.restricted->tied_mesh_dims << " innermost mesh dims (of "
        << g.restricted->full_candidates << "); the bound is the full problem's\n";
  if (!g.built) out << "the time limit (" << global.time_limit_ms << " ms) was reached while the cost graph was built: this is the greedy plan\n";
  out << "lower bound: " << g.lower_bound_us << " us, gap " << std::setprecision(6) << g.optimality_gap
      << (g.result.optimal ? " (proven optimal)" : (" (" + g.result.status + ")")) << std::setprecision(3) << '\n';
  out << "solver: " << g.variables << " variables, " << g.candidates << " candidates (max " << g.max_candidates << "), " << g.graph.edges.size()
      << " edges; after reduction " << g.result.stats.live_nodes << " nodes; " << g.result.stats.dual_iterations << " dual iterations, "
      << g.result.stats.search_nodes << " search nodes; build " << g.build_ms << " ms, solve " << g.solve_ms << " ms\n"
      << std::defaultfloat;
  // the largest savings
  std::vector<std::size_t> idx;
  for (std::size_t i = 0; i < g.plan.nodes.size(); ++i)
    if (g.changed[i]) idx.push_back(i);
  std::stable_sort(idx.begin(), idx.end(), [&](std::size_t a, std::size_t b) {
    return g.greedy.nodes[a].cost_us - g.plan.nodes[a].cost_us > g.greedy.nodes[b].cost_us - g.plan.nodes[b].cost_us;
  });
  if (!idx.empty()) out << "where the global plan differs (largest saving first):\n";
  for (std::size_t k = 0; k < idx.size() && k < 10; ++k) {
    const auto& a = g.greedy.nodes[idx[k]];
    const auto& b = g.plan.nodes[idx[k]];
    out << "  " << b.name << " " << b.op << ": (" << specs_text(a.inputs) << ") -> " << specs_text(a.outputs) << " " << std::fixed
        << std::setprecision(3) << a.cost_us << " us  =>  (" << specs_text(b.inputs) << ") -> " << specs_text(b.outputs) << " " << b.cost_us
        << " us\n"
        << std::defaultfloat;
  }
  if (idx.size() > 10) out << "  ... and " << idx.size() - 10 << " more\n";
}

}  // namespace ctshard::report
