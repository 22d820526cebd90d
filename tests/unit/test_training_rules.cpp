// Training-graph ops (registry/training_ops.hpp, apex's fused layer norm backward): exact rows,
// DTensor-like choices through StrategyEnumerator, full-mesh filters, UnevenInputs, and the errors
// of bad arguments. Shapes come from ../shared/graphs/more (resnet50_bw, dlrm_fw / dlrm_bw,
// qwen3_moe_fw, t5_small_bw) where the op occurs there.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "op_call_builders.hpp"

using namespace ctshard;
using namespace ctshard::test;
using Rows = std::vector<std::string>;

namespace {
OpArg text_arg(std::string text) {
  OpArg a;
  a.kind = OpArg::Kind::other;
  a.text = std::move(text);
  return a;
}
bool has_output(const std::vector<std::string>& candidates, const std::string& prefix) {
  return std::any_of(candidates.begin(), candidates.end(), [&](const std::string& c) { return c.rfind(prefix, 0) == 0; });
}
}  // namespace

TEST_CASE("training rules: gather follows DTensor, with sound size checks and Partial rows", "[training]") {
  // qwen3_moe_fw: gather(sub_7 [2048, 151936], 1, unsqueeze_38 i64[2048, 1])
  const std::vector<TensorMeta> ts{meta({2048, 151936}), meta({2048, 1}, 8)};
  const OpRule r = rule_for(make_call("aten.gather.default", ts, {tensor_arg(0), int_arg(1), tensor_arg(1)}));
  CHECK(rows_text(r.rules) ==
        Rows{"P(sum),S?(1),R", "S?(1),R,S?(1)", "S?(0),S?(0),S?(0)", "P(sum),P(sum),R", "P(avg),P(avg),R", "P(max),P(max),R", "P(min),P(min),R"});
  CHECK(r.uneven_inputs == UnevenInputs::keep_existing_shards);
  // vocab-parallel log-probs: the masked row-wise gather needs no communication
  const auto c = chosen(r, mesh_of({4}), ts, {parse_spec("S(1)"), parse_spec("R")});
  CHECK(c.first == "P(sum) | S(1) R");
  CHECK(c.second == 0);
  // batch-parallel
  CHECK(chosen(r, mesh_of({4}), ts, {parse_spec("S(0)"), parse_spec("S(0)")}).first == "S(0) | S(0) S(0)");
  // an index shorter than self on dim 0 gets no dim-0 row (DTensor lists [S(0)] * 3 there: unsound)
  const OpRule short_index = rule_for(make_call("aten.gather.default", {meta({4, 1}), meta({2, 1}, 8)}, {tensor_arg(0), int_arg(-1), tensor_arg(1)}));
  CHECK(rows_text(short_index.rules) ==
        Rows{"P(sum),S?(1),R", "S?(1),R,S?(1)", "P(sum),P(sum),R", "P(avg),P(avg),R", "P(max),P(max),R", "P(min),P(min),R"});
  // index wider than 1 on dim: no masked row
  const OpRule wide = rule_for(make_call("aten.gather.default", {meta({4, 6}), meta({4, 3}, 8)}, {tensor_arg(0), int_arg(1), tensor_arg(1)}));
  CHECK(rows_text(wide.rules)[0] == "S?(1),R,S?(1)");
  CHECK(error_of([] {
          return rule_for(make_call("aten.gather.default", {meta({4, 6}), meta({4}, 8)}, {tensor_arg(0), int_arg(1), tensor_arg(1)}));
        }) == "ctshard: aten.gather.default: ctshard::gather_single_dim_strategy: index has rank 1, self has rank 2 (they must be equal)");
  CHECK(error_of([] {
          return rule_for(make_call("aten.gather.default", {meta({4, 6}), meta({4, 1}, 8)}, {tensor_arg(0), none_arg(), tensor_arg(1)}));
        }) == "ctshard: aten.gather.default: argument 'dim' is missing");
  CHECK(error_of([] {
          return rule_for(make_call("aten.gather.default", {meta({4, 6}), meta({4, 1}, 8)}, {tensor_arg(0), int_arg(2), tensor_arg(1)}));
        }) == "ctshard: aten.gather.default: argument 'dim': dim 2 is out of range for a tensor of rank 2 (expected [-2, 1])");
  // the rule's inputs follow the call's tensors: they must come in schema order
  CHECK(error_of([] {
          return rule_for(make_call("aten.gather.default", {meta({4, 1}, 8), meta({4, 6})}, {tensor_arg(1), int_arg(1), tensor_arg(0)}));
        }) == "ctshard: aten.gather.default: tensor arguments must come in schema order (tensor input 1 is schema tensor 0)");
}

