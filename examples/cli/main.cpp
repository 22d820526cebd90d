// ctshard — command-line front end: `plan` (propagate placements through an aten FX graph),
// `table` (one op's strategy table), `cost` (price one redistribution).
#include <CLI/CLI.hpp>

#include <charconv>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>

#include "ctshard/fx/reader.hpp"
#include "ctshard/graph/global_plan.hpp"
#include "ctshard/graph/greedy.hpp"
#include "ctshard/graph/option_checks.hpp"
#include "ctshard/io/gzip_file.hpp"
#include "ctshard/io/output_file.hpp"
#include "ctshard/registry.hpp"
#include "ctshard/report/commands.hpp"
#include "ctshard/report/global_report.hpp"
#include "ctshard/report/iopddl_report.hpp"
#include "ctshard/report/plan_report.hpp"
#include "ctshard/solve/iopddl.hpp"

namespace {

using namespace ctshard;
using namespace ctshard::graph;
using namespace ctshard::io;
using namespace ctshard::report;

bool print_coverage(const std::string& dir, const PlanOptions& options, const OpRegistry& registry, bool json) {
  if (!std::filesystem::is_directory(dir)) throw error("ctshard plan --coverage: '" + dir + "' is not a directory");
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.is_regular_file() && e.path().string().ends_with(".fx.txt")) files.push_back(e.path());
  if (files.empty()) throw error("ctshard plan --coverage: no *.fx.txt files in '" + dir + "'");
  std::sort(files.begin(), files.end());
  nlohmann::json report = nlohmann::json::array();
  bool any_read = false;
  for (const auto& f : files) {
    Plan plan;
    try {
      plan = plan_graph(fx::read_fx_graph_file(f.string()), options, registry);
    } catch (const std::exception& e) {  // one unreadable graph does not hide the others
      report.push_back({{"file", f.filename().string()}, {"error", e.what()}});
      if (!json) std::cout << f.filename().string() << ": error: " << e.what() << '\n';
      continue;
    }
    any_read = true;
    const double share = plan.nodes.empty() ? 1.0 : static_cast<double>(plan.nodes_with_rule) / static_cast<double>(plan.nodes.size());
    report.push_back({{"file", f.filename().string()},
                      {"nodes_with_rule", plan.nodes_with_rule},
                      {"nodes_fallback", plan.nodes_fallback},
                      {"rule_share", share},
                      {"fallback_ops", plan.fallback_ops}});
    if (json) continue;
    std::cout << f.filename().string() << ": " << plan.nodes_with_rule << " with a rule, " << plan.nodes_fallback << " fallback (" << std::fixed
              << std::setprecision(1) << 100.0 * share << std::defaultfloat << "% covered)\n";
    for (const auto& [op, count] : plan.fallback_ops) std::cout << "  " << op << " x" << count << '\n';
  }
  if (json) std::cout << json_text(nlohmann::json{{"files", report}}, 2) << '\n';
  return any_read;
}

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

constexpr const char* kSymFooter =
    "Symbolic shapes (graphs traced with dynamic shapes: \"Sym(s77)\" inputs, sizes such as f32[1024*s77, 768]):\n"
    "  --sym NAME=VALUE binds a symbol; every size expression is evaluated with the bound values.\n"
    "  An unbound symbol is never assumed divisible by a mesh dim: each distinct unbound symbol gets its own\n"
    "  prime hint (8191, 8209, 8219, ... in order of first appearance), so a size k*s divides exactly by what\n"
    "  divides k; a non-monomial size with an unbound symbol (s0 + 1, (s0//2)) takes the smallest prime above\n"
    "  its hinted value that is no symbol's hint. Shapes and costs use these values (DTensor itself prices\n"
    "  unbacked sizes as 8192). The plan lists every symbol's value.";

