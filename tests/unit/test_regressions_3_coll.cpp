// The third set of regression cases (../shared/cases/regressions_3.json), the collectives part:
// R13 (one semantics for collectives written into graphs) and the R18 collectives (broadcast).
// Every collective's rows follow docs/semantics.md "Collectives in graphs"; tests/sim proves them
// on g program ranks x the mesh. R14 (FX reader, flex attention) lives in tests/cli.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "ctshard/registry.hpp"
#include "op_call_builders.hpp"

using namespace ctshard;
using namespace ctshard::test;
using Rows = std::vector<std::string>;
using Catch::Matchers::Contains;

namespace {
OpCall all_reduce(const char* op, std::initializer_list<std::int64_t> shape = {8, 4}, const char* name = "_c10d_functional.all_reduce.default") {
  return make_call(name, {meta(shape)}, {tensor_arg(0), str_arg(op), str_arg("0")});
}
OpCall all_gather(std::initializer_list<std::int64_t> shape, std::int64_t g, const char* name = "_c10d_functional.all_gather_into_tensor.default") {
  return make_call(name, {meta(shape)}, {tensor_arg(0), int_arg(g), str_arg("0")});
}
OpCall reduce_scatter(std::initializer_list<std::int64_t> shape, const char* op, std::int64_t g) {
  return make_call("_c10d_functional.reduce_scatter_tensor.default", {meta(shape)}, {tensor_arg(0), str_arg(op), int_arg(g), str_arg("0")});
}
Spec spec(const char* text) { return parse_spec(text); }
bool any_input(const std::vector<std::string>& rows, const std::string& input) {
  return std::any_of(rows.begin(), rows.end(), [&](const std::string& r) { return r.substr(r.find('|')) == "| " + input; });
}
}  // namespace

TEST_CASE("R13: a sum all-reduce takes a Replicate input as it takes a Shard: R -> R, S(d) -> S(d)", "[regressions_3]") {
  // ctshard table --op _c10d_functional.all_reduce.default --shapes 8x4 --mesh 2 --inputs R --args '["sum", "0"]'
  const OpCall call = all_reduce("sum");
  const OpRule rule = rule_for(call);
  CHECK(chosen(rule, mesh_of({2}), call.tensors, {spec("R")}) == std::pair<std::string, double>{"R | R", 0.0});
  CHECK(chosen(rule, mesh_of({2}), call.tensors, {spec("S(0)")}) == std::pair<std::string, double>{"S(0) | S(0)", 0.0});
  CHECK(chosen(rule, mesh_of({2}), call.tensors, {spec("S(1)")}) == std::pair<std::string, double>{"S(1) | S(1)", 0.0});
  CHECK(chosen(rule, mesh_of({2, 2}), call.tensors, {spec("RS(0)")}) == std::pair<std::string, double>{"RS(0) | RS(0)", 0.0});
  CHECK(chosen(rule, mesh_of({2}), call.tensors, {spec("_S(0, 2)")}) == std::pair<std::string, double>{"_S(0, 2) | _S(0, 2)", 0.0});
  // no filter refuses Replicate any more: every row of the table survives on R inputs
  CHECK_FALSE(rule.filter);
  CHECK(rows_text(rule.rules) == Rows{"S?(0),S?(0)", "S?(1),S?(1)", "P(sum),P(sum)", "P(avg),P(avg)"});
}

