// Embedding, advanced indexing, convolution, attention, dropout and equal: exact rows, output
// counts, full-mesh filter effects and DTensor-like choices through StrategyEnumerator, errors.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "op_call_builders.hpp"

using namespace ctshard;
using namespace ctshard::test;
using Rows = std::vector<std::string>;

TEST_CASE("nn rules: embedding column-, row- (masked P(sum)) and batch-wise", "[nn]") {
  const auto w = meta({98304, 768}), idx = meta({8, 1536}, 8);
  const OpRule r = rule_for(make_call("aten.embedding.default", {w, idx}, {tensor_arg(0), tensor_arg(1)}));
  CHECK(rows_text(r.rules) == Rows{"S?(2),S?(1),R", "P(sum),S?(0),R", "S?(0),R,S?(0)", "S?(1),R,S?(1)"});
  // a row-sharded table needs no communication before the lookup
  const auto c = chosen(r, mesh_of({2, 4}), {w, idx}, {parse_spec("S(0)R"), parse_spec("RS(1)")});
  CHECK(c.first == "P(sum)S(1) | S(0)R RS(1)");
  CHECK(c.second == 0);
}

TEST_CASE("nn rules: embedding_dense_backward, and no batch rows with scale_grad_by_freq", "[nn]") {
  const auto g = meta({8, 16, 32}), idx = meta({8, 16}, 8);
  auto call =
      make_call("aten.embedding_dense_backward.default", {g, idx}, {tensor_arg(0), tensor_arg(1), int_arg(100), int_arg(-1), bool_arg(false)});
  CHECK(rows_text(rule_for(call).rules) == Rows{"S?(1),S?(2),R", "P(sum),S?(0),S?(0)", "P(sum),S?(1),S?(1)", "P(sum),P(sum),R"});
  call.args[4] = bool_arg(true);
  CHECK(rows_text(rule_for(call).rules) == Rows{"S?(1),S?(2),R", "P(sum),P(sum),R"});
}

TEST_CASE("nn rules: index.Tensor layouts (adjacent, None holes, separated indices)", "[nn]") {
  // GPT: index(primals_1 [98304, 768], [_to_copy i64[8, 1536]]) -> [8, 1536, 768]
  const OpRule gather = rule_for(make_call("aten.index.Tensor", {meta({98304, 768}), meta({8, 1536}, 8)}, {tensor_arg(0), tensors_arg({1})}));
  CHECK(rows_text(gather.rules) == Rows{"S?(2),S?(1),R", "S?(0),R,S?(0)", "S?(1),R,S?(1)", "P(sum),P(sum),R", "P(avg),P(avg),R"});
  CHECK(gather.rules.rank(0) == 3);
  // GPT: index(view_30 [12288, 98304], [arange i64[12288], view_31 i64[12288]]) -> [12288]
  const OpRule pick =
      rule_for(make_call("aten.index.Tensor", {meta({12288, 98304}), meta({12288}, 8), meta({12288}, 8)}, {tensor_arg(0), tensors_arg({1, 2})}));
  CHECK(rows_text(pick.rules) == Rows{"S?(0),R,S?(0),S?(0)", "P(sum),P(sum),R,R", "P(avg),P(avg),R,R"});
  // x[:, idx] -> [4, 3, 6]: index dims inserted at the index's place
  const OpRule hole =
      rule_for(make_call("aten.index.Tensor", {meta({4, 5, 6}), meta({3}, 8)}, {tensor_arg(0), list_arg({none_arg(), tensor_arg(1)})}));
  CHECK(rows_text(hole.rules) == Rows{"S?(0),S?(0),R", "S?(2),S?(2),R", "S?(1),R,S?(0)", "P(sum),P(sum),R", "P(avg),P(avg),R"});
  // x[a, :, b] -> [3, 5]: separated index tensors put the index dims first
  const OpRule split = rule_for(make_call("aten.index.Tensor", {meta({4, 5, 6}), meta({3}, 8), meta({1}, 8)},
                                          {tensor_arg(0), list_arg({tensor_arg(1), none_arg(), tensor_arg(2)})}));
  CHECK(rows_text(split.rules) == Rows{"S?(1),S?(1),R,R", "S?(0),R,S?(0),R", "P(sum),P(sum),R,R", "P(avg),P(avg),R,R"});
}

