// ctshard — the command-line tool, a thin shell over the library (ctshard::registry): `plan`
// (propagate placements through an aten FX graph; the default), `table` (one op's strategy
// table), `cost` (price one redistribution), `iopddl` (solve a contest instance), `ops`. The
// command line itself is ctshard_cli (cli_main.hpp), shared with the Python console script.
#include "cli_main.hpp"

int main(int argc, char** argv) { return ctshard::tool::run_tool(argc, argv); }