TEST_CASE("training rules: scatter.value, scatter.src and scatter_add", "[training]") {
  // t5_small_bw: scatter.value(full_default_9 [1024, 32128], 1, where_4 i64[1024, 1], -1.0)
  const std::vector<TensorMeta> ts{meta({1024, 32128}), meta({1024, 1}, 8)};
  const OpRule v = rule_for(make_call("aten.scatter.value", ts, {tensor_arg(0), int_arg(1), tensor_arg(1), float_arg(-1.0)}));
  CHECK(rows_text(v.rules) == Rows{"S?(0),S?(0),S?(0)", "P(avg),P(avg),R", "P(max),P(max),R", "P(min),P(min),R"});
  CHECK(v.uneven_inputs == UnevenInputs::keep_existing_shards);
  CHECK(chosen(v, mesh_of({2, 4}), ts, {parse_spec("S(0)R"), parse_spec("S(0)R")}).first == "S(0)R | S(0)R S(0)R");
  // n ranks writing the value into a P(sum) buffer would sum to n * value: no P(sum) row, unless the value is 0
  CHECK(chosen(v, mesh_of({2}), ts, {parse_spec("P(sum)"), parse_spec("R")}).first == "S(0) | S(0) S(0)");  // reduce-scattered (R15)
  const OpRule zero = rule_for(make_call("aten.scatter.value", ts, {tensor_arg(0), int_arg(1), tensor_arg(1), int_arg(0)}));
  CHECK(rows_text(zero.rules) == Rows{"S?(0),S?(0),S?(0)", "P(sum),P(sum),R", "P(avg),P(avg),R", "P(max),P(max),R", "P(min),P(min),R"});
  CHECK(chosen(zero, mesh_of({2}), ts, {parse_spec("P(sum)"), parse_spec("R")}).first == "P(sum) | P(sum) R");

  const std::vector<TensorMeta> src{meta({4, 6}), meta({4, 3}, 8), meta({4, 3})};
  const OpRule s = rule_for(make_call("aten.scatter.src", src, {tensor_arg(0), int_arg(1), tensor_arg(1), tensor_arg(2)}));
  CHECK(rows_text(s.rules) == Rows{"S?(0),S?(0),S?(0),S?(0)", "P(sum),P(sum),R,P(sum)", "P(avg),P(avg),R,P(avg)", "P(max),P(max),R,P(max)",
                                   "P(min),P(min),R,P(min)", "P(avg),P(avg),R,R", "P(max),P(max),R,R", "P(min),P(min),R,R", "P(avg),R,R,P(avg)",
                                   "P(max),R,R,P(max)", "P(min),R,R,P(min)"});
  // src taller than index on dim 0: no dim-0 row (src blocks would not line up with index blocks)
  const OpRule tall = rule_for(
      make_call("aten.scatter.src", {meta({4, 6}), meta({2, 3}, 8), meta({4, 3})}, {tensor_arg(0), int_arg(1), tensor_arg(1), tensor_arg(2)}));
  CHECK(rows_text(tall.rules)[0] == "P(sum),P(sum),R,P(sum)");

  // scatter_add: contributions split along dim add up over ranks
  const std::vector<TensorMeta> add{meta({5, 4}), meta({3, 4}, 8), meta({3, 4})};
  const OpRule a = rule_for(make_call("aten.scatter_add.default", add, {tensor_arg(0), int_arg(0), tensor_arg(1), tensor_arg(2)}));
  CHECK(rows_text(a.rules) == Rows{"S?(1),S?(1),S?(1),S?(1)", "P(sum),P(sum),S?(0),S?(0)", "P(sum),P(sum),R,P(sum)", "P(avg),P(avg),R,P(avg)",
                                   "P(avg),P(avg),R,R", "P(avg),R,R,P(avg)", "P(max),P(max),R,R", "P(min),P(min),R,R"});
  const auto c = chosen(a, mesh_of({3}), add, {parse_spec("R"), parse_spec("S(0)"), parse_spec("S(0)")});
  CHECK(c.first == "P(sum) | P(sum) S(0) S(0)");
  CHECK(c.second == 0);

  CHECK(error_of([&] {
          return rule_for(make_call("aten.scatter.value", ts, {tensor_arg(0), int_arg(1), tensor_arg(1)}));
        }) == "ctshard: aten.scatter.value: argument 'value' must be a number");
  CHECK(error_of([&] {
          return rule_for(make_call("aten.scatter.src", ts, {tensor_arg(0), int_arg(1), tensor_arg(1), float_arg(2.0)}));
        }) == "ctshard: aten.scatter.src: argument 'src' must be a tensor or None");
}

TEST_CASE("training rules: convolution_backward batch, last-dim, channel and linear rows", "[training]") {
  // resnet50_bw: convolution_backward(mul_165 [4, 2048, 7, 7], relu_47 [4, 512, 7, 7], primals_157 [2048, 512, 1, 1], [0],
  // [1, 1], [0, 0], [1, 1], False, [0, 0], 1, [True, True, False])
  const std::vector<TensorMeta> ts{meta({4, 2048, 7, 7}), meta({4, 512, 7, 7}), meta({2048, 512, 1, 1})};
  std::vector<OpArg> args{tensor_arg(0),
                          tensor_arg(1),
                          tensor_arg(2),
                          ints_arg({0}),
                          ints_arg({1, 1}),
                          ints_arg({0, 0}),
                          ints_arg({1, 1}),
                          bool_arg(false),
                          ints_arg({0, 0}),
                          int_arg(1),
                          bools_arg({true, true, false})};
  const OpRule r = rule_for(make_call("aten.convolution_backward.default", ts, args));
  CHECK(r.rules.num_outputs() == 3);
  // a 1x1 convolution with stride 1 has disjoint windows: the last-dim row exists (filtered)
  CHECK(rows_text(r.rules) == Rows{"S?(0),P(sum),R,S?(0),S?(0),R", "S?(3),P(sum),R,S?(3),S?(3),R", "P(sum),S?(0),R,S?(1),R,S?(0)",
                                   "S?(1),S?(1),R,R,S?(1),S?(1)", "P(sum),P(sum),R,P(sum),R,R", "P(avg),P(avg),R,P(avg),R,R", "R,P(sum),R,R,P(sum),R",
                                   "R,P(avg),R,R,P(avg),R", "P(sum),R,R,R,R,P(sum)", "P(avg),R,R,R,R,P(avg)"});
  CHECK(r.uneven_inputs == UnevenInputs::reject);
  REQUIRE(r.filter);
  // data parallel: grad_weight comes out as a pending sum
  const auto dp = chosen(r, mesh_of({4}), ts, {parse_spec("S(0)"), parse_spec("S(0)"), parse_spec("R")});
  CHECK(dp.first == "S(0) P(sum) R | S(0) S(0) R");
  CHECK(dp.second == 0);
  // output channels split as in the forward's output-channel row
  const auto oc = chosen(r, mesh_of({4}), ts, {parse_spec("S(1)"), parse_spec("R"), parse_spec("S(0)")});
  CHECK(oc.first == "P(sum) S(0) R | S(1) R S(0)");
  CHECK(oc.second == 0);
  // 4 samples on 8 ranks: the batch row is not shardable (reject), so the choice moves to channels
  CHECK_FALSE(has_output(candidates(r, mesh_of({8}), ts, {parse_spec("S(0)"), parse_spec("S(0)"), parse_spec("R")}), "S(0) P(sum)"));
  // 4 samples on 3 ranks chunk 2, 2, 0: an empty batch block gives zero gradients, the row stays
  CHECK(has_output(candidates(r, mesh_of({3}), ts, {parse_spec("S(0)"), parse_spec("S(0)"), parse_spec("R")}), "S(0) P(sum)"));
  // 4 output channels on 3 ranks: the local kernel raises on the empty weight block (filtered)
  const std::vector<TensorMeta> small{meta({2, 4, 5, 5}), meta({2, 3, 5, 5}), meta({4, 3, 1, 1})};
  const OpRule s4 = rule_for(make_call("aten.convolution_backward.default", small, args));
  FilterCounts counts;
  const auto three = candidates(s4, mesh_of({3}), small, {parse_spec("S(1)"), parse_spec("R"), parse_spec("S(0)")}, &counts);
  CHECK(counts.op_filter > 0);
  CHECK_FALSE(has_output(three, "P(sum) S(0)"));

  // 3x3, stride 1, padding 1: no last-dim row; grad_bias requested
  args[5] = ints_arg({1, 1});
  args[10] = bools_arg({true, true, true});
  const std::vector<TensorMeta> k3{meta({4, 64, 56, 56}), meta({4, 64, 56, 56}), meta({64, 64, 3, 3})};
  CHECK(rows_text(rule_for(make_call("aten.convolution_backward.default", k3, args)).rules) ==
        Rows{"S?(0),P(sum),P(sum),S?(0),S?(0),R", "P(sum),S?(0),S?(0),S?(1),R,S?(0)", "S?(1),S?(1),R,R,S?(1),S?(1)",
             "P(sum),P(sum),P(sum),P(sum),R,R", "P(avg),P(avg),P(avg),P(avg),R,R", "R,P(sum),R,R,P(sum),R", "R,P(avg),R,R,P(avg),R",
             "P(sum),R,R,R,R,P(sum)", "P(avg),R,R,R,R,P(avg)"});
  // transposed (weight [C_in, C_out, k]) and grouped
  const std::vector<TensorMeta> tr{meta({2, 3, 7}), meta({2, 4, 5}), meta({4, 3, 3})};
  const std::vector<OpArg> tr_args{tensor_arg(0),
                                   tensor_arg(1),
                                   tensor_arg(2),
                                   ints_arg({3}),
                                   ints_arg({1}),
                                   ints_arg({0}),
                                   ints_arg({1}),
                                   bool_arg(true),
                                   ints_arg({0}),
                                   int_arg(1),
                                   bools_arg({true, false, true})};
  CHECK(rows_text(rule_for(make_call("aten.convolution_backward.default", tr, tr_args)).rules) ==
        Rows{"S?(0),R,P(sum),S?(0),S?(0),R", "P(sum),R,S?(0),S?(1),R,S?(1)", "S?(1),R,R,R,S?(1),S?(0)", "P(sum),R,P(sum),P(sum),R,R",
             "P(avg),R,P(avg),P(avg),R,R", "P(sum),R,R,R,R,P(sum)", "P(avg),R,R,R,R,P(avg)"});
  const std::vector<TensorMeta> gr{meta({2, 6, 4}), meta({2, 4, 6}), meta({6, 2, 3})};
  const std::vector<OpArg> gr_args{tensor_arg(0),
                                   tensor_arg(1),
                                   tensor_arg(2),
                                   none_arg(),
                                   ints_arg({1}),
                                   ints_arg({0}),
                                   ints_arg({1}),
                                   bool_arg(false),
                                   ints_arg({0}),
                                   int_arg(2),
                                   bools_arg({true, true, true})};
  CHECK(rows_text(rule_for(make_call("aten.convolution_backward.default", gr, gr_args)).rules) ==
        Rows{"S?(0),P(sum),P(sum),S?(0),S?(0),R", "P(sum),P(sum),P(sum),P(sum),R,R", "P(avg),P(avg),P(avg),P(avg),R,R", "R,P(sum),R,R,P(sum),R",
             "R,P(avg),R,R,P(avg),R", "P(sum),R,R,R,R,P(sum)", "P(avg),R,R,R,R,P(avg)"});

  auto without = [&](std::size_t pos) {
    auto a = args;
    a.resize(pos);
    return a;
  };
  CHECK(error_of([&] { return rule_for(make_call("aten.convolution_backward.default", ts, without(10))); }) ==
        "ctshard: aten.convolution_backward.default: argument 'output_mask' is missing");
  CHECK(error_of([&] {
          auto a = args;
          a[10] = bools_arg({true, true});
          return rule_for(make_call("aten.convolution_backward.default", ts, a));
        }) == "ctshard: aten.convolution_backward.default: argument 'output_mask' must hold 3 bools");
  CHECK(error_of([&] { return rule_for(make_call("aten.convolution_backward.default", ts, without(9))); }) ==
        "ctshard: aten.convolution_backward.default: argument 'groups' is missing");
  CHECK(error_of([&] {
          auto a = args;
          a[7] = none_arg();
          return rule_for(make_call("aten.convolution_backward.default", ts, a));
        }) == "ctshard: aten.convolution_backward.default: argument 'transposed' is missing");
}

