// libFuzzer target: the FX graph reader. Malformed text must raise fx::parse_error.
#include "ctshard/fx/reader.hpp"
#include "fuzz_common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    const ctshard::fx::Graph g = ctshard::fx::parse_fx_graph(ctshard::fuzz::as_text(data, size), "<fuzz>");
    (void)g.symbols();
  } catch (const ctshard::fx::parse_error&) {}
  return 0;
}
