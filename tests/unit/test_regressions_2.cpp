// The second set of regression cases (../shared/cases/regressions_2.json), one test per case,
// asserting the right value, not just "no error". R03 / R04 (FX reader) live in tests/cli.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "ctshard/registry.hpp"
#include "op_call_builders.hpp"

using namespace ctshard;
using namespace ctshard::test;
using Rows = std::vector<std::string>;

TEST_CASE("R01: flattened layer-norm statistics keep S(0) only when the row chunks line up", "[regressions_2]") {
  // apex fused layer norm: mean / invvar come out flattened over the leading dims.
  const auto call_for = [](std::initializer_list<std::int64_t> x) {
    OpCall c = make_call("apex.fused_layer_norm_affine_fwd.default", {meta(x), meta({4}), meta({4})},
                         {tensor_arg(0), tensor_arg(1), tensor_arg(2), ints_arg({4}), float_arg(1e-5)});
    return c;
  };
  // x [3, 2, 4] S(0) on 2 ranks: rows 2 + 1 hold 4 + 2 statistics, but S(0) of 6 means 3 + 3.
  const OpCall uneven = call_for({3, 2, 4});
  const auto c = chosen(rule_for(uneven), mesh_of({2}), uneven.tensors, {parse_spec("S(0)"), parse_spec("R"), parse_spec("R")});
  CHECK(c.first == "R R R | R R R");
  CHECK(c.second > 0.0);
  // x [4, 2, 4]: 2 + 2 rows hold 4 + 4 statistics = S(0) of 8, exact at no cost.
  const OpCall even = call_for({4, 2, 4});
  const auto e = chosen(rule_for(even), mesh_of({2}), even.tensors, {parse_spec("S(0)"), parse_spec("R"), parse_spec("R")});
  CHECK(e.first == "S(0) S(0) S(0) | S(0) R R");
  CHECK(e.second == 0.0);
}

TEST_CASE("R02: a collective passes a Partial only when it commutes with its reduce op", "[regressions_2]") {
  // R13 (docs/semantics.md "Collectives in graphs") replaced the old "a sum never takes R" rule:
  // the collective combines the program ranks' tensors, so R -> R is as valid as S(d) -> S(d).
  const auto all_reduce = [](const char* op) {
    return make_call("_c10d_functional.all_reduce.default", {meta({8, 6})}, {tensor_arg(0), str_arg(op), str_arg("0")});
  };
  const auto psum = parse_spec("P(sum)");
  // max all-reduce of a partial sum: reduce first (cost > 0; R15: a reduce-scatter into S(0)), then max of replicas.
  const auto m = chosen(rule_for(all_reduce("max")), mesh_of({2}), {meta({8, 6})}, {psum});
  CHECK(m.first == "S(0) | S(0)");
  CHECK(m.second > 0.0);
  CHECK(rows_text(rule_for(all_reduce("max")).rules) == Rows{"S?(0),S?(0)", "S?(1),S?(1)", "P(max),P(max)"});
  // sum all-reduce: its own Partial (and avg, which commutes with a sum) passes free; a
  // Replicate input stays Replicate (the program ranks' tensors are summed, once).
  const OpRule sum = rule_for(all_reduce("sum"));
  CHECK(chosen(sum, mesh_of({2}), {meta({8, 6})}, {psum}) == std::pair<std::string, double>{"P(sum) | P(sum)", 0.0});
  CHECK(chosen(sum, mesh_of({2}), {meta({8, 6})}, {parse_spec("R")}) == std::pair<std::string, double>{"R | R", 0.0});
  CHECK(chosen(sum, mesh_of({2, 2}), {meta({8, 6})}, {parse_spec("RS(0)")}) == std::pair<std::string, double>{"RS(0) | RS(0)", 0.0});
  CHECK_FALSE(sum.filter);
  CHECK(chosen(rule_for(all_reduce("avg")), mesh_of({2}), {meta({8, 6})}, {parse_spec("R")}).first == "R | R");
  // every namespace, and vLLM's all_reduce is a sum
  for (const char* op : {"c10d_functional.all_reduce.default", "_c10d_functional_autograd.all_reduce.default"})
    CHECK(rows_text(rule_for(make_call(op, {meta({4})}, {tensor_arg(0), str_arg("min"), str_arg("g")})).rules) ==
          Rows{"S?(0),S?(0)", "P(min),P(min)"});
  const OpRule vllm = rule_for(make_call("vllm.all_reduce.default", {meta({4})}, {tensor_arg(0), str_arg("tp:0")}));
  CHECK(rows_text(vllm.rules) == Rows{"S?(0),S?(0)", "P(sum),P(sum)", "P(avg),P(avg)"});
  CHECK_FALSE(vllm.filter);
}

