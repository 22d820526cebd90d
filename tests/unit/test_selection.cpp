// Placeholder filling, mixed-partial and shardability filters, DTensor's choice rules, and the
// enumerator (DTensor test_single_dim_strategy facts from ../shared/reference §8).
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "ctshard/registry.hpp"
#include "op_call_builders.hpp"

using namespace ctshard;

namespace {
using test::rows_text;
RuleSet mm_rules() { return einsum_single_dim_strategy(parse_einsum_or_throw("mk,kn->mn")); }
}  // namespace

TEST_CASE("placeholders: filled with the inputs' shard kinds, in DTensor's order", "[placeholder]") {
  const RuleSet all = with_replicate_row(mm_rules());
  const Spec only_r[] = {parse_spec("R")};
  CHECK(rows_text(fill_placeholders(all, shard_kinds_of(only_r))) ==
        std::vector<std::string>{"R,R,R", "P(sum),P(sum),R", "P(sum),R,P(sum)", "P(avg),P(avg),R", "P(avg),R,P(avg)"});
  const Spec sharded[] = {parse_spec("RS(0)S(1)")};
  CHECK(rows_text(fill_placeholders(all, shard_kinds_of(sharded))) == std::vector<std::string>{"R,R,R", "P(sum),S(1),S(0)", "S(0),S(0),R",
                                                                                               "S(1),R,S(1)", "P(sum),P(sum),R", "P(sum),R,P(sum)",
                                                                                               "P(avg),P(avg),R", "P(avg),R,P(avg)"});
  const Spec strided[] = {parse_spec("_S(0, 2)"), parse_spec("_S(0, 4)")};
  const auto filled = rows_text(fill_placeholders(all, shard_kinds_of(strided)));
  REQUIRE(filled.size() == 11);
  CHECK(filled[1] == "P(sum),_S(1, 2),_S(0, 2)");
  CHECK(filled[2] == "P(sum),_S(1, 4),_S(0, 4)");
  CHECK(filled[3] == "_S(0, 2),_S(0, 2),R");
  const Spec mixed[] = {parse_spec("RS(1)S(0)_S(1, 2)_S(0, 2)")};
  const auto m = rows_text(fill_placeholders(all, shard_kinds_of(mixed)));
  CHECK(m[1] == "P(sum),S(1),S(0)");  // Shard variant before the strided one
  CHECK(m[2] == "P(sum),_S(1, 2),_S(0, 2)");
}

TEST_CASE("filters: mixed partials and shardability", "[filters]") {
  CHECK(has_compatible_partials(parse_spec("P(sum)P(avg)")));
  CHECK(has_compatible_partials(parse_spec("P(max)P(max)R")));
  CHECK_FALSE(has_compatible_partials(parse_spec("P(sum)P(max)")));
  CHECK_FALSE(has_compatible_partials(parse_spec("P(min)P(max)")));
  const std::int64_t sizes[] = {2, 4};
  const auto m = MeshTopology::build(sizes);
  CHECK(is_tensor_shardable({6, 8}, parse_spec("S(0)S(1)"), m));
  CHECK(is_tensor_shardable({7, 5}, parse_spec("S(0)S(1)"), m));        // uneven is fine
  CHECK_FALSE(is_tensor_shardable({6, 3}, parse_spec("RS(1)"), m));     // 3 < 4 shards: empty shard
  CHECK_FALSE(is_tensor_shardable({7, 8}, parse_spec("S(0)S(0)"), m));  // 7 < 8 shards
  CHECK_FALSE(is_tensor_shardable({}, parse_spec("S(0)R"), m));         // 0-d: no dim 0
  CHECK(is_tensor_shardable({8}, parse_spec("_S(0, 2)S(0)"), m));       // 8 >= 2*4
  CHECK_FALSE(is_tensor_shardable({7}, parse_spec("_S(0, 4)R"), m));    // 7 < 2 shards x split factor 4
}

