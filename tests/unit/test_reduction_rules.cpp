// Reductions and the softmax family (DTensor _math_ops.py single-dim rules): exact rows, output
// counts, keepdim / negative / None / [] dims, the mean even-sharding filter, and errors.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "op_call_builders.hpp"

using namespace ctshard;
using namespace ctshard::test;
using Rows = std::vector<std::string>;

TEST_CASE("reduction rules: sum over a dim list, keepdim, negative dims", "[reduction]") {
  const auto t = meta({4, 8, 6});
  const OpRule drop = rule_for(make_call("aten.sum.dim_IntList", {t}, {tensor_arg(0), ints_arg({-2})}));
  CHECK(rows_text(drop.rules) == Rows{"S?(0),S?(0)", "P(sum),S?(1)", "S?(1),S?(2)", "P(sum),P(sum)"});
  CHECK(drop.rules.num_outputs() == 1);
  CHECK(drop.rules.rank(0) == 2);
  CHECK(drop.uneven_inputs == UnevenInputs::keep_existing_shards);
  CHECK_FALSE(drop.filter);
  const OpRule keep = rule_for(make_call("aten.sum.dim_IntList", {t}, {tensor_arg(0), ints_arg({1}), bool_arg(true)}));
  CHECK(rows_text(keep.rules) == Rows{"S?(0),S?(0)", "P(sum),S?(1)", "S?(2),S?(2)", "P(sum),P(sum)"});
  CHECK(keep.rules.rank(0) == 3);
  // keepdim as a keyword gives the same rows
  CHECK(rule_for(make_call("aten.sum.dim_IntList", {t}, {tensor_arg(0), ints_arg({1})}, {{"keepdim", bool_arg(true)}})).rules == keep.rules);
}

TEST_CASE("reduction rules: full reductions (sum.default, dim=None, dim=[]) and 0-d inputs", "[reduction]") {
  const auto t = meta({4, 8});
  const Rows all_sum{"P(sum),S?(0)", "P(sum),S?(1)", "P(sum),P(sum)"};
  CHECK(rows_text(rule_for(make_call("aten.sum.default", {t}, {tensor_arg(0)})).rules) == all_sum);
  CHECK(rows_text(rule_for(make_call("aten.sum.dim_IntList", {t}, {tensor_arg(0), none_arg()})).rules) == all_sum);
  CHECK(rows_text(rule_for(make_call("aten.sum.dim_IntList", {t}, {tensor_arg(0), ints_arg({})})).rules) == all_sum);
  // a 0-d input has no dim to shard: only the Partial pass-through
  CHECK(rows_text(rule_for(make_call("aten.sum.default", {meta({})}, {tensor_arg(0)})).rules) == Rows{"P(sum),P(sum)"});
  CHECK(rows_text(rule_for(make_call("aten.sum.dim_IntList", {meta({})}, {tensor_arg(0), ints_arg({-1})})).rules) == Rows{"P(sum),P(sum)"});
}

TEST_CASE("reduction rules: amax / amin / max / min give P(max) / P(min)", "[reduction]") {
  const auto t = meta({16, 1024, 1024});
  // BART: amax(x, [-1], True)
  CHECK(rows_text(rule_for(make_call("aten.amax.default", {t}, {tensor_arg(0), ints_arg({-1}), bool_arg(true)})).rules) ==
        Rows{"S?(0),S?(0)", "S?(1),S?(1)", "P(max),S?(2)", "P(max),P(max)"});
  CHECK(rows_text(rule_for(make_call("aten.amin.default", {meta({3, 5})}, {tensor_arg(0), ints_arg({0})})).rules) ==
        Rows{"P(min),S?(0)", "S?(0),S?(1)", "P(min),P(min)"});
  CHECK(rows_text(rule_for(make_call("aten.max.default", {meta({3})}, {tensor_arg(0)})).rules) == Rows{"P(max),S?(0)", "P(max),P(max)"});
  CHECK(rows_text(rule_for(make_call("aten.min.default", {meta({3})}, {tensor_arg(0)})).rules) == Rows{"P(min),S?(0)", "P(min),P(min)"});
}

