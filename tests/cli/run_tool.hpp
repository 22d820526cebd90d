#pragma once
// Runs the built `ctshard` tool (path from the CTSHARD_TOOL definition) with shell-quoted
// arguments and returns what it printed on stdout and stderr.
#include <array>
#include <cstdio>
#include <memory>
#include <stdexcept>
#include <string>

inline std::string run_tool(const std::string& args) {
  const std::string cmd = std::string("\"") + CTSHARD_TOOL + "\" " + args + " 2>&1";
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(cmd.c_str(), "r"), pclose);
  if (!pipe) throw std::runtime_error("cannot run " + cmd);
  std::string out;
  std::array<char, 4096> buf{};
  std::size_t n = 0;
  while ((n = fread(buf.data(), 1, buf.size(), pipe.get())) > 0) out.append(buf.data(), n);
  return out;
}