TEST_CASE("training rules: max pooling keeps the pooled dims whole", "[training]") {
  const OpRule f = rule_for(make_call("aten.max_pool2d_with_indices.default", {meta({4, 64, 112, 112})},
                                      {tensor_arg(0), ints_arg({3, 3}), ints_arg({2, 2}), ints_arg({1, 1})}));
  CHECK(f.rules.num_outputs() == 2);
  CHECK(rows_text(f.rules) == Rows{"S?(0),S?(0),S?(0)", "S?(1),S?(1),S?(1)"});
  CHECK(f.uneven_inputs == UnevenInputs::keep_existing_shards);
  CHECK(rows_text(rule_for(make_call("aten.max_pool2d_with_indices.default", {meta({3, 5, 5})}, {tensor_arg(0), ints_arg({2, 2})})).rules) ==
        Rows{"S?(0),S?(0),S?(0)"});
  // 3 channels laid out _S(1, 2) on 3 ranks leave one rank none; the kernel takes an empty batch but
  // raises on zero channels, so the layout is not kept (keep_existing_shards alone would keep it)
  const std::vector<TensorMeta> x{meta({2, 3, 7, 7})};
  const OpRule small =
      rule_for(make_call("aten.max_pool2d_with_indices.default", x, {tensor_arg(0), ints_arg({3, 3}), ints_arg({2, 2}), ints_arg({1, 1})}));
  FilterCounts counts;
  const auto kept = candidates(small, mesh_of({3}), x, {parse_spec("_S(1, 2)")}, &counts);
  CHECK(counts.op_filter > 0);
  CHECK_FALSE(has_output(kept, "_S(1, 2)"));
  // resnet50_bw: max_pool2d_with_indices_backward(add_189 [4, 64, 56, 56], relu [4, 64, 112, 112], [3, 3], [2, 2], [1, 1],
  // [1, 1], False, getitem_1 i64[4, 64, 56, 56])
  const std::vector<TensorMeta> ts{meta({4, 64, 56, 56}), meta({4, 64, 112, 112}), meta({4, 64, 56, 56}, 8)};
  const OpRule b = rule_for(make_call(
      "aten.max_pool2d_with_indices_backward.default", ts,
      {tensor_arg(0), tensor_arg(1), ints_arg({3, 3}), ints_arg({2, 2}), ints_arg({1, 1}), ints_arg({1, 1}), bool_arg(false), tensor_arg(2)}));
  CHECK(rows_text(b.rules) == Rows{"S?(0),S?(0),S?(0),S?(0)", "S?(1),S?(1),S?(1),S?(1)", "P(sum),P(sum),R,R", "P(avg),P(avg),R,R"});
  CHECK(b.uneven_inputs == UnevenInputs::reject);
  const auto c = chosen(b, mesh_of({2, 4}), ts, {parse_spec("S(0)S(1)"), parse_spec("S(0)S(1)"), parse_spec("S(0)S(1)")});
  CHECK(c.first == "S(0)S(1) | S(0)S(1) S(0)S(1) S(0)S(1)");
  CHECK(c.second == 0);
  CHECK(error_of([] {
          return rule_for(make_call("aten.max_pool2d_with_indices.default", {meta({4, 5})}, {tensor_arg(0), ints_arg({2, 2})}));
        }) == "ctshard: aten.max_pool2d_with_indices.default: argument 'self' must be [C, H, W] or [N, C, H, W]");
}

