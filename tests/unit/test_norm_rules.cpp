// Layer norm forward / backward (DTensor layer_norm_single_dim_strategy and
// layer_norm_bwd_single_dim_strategy): exact rows, optional weight / bias, output_mask, errors.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "op_call_builders.hpp"

using namespace ctshard;
using namespace ctshard::test;
using Rows = std::vector<std::string>;

TEST_CASE("norm rules: layer norm shards the leading dims only", "[norm]") {
  const auto x = meta({8, 197, 768}), w = meta({768});
  const OpRule r = rule_for(
      make_call("aten.native_layer_norm.default", {x, w, w}, {tensor_arg(0), ints_arg({768}), tensor_arg(1), tensor_arg(2), float_arg(1e-6)}));
  CHECK(r.rules.num_outputs() == 3);
  CHECK(r.rules.num_inputs() == 3);
  CHECK(rows_text(r.rules) == Rows{"S?(0),S?(0),S?(0),S?(0),R,R", "S?(1),S?(1),S?(1),S?(1),R,R"});
  CHECK(r.uneven_inputs == UnevenInputs::reject);
  // no weight / bias; two normalized dims
  const OpRule n = rule_for(
      make_call("aten.native_layer_norm.default", {meta({4, 6, 8})}, {tensor_arg(0), ints_arg({6, 8}), none_arg(), none_arg(), float_arg(1e-5)}));
  CHECK(n.rules.num_inputs() == 1);
  CHECK(rows_text(n.rules) == Rows{"S?(0),S?(0),S?(0),S?(0)"});
  // everything normalized: nothing can be sharded
  CHECK(rule_for(make_call("aten.native_layer_norm.default", {meta({8})}, {tensor_arg(0), ints_arg({8}), none_arg(), none_arg(), float_arg(1e-5)}))
            .rules.empty());
}

TEST_CASE("norm rules: a sharded normalized dim or a Partial input is gathered first", "[norm]") {
  const auto x = meta({8, 16}), w = meta({16});
  const OpRule r = rule_for(
      make_call("aten.native_layer_norm.default", {x, w, w}, {tensor_arg(0), ints_arg({16}), tensor_arg(1), tensor_arg(2), float_arg(1e-5)}));
  const auto mesh = mesh_of({2});
  CHECK(chosen(r, mesh, {x, w, w}, {parse_spec("S(0)"), parse_spec("R"), parse_spec("R")}).first == "S(0) S(0) S(0) | S(0) R R");
  // no candidate keeps the normalized dim sharded
  CHECK(candidates(r, mesh, {x, w, w}, {parse_spec("S(1)"), parse_spec("R"), parse_spec("R")}) == Rows{"R R R | R R R", "S(0) S(0) S(0) | S(0) R R"});
  CHECK(chosen(r, mesh, {x, w, w}, {parse_spec("S(1)"), parse_spec("R"), parse_spec("R")}).second > 0);
  // a Partial input is reduce-scattered into the token-parallel row (R15), never normalized as is
  CHECK(chosen(r, mesh, {x, w, w}, {parse_spec("P(sum)"), parse_spec("R"), parse_spec("R")}).first == "S(0) S(0) S(0) | S(0) R R");
}

TEST_CASE("norm rules: layer norm backward gives Partial(sum) weight and bias grads", "[norm]") {
  const auto x = meta({8, 197, 768}), stat = meta({8, 197, 1}), w = meta({768});
  const std::vector<TensorMeta> ts{x, x, stat, stat, w, w};
  const std::vector<OpArg> args{tensor_arg(0), tensor_arg(1), ints_arg({768}), tensor_arg(2),
                                tensor_arg(3), tensor_arg(4), tensor_arg(5),   bools_arg({true, true, true})};
  const OpRule r = rule_for(make_call("aten.native_layer_norm_backward.default", ts, args));
  CHECK(r.rules.num_outputs() == 3);
  CHECK(rows_text(r.rules) == Rows{"S?(0),P(sum),P(sum),S?(0),S?(0),S?(0),S?(0),R,R", "S?(1),P(sum),P(sum),S?(1),S?(1),S?(1),S?(1),R,R",
                                   // linear in grad_out: a partial gradient flows through unreduced
                                   "P(sum),P(sum),P(sum),P(sum),R,R,R,R,R", "P(avg),P(avg),P(avg),P(avg),R,R,R,R,R"});
  auto masked = args;
  masked[7] = bools_arg({true, false, false});
  CHECK(rows_text(rule_for(make_call("aten.native_layer_norm_backward.default", ts, masked)).rules)[0] == "S?(0),R,R,S?(0),S?(0),S?(0),S?(0),R,R");
  CHECK(rows_text(rule_for(make_call("aten.native_layer_norm_backward.default", ts, masked)).rules)[2] == "P(sum),R,R,P(sum),R,R,R,R,R");
  // no weight / bias: those grads are None (Replicate) whatever the mask says
  const OpRule nb = rule_for(make_call(
      "aten.native_layer_norm_backward.default", {x, x, stat, stat},
      {tensor_arg(0), tensor_arg(1), ints_arg({768}), tensor_arg(2), tensor_arg(3), none_arg(), none_arg(), bools_arg({true, true, true})}));
  CHECK(rows_text(nb.rules)[1] == "S?(1),R,R,S?(1),S?(1),S?(1),S?(1)");
}

TEST_CASE("norm rules: bad arguments name the op and the argument", "[norm]") {
  const auto x = meta({8, 16});
  CHECK(error_of([&] {
          return rule_for(make_call("aten.native_layer_norm.default", {x}, {tensor_arg(0), ints_arg({8}), none_arg(), none_arg(), float_arg(1e-5)}));
        }) == "ctshard: aten.native_layer_norm.default: argument 'normalized_shape' does not match the input's trailing sizes");
  CHECK(error_of([&] {
          return rule_for(make_call("aten.native_layer_norm.default", {x}, {tensor_arg(0), ints_arg({2, 8, 16}), none_arg(), none_arg()}));
        }) == "ctshard: aten.native_layer_norm.default: argument 'normalized_shape' has more dims than the input");
  CHECK(error_of([&] {
          return rule_for(make_call("aten.native_layer_norm_backward.default", {x, x, x, x},
                                    {tensor_arg(0), tensor_arg(1), ints_arg({16}), tensor_arg(2), tensor_arg(3), none_arg(), none_arg(),
                                     list_arg({bool_arg(true), int_arg(2)})}));
        }) == "ctshard: aten.native_layer_norm_backward.default: argument 'output_mask' must be a list of bools (item 1 is not)");
  STATIC_REQUIRE(layer_norm_single_dim_strategy(3, 1, true, true).size() == 2);
  STATIC_REQUIRE(layer_norm_backward_single_dim_strategy(3, 2, false, false, {true, true, true}).size() == 3);  // one leading dim + P(sum), P(avg)
}
