#include <catch2/catch.hpp>

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "ctshard/core/spec.hpp"
#include "ctshard/registry/builtin_registry.hpp"
#include "ctshard/registry/view_ops.hpp"
#include "ctshard/rules/view_rules.hpp"
#include "ctshard/select/enumerator.hpp"

#include "op_call_builders.hpp"

using namespace ctshard;

namespace {

using test::rows;
constexpr auto& integer = test::int_arg;
constexpr auto& ints = test::ints_arg;
constexpr auto& tensor = test::tensor_arg;


const std::vector<std::string> partial_rows = {"[P(sum), P(sum)]", "[P(avg), P(avg)]", "[P(max), P(max)]", "[P(min), P(min)]"};

std::vector<std::string> with_partials(std::vector<std::string> shard_rows) {
  shard_rows.insert(shard_rows.end(), partial_rows.begin(), partial_rows.end());
  return shard_rows;
}


OpCall call_of(std::string op, TensorShape in, std::vector<OpArg> rest) {
  OpCall c;
  c.op = std::move(op);
  c.tensors.push_back(TensorMeta{in, 4});
  c.args.push_back(tensor(0));
  for (auto& a : rest) c.args.push_back(std::move(a));
  return c;
}

RuleSet rules_of(const OpCall& call) {
  const RuleFactory* f = builtin_registry().find(call.op);
  REQUIRE(f != nullptr);
  return (*f)(call).rules;
}

constexpr std::array<std::int64_t, 3> megatron_unflatten{1536, 8, 768};
constexpr ViewDimMap megatron_map = view_dim_map(TensorShape{12288, 768}, megatron_unflatten);

}  // namespace

TEST_CASE("view rules: view_groups dim maps", "[view]") {
  // Compile-time: (12288, 768) -> (1536, 8, 768) splits dim 0 and keeps dim 1.
  static_assert(megatron_map[0] == ViewDim{ViewDimKind::split, 0, 0, 0});
  static_assert(megatron_map[1] == ViewDim{ViewDimKind::split, 0, 0, 1});
  static_assert(megatron_map[2] == ViewDim{ViewDimKind::input, 1, 1, 0});
  static_assert(view_single_dim_strategy(megatron_map).size() == 6);

  const std::array<std::int64_t, 2> to_2x12{2, 12};
  const auto flat = view_dim_map(TensorShape{2, 3, 4}, to_2x12);
  CHECK(flat[0] == ViewDim{ViewDimKind::input, 0, 0, 0});
  CHECK(flat[1] == ViewDim{ViewDimKind::flatten, 1, 2, 0});

  const std::array<std::int64_t, 2> to_3x2{3, 2};
  const auto resplit = view_dim_map(TensorShape{2, 3}, to_3x2);
  CHECK(resplit[0] == ViewDim{ViewDimKind::split, 0, 1, 0});
  CHECK(resplit[1] == ViewDim{ViewDimKind::split, 0, 1, 1});

  // -1 is inferred; size-1 dims stand alone; split ids skip singleton pieces.
  const std::array<std::int64_t, 4> heads{1, -1, 16, 64};
  const auto h = view_dim_map(TensorShape{1, 1024, 1024}, heads);
  CHECK(h.output == TensorShape{1, 1024, 16, 64});
  CHECK(h[0] == ViewDim{ViewDimKind::input, 0, 0, 0});
  CHECK(h[1] == ViewDim{ViewDimKind::input, 1, 1, 0});
  CHECK(h[2] == ViewDim{ViewDimKind::split, 2, 2, 0});
  CHECK(h[3] == ViewDim{ViewDimKind::split, 2, 2, 1});

  const std::array<std::int64_t, 3> with_one{4, 1, 6};
  const auto s = view_dim_map(TensorShape{24}, with_one);
  CHECK(s[0] == ViewDim{ViewDimKind::split, 0, 0, 0});
  CHECK(s[1].kind == ViewDimKind::singleton);
  CHECK(s[2] == ViewDim{ViewDimKind::split, 0, 0, 1});
}

