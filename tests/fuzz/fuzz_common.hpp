#pragma once
// Shared by the libFuzzer targets: every target feeds arbitrary bytes to one entry point and
// accepts only the documented failure (ctshard::error / fx::parse_error). Any other exception,
// a crash, a sanitizer report, a leak or a timeout is a finding.

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace ctshard::fuzz {

/// The input as text.
inline std::string_view as_text(const std::uint8_t* data, std::size_t size) { return {reinterpret_cast<const char*>(data), size}; }

}  // namespace ctshard::fuzz
