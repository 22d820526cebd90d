// ctshard — the command-line tool, a thin shell over the library (ctshard::registry): `plan`
// (propagate placements through an aten FX graph; the default), `table` (one op's strategy
// table), `cost` (price one redistribution), `iopddl` (solve a contest instance), `ops`.
#include <iostream>
#include <memory>
#include <vector>

#include "command.hpp"
#include "ctshard/io/output_file.hpp"

namespace {

/// The tool; main() adds the check of standard output.
int run(int argc, char** argv) {  // NOLINT(bugprone-exception-escape): only CLI11's option set-up runs outside the try below
  const auto started = ctshard::tool::Clock::now();
  CLI::App app{"ctshard: sharding strategy tables, redistribution costs and placement propagation (DTensor semantics)"};
  app.require_subcommand(0, 1);
  std::unique_ptr<ctshard::tool::Command> plan = ctshard::tool::add_plan_command(app, started);
  std::vector<std::unique_ptr<ctshard::tool::Command>> others;
  others.push_back(ctshard::tool::add_table_command(app));
  others.push_back(ctshard::tool::add_cost_command(app));
  others.push_back(ctshard::tool::add_iopddl_command(app, started));
  others.push_back(ctshard::tool::add_ops_command(app));
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

int main(int argc, char** argv) {
  const int status = run(argc, argv);
  // a failed write to standard output (a full disk, `> /dev/full`) is a failure of the command
  if (!ctshard::io::stdout_ok()) {
    std::cerr << "error: cannot write to standard output\n";
    return status == 0 ? 1 : status;
  }
  return status;
}
