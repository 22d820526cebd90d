#include <catch2/catch.hpp>

#include "ctshard/core/placement.hpp"
#include "ctshard/core/spec.hpp"

using namespace ctshard;

TEST_CASE("placement: DTensor short form round-trips", "[placement]") {
  CHECK(to_string(Replicate()) == "R");
  CHECK(to_string(Shard(2)) == "S(2)");
  CHECK(to_string(StridedShard(0, 4)) == "_S(0, 4)");
  CHECK(to_string(Partial(ReduceOp::avg)) == "P(avg)");
  CHECK(to_string(ShardingPlaceholder(1)) == "S?(1)");
  for (const char* text : {"R", "S(0)", "S(12)", "_S(1, 2)", "P(sum)", "P(avg)", "P(max)", "P(min)"}) CHECK(to_string(parse_placement(text)) == text);
  CHECK(parse_placement("P") == Partial(ReduceOp::sum));
}

TEST_CASE("placement: kinds", "[placement]") {
  CHECK(Shard(0).is_shard());
  CHECK_FALSE(StridedShard(0, 2).is_shard());
  CHECK(StridedShard(0, 2).is_any_shard());
  CHECK(Partial().is_partial());
  CHECK(Shard(0) != Shard(1));
  CHECK(Partial(ReduceOp::max) != Partial(ReduceOp::min));
}

TEST_CASE("spec: parse and print", "[spec]") {
  const Spec s = parse_spec("S(0)RP(avg)");
  REQUIRE(s.size() == 3);
  CHECK(s[0] == Shard(0));
  CHECK(s[1] == Replicate());
  CHECK(s[2] == Partial(ReduceOp::avg));
  CHECK(to_string(s) == "S(0)RP(avg)");
  CHECK(parse_spec("(S(0), R)") == parse_spec("S(0)R"));
  CHECK(to_string(parse_spec("_S(0, 2)S(0)")) == "_S(0, 2)S(0)");
  CHECK(Spec(3).is_replicated());
  CHECK(num_shards(parse_spec("S(0)RS(1)"), std::array<int, 3>{2, 3, 4}) == 8);
}

TEST_CASE("spec: bad text raises an error naming it", "[spec]") {
  CHECK_THROWS_WITH(parse_spec("S(0)X"), Catch::Contains("'S(0)X'") && Catch::Contains("column 5"));
  CHECK_THROWS_WITH(parse_spec("P(prod)"), Catch::Contains("'P(prod)'"));
  CHECK_THROWS_WITH(parse_spec(""), Catch::Contains("ctshard::parse_spec"));
  CHECK_THROWS_WITH(parse_spec("S(0"), Catch::Contains("'S(0'"));
  CHECK_THROWS_WITH(parse_spec("S?(0)"), Catch::Contains("'S?(0)'"));
  CHECK_THROWS_WITH(parse_spec("RRRRRRRRR"), Catch::Contains("max_mesh_dims"));
  CHECK_THROWS_AS(Shard(-1), error);
  CHECK_THROWS_AS(StridedShard(0, 0), error);
}
