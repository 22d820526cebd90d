// Cost model: DTensor MeshTopoInfo, collective formulas, greedy redistribute plans. Expected
// values are the reference oracle numbers of ../shared/reference/dtensor_semantics.md §8.
#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

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

TEST_CASE("cost model: DTensor's cost reads a tensor's rank and bytes only (the planner's cost tables rely on it)", "[cost]") {
  // the whole-graph planner shares one table of redistribution costs between tensors of one rank
  // and size (global_plan.cpp, cost_class): every spec pair over R, P(sum), S(0..2) and
  // _S(1, 2) on a 2x2x2 mesh costs the same for shapes [12, 8, 6], [6, 12, 8] and [4, 4, 36],
  // f32 and bf16 twice the elements, through the checked entry and the builder's one
  const auto m = mesh({2, 2, 2});
  const std::vector<TensorMeta> same{{{12, 8, 6}, 4}, {{6, 12, 8}, 4}, {{4, 4, 36}, 4}, {{24, 8, 6}, 2}};
  const TensorMeta other_size{{12, 8, 7}, 4};
  std::vector<Placement> ps{Replicate(), Partial(), Shard(0), Shard(1), Shard(2), StridedShard(1, 2)};
  std::vector<Spec> specs;
  for (const auto& a : ps)
    for (const auto& b : ps)
      for (const auto& c : ps) {
        Spec x;
        for (const Placement& q : {a, b, c}) x.push_back(q);
        specs.push_back(x);
      }
  std::size_t differs_by_size = 0;
  for (const Spec& from : specs)
    for (const Spec& to : specs) {
      const double c0 = redistribute_cost(from, to, same[0], m);
      for (const TensorMeta& t : same) {
        INFO(to_string(from) << " -> " << to_string(to) << " on " << t.shape.rank << "-d, " << t.bytes() << " bytes");
        const double c = redistribute_cost(from, to, t, m);
        CHECK((c == c0 || (std::isinf(c) && std::isinf(c0))));
        const double checked = detail::greedy_redistribute_checked(from, to, t.bytes(), m, detail::IgnoreSteps{});
        CHECK((checked == c || (std::isinf(checked) && std::isinf(c))));
      }
      const double o = redistribute_cost(from, to, other_size, m);
      differs_by_size += std::isfinite(o) && o != c0 ? 1 : 0;
    }
  CHECK(differs_by_size > 1000);  // the bytes do matter
}

TEST_CASE("cost model: replicated or unchanged sources are free", "[cost]") {
  const auto m = mesh({2, 4});
  const TensorMeta t{{64, 64}, 4};
  CHECK(cost("RR", "S(0)P(sum)", t, m) == 0.0);
  CHECK(cost("S(0)S(1)", "S(0)S(1)", t, m) == 0.0);
  CHECK(cost("_S(0, 2)S(1)", "_S(0, 2)S(1)", t, m) == 0.0);
  CHECK_THROWS_WITH(cost("S(0)", "R", t, m), Catch::Contains("does not match a 2-dim mesh"));
}