/// The text of --args / --kwargs: `@FILE` reads FILE, `-` reads standard input (for argument
/// lists beyond the system's command-line limit), anything else is the JSON itself. Throws
/// ctshard::error for an unreadable file or text past max_arg_text_bytes.
std::string json_option_text(const char* option, const std::string& text) {
  if (text != "-" && !text.starts_with("@")) return text;
  const std::string name = text == "-" ? std::string("standard input") : text.substr(1);
  std::ifstream file;
  if (text != "-") {
    if (std::filesystem::is_directory(name)) throw error(std::string("ctshard table: ") + option + ": '" + name + "' is a directory");
    file.open(name, std::ios::binary);
    if (!file) throw error(std::string("ctshard table: ") + option + ": cannot open '" + name + "'");
  }
  std::istream& in = text == "-" ? std::cin : file;
  std::string out;
  char buf[65536];
  while (in.read(buf, sizeof buf) || in.gcount() > 0) {
    out.append(buf, static_cast<std::size_t>(in.gcount()));
    if (out.size() > max_arg_text_bytes)
      throw error(std::string("ctshard table: ") + option + ": " + name + " is longer than " + std::to_string(max_arg_text_bytes) + " bytes");
  }
  if (in.bad()) throw error(std::string("ctshard table: ") + option + ": cannot read " + name);
  return out;
}

nlohmann::ordered_json parse_json_option(const char* option, const std::string& text) {
  return parse_arg_json(option, json_option_text(option, text));
}

}  // namespace

