// The README's C++ API example: a compile-time strategy table checked with static_assert, then a
// run-time choice for concrete shapes, input specs and a 2x4 mesh.
#include <cstdio>

#include "ctshard/runtime.hpp"

using namespace ctshard;
using namespace ctshard::literals;

// mm "mk,kn->mn" on a 2-D mesh: (1 + 7 rules)^2 = 64 rows, built at compile time.
constexpr auto mm_table = mesh_expansion_v<einsum_strategy_v<"mk,kn->mn">, 2>;
static_assert(mm_table.size() == 64 && table_laws_hold(mm_table));
static_assert(mm_table.output(9) == "P(sum)P(sum)"_spec);  // row 9: rule 1 on both mesh dims
static_assert(mm_table.input(9, 0) == "S(1)S(1)"_spec && mm_table.input(9, 1) == "S(0)S(0)"_spec);

int main() {  // NOLINT(bugprone-exception-escape): the example lets a ctshard::error end it
  const std::int64_t mesh_sizes[] = {2, 4};
  const MeshTopology mesh = MeshTopology::build(mesh_sizes, /*devices_per_host=*/8);
  StrategyEnumerator mm(einsum_strategy_v<"mk,kn->mn">.to_rule_set(), mesh, UnevenInputs::reject);
  const TensorMeta shapes[] = {{{1024, 512}, 4}, {{512, 2048}, 4}};  // float32
  const Spec current[] = {"S(0)R"_spec, "RS(1)"_spec};
  const Choice c = mm.choose(shapes, current);
  const Spec out = mm.spec_of(c, 0);
  std::printf("chosen strategy %zu (%s): (%s, %s) -> %s, redistribution %.3f us\n", c.index, std::string(to_string(c.rule)).c_str(),
              to_string(mm.spec_of(c, 1)).c_str(), to_string(mm.spec_of(c, 2)).c_str(), to_string(out).c_str(), c.total_us);
  return out == "S(0)S(1)"_spec ? 0 : 1;
}