TEST_CASE("training rules: batch norm splits channels; batch and spatial dims only in eval mode", "[training]") {
  const auto x = meta({8, 64, 56, 56}), c = meta({64});
  const std::vector<TensorMeta> ts{x, c, c, c, c};
  std::vector<OpArg> args{tensor_arg(0), tensor_arg(1), tensor_arg(2), tensor_arg(3), tensor_arg(4), bool_arg(true), float_arg(0.1), float_arg(1e-5)};
  const OpRule train = rule_for(make_call("aten.native_batch_norm.default", ts, args));
  CHECK(train.rules.num_outputs() == 3);
  CHECK(rows_text(train.rules) == Rows{"S?(1),S?(0),S?(0),S?(1),S?(0),S?(0),S?(0),S?(0)"});
  CHECK(train.uneven_inputs == UnevenInputs::reject);
  // training statistics span the batch: a batch-sharded input has no batch-sharded output
  const auto moved = candidates(train, mesh_of({2}), ts, {parse_spec("S(0)"), parse_spec("R"), parse_spec("R"), parse_spec("R"), parse_spec("R")});
  CHECK_FALSE(has_output(moved, "S(0)"));
  args[5] = bool_arg(false);
  const OpRule eval = rule_for(make_call("aten.native_batch_norm.default", ts, args));
  CHECK(rows_text(eval.rules) ==
        Rows{"S?(1),S?(0),S?(0),S?(1),S?(0),S?(0),S?(0),S?(0)", "S?(0),R,R,S?(0),R,R,R,R", "S?(2),R,R,S?(2),R,R,R,R", "S?(3),R,R,S?(3),R,R,R,R"});
  const auto e = chosen(eval, mesh_of({4}), ts, {parse_spec("S(0)"), parse_spec("R"), parse_spec("R"), parse_spec("R"), parse_spec("R")});
  CHECK(e.first == "S(0) R R | S(0) R R R R");
  CHECK(e.second == 0);
  // no weight / bias: only the running statistics follow the channels
  const OpRule bare = rule_for(make_call("aten._native_batch_norm_legit_no_training.default", {meta({5, 4}), meta({4}), meta({4})},
                                         {tensor_arg(0), none_arg(), none_arg(), tensor_arg(1), tensor_arg(2), float_arg(0.1), float_arg(1e-5)}));
  CHECK(rows_text(bare.rules) == Rows{"S?(1),S?(0),S?(0),S?(1),S?(0),S?(0)", "S?(0),R,R,S?(0),R,R"});
  // 4 channels on 3 ranks chunk 2, 2, 0: the kernel divides by zero on the empty one
  FilterCounts counts;
  const auto three =
      candidates(bare, mesh_of({3}), {meta({5, 4}), meta({4}), meta({4})}, {parse_spec("S(1)"), parse_spec("S(0)"), parse_spec("S(0)")}, &counts);
  CHECK(counts.op_filter > 0);
  CHECK_FALSE(has_output(three, "S(1)"));
  // functional: the updated running statistics are outputs 3 and 4
  const OpRule fn = rule_for(
      make_call("aten._native_batch_norm_legit_functional.default", ts,
                {tensor_arg(0), tensor_arg(1), tensor_arg(2), tensor_arg(3), tensor_arg(4), bool_arg(true), float_arg(0.1), float_arg(1e-5)}));
  CHECK(fn.rules.num_outputs() == 5);
  CHECK(rows_text(fn.rules) == Rows{"S?(1),S?(0),S?(0),S?(0),S?(0),S?(1),S?(0),S?(0),S?(0),S?(0)"});
  CHECK(rows_text(rule_for(make_call("aten._native_batch_norm_legit.no_stats", {x, c, c},
                                     {tensor_arg(0), tensor_arg(1), tensor_arg(2), bool_arg(true), float_arg(0.1), float_arg(1e-5)}))
                      .rules) == Rows{"S?(1),S?(0),S?(0),S?(1),S?(0),S?(0)"});
  CHECK(error_of([&] {
          return rule_for(
              make_call("aten.native_batch_norm.default", {x, meta({32})},
                        {tensor_arg(0), tensor_arg(1), none_arg(), none_arg(), none_arg(), bool_arg(true), float_arg(0.1), float_arg(1e-5)}));
        }) == "ctshard: aten.native_batch_norm.default: argument 'weight' must be a vector of C = 64 elements");
  CHECK(error_of([&] {
          auto a = args;
          a.resize(5);
          return rule_for(make_call("aten.native_batch_norm.default", ts, a));
        }) == "ctshard: aten.native_batch_norm.default: argument 'training' is missing");
}