TEST_CASE("view rules: flatten keeps only the outermost dim, split only the first piece", "[view]") {
  CHECK(rows(view_single_dim_strategy(megatron_map)) == with_partials({"[S?(0), S?(0)]", "[S?(2), S?(1)]"}));

  const std::array<std::int64_t, 2> flat{12288, 768};
  const auto rules = view_single_dim_strategy(view_dim_map(TensorShape{1536, 8, 768}, flat));
  CHECK(rows(rules) == with_partials({"[S?(0), S?(0)]", "[S?(1), S?(2)]"}));  // input dim 1 has no row: Replicate
  CHECK(rules.rank(0) == 2);
  CHECK(rules.rank(1) == 3);

  // (2, 3) -> (3, 2): both pieces come from flatten(0, 1); only input dim 0 keeps a row.
  const std::array<std::int64_t, 2> to_3x2{3, 2};
  CHECK(rows(view_single_dim_strategy(view_dim_map(TensorShape{2, 3}, to_3x2))) == with_partials({"[S?(0), S?(0)]"}));

  // A dropped size-1 dim has no row; the dims after it shift.
  const std::array<std::int64_t, 2> squeeze_like{8, 768};
  CHECK(rows(view_single_dim_strategy(view_dim_map(TensorShape{8, 1, 768}, squeeze_like))) ==
        with_partials({"[S?(0), S?(0)]", "[S?(1), S?(2)]"}));

  // No elements: nothing can stay sharded.
  const std::array<std::int64_t, 2> empty{0, 4};
  CHECK(rows(view_single_dim_strategy(view_dim_map(TensorShape{4, 0}, empty))) == partial_rows);
}

TEST_CASE("view rules: evenness of kept shards needs the mesh sizes", "[view]") {
  const std::array<std::int64_t, 2> to_3x2{3, 2};
  const auto resplit = view_dim_map(TensorShape{6}, to_3x2);
  const std::array<std::int64_t, 1> two{2}, three{3};
  CHECK_FALSE(view_shard_is_even(resplit, parse_spec("S(0)"), two));  // first piece 3 over 2 shards
  CHECK(view_shard_is_even(resplit, parse_spec("S(0)"), three));
  CHECK(view_shard_is_even(resplit, parse_spec("R"), two));

  const std::array<std::int64_t, 1> to_12{12};
  const auto flat = view_dim_map(TensorShape{3, 4}, to_12);
  CHECK_FALSE(view_shard_is_even(flat, parse_spec("S(0)"), two));
  CHECK(view_shard_is_even(flat, parse_spec("S(0)"), three));
  const std::array<std::int64_t, 2> mesh_2x2{2, 2};
  CHECK(view_shard_is_even(megatron_map, parse_spec("S(0)S(0)"), mesh_2x2));
  CHECK(view_shard_is_even(megatron_map, parse_spec("S(1)S(0)"), mesh_2x2));
}