TEST_CASE("R05: a view that splits a StridedShard dim moves the split factor to the dim it describes", "[regressions_2]") {
  // ctshard table --op aten.view.default --shapes 16x4 --mesh 2 --inputs "_S(0, 2)" --args '[[2, 8, 4]]'
  const OpCall call = make_call("aten.view.default", {meta({16, 4})}, {tensor_arg(0), ints_arg({2, 8, 4})});
  const OpRule rule = rule_for(call);
  const auto r05 = chosen(rule, mesh_of({2}), call.tensors, {parse_spec("_S(0, 2)")});
  CHECK(r05 == std::pair<std::string, double>{"S(1) | _S(0, 2)", 0.0});
  // never the label copied through unchanged
  for (const auto& row : candidates(rule, mesh_of({2}), call.tensors, {parse_spec("_S(0, 2)")})) CHECK(row != "_S(0, 2) | _S(0, 2)");
  // _S(0, 4) on [16, 4] viewed as [2, 8, 4] is _S(1, 2)
  CHECK(chosen(rule, mesh_of({2}), call.tensors, {parse_spec("_S(0, 4)")}) == std::pair<std::string, double>{"_S(1, 2) | _S(0, 4)", 0.0});
  // and the flatten back keeps the split factor where the blocks line up
  const OpCall back = make_call("aten.view.default", {meta({2, 8, 4})}, {tensor_arg(0), ints_arg({16, 4})});
  CHECK(chosen(rule_for(back), mesh_of({2}), back.tensors, {parse_spec("S(1)")}) == std::pair<std::string, double>{"_S(0, 2) | S(1)", 0.0});
  CHECK(chosen(rule_for(back), mesh_of({2}), back.tensors, {parse_spec("_S(1, 2)")}) == std::pair<std::string, double>{"_S(0, 4) | _S(1, 2)", 0.0});
}

TEST_CASE("R06: cat of 70 tensors keeps S(1) at no cost", "[regressions_2]") {
  std::vector<TensorMeta> ts(70, meta({2, 6}));
  OpArg list;
  list.kind = OpArg::Kind::tensor_list;
  for (std::int64_t i = 0; i < 70; ++i) list.ints.push_back(i);
  const OpRule rule = rule_for(make_call("aten.cat.default", ts, {list, int_arg(0)}));
  const std::vector<Spec> specs(70, parse_spec("S(1)"));
  StrategyEnumerator e(rule.rules, mesh_of({2}), rule.uneven_inputs, rule.filter, rule.placeholder_fill);
  const Choice c = e.choose(ts, specs);
  CHECK(to_string(e.spec_of(c, 0)) == "S(1)");
  CHECK(c.total_us == 0.0);
  CHECK(c.rule == ChoiceRule::no_redistribute);
}

TEST_CASE("R07: backward ops linear in the gradient keep a Partial gradient", "[regressions_2]") {
  const auto x = meta({8, 16});
  const auto c = chosen(rule_for(make_call("aten.gelu_backward.default", {x, x}, {tensor_arg(0), tensor_arg(1)})), mesh_of({2}), {x, x},
                        {parse_spec("P(sum)"), parse_spec("R")});
  CHECK(c == std::pair<std::string, double>{"P(sum) | P(sum) R", 0.0});
  for (const char* op : {"aten.sigmoid_backward.default", "aten.tanh_backward.default", "aten.threshold_backward.default"}) {
    const auto rows = rows_text(rule_for(make_call(op, {x, x}, {tensor_arg(0), tensor_arg(1), float_arg(0.0)})).rules);
    CHECK(std::count(rows.begin(), rows.end(), "P(sum),P(sum),R") == 1);
    CHECK(std::count(rows.begin(), rows.end(), "P(avg),P(avg),R") == 1);
  }
  // softmax backward: linear in grad_output, with the output replicated
  const auto sb = chosen(rule_for(make_call("aten._softmax_backward_data.default", {x, x}, {tensor_arg(0), tensor_arg(1), int_arg(1), int_arg(6)})),
                         mesh_of({2}), {x, x}, {parse_spec("P(sum)"), parse_spec("R")});
  CHECK(sb == std::pair<std::string, double>{"P(sum) | P(sum) R", 0.0});
}

TEST_CASE("R08: ops defined on part of the reals do not keep P(max)", "[regressions_2]") {
  for (const char* op : {"aten.log.default", "aten.log1p.default", "aten.sqrt.default", "aten.rsqrt.default"}) {
    const OpRule rule = rule_for(make_call(op, {meta({4})}, {tensor_arg(0)}));
    for (const auto& row : rows_text(rule.rules)) CHECK(row.find("P(max)") == std::string::npos);
    const auto c = chosen(rule, mesh_of({2}), {meta({4})}, {parse_spec("P(max)")});
    CHECK(c.first == "R | R");
    CHECK(c.second > 0.0);
  }
  // defined everywhere and non-decreasing: P(max) stays free
  CHECK(chosen(rule_for(make_call("aten.exp.default", {meta({4})}, {tensor_arg(0)})), mesh_of({2}), {meta({4})}, {parse_spec("P(max)")}) ==
        std::pair<std::string, double>{"P(max) | P(max)", 0.0});
}
