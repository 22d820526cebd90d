// `ctshard plan` (command.hpp): greedy propagation through an aten FX graph, or with --global the
// whole-graph optimum; --coverage over a directory of graphs; --export-costgraph.
#include <charconv>
#include <cmath>
#include <iostream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "command.hpp"
#include "ctshard/error.hpp"
#include "ctshard/fx/reader.hpp"
#include "ctshard/graph/global_plan.hpp"
#include "ctshard/graph/greedy.hpp"
#include "ctshard/graph/option_checks.hpp"
#include "ctshard/io/gzip_file.hpp"
#include "ctshard/report/commands.hpp"
#include "ctshard/report/global_report.hpp"
#include "ctshard/report/plan_report.hpp"
#include "ctshard/report/rules_file.hpp"
#include "ctshard/report/summary_report.hpp"
#include "ctshard/solve/budget.hpp"
#include "ctshard/solve/iopddl.hpp"

namespace ctshard::tool {
namespace {

constexpr const char* kSymFooter =
    "Symbolic shapes (graphs traced with dynamic shapes: \"Sym(s77)\" inputs, sizes such as f32[1024*s77, 768]):\n"
    "  --sym NAME=VALUE binds a symbol; every size expression is evaluated with the bound values.\n"
    "  An unbound symbol is never assumed divisible by a mesh dim: each distinct unbound symbol gets its own\n"
    "  prime hint (8191, 8209, 8219, ... in order of first appearance), so a size k*s divides exactly by what\n"
    "  divides k; a non-monomial size with an unbound symbol (s0 + 1, (s0//2)) takes the smallest prime above\n"
    "  its hinted value that is no symbol's hint. Shapes and costs use these values (DTensor itself prices\n"
    "  unbacked sizes as 8192). The plan lists every symbol's value.";

/// `--sym NAME=VALUE` items as symbol values. Throws ctshard::error naming a malformed item.
std::map<std::string, std::int64_t> parse_symbols(const std::vector<std::string>& items) {
  std::map<std::string, std::int64_t> out;
  for (const auto& item : items) {
    const auto eq = item.find('=');
    if (eq == std::string::npos || eq == 0) throw error("ctshard plan: --sym expects NAME=VALUE, got '" + item + "'");
    const std::string name = item.substr(0, eq), text = item.substr(eq + 1);
    std::int64_t value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (text.empty() || ec != std::errc{} || end != text.data() + text.size() || value < 1)
      throw error("ctshard plan: --sym " + item + ": the value of '" + name + "' must be a positive integer");
    if (!out.emplace(name, value).second) throw error("ctshard plan: --sym names '" + name + "' twice");
  }
  return out;
}

/// `plan --summary` without --json: the plan's status lines, then the summary's text. First line:
/// source, mesh, algo, the plan's communication and, for a global plan, its proof (or status and
/// gap); then, where the plan has them, the training step (step time, memory per device), an
/// infeasible budget's least footprint and each hand plan (what `plan` prints without --summary).
/// python/ctshard/_summary.py's summary() writes the same text.
void print_summary_header(const nlohmann::json& doc, std::ostream& out) {
  std::string mesh;
  for (const auto& m : doc.at("mesh")) mesh += (mesh.empty() ? "" : "x") + std::to_string(m.get<std::int64_t>());
  const auto number = [&](const nlohmann::json& j, const char* key) { return j.contains(key) && j.at(key).is_number(); };
  out << "plan " << doc.at("algo").get<std::string>() << " of " << doc.at("source").get<std::string>() << " on mesh " << mesh << ": communication "
      << doc.at("total_cost_us").get<double>() << " us";
  if (doc.contains("proven_optimal")) {
    if (doc.at("proven_optimal").get<bool>()) out << ", proven optimal";
    else {
      out << ", not proven optimal (" << doc.value("status", std::string("?"));
      if (number(doc, "optimality_gap")) out << ", gap " << doc.at("optimality_gap").get<double>();
      out << ')';
    }
  }
  out << '\n';
  if (number(doc, "min_memory_gib"))
    out << "infeasible memory budget: the smallest footprint of any plan is " << solve::number_text(doc.at("min_memory_gib").get<double>())
        << " GiB per device\n";  // (every digit: a budget of the printed value fits it)
  const auto step = [&](const nlohmann::json& j) {
    if (number(j, "step_time_us")) out << "step time " << j.at("step_time_us").get<double>() << " us";
    if (j.contains("memory") && number(j.at("memory"), "total")) out << ", memory per device " << j.at("memory").at("total").get<double>() << " GiB";
  };
  if (doc.value("training", false)) {
    out << "training step (" << doc.value("optimizer", std::string("?")) << "): ";
    step(doc);
    if (number(doc, "gradient_reduction_us")) out << ", gradient reductions " << doc.at("gradient_reduction_us").get<double>() << " us";
    out << '\n';
  }
  if (doc.contains("hand_plans"))
    for (const auto& h : doc.at("hand_plans")) {
      out << "hand plan " << h.value("name", std::string("?")) << ": ";
      step(h);
      out << '\n';
    }
  report::print_plan_summary(doc.at("summary"), out);
}

class PlanCommand final : public Command {
 public:
  PlanCommand(CLI::App& app, Clock::time_point started) : started_(started) {
    cmd_ = app.add_subcommand("plan", "propagate placements through an aten FX graph (default: the embedded example block)");
    add_graph_options();
    add_global_options();
    add_rule_options();
  }
  bool chosen() const override { return static_cast<bool>(*cmd_); }
  int run() override;