TEST_CASE("view rules: permute, transpose, t, unsqueeze, squeeze, expand", "[view]") {
  const std::array<std::int64_t, 4> perm{0, 2, -3, 3};
  CHECK(rows(view_single_dim_strategy(permute_dim_map(TensorShape{1, 1024, 16, 64}, perm))) ==
        with_partials({"[S?(0), S?(0)]", "[S?(1), S?(2)]", "[S?(2), S?(1)]", "[S?(3), S?(3)]"}));
  CHECK(rows(view_single_dim_strategy(transpose_dim_map(TensorShape{1536, 8, 768}, 0, -2))) ==
        with_partials({"[S?(0), S?(1)]", "[S?(1), S?(0)]", "[S?(2), S?(2)]"}));
  CHECK(rows(rules_of(call_of("aten.t.default", TensorShape{768, 2304}, {}))) == with_partials({"[S?(0), S?(1)]", "[S?(1), S?(0)]"}));
  CHECK(rows(rules_of(call_of("aten.t.default", TensorShape{768}, {}))) == with_partials({"[S?(0), S?(0)]"}));
  CHECK(rows(rules_of(call_of("aten.unsqueeze.default", TensorShape{8, 16}, {integer(-1)}))) ==
        with_partials({"[S?(0), S?(0)]", "[S?(1), S?(1)]"}));
  CHECK(rows(rules_of(call_of("aten.unsqueeze.default", TensorShape{8, 16}, {integer(0)}))) ==
        with_partials({"[S?(1), S?(0)]", "[S?(2), S?(1)]"}));
  CHECK(rows(rules_of(call_of("aten.squeeze.dim", TensorShape{8, 1, 16}, {integer(1)}))) ==
        with_partials({"[S?(0), S?(0)]", "[S?(1), S?(2)]"}));
  CHECK(rows(rules_of(call_of("aten.squeeze.dim", TensorShape{8, 4, 16}, {integer(1)}))) ==
        with_partials({"[S?(0), S?(0)]", "[S?(1), S?(1)]", "[S?(2), S?(2)]"}));  // not size 1: kept
  CHECK(rows(rules_of(call_of("aten.squeeze.default", TensorShape{1, 8, 1}, {}))) == with_partials({"[S?(0), S?(1)]"}));
  // ViT: expand(cls_token (1, 1, 768), [8, -1, -1]): dim 0 broadcasts, the others are kept.
  const RuleSet expand = rules_of(call_of("aten.expand.default", TensorShape{1, 1, 768}, {ints({8, -1, -1})}));
  CHECK(rows(expand) == with_partials({"[S?(1), S?(1)]", "[S?(2), S?(2)]"}));
  // New leading dims: none can be sharded.
  CHECK(rows(rules_of(call_of("aten.expand.default", TensorShape{768}, {ints({4, 768})}))) == with_partials({"[S?(1), S?(0)]"}));
}

TEST_CASE("view rules: bad arguments name the op and the argument", "[view]") {
  CHECK_THROWS_WITH(rules_of(call_of("aten.view.default", TensorShape{2, 3}, {ints({4, 2})})),
                    Catch::Contains("aten.view.default") && Catch::Contains("cannot be viewed as 4x2"));
  CHECK_THROWS_WITH(rules_of(call_of("aten.reshape.default", TensorShape{2, 3}, {ints({-1, -1})})),
                    Catch::Contains("aten.reshape.default") && Catch::Contains("only one size may be -1"));
  CHECK_THROWS_WITH(rules_of(call_of("aten.view.default", TensorShape{2, 3}, {})),
                    Catch::Contains("aten.view.default") && Catch::Contains("argument 'size' is missing"));
  CHECK_THROWS_WITH(rules_of(call_of("aten.transpose.int", TensorShape{2, 3}, {integer(0), integer(2)})),
                    Catch::Contains("aten.transpose.int") && Catch::Contains("dim 2 is out of range"));
  CHECK_THROWS_WITH(rules_of(call_of("aten.permute.default", TensorShape{2, 3}, {ints({0, 0})})),
                    Catch::Contains("aten.permute.default") && Catch::Contains("repeats"));
  CHECK_THROWS_WITH(rules_of(call_of("aten.t.default", TensorShape{2, 3, 4}, {})), Catch::Contains("argument 'self' must have rank <= 2"));
  CHECK_THROWS_WITH(rules_of(call_of("aten.expand.default", TensorShape{2, 3}, {ints({2, 4})})),
                    Catch::Contains("aten.expand.default") && Catch::Contains("cannot expand dim 1 of size 3 to 4"));
  OpCall two_inputs = call_of("aten.view.default", TensorShape{2, 3}, {ints({6})});
  two_inputs.tensors.push_back(TensorMeta{TensorShape{6}, 4});
  CHECK_THROWS_WITH(rules_of(two_inputs), Catch::Contains("takes 1 tensor input, got 2"));
}

TEST_CASE("view rules: every overload is registered and none lists the all-Replicate row", "[view]") {
  OpRegistry r;
  register_view_ops(r);
  CHECK(r.names() == std::vector<std::string>{"aten._unsafe_view.default", "aten.expand.default", "aten.permute.default", "aten.reshape.default",
                                              "aten.squeeze.default", "aten.squeeze.dim", "aten.squeeze.dims", "aten.t.default",
                                              "aten.transpose.int", "aten.unsqueeze.default", "aten.view.default"});
  const RuleSet rules = rules_of(call_of("aten.view.default", TensorShape{12288, 768}, {ints({1536, 8, 768})}));
  CHECK_NOTHROW(with_replicate_row(rules));
}

