// Layout ops (as_strided, as_strided_scatter, constant_pad_nd, roll, select_scatter, FFT,
// view_as_real / view_as_complex), ops found falling back in real graphs (new_empty_strided, iota,
// scalar_tensor, div.Tensor_mode, _unsafe_index_put) and random ops: exact rows, UnevenInputs,
// filters, choices and error messages.
#include <catch2/catch.hpp>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "ctshard/registry.hpp"
#include "op_call_builders.hpp"

using namespace ctshard;
using namespace ctshard::test;
using Rows = std::vector<std::string>;

namespace {

/// One call with `shapes` as positional tensor arguments followed by `rest` (the FX order).
OpCall call(std::string op, std::vector<TensorMeta> tensors, std::vector<OpArg> rest, std::vector<std::pair<std::string, OpArg>> kwargs = {}) {
  std::vector<OpArg> args;
  for (std::size_t i = 0; i < tensors.size(); ++i) args.push_back(tensor_arg(static_cast<std::int64_t>(i)));
  for (auto& a : rest) args.push_back(std::move(a));
  return make_call(std::move(op), std::move(tensors), std::move(args), std::move(kwargs));
}

Rows rules_text(const OpCall& c) { return rows_text(rule_for(c).rules); }

Rows plus(Rows a, const Rows& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}
const Rows partials2{"P(sum),P(sum)", "P(avg),P(avg)", "P(max),P(max)", "P(min),P(min)"};

}  // namespace

// The generators are constant expressions.
static_assert(roll_single_dim_strategy(TensorShape{4, 6}, std::array<std::int64_t, 1>{2}, std::array<std::int64_t, 1>{1}).size() == 5);
static_assert(padded_dims(3, std::array<std::int64_t, 4>{0, 0, 1, 0}) == 0b010);
static_assert(constant_pad_nd_single_dim_strategy(TensorShape{4, 6}, std::array<std::int64_t, 2>{1, 1}, PadValue::nonzero).size() == 4);
static_assert(constant_pad_nd_single_dim_strategy(TensorShape{4, 6}, std::array<std::int64_t, 2>{1, 1}, PadValue::zero).size() == 5);
static_assert(is_contiguous_stride(std::array<std::int64_t, 3>{2, 3, 4}, std::array<std::int64_t, 3>{12, 4, 1}));
static_assert(is_contiguous_stride(std::array<std::int64_t, 2>{1, 4}, std::array<std::int64_t, 2>{99, 1}));  // size-1 strides ignored
static_assert(!as_strided_is_view(24, std::array<std::int64_t, 2>{3, 3}, std::array<std::int64_t, 2>{6, 1}, 0));