 private:
  void add_graph_options();
  void add_global_options();
  void add_rule_options();
  graph::PlanOptions plan_options() const;
  /// The plan's fallback warning (report::fallback_warning) on stderr, unless --quiet.
  void warn_fallbacks(const graph::Plan& plan) const {
    if (quiet_) return;
    if (const std::string w = report::fallback_warning(plan.nodes_with_rule, plan.nodes_fallback, plan.fallback_ops); !w.empty())
      std::cerr << "warning: " << w << '\n';
  }

  CLI::App* cmd_ = nullptr;
  Clock::time_point started_;
  std::string graph_path_, mesh_ = "2x4", coverage_dir_, export_path_, rules_path_;
  std::int64_t devices_per_host_ = 8, batch_size_ = 0;
  std::vector<std::string> places_, syms_, ties_, gradients_;
  std::string optimizer_ = "adam";
  bool no_training_ = false;
  bool json_ = false, data_parallel_ = false, global_ = false, quiet_ = false, summary_ = false;
  double repair_limit_ms_ = graph::PlanOptions{}.repair_time_limit_ms;
  graph::GlobalOptions global_options_;
  std::string linearity_ = "sound", cost_model_ = "dtensor", algo_ = "search", passthrough_ = "ctshard", greedy_fill_ = "dtensor",
              rule_set_ = "ctshard";
  CLI::Option *linearity_opt_ = nullptr, *passthrough_opt_ = nullptr;
};

void PlanCommand::add_graph_options() {
  cmd_->add_option("graph", graph_path_, "FX graph printout (print_readable / AOT dump); omit for the embedded default");
  cmd_->add_option("--mesh", mesh_, "mesh sizes, mesh dim 0 first: 8, 2x4, 2x2x2")->capture_default_str();
  cmd_->add_option("--devices-per-host", devices_per_host_, "devices per host for the cost model")->capture_default_str();
  cmd_->add_option("--place", places_, "input placement NAME=SPEC, e.g. primals_1=S(0)R (repeatable)");
  cmd_->add_option("--sym", syms_, "bind a symbolic size NAME=VALUE, e.g. s77=1024 (repeatable; unbound symbols: see below)");
  cmd_->footer(kSymFooter);
  cmd_->add_option("--coverage", coverage_dir_,
                   "report rule coverage for every *.fx.txt in DIR (an unreadable file is an error line; exit 1 only when no file "
                   "could be read)");
  cmd_->add_flag("--json", json_, "machine-readable output");
  cmd_->add_flag("--summary", summary_,
                 "per layer: communication, compute and memory per device and its parameters' placements; per parameter: its "
                 "placement (with --json: the document's \"summary\"); a layer is a run of op nodes ending at a contraction or weighted op");
  cmd_->add_flag("--data-parallel", data_parallel_,
                 "data-parallel inputs: every tensor input whose dim 0 is the batch size is S(0) on mesh dim 0 (--place wins); the batch "
                 "size is --batch-size or the most common dim 0 of the graph's tensors of rank >= 3");
  cmd_->add_option("--batch-size", batch_size_, "--data-parallel: the batch size (default: inferred)");
  cmd_->add_option("--repair-time-limit-ms", repair_limit_ms_,
                   "budget of the exact checks that repair a dead end of the greedy plan (a node with no finite row), ms")
      ->capture_default_str();
}

void PlanCommand::add_global_options() {
  graph::GlobalOptions& g = global_options_;
  cmd_->add_flag("--global", global_,
                 "choose every node's strategy jointly: the exact optimum over the whole graph, with a lower bound and the gap "
                 "(0 = proven optimal), compared with the greedy plan");
  cmd_->add_option("--time-limit-ms", g.time_limit_ms,
                   "--global: time budget of the whole request (ms): reading, the greedy plan, the cost graph and the solve; the best "
                   "plan so far is returned with its gap (at most 10^9 ms)")
      ->capture_default_str();
  cmd_->add_flag("--quiet", quiet_,
                 "No warning on stderr when over 5 % of the op nodes fall back; with --global also no progress lines (one a second while the solve "
                 "runs over 1 s)");
  cmd_->add_option("--max-memory-mib", g.max_memory_mib,
                   "--global / --export-costgraph: memory budget of the cost graph and the solver (MiB); 0: a quarter of the machine's "
                   "memory; a problem that does not fit is an error")
      ->capture_default_str();
  cmd_->add_flag("--free-inputs", g.free_inputs,
                 "--global: unpinned inputs become variables; the objective adds each op's compute time and --memory-budget-gib applies");
  cmd_->add_flag("--every-candidate", g.every_candidate,
                 "--global: also offer rows whose input needs a StridedShard or Partial no producer delivers (larger, slower)");
  cmd_->add_option("--device-tflops", g.device_tflops, "--free-inputs: per-device compute rate (TFLOP/s)")->capture_default_str();
  cmd_->add_option("--device-gbps", g.device_gbps, "--free-inputs: per-device memory bandwidth (GB/s)")->capture_default_str();
  cmd_->add_option("--memory-budget-gib", g.memory_budget_gib,
                   "--free-inputs: per-device bytes of the graph inputs (parameters and activations), GiB; 0 = none")
      ->capture_default_str();
  cmd_->add_option("--tie", ties_, "--global: two values that must share a placement, A=B (e.g. a parameter and its gradient; repeatable)");
  cmd_->add_flag("--no-training", no_training_, "--free-inputs: no training step for an AOT joint graph (plan it as one forward graph)");
  cmd_->add_flag("--training", g.training.enabled,
                 "--free-inputs: the training-step model (docs/global_plan.md): each gradient reduced to its parameter's placement, "
                 "memory = parameters + gradients + optimizer state + saved activations; on by default for an AOT joint graph "
                 "(primals_* then tangents_*)");
  cmd_->add_option("--optimizer", optimizer_, "--training: adam (2 states per parameter element), sgd_momentum (1) or sgd (0)")
      ->capture_default_str();
  cmd_->add_option("--gradient", gradients_,
                   "--training: GRAD=PARAM, a gradient value and its parameter input (repeatable; default: the AOT "
                   "joint format's)");
  cmd_->add_flag("--hand-plans", g.hand_plans, "--training: also price DDP, FSDP and Megatron TP + FSDP in the same model");
  cmd_->add_option("--export-costgraph", export_path_, "write the plan's cost graph in the IOPDDL JSON format (costs in ns; .gz compresses)");
}

void PlanCommand::add_rule_options() {
  add_cost_model_option(cmd_, cost_model_);
  add_algo_option(cmd_, algo_,
                  "search: DTensor's choice by exact search, any mesh up to 8 dims; enumerate: price every row of each op's table "
                  "(DTensor's full expansion; tables above 2^20 rows fall back)");
  linearity_opt_ = cmd_->add_option("--einsum-linearity", linearity_,
                                    "sound: without DTensor's unsound all-Partial rows of batch-only einsums; dtensor: exactly as DTensor")
                       ->check(CLI::IsMember({"dtensor", "sound"}))
                       ->capture_default_str();
  passthrough_opt_ = add_partial_passthrough_option(cmd_, passthrough_);
  cmd_->add_option("--greedy-fill", greedy_fill_,
                   "how the greedy planner fills placeholder rows: dtensor: as DTensor (a Partial-only input is all-reduced; "
                   "greedy cannot see whether a shard pays off downstream); rule: each rule's own (shard_from_partial: a Partial "
                   "input also reaches the Shard rows, by reduce-scatter)")
      ->check(CLI::IsMember({"dtensor", "rule"}))
      ->capture_default_str();
  add_rule_set_option(cmd_, rule_set_);
  cmd_->add_option("--rules", rules_path_,
                   "JSON file of rules for the user's own ops ({\"rules\": [{\"op\": ..., \"rows\" or \"kind\": ...}]}, "
                   "docs/custom_rules.md); they join (or replace) the built-in rules; a node whose user rule does not fit its call "
                   "is an error");
}

graph::PlanOptions PlanCommand::plan_options() const {
  graph::PlanOptions options;
  options.mesh = report::parse_mesh(mesh_);
  options.devices_per_host = devices_per_host_;
  options.cost_model = report::parse_cost_model(cost_model_);
  options.algo = report::parse_algo(algo_);
  if (greedy_fill_ == "rule") options.greedy_fill.reset();
  for (const auto& p : places_) {
    const auto eq = p.find('=');
    if (eq == std::string::npos || eq == 0) throw error("ctshard plan: --place expects NAME=SPEC, got '" + p + "'");
    if (!options.placements.emplace(p.substr(0, eq), parse_spec(p.substr(eq + 1))).second)
      throw error("ctshard plan: --place names '" + p.substr(0, eq) + "' twice");
  }
  options.symbols = parse_symbols(syms_);
  options.data_parallel = data_parallel_;
  if (cmd_->count("--batch-size") > 0) {
    if (!data_parallel_) throw error("ctshard plan: --batch-size needs --data-parallel");
    if (batch_size_ < 1) throw error("ctshard plan: --batch-size " + std::to_string(batch_size_) + ": a batch size must be at least 1");
    options.batch_size = batch_size_;
  }
  if (!(repair_limit_ms_ >= 0) || !std::isfinite(repair_limit_ms_))
    throw error("ctshard plan: --repair-time-limit-ms must be a finite number >= 0, got " + solve::number_text(repair_limit_ms_));
  options.repair_time_limit_ms = repair_limit_ms_;
  return options;
}

int PlanCommand::run() {
  // the whole-graph options mean nothing to the greedy plan: refused rather than ignored
  if (!global_ && export_path_.empty())
    for (const char* name : {"--free-inputs", "--every-candidate", "--device-tflops", "--device-gbps", "--tie", "--training", "--no-training",
                             "--optimizer", "--gradient", "--hand-plans", "--memory-budget-gib"})
      if (cmd_->count(name) > 0) throw error(std::string("ctshard plan: ") + name + " needs --global (or --export-costgraph)");
  graph::PlanOptions options = plan_options();
  graph::check_global_options(global_options_, "ctshard plan", graph::OptionNames::cli);
  if (global_) global_options_.deadline = deadline_after(started_, global_options_.time_limit_ms / 1000.0);
  global_options_.progress = quiet_ ? nullptr : &std::cerr;
  check_rule_set("plan", rule_set_, linearity_, linearity_opt_->count() > 0, passthrough_, passthrough_opt_->count() > 0);
  options.rule_set = report::parse_rule_set(rule_set_);
  const OpRegistry* base = &report::registry_for(linearity_, passthrough_, rule_set_);
  const std::vector<UserRule> user_rules = rules_path_.empty() ? std::vector<UserRule>{} : report::read_rules_file(rules_path_);
  std::optional<OpRegistry> with_rules;
  if (!user_rules.empty()) with_rules = report::with_user_rules(*base, user_rules);
  const OpRegistry& registry = with_rules ? *with_rules : *base;
  if (!coverage_dir_.empty()) {
    if (summary_) throw error("ctshard plan: --summary summarizes one plan; --coverage reports a directory of graphs (use one or the other)");
    const auto coverage = report::coverage_json(coverage_dir_, options, registry);
    if (json_) std::cout << report::json_text(coverage, 2) << '\n';
    else report::print_coverage(coverage, std::cout);
    return report::coverage_read_any(coverage) ? 0 : 1;
  }
  const graph::Graph graph = graph_path_.empty() ? report::default_graph() : fx::read_fx_graph_file(graph_path_);
  if (graph_path_.empty() && options.placements.empty()) options.placements = report::default_placements(options.mesh.size());
  for (const auto& t : ties_) {
    const auto eq = t.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == t.size()) throw error("ctshard plan: --tie expects A=B, got '" + t + "'");
    global_options_.ties.emplace_back(t.substr(0, eq), t.substr(eq + 1));
  }
  global_options_.training.optimizer = graph::parse_optimizer(optimizer_);
  if (no_training_ && global_options_.training.enabled) throw error("ctshard plan: --training and --no-training contradict each other");
  global_options_.training.detect = !no_training_;
  for (const auto& t : gradients_) {
    const auto eq = t.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == t.size()) throw error("ctshard plan: --gradient expects GRAD=PARAM, got '" + t + "'");
    global_options_.training.gradients.emplace_back(t.substr(0, eq), t.substr(eq + 1));
  }
  if (!export_path_.empty()) {
    const auto cost_graph = graph::build_cost_graph(graph, options, global_options_, registry);
    io::write_maybe_gzip(export_path_, solve::write_iopddl(cost_graph, graph.source_name));
  }
  if (global_) {
    const graph::GlobalPlan plan = graph::global_plan(graph, options, global_options_, registry);
    report::check_user_rule_fallbacks(plan.greedy, user_rules);
    warn_fallbacks(plan.plan);
    nlohmann::json doc = report::global_plan_json(plan, options, global_options_);
    if (summary_) {
      const graph::RecordedPlan recorded = graph::plan_graph_recorded(graph, options, registry);
      report::SummaryOptions rates;
      rates.device_tflops = global_options_.device_tflops;
      rates.device_gbps = global_options_.device_gbps;
      doc["summary"] = report::plan_summary_json(recorded.record, plan.plan, plan.inputs, options.mesh, registry, rates);
    }
    if (json_) std::cout << report::json_text(doc, 2) << '\n';
    else if (summary_) print_summary_header(doc, std::cout);
    else report::print_global_plan(plan, options, global_options_, std::cout);
    return 0;
  }
  graph::RecordedPlan recorded;  // the record only for --summary (it keeps every node's call)
  if (summary_) recorded = graph::plan_graph_recorded(graph, options, registry);
  else recorded.plan = graph::plan_graph(graph, options, registry);
  const graph::Plan& plan = recorded.plan;
  report::check_user_rule_fallbacks(plan, user_rules);
  warn_fallbacks(plan);
  nlohmann::json doc = report::plan_json(plan, options);
  if (summary_) doc["summary"] = report::plan_summary_json(recorded.record, plan, {}, options.mesh, registry);
  if (json_) std::cout << report::json_text(doc, 2) << '\n';
  else if (summary_) print_summary_header(doc, std::cout);
  else report::print_plan(plan, options, std::cout);
  return 0;
}

}  // namespace

std::unique_ptr<Command> add_plan_command(CLI::App& app, Clock::time_point started) { return std::make_unique<PlanCommand>(app, started); }

}  // namespace ctshard::tool
