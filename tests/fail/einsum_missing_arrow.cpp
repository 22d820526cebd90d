// EXPECT: ctshard::einsum: equation has no '->'
// A malformed equation handed to the einsum rule generator must not compile.
#include "ctshard/expand/single_dim_strategy.hpp"

constexpr auto bad = ctshard::einsum_strategy_v<"mk,kn">;
int main() { return static_cast<int>(bad.size()); }