TEST_CASE("layout rules: as_strided is the view it spells, else positional", "[layout]") {
  // t5: a flat buffer read as [8, 1024, 1024] with contiguous strides is view(8388608 -> 8x1024x1024).
  const OpCall flat = call("aten.as_strided.default", {meta({8388608})}, {ints_arg({8, 1024, 1024}), ints_arg({1048576, 1024, 1}), int_arg(0)});
  const OpRule r = rule_for(flat);
  CHECK(rows_text(r.rules) == plus({"S?(0),S?(0)"}, partials2));
  CHECK(r.uneven_inputs == UnevenInputs::keep_existing_shards);
  REQUIRE(r.filter);  // the view's evenness check
  CHECK(chosen(r, mesh_of({2, 4}), flat.tensors, {parse_spec("S(0)R")}) == std::pair<std::string, double>{"S(0)R | S(0)R", 0.0});
  // [8, 1024, 1024] -> [1, 8, 1024, 1024]: every dim kept, a StridedShard too
  const OpCall lead =
      call("aten.as_strided.default", {meta({8, 1024, 1024})}, {ints_arg({1, 8, 1024, 1024}), ints_arg({8388608, 1048576, 1024, 1}), int_arg(0)});
  CHECK(rows_text(rule_for(lead).rules) == plus({"S?(1),S?(0)", "S?(2),S?(1)", "S?(3),S?(2)"}, partials2));
  CHECK(chosen(rule_for(lead), mesh_of({2}), lead.tensors, {parse_spec("_S(1, 2)")}) == std::pair<std::string, double>{"_S(2, 2) | _S(1, 2)", 0.0});
  // a window, a transposing stride or an offset read global positions: Partials only
  for (const OpCall& c : {call("aten.as_strided.default", {meta({4, 6})}, {ints_arg({3, 3}), ints_arg({6, 1}), int_arg(0)}),
                          call("aten.as_strided.default", {meta({4, 6})}, {ints_arg({6, 4}), ints_arg({1, 6}), int_arg(0)}),
                          call("aten.as_strided.default", {meta({8})}, {ints_arg({4}), ints_arg({1}), int_arg(4)})}) {
    CHECK(rules_text(c) == partials2);
    CHECK(chosen(rule_for(c), mesh_of({2}), c.tensors, {parse_spec("S(0)")}).first == "R | R");
  }
  // storage_offset may be omitted or None
  CHECK(rules_text(call("aten.as_strided.default", {meta({6})}, {ints_arg({2, 3}), ints_arg({3, 1})})) == plus({"S?(0),S?(0)"}, partials2));
  CHECK(error_of([] {
          return rule_for(call("aten.as_strided.default", {meta({6})}, {ints_arg({2, 3}), ints_arg({1})}));
        }) == "ctshard: aten.as_strided.default: argument 'stride' has 1 entries for 2 sizes");
  CHECK(error_of([] { return rule_for(call("aten.as_strided.default", {meta({6})}, {ints_arg({6})})); }) ==
        "ctshard: aten.as_strided.default: argument 'stride' is missing");
}

TEST_CASE("layout rules: as_strided_scatter covering its input is src viewed as the input", "[layout]") {
  // t5: as_strided_scatter(full [8388608], copy [8, 1024, 1024], [8, 1024, 1024], contiguous, 0)
  const OpCall fill = call("aten.as_strided_scatter.default", {meta({8388608}), meta({8, 1024, 1024})},
                           {ints_arg({8, 1024, 1024}), ints_arg({1048576, 1024, 1}), int_arg(0)});
  const OpRule r = rule_for(fill);
  // src flattens into out: its dim 0 stays Shard, its inner dims become StridedShards; the
  // overwritten input takes out's layout
  CHECK(rows_text(r.rules) == Rows{"S?(0),S?(0),S?(0)", "S?(0),S?(0),S?(1)", "S?(0),S?(0),S?(2)", "P(sum),P(sum),P(sum)", "P(avg),P(avg),P(avg)",
                                   "P(max),P(max),P(max)", "P(min),P(min),P(min)"});
  REQUIRE(r.filter);
  CHECK(chosen(r, mesh_of({2}), fill.tensors, {parse_spec("R"), parse_spec("S(0)")}) == std::pair<std::string, double>{"S(0) | S(0) S(0)", 0.0});
  CHECK(chosen(r, mesh_of({2}), fill.tensors, {parse_spec("R"), parse_spec("S(1)")}) ==
        std::pair<std::string, double>{"_S(0, 8) | _S(0, 8) S(1)", 0.0});
  // [8, 1024, 1024] from [1, 8, 1024, 1024]
  const OpCall lead = call("aten.as_strided_scatter.default", {meta({8, 1024, 1024}), meta({1, 8, 1024, 1024})},
                           {ints_arg({1, 8, 1024, 1024}), ints_arg({8388608, 1048576, 1024, 1}), int_arg(0)});
  CHECK(chosen(rule_for(lead), mesh_of({2, 4}), lead.tensors, {parse_spec("S(0)S(1)"), parse_spec("S(1)S(2)")}) ==
        std::pair<std::string, double>{"S(0)S(1) | S(0)S(1) S(1)S(2)", 0.0});
  // a partial window is positional only
  const OpCall window = call("aten.as_strided_scatter.default", {meta({4, 6}), meta({2, 3})}, {ints_arg({2, 3}), ints_arg({6, 1}), int_arg(0)});
  CHECK(rules_text(window) == Rows{"P(sum),P(sum),P(sum)", "P(avg),P(avg),P(avg)", "P(max),P(max),P(max)", "P(min),P(min),P(min)"});
  CHECK(error_of([] {
          return rule_for(call("aten.as_strided_scatter.default", {meta({6}), meta({3, 2})}, {ints_arg({2, 3}), ints_arg({3, 1}), int_arg(0)}));
        }) == "ctshard: aten.as_strided_scatter.default: argument 'src' has shape 3x2, the size argument says 2x3");
}

