// EXPECT: ctshard::einsum: an output label does not occur in any input
// A malformed equation handed to the einsum rule generator must not compile.
#include "ctshard/expand/single_dim_strategy.hpp"

constexpr auto bad = ctshard::einsum_strategy_v<"mk,kn->mz">;
int main() { return static_cast<int>(bad.size()); }