TEST_CASE("training rules: batch norm backward", "[training]") {
  const auto x = meta({8, 64, 56, 56}), c = meta({64});
  const std::vector<TensorMeta> ts{x, x, c, c, c, c, c};
  std::vector<OpArg> args{tensor_arg(0), tensor_arg(1), tensor_arg(2),  tensor_arg(3),   tensor_arg(4),
                          tensor_arg(5), tensor_arg(6), bool_arg(true), float_arg(1e-5), bools_arg({true, true, true})};
  const OpRule train = rule_for(make_call("aten.native_batch_norm_backward.default", ts, args));
  CHECK(rows_text(train.rules) == Rows{"S?(1),S?(0),S?(0),S?(1),S?(1),S?(0),S?(0),S?(0),S?(0),S?(0)", "P(sum),P(sum),P(sum),P(sum),R,R,R,R,R,R",
                                       "P(avg),P(avg),P(avg),P(avg),R,R,R,R,R,R"});
  CHECK(train.uneven_inputs == UnevenInputs::reject);
  // without grad_input, the weight / bias gradients are sums over the batch and spatial dims
  args[9] = bools_arg({false, true, true});
  const OpRule params = rule_for(make_call("aten.native_batch_norm_backward.default", ts, args));
  CHECK(rows_text(params.rules) == Rows{"R,S?(0),S?(0),S?(1),S?(1),S?(0),S?(0),S?(0),S?(0),S?(0)", "R,P(sum),P(sum),S?(0),S?(0),R,R,R,R,R",
                                        "R,P(sum),P(sum),S?(2),S?(2),R,R,R,R,R", "R,P(sum),P(sum),S?(3),S?(3),R,R,R,R,R",
                                        "R,P(sum),P(sum),P(sum),R,R,R,R,R,R", "R,P(avg),P(avg),P(avg),R,R,R,R,R,R"});
  const auto dp =
      chosen(params, mesh_of({4}), ts,
             {parse_spec("S(0)"), parse_spec("S(0)"), parse_spec("R"), parse_spec("R"), parse_spec("R"), parse_spec("R"), parse_spec("R")});
  CHECK(dp.first == "R P(sum) P(sum) | S(0) S(0) R R R R R");
  CHECK(dp.second == 0);
  // eval mode: empty save_mean / save_invstd stay replicated, batch and spatial rows give grad_input
  const std::vector<TensorMeta> ev{meta({5, 3, 4}), meta({5, 3, 4}), meta({3}), meta({3}), meta({3}), meta({0}), meta({0})};
  args[7] = bool_arg(false);
  args[9] = bools_arg({true, true, true});
  CHECK(rows_text(rule_for(make_call("aten.native_batch_norm_backward.default", ev, args)).rules) ==
        Rows{"S?(1),S?(0),S?(0),S?(1),S?(1),S?(0),S?(0),S?(0),R,R", "S?(0),P(sum),P(sum),S?(0),S?(0),R,R,R,R,R",
             "S?(2),P(sum),P(sum),S?(2),S?(2),R,R,R,R,R", "P(sum),P(sum),P(sum),P(sum),R,R,R,R,R,R", "P(avg),P(avg),P(avg),P(avg),R,R,R,R,R,R"});
  CHECK(error_of([&] {
          auto a = args;
          a[7] = int_arg(3);
          return rule_for(make_call("aten.native_batch_norm_backward.default", ts, a));
        }) == "ctshard: aten.native_batch_norm_backward.default: argument 'train' must be a bool");
}

TEST_CASE("training rules: nll_loss splits the batch only where the loss is a sum", "[training]") {
  const std::vector<TensorMeta> plain{meta({2048, 32000}), meta({2048}, 8)};
  auto fwd = [](std::vector<TensorMeta> ts, OpArg weight, std::int64_t reduction, std::int64_t ignore_index = -100) {
    return rule_for(make_call("aten.nll_loss_forward.default", std::move(ts),
                              {tensor_arg(0), tensor_arg(1), std::move(weight), int_arg(reduction), int_arg(ignore_index)}));
  };
  // mean: sum(w loss) / sum(w) of a batch shard is no Partial of the global mean (DTensor's P(avg) is not exact)
  const OpRule mean = fwd(plain, none_arg(), 1);
  CHECK(rows_text(mean.rules) == Rows{"P(sum),R,P(sum),R", "P(avg),R,P(avg),R"});
  CHECK(mean.rules.num_outputs() == 2);
  CHECK(mean.uneven_inputs == UnevenInputs::keep_existing_shards);
  const auto m = chosen(mean, mesh_of({4}), plain, {parse_spec("S(0)"), parse_spec("S(0)")});
  CHECK(m.first == "R R | R R");
  CHECK(m.second > 0);
  // sum: output and total_weight are sums over the samples
  const std::vector<TensorMeta> weighted{meta({2048, 32000}), meta({2048}, 8), meta({32000})};
  const OpRule sum = fwd(weighted, tensor_arg(2), 2);
  CHECK(rows_text(sum.rules) == Rows{"P(sum),P(sum),S?(0),S?(0),R", "P(sum),R,P(sum),R,R", "P(avg),R,P(avg),R,R"});
  const auto s = chosen(sum, mesh_of({4}), weighted, {parse_spec("S(0)"), parse_spec("S(0)"), parse_spec("R")});
  CHECK(s.first == "P(sum) P(sum) | S(0) S(0) R");
  CHECK(s.second == 0);
  CHECK(rows_text(fwd(plain, none_arg(), 0).rules) == Rows{"S?(0),R,S?(0),S?(0)", "P(sum),R,P(sum),R", "P(avg),R,P(avg),R"});
  CHECK(rows_text(fwd({meta({5}), meta({}, 8)}, none_arg(), 1).rules) == Rows{"P(sum),R,P(sum),R", "P(avg),R,P(avg),R"});

  // backward(grad_output, self, target, weight?, reduction, ignore_index, total_weight): the global total_weight keeps
  // per-sample gradients exact for mean
  auto bwd = [](std::vector<TensorMeta> ts, std::int64_t reduction) {
    return rule_for(make_call("aten.nll_loss_backward.default", std::move(ts),
                              {tensor_arg(0), tensor_arg(1), tensor_arg(2), none_arg(), int_arg(reduction), int_arg(-100), tensor_arg(3)}));
  };
  const std::vector<TensorMeta> b{meta({}), meta({2048, 32000}), meta({2048}, 8), meta({})};
  CHECK(rows_text(bwd(b, 1).rules) == Rows{"S?(0),R,S?(0),S?(0),R", "P(sum),P(sum),R,R,R", "P(avg),P(avg),R,R,R"});
  // sum and none do not read total_weight: every row lists each placement of it (it stays put)
  const auto unused_tw = [](std::string prefix, const std::string& first) {
    Rows rows{prefix + first};
    for (const char* p : {"R", "P(sum)", "P(avg)", "P(max)", "P(min)"})
      if (p != first) rows.push_back(prefix + p);
    return rows;
  };
  const auto concat = [](std::vector<Rows> parts) {
    Rows out;
    for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
    return out;
  };
  CHECK(rows_text(bwd(b, 2).rules) ==
        concat({unused_tw("S?(0),R,S?(0),S?(0),", "P(sum)"), unused_tw("P(sum),P(sum),R,R,", "R"), unused_tw("P(avg),P(avg),R,R,", "R"),
                Rows{"R,R,R,R,P(sum)", "R,R,R,R,P(avg)", "R,R,R,R,P(max)", "R,R,R,R,P(min)"}}));
  CHECK(rows_text(bwd({meta({2048}), meta({2048, 32000}), meta({2048}, 8), meta({})}, 0).rules) ==
        concat({unused_tw("S?(0),S?(0),S?(0),S?(0),", "R"), unused_tw("P(sum),P(sum),R,R,", "R"), unused_tw("P(avg),P(avg),R,R,", "R"),
                Rows{"R,R,R,R,P(sum)", "R,R,R,R,P(avg)", "R,R,R,R,P(max)", "R,R,R,R,P(min)"}}));
  // nll_loss_backward#5 of the conformance suite (none, 2x2): total_weight P(max)R stays, 0 us
  // (it was all-reduced for 12.0 us)
  const std::vector<TensorMeta> c5{meta({7}), meta({7, 3}), meta({7}, 8), meta({})};
  const auto kept = chosen(bwd(c5, 0), mesh_of({2, 2}), c5, {parse_spec("RS(0)"), parse_spec("RS(0)"), parse_spec("RS(0)"), parse_spec("P(max)R")});
  CHECK(kept.first == "RS(0) | RS(0) RS(0) RS(0) P(max)R");
  CHECK(kept.second == 0);
  CHECK(error_of([&] { return fwd(plain, none_arg(), 3); }) ==
        "ctshard: aten.nll_loss_forward.default: argument 'reduction' must be 0 (none), 1 (mean) or 2 (sum), got 3");
  CHECK(error_of([&] {
          return fwd({meta({8, 5}), meta({7}, 8)}, none_arg(), 1);
        }) == "ctshard: aten.nll_loss_forward.default: argument 'target' must be [N] for self [N, C], or 0-d for self [C]");
  CHECK(error_of([&] {
          return fwd({meta({2, 8, 5}), meta({2, 8}, 8)}, none_arg(), 1);
        }) == "ctshard: aten.nll_loss_forward.default: argument 'self' must be [N, C] or [C]");
}