TEST_CASE("nn rules: index_put with a boolean mask is elementwise over the mask's dims", "[nn]") {
  // GPT: index_put(sub_1 i64[1536, 8], [bitwise_or b8[1536, 8]], lift_fresh_copy i64[])
  const std::vector<TensorMeta> ts{meta({1536, 8}, 8), meta({1536, 8}, 1), meta({}, 8)};
  const OpRule r = rule_for(make_call("aten.index_put.default", ts, {tensor_arg(0), tensors_arg({1}), tensor_arg(2)}));
  CHECK(rows_text(r.rules) == Rows{"S?(0),S?(0),S?(0),R", "S?(1),S?(1),S?(1),R", "P(sum),P(sum),R,P(sum)"});
  const auto c = chosen(r, mesh_of({2}), ts, {parse_spec("S(1)"), parse_spec("S(1)"), parse_spec("R")});
  CHECK(c.first == "S(1) | S(1) S(1) R");
  CHECK(c.second == 0);
  // GPT tp2: index_put(slice_1 [8, 1536, 768], [mask b8[8, 1536]], f32[]) keeps the trailing dim shardable too
  const OpRule t = rule_for(
      make_call("aten.index_put.default", {meta({8, 1536, 768}), meta({8, 1536}, 1), meta({})}, {tensor_arg(0), tensors_arg({1}), tensor_arg(2)}));
  CHECK(rows_text(t.rules) == Rows{"S?(2),S?(2),R,R", "S?(0),S?(0),S?(0),R", "S?(1),S?(1),S?(1),R", "P(sum),P(sum),R,P(sum)"});
  // integer index: values follow self on the non-indexed dim; no index sharding
  const OpRule i = rule_for(make_call("aten.index_put.default", {meta({10, 4}), meta({3}, 8), meta({3, 4})},
                                      {tensor_arg(0), tensors_arg({1}), tensor_arg(2), bool_arg(true)}));
  CHECK(rows_text(i.rules) == Rows{"S?(1),S?(1),R,S?(1)", "P(sum),P(sum),R,P(sum)"});
}

TEST_CASE("nn rules: convolution batch, last-dim (filtered), and channel rows", "[nn]") {
  // ViT patch embedding: convolution(x [8, 3, 224, 224], w [768, 3, 16, 16], b [768], [16, 16], [0, 0], [1, 1], False, [0, 0], 1)
  const std::vector<TensorMeta> ts{meta({8, 3, 224, 224}), meta({768, 3, 16, 16}), meta({768})};
  const std::vector<OpArg> args{tensor_arg(0),    tensor_arg(1),   tensor_arg(2),    ints_arg({16, 16}), ints_arg({0, 0}),
                                ints_arg({1, 1}), bool_arg(false), ints_arg({0, 0}), int_arg(1)};
  const OpRule r = rule_for(make_call("aten.convolution.default", ts, args));
  CHECK(rows_text(r.rules) == Rows{"S?(0),S?(0),R,R", "S?(3),S?(3),R,R", "S?(1),R,S?(0),S?(0)", "P(sum),S?(1),S?(1),P(sum)"});
  REQUIRE(r.filter);
  const std::vector<Spec> last{parse_spec("S(3)"), parse_spec("R"), parse_spec("R")};
  FilterCounts counts;
  // 224 columns on 4 ranks: 56 per rank is not a whole number of 16-wide windows
  const auto four = candidates(r, mesh_of({4}), ts, last, &counts);
  CHECK(counts.op_filter == 1);
  CHECK(std::find(four.begin(), four.end(), "S(3) | S(3) R R") == four.end());
  const auto two = candidates(r, mesh_of({2}), ts, last, &counts);
  CHECK(counts.op_filter == 0);
  CHECK(std::find(two.begin(), two.end(), "S(3) | S(3) R R") != two.end());
  // out-channel sharding of the weight costs nothing
  const auto oc = chosen(r, mesh_of({2}), ts, {parse_spec("R"), parse_spec("S(0)"), parse_spec("S(0)")});
  CHECK(oc.first == "S(1) | R S(0) S(0)");
  CHECK(oc.second == 0);

  // transposed: weight [C_in, C_out, k]; grouped: only the batch row
  const OpRule tr = rule_for(
      make_call("aten.convolution.default", {meta({2, 4, 8}), meta({4, 6, 3})},
                {tensor_arg(0), tensor_arg(1), none_arg(), ints_arg({1}), ints_arg({0}), ints_arg({1}), bool_arg(true), ints_arg({0}), int_arg(1)}));
  CHECK(rows_text(tr.rules) == Rows{"S?(0),S?(0),R", "S?(1),R,S?(1)", "P(sum),S?(1),S?(0)"});
  const OpRule gr = rule_for(
      make_call("aten.convolution.default", {meta({2, 4, 8}), meta({6, 2, 3})},
                {tensor_arg(0), tensor_arg(1), none_arg(), ints_arg({1}), ints_arg({0}), ints_arg({1}), bool_arg(false), ints_arg({0}), int_arg(2)}));
  CHECK(rows_text(gr.rules) == Rows{"S?(0),S?(0),R"});
  CHECK(error_of([&] {
          auto a = args;
          a.pop_back();
          return rule_for(make_call("aten.convolution.default", ts, a));
        }) == "ctshard: aten.convolution.default: argument 'groups' is missing");
}