TEST_CASE("view rules: a sequence-sharded unflatten needs no communication", "[view]") {
  // Megatron: mm output (12288, 2304) viewed as (1536, 8, 2304) on a 2x4 mesh, input S(0)S(0).
  const OpCall call = call_of("aten.view.default", TensorShape{12288, 2304}, {ints({1536, 8, 2304})});
  const std::array<std::int64_t, 2> sizes{2, 4};
  StrategyEnumerator e(rules_of(call), MeshTopology::build(sizes), UnevenInputs::reject);
  const std::vector<Spec> specs{parse_spec("S(0)S(0)")};
  ChoiceAccumulator acc;
  std::vector<std::vector<std::uint8_t>> digits;
  const FilterCounts counts = e.for_each(call.tensors, specs, [&](const CandidateView& c) {
    acc.offer(c.index, c.total_us, c.inputs_match);
    digits.emplace_back(c.digits.begin(), c.digits.end());
  });
  // Filled rules: R, S(0)->S(0), S(1)->S(2), four Partials = 7 per mesh dim; 49 minus mixed Partials.
  CHECK(acc.count() + counts.mixed_partial + counts.unshardable == 49);
  const Choice choice = acc.choice();
  CHECK(choice.total_us == 0.0);
  CHECK(to_string(e.spec_of(digits[choice.index], 0)) == "S(0)S(0)");
  CHECK(to_string(e.spec_of(digits[choice.index], 1)) == "S(0)S(0)");

  // A Partial input stays Partial through the view, for free.
  const std::vector<Spec> partial{parse_spec("P(max)R")};
  const Choice p = e.choose(call.tensors, partial);
  CHECK(p.total_us == 0.0);
}

TEST_CASE("view rules: the full-mesh filter drops shards a flatten or split cannot keep", "[view]") {
  auto choose = [](const OpCall& call, std::vector<std::int64_t> mesh, const char* current) {
    const OpRule rule = (*builtin_registry().find(call.op))(call);
    REQUIRE(rule.filter);
    StrategyEnumerator e(rule.rules, MeshTopology::build(std::span<const std::int64_t>(mesh)), rule.uneven_inputs, rule.filter);
    const std::vector<Spec> specs{parse_spec(current)};
    ChoiceAccumulator acc;
    std::vector<std::string> outputs;
    const FilterCounts counts = e.for_each(call.tensors, specs, [&](const CandidateView& c) {
      acc.offer(c.index, c.total_us, c.inputs_match);
      outputs.push_back(to_string(e.spec_of(c.digits, 0)));
    });
    return std::make_pair(outputs[acc.choice().index], counts.op_filter);
  };
  // (6,) -> (3, 2): the first piece (3) splits evenly over 3 devices, not over 2.
  const OpCall unflatten = call_of("aten.view.default", TensorShape{6}, {ints({3, 2})});
  CHECK(choose(unflatten, {3}, "S(0)") == std::make_pair(std::string("S(0)"), std::size_t{0}));
  const auto uneven = choose(unflatten, {2}, "S(0)");
  CHECK(uneven.first == "R");
  CHECK(uneven.second == 1);
  // (3, 4) -> (12,): the outermost flattened dim (3) must split evenly.
  const OpCall flatten = call_of("aten.reshape.default", TensorShape{3, 4}, {ints({12})});
  CHECK(choose(flatten, {3}, "S(0)").first == "S(0)");
  CHECK(choose(flatten, {2}, "S(0)").first == "R");
  // Megatron on 2x2x2: 1536 = 8 * 192 shards evenly over all three mesh dims.
  CHECK(choose(call_of("aten.view.default", TensorShape{12288, 768}, {ints({1536, 8, 768})}), {2, 2, 2}, "S(0)S(0)S(0)").first == "S(0)S(0)S(0)");
  // A permute has no flatten or split, hence no filter.
  CHECK_FALSE((*builtin_registry().find("aten.permute.default"))(call_of("aten.permute.default", TensorShape{2, 3}, {ints({1, 0})})).filter);
}