TEST_CASE("training rules: fused RMS norm and apex layer norm backward", "[training]") {
  const auto x = meta({4, 2048, 1024}), w = meta({1024});
  const OpRule f = rule_for(make_call("aten._fused_rms_norm.default", {x, w}, {tensor_arg(0), ints_arg({1024}), tensor_arg(1), float_arg(1e-6)}));
  CHECK(f.rules.num_outputs() == 2);
  CHECK(rows_text(f.rules) == Rows{"S?(0),S?(0),S?(0),R", "S?(1),S?(1),S?(1),R"});
  CHECK(f.uneven_inputs == UnevenInputs::reject);
  const auto rstd = meta({4, 2048, 1});
  std::vector<OpArg> args{tensor_arg(0), tensor_arg(1), ints_arg({1024}), tensor_arg(2), tensor_arg(3), bools_arg({true, true})};
  const OpRule b = rule_for(make_call("aten._fused_rms_norm_backward.default", {x, x, rstd, w}, args));
  CHECK(rows_text(b.rules) ==
        Rows{"S?(0),P(sum),S?(0),S?(0),S?(0),R", "S?(1),P(sum),S?(1),S?(1),S?(1),R", "P(sum),P(sum),P(sum),R,R,R", "P(avg),P(avg),P(avg),R,R,R"});
  const auto c =
      chosen(b, mesh_of({2, 4}), {x, x, rstd, w}, {parse_spec("S(0)S(1)"), parse_spec("S(0)S(1)"), parse_spec("S(0)S(1)"), parse_spec("RR")});
  CHECK(c.first == "S(0)S(1) P(sum)P(sum) | S(0)S(1) S(0)S(1) S(0)S(1) RR");
  CHECK(c.second == 0);
  args[4] = none_arg();
  CHECK(rows_text(rule_for(make_call("aten._fused_rms_norm_backward.default", {x, x, rstd}, args)).rules) ==
        Rows{"S?(0),R,S?(0),S?(0),S?(0)", "S?(1),R,S?(1),S?(1),S?(1)", "P(sum),R,P(sum),R,R", "P(avg),R,P(avg),R,R"});
  args[5] = bools_arg({true});
  CHECK(error_of([&] {
          return rule_for(make_call("aten._fused_rms_norm_backward.default", {x, x, rstd}, args));
        }) == "ctshard: aten._fused_rms_norm_backward.default: argument 'output_mask' must hold 2 bools");
  CHECK(error_of([&] {
          return rule_for(make_call("aten._fused_rms_norm.default", {x, w}, {tensor_arg(0), ints_arg({512}), tensor_arg(1)}));
        }) == "ctshard: aten._fused_rms_norm.default: argument 'normalized_shape' does not match the input's trailing sizes");

  // apex fused_layer_norm_affine_bwd(grad_output, mean, invvar, input_or_output, normalized_shape, weight, bias, eps)
  // (Megatron: grad [1024, 32, 1536], mean / invvar f32[32768])
  const std::vector<TensorMeta> ts{meta({1024, 32, 1536}, 2), meta({32768}),   meta({32768}),
                                   meta({1024, 32, 1536}, 2), meta({1536}, 2), meta({1536}, 2)};
  const OpRule a = rule_for(
      make_call("apex.fused_layer_norm_affine_bwd.default", ts,
                {tensor_arg(0), tensor_arg(1), tensor_arg(2), tensor_arg(3), ints_arg({1536}), tensor_arg(4), tensor_arg(5), float_arg(1e-5)}));
  CHECK(rows_text(a.rules) ==
        Rows{"S?(0),P(sum),P(sum),S?(0),S?(0),S?(0),S?(0),R,R", "P(sum),P(sum),P(sum),P(sum),R,R,R,R,R", "P(avg),P(avg),P(avg),P(avg),R,R,R,R,R"});
  REQUIRE(a.filter);
  const std::vector<Spec> tp{parse_spec("S(0)"), parse_spec("S(0)"), parse_spec("S(0)"), parse_spec("S(0)"), parse_spec("R"), parse_spec("R")};
  const auto ac = chosen(a, mesh_of({8}), ts, tp);
  CHECK(ac.first == "S(0) P(sum) P(sum) | S(0) S(0) S(0) S(0) R R");
  CHECK(ac.second == 0);
  // 1024 rows on 3 ranks do not line up with the flattened statistics: filtered
  FilterCounts counts;
  (void)candidates(a, mesh_of({3}), ts, tp, &counts);
  CHECK(counts.op_filter > 0);
}

