#pragma once
/// \file global_plan.hpp
/// Whole-graph plans: every op node's strategy chosen jointly (`ctshard plan --global`), as
/// auto-parallel planners do, instead of node by node as DTensor does at run time. The graph
/// becomes a pairwise cost graph (ctshard::solve::CostGraph) — one variable per op node with a
/// rule, its labels the node's candidate strategies, an edge per producer -> consumer pair
/// priced by the redistribution between the producer's output spec and the spec the consumer's
/// strategy needs — and the exact solver returns the optimum with its proof (lower bound, gap).
/// The model is documented in docs/global_plan.md.

#include <cstdint>
#include <iosfwd>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ctshard/graph/greedy.hpp"
#include "ctshard/graph/ir.hpp"
#include "ctshard/solve/budget.hpp"
#include "ctshard/solve/cost_graph.hpp"
#include "ctshard/solve/solver.hpp"

namespace ctshard::graph {

/// The optimizer whose state each parameter carries (docs/global_plan.md, "Training step"):
/// states per parameter element, at the parameter's dtype and planned placement.
enum class Optimizer {
  sgd,           ///< no state
  sgd_momentum,  ///< one state (the momentum buffer)
  adam,          ///< two states (first and second moments)
};

/// Optimizer states per parameter element (sgd 0, sgd_momentum 1, adam 2).
[[nodiscard]] int optimizer_states(Optimizer o) noexcept;

/// "adam", "sgd", "sgd_momentum" -> Optimizer. Throws ctshard::error naming `text` otherwise, the
/// message starting with `api` ("ctshard plan", "ctshard.plan").
[[nodiscard]] Optimizer parse_optimizer(const std::string& text, std::string_view api = "ctshard plan");

/// The name of an optimizer ("adam", ...).
[[nodiscard]] std::string to_string(Optimizer o);

/// The training-step model (`plan --global --free-inputs --training`): the graph is a joint
/// forward + backward graph; each gradient is reduced to its parameter's placement (priced as the
/// redistribution gradient spec -> parameter spec) and the memory per device counts parameters,
/// gradients, optimizer state and the activations saved for the backward.
struct TrainingStep {
  /// On explicitly; also turned on by `gradients` or, with free inputs, by an AOT joint graph
  /// (placeholders `primals_*` then `tangents_*`, detected by training_gradients).
  bool enabled = false;
  /// Read the gradients of an AOT joint graph when none are given (with free inputs); false
  /// (`--no-training`, Python `training=False`): no training step unless `gradients` are given.
  bool detect = true;
  /// Gradient value -> parameter input (graph names); empty: read from the AOT format
  /// (training_gradients). A pair whose annotated shapes differ, or a parameter named as its own
  /// gradient, is a ctshard::error naming both.
  std::vector<std::pair<std::string, std::string>> gradients;
  Optimizer optimizer = Optimizer::adam;
};

/// Bytes per device of one plan by category (each value at its planned local size).
struct MemoryFigures {
  double parameters = 0, gradients = 0, optimizer = 0, activations = 0;
  [[nodiscard]] double total() const noexcept { return parameters + gradients + optimizer + activations; }
};

/// Options of `ctshard plan --global` beyond PlanOptions.
struct GlobalOptions {
  /// Budget of the whole request (ms): the greedy plan, candidates, cost-graph build, reductions
  /// and search share one deadline (`deadline` when set, else this from the call); the best plan
  /// so far is returned with its gap. check_global_options: NaN or negative is an error, more
  /// than 10^9 ms is clamped.
  double time_limit_ms = 10000;
  /// The request's deadline, when it started before the call (the CLI sets it at start-up, so
  /// reading the graph counts); unset: time_limit_ms from the call.
  solve::Deadline deadline{};
  /// Memory budget of the cost graph and the solver's working copy (MiB; 0: default_max_memory_mib,
  /// a quarter of the machine's memory). A problem that does not fit is a ctshard::error.
  double max_memory_mib = 0;
  /// Unpinned inputs become variables (R or S(d) on each mesh dim); the objective then adds each
  /// op's compute time under its strategy, and the per-device memory budget applies.
  bool free_inputs = false;
  /// Offer every candidate row, also those whose input needs a StridedShard or Partial that no
  /// producer delivers (the "delivered placements" rule of docs/global_plan.md off).
  bool every_candidate = false;
  double device_tflops = 100;  ///< per-device FLOP rate for the compute term (10^12 FLOP/s)
  double device_gbps = 1000;   ///< per-device memory bandwidth for the compute term (GB/s)
  /// Per-device memory budget (GiB; 0 = none): the graph inputs' bytes, or with a training step
  /// the total of MemoryFigures.
  double memory_budget_gib = 0;
  std::vector<std::pair<std::string, std::string>> ties;  ///< values that must share a placement
  /// Progress lines of a solve running over 1 s (solve::SolveOptions::progress, costs in µs);
  /// null: none (`--quiet`). Not owned.
  std::ostream* progress = nullptr;
  TrainingStep training;  ///< the training-step model (off by default)
  /// Also price the hand-written plans (DDP, FSDP, Megatron TP + FSDP) in the same model; the
  /// inputs pinned by PlanOptions::placements keep their pins in each.
  bool hand_plans = false;
};

/// The gradients of an AOT graph, as (gradient value, parameter) pairs in primal order, `None`
/// outputs (non-differentiable primals) left out. Two formats, both with `tangents_*` inputs:
/// a *joint* graph (inputs `primals_1`..`primals_N` and `tangents_*` only; the outputs end with
/// one gradient per primal, primal i's being output `size - N + i - 1`) and a *partitioned
/// backward* graph (inputs the primals it saved, other saved values and `tangents_*`; one output
/// per forward input, so primals_k's gradient is output k - 1: resnet50_bw, vit_b16_bw). Empty
/// when the graph is in neither (no `tangents_*` or `primals_*` placeholder, or fewer outputs
/// than the format needs). The names only: the planner checks each pair's shapes
/// (GlobalOptions::training).
[[nodiscard]] std::vector<std::pair<std::string, std::string>> training_gradients(const Graph& graph);

/// A hand-written plan priced in the planner's model (`--hand-plans`).
struct HandPlan {
  std::string name;                    ///< "ddp", "fsdp", "megatron_tp_fsdp"
  std::map<std::string, Spec> inputs;  ///< the pinned input placements
  double step_time_us = 0;             ///< the objective (redistribution + compute) of its best plan with those pins
  double redistribution_us = 0;        ///< of which redistribution (gradient reductions included)
  MemoryFigures memory;                ///< bytes per device
  std::string status;                  ///< the solver's status for the pinned problem
};

/// Why and how far the candidates were restricted (docs/global_plan.md, "Restricted candidates"):
/// the full cost graph would have taken more than three tenths of the memory budget
/// (`max_memory_mib`; the solver takes a graph of at most a third) or its matrices longer to fill
/// than the time left, so each variable kept the candidates
/// whose placements agree on the `tied_mesh_dims` innermost mesh dims (and its greedy row). The plan
/// is one of the full problem's; its lower bound is the full problem's (each variable's least
/// unary cost: compute and redistribution from fixed inputs).
struct RestrictedCandidates {
  enum class Why { memory, time };
  Why why = Why::memory;
  std::size_t tied_mesh_dims = 0;   ///< the innermost tied_mesh_dims mesh dims carry one placement (≥ 2)
  std::size_t full_candidates = 0;  ///< before the restriction
  std::size_t full_cells = 0;       ///< the full graph's new matrix cells
  std::size_t full_bytes = 0;       ///< and their bytes
};

/// Fixed point of the cost graph: units per microsecond (1 unit = 1 ns).
inline constexpr double units_per_us = 1000.0;

/// A plan's change against the greedy plan at one node.
struct NodeChange {
  std::size_t index = 0;  ///< position in Plan::nodes
  double greedy_cost_us = 0, global_cost_us = 0;
};

/// The result of `plan --global`.
struct GlobalPlan {
  Plan plan;                                 ///< the global plan, in `plan`'s format
  Plan greedy;                               ///< `plan`'s greedy plan of the same graph
  std::vector<bool> changed;                 ///< per node of `plan.nodes`: strategy differs from the greedy one
  std::map<std::string, Spec> inputs;        ///< every tensor input's placement in the global plan
  solve::SolveResult result;                 ///< the solver's answer (costs in ns)
  std::vector<std::uint32_t> greedy_labels;  ///< the greedy plan as a labelling of `graph`
  solve::CostGraph graph;                    ///< the cost graph that was solved
  double lower_bound_us = 0, optimality_gap = 0;
  double objective_us = 0, greedy_objective_us = 0;  ///< the solver's objective (redistribution [+ compute]) of each plan
  double compute_us = 0, greedy_compute_us = 0;      ///< the compute term (free inputs only)
  std::size_t variables = 0, candidates = 0, greedy_rows_added = 0, max_candidates = 0;
  std::size_t undelivered_rows = 0;  ///< rows not offered: an input StridedShard / Partial no producer delivers (counted before the other filters)
  double build_ms = 0, solve_ms = 0;
  /// False when the deadline passed while the cost graph was built: the plan is then the greedy
  /// one, with status "time_limit", lower bound 0 (every cost is nonnegative) and its gap.
  bool built = true;
  std::size_t memory_bytes = 0;  ///< the cost graph's memory estimate (CostGraph::memory_bytes)
  bool training = false;         ///< the training-step model was on
  Optimizer optimizer = Optimizer::adam;
  std::vector<std::pair<std::string, std::string>> gradients;  ///< (gradient value, parameter) priced
  MemoryFigures memory, greedy_memory;                         ///< per device (training step only)
  /// Infeasible memory budget: the smallest total (bytes per device) any plan of the model reaches.
  double min_memory_bytes = 0;
  double gradient_reduction_us = 0;  ///< the plan's gradient -> parameter redistributions (in objective_us)
  std::vector<HandPlan> hand_plans;  ///< with GlobalOptions::hand_plans
  /// Set when the full cost graph did not fit (RestrictedCandidates); `status` is then "restricted"
  /// unless the deadline stopped the solve ("time_limit"), the plan meets the full problem's
  /// bound ("optimal"), or no restricted plan meets the memory budget or the ties
  /// ("restricted_infeasible").
  std::optional<RestrictedCandidates> restricted;
};

/// Builds the cost graph of `graph` and solves it, within one deadline (GlobalOptions::deadline,
/// else time_limit_ms from the call). Every number of `global` is checked first
/// (check_global_options: a NaN or negative rate, budget or limit is a ctshard::error naming the
/// field as its command-line option). Throws like plan_graph, ctshard::error for a bad tie or
/// budget or a cost outside the solver's exact range (naming the node and the value),
/// solve::memory_limit_reached when the problem needs more than max_memory_mib, and
/// solve::time_limit_reached when the deadline passes before the greedy plan is complete. With a
/// training step (GlobalOptions::training): ctshard::error for a gradient or parameter that is not
/// in the graph, a parameter with two gradients, `enabled` on a graph without gradients, or no
/// free inputs; `hand_plans` without a training step, and a memory budget or `hand_plans`
/// without free inputs (check_free_input_options), are errors too.
GlobalPlan global_plan(const Graph& graph, const PlanOptions& options, const GlobalOptions& global, const OpRegistry& registry);

/// Only the cost graph (for `--export-costgraph`): variables in graph order. Bounded by
/// max_memory_mib and by `global.deadline` when set (then time_limit_reached once it passes).
solve::CostGraph build_cost_graph(const Graph& graph, const PlanOptions& options, const GlobalOptions& global, const OpRegistry& registry);

}  // namespace ctshard::graph
