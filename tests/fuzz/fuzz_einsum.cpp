// libFuzzer target: the run-time einsum parser and the rules built from a parsed equation. An
// equation that parses gives a rule set whose rows all have the equation's width.
#include <cstdlib>

#include "ctshard/ctshard.hpp"
#include "fuzz_common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text = ctshard::fuzz::as_text(data, size);
  try {
    const ctshard::EinsumEquation eq = ctshard::parse_einsum_or_throw(text, 2);
    for (auto linearity : {ctshard::EinsumLinearity::dtensor, ctshard::EinsumLinearity::per_input}) {
      const ctshard::RuleSet rules = ctshard::einsum_single_dim_strategy(eq, linearity);
      if (rules.width() != 3) std::abort();
    }
  } catch (const ctshard::error&) {}
  try {
    (void)ctshard::parse_einsum_or_throw(text, 0);
  } catch (const ctshard::error&) {}
  return 0;
}
