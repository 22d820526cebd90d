#pragma once
/// \file cli_main.hpp
/// The `ctshard` command line as a function, so that the tool's `main` and the Python package's
/// console script (`ctshard`, `python -m ctshard`, through the extension) run one implementation.

namespace ctshard::tool {

/// Runs the command line `argv[0..argc)` (argv[0] is the program name): parses it, runs the
/// chosen subcommand (`plan` when none), prints its result to standard output and errors to
/// standard error, and returns the exit status (0 on success; 1 on an error, also when standard
/// output could not be written). `--version` prints `ctshard <version>`, the CMake project
/// version. Exceptions from the library are caught and printed as `error: <message>`.
int run_tool(int argc, char** argv);

}  // namespace ctshard::tool
