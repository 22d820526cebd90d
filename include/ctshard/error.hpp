#pragma once
/// \file error.hpp
/// The exception type every run-time failure of ctshard raises.

#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>

namespace ctshard {

/// Raised for bad run-time input (unparsable placement text, a spec whose rank does not match the
/// mesh, an unknown op name, ...). `what()` always names the API, the problem and the offending
/// text. In a constant expression the same code paths fail to compile instead (a `throw` is not a
/// constant expression), so compile-time misuse never yields a silently wrong table.
class error : public std::runtime_error {
 public:
  explicit error(const std::string& message) : std::runtime_error(message) {}
};

/// Throws ctshard::error unless `got` lies in [`min`, `max`]: the one tensor-count check and its
/// one message shape, "<api>: takes 2 tensor inputs, got 3" ("takes 1 to 3 tensor inputs" for a
/// range), with `got_detail` appended when given (" (1 shape, 2 specs)"). `api` names the op or
/// the entry point ("ctshard: aten.mm.default", "ctshard::StrategyEnumerator").
inline void check_tensor_count(std::string_view api, std::size_t min, std::size_t max, std::size_t got, std::string_view got_detail = {}) {
  if (got >= min && got <= max) return;
  const std::string count = min == max ? std::to_string(min) : std::to_string(min) + " to " + std::to_string(max);
  throw error(std::string(api) + ": takes " + count + " tensor input" + (max == 1 ? "" : "s") + ", got " + std::to_string(got) +
              std::string(got_detail));
}

}  // namespace ctshard