TEST_CASE("layout rules: constant_pad_nd shards unpadded dims; its Partials depend on the value", "[layout]") {
  // swin: all-zero pads are the identity, every dim and every Partial pass
  const OpCall identity = call("aten.constant_pad_nd.default", {meta({8, 14, 14, 512})}, {ints_arg({0, 0, 0, 0, 0, 0}), float_arg(0.0)});
  const OpRule r = rule_for(identity);
  CHECK(rows_text(r.rules) == plus({"S?(0),S?(0)", "S?(1),S?(1)", "S?(2),S?(2)", "S?(3),S?(3)"}, partials2));
  CHECK(r.uneven_inputs == UnevenInputs::reject);
  // a padded last dim (and a negative pad, which slices) cannot stay sharded
  CHECK(rules_text(call("aten.constant_pad_nd.default", {meta({4, 513})}, {ints_arg({0, 1}), float_arg(-100.0)})) ==
        Rows{"S?(0),S?(0)", "P(avg),P(avg)", "P(max),P(max)", "P(min),P(min)"});  // -100 at the pad: no P(sum)
  CHECK(rules_text(call("aten.constant_pad_nd.default", {meta({4, 6, 3})}, {ints_arg({0, 0, -1, 0})})) ==
        plus({"S?(0),S?(0)", "S?(2),S?(2)"}, partials2));
  CHECK(chosen(rule_for(call("aten.constant_pad_nd.default", {meta({4, 6})}, {ints_arg({1, 1})})), mesh_of({2}), {meta({4, 6})}, {parse_spec("S(1)")})
            .first == "R | R");
  CHECK(error_of([] {
          return rule_for(call("aten.constant_pad_nd.default", {meta({4})}, {ints_arg({1, 1, 1})}));
        }) == "ctshard: aten.constant_pad_nd.default: ctshard::constant_pad_nd: pad has an odd number of amounts (3)");
  CHECK(error_of([] {
          return rule_for(call("aten.constant_pad_nd.default", {meta({4})}, {ints_arg({1, 1, 1, 1})}));
        }) == "ctshard: aten.constant_pad_nd.default: ctshard::constant_pad_nd: 4 pad amounts for a tensor of rank 1 (at most 2)");
  CHECK(error_of([] {
          return rule_for(call("aten.constant_pad_nd.default", {meta({4})}, {ints_arg({1, 1}), str_arg("x")}));
        }) == "ctshard: aten.constant_pad_nd.default: argument 'value' must be a number");
}