TEST_CASE("selection: DTensor's tie rules", "[selection]") {
  ChoiceAccumulator a;
  a.offer(0, 5.0, false);
  a.offer(1, 0.0, false);
  a.offer(2, 0.0, true);
  a.offer(3, 0.0, true);
  CHECK(a.choice() == Choice{3, ChoiceRule::no_redistribute, 0.0});  // the LAST matching zero row
  CHECK(a.plain_min_index() == 1);
  ChoiceAccumulator b;
  b.offer(0, 3.0, false);
  b.offer(1, 0.0, false);
  b.offer(2, 0.0, false);
  CHECK(b.choice().index == 1);
  CHECK(b.choice().rule == ChoiceRule::zero_cost);
  ChoiceAccumulator c;
  c.offer(0, 3.0, false);
  c.offer(1, 2.0, false);
  c.offer(2, 2.0, false);
  CHECK(c.choice() == Choice{1, ChoiceRule::min_cost, 2.0});
  ChoiceAccumulator d;
  d.offer(0, 9.0, false);
  CHECK(d.choice().rule == ChoiceRule::only);
}

TEST_CASE("enumerator: mm on 2x2x2 enumerates 8^3 rows and keeps the matching one", "[enumerator]") {
  const std::int64_t sizes[] = {2, 2, 2};
  StrategyEnumerator e(mm_rules(), MeshTopology::build(sizes), UnevenInputs::reject);
  const TensorMeta metas[] = {{{64, 32}, 4}, {{32, 64}, 4}};
  const Spec specs[] = {parse_spec("S(0)RR"), parse_spec("RRR")};
  std::size_t rows = 0;
  const FilterCounts counts = e.for_each(metas, specs, [&](const CandidateView&) { ++rows; });
  CHECK(rows + counts.mixed_partial + counts.unshardable == 512);
  CHECK(counts.unshardable == 0);
  const Choice c = e.choose(metas, specs);
  CHECK(c.rule == ChoiceRule::no_redistribute);
  const std::size_t index = static_cast<std::size_t>(e.index_of(metas, specs, c).value());
  std::vector<std::uint8_t> digits;
  (void)e.for_each(metas, specs, [&](const CandidateView& v) {
    if (v.index == index) digits.assign(v.digits.begin(), v.digits.end());
  });
  CHECK(to_string(e.spec_of(digits, 0)) == "S(0)RR");
  CHECK(to_string(e.spec_of(digits, 1)) == "S(0)RR");
  CHECK(to_string(e.spec_of(digits, 2)) == "RRR");
}

TEST_CASE("enumerator: wrong input counts and mesh ranks raise errors", "[enumerator]") {
  const std::int64_t sizes[] = {2, 2};
  StrategyEnumerator e(mm_rules(), MeshTopology::build(sizes), UnevenInputs::reject);
  const TensorMeta metas[] = {{{4, 4}, 4}, {{4, 4}, 4}};
  const Spec bad_rank[] = {parse_spec("S(0)"), parse_spec("RR")};
  CHECK_THROWS_WITH(e.choose(metas, bad_rank), Catch::Contains("'S(0)' has 1 placements for a 2-dim mesh"));
  const Spec one[] = {parse_spec("RR")};
  CHECK_THROWS_WITH(e.choose(std::span<const TensorMeta>(metas, 1), one), Catch::Contains("takes 2 tensor inputs"));
  // an input of another rank than the einsum's labels give it (a 1-d tensor was priced as an mm
  // operand, with rows naming dims it lacks)
  StrategyEnumerator mm(einsum_strategy_v<"mk,kn->mn">.to_rule_set(), MeshTopology::build(sizes), UnevenInputs::reject);
  const TensorMeta vector_first[] = {{{512}, 4}, {{512, 2048}, 4}};
  const Spec specs[] = {parse_spec("S(0)R"), parse_spec("RS(1)")};
  CHECK_THROWS_WITH(mm.choose(vector_first, specs), "ctshard::StrategyEnumerator: input 0 has rank 1 but the rules give it 2 dims");
  CHECK_THROWS_WITH(mm.count(vector_first, specs), Catch::Contains("input 0 has rank 1"));
  const TensorMeta good[] = {{{512, 512}, 4}, {{512, 2048}, 4}};
  const Choice mine = mm.choose(good, specs);
  CHECK(to_string(mm.spec_of(mine, 1)) == "S(0)R");
  // a Choice of another enumerator is refused, not decoded with this one's table (it read as
  // P(sum)R, a row of mm's table, for bmm's S(0)R)
  StrategyEnumerator other(einsum_strategy_v<"mk,kn->mn">.to_rule_set(), MeshTopology::build(sizes), UnevenInputs::reject);
  const Choice theirs = other.choose(good, specs);
  CHECK_THROWS_WITH(mm.spec_of(theirs, 1), "ctshard::StrategyEnumerator::spec_of: the Choice does not come from this enumerator");
  CHECK_THROWS_WITH(mm.index_of(good, specs, theirs), Catch::Contains("does not come from this enumerator"));
  const StrategyEnumerator copy = mm;  // a copy holds the same tables
  CHECK(to_string(copy.spec_of(mine, 1)) == "S(0)R");
}