TEST_CASE("training rules: embedding bags, row-wise as a masked Partial", "[training]") {
  // dlrm_fw: _embedding_bag(primals_7 [1000000, 64], primals_8 i64[204790], select i64[2048], False, 0, True)
  const std::vector<TensorMeta> ts{meta({1000000, 64}), meta({204790}, 8), meta({2048}, 8)};
  const OpRule f = rule_for(
      make_call("aten._embedding_bag.default", ts, {tensor_arg(0), tensor_arg(1), tensor_arg(2), bool_arg(false), int_arg(0), bool_arg(true)}));
  CHECK(f.rules.num_outputs() == 4);
  CHECK(rows_text(f.rules) == Rows{"S?(1),R,R,R,S?(1),R,R", "P(sum),R,R,R,S?(0),R,R", "P(sum),R,R,R,P(sum),R,R", "P(avg),R,R,R,P(avg),R,R"});
  CHECK(f.uneven_inputs == UnevenInputs::reject);
  // a row-sharded table looks up without communication
  const auto c = chosen(f, mesh_of({8}), ts, {parse_spec("S(0)"), parse_spec("R"), parse_spec("R")});
  CHECK(c.first == "P(sum) R R R | S(0) R R");
  CHECK(c.second == 0);
  // mean: no masked row (the bag size is global); max: column-wise only, max_indices follow the columns
  CHECK(rows_text(rule_for(make_call("aten._embedding_bag.default", ts, {tensor_arg(0), tensor_arg(1), tensor_arg(2), bool_arg(false), int_arg(1)}))
                      .rules) == Rows{"S?(1),R,R,R,S?(1),R,R", "P(sum),R,R,R,P(sum),R,R", "P(avg),R,R,R,P(avg),R,R"});
  CHECK(rows_text(rule_for(make_call("aten._embedding_bag.default", ts, {tensor_arg(0), tensor_arg(1), tensor_arg(2), bool_arg(false), int_arg(2)}))
                      .rules) == Rows{"S?(1),R,R,S?(1),S?(1),R,R"});
  // per_sample_weights: linear in them too
  const std::vector<TensorMeta> psw{meta({100, 8}), meta({12}, 8), meta({4}, 8), meta({12})};
  CHECK(rows_text(rule_for(make_call("aten._embedding_bag.default", psw,
                                     {tensor_arg(0), tensor_arg(1), tensor_arg(2), bool_arg(false), int_arg(0), bool_arg(false), tensor_arg(3)}))
                      .rules) == Rows{"S?(1),R,R,R,S?(1),R,R,R", "P(sum),R,R,R,S?(0),R,R,R", "P(sum),R,R,R,P(sum),R,R,R", "P(avg),R,R,R,P(avg),R,R,R",
                                      "P(sum),R,R,R,R,R,R,P(sum)", "P(avg),R,R,R,R,R,R,P(avg)"});

  // dlrm_bw: _embedding_bag_backward(slice_11 [2048, 64], primals_22, select_7, getitem_29, getitem_30, getitem_31 i64[0],
  // 1000000, False, 0, True, None)
  const std::vector<TensorMeta> bt{meta({2048, 64}), meta({204792}, 8), meta({2048}, 8), meta({204792}, 8), meta({2048}, 8), meta({0}, 8)};
  const std::vector<OpArg> bargs{tensor_arg(0),    tensor_arg(1),   tensor_arg(2), tensor_arg(3),  tensor_arg(4), tensor_arg(5),
                                 int_arg(1000000), bool_arg(false), int_arg(0),    bool_arg(true), none_arg()};
  const OpRule b = rule_for(make_call("aten._embedding_bag_backward.default", bt, bargs));
  CHECK(rows_text(b.rules) == Rows{"S?(1),S?(1),R,R,R,R,R", "P(sum),P(sum),R,R,R,R,R", "P(avg),P(avg),R,R,R,R,R"});
  CHECK(b.uneven_inputs == UnevenInputs::reject);
  const auto bc =
      chosen(b, mesh_of({8}), bt, {parse_spec("S(1)"), parse_spec("R"), parse_spec("R"), parse_spec("R"), parse_spec("R"), parse_spec("R")});
  CHECK(bc.first == "S(1) | S(1) R R R R R");
  CHECK(bc.second == 0);

  CHECK(error_of([] {
          return rule_for(make_call("aten._embedding_bag.default", {meta({10, 4}), meta({3, 2}, 8), meta({3}, 8)},
                                    {tensor_arg(0), tensor_arg(1), tensor_arg(2)}));
        }) == "ctshard: aten._embedding_bag.default: argument 'indices' must be 1-D (embedding_bag flattens a 2-D input and builds its offsets)");
  CHECK(error_of([&] {
          return rule_for(make_call("aten._embedding_bag.default", psw,
                                    {tensor_arg(0), tensor_arg(1), tensor_arg(2), bool_arg(false), int_arg(1), bool_arg(false), tensor_arg(3)}));
        }) == "ctshard: aten._embedding_bag.default: argument 'per_sample_weights' is supported only with mode 0 (sum)");
  CHECK(error_of([&] {
          auto a = bargs;
          a[8] = int_arg(5);
          return rule_for(make_call("aten._embedding_bag_backward.default", bt, a));
        }) == "ctshard: aten._embedding_bag_backward.default: argument 'mode' must be 0 (sum), 1 (mean) or 2 (max), got 5");
}

TEST_CASE("training rules: grouped_mm follows DTensor, with the kernel's alignment as a filter", "[training]") {
  // qwen3_moe_fw: _grouped_mm(where_1 bf16[16384, 2048], permute_10 bf16[128, 2048, 1536], cumsum_1 i32[128])
  const std::vector<TensorMeta> ts{meta({16384, 2048}, 2), meta({128, 2048, 1536}, 2), meta({128}, 4)};
  const OpRule r = rule_for(make_call("aten._grouped_mm.default", ts, {tensor_arg(0), tensor_arg(1), tensor_arg(2)}));
  CHECK(rows_text(r.rules) ==
        Rows{"P(sum),P(sum),R,R", "P(sum),R,P(sum),R", "S?(1),R,S?(2),R", "P(sum),S?(1),S?(1),R", "P(avg),P(avg),R,R", "P(avg),R,P(avg),R"});
  CHECK(r.uneven_inputs == UnevenInputs::keep_existing_shards);
  REQUIRE(r.filter);
  // column-wise experts (N split) need no communication
  const auto col = chosen(r, mesh_of({4}), ts, {parse_spec("R"), parse_spec("S(2)"), parse_spec("R")});
  CHECK(col.first == "S(1) | R S(2) R");
  CHECK(col.second == 0);
  // expert-sharded weights are no local row: the experts are gathered
  const auto ep = chosen(r, mesh_of({4}), ts, {parse_spec("R"), parse_spec("S(0)"), parse_spec("R")});
  CHECK(ep.second > 0);
  // K = 2048 on 3 ranks: pieces of 683 / 682 bf16 elements break the kernel's 16-byte alignment
  FilterCounts counts;
  const auto three = candidates(r, mesh_of({3}), ts, {parse_spec("S(1)"), parse_spec("S(1)"), parse_spec("R")}, &counts);
  CHECK(counts.op_filter > 0);
  CHECK(std::find(three.begin(), three.end(), "P(sum) | S(1) S(1) R") == three.end());
  const auto four = candidates(r, mesh_of({4}), ts, {parse_spec("S(1)"), parse_spec("S(1)"), parse_spec("R")});
  CHECK(std::find(four.begin(), four.end(), "P(sum) | S(1) S(1) R") != four.end());
  // 3d x 3d (no offs) and 2d x 2d
  CHECK(rows_text(rule_for(make_call("aten._grouped_mm.default", {meta({8, 64, 32}), meta({8, 32, 16})}, {tensor_arg(0), tensor_arg(1)})).rules) ==
        Rows{"P(sum),P(sum),R", "P(sum),R,P(sum)", "S?(2),R,S?(2)", "S?(1),S?(1),R", "P(sum),S?(2),S?(1)", "S?(0),S?(0),S?(0)", "P(avg),P(avg),R",
             "P(avg),R,P(avg)"});
  CHECK(rows_text(rule_for(make_call("aten._grouped_mm.default", {meta({64, 256}), meta({256, 32}), meta({4}, 4)},
                                     {tensor_arg(0), tensor_arg(1), tensor_arg(2)}))
                      .rules) ==
        Rows{"P(sum),P(sum),R,R", "P(sum),R,P(sum),R", "S?(2),R,S?(1),R", "S?(1),S?(0),R,R", "P(avg),P(avg),R,R", "P(avg),R,P(avg),R"});
  CHECK(error_of([&] {
          return rule_for(make_call("aten._grouped_mm.default", {meta({16, 8}), meta({4, 8, 12}), meta({4}, 4), meta({12})},
                                    {tensor_arg(0), tensor_arg(1), tensor_arg(2), tensor_arg(3)}));
        }) == "ctshard: aten._grouped_mm.default: argument 'bias' is not supported (DTensor 2.13 rejects it too)");
  CHECK(error_of([&] {
          return rule_for(make_call("aten._grouped_mm.default", {meta({16, 8}), meta({4, 8, 12})}, {tensor_arg(0), tensor_arg(1)}));
        }) == "ctshard: aten._grouped_mm.default: argument 'offs' is required when mat2 or self is 2-D");
  CHECK(error_of([&] {
          return rule_for(
              make_call("aten._grouped_mm.default", {meta({16}), meta({16, 8}), meta({4}, 4)}, {tensor_arg(0), tensor_arg(1), tensor_arg(2)}));
        }) == "ctshard: aten._grouped_mm.default: ctshard::grouped_mm_single_dim_strategy: mat_a and mat_b must be 2-d or 3-d, got ranks 1 and 2");
}