TEST_CASE("R13 / R02: an all-reduce passes a Partial only when it commutes with its reduce op", "[regressions_3]") {
  CHECK(rows_text(rule_for(all_reduce("sum")).rules) == Rows{"S?(0),S?(0)", "S?(1),S?(1)", "P(sum),P(sum)", "P(avg),P(avg)"});
  CHECK(rows_text(rule_for(all_reduce("avg")).rules) == Rows{"S?(0),S?(0)", "S?(1),S?(1)", "P(sum),P(sum)", "P(avg),P(avg)"});
  CHECK(rows_text(rule_for(all_reduce("mean")).rules) == Rows{"S?(0),S?(0)", "S?(1),S?(1)", "P(sum),P(sum)", "P(avg),P(avg)"});
  CHECK(rows_text(rule_for(all_reduce("max")).rules) == Rows{"S?(0),S?(0)", "S?(1),S?(1)", "P(max),P(max)"});
  CHECK(rows_text(rule_for(all_reduce("MIN")).rules) == Rows{"S?(0),S?(0)", "S?(1),S?(1)", "P(min),P(min)"});
  for (const char* op : {"product", "premul_sum", "band", "bor", "bxor"})
    CHECK(rows_text(rule_for(all_reduce(op)).rules) == Rows{"S?(0),S?(0)", "S?(1),S?(1)"});
  // R02: max all-reduce of a partial sum reduces first, then takes the max over the program ranks:
  // with the rule's own fill (R15, PlaceholderFill::shard_from_partial) the reduction is a
  // reduce-scatter into S(0) (half an all-reduce's price), with DTensor's an all-reduce into R.
  const OpCall max = all_reduce("max", {8, 6});
  const OpRule max_rule = rule_for(max);
  CHECK(max_rule.placeholder_fill == PlaceholderFill::shard_from_partial);
  const auto m = chosen(max_rule, mesh_of({2}), max.tensors, {spec("P(sum)")});
  CHECK(m.first == "S(0) | S(0)");
  CHECK(m.second > 0.0);
  OpRule max_dtensor_fill = max_rule;
  max_dtensor_fill.placeholder_fill = PlaceholderFill::dtensor;
  const auto md = chosen(max_dtensor_fill, mesh_of({2}), max.tensors, {spec("P(sum)")});
  CHECK(md.first == "R | R");
  CHECK(md.second > m.second);
  // a sum all-reduce of a partial sum (or avg) keeps it, free
  const OpCall sum = all_reduce("sum", {8, 6});
  CHECK(chosen(rule_for(sum), mesh_of({2}), sum.tensors, {spec("P(sum)")}) == std::pair<std::string, double>{"P(sum) | P(sum)", 0.0});
  CHECK(chosen(rule_for(sum), mesh_of({2}), sum.tensors, {spec("P(avg)")}) == std::pair<std::string, double>{"P(avg) | P(avg)", 0.0});
  // P(max) into a sum: no Partial row, the reduction runs first (a reduce-scatter, R15's fill)
  CHECK(chosen(rule_for(sum), mesh_of({2}), sum.tensors, {spec("P(max)")}).first == "S(0) | S(0)");
}

TEST_CASE("R13: the same law in every namespace, vLLM's all_reduce is a sum", "[regressions_3]") {
  for (const char* name : {"_c10d_functional.all_reduce.default", "_c10d_functional.all_reduce_.default", "c10d_functional.all_reduce.default",
                           "_c10d_functional_autograd.all_reduce.default"})
    CHECK(rows_text(rule_for(all_reduce("min", {4}, name)).rules) == Rows{"S?(0),S?(0)", "P(min),P(min)"});
  const OpCall vllm = make_call("vllm.all_reduce.default", {meta({4})}, {tensor_arg(0), str_arg("tp:0")});
  const OpRule v = rule_for(vllm);
  CHECK(rows_text(v.rules) == Rows{"S?(0),S?(0)", "P(sum),P(sum)", "P(avg),P(avg)"});
  CHECK_FALSE(v.filter);
  CHECK(chosen(v, mesh_of({2}), vllm.tensors, {spec("R")}) == std::pair<std::string, double>{"R | R", 0.0});
  // R12's graph (greedy_dead_end_pmax): amax over the sharded dim leaves P(max) [8, 1]; the sum
  // all-reduce now takes it at a finite cost (a reduce-scatter of the max on the mesh into S(0))
  const OpCall r12 = make_call("vllm.all_reduce.default", {meta({8, 1})}, {tensor_arg(0), str_arg("tp:0")});
  const auto c = chosen(rule_for(r12), mesh_of({2}), r12.tensors, {spec("P(max)")});
  CHECK(c.first == "S(0) | S(0)");
  CHECK(std::isfinite(c.second));
  CHECK(c.second > 0.0);
}