TEST_CASE("reduction rules: mean rows and the even-sharding full-mesh filter", "[reduction]") {
  const OpRule r = rule_for(make_call("aten.mean.dim", {meta({6, 8})}, {tensor_arg(0), ints_arg({0}), bool_arg(true)}));
  CHECK(rows_text(r.rules) == Rows{"P(avg),S?(0)", "S?(1),S?(1)", "P(avg),P(avg)"});
  CHECK(r.uneven_inputs == UnevenInputs::keep_existing_shards);
  REQUIRE(r.filter);
  const auto mesh = mesh_of({4});
  // 6 rows on 4 ranks: unequal local means, so S(0) -> P(avg) is filtered out
  FilterCounts counts;
  const auto uneven = candidates(r, mesh, {meta({6, 8})}, {parse_spec("S(0)")}, &counts);
  CHECK(uneven == Rows{"R | R", "S(1) | S(1)", "P(avg) | P(avg)"});
  CHECK(counts.op_filter == 1);
  const auto even = candidates(r, mesh, {meta({8, 8})}, {parse_spec("S(0)")}, &counts);
  CHECK(even == Rows{"R | R", "P(avg) | S(0)", "S(1) | S(1)", "P(avg) | P(avg)"});
  CHECK(counts.op_filter == 0);
  // a kept dim may be sharded unevenly; a Partial(avg) input passes through for free
  CHECK(candidates(r, mesh, {meta({6, 7})}, {parse_spec("S(1)")}) == Rows{"R | R", "S(1) | S(1)", "P(avg) | P(avg)"});
  const auto p = chosen(r, mesh, {meta({6, 8})}, {parse_spec("P(avg)")});
  CHECK(p.first == "P(avg) | P(avg)");
  CHECK(p.second == 0);
  // 2-D mesh: the reduced dim split over both mesh dims needs 2x4 | size
  const auto mesh2 = mesh_of({2, 4});
  const OpRule m = rule_for(make_call("aten.mean.default", {meta({12})}, {tensor_arg(0)}));
  CHECK(rows_text(m.rules) == Rows{"P(avg),S?(0)", "P(avg),P(avg)"});
  const auto twelve = candidates(m, mesh2, {meta({12})}, {parse_spec("S(0)S(0)")}, &counts);
  CHECK(counts.op_filter == 1);
  CHECK(std::find(twelve.begin(), twelve.end(), "P(avg)P(avg) | S(0)S(0)") == twelve.end());
  CHECK(twelve.size() == 8);
  CHECK(candidates(m, mesh2, {meta({16})}, {parse_spec("S(0)S(0)")}).size() == 9);
}

TEST_CASE("reduction rules: max.dim has values and indices, never Partial", "[reduction]") {
  // GPT vocab-parallel loss: max.dim(x [1536, 8, 98304], -1)
  const OpRule r = rule_for(make_call("aten.max.dim", {meta({1536, 8, 98304})}, {tensor_arg(0), int_arg(-1)}));
  CHECK(r.rules.num_outputs() == 2);
  CHECK(rows_text(r.rules) == Rows{"S?(0),S?(0),S?(0)", "S?(1),S?(1),S?(1)"});
  const OpRule k = rule_for(make_call("aten.min.dim", {meta({4, 8, 6})}, {tensor_arg(0), int_arg(1), bool_arg(true)}));
  CHECK(rows_text(k.rules) == Rows{"S?(0),S?(0),S?(0)", "S?(2),S?(2),S?(2)"});
  // a sharded reduced dim must move: no row keeps it
  const auto c = chosen(r, mesh_of({2}), {meta({1536, 8, 98304})}, {parse_spec("S(2)")});
  CHECK(c.first == "S(0) S(0) | S(0)");
  CHECK(c.second > 0);
}

TEST_CASE("reduction rules: var_mean (keyword keepdim), var, logsumexp", "[reduction]") {
  // ViT / BART: var_mean(x, [2], correction = 0, keepdim = True)
  const OpRule r = rule_for(make_call("aten.var_mean.correction", {meta({8, 197, 768})}, {tensor_arg(0), ints_arg({2})},
                                      {{"correction", int_arg(0)}, {"keepdim", bool_arg(true)}}));
  CHECK(r.rules.num_outputs() == 2);
  CHECK(rows_text(r.rules) == Rows{"S?(0),S?(0),S?(0)", "S?(1),S?(1),S?(1)"});
  CHECK(rows_text(rule_for(make_call("aten.var.correction", {meta({4, 8, 6})}, {tensor_arg(0), ints_arg({0})})).rules) ==
        Rows{"S?(0),S?(1)", "S?(1),S?(2)"});
  // logsumexp's keepdim is positional (DTensor reads it from kwargs only)
  CHECK(rows_text(rule_for(make_call("aten.logsumexp.default", {meta({4, 8, 6})}, {tensor_arg(0), ints_arg({1}), bool_arg(true)})).rules) ==
        Rows{"S?(0),S?(0)", "S?(2),S?(2)"});
}

TEST_CASE("reduction rules: softmax family keeps the softmax dim whole", "[reduction]") {
  const auto t = meta({8, 12, 1536, 1536});
  CHECK(rows_text(rule_for(make_call("aten._softmax.default", {t}, {tensor_arg(0), int_arg(-1), bool_arg(false)})).rules) ==
        Rows{"S?(0),S?(0)", "S?(1),S?(1)", "S?(2),S?(2)"});
  CHECK(rows_text(rule_for(make_call("aten._log_softmax.default", {meta({4, 5})}, {tensor_arg(0), int_arg(0), bool_arg(false)})).rules) ==
        Rows{"S?(1),S?(1)"});
  const OpRule b = rule_for(
      make_call("aten._softmax_backward_data.default", {meta({4, 5}), meta({4, 5})}, {tensor_arg(0), tensor_arg(1), int_arg(1), int_arg(6)}));
  CHECK(b.rules.num_inputs() == 2);
  CHECK(rows_text(b.rules) == Rows{"S?(0),S?(0),S?(0)", "P(sum),P(sum),R", "P(avg),P(avg),R"});  // linear in grad_output
  // a Partial input is not softmax-able: it is reduced first, by a reduce-scatter off the softmax dim (R15)
  const auto c = chosen(rule_for(make_call("aten._softmax.default", {meta({4, 5})}, {tensor_arg(0), int_arg(-1), bool_arg(false)})), mesh_of({2}),
                        {meta({4, 5})}, {parse_spec("P(sum)")});
  CHECK(c.first == "S(0) | S(0)");
}

