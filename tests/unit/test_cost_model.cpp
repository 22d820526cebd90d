// Cost model: DTensor MeshTopoInfo, collective formulas, greedy redistribute plans. Expected
// values are the reference oracle numbers of ../shared/reference/dtensor_semantics.md §8.
#include <catch2/catch.hpp>

#include "ctshard/cost/redistribute_cost.hpp"

using namespace ctshard;
using Catch::Matchers::WithinRel;

namespace {
MeshTopology mesh(std::initializer_list<std::int64_t> sizes, std::int64_t dph = 8) {
  return MeshTopology::build(std::span<const std::int64_t>(sizes.begin(), sizes.size()), dph);
}
double cost(const char* from, const char* to, TensorMeta meta, const MeshTopology& m) {
  return redistribute_cost(parse_spec(from), parse_spec(to), meta, m);
}
}  // namespace

TEST_CASE("cost model: topology marks inter-host mesh dims", "[cost]") {
  const auto m = mesh({4, 8}, 8);  // last dim: 8 devices fit one host; dim 0: 32 > 8
  CHECK(m.bandwidth_gbps[1] == Approx(87.7));
  CHECK(m.latency_us[1] == Approx(0.6));
  CHECK(m.bandwidth_gbps[0] == Approx(87.7 * 0.22));
  CHECK(m.latency_us[0] == Approx(2.7));
  CHECK_THROWS_WITH(mesh({2, 0}), Catch::Contains("mesh dim 1 has size 0"));
  CHECK_THROWS_WITH(mesh({}), Catch::Contains("1..8 dims"));
}

TEST_CASE("cost model: 1-D mesh of 4, 10x10 f32 (DTensor test_op_strategy)", "[cost]") {
  const TensorMeta t{{10, 10}, 4};
  for (std::int64_t dph : {8, 1}) {
    const auto m = mesh({4}, dph);
    for (const char* s : {"S(0)", "R", "P(sum)"}) CHECK(cost(s, s, t, m) == 0.0);
    CHECK(cost("S(0)", "R", t, m) == cost("P(sum)", "S(0)", t, m));
    CHECK(cost("P(sum)", "R", t, m) + 1 < cost("S(0)", "R", t, m) + cost("P(sum)", "S(0)", t, m));
    CHECK(std::isinf(cost("S(0)", "P(sum)", t, m)));
    CHECK(std::isinf(cost("P(sum)", "P(avg)", t, m)));
  }
  // oracle numbers
  CHECK_THAT(cost("S(0)", "R", t, mesh({4}, 8)), WithinRel(8.403186, 1e-6));
  CHECK_THAT(cost("P(sum)", "R", t, mesh({4}, 8)), WithinRel(10.206372, 1e-6));
  CHECK_THAT(cost("S(0)", "S(1)", t, mesh({4}, 8)), WithinRel(9.400796, 1e-6));
  CHECK_THAT(cost("S(0)", "R", t, mesh({4}, 1)), WithinRel(14.714481, 1e-6));
  CHECK_THAT(cost("P(sum)", "R", t, mesh({4}, 1)), WithinRel(22.828962, 1e-6));
  CHECK_THAT(cost("S(0)", "S(1)", t, mesh({4}, 1)), WithinRel(15.703620, 1e-6));
}

TEST_CASE("cost model: 2x2 orderings (DTensor test_redistribute_cost_with_order)", "[cost]") {
  const auto m = mesh({2, 2});
  const TensorMeta small{{4, 4}, 4};
  CHECK_THAT(cost("S(0)S(0)", "RS(0)", small, m), WithinRel(14.4005, 1e-5));
  CHECK_THAT(cost("S(0)S(0)", "S(0)R", small, m), WithinRel(7.2002, 1e-4));
  const RedistributePlan plan = redistribute_plan(parse_spec("S(0)S(0)"), parse_spec("RS(0)"), small, m);
  REQUIRE(plan.size == 3);  // dim1 S(0)->R, dim0 S(0)->R, dim1 R->S(0)
  CHECK((plan.steps[0].mesh_dim == 1 && plan.steps[0].collective == Collective::all_gather));
  CHECK((plan.steps[1].mesh_dim == 0 && plan.steps[1].collective == Collective::all_gather));
  CHECK((plan.steps[2].mesh_dim == 1 && plan.steps[2].collective == Collective::none && plan.steps[2].cost_us == 0));
  CHECK(plan.steps[0].comm_bytes == 32.0);  // 4x4 f32 / 4 shards, gathered over 2
  CHECK(plan.steps[1].comm_bytes == 64.0);
  const TensorMeta t{{8, 8}, 4};
  CHECK(cost("P(sum)P(sum)", "RR", t, m) > cost("S(0)S(0)", "RR", t, m));
  CHECK(cost("P(sum)P(sum)", "RR", t, m) > cost("P(sum)P(sum)", "S(0)S(0)", t, m));
}

TEST_CASE("cost model: replicated or unchanged sources are free; StridedShard is infinite", "[cost]") {
  const auto m = mesh({2, 4});
  const TensorMeta t{{64, 64}, 4};
  CHECK(cost("RR", "S(0)P(sum)", t, m) == 0.0);
  CHECK(cost("S(0)S(1)", "S(0)S(1)", t, m) == 0.0);
  CHECK(std::isinf(cost("_S(0, 2)R", "RR", t, m)));
  CHECK_THROWS_WITH(cost("S(0)", "R", t, m), Catch::Contains("does not match a 2-dim mesh"));
}

TEST_CASE("cost model: collective formulas in microseconds", "[cost]") {
  const auto m = mesh({4});
  const double gb = 1.0;  // 1 GiB unit
  CHECK_THAT(allgather_cost(gb, m, 0), WithinRel(6.6 + 3 * 0.6 + (0.75 / 87.7) * 1e6, 1e-12));
  CHECK_THAT(allreduce_cost(gb, m, 0), WithinRel(6.6 + 6 * 0.6 + (1.5 / 87.7) * 1e6, 1e-12));
  CHECK(reduce_scatter_cost(gb, m, 0) == allgather_cost(gb, m, 0));
  CHECK(all_to_all_cost(gb, m, 0) == allgather_cost(gb, m, 0) + 1.0);
}
