// The `ctshard` command line (cli_main.hpp): the subcommands registered on one CLI11 app, the
// chosen one run, and the check of standard output.
#include "cli_main.hpp"

#include <iostream>
#include <memory>
#include <vector>

#include "command.hpp"
#include "ctshard/io/output_file.hpp"

#ifndef CTSHARD_VERSION
#error "CTSHARD_VERSION (the CMake project version) must be defined by the build"
#endif

namespace ctshard::tool {

namespace {

/// The tool; run_tool() adds the check of standard output.
int run(int argc, char** argv) {  // NOLINT(bugprone-exception-escape): only CLI11's option set-up runs outside the try below
  const auto started = Clock::now();
  CLI::App app{"ctshard: sharding strategy tables, redistribution costs and placement propagation (DTensor semantics)"};
  app.set_version_flag("--version", "ctshard " CTSHARD_VERSION, "Print the version (ctshard <version>) and exit");
  app.require_subcommand(0, 1);
  std::unique_ptr<Command> plan = add_plan_command(app, started);
  std::vector<std::unique_ptr<Command>> others;
  others.push_back(add_table_command(app));
  others.push_back(add_cost_command(app));
  others.push_back(add_iopddl_command(app, started));
  others.push_back(add_ops_command(app));
  CLI11_PARSE(app, argc, argv);
  try {
    for (const auto& command : others)
      if (command->chosen()) return command->run();
    return plan->run();  // `plan` is the main job, and what runs with no subcommand
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << '\n';
    return 1;
  }
}

}  // namespace

int run_tool(int argc, char** argv) {
  const int status = run(argc, argv);
  // a failed write to standard output (a full disk, `> /dev/full`) is a failure of the command
  if (!io::stdout_ok()) {
    std::cerr << "error: cannot write to standard output\n";
    return status == 0 ? 1 : status;
  }
  return status;
}

}  // namespace ctshard::tool