TEST_CASE("training rules: cumsum, sort, topk and histc", "[training]") {
  // qwen3_moe_fw: cumsum(ne i64[4, 512], -1)
  const OpRule scan = rule_for(make_call("aten.cumsum.default", {meta({4, 512}, 8)}, {tensor_arg(0), int_arg(-1)}));
  CHECK(rows_text(scan.rules) == Rows{"S?(0),S?(0)", "P(sum),P(sum)", "P(avg),P(avg)"});
  CHECK(scan.uneven_inputs == UnevenInputs::keep_existing_shards);
  // cumsum(histc i32[128], 0, dtype=torch.int32): an integer cast does not commute with a pending sum
  const OpRule counts =
      rule_for(make_call("aten.cumsum.default", {meta({128}, 4)}, {tensor_arg(0), int_arg(0)}, {{"dtype", text_arg("torch.int32")}}));
  CHECK(counts.rules.empty());
  CHECK(rows_text(
            rule_for(make_call("aten.cumsum.default", {meta({128})}, {tensor_arg(0), int_arg(0)}, {{"dtype", text_arg("torch.float32")}})).rules) ==
        Rows{"P(sum),P(sum)", "P(avg),P(avg)"});
  // topk(div [2048, 128], 8) -> (values, indices): the scored dim stays whole
  const OpRule topk = rule_for(make_call("aten.topk.default", {meta({2048, 128})}, {tensor_arg(0), int_arg(8)}));
  CHECK(topk.rules.num_outputs() == 2);
  CHECK(rows_text(topk.rules) == Rows{"S?(0),S?(0),S?(0)"});
  const auto t = chosen(topk, mesh_of({8}), {meta({2048, 128})}, {parse_spec("S(0)")});
  CHECK(t.first == "S(0) S(0) | S(0)");
  CHECK(t.second == 0);
  CHECK(rows_text(rule_for(make_call("aten.topk.default", {meta({5, 4, 3})}, {tensor_arg(0), int_arg(2), int_arg(1)})).rules) ==
        Rows{"S?(0),S?(0),S?(0)", "S?(2),S?(2),S?(2)"});
  // sort(view_21 i64[16384]): a 1-d sort has nothing to split
  CHECK(rule_for(make_call("aten.sort.default", {meta({16384}, 8)}, {tensor_arg(0)})).rules.empty());
  CHECK(
      rows_text(rule_for(make_call("aten.sort.stable", {meta({4, 6})}, {tensor_arg(0)}, {{"stable", bool_arg(true)}, {"dim", int_arg(0)}})).rules) ==
      Rows{"S?(1),S?(1),S?(1)"});
  // histc(convert_element_type_23 i32[16384], 128, 0, 127): counts of any split are partial sums
  const OpRule h = rule_for(make_call("aten.histc.default", {meta({16384}, 4)}, {tensor_arg(0), int_arg(128), int_arg(0), int_arg(127)}));
  CHECK(rows_text(h.rules) == Rows{"P(sum),S?(0)"});
  const auto hc = chosen(h, mesh_of({2, 4}), {meta({16384}, 4)}, {parse_spec("S(0)S(0)")});
  CHECK(hc.first == "P(sum)P(sum) | S(0)S(0)");
  CHECK(hc.second == 0);
  // min = max = 0 takes the range from the data, which differs per shard: no row (DTensor keeps them when passed)
  CHECK(rule_for(make_call("aten.histc.default", {meta({3, 5})}, {tensor_arg(0), int_arg(4), int_arg(0), int_arg(0)})).rules.empty());
  CHECK(rule_for(make_call("aten.histc.default", {meta({3, 5})}, {tensor_arg(0)})).rules.empty());
  CHECK(error_of([] {
          return rule_for(make_call("aten.histc.default", {meta({3, 5})}, {tensor_arg(0), int_arg(4), float_arg(1.0), float_arg(-1.0)}));
        }) == "ctshard: aten.histc.default: argument 'max' must not be below 'min'");
  CHECK(error_of([] {
          return rule_for(make_call("aten.topk.default", {meta({3, 5})}, {tensor_arg(0)}));
        }) == "ctshard: aten.topk.default: argument 'k' is missing");
  STATIC_REQUIRE(histc_single_dim_strategy(2, HistogramRange::given).size() == 2);
  STATIC_REQUIRE(sort_single_dim_strategy(3, 1).size() == 2);
  STATIC_REQUIRE(gather_single_dim_strategy(TensorShape{4, 6}, 1, TensorShape{4, 1}).size() == 7);
}