TEST_CASE("nn rules: attention kernels shard heads and batch", "[nn]") {
  const auto q = meta({8, 12, 197, 64});
  // ViT: _scaled_dot_product_efficient_attention(q, k, v, None, False) -> (out, logsumexp, philox_seed, philox_offset)
  const OpRule e = rule_for(make_call("aten._scaled_dot_product_efficient_attention.default", {q, q, q},
                                      {tensor_arg(0), tensor_arg(1), tensor_arg(2), none_arg(), bool_arg(false)}));
  CHECK(e.rules.num_outputs() == 4);
  CHECK(rows_text(e.rules) == Rows{"S?(1),R,R,R,S?(1),S?(1),S?(1)", "S?(0),R,R,R,S?(0),S?(0),S?(0)"});
  // logsumexp computed; a bias broadcast over batch and heads stays replicated
  const OpRule b = rule_for(make_call("aten._scaled_dot_product_efficient_attention.default", {q, q, q, meta({1, 1, 197, 197})},
                                      {tensor_arg(0), tensor_arg(1), tensor_arg(2), tensor_arg(3), bool_arg(true)}));
  CHECK(rows_text(b.rules) == Rows{"S?(1),S?(1),R,R,S?(1),S?(1),S?(1),R", "S?(0),S?(0),R,R,S?(0),S?(0),S?(0),R"});
  const OpRule fb = rule_for(make_call("aten._scaled_dot_product_efficient_attention.default", {q, q, q, meta({8, 12, 197, 197})},
                                       {tensor_arg(0), tensor_arg(1), tensor_arg(2), tensor_arg(3), bool_arg(true)}));
  CHECK(rows_text(fb.rules)[0] == "S?(1),S?(1),R,R,S?(1),S?(1),S?(1),S?(1)");
  // backward: (grad_out, q, k, v, bias?, out, logsumexp, philox_seed, philox_offset, dropout_p, grad_input_mask, ...)
  const auto lse = meta({8, 12, 224}), seed = meta({}, 8);
  const OpRule eb = rule_for(make_call("aten._scaled_dot_product_efficient_attention_backward.default", {q, q, q, q, q, lse, seed, seed},
                                       {tensor_arg(0), tensor_arg(1), tensor_arg(2), tensor_arg(3), none_arg(), tensor_arg(4), tensor_arg(5),
                                        tensor_arg(6), tensor_arg(7), float_arg(0.0), bools_arg({true, true, true, false})}));
  CHECK(eb.rules.num_outputs() == 4);
  CHECK(rows_text(eb.rules)[0] == "S?(1),S?(1),S?(1),R,S?(1),S?(1),S?(1),S?(1),S?(1),S?(1),R,R");
  // flash: 9 outputs (out, logsumexp, cum_seq_q, cum_seq_k, max_q, max_k, rng_state, unused, debug_attn_mask)
  const OpRule f = rule_for(make_call("aten._scaled_dot_product_flash_attention.default", {q, q, q},
                                      {tensor_arg(0), tensor_arg(1), tensor_arg(2), float_arg(0.0), bool_arg(true), bool_arg(false)}));
  CHECK(f.rules.num_outputs() == 9);
  CHECK(rows_text(f.rules)[1] == "S?(0),S?(0),R,R,R,R,R,R,R,S?(0),S?(0),S?(0)");
  // a head-sharded q/k/v pair needs no communication
  const auto c = chosen(e, mesh_of({4}), {q, q, q}, {parse_spec("S(1)"), parse_spec("S(1)"), parse_spec("S(1)")});
  CHECK(c.first == "S(1) R R R | S(1) S(1) S(1)");
  CHECK(c.second == 0);
}

