// EXPECT: the mesh rank N must be in
// A mesh of 9 dims (more than max_mesh_dims): one diagnostic, nothing else.
#include "ctshard/ctshard.hpp"

constexpr auto table = ctshard::mesh_expansion_v<ctshard::einsum_strategy_v<"mk,kn->mn">, 9>;
int main() { return static_cast<int>(table.size()); }
