#pragma once
/// \file error.hpp
/// The exception type every run-time failure of ctshard raises.

#include <stdexcept>
#include <string>

namespace ctshard {

/// Raised for bad run-time input (unparsable placement text, a spec whose rank does not match the
/// mesh, an unknown op name, ...). `what()` always names the API, the problem and the offending
/// text. In a constant expression the same code paths fail to compile instead (a `throw` is not a
/// constant expression), so compile-time misuse never yields a silently wrong table.
class error : public std::runtime_error {
 public:
  explicit error(const std::string& message) : std::runtime_error(message) {}
};

}  // namespace ctshard