TEST_CASE("regressions: bug reports against DTensor-style propagation", "[regression]") {
  const OpRegistry& reg = builtin_registry();
  SECTION("B02: adding a Python scalar to a P(sum) tensor must not keep P(sum)") {
    OpCall call;
    call.op = "aten.add.Tensor";
    call.tensors = {TensorMeta{{}, 4}};
    const OpRule rule = (*reg.find(call.op))(call);
    CHECK(rule.rules.size() == 0);  // 0-d, one tensor: no shard row and no additive Partial row
    const std::int64_t sizes[] = {2};
    StrategyEnumerator e(rule.rules, MeshTopology::build(sizes), rule.uneven_inputs);
    const Spec specs[] = {parse_spec("P(sum)")};
    const Choice c = e.choose(call.tensors, specs);
    CHECK(c.total_us > 0);  // the P(sum) input is all-reduced
  }
  SECTION("B04: mm keeps per-input linearity, never P(sum) x P(sum)") {
    OpCall call;
    call.op = "aten.mm.default";
    call.tensors = {TensorMeta{{8, 16}, 4}, TensorMeta{{16, 8}, 4}};
    const auto rows = rows_text((*reg.find(call.op))(call).rules);
    for (const char* want : {"P(sum),P(sum),R", "P(sum),R,P(sum)", "P(avg),P(avg),R", "P(avg),R,P(avg)"})
      CHECK(std::find(rows.begin(), rows.end(), want) != rows.end());
    CHECK(std::find(rows.begin(), rows.end(), "P(sum),P(sum),P(sum)") == rows.end());
    CHECK(std::find(rows.begin(), rows.end(), "P(max),P(max),R") == rows.end());
  }
  SECTION("B06: mm with k = 0 keeps a non-empty table") {
    OpCall call;
    call.op = "aten.mm.default";
    call.tensors = {TensorMeta{{4, 0}, 4}, TensorMeta{{0, 3}, 4}};
    const std::int64_t sizes[] = {4};
    const OpRule rule = (*reg.find(call.op))(call);
    StrategyEnumerator e(rule.rules, MeshTopology::build(sizes), UnevenInputs::reject);
    const Spec specs[] = {parse_spec("R"), parse_spec("R")};
    std::vector<std::string> kept;
    (void)e.for_each(call.tensors, specs,
                     [&](const CandidateView& v) { kept.push_back(to_string(e.spec_of(v.digits, 1)) + "," + to_string(e.spec_of(v.digits, 2))); });
    CHECK(std::find(kept.begin(), kept.end(), "R,R") != kept.end());
    CHECK(std::find(kept.begin(), kept.end(), "S(1),S(0)") == kept.end());  // k = 0 < 4 shards
  }
  SECTION("B07: einsum rhs dims are indexed in the rhs, not the output") {
    const auto rows = rows_text(einsum_single_dim_strategy(parse_einsum_or_throw("abc,cd->abd")));
    REQUIRE(rows.size() == 4 + 4);
    CHECK(rows[0] == "P(sum),S?(2),S?(0)");  // contracting c
    CHECK(rows[1] == "S?(0),S?(0),R");       // lhs-only a
    CHECK(rows[2] == "S?(1),S?(1),R");       // lhs-only b
    CHECK(rows[3] == "S?(2),R,S?(1)");       // rhs-only d: rhs dim 1, output dim 2
  }
}