TEST_CASE("layout rules: roll keeps unrolled dims, select_scatter the dims off its index", "[layout]") {
  // swin: roll(x [8, 14, 14, 512], [3, 3], [1, 2])
  const OpCall swin = call("aten.roll.default", {meta({8, 14, 14, 512})}, {ints_arg({3, 3}), ints_arg({1, 2})});
  CHECK(rules_text(swin) == plus({"S?(0),S?(0)", "S?(3),S?(3)"}, partials2));
  CHECK(rule_for(swin).uneven_inputs == UnevenInputs::reject);
  CHECK(chosen(rule_for(swin), mesh_of({2, 4}), swin.tensors, {parse_spec("S(0)S(3)")}) ==
        std::pair<std::string, double>{"S(0)S(3) | S(0)S(3)", 0.0});
  // no dims: the flattened tensor rolls, nothing stays sharded
  CHECK(rules_text(call("aten.roll.default", {meta({6, 4})}, {ints_arg({3})})) == partials2);
  CHECK(error_of([] {
          return rule_for(call("aten.roll.default", {meta({6, 4})}, {ints_arg({3, 1}), ints_arg({0})}));
        }) == "ctshard: aten.roll.default: ctshard::roll: 2 shifts for 1 dims");
  CHECK(error_of([] {
          return rule_for(call("aten.roll.default", {meta({6, 4})}, {ints_arg({3}), ints_arg({2})}));
        }) == "ctshard: aten.roll.default: ctshard::roll: dim 2 is out of range for a tensor of rank 2 (expected [-2, 1])");

  const OpCall sel = call("aten.select_scatter.default", {meta({4, 5, 3}), meta({4, 3})}, {int_arg(1), int_arg(-1)});
  CHECK(rules_text(sel) == Rows{"S?(0),S?(0),S?(0)", "S?(2),S?(2),S?(1)"});
  CHECK(rule_for(sel).uneven_inputs == UnevenInputs::reject);
  CHECK(error_of([] {
          return rule_for(call("aten.select_scatter.default", {meta({4, 5}), meta({4})}, {int_arg(0), int_arg(0)}));
        }) == "ctshard: aten.select_scatter.default: ctshard::select_scatter: src has shape 4, expected 5 (input 4x5 without dim 0)");
  CHECK(error_of([] {
          return rule_for(call("aten.select_scatter.default", {meta({4, 5}), meta({5})}, {int_arg(0)}));
        }) == "ctshard: aten.select_scatter.default: argument 'index' is missing");
}

TEST_CASE("layout rules: FFTs keep untransformed dims and the linear Partials only", "[layout]") {
  const OpCall c2c = call("aten._fft_c2c.default", {meta({4, 6, 8}, 8)}, {ints_arg({1}), int_arg(0), bool_arg(true)});
  const OpRule r = rule_for(c2c);
  CHECK(rows_text(r.rules) == Rows{"S?(0),S?(0)", "S?(2),S?(2)", "P(sum),P(sum)", "P(avg),P(avg)"});  // no P(max) / P(min)
  CHECK(r.uneven_inputs == UnevenInputs::reject);
  REQUIRE(r.filter);
  // 4 rows over 3 ranks chunk as 2, 2, 0: the empty shard's local FFT raises, so S(0) is dropped
  FilterCounts counts;
  const auto rows3 = candidates(r, mesh_of({3}), c2c.tensors, {parse_spec("S(0)")}, &counts);
  CHECK(counts.op_filter == 1);
  for (const auto& row : rows3) CHECK(row.find("S(0)") == std::string::npos);
  CHECK(rules_text(call("aten._fft_r2c.default", {meta({4, 6})}, {ints_arg({-1}), int_arg(0), bool_arg(true)})) ==
        Rows{"S?(0),S?(0)", "P(sum),P(sum)", "P(avg),P(avg)"});
  CHECK(rules_text(call("aten._fft_c2r.default", {meta({3, 5, 4}, 8)}, {ints_arg({0, 2}), int_arg(0), int_arg(6)})) ==
        Rows{"S?(1),S?(1)", "P(sum),P(sum)", "P(avg),P(avg)"});
  CHECK(error_of([] {
          return rule_for(call("aten._fft_c2c.default", {meta({4}, 8)}, {ints_arg({}), int_arg(0), bool_arg(true)}));
        }) == "ctshard: aten._fft_c2c.default: ctshard::fft: no dim to transform");
}

TEST_CASE("layout rules: view_as_real / view_as_complex keep every dim but the real-imaginary pair", "[layout]") {
  const OpRule real = rule_for(call("aten.view_as_real.default", {meta({4, 5}, 8)}, {}));
  CHECK(rows_text(real.rules) == Rows{"S?(0),S?(0)", "S?(1),S?(1)", "P(sum),P(sum)", "P(avg),P(avg)"});
  CHECK(real.rules.rank(0) == 3);
  CHECK(real.uneven_inputs == UnevenInputs::keep_existing_shards);
  const OpRule cplx = rule_for(call("aten.view_as_complex.default", {meta({4, 5, 2})}, {}));
  CHECK(rows_text(cplx.rules) == Rows{"S?(0),S?(0)", "S?(1),S?(1)", "P(sum),P(sum)", "P(avg),P(avg)"});
  CHECK(cplx.uneven_inputs == UnevenInputs::reject);
  CHECK(chosen(cplx, mesh_of({2}), {meta({4, 5, 2})}, {parse_spec("S(2)")}).first == "R | R");
  CHECK(error_of([] {
          return rule_for(call("aten.view_as_complex.default", {meta({4, 3})}, {}));
        }) == "ctshard: aten.view_as_complex.default: ctshard::view_as_complex: the last dim must have size 2, got shape 4x3");
}

