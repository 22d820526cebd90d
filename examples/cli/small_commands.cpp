// `ctshard cost`, `ctshard iopddl` and `ctshard ops` (command.hpp).
#include <iostream>

#include "command.hpp"
#include "ctshard/error.hpp"
#include "ctshard/report/commands.hpp"
#include "ctshard/report/iopddl_report.hpp"

namespace ctshard::tool {
namespace {

class CostCommand final : public Command {
 public:
  explicit CostCommand(CLI::App& app) {
    cmd_ = app.add_subcommand("cost", "price one redistribution and list its steps");
    cmd_->add_option("--shape", shape_, "global shape: 8x8")->required();
    cmd_->add_option("--mesh", mesh_, "mesh sizes: 2x2")->required();
    cmd_->add_option("--from", options_.from, "current spec: \"S(0)S(0)\"")->required();
    cmd_->add_option("--to", options_.to, "target spec: \"RS(0)\"")->required();
    cmd_->add_option("--devices-per-host", options_.devices_per_host, "devices per host")->capture_default_str();
    cmd_->add_option("--dtype", options_.dtype, "element type")->capture_default_str();
    add_cost_model_option(cmd_, cost_model_);
    cmd_->add_flag("--json", json_, "machine-readable output");
  }
  bool chosen() const override { return static_cast<bool>(*cmd_); }
  int run() override {
    const auto shapes = report::parse_shapes(shape_);
    if (shapes.size() != 1) throw error("ctshard cost: --shape takes one shape, got '" + shape_ + "'");
    options_.shape = shapes.front();
    options_.mesh = report::parse_mesh(mesh_);
    options_.cost_model = report::parse_cost_model(cost_model_);
    const auto doc = report::cost_json(options_);
    if (json_) std::cout << report::json_text(doc, 2) << '\n';
    else report::print_cost(doc, std::cout);
    return 0;
  }

 private:
  CLI::App* cmd_ = nullptr;
  report::CostOptions options_;
  std::string shape_, mesh_, cost_model_ = "dtensor";
  bool json_ = false;
};

class IopddlCommand final : public Command {
 public:
  IopddlCommand(CLI::App& app, Clock::time_point started) : started_(started) {
    cmd_ = app.add_subcommand("iopddl", "solve an IOPDDL contest instance (cost graph with per-time-step usage limits)");
    cmd_->add_option("file", path_, "instance: .json or .json.gz")->required();
    cmd_->add_option("--time-limit-s", time_limit_s_, "time budget (s), reading included (at most 10^6 s)")->capture_default_str();
    cmd_->add_option("--max-memory-mib", options_.max_memory_mib,
                     "memory budget (MiB) of the text, the instance and the solver; 0: a quarter of the machine's memory")
        ->capture_default_str();
    cmd_->add_flag("--json", json_, "machine-readable output (with the strategies)");
    cmd_->add_flag("--quiet", quiet_, "no progress lines on stderr (one a second while the solve runs over 1 s)");
  }
  bool chosen() const override { return static_cast<bool>(*cmd_); }
  int run() override {
    options_.time_limit_s = solve::checked_time_limit_s(time_limit_s_, "ctshard iopddl: --time-limit-s");
    options_.deadline = deadline_after(started_, options_.time_limit_s);
    options_.progress = quiet_ ? nullptr : &std::cerr;
    const auto doc = report::iopddl_json(path_, options_);
    if (json_) std::cout << report::json_text(doc) << '\n';
    else report::print_iopddl(doc, std::cout);
    return 0;
  }

 private:
  CLI::App* cmd_ = nullptr;
  Clock::time_point started_;
  report::IopddlOptions options_;
  std::string path_;
  double time_limit_s_ = 60;
  bool json_ = false, quiet_ = false;
};

class OpsCommand final : public Command {
 public:
  explicit OpsCommand(CLI::App& app) {
    cmd_ = app.add_subcommand("ops", "list the op overloads that have a sharding rule");
    cmd_->add_flag("--json", json_, "machine-readable output");
  }
  bool chosen() const override { return static_cast<bool>(*cmd_); }
  int run() override {
    const auto ops = report::ops_json();
    if (json_) std::cout << report::json_text(ops, 2) << '\n';
    else
      for (const auto& n : ops["ops"]) std::cout << n.get<std::string>() << '\n';
    return 0;
  }

 private:
  CLI::App* cmd_ = nullptr;
  bool json_ = false;
};

}  // namespace

std::unique_ptr<Command> add_cost_command(CLI::App& app) { return std::make_unique<CostCommand>(app); }
std::unique_ptr<Command> add_iopddl_command(CLI::App& app, Clock::time_point started) { return std::make_unique<IopddlCommand>(app, started); }
std::unique_ptr<Command> add_ops_command(CLI::App& app) { return std::make_unique<OpsCommand>(app); }

}  // namespace ctshard::tool