TEST_CASE("enumerator: choose() equals full enumeration with DTensor's tie rules", "[enumerator]") {
  // Random input specs (seeded) for ops with and without the uneven bypass: the fast paths
  // (no-redistribute match, survivor prefix, remembered answer) must give the same row, rule and
  // survivor index as pricing every row.
  const std::vector<std::pair<OpCall, std::vector<std::string>>> ops = [] {
    std::vector<std::pair<OpCall, std::vector<std::string>>> v;
    OpCall mm;
    mm.op = "aten.mm.default";
    mm.tensors = {TensorMeta{{6, 8}, 4}, TensorMeta{{8, 5}, 4}};
    v.push_back({mm, {"R", "S(0)", "S(1)", "P(sum)", "P(avg)"}});
    OpCall add;
    add.op = "aten.add.Tensor";
    add.tensors = {TensorMeta{{4, 1, 6}, 4}, TensorMeta{{3, 6}, 4}};
    v.push_back({add, {"R", "S(0)", "S(1)", "S(2)", "P(sum)", "P(avg)", "P(max)"}});
    return v;
  }();
  std::uint32_t seed = 12345;
  auto next = [&seed] {
    seed = seed * 1103515245u + 12345u;
    return (seed >> 16) & 0x7fffu;
  };
  for (const std::vector<std::int64_t>& sizes : {std::vector<std::int64_t>{2, 2}, std::vector<std::int64_t>{2, 3, 2}}) {
    const MeshTopology mesh = MeshTopology::build(sizes);
    for (const auto& [call, alphabet] : ops) {
      const OpRule rule = (*builtin_registry().find(call.op))(call);
      StrategyEnumerator fast(rule.rules, mesh, rule.uneven_inputs, rule.filter, rule.placeholder_fill);
      StrategyEnumerator slow(rule.rules, mesh, rule.uneven_inputs, rule.filter, rule.placeholder_fill);
      for (int trial = 0; trial < 150; ++trial) {
        std::vector<Spec> specs;
        for (std::size_t i = 0; i < call.tensors.size(); ++i) {
          Spec s;
          for (std::size_t d = 0; d < sizes.size(); ++d) s.push_back(parse_placement(alphabet[next() % alphabet.size()]));
          try {
            check_shard_dims(s, call.tensors[i].shape, "test");
          } catch (const error&) {
            s = Spec(sizes.size());
          }
          specs.push_back(s);
        }
        ChoiceAccumulator acc;
        (void)slow.for_each(call.tensors, specs, [&](const CandidateView& c) { acc.offer(c.index, c.total_us, c.inputs_match, c.digits); });
        const Choice want = acc.choice();
        const Choice got = fast.choose(call.tensors, specs);
        INFO(call.op << " trial " << trial << " inputs " << to_string(specs[0]) << ", " << to_string(specs[1]));
        CHECK(got.index == Choice::unknown_index);  // the search does not count rows
        CHECK(fast.index_of(call.tensors, specs, got) == want.index);
        CHECK(got.rule == want.rule);
        CHECK(got.total_us == want.total_us);
        for (std::size_t k = 0; k < rule.rules.width(); ++k)
          CHECK(fast.spec_of(got, k) == slow.spec_of(std::span<const std::uint8_t>(want.digits.data(), sizes.size()), k));
      }
    }
  }
}