TEST_CASE("reduction rules: bad arguments name the op and the argument", "[reduction]") {
  const auto t = meta({4, 8});
  CHECK(error_of([&] {
          return rule_for(make_call("aten.sum.dim_IntList", {t}, {tensor_arg(0), ints_arg({2})}));
        }) == "ctshard: aten.sum.dim_IntList: argument 'dim': dim 2 is out of range for a tensor of rank 2 (expected [-2, 1])");
  CHECK(error_of([&] {
          return rule_for(make_call("aten.mean.dim", {t}, {tensor_arg(0), ints_arg({1, -1})}));
        }) == "ctshard: aten.mean.dim: argument 'dim' repeats dim -1");
  CHECK(error_of([&] { return rule_for(make_call("aten.max.dim", {t}, {tensor_arg(0)})); }) == "ctshard: aten.max.dim: argument 'dim' is missing");
  CHECK(error_of([&] {
          return rule_for(make_call("aten.amax.default", {t}, {tensor_arg(0), float_arg(1.5)}));
        }) == "ctshard: aten.amax.default: argument 'dim' must be an integer, a list of integers or None");
  CHECK(error_of([&] {
          return rule_for(make_call("aten.sum.dim_IntList", {t}, {tensor_arg(0), ints_arg({0}), int_arg(3)}));
        }) == "ctshard: aten.sum.dim_IntList: argument 'keepdim' must be a bool");
  CHECK(error_of([&] {
          return rule_for(make_call("aten._softmax.default", {t, t}, {tensor_arg(0), int_arg(0)}));
        }).find("tensor input") != std::string::npos);
}

TEST_CASE("reduction rules: the rule builders are constant expressions", "[reduction]") {
  constexpr auto n = reduction_single_dim_strategy(3, 0b010, false, ReductionKind{ReduceOp::sum}).size();
  STATIC_REQUIRE(n == 4);
  constexpr auto s = shard_except_dim_strategy(4, 3, 1, 2).size();
  STATIC_REQUIRE(s == 3);
  STATIC_REQUIRE(reduced_output_dim(2, 0b011, false) == 0);
  STATIC_REQUIRE(reduced_output_dim(2, 0b011, true) == 2);
}

TEST_CASE("reduction rules: max/min rows need a non-empty shard on every device", "[reduction]") {
  const std::int64_t three[] = {3};
  const auto mesh3 = MeshTopology::build(three);
  CHECK_FALSE(has_no_empty_shard_on({4, 5}, parse_spec("S(0)"), mesh3.dim_sizes(), 0b01));  // chunks 2, 2, 0
  CHECK(has_no_empty_shard_on({5, 5}, parse_spec("S(0)"), mesh3.dim_sizes(), 0b01));        // chunks 2, 2, 1
  CHECK(has_no_empty_shard_on({4, 5}, parse_spec("S(0)"), mesh3.dim_sizes(), 0b10));        // dim 0 not reduced
  const std::int64_t two_two[] = {2, 2};
  const auto mesh22 = MeshTopology::build(two_two);
  CHECK(has_no_empty_shard_on({4}, parse_spec("S(0)S(0)"), mesh22.dim_sizes(), 0b1));        // 2 | 2 -> 1,1 | 1,1
  CHECK_FALSE(has_no_empty_shard_on({3}, parse_spec("S(0)S(0)"), mesh22.dim_sizes(), 0b1));  // 2 | 1 -> 1,1 | 1,0
  // through the registry: amax over 4 rows on mesh 3 keeps no (S(0)) -> P(max) candidate
  OpCall call;
  call.op = "aten.amax.default";
  call.tensors = {TensorMeta{{4, 5}, 4}};
  OpArg t;
  t.kind = OpArg::Kind::tensor;
  OpArg dims;
  dims.kind = OpArg::Kind::int_list;
  dims.ints = {0};
  call.args = {t, dims};
  const OpRule rule = (*builtin_registry().find(call.op))(call);
  StrategyEnumerator e(rule.rules, mesh3, rule.uneven_inputs, rule.filter, rule.placeholder_fill);
  const Spec specs[] = {parse_spec("S(0)")};
  bool partial_max = false;
  const FilterCounts counts = e.for_each(call.tensors, specs, [&](const CandidateView& v) {
    partial_max = partial_max || (e.spec_of(v.digits, 0) == parse_spec("P(max)") && e.spec_of(v.digits, 1) == parse_spec("S(0)"));
  });
  CHECK_FALSE(partial_max);
  CHECK(counts.op_filter >= 1);
}
