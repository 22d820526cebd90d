// libFuzzer target: the spec parser (`parse_spec`), the shape parser and the mesh parser. A spec
// that parses must print and parse back to itself.
#include <cstdlib>
#include <string>

#include "ctshard/runtime.hpp"
#include "fuzz_common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text = ctshard::fuzz::as_text(data, size);
  try {
    const ctshard::Spec spec = ctshard::parse_spec(text);
    const std::string printed = ctshard::to_string(spec);
    if (!(ctshard::parse_spec(printed) == spec)) std::abort();  // round trip
  } catch (const ctshard::error&) {}
  try {
    (void)ctshard::parse_shape(text);
  } catch (const ctshard::error&) {}
  try {
    std::size_t ndim = 0;
    const auto sizes = ctshard::parse_mesh_sizes(text, ndim);
    (void)ctshard::MeshTopology::build(std::span<const std::int64_t>(sizes.data(), ndim));
  } catch (const ctshard::error&) {}
  return 0;
}