TEST_CASE("nn rules: dropout follows shards but never takes a Partial input", "[nn]") {
  const auto x = meta({4, 6});
  const OpRule d = rule_for(make_call("aten.native_dropout.default", {x}, {tensor_arg(0), float_arg(0.1), bool_arg(true)}));
  CHECK(d.rules.num_outputs() == 2);
  CHECK(rows_text(d.rules) == Rows{"S?(0),S?(0),S?(0)", "S?(1),S?(1),S?(1)"});
  CHECK(d.uneven_inputs == UnevenInputs::keep_current);
  const auto c = chosen(d, mesh_of({2}), {x}, {parse_spec("P(sum)")});
  CHECK(c.first == "S(0) S(0) | S(0)");  // reduced first, by a reduce-scatter (R15)
  CHECK(c.second == Approx(redistribute_cost(parse_spec("P(sum)"), parse_spec("S(0)"), x, mesh_of({2}))));
  CHECK(c.second > 0);
  const OpRule b = rule_for(make_call("aten.native_dropout_backward.default", {x, meta({4, 6}, 1)}, {tensor_arg(0), tensor_arg(1), float_arg(1.1)}));
  CHECK(rows_text(b.rules) == Rows{"S?(0),S?(0),S?(0)", "S?(1),S?(1),S?(1)", "P(sum),P(sum),R", "P(avg),P(avg),R"});
}

TEST_CASE("nn rules: equal compares identical layouts and never shards a 0-d tensor (B05)", "[nn]") {
  const OpRule b05 = rule_for(make_call("aten.equal.default", {meta({4}), meta({})}, {tensor_arg(0), tensor_arg(1)}));
  CHECK(b05.rules.empty());
  CHECK(chosen(b05, mesh_of({4}), {meta({4}), meta({})}, {parse_spec("S(0)"), parse_spec("R")}).first == "R | R R");
  const std::vector<TensorMeta> ts{meta({4, 4}), meta({4, 4})};
  const OpRule r = rule_for(make_call("aten.equal.default", ts, {tensor_arg(0), tensor_arg(1)}));
  CHECK(rows_text(r.rules) == Rows{"R,S?(0),S?(0)", "R,S?(1),S?(1)"});
  const auto c = chosen(r, mesh_of({2}), ts, {parse_spec("S(0)"), parse_spec("R")});
  CHECK(c.first == "R | S(0) S(0)");
  CHECK(c.second == 0);
  CHECK(chosen(r, mesh_of({2}), ts, {parse_spec("P(sum)"), parse_spec("P(sum)")}).first == "R | S(0) S(0)");  // reduce-scattered (R15)
}

TEST_CASE("nn rules: bad index and embedding arguments", "[nn]") {
  CHECK(error_of([] {
          return rule_for(
              make_call("aten.index.Tensor", {meta({4, 5}), meta({3}, 8), meta({3}, 8), meta({3}, 8)}, {tensor_arg(0), tensors_arg({1, 2, 3})}));
        }) == "ctshard::index_layout: the indices consume 3 dims of a rank-2 tensor");
  CHECK(error_of([] {
          return rule_for(make_call("aten.index.Tensor", {meta({4, 5}), meta({4}, 1), meta({3}, 8)}, {tensor_arg(0), tensors_arg({1, 2})}));
        }) == "ctshard::index_layout: a boolean mask combined with other index tensors is not supported");
  CHECK(error_of([] {
          return rule_for(make_call("aten.index.Tensor", {meta({4, 5})}, {tensor_arg(0), list_arg({none_arg(), int_arg(3)})}));
        }) == "ctshard: aten.index.Tensor: argument 'indices' has an item (1) that is neither a tensor nor None");
  CHECK(error_of([] {
          return rule_for(make_call("aten.embedding.default", {meta({4, 5, 6}), meta({3}, 8)}, {tensor_arg(0), tensor_arg(1)}));
        }) == "ctshard: aten.embedding.default: argument 'weight' must be 2-D");
  STATIC_REQUIRE(embedding_single_dim_strategy(2).size() == 4);
  STATIC_REQUIRE(equal_single_dim_strategy(TensorShape{4}, TensorShape{}).empty());
}