TEST_CASE("R13: all_gather_into_tensor turns S(0) into _S(0, g) and keeps every other placement", "[regressions_3]") {
  const OpCall call = all_gather({4, 6}, 2);
  const OpRule rule = rule_for(call);
  CHECK(rows_text(rule.rules) == Rows{"S?(1),S?(1)", "S?(0),S?(0)", "P(sum),P(sum)", "P(avg),P(avg)", "P(max),P(max)", "P(min),P(min)"});
  REQUIRE(rule.rules.regroup(1) != nullptr);
  const auto on = [&](const char* mesh_in, std::initializer_list<std::int64_t> mesh) {
    return chosen(rule, mesh_of(mesh), call.tensors, {spec(mesh_in)});
  };
  CHECK(on("S(0)", {2}) == std::pair<std::string, double>{"_S(0, 2) | S(0)", 0.0});
  CHECK(on("_S(0, 2)", {2}) == std::pair<std::string, double>{"_S(0, 4) | _S(0, 2)", 0.0});
  CHECK(on("S(1)", {2}) == std::pair<std::string, double>{"S(1) | S(1)", 0.0});
  CHECK(on("R", {2}) == std::pair<std::string, double>{"R | R", 0.0});
  CHECK(on("P(max)", {2}) == std::pair<std::string, double>{"P(max) | P(max)", 0.0});
  CHECK(on("S(0)S(0)", {2, 2}) == std::pair<std::string, double>{"_S(0, 2)_S(0, 2) | S(0)S(0)", 0.0});
  CHECK(on("S(0)S(1)", {2, 2}) == std::pair<std::string, double>{"_S(0, 2)S(1) | S(0)S(1)", 0.0});
  // g = 3
  const OpCall g3 = all_gather({6, 5}, 3);
  CHECK(chosen(rule_for(g3), mesh_of({3}), g3.tensors, {spec("S(0)")}) == std::pair<std::string, double>{"_S(0, 3) | S(0)", 0.0});
  // a group of one is the identity
  const OpCall g1 = all_gather({6, 5}, 1);
  CHECK(chosen(rule_for(g1), mesh_of({2}), g1.tensors, {spec("S(0)")}) == std::pair<std::string, double>{"S(0) | S(0)", 0.0});
}

TEST_CASE("R13: all_gather_into_tensor reads its output shape from the annotation or the group size", "[regressions_3]") {
  OpCall call = all_gather({4, 6}, 2);
  call.outputs = {meta({8, 6})};
  CHECK(rule_for(call).rules.size() == 6);
  call.outputs = {meta({12, 6})};
  CHECK_THAT(error_of([&] { return rule_for(call); }),
             Contains("group_size") && Contains("is 2 but the output annotation 12x6 of input 4x6 means 3"));
  call.outputs = {meta({9, 6})};
  CHECK_THAT(error_of([&] { return rule_for(call); }), Contains("_c10d_functional.all_gather_into_tensor.default"));
  // the group size from the annotation alone
  OpCall no_size = make_call("_c10d_functional.all_gather_into_tensor.default", {meta({4, 6})}, {tensor_arg(0)});
  no_size.outputs = {meta({16, 6})};
  CHECK(chosen(rule_for(no_size), mesh_of({2}), no_size.tensors, {spec("S(0)")}).first == "_S(0, 4) | S(0)");
  no_size.outputs.clear();
  CHECK_THAT(error_of([&] { return rule_for(no_size); }), Contains("is missing and no output annotation gives it"));
  CHECK_THAT(error_of([&] { return rule_for(all_gather({4, 6}, 0)); }), Contains("must be at least 1"));
  // the legacy namespace reads group_size last: (shard, tag, ranks, group_size)
  const OpCall legacy =
      make_call("c10d_functional.all_gather_into_tensor.default", {meta({4, 6})}, {tensor_arg(0), str_arg(""), ints_arg({0, 1}), int_arg(2)});
  CHECK(chosen(rule_for(legacy), mesh_of({2}), legacy.tensors, {spec("S(0)")}).first == "_S(0, 2) | S(0)");
}