TEST_CASE("layout rules: new_empty_strided, iota, scalar_tensor, div.Tensor_mode, _unsafe_index_put", "[layout]") {
  // t5: new_empty_strided(x [8, 1024, 1024], same size): uninitialised, follows x (Partials too)
  const OpCall nes = call("aten.new_empty_strided.default", {meta({8, 1024, 1024})}, {ints_arg({8, 1024, 1024}), ints_arg({1048576, 1024, 1})});
  const OpRule r = rule_for(nes);
  CHECK(rows_text(r.rules) == Rows{"R,S?(0)", "R,S?(1)", "R,S?(2)", "S?(0),S?(0)", "S?(1),S?(1)", "S?(2),S?(2)", "R,P(sum)", "R,P(avg)", "R,P(max)",
                                   "R,P(min)", "P(sum),P(sum)", "P(avg),P(avg)", "P(max),P(max)", "P(min),P(min)"});
  // a Partial input stays Partial (the last matching row, as DTensor's -0.1 prefers it)
  CHECK(chosen(r, mesh_of({2}), nes.tensors, {parse_spec("P(max)")}) == std::pair<std::string, double>{"P(max) | P(max)", 0.0});
  CHECK(r.uneven_inputs == UnevenInputs::keep_existing_shards);
  CHECK(chosen(r, mesh_of({2}), nes.tensors, {parse_spec("S(0)")}) == std::pair<std::string, double>{"S(0) | S(0)", 0.0});
  CHECK(error_of([] {
          return rule_for(call("aten.new_empty_strided.default", {meta({4})}, {ints_arg({4}), ints_arg({1, 1})}));
        }) == "ctshard: aten.new_empty_strided.default: argument 'stride' must have one entry per size");

  // factories without tensor inputs: Replicate only
  const OpCall iota = make_call("prims.iota.default", {}, {int_arg(16384)}, {{"start", int_arg(0)}, {"step", int_arg(1)}});
  CHECK(rule_for(iota).rules.empty());
  CHECK(rule_for(iota).rules.rank(0) == 1);
  CHECK(error_of([] { return rule_for(make_call("prims.iota.default", {}, {})); }) == "ctshard: prims.iota.default: argument 'length' is missing");
  CHECK(rule_for(make_call("aten.scalar_tensor.default", {}, {float_arg(2.5)})).rules.empty());

  // qwen3: div(i64 ids, 8, rounding_mode='floor'): shards pass, no Partial row (rounding is not linear)
  const OpCall div = make_call("aten.div.Tensor_mode", {meta({16384}, 8)}, {tensor_arg(0), int_arg(8)}, {{"rounding_mode", str_arg("floor")}});
  CHECK(rules_text(div) == Rows{"S?(0),S?(0)"});
  CHECK(rule_for(div).uneven_inputs == UnevenInputs::keep_current);
  const OpCall div2 =
      make_call("aten.div.Tensor_mode", {meta({4, 6}), meta({6})}, {tensor_arg(0), tensor_arg(1)}, {{"rounding_mode", str_arg("trunc")}});
  CHECK(rules_text(div2) == Rows{"S?(0),S?(0),R", "S?(1),S?(1),S?(0)"});
  CHECK(error_of([] {
          return rule_for(make_call("aten.div.Tensor_mode", {meta({4})}, {tensor_arg(0), int_arg(2)}, {{"rounding_mode", str_arg("round")}}));
        }) == "ctshard: aten.div.Tensor_mode: argument 'rounding_mode' must be 'floor', 'trunc' or None");

  // t5: _unsafe_index_put(zeros [32128, 512], [ids [8192]], grads [8192, 512], accumulate=True), as index_put
  OpArg idx = list_arg({tensor_arg(1)});
  const OpCall uip = make_call("aten._unsafe_index_put.default", {meta({32128, 512}), meta({8192}, 8), meta({8192, 512})},
                               {tensor_arg(0), idx, tensor_arg(2), bool_arg(true)});
  const OpRule u = rule_for(uip);
  CHECK(rows_text(u.rules) == Rows{"S?(1),S?(1),R,S?(1)", "P(sum),P(sum),R,P(sum)"});
  CHECK(u.uneven_inputs == UnevenInputs::reject);
  const OpCall ip = make_call("aten.index_put.default", uip.tensors, uip.args);
  CHECK(rows_text(rule_for(ip).rules) == rows_text(u.rules));
}

