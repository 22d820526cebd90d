// Static tests: tables are constexpr values; sizes, laws and specific rows are static_asserts.
// Compiling this file is the test (the executable only returns 0).
#include "ctshard/expand/mesh_expansion.hpp"

namespace {
using namespace ctshard;
using namespace ctshard::literals;
using L = EinsumLinearity;

// --- sizes: (rules + all-Replicate)^N for N = 1..4 ---------------------------------------------
template <auto Strategy, std::size_t S>
constexpr bool sizes_ok() {
  return mesh_expansion_v<Strategy, 1>.size() == S && mesh_expansion_v<Strategy, 2>.size() == S * S &&
         mesh_expansion_v<Strategy, 3>.size() == S * S * S && mesh_expansion_v<Strategy, 4>.size() == S * S * S * S;
}
constexpr auto mm_plain = einsum_strategy_v<"mk,kn->mn", L::none>;
constexpr auto bmm_plain = einsum_strategy_v<"bmk,bkn->bmn", L::none>;
static_assert(mm_plain.size() == 3 && bmm_plain.size() == 4);
static_assert(sizes_ok<mm_plain, 4>());   // mm: 4^N
static_assert(sizes_ok<bmm_plain, 5>());  // bmm: 5^N
// DTensor's newest rules add per-input linearity: mm 1 + 3 + 4 = 8 rows, bmm 9, dot 6.
static_assert(sizes_ok<einsum_strategy_v<"mk,kn->mn">, 8>());
static_assert(sizes_ok<einsum_strategy_v<"bmk,bkn->bmn">, 9>());
static_assert(mesh_expansion_v<einsum_strategy_v<"i,i->">, 2>.size() == 36);
// Batch-only equations: DTensor adds two all-Partial rows; the sound policy does not.
static_assert(einsum_strategy_v<"abcd,abcd->abcd", L::dtensor>.size() == 4 + 6);
static_assert(einsum_strategy_v<"abcd,abcd->abcd", L::per_input>.size() == 4 + 4);
static_assert(einsum_strategy_v<"abcd,abcd->abcd", L::none>.size() == 4);  // DTensor test: 1-D count 5 with R

// --- laws hold for every table N = 1..4 ---------------------------------------------------------
template <auto Strategy>
constexpr bool laws_ok() {
  return table_laws_hold(mesh_expansion_v<Strategy, 1>) && table_laws_hold(mesh_expansion_v<Strategy, 2>) &&
         table_laws_hold(mesh_expansion_v<Strategy, 3>) && table_laws_hold(mesh_expansion_v<Strategy, 4>);
}
static_assert(laws_ok<mm_plain>() && laws_ok<bmm_plain>() && laws_ok<einsum_strategy_v<"mk,kn->mn">>());
static_assert(laws_ok<einsum_strategy_v<"abd,bf->abfd">>() && laws_ok<einsum_strategy_v<"i,i->">>());

// --- rows, in DTensor's order (mesh dim 0 slowest) ----------------------------------------------
// mm single-dim rules: [R,R,R], [P(sum),S(1),S(0)], [S(0),S(0),R], [S(1),R,S(1)]
constexpr auto mm1 = mesh_expansion_v<mm_plain, 1>;
static_assert(mm1.output(0) == "R"_spec && mm1.input(0, 0) == "R"_spec && mm1.input(0, 1) == "R"_spec);
static_assert(mm1.output(1) == "P(sum)"_spec && mm1.input(1, 0) == "S(1)"_spec && mm1.input(1, 1) == "S(0)"_spec);
static_assert(mm1.output(2) == "S(0)"_spec && mm1.input(2, 0) == "S(0)"_spec && mm1.input(2, 1) == "R"_spec);
static_assert(mm1.output(3) == "S(1)"_spec && mm1.input(3, 0) == "R"_spec && mm1.input(3, 1) == "S(1)"_spec);
constexpr auto mm2 = mesh_expansion_v<mm_plain, 2>;
static_assert(mm2.output(1) == "RP(sum)"_spec && mm2.input(1, 0) == "RS(1)"_spec && mm2.input(1, 1) == "RS(0)"_spec);
static_assert(mm2.output(4) == "P(sum)R"_spec);  // index 4 = digits (1, 0)
static_assert(mm2.output(11) == "S(0)S(1)"_spec && mm2.input(11, 0) == "S(0)R"_spec && mm2.input(11, 1) == "RS(1)"_spec);
constexpr auto mm4 = mesh_expansion_v<mm_plain, 4>;
static_assert(mm4.output(255) == "S(1)S(1)S(1)S(1)"_spec && mm4.input(255, 0) == "RRRR"_spec);
// bmm "bmk,bkn->bmn": batch first, then contracting, lhs-only, rhs-only.
constexpr auto bmm1 = mesh_expansion_v<bmm_plain, 1>;
static_assert(bmm1.output(1) == "S(0)"_spec && bmm1.input(1, 0) == "S(0)"_spec && bmm1.input(1, 1) == "S(0)"_spec);
static_assert(bmm1.output(2) == "P(sum)"_spec && bmm1.input(2, 0) == "S(2)"_spec && bmm1.input(2, 1) == "S(1)"_spec);
static_assert(bmm1.output(4) == "S(2)"_spec && bmm1.input(4, 0) == "R"_spec && bmm1.input(4, 1) == "S(2)"_spec);

// --- every contracting shard produces Partial(sum); no Shard beyond an operand's rank ----------
template <std::size_t S, std::size_t W, std::size_t N>
constexpr bool contracting_gives_partial(const StrategyTable<S, W, N>& t) {
  for (std::size_t i = 0; i < t.size(); ++i)
    for (std::size_t d = 0; d < N; ++d) {
      const auto& row = t.single_dim.rows[t.rows[i][d]];
      // in mm, a Shard of lhs dim 1 (k) always pairs with rhs dim 0 (k) and a P(sum) output
      if (row[1] == Shard(1) && !(row[0] == Partial() && row[2] == Shard(0))) return false;
    }
  return true;
}
static_assert(contracting_gives_partial(mm2) && contracting_gives_partial(mesh_expansion_v<einsum_strategy_v<"mk,kn->mn">, 3>));
constexpr auto dot2 = mesh_expansion_v<einsum_strategy_v<"i,i->">, 2>;
static_assert([] {
  for (std::size_t i = 0; i < dot2.size(); ++i)
    for (const auto& p : dot2.output(i))
      if (p.is_any_shard()) return false;  // a 0-d output is never sharded
  return true;
}());

// --- parsing (DTensor test_op_strategy parse_dims cases) -----------------------------------------
static_assert(einsum_equation_v<"abc,abc->abc">.batch.view() == "abc");
static_assert(einsum_equation_v<"mk,kn->mn">.contracting.view() == "k" && einsum_equation_v<"mk,kn->mn">.lhs_only.view() == "m" &&
              einsum_equation_v<"mk,kn->mn">.rhs_only.view() == "n");
static_assert(einsum_equation_v<"bcmk,bckn->bcmn">.batch.view() == "bc");
static_assert(einsum_equation_v<"abc,ab->abc">.batch.view() == "ab" && einsum_equation_v<"abc,ab->abc">.lhs_only.view() == "c");
static_assert(einsum_equation_v<"abd,bf->abfd">.batch.view() == "b" && einsum_equation_v<"abd,bf->abfd">.lhs_only.view() == "ad" &&
              einsum_equation_v<"abd,bf->abfd">.rhs_only.view() == "f");
static_assert(!is_valid_einsum_v<"mk,kn"> && !is_valid_einsum_v<"mk,kn->mm"> && !is_valid_einsum_v<"m k,kn->mn"> && is_valid_einsum_v<"i,i->">);
static_assert(parse_einsum("mk,kn->mz").code == einsum_error::output_label_absent_from_inputs && parse_einsum("mk,kn->mz").column == 8);

// --- type-level placements ------------------------------------------------------------------------
static_assert(placement_c<Shard(1)>::value == Shard(1) && !std::is_same_v<placement_c<Shard(0)>, placement_c<Shard(1)>>);
}  // namespace

int main() { return 0; }