TEST_CASE("R13: reduce_scatter_tensor turns _S(0, g) into S(0) and has no row for S(0)", "[regressions_3]") {
  const OpCall call = reduce_scatter({8, 6}, "sum", 2);
  const OpRule rule = rule_for(call);
  CHECK(rows_text(rule.rules) == Rows{"S?(1),S?(1)", "S?(0),S?(0)", "P(sum),P(sum)", "P(avg),P(avg)"});
  const auto on = [&](const char* in, std::initializer_list<std::int64_t> mesh) { return chosen(rule, mesh_of(mesh), call.tensors, {spec(in)}); };
  CHECK(on("_S(0, 2)", {2}) == std::pair<std::string, double>{"S(0) | _S(0, 2)", 0.0});
  CHECK(on("_S(0, 4)", {2}) == std::pair<std::string, double>{"_S(0, 2) | _S(0, 4)", 0.0});
  CHECK(on("S(1)", {2}) == std::pair<std::string, double>{"S(1) | S(1)", 0.0});
  CHECK(on("_S(0, 2)_S(0, 2)", {2, 2}) == std::pair<std::string, double>{"S(0)S(0) | _S(0, 2)_S(0, 2)", 0.0});
  // S(0) of the input describes no piece of any rank's output: it is redistributed
  const auto s0 = on("S(0)", {2});
  CHECK(s0.second > 0.0);
  CHECK_FALSE(any_input(candidates(rule, mesh_of({2}), call.tensors, {spec("S(0)")}), "S(0)"));
  // _S(0, 3) with g = 2 does not line up with the ranks' blocks either
  const OpCall twelve = reduce_scatter({12, 2}, "sum", 2);
  CHECK_FALSE(any_input(candidates(rule_for(twelve), mesh_of({2}), twelve.tensors, {spec("_S(0, 3)")}), "_S(0, 3)"));
  // g = 3
  const OpCall g3 = reduce_scatter({6, 2}, "max", 3);
  CHECK(rows_text(rule_for(g3).rules) == Rows{"S?(1),S?(1)", "S?(0),S?(0)", "P(max),P(max)"});
  CHECK(chosen(rule_for(g3), mesh_of({2}), g3.tensors, {spec("_S(0, 3)")}) == std::pair<std::string, double>{"S(0) | _S(0, 3)", 0.0});
  // the input must hold g blocks
  CHECK_THAT(error_of([&] { return rule_for(reduce_scatter({7, 2}, "sum", 2)); }), Contains("not divisible by the group size 2"));
  OpCall annotated = reduce_scatter({8, 6}, "sum", 2);
  annotated.outputs = {meta({2, 6})};
  CHECK_THAT(error_of([&] { return rule_for(annotated); }), Contains("means 4"));
}

TEST_CASE("R13: all_to_all_single with equal splits keeps _S(0, g), unequal splits keep no shard of dim 0", "[regressions_3]") {
  const auto a2a = [](std::vector<std::int64_t> out_splits, std::vector<std::int64_t> in_splits) {
    return make_call("_c10d_functional.all_to_all_single.default", {meta({4, 6})},
                     {tensor_arg(0), ints_arg(std::move(out_splits)), ints_arg(std::move(in_splits)), str_arg("0")});
  };
  const OpCall equal = a2a({2, 2}, {2, 2});
  const OpRule rule = rule_for(equal);
  CHECK(rows_text(rule.rules) == Rows{"S?(1),S?(1)", "_S(0, 2),_S(0, 2)", "P(sum),P(sum)", "P(avg),P(avg)", "P(max),P(max)", "P(min),P(min)"});
  CHECK(chosen(rule, mesh_of({2}), equal.tensors, {spec("_S(0, 2)")}) == std::pair<std::string, double>{"_S(0, 2) | _S(0, 2)", 0.0});
  CHECK_FALSE(any_input(candidates(rule, mesh_of({2}), equal.tensors, {spec("S(0)")}), "S(0)"));
  const OpCall unequal = a2a({1, 3}, {3, 1});
  CHECK(rows_text(rule_for(unequal).rules) == Rows{"S?(1),S?(1)", "P(sum),P(sum)", "P(avg),P(avg)", "P(max),P(max)", "P(min),P(min)"});
  // None splits: the group size is not in the call, no shard of dim 0
  const OpCall none = make_call("_c10d_functional.all_to_all_single.default", {meta({4, 6})}, {tensor_arg(0), none_arg(), none_arg(), str_arg("0")});
  CHECK(rows_text(rule_for(none).rules) == Rows{"S?(1),S?(1)", "P(sum),P(sum)", "P(avg),P(avg)", "P(max),P(max)", "P(min),P(min)"});
  CHECK_THAT(error_of([&] { return rule_for(a2a({2, 2}, {1, 1, 2})); }), Contains("another number of ranks"));
}

