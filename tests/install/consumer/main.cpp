#include <ctshard/ctshard.hpp>

constexpr auto table = ctshard::mesh_expansion_v<ctshard::einsum_strategy_v<"bmk,bkn->bmn", ctshard::EinsumLinearity::none>, 2>;
static_assert(table.size() == 25);

int main() { return table.output(0).is_replicated() ? 0 : 1; }