TEST_CASE("layout rules: random ops follow their input without Partials; seed prims are Replicate", "[layout][random]") {
  // swin: bernoulli.p(empty [8, 1, 1, 1], 0.98)
  const OpCall b = call("aten.bernoulli.p", {meta({8, 1, 1, 1})}, {float_arg(0.98)});
  const OpRule r = rule_for(b);
  CHECK(rows_text(r.rules) == Rows{"S?(0),S?(0)", "S?(1),S?(1)", "S?(2),S?(2)", "S?(3),S?(3)"});
  CHECK(r.uneven_inputs == UnevenInputs::keep_current);
  CHECK(chosen(r, mesh_of({2, 4}), b.tensors, {parse_spec("S(0)R")}) == std::pair<std::string, double>{"S(0)R | S(0)R", 0.0});
  // a Partial input must be reduced first: sampling does not commute with the sum (R15: by a
  // reduce-scatter into a shard, not an all-reduce)
  CHECK(chosen(r, mesh_of({2}), b.tensors, {parse_spec("P(sum)")}).first == "S(0) | S(0)");
  CHECK(rules_text(call("aten.bernoulli_.float", {meta({5, 3})}, {float_arg(0.3)})) == Rows{"S?(0),S?(0)", "S?(1),S?(1)"});
  CHECK(rules_text(call("aten.bernoulli.default", {meta({5, 3})}, {})) == Rows{"S?(0),S?(0)", "S?(1),S?(1)"});
  CHECK(error_of([] { return rule_for(call("aten.bernoulli.p", {meta({4})}, {str_arg("x")})); }) ==
        "ctshard: aten.bernoulli.p: argument 'p' must be a probability");
  // rand_like follows the input and ignores its values (a Partial input needs no reduction)
  const OpRule like = rule_for(call("aten.rand_like.default", {meta({4, 6})}, {}));
  CHECK(rows_text(like.rules) == Rows{"S?(0),S?(0)", "S?(1),S?(1)", "R,P(sum)", "R,P(avg)", "R,P(max)", "R,P(min)"});
  CHECK(like.uneven_inputs == UnevenInputs::keep_existing_shards);
  CHECK(chosen(like, mesh_of({2}), {meta({4, 6})}, {parse_spec("P(sum)")}) == std::pair<std::string, double>{"R | P(sum)", 0.0});
  // inductor's prims
  CHECK(rule_for(make_call("prims.inductor_seeds.default", {}, {int_arg(4), str_arg("cuda")})).rules.empty());
  const OpCall lookup = make_call("prims.inductor_lookup_seed.default", {meta({4}, 8)}, {tensor_arg(0), int_arg(2)});
  CHECK(rule_for(lookup).rules.empty());
  CHECK(chosen(rule_for(lookup), mesh_of({2}), lookup.tensors, {parse_spec("S(0)")}).first == "R | R");
  const OpCall rnd = make_call("prims.inductor_random.default", {meta({}, 8)}, {ints_arg({8, 1024}), tensor_arg(0), str_arg("rand")});
  CHECK(rule_for(rnd).rules.empty());
  CHECK(rule_for(rnd).rules.rank(0) == 2);
  CHECK(error_of([] {
          return rule_for(make_call("prims.inductor_random.default", {meta({}, 8)}, {ints_arg({8}), tensor_arg(0), str_arg("randint")}));
        }) == "ctshard: prims.inductor_random.default: argument 'mode' must be 'rand' or 'randn'");
}