TEST_CASE("R18: broadcast and wait_tensor pass every placement, Partials included", "[regressions_3]") {
  for (const char* name : {"_c10d_functional.broadcast.default", "_c10d_functional.broadcast_.default", "c10d_functional.broadcast.default"}) {
    const OpCall call = make_call(name, {meta({32, 1024}, 8)}, {tensor_arg(0), int_arg(0), str_arg("12")});
    const OpRule rule = rule_for(call);
    CHECK(rows_text(rule.rules) == Rows{"S?(0),S?(0)", "S?(1),S?(1)", "P(sum),P(sum)", "P(avg),P(avg)", "P(max),P(max)", "P(min),P(min)"});
    for (const char* in : {"R", "S(0)", "S(1)", "_S(0, 2)", "P(sum)", "P(max)"})
      CHECK(chosen(rule, mesh_of({2}), call.tensors, {spec(in)}) == std::pair<std::string, double>{std::string(in) + " | " + in, 0.0});
  }
  const OpCall wait = make_call("_c10d_functional.wait_tensor.default", {meta({5, 3})}, {tensor_arg(0)});
  CHECK(chosen(rule_for(wait), mesh_of({3}), wait.tensors, {spec("P(min)")}) == std::pair<std::string, double>{"P(min) | P(min)", 0.0});
}

TEST_CASE("R13: vLLM's all_gather / reduce_scatter on a dim, DTensor's shard_dim_alltoall", "[regressions_3]") {
  const OpCall gather = make_call("vllm.all_gather.default", {meta({4, 6})}, {tensor_arg(0), int_arg(-1), int_arg(2), str_arg("tp:0")});
  const OpRule g = rule_for(gather);
  CHECK(chosen(g, mesh_of({2}), gather.tensors, {spec("S(1)")}) == std::pair<std::string, double>{"_S(1, 2) | S(1)", 0.0});
  CHECK(chosen(g, mesh_of({2}), gather.tensors, {spec("S(0)")}) == std::pair<std::string, double>{"S(0) | S(0)", 0.0});
  const OpCall scatter = make_call("vllm.reduce_scatter.default", {meta({4, 6})}, {tensor_arg(0), int_arg(1), int_arg(2), str_arg("tp:0")});
  const OpRule s = rule_for(scatter);
  CHECK(rows_text(s.rules) == Rows{"S?(0),S?(0)", "S(1),_S(1, 2)", "P(sum),P(sum)", "P(avg),P(avg)"});
  CHECK(chosen(s, mesh_of({2}), scatter.tensors, {spec("_S(1, 2)")}) == std::pair<std::string, double>{"S(1) | _S(1, 2)", 0.0});
  CHECK_FALSE(any_input(candidates(s, mesh_of({2}), scatter.tensors, {spec("S(1)")}), "S(1)"));
  // shard_dim_alltoall(x [4, 6], gather_dim 0, shard_dim 1) over 2 ranks -> [8, 3]
  OpCall a2a = make_call("_dtensor.shard_dim_alltoall.default", {meta({4, 6})}, {tensor_arg(0), int_arg(0), int_arg(1), str_arg("0")});
  a2a.outputs = {meta({8, 3})};
  const OpRule t = rule_for(a2a);
  CHECK(chosen(t, mesh_of({2}), a2a.tensors, {spec("S(0)")}) == std::pair<std::string, double>{"_S(0, 2) | S(0)", 0.0});
  CHECK(chosen(t, mesh_of({2}), a2a.tensors, {spec("_S(1, 2)")}) == std::pair<std::string, double>{"S(1) | _S(1, 2)", 0.0});
  a2a.outputs = {meta({8, 6})};
  CHECK_THAT(error_of([&] { return rule_for(a2a); }), Contains("cannot give 8x6"));
}

