// EXPECT: rows exceed max_constexpr_table_rows
// mm's 8-row rule on 6 mesh dims (262,144 rows): one ctshard diagnostic, not a compiler limit.
#include "ctshard/ctshard.hpp"

constexpr auto table = ctshard::mesh_expansion_v<ctshard::einsum_strategy_v<"mk,kn->mn">, 6>;
int main() { return static_cast<int>(table.size()); }
