#pragma once
// Runs the built `ctshard` tool (path from the CTSHARD_TOOL definition) with shell-quoted
// arguments and returns what it printed on stdout and stderr (run_tool_status: and its exit
// status).
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <memory>
#include <stdexcept>
#include <string>

inline std::string run_tool_status(const std::string& args, int& status) {
  const std::string cmd = std::string("\"") + CTSHARD_TOOL + "\" " + args + " 2>&1";
  FILE* pipe = popen(cmd.c_str(), "r");
  if (pipe == nullptr) throw std::runtime_error("cannot run " + cmd);
  std::string out;
  std::array<char, 4096> buf{};
  std::size_t n = 0;
  while ((n = fread(buf.data(), 1, buf.size(), pipe)) > 0) out.append(buf.data(), n);
  const int raw = pclose(pipe);
  status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  return out;
}

inline std::string run_tool(const std::string& args) {
  int status = 0;
  return run_tool_status(args, status);
}