TEST_CASE("R13: coalesced collectives apply the law per tensor, _out variants shape their buffer like the output", "[regressions_3]") {
  const OpCall coalesced =
      make_call("_c10d_functional.all_reduce_coalesced.default", {meta({4, 6}), meta({6})}, {tensors_arg({0, 1}), str_arg("sum"), str_arg("0")});
  const OpRule rule = rule_for(coalesced);
  const Rows rows = rows_text(rule.rules);
  // each tensor's own rows with the other replicated, then both on dim 0, then both Partial
  CHECK(rows == Rows{"S?(0),R,S?(0),R", "S?(1),R,S?(1),R", "P(sum),R,P(sum),R", "P(avg),R,P(avg),R", "R,S?(0),R,S?(0)", "R,P(sum),R,P(sum)",
                     "R,P(avg),R,P(avg)", "S?(0),S?(0),S?(0),S?(0)", "P(sum),P(sum),P(sum),P(sum)", "P(avg),P(avg),P(avg),P(avg)"});
  CHECK(chosen(rule, mesh_of({2}), coalesced.tensors, {spec("P(sum)"), spec("P(sum)")}).second == 0.0);
  CHECK(chosen(rule, mesh_of({2}), coalesced.tensors, {spec("S(1)"), spec("R")}) == std::pair<std::string, double>{"S(1) R | S(1) R", 0.0});
  // a tensor list naming a tensor input the call does not have (fuzz_rules: a heap overflow before)
  const OpCall past =
      make_call("_c10d_functional.all_reduce_coalesced.default", {meta({4, 6}), meta({6})}, {tensors_arg({0, 7}), str_arg("sum"), str_arg("0")});
  CHECK_THAT(error_of([&] { return rule_for(past); }), Catch::Contains("refers to tensor input 7 of 2"));
  const OpCall gathers = make_call("_c10d_functional.all_gather_into_tensor_coalesced.default", {meta({4, 6}), meta({2})},
                                   {tensors_arg({0, 1}), int_arg(2), str_arg("0")});
  CHECK(chosen(rule_for(gathers), mesh_of({2}), gathers.tensors, {spec("S(0)"), spec("R")}) ==
        std::pair<std::string, double>{"_S(0, 2) R | S(0) R", 0.0});
  const OpCall out = make_call("_c10d_functional.all_gather_into_tensor_out.default", {meta({4, 6}), meta({8, 6})},
                               {tensor_arg(0), int_arg(2), str_arg("0")}, {{"out", tensor_arg(1)}});
  const OpRule o = rule_for(out);
  CHECK(rows_text(o.rules) ==
        Rows{"S?(1),S?(1),S?(1)", "S?(0),S?(0),S?(0)", "P(sum),P(sum),R", "P(avg),P(avg),R", "P(max),P(max),R", "P(min),P(min),R"});
  CHECK(chosen(o, mesh_of({2}), out.tensors, {spec("S(0)"), spec("_S(0, 2)")}) == std::pair<std::string, double>{"_S(0, 2) | S(0) _S(0, 2)", 0.0});
  const OpCall bad_out = make_call("_c10d_functional.all_gather_into_tensor_out.default", {meta({4, 6}), meta({4, 6})},
                                   {tensor_arg(0), int_arg(2), str_arg("0")}, {{"out", tensor_arg(1)}});
  CHECK_THAT(error_of([&] { return rule_for(bad_out); }), Contains("argument 'out' has shape 4x6, the result 8x6"));
}