/// The tool; main() adds the check of standard output.
int run(int argc, char** argv) {  // NOLINT(bugprone-exception-escape): only CLI11's option set-up runs outside the try below
  // the request's deadline counts from here: reading the graph or instance is part of it
  const auto started = std::chrono::steady_clock::now();
  const auto deadline_after = [&](double seconds) {
    return solve::Deadline(started + std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(seconds)));
  };
  CLI::App app{"ctshard: sharding strategy tables, redistribution costs and placement propagation (DTensor semantics)"};
  app.require_subcommand(0, 1);

  std::string graph_path, mesh = "2x4", coverage_dir;
  std::int64_t dph = 8;
  std::vector<std::string> places, syms;
  bool json = false;
  auto* plan_cmd = app.add_subcommand("plan", "propagate placements through an aten FX graph (default: the embedded example block)");
  plan_cmd->add_option("graph", graph_path, "FX graph printout (print_readable / AOT dump); omit for the embedded default");
  plan_cmd->add_option("--mesh", mesh, "mesh sizes, mesh dim 0 first: 8, 2x4, 2x2x2")->capture_default_str();
  plan_cmd->add_option("--devices-per-host", dph, "devices per host for the cost model")->capture_default_str();
  plan_cmd->add_option("--place", places, "input placement NAME=SPEC, e.g. primals_1=S(0)R (repeatable)");
  plan_cmd->add_option("--sym", syms, "bind a symbolic size NAME=VALUE, e.g. s77=1024 (repeatable; unbound symbols: see below)");
  plan_cmd->footer(kSymFooter);
  plan_cmd->add_option("--coverage", coverage_dir,
                       "report rule coverage for every *.fx.txt in DIR (an unreadable file is an error line; exit 1 only when no file "
                       "could be read)");
  plan_cmd->add_flag("--json", json, "machine-readable output");
  bool data_parallel = false;
  std::int64_t batch_size = 0;
  plan_cmd->add_flag("--data-parallel", data_parallel,
                     "data-parallel inputs: every tensor input whose dim 0 is the batch size is S(0) on mesh dim 0 (--place wins); the batch "
                     "size is --batch-size or the most common dim 0 of the graph's tensors of rank >= 3");
  plan_cmd->add_option("--batch-size", batch_size, "--data-parallel: the batch size (default: inferred)");
  double repair_limit_ms = PlanOptions{}.repair_time_limit_ms;
  plan_cmd
      ->add_option("--repair-time-limit-ms", repair_limit_ms,
                   "budget of the exact checks that repair a dead end of the greedy plan (a node with no finite row), ms")
      ->capture_default_str();
  bool global = false;
  GlobalOptions global_options;
  std::vector<std::string> ties;
  std::string export_path;
  plan_cmd->add_flag("--global", global,
                     "choose every node's strategy jointly: the exact optimum over the whole graph, with a lower bound and the gap "
                     "(0 = proven optimal), compared with the greedy plan");
  plan_cmd
      ->add_option("--time-limit-ms", global_options.time_limit_ms,
                   "--global: time budget of the whole request (ms): reading, the greedy plan, the cost graph and the solve; the best "
                   "plan so far is returned with its gap (at most 10^9 ms)")
      ->capture_default_str();
  plan_cmd
      ->add_option("--max-memory-mib", global_options.max_memory_mib,
                   "--global / --export-costgraph: memory budget of the cost graph and the solver (MiB); 0: a quarter of the machine's "
                   "memory; a problem that does not fit is an error")
      ->capture_default_str();
  plan_cmd->add_flag("--free-inputs", global_options.free_inputs,
                     "--global: unpinned inputs become variables; the objective adds each op's compute time and --memory-budget-gib applies");
  plan_cmd->add_flag("--every-candidate", global_options.every_candidate,
                     "--global: also offer rows whose input needs a StridedShard or Partial no producer delivers (larger, slower)");
  plan_cmd->add_option("--device-tflops", global_options.device_tflops, "--free-inputs: per-device compute rate (TFLOP/s)")->capture_default_str();
  plan_cmd->add_option("--device-gbps", global_options.device_gbps, "--free-inputs: per-device memory bandwidth (GB/s)")->capture_default_str();
  plan_cmd
      ->add_option("--memory-budget-gib", global_options.memory_budget_gib,
                   "--free-inputs: per-device bytes of the graph inputs (parameters and activations), GiB; 0 = none")
      ->capture_default_str();
  plan_cmd->add_option("--tie", ties, "--global: two values that must share a placement, A=B (e.g. a parameter and its gradient; repeatable)");
  plan_cmd->add_option("--export-costgraph", export_path, "write the plan's cost graph in the IOPDDL JSON format (costs in ns; .gz compresses)");
  std::string plan_linearity = "sound", plan_cost_model = "dtensor";
  const auto add_cost_model = [](CLI::App* cmd, std::string& model) {
    cmd->add_option("--cost-model", model,
                    "dtensor: DTensor's redistribute_cost (greedy order, +1 us per all-to-all, 6.6 us even on a size-1 mesh dim); "
                    "consistent: the cheapest sequence of the same collectives (additive, triangle inequality)")
        ->check(CLI::IsMember({"dtensor", "consistent"}))
        ->capture_default_str();
  };
  add_cost_model(plan_cmd, plan_cost_model);
  std::string plan_algo = "search";
  const auto add_algo = [](CLI::App* cmd, std::string& algo, const char* what) {
    cmd->add_option("--algo", algo, what)->check(CLI::IsMember({"search", "enumerate"}))->capture_default_str();
  };
  add_algo(plan_cmd, plan_algo,
           "search: DTensor's choice by exact search, any mesh up to 8 dims; enumerate: price every row of each op's table "
           "(DTensor's full expansion; tables above 2^20 rows fall back)");
  CLI::Option* plan_linearity_opt =
      plan_cmd
          ->add_option("--einsum-linearity", plan_linearity,
                       "sound: without DTensor's unsound all-Partial rows of batch-only einsums; dtensor: exactly as DTensor")
          ->check(CLI::IsMember({"dtensor", "sound"}))
          ->capture_default_str();
  std::string plan_passthrough = "ctshard";
  const auto add_partial_passthrough = [](CLI::App* cmd, std::string& passthrough) {
    return cmd
        ->add_option("--partial-passthrough", passthrough,
                     "ctshard: a Partial input passes through ops linear in it (clone, casts, activation backwards, "
                     "native_layer_norm_backward); dtensor: those ops take no Partial input, as in DTensor 2.13 (for plans "
                     "DTensor's own op dispatch executes)")
        ->check(CLI::IsMember({"ctshard", "dtensor"}))
        ->capture_default_str();
  };
  CLI::Option* plan_passthrough_opt = add_partial_passthrough(plan_cmd, plan_passthrough);
  std::string plan_greedy_fill = "dtensor";
  plan_cmd
      ->add_option("--greedy-fill", plan_greedy_fill,
                   "how the greedy planner fills placeholder rows: dtensor: as DTensor (a Partial-only input is all-reduced; "
                   "greedy cannot see whether a shard pays off downstream); rule: each rule's own (shard_from_partial: a Partial "
                   "input also reaches the Shard rows, by reduce-scatter)")
      ->check(CLI::IsMember({"dtensor", "rule"}))
      ->capture_default_str();
  std::string plan_rule_set = "ctshard";
  const auto add_rule_set = [](CLI::App* cmd, std::string& rule_set) {
    cmd->add_option("--rule-set", rule_set,
                    "ctshard: ctshard's rules (DTensor's semantics with sound extra rows, without DTensor's unsound ones); "
                    "dtensor: exactly DTensor 2.13's rows for every op it has a rule for, unsound ones included, following "
                    "the current inputs where DTensor's op-strategy functions do (for plans DTensor's own op dispatch "
                    "executes; implies --einsum-linearity dtensor --partial-passthrough dtensor)")
        ->check(CLI::IsMember({"ctshard", "dtensor"}))
        ->capture_default_str();
  };
  add_rule_set(plan_cmd, plan_rule_set);

  struct TableText {
    std::string op, shapes, mesh, inputs;
    std::string dtype = "float32", einsum_linearity = "dtensor", args = "[]", kwargs = "{}", cost_model = "dtensor", algo = "enumerate",
                partial_passthrough = "ctshard", rule_set = "ctshard";
    std::int64_t devices_per_host = 8;
  } table;
  bool table_json_flag = false;
  auto* table_cmd = app.add_subcommand("table", "one op's filtered strategy table with per-input costs and the chosen row");
  table_cmd->add_option("--op", table.op, "mm, bmm, addmm, baddbmm, dot, einsum:EQ, pointwise:NAME, or an op name (ctshard ops)")->required();
  table_cmd->add_option("--shapes", table.shapes, "global shapes of the tensor inputs: 6x8,8x12 (0-d: scalar)")->required();
  table_cmd->add_option("--mesh", table.mesh, "mesh sizes: 2x4")->required();
  table_cmd->add_option("--inputs", table.inputs, "current spec of each input: \"S(0)R;RS(1)\"")->required();
  table_cmd->add_option("--devices-per-host", table.devices_per_host, "devices per host")->capture_default_str();
  table_cmd->add_option("--dtype", table.dtype, "element type: float32, bfloat16, ...; or one per tensor: float32,int64")->capture_default_str();
  bool table_sound = false;
  CLI::Option* table_linearity_opt =
      table_cmd
          ->add_option("--einsum-linearity", table.einsum_linearity,
                       "dtensor: einsum Partial rows exactly as DTensor (reference cases); sound: without DTensor's unsound "
                       "all-Partial rows of batch-only einsums")
          ->check(CLI::IsMember({"dtensor", "sound"}))
          ->capture_default_str();
  CLI::Option* table_sound_opt = table_cmd->add_flag("--sound", table_sound, "same as --einsum-linearity sound");
  CLI::Option* table_passthrough_opt = add_partial_passthrough(table_cmd, table.partial_passthrough);
  add_rule_set(table_cmd, table.rule_set);
  add_cost_model(table_cmd, table.cost_model);
  table_cmd
      ->add_option("--args", table.args,
                   "non-tensor arguments after the tensors, as a JSON array: '[[24, 8]]'; with \"$i\" for tensor i the array is "
                   "the whole argument list: '[\"$0\", 1, \"$1\"]'; @FILE reads the JSON from FILE, - from standard input")
      ->capture_default_str();
  table_cmd->add_option("--kwargs", table.kwargs, "keyword arguments as a JSON object: '{\"keepdim\": true}'; @FILE or - as for --args")
      ->capture_default_str();
  add_algo(table_cmd, table.algo,
           "enumerate: list every surviving row (at most 2^20 candidate rows); search: the same document with the chosen row "
           "only, found by exact search on any table");
  table_cmd->add_flag("--json", table_json_flag, "machine-readable output");

  struct CostText {
    std::string shape, mesh, from, to, dtype = "float32", cost_model = "dtensor";
    std::int64_t devices_per_host = 8;
  } cost;
  bool cost_json_flag = false;
  auto* cost_cmd = app.add_subcommand("cost", "price one redistribution and list its steps");
  cost_cmd->add_option("--shape", cost.shape, "global shape: 8x8")->required();
  cost_cmd->add_option("--mesh", cost.mesh, "mesh sizes: 2x2")->required();
  cost_cmd->add_option("--from", cost.from, "current spec: \"S(0)S(0)\"")->required();
  cost_cmd->add_option("--to", cost.to, "target spec: \"RS(0)\"")->required();
  cost_cmd->add_option("--devices-per-host", cost.devices_per_host, "devices per host")->capture_default_str();
  cost_cmd->add_option("--dtype", cost.dtype, "element type")->capture_default_str();
  add_cost_model(cost_cmd, cost.cost_model);
  cost_cmd->add_flag("--json", cost_json_flag, "machine-readable output");

  std::string iopddl_path;
  double iopddl_time_limit = 60;
  bool iopddl_json_flag = false;
  auto* iopddl_cmd = app.add_subcommand("iopddl", "solve an IOPDDL contest instance (cost graph with per-time-step usage limits)");
  iopddl_cmd->add_option("file", iopddl_path, "instance: .json or .json.gz")->required();
  iopddl_cmd->add_option("--time-limit-s", iopddl_time_limit, "time budget (s), reading included (at most 10^6 s)")->capture_default_str();
  double iopddl_memory_mib = 0;
  iopddl_cmd
      ->add_option("--max-memory-mib", iopddl_memory_mib,
                   "memory budget (MiB) of the text, the instance and the solver; 0: a quarter of the machine's memory")
      ->capture_default_str();
  iopddl_cmd->add_flag("--json", iopddl_json_flag, "machine-readable output (with the strategies)");

  bool ops_json = false;
  auto* ops_cmd = app.add_subcommand("ops", "list the op overloads that have a sharding rule");
  ops_cmd->add_flag("--json", ops_json, "machine-readable output");

  CLI11_PARSE(app, argc, argv);
  try {
    // --rule-set dtensor implies DTensor's einsum linearity and Partial passthrough: an explicit
    // contrary choice is a contradiction, not something to override silently
    const auto check_rule_set = [](const std::string& command, const std::string& rule_set, const std::string& linearity, bool linearity_given,
                                   const std::string& passthrough, bool passthrough_given) {
      if (rule_set != "dtensor") return;
      if (linearity_given && linearity != "dtensor")
        throw error("ctshard " + command + ": --rule-set dtensor implies --einsum-linearity dtensor (DTensor's rows); drop --einsum-linearity " +
                    linearity);
      if (passthrough_given && passthrough != "dtensor")
        throw error("ctshard " + command +
                    ": --rule-set dtensor implies --partial-passthrough dtensor (DTensor's rows); drop --partial-passthrough " + passthrough);
    };
    if (*table_cmd) {
      TableOptions options;
      options.op = table.op;
      options.shapes = parse_shapes(table.shapes);
      options.mesh = parse_mesh(table.mesh);
      options.inputs = split(table.inputs, ';');
      options.devices_per_host = table.devices_per_host;
      options.dtypes = split(table.dtype, ',');
      options.einsum_linearity = table_sound ? "sound" : table.einsum_linearity;
      options.partial_passthrough = table.partial_passthrough;
      check_rule_set("table", table.rule_set, options.einsum_linearity, table_linearity_opt->count() > 0 || table_sound_opt->count() > 0,
                     table.partial_passthrough, table_passthrough_opt->count() > 0);
      options.rule_set = table.rule_set;
      if (table.args == "-" && table.kwargs == "-") throw error("ctshard table: --args and --kwargs cannot both read standard input");
      options.args = parse_json_option("--args", table.args);
      options.kwargs = parse_json_option("--kwargs", table.kwargs);
      options.cost_model = parse_cost_model(table.cost_model);
      options.algo = table.algo;
      const auto t = table_json(options);
      if (table_json_flag) std::cout << json_text(t) << '\n';
      else print_table(t, std::cout);
      return 0;
    }
    if (*iopddl_cmd) {
      IopddlOptions io;
      io.time_limit_s = solve::checked_time_limit_s(iopddl_time_limit, "ctshard iopddl: --time-limit-s");
      io.max_memory_mib = iopddl_memory_mib;
      io.deadline = deadline_after(io.time_limit_s);
      const auto doc = iopddl_json(iopddl_path, io);
      if (iopddl_json_flag) std::cout << json_text(doc) << '\n';
      else print_iopddl(doc, std::cout);
      return 0;
    }
    if (*ops_cmd) {
      const auto ops = report::ops_json();
      if (ops_json) std::cout << json_text(ops, 2) << '\n';
      else
        for (const auto& n : ops["ops"]) std::cout << n.get<std::string>() << '\n';
      return 0;
    }
    if (*cost_cmd) {
      CostOptions options;
      const auto shapes = parse_shapes(cost.shape);
      if (shapes.size() != 1) throw error("ctshard cost: --shape takes one shape, got '" + cost.shape + "'");
      options.shape = shapes.front();
      options.mesh = parse_mesh(cost.mesh);
      options.from = cost.from;
      options.to = cost.to;
      options.devices_per_host = cost.devices_per_host;
      options.dtype = cost.dtype;
      options.cost_model = parse_cost_model(cost.cost_model);
      const auto c = cost_json(options);
      if (cost_json_flag) std::cout << json_text(c, 2) << '\n';
      else print_cost(c, std::cout);
      return 0;
    }
    // `plan` is the main job, and what runs with no subcommand.
    PlanOptions options;
    options.mesh = parse_mesh(mesh);
    options.devices_per_host = dph;
    options.cost_model = parse_cost_model(plan_cost_model);
    options.algo = parse_algo(plan_algo);
    if (plan_greedy_fill == "rule") options.greedy_fill.reset();
    for (const auto& p : places) {
      const auto eq = p.find('=');
      if (eq == std::string::npos || eq == 0) throw error("ctshard plan: --place expects NAME=SPEC, got '" + p + "'");
      if (!options.placements.emplace(p.substr(0, eq), parse_spec(p.substr(eq + 1))).second)
        throw error("ctshard plan: --place names '" + p.substr(0, eq) + "' twice");
    }
    options.symbols = parse_symbols(syms);
    options.data_parallel = data_parallel;
    if (plan_cmd->count("--batch-size") > 0) {
      if (!data_parallel) throw error("ctshard plan: --batch-size needs --data-parallel");
      if (batch_size < 1) throw error("ctshard plan: --batch-size " + std::to_string(batch_size) + ": a batch size must be at least 1");
      options.batch_size = batch_size;
    }
    if (!(repair_limit_ms >= 0) || !std::isfinite(repair_limit_ms))
      throw error("ctshard plan: --repair-time-limit-ms must be a finite number >= 0, got " + std::to_string(repair_limit_ms));
    options.repair_time_limit_ms = repair_limit_ms;
    check_global_options(global_options, "ctshard plan", OptionNames::cli);
    if (global) global_options.deadline = deadline_after(global_options.time_limit_ms / 1000.0);
    check_rule_set("plan", plan_rule_set, plan_linearity, plan_linearity_opt->count() > 0, plan_passthrough, plan_passthrough_opt->count() > 0);
    options.rule_set = parse_rule_set(plan_rule_set);
    const OpRegistry& plan_registry = registry_for(plan_linearity, plan_passthrough, plan_rule_set);
    if (!coverage_dir.empty()) {
      return print_coverage(coverage_dir, options, plan_registry, json) ? 0 : 1;
    }
    const fx::Graph graph = graph_path.empty() ? default_graph() : fx::read_fx_graph_file(graph_path);
    if (graph_path.empty() && options.placements.empty()) options.placements = default_placements(options.mesh.size());
    for (const auto& t : ties) {
      const auto eq = t.find('=');
      if (eq == std::string::npos || eq == 0 || eq + 1 == t.size()) throw error("ctshard plan: --tie expects A=B, got '" + t + "'");
      global_options.ties.emplace_back(t.substr(0, eq), t.substr(eq + 1));
    }
    if (!export_path.empty()) {
      const auto g = build_cost_graph(graph, options, global_options, plan_registry);
      write_maybe_gzip(export_path, solve::write_iopddl(g, graph.source_name));
    }
    if (global) {
      const GlobalPlan plan = global_plan(graph, options, global_options, plan_registry);
      if (json) std::cout << json_text(global_plan_json(plan, options, global_options), 2) << '\n';
      else print_global_plan(plan, options, global_options, std::cout);
      return 0;
    }
    const Plan plan = plan_graph(graph, options, plan_registry);
    if (json) std::cout << json_text(plan_json(plan, options), 2) << '\n';
    else print_plan(plan, options, std::cout);
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << '\n';
    return 1;
  }
}

int main(int argc, char** argv) {
  const int status = run(argc, argv);
  // a failed write to standard output (a full disk, `> /dev/full`) is a failure of the command
  if (!ctshard::io::stdout_ok()) {
    std::cerr << "error: cannot write to standard output\n";
    return status == 0 ? 1 : status;
  }
  return status;
}