TEST_CASE("cost model: StridedShard steps are the collectives DTensor runs for them", "[cost][strided]") {
  const auto m = mesh({2, 4});  // 8 devices on one host: 87.7 GB/s, 0.6 us per hop on both mesh dims
  const TensorMeta t{{64, 64}, 4};
  const double gib = 64.0 * 64.0 * 4.0 / 1024.0 / 1024.0 / 1024.0;  // the whole tensor
  // the collective formulas written out: n devices, g GiB after the step (all-gather) / before it
  const auto gather = [](double g, double n) { return 6.6 + (n - 1) * 0.6 + g * (n - 1) / n / 87.7 * 1e6; };
  const auto reduce = [](double g, double n) { return 6.6 + 2 * (n - 1) * 0.6 + g * 2 * (n - 1) / n / 87.7 * 1e6; };
  // _S -> R: an all-gather of the same bytes as S -> R; R -> _S: a local chunk
  CHECK_THAT(cost("_S(0, 2)R", "RR", t, m), WithinRel(gather(gib, 2), 1e-12));
  CHECK(cost("_S(0, 2)R", "RR", t, m) == cost("S(0)R", "RR", t, m));
  CHECK_THAT(cost("R_S(1, 2)", "RR", t, m), WithinRel(gather(gib, 4), 1e-12));
  CHECK(cost("RR", "_S(0, 2)R", t, m) == 0.0);
  // shard <-> StridedShard on one mesh dim: all-gather to Replicate, then a local chunk
  for (const char* pair : {"S(0)R>_S(0, 2)R", "_S(0, 2)R>S(0)R", "_S(0, 2)R>_S(0, 4)R", "_S(0, 2)R>S(1)R", "S(1)R>_S(0, 2)R"}) {
    const std::string text(pair);
    const auto cut = text.find('>');
    const Spec from = parse_spec(text.substr(0, cut)), to = parse_spec(text.substr(cut + 1));
    INFO(text);
    const RedistributePlan p = redistribute_plan(from, to, t, m);
    REQUIRE(p.size == 2);
    CHECK((p.steps[0].mesh_dim == 0 && p.steps[0].collective == Collective::all_gather && p.steps[0].to == Replicate()));
    CHECK(p.steps[0].comm_bytes == 64.0 * 64.0 * 4.0);
    CHECK((p.steps[1].mesh_dim == 0 && p.steps[1].collective == Collective::none && p.steps[1].to == to[0]));
    CHECK_THAT(p.cost_us, WithinRel(gather(gib, 2), 1e-12));
  }
  // Partial -> StridedShard: an all-reduce, then a local strided chunk; StridedShard -> Partial: inf
  const RedistributePlan pr = redistribute_plan(parse_spec("P(sum)R"), parse_spec("_S(0, 2)R"), t, m);
  REQUIRE(pr.size == 2);
  CHECK(pr.steps[0].collective == Collective::all_reduce);
  CHECK(pr.steps[1].collective == Collective::none);
  CHECK_THAT(pr.cost_us, WithinRel(reduce(gib, 2), 1e-12));
  CHECK(std::isinf(cost("_S(0, 2)R", "P(sum)R", t, m)));
  // FSDP2 + TP: _S(0, 4)S(0) gathers the inner mesh dim first, as S(0)S(0) does
  const RedistributePlan fsdp = redistribute_plan(parse_spec("_S(0, 4)S(0)"), parse_spec("RR"), t, m);
  REQUIRE(fsdp.size == 2);
  CHECK((fsdp.steps[0].mesh_dim == 1 && fsdp.steps[1].mesh_dim == 0));
  CHECK_THAT(fsdp.cost_us, WithinRel(gather(gib / 2, 4) + gather(gib, 2), 1e-12));
  CHECK(fsdp.cost_us == cost("S(0)S(0)", "RR", t, m));
  // S(0)S(0) -> _S(0, 4)S(0): mesh dim 0 shards dim 0 differently, so mesh dim 1 goes through
  // Replicate first (the nested-sharding check, split factors included)
  const RedistributePlan to_fsdp = redistribute_plan(parse_spec("S(0)S(0)"), parse_spec("_S(0, 4)S(0)"), t, m);
  REQUIRE(to_fsdp.size == 4);
  CHECK((to_fsdp.steps[0].mesh_dim == 1 && to_fsdp.steps[0].collective == Collective::all_gather));
  CHECK((to_fsdp.steps[1].mesh_dim == 0 && to_fsdp.steps[1].collective == Collective::all_gather));
  CHECK((to_fsdp.steps[2].mesh_dim == 0 && to_fsdp.steps[2].to == StridedShard(0, 4)));
  CHECK((to_fsdp.steps[3].mesh_dim == 1 && to_fsdp.steps[3].to == Shard(0)));
  CHECK_THAT(to_fsdp.cost_us, WithinRel(gather(gib / 2, 4) + gather(gib, 2), 1e-12));
  // DTensor 2.13's own redistribute_cost on 8x8 f32, 2x4 on CPU (one device per host; specs as
  // view outputs build them, use_strided_shard_as_shard_order=False): its min-cost path has no
  // StridedShard collective here, so the numbers agree
  const auto cpu = mesh({2, 4}, 1);
  CHECK_THAT(cost("S(0)S(0)", "_S(0, 4)S(0)", TensorMeta{{8, 8}, 4}, cpu), WithinRel(24.01081249386928, 1e-12));
  CHECK_THAT(cost("S(0)R", "_S(0, 2)R", TensorMeta{{8, 8}, 4}, cpu), WithinRel(9.306178567925302, 1e-12));
}

TEST_CASE("cost model: collective formulas in microseconds", "[cost]") {
  const auto m = mesh({4});
  const double gb = 1.0;  // 1 GiB unit
  CHECK_THAT(allgather_cost(gb, m, 0), WithinRel(6.6 + 3 * 0.6 + (0.75 / 87.7) * 1e6, 1e-12));
  CHECK_THAT(allreduce_cost(gb, m, 0), WithinRel(6.6 + 6 * 0.6 + (1.5 / 87.7) * 1e6, 1e-12));
  CHECK(reduce_scatter_cost(gb, m, 0) == allgather_cost(gb, m, 0));
  CHECK(all_to_all_cost(gb, m, 0) == allgather_cost(gb, m, 0) + 1.0);
}

TEST_CASE("cost model: every move to or from a StridedShard is finite unless it ends in a Partial", "[cost][strided]") {
  const auto m = mesh({2, 2});
  const TensorMeta t{{16, 8}, 4};
  const std::vector<Placement> ps{Replicate(), Shard(0), Shard(1), StridedShard(0, 2), StridedShard(1, 2), StridedShard(0, 4), Partial()};
  std::size_t strided = 0;
  for (const auto& a0 : ps)
    for (const auto& a1 : ps)
      for (const auto& b0 : ps)
        for (const auto& b1 : ps) {
          Spec a, b;
          a.push_back(a0);
          a.push_back(a1);
          b.push_back(b0);
          b.push_back(b1);
          const bool any_strided = a0.is_strided_shard() || a1.is_strided_shard() || b0.is_strided_shard() || b1.is_strided_shard();
          if (!any_strided) continue;
          ++strided;
          // a shard (of any kind) that must become a Partial on the same mesh dim has no DTensor step
          const bool to_partial = (a0.is_any_shard() && b0.is_partial()) || (a1.is_any_shard() && b1.is_partial());
          INFO(to_string(a) << " -> " << to_string(b));
          const double c = redistribute_cost(a, b, t, m);
          CHECK(std::isinf(c) == to_partial);
          CHECK(c >= 0.0);
          if (!to_partial) CHECK(redistribute_plan(a, b, t, m).cost_us == c);
        }
  CHECK(strided > 1000);
}
