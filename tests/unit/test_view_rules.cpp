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

TEST_CASE("view rules: one row per kept dim, regrouped rows for every dim of a flatten or split", "[view]") {
  CHECK(rows(view_single_dim_strategy(megatron_map)) == with_partials({"[S?(0), S?(0)]", "[S?(2), S?(1)]"}));

  const std::array<std::int64_t, 2> flat{12288, 768};
  const auto rules = view_single_dim_strategy(view_dim_map(TensorShape{1536, 8, 768}, flat));
  // The inner flattened dim 1 gets a regrouped row after the others (Shard(1) -> _S(0, 1536)).
  CHECK(rows(rules) == with_partials({"[S?(0), S?(0)]", "[S?(1), S?(2)]", "[S?(0), S?(1)]"}));
  CHECK(rules.rank(0) == 2);
  CHECK(rules.rank(1) == 3);
  CHECK(rules.regroup(0) != nullptr);
  CHECK(rules.regroup(1) == nullptr);  // kept one-to-one
  REQUIRE(rules.regroup(2) != nullptr);
  CHECK(rules.regroup(2)->input == TensorShape{1536, 8});
  CHECK(rules.regroup(2)->output == TensorShape{12288});
  CHECK(rules.regroup(2)->source == 1);

  // (2, 3) -> (3, 2): both pieces come from flatten(0, 1); input dim 1 has a row that no shard
  // kind of a 2 x 3 tensor can fill (3 is not a split factor that lands on a piece).
  const std::array<std::int64_t, 2> to_3x2{3, 2};
  const auto resplit = view_single_dim_strategy(view_dim_map(TensorShape{2, 3}, to_3x2));
  CHECK(rows(resplit) == with_partials({"[S?(0), S?(0)]", "[S?(0), S?(1)]"}));
  CHECK(test::rows_text(fill_placeholders(resplit, plain_shard_kinds)) ==
        std::vector<std::string>{"S(0),S(0)", "P(sum),P(sum)", "P(avg),P(avg)", "P(max),P(max)", "P(min),P(min)"});

  // A dropped size-1 dim has no row; the dims after it shift.
  const std::array<std::int64_t, 2> squeeze_like{8, 768};
  CHECK(rows(view_single_dim_strategy(view_dim_map(TensorShape{8, 1, 768}, squeeze_like))) == with_partials({"[S?(0), S?(0)]", "[S?(1), S?(2)]"}));

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

TEST_CASE("view rules: a shard moves to the dim it describes, StridedShard split factors included", "[view][strided]") {
  const auto filled = [](TensorShape in, std::vector<std::int64_t> to, const char* spec) {
    const RuleSet raw = view_single_dim_strategy(view_dim_map(in, to));
    const Spec specs[] = {parse_spec(spec)};
    return test::rows_text(fill_placeholders(raw, shard_kinds_of(specs)));
  };
  const std::vector<std::string> partial_cells{"P(sum),P(sum)", "P(avg),P(avg)", "P(max),P(max)", "P(min),P(min)"};
  const auto plus_partials = [&](std::vector<std::string> v) {
    v.insert(v.end(), partial_cells.begin(), partial_cells.end());
    return v;
  };
  // R05: [16, 4] _S(0, 2) viewed as [2, 8, 4]: rank r holds rows 4r..4r+3 of both halves = S(1).
  CHECK(filled({16, 4}, {2, 8, 4}, "_S(0, 2)") == plus_partials({"S(1),_S(0, 2)", "_S(2, 2),_S(1, 2)"}));
  // _S(0, 4): blocks of 4 rows, 2 per rank; in [2, 8, 4] that is two blocks per row of 8: _S(1, 2).
  CHECK(filled({16, 4}, {2, 8, 4}, "_S(0, 4)") == plus_partials({"_S(1, 2),_S(0, 4)", "_S(2, 4),_S(1, 4)"}));
  // _S(0, 16) of 16 rows has blocks of one row: nothing to split (no row).
  CHECK(filled({16, 4}, {2, 8, 4}, "_S(0, 8)") == plus_partials({"_S(1, 4),_S(0, 8)", "_S(2, 8),_S(1, 8)"}));
  CHECK(filled({16, 4}, {2, 8, 4}, "_S(0, 16)") == plus_partials({"_S(2, 16),_S(1, 16)"}));
  // Flatten: Shard of an inner dim becomes _S(0, outer size); a StridedShard multiplies in.
  CHECK(filled({3, 4}, {12}, "S(1)") == plus_partials({"S(0),S(0)", "_S(0, 3),S(1)"}));
  CHECK(filled({3, 8}, {24}, "_S(1, 2)") == plus_partials({"_S(0, 6),_S(1, 2)"}));
  CHECK(filled({4, 6}, {24}, "_S(0, 2)") == plus_partials({"_S(0, 2),_S(0, 2)", "_S(0, 8),_S(1, 2)"}));
  // The flatten of a prior unflatten comes back: [2, 3, 4] S(1) -> [6, 4] is _S(0, 2), and
  // [6, 4] _S(0, 2) -> [2, 3, 4] is S(1).
  CHECK(filled({2, 3, 4}, {6, 4}, "S(1)") == plus_partials({"S(0),S(0)", "S(1),S(2)", "_S(0, 2),S(1)"}));
  CHECK(filled({6, 4}, {2, 3, 4}, "_S(0, 2)") == plus_partials({"S(1),_S(0, 2)", "_S(2, 2),_S(1, 2)"}));
  // Split of a flatten: [2, 6] S(1) viewed as [4, 3] is _S(0, 2).
  CHECK(filled({2, 6}, {4, 3}, "S(1)") == plus_partials({"S(0),S(0)", "_S(0, 2),S(1)"}));
  // A kept dim passes every kind unchanged; the split dim 6 -> (2, 3) takes _S(1, 2) to S(2).
  CHECK(filled({4, 6}, {4, 2, 3}, "_S(0, 2)") == plus_partials({"_S(0, 2),_S(0, 2)", "S(2),_S(1, 2)"}));
}

TEST_CASE("view rules: the full-mesh check follows split factors and the mesh dims before", "[view][strided]") {
  const std::array<std::int64_t, 3> to_2x8x4{2, 8, 4};
  const auto r05 = view_dim_map(TensorShape{16, 4}, to_2x8x4);
  const std::array<std::int64_t, 1> two{2}, three{3};
  const std::array<std::int64_t, 2> two_two{2, 2};
  CHECK(view_output_spec(r05, parse_spec("_S(0, 2)"), two) == parse_spec("S(1)"));
  CHECK(view_output_spec(r05, parse_spec("_S(0, 4)"), two) == parse_spec("_S(1, 2)"));
  CHECK(view_output_spec(r05, parse_spec("S(0)"), two) == parse_spec("S(0)"));
  CHECK(view_output_spec(r05, parse_spec("_S(1, 2)"), two) == parse_spec("_S(2, 2)"));
  // S(0) over 3 ranks: the first piece (2) does not split evenly.
  CHECK_FALSE(view_output_spec(r05, parse_spec("S(0)"), three).has_value());
  // _S(0, 2) over 3 ranks lands on the last piece of its group (8 rows of the [2, 8] run): the
  // chunks 3, 3, 2 of every block coincide, so the uneven split is exact.
  CHECK(view_output_spec(r05, parse_spec("_S(0, 2)"), three) == parse_spec("S(1)"));
  // _S(0, 4) over 3: 4 rows per block chunk as 2, 2, 0, and so do the blocks of 4 of each row of 8.
  CHECK(view_output_spec(r05, parse_spec("_S(0, 4)"), three) == parse_spec("_S(1, 2)"));
  // S(1) of [16, 4] is kept one-to-one whatever the mesh; S(0) over 3 is not exact.
  CHECK_FALSE(view_output_spec(r05, parse_spec("S(0)"), three).has_value());
  // Two mesh dims on one group: the second sees the local sizes the first leaves. After S(0)
  // each rank holds one row of 8 of the [2, 8] run, so a second S(0) splits the 8: S(1).
  CHECK(view_output_spec(r05, parse_spec("S(0)_S(0, 2)"), two_two) == parse_spec("S(0)_S(1, 2)"));
  CHECK(view_output_spec(r05, parse_spec("S(0)S(0)"), two_two) == parse_spec("S(0)S(1)"));
  // [6] -> [3, 2] S(0) on 2: 3 rows over 2 do not split evenly.
  const std::array<std::int64_t, 2> to_3x2{3, 2};
  CHECK_FALSE(view_output_spec(view_dim_map(TensorShape{6}, to_3x2), parse_spec("S(0)"), two).has_value());
  // view_shard_is_even: the same check without the output.
  CHECK(view_shard_is_even(r05, parse_spec("_S(0, 2)"), two));
  CHECK_FALSE(view_shard_is_even(r05, parse_spec("S(0)"), three));
  // [5, 4] flattened, S(1) over 3: 4 columns chunk 2, 1, 1 in every row = _S(0, 5) chunked 2, 1, 1.
  const std::array<std::int64_t, 1> to_20{20};
  const auto flat = view_dim_map(TensorShape{5, 4}, to_20);
  CHECK(view_output_spec(flat, parse_spec("S(1)"), three) == parse_spec("_S(0, 5)"));
  CHECK_FALSE(view_output_spec(flat, parse_spec("S(0)"), three).has_value());
  // the filter compares the candidate's output with the exact one
  const FullMeshFilter filter = view_full_mesh_filter(r05);
  REQUIRE(filter);
  const std::vector<TensorMeta> metas{TensorMeta{TensorShape{16, 4}, 4}};
  const std::array<std::int64_t, 2> sizes{2, 2};
  const MeshTopology mesh = MeshTopology::build(sizes);
  const std::vector<Spec> nested_ok{parse_spec("S(0)_S(1, 2)"), parse_spec("S(0)_S(0, 2)")};
  const std::vector<Spec> nested_global{parse_spec("S(0)S(1)"), parse_spec("S(0)_S(0, 2)")};  // the global re-expression
  CHECK(filter(nested_ok, metas, mesh.dim_sizes()));
  CHECK_FALSE(filter(nested_global, metas, mesh.dim_sizes()));
}

TEST_CASE("view rules: permute, transpose, t, unsqueeze, squeeze, expand", "[view]") {
  const std::array<std::int64_t, 4> perm{0, 2, -3, 3};
  CHECK(rows(view_single_dim_strategy(permute_dim_map(TensorShape{1, 1024, 16, 64}, perm))) ==
        with_partials({"[S?(0), S?(0)]", "[S?(1), S?(2)]", "[S?(2), S?(1)]", "[S?(3), S?(3)]"}));
  CHECK(rows(view_single_dim_strategy(transpose_dim_map(TensorShape{1536, 8, 768}, 0, -2))) ==
        with_partials({"[S?(0), S?(1)]", "[S?(1), S?(0)]", "[S?(2), S?(2)]"}));
  CHECK(rows(rules_of(call_of("aten.t.default", TensorShape{768, 2304}, {}))) == with_partials({"[S?(0), S?(1)]", "[S?(1), S?(0)]"}));
  CHECK(rows(rules_of(call_of("aten.t.default", TensorShape{768}, {}))) == with_partials({"[S?(0), S?(0)]"}));
  CHECK(rows(rules_of(call_of("aten.unsqueeze.default", TensorShape{8, 16}, {integer(-1)}))) == with_partials({"[S?(0), S?(0)]", "[S?(1), S?(1)]"}));
  CHECK(rows(rules_of(call_of("aten.unsqueeze.default", TensorShape{8, 16}, {integer(0)}))) == with_partials({"[S?(1), S?(0)]", "[S?(2), S?(1)]"}));
  CHECK(rows(rules_of(call_of("aten.squeeze.dim", TensorShape{8, 1, 16}, {integer(1)}))) == with_partials({"[S?(0), S?(0)]", "[S?(1), S?(2)]"}));
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
  CHECK(r.names() == std::vector<std::string>{"aten._unsafe_view.default", "aten.expand.default", "aten.permute.default", "aten.repeat.default",
                                              "aten.reshape.default", "aten.squeeze.default", "aten.squeeze.dim", "aten.squeeze.dims",
                                              "aten.t.default", "aten.transpose.int", "aten.unsqueeze.default", "aten.view.default"});
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
    StrategyEnumerator e(rule.rules, MeshTopology::build(std::span<const std::int64_t>(mesh)), rule.uneven_inputs, rule.filter,
                         rule.placeholder_fill);
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
