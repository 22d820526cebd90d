#pragma once
/// \file command.hpp
/// The `ctshard` tool's subcommands: each registers its options on the CLI11 app and, when
/// chosen, turns them into the library's option structs, calls the library (ctshard::registry)
/// and prints its document (`--json`) or text. No planning logic lives here.

#include <CLI/CLI.hpp>

#include <chrono>
#include <memory>
#include <string>

#include "ctshard/solve/budget.hpp"

namespace ctshard::tool {

/// When the tool started: a request's deadline counts from here (reading input is part of it).
using Clock = std::chrono::steady_clock;

/// The deadline `seconds` after `started`.
solve::Deadline deadline_after(Clock::time_point started, double seconds);

/// One subcommand of the tool.
class Command {
 public:
  virtual ~Command() = default;
  /// Whether the command line chose this subcommand.
  [[nodiscard]] virtual bool chosen() const = 0;
  /// Runs it: prints the result to standard output and returns the exit status. Throws
  /// std::exception (ctshard::error, fx::parse_error, ...) with the message to show.
  virtual int run() = 0;
};

/// `ctshard plan` (also what runs with no subcommand).
std::unique_ptr<Command> add_plan_command(CLI::App& app, Clock::time_point started);
/// `ctshard table`.
std::unique_ptr<Command> add_table_command(CLI::App& app);
/// `ctshard cost`.
std::unique_ptr<Command> add_cost_command(CLI::App& app);
/// `ctshard iopddl`.
std::unique_ptr<Command> add_iopddl_command(CLI::App& app, Clock::time_point started);
/// `ctshard ops`.
std::unique_ptr<Command> add_ops_command(CLI::App& app);

// Options several subcommands share, with one help text each.

/// `--cost-model dtensor|consistent`.
void add_cost_model_option(CLI::App* cmd, std::string& model);
/// `--algo search|enumerate` with the subcommand's help text.
void add_algo_option(CLI::App* cmd, std::string& algo, const char* what);
/// `--partial-passthrough ctshard|dtensor`.
CLI::Option* add_partial_passthrough_option(CLI::App* cmd, std::string& passthrough);
/// `--rule-set ctshard|dtensor`.
void add_rule_set_option(CLI::App* cmd, std::string& rule_set);
/// `--rule-set dtensor` implies DTensor's einsum linearity and Partial passthrough: an explicit
/// contrary choice is a contradiction, not something to override silently. Throws ctshard::error
/// naming the option to drop.
void check_rule_set(const std::string& command, const std::string& rule_set, const std::string& linearity, bool linearity_given,
                    const std::string& passthrough, bool passthrough_given);

}  // namespace ctshard::tool
