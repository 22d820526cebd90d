// The third set of regression cases (../shared/cases/regressions_3.json) owned by the rules work:
// R10 (histc's data-derived range), R15 (rows reachable from a Partial-only input) and R18 (ops
// of real graphs without a rule). One test per case and kind, asserting the right value: rows,
// choices and costs.
#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <string>
#include <vector>

#include "ctshard/registry.hpp"
#include "op_call_builders.hpp"

using namespace ctshard;
using namespace ctshard::test;
using Rows = std::vector<std::string>;

namespace {

/// torch.histc on `x` with `bins` bins over [lo, hi], taking the range from the data when lo == hi
/// (ATen `histc_select_outer_bin_edges`): the reference the R10 counterexample is computed with.
std::vector<double> histc(const std::vector<double>& x, int bins, double lo, double hi) {
  if (lo == hi && !x.empty()) {
    lo = *std::min_element(x.begin(), x.end());
    hi = *std::max_element(x.begin(), x.end());
  }
  if (lo == hi) {
    lo -= 1;
    hi += 1;
  }
  std::vector<double> counts(static_cast<std::size_t>(bins), 0.0);
  for (double v : x) {
    if (v < lo || v > hi) continue;
    const int b = std::min(bins - 1, static_cast<int>((v - lo) * bins / (hi - lo)));
    counts[static_cast<std::size_t>(b)] += 1;
  }
  return counts;
}

OpCall histc_call(std::int64_t n, double lo, double hi) {
  return make_call("aten.histc.default", {meta({n})}, {tensor_arg(0), int_arg(4), float_arg(lo), float_arg(hi)});
}

/// redistribute_cost of one tensor between two specs.
double cost(const TensorMeta& m, const char* from, const char* to, const MeshTopology& mesh) {
  return redistribute_cost(parse_spec(from), parse_spec(to), m, mesh);
}

/// The rule of `call` from a registry built with `options`.
OpRule rule_with(const RegistryOptions& options, const OpCall& call) {
  const OpRegistry r = make_builtin_registry(options);
  return (*r.find(call.op))(call);
}

}  // namespace

TEST_CASE("R10: histc with min == max bins over each shard's own range: no Partial(sum) row", "[regressions_3]") {
  // The counterexample: x = [0, 1, 2, 3, 10, 11, 12, 13], 4 bins, min = max = 3.
  const std::vector<double> x{0, 1, 2, 3, 10, 11, 12, 13};
  CHECK(histc(x, 4, 3, 3) == std::vector<double>{4, 0, 0, 4});
  const std::vector<double> lo_half(x.begin(), x.begin() + 4), hi_half(x.begin() + 4, x.end());
  std::vector<double> summed = histc(lo_half, 4, 3, 3);
  const std::vector<double> second = histc(hi_half, 4, 3, 3);
  for (std::size_t b = 0; b < summed.size(); ++b) summed[b] += second[b];
  CHECK(summed == std::vector<double>{2, 2, 2, 2});  // what S(0) -> P(sum) would claim
  // With the range given, the per-shard counts do add up.
  std::vector<double> given = histc(lo_half, 4, 0, 13);
  const std::vector<double> given_hi = histc(hi_half, 4, 0, 13);
  for (std::size_t b = 0; b < given.size(); ++b) given[b] += given_hi[b];
  CHECK(given == histc(x, 4, 0, 13));

  // ctshard table --op aten.histc.default --shapes 8 --mesh 2 --inputs "S(0)" --args '[4, 3, 3]'
  const MeshTopology mesh = mesh_of({2});
  for (const double v : {3.0, 0.0, -1.5, 100.0}) {  // any min == max, not only 0, 0
    INFO("min = max = " << v);
    const OpRule rule = rule_for(histc_call(8, v, v));
    CHECK(rule.rules.empty());
    const auto c = chosen(rule, mesh, {meta({8})}, {parse_spec("S(0)")});
    CHECK(c.first == "R | R");
    CHECK(c.second == Approx(cost(meta({8}), "S(0)", "R", mesh)));
    CHECK(c.second > 0.0);
  }
  // min < max: the counts of any split are partial sums, free.
  const OpRule given_rule = rule_for(histc_call(8, 0, 13));
  CHECK(rows_text(given_rule.rules) == Rows{"P(sum),S?(0)"});
  CHECK(chosen(given_rule, mesh, {meta({8})}, {parse_spec("S(0)")}) == std::pair<std::string, double>{"P(sum) | S(0)", 0.0});
  // a range ATen refuses is refused by name
  CHECK(error_of([] { return rule_for(histc_call(8, 0, INFINITY)); }) ==
        "ctshard: aten.histc.default: argument 'max' must be finite (ATen: the range is not finite)");
  CHECK(error_of([] { return rule_for(histc_call(8, NAN, 1)); }) ==
        "ctshard: aten.histc.default: argument 'min' must be finite (ATen: the range is not finite)");
  CHECK(error_of([] { return rule_for(histc_call(8, 2, 1)); }) == "ctshard: aten.histc.default: argument 'max' must not be below 'min'");
}

TEST_CASE("R15: sort of a Partial-only input reduce-scatters to a shard off the sorted dim", "[regressions_3]") {
  // ctshard table --op aten.sort.default --shapes 1024x2048 --mesh 8 --inputs "P(sum)" --args '[1]'
  const MeshTopology mesh = mesh_of({8});
  const TensorMeta x = meta({1024, 2048});
  const OpCall call = make_call("aten.sort.default", {x}, {tensor_arg(0), int_arg(1)});
  const OpRule rule = rule_for(call);
  CHECK(rule.placeholder_fill == PlaceholderFill::shard_from_partial);
  const std::vector<Spec> psum{parse_spec("P(sum)")};
  CHECK(candidates(rule, mesh, {x}, psum) == Rows{"R R | R", "S(0) S(0) | S(0)"});
  const auto c = chosen(rule, mesh, {x}, psum);
  CHECK(c.first == "S(0) S(0) | S(0)");
  const double reduce_scatter = cost(x, "P(sum)", "S(0)", mesh), all_reduce = cost(x, "P(sum)", "R", mesh);
  CHECK(c.second == Approx(reduce_scatter));
  CHECK(reduce_scatter == Approx(88.747).epsilon(1e-4));
  CHECK(all_reduce == Approx(170.894).epsilon(1e-4));
  // DTensor's fill (the rules-level value a DTensor profile asks for): only the all-reduce.
  OpRule dtensor = rule;
  dtensor.placeholder_fill = PlaceholderFill::dtensor;
  CHECK(chosen(dtensor, mesh, {x}, psum) == std::pair<std::string, double>{"R R | R", all_reduce});
  CHECK(chosen(rule_with(RegistryOptions{.placeholder_fill = PlaceholderFill::dtensor}, call), mesh, {x}, psum).first == "R R | R");
  // Replicate inputs: nothing to gain, the table is DTensor's (one row).
  CHECK(candidates(rule, mesh, {x}, {parse_spec("R")}) == Rows{"R R | R"});
}

TEST_CASE("R15: the shard kinds a Partial input reaches", "[regressions_3]") {
  const Spec partial[] = {parse_spec("P(sum)R")}, replicated[] = {parse_spec("RR")}, strided[] = {parse_spec("_S(0, 2)P(max)")};
  CHECK_FALSE(shard_kinds_of(partial, PlaceholderFill::dtensor).shard);
  CHECK(shard_kinds_of(partial, PlaceholderFill::shard_from_partial).shard);
  CHECK(shard_kinds_of(partial, PlaceholderFill::shard_from_partial).size() == 1);
  CHECK(shard_kinds_of(replicated, PlaceholderFill::shard_from_partial).size() == 0);
  // a StridedShard input and a Partial one: plain Shard first, then the split factor
  const ShardKinds both = shard_kinds_of(strided, PlaceholderFill::shard_from_partial);
  CHECK(both.size() == 2);
  CHECK(both.build(0, 1) == Shard(1));
  CHECK(both.build(1, 1) == StridedShard(1, 2));
  CHECK(shard_kinds_of(strided, PlaceholderFill::dtensor).size() == 1);
  STATIC_REQUIRE(to_string(PlaceholderFill::dtensor) == "dtensor");
  STATIC_REQUIRE(to_string(PlaceholderFill::shard_from_partial) == "shard_from_partial");
}

TEST_CASE("R15: every op with rows off its reduced / scanned dim reaches them from a Partial input", "[regressions_3]") {
  const MeshTopology mesh = mesh_of({4});
  const TensorMeta x = meta({64, 256});
  const double reduce_scatter = cost(x, "P(sum)", "S(0)", mesh), all_reduce = cost(x, "P(sum)", "R", mesh);
  REQUIRE(reduce_scatter < all_reduce);
  const std::vector<Spec> psum{parse_spec("P(sum)")};
  struct Case {
    OpCall call;
    std::string want;
  };
  const std::vector<Case> cases{
      {make_call("aten.topk.default", {x}, {tensor_arg(0), int_arg(8), int_arg(1)}), "S(0) S(0) | S(0)"},
      {make_call("aten._softmax.default", {x}, {tensor_arg(0), int_arg(1), bool_arg(false)}), "S(0) | S(0)"},
      {make_call("aten._log_softmax.default", {x}, {tensor_arg(0), int_arg(-1), bool_arg(false)}), "S(0) | S(0)"},
      {make_call("aten.logsumexp.default", {x}, {tensor_arg(0), ints_arg({1})}), "S(0) | S(0)"},
      {make_call("aten.var.correction", {x}, {tensor_arg(0), ints_arg({1})}), "S(0) | S(0)"},
      {make_call("aten.native_layer_norm.default", {x}, {tensor_arg(0), ints_arg({256}), none_arg(), none_arg(), float_arg(1e-5)}),
       "S(0) S(0) S(0) | S(0)"},
  };
  for (const Case& k : cases) {
    INFO(k.call.op);
    const auto c = chosen(rule_for(k.call), mesh, {x}, psum);
    CHECK(c.first == k.want);
    CHECK(c.second == Approx(reduce_scatter));
  }
  // a scan with its own linearity row keeps the Partial for free
  CHECK(chosen(rule_for(make_call("aten.cumsum.default", {x}, {tensor_arg(0), int_arg(1)})), mesh, {x}, psum) ==
        std::pair<std::string, double>{"P(sum) | P(sum)", 0.0});
  // ... a P(max) one has none: it reduce-scatters (max) to a shard of the other dim
  const auto pmax = chosen(rule_for(make_call("aten.cumsum.default", {x}, {tensor_arg(0), int_arg(1)})), mesh, {x}, {parse_spec("P(max)")});
  CHECK(pmax.first == "S(0) | S(0)");
  CHECK(pmax.second == Approx(cost(x, "P(max)", "S(0)", mesh)));
  // the einsum and pointwise families keep DTensor's fill: the reference cases pin their tables
  for (const char* op : {"aten.sin.default", "aten.relu.default"}) {
    const OpRule rule = rule_for(make_call(op, {x}, {tensor_arg(0)}));
    CHECK(rule.placeholder_fill == PlaceholderFill::dtensor);
    CHECK(chosen(rule, mesh, {x}, psum).first == "R | R");
  }
  const OpRule mm = rule_for(make_call("aten.mm.default", {x, meta({256, 32})}, {tensor_arg(0), tensor_arg(1)}));
  CHECK(mm.placeholder_fill == PlaceholderFill::dtensor);
  // unless a registry asks otherwise for every rule
  const OpRule sin_all =
      rule_with(RegistryOptions{.placeholder_fill = PlaceholderFill::shard_from_partial}, make_call("aten.sin.default", {x}, {tensor_arg(0)}));
  CHECK(chosen(sin_all, mesh, {x}, psum) == std::pair<std::string, double>{"S(0) | S(0)", reduce_scatter});
}

TEST_CASE("R18: prims.fma is pointwise with its linearity rows", "[regressions_3]") {
  // ctshard table --op prims.fma.default --shapes 8x4,8x4,8x4 --mesh 2 --inputs "S(0);S(0);S(0)"
  const TensorMeta t = meta({8, 4});
  const OpRule rule = rule_for(make_call("prims.fma.default", {t, t, t}, {tensor_arg(0), tensor_arg(1), tensor_arg(2)}));
  CHECK(rows_text(rule.rules) == Rows{"S?(0),S?(0),S?(0),S?(0)", "S?(1),S?(1),S?(1),S?(1)", "P(sum),P(sum),R,P(sum)", "P(sum),R,P(sum),P(sum)",
                                      "P(avg),P(avg),R,P(avg)", "P(avg),R,P(avg),P(avg)", "P(avg),P(avg),R,R", "P(avg),R,P(avg),R",
                                      "P(avg),R,R,P(avg)", "P(max),R,R,P(max)", "P(min),R,R,P(min)"});
  const std::vector<TensorMeta> ts{t, t, t};
  CHECK(chosen(rule, mesh_of({2}), ts, {parse_spec("S(0)"), parse_spec("S(0)"), parse_spec("S(0)")}) ==
        std::pair<std::string, double>{"S(0) | S(0) S(0) S(0)", 0.0});
  // a partial sum of products plus a partial addend stays partial
  CHECK(chosen(rule, mesh_of({2}), ts, {parse_spec("P(sum)"), parse_spec("R"), parse_spec("P(sum)")}) ==
        std::pair<std::string, double>{"P(sum) | P(sum) R P(sum)", 0.0});
  // broadcasting as every pointwise op: c [4] has no dim 0
  const OpRule bias = rule_for(make_call("prims.fma.default", {t, t, meta({4})}, {tensor_arg(0), tensor_arg(1), tensor_arg(2)}));
  CHECK(rows_text(bias.rules)[0] == "S?(0),S?(0),S?(0),R");
}

TEST_CASE("R18: clamp_min / clamp_max / clamp with scalar bounds keep P(max) and P(min)", "[regressions_3]") {
  const TensorMeta t = meta({4, 6});
  for (const char* op : {"aten.clamp_min.default", "aten.clamp_max.default"}) {
    INFO(op);
    const OpRule rule = rule_for(make_call(op, {t}, {tensor_arg(0), float_arg(0.5)}));
    CHECK(rows_text(rule.rules) == Rows{"S?(0),S?(0)", "S?(1),S?(1)", "P(max),P(max)", "P(min),P(min)"});
    CHECK(chosen(rule, mesh_of({2}), {t}, {parse_spec("P(max)")}) == std::pair<std::string, double>{"P(max) | P(max)", 0.0});
    CHECK(chosen(rule, mesh_of({2}), {t}, {parse_spec("S(1)")}) == std::pair<std::string, double>{"S(1) | S(1)", 0.0});
    // clamping a partial sum is not a partial sum of clamps
    CHECK(chosen(rule, mesh_of({2}), {t}, {parse_spec("P(sum)")}).first == "R | R");
  }
  CHECK(rows_text(rule_for(make_call("aten.clamp.default", {t}, {tensor_arg(0), float_arg(-1), float_arg(1)})).rules).size() == 4);
}

TEST_CASE("R18: pow.Scalar is monotone in its exponent as its base says", "[regressions_3]") {
  const TensorMeta t = meta({6});
  const auto rows_for = [&](double base) { return rows_text(rule_for(make_call("aten.pow.Scalar", {t}, {float_arg(base), tensor_arg(0)})).rules); };
  CHECK(rows_for(2.0) == Rows{"S?(0),S?(0)", "P(max),P(max)", "P(min),P(min)"});
  CHECK(rows_for(1.0) == Rows{"S?(0),S?(0)", "P(max),P(max)", "P(min),P(min)"});
  CHECK(rows_for(0.5) == Rows{"S?(0),S?(0)", "P(min),P(max)", "P(max),P(min)"});
  CHECK(rows_for(0.0) == Rows{"S?(0),S?(0)", "P(min),P(max)", "P(max),P(min)"});
  CHECK(rows_for(-2.0) == Rows{"S?(0),S?(0)"});
  CHECK(rows_for(NAN) == Rows{"S?(0),S?(0)"});
  CHECK(rows_text(rule_for(make_call("aten.pow.Scalar", {t}, {int_arg(10), tensor_arg(0)})).rules).size() == 3);
  CHECK(error_of([&] {
          return rule_for(make_call("aten.pow.Scalar", {t}, {none_arg(), tensor_arg(0)}));
        }) == "ctshard: aten.pow.Scalar: argument 'self' must be a number (pow.Scalar: a Python scalar base)");
  const auto c = chosen(rule_for(make_call("aten.pow.Scalar", {t}, {float_arg(0.5), tensor_arg(0)})), mesh_of({2}), {t}, {parse_spec("P(max)")});
  CHECK(c == std::pair<std::string, double>{"P(min) | P(max)", 0.0});
}

TEST_CASE("R18: repeat keeps the shards of the dims it does not repeat", "[regressions_3]") {
  const TensorMeta t = meta({4, 6});
  const auto rule_of = [&](std::vector<std::int64_t> repeats) {
    return rule_for(make_call("aten.repeat.default", {t}, {tensor_arg(0), ints_arg(repeats)}));
  };
  CHECK(rows_text(rule_of({1, 2}).rules) == Rows{"S?(0),S?(0)", "P(sum),P(sum)", "P(avg),P(avg)", "P(max),P(max)", "P(min),P(min)"});
  // new leading dims shift the kept dims
  CHECK(rows_text(rule_of({3, 1, 1}).rules) ==
        Rows{"S?(1),S?(0)", "S?(2),S?(1)", "P(sum),P(sum)", "P(avg),P(avg)", "P(max),P(max)", "P(min),P(min)"});
  CHECK(chosen(rule_of({3, 1, 1}), mesh_of({2}), {t}, {parse_spec("S(1)")}) == std::pair<std::string, double>{"S(2) | S(1)", 0.0});
  // a repeated dim stays whole: its shard is gathered first
  const auto c = chosen(rule_of({2, 1}), mesh_of({2}), {t}, {parse_spec("S(0)")});
  CHECK(c.first == "R | R");
  CHECK(c.second == Approx(cost(t, "S(0)", "R", mesh_of({2}))));
  CHECK(error_of([&] { return rule_of({2}); }) ==
        "ctshard: aten.repeat.default: 1 repeats for a rank-2 tensor (need at least 2, at most max_tensor_dims)");
  CHECK(error_of([&] { return rule_of({1, -1}); }) == "ctshard: aten.repeat.default: repeat -1 for dim 1 is negative");
}

TEST_CASE("R18: average pooling and its backward split batch and channels, linear in the gradient", "[regressions_3]") {
  const TensorMeta grad = meta({8, 4, 6, 6}), self = meta({8, 4, 12, 12});
  const OpRule back = rule_for(
      make_call("aten.avg_pool2d_backward.default", {grad, self},
                {tensor_arg(0), tensor_arg(1), ints_arg({2, 2}), ints_arg({2, 2}), ints_arg({0, 0}), bool_arg(false), bool_arg(true), none_arg()}));
  const Rows backward_rows{"S?(0),S?(0),S?(0)", "S?(1),S?(1),S?(1)", "P(sum),P(sum),R", "P(avg),P(avg),R"};
  CHECK(rows_text(back.rules) == backward_rows);
  CHECK(chosen(back, mesh_of({2}), {grad, self}, {parse_spec("S(0)"), parse_spec("S(0)")}) ==
        std::pair<std::string, double>{"S(0) | S(0) S(0)", 0.0});
  CHECK(chosen(back, mesh_of({2}), {grad, self}, {parse_spec("P(sum)"), parse_spec("R")}) ==
        std::pair<std::string, double>{"P(sum) | P(sum) R", 0.0});
  const OpRule adaptive = rule_for(make_call("aten._adaptive_avg_pool2d_backward.default", {grad, self}, {tensor_arg(0), tensor_arg(1)}));
  CHECK(rows_text(adaptive.rules) == backward_rows);
  // unbatched [C, H, W]: dim 1 is spatial and stays whole (DTensor 2.13 lists S(1) there too)
  const OpRule unbatched =
      rule_for(make_call("aten._adaptive_avg_pool2d_backward.default", {meta({4, 1, 1}), meta({4, 6, 6})}, {tensor_arg(0), tensor_arg(1)}));
  CHECK(rows_text(unbatched.rules) == Rows{"S?(0),S?(0),S?(0)", "P(sum),P(sum),R", "P(avg),P(avg),R"});
  CHECK(error_of([&] {
          return rule_for(make_call("aten._adaptive_avg_pool2d_backward.default", {meta({8, 2, 1, 1}), self}, {tensor_arg(0), tensor_arg(1)}));
        }) == "ctshard: aten._adaptive_avg_pool2d_backward.default: argument 'grad_output' must match self on the batch and channel dims");
  // the forwards (DTensor pooling_strategy)
  const Rows forward_rows{"S?(0),S?(0)", "S?(1),S?(1)", "P(sum),P(sum)", "P(avg),P(avg)"};
  CHECK(rows_text(rule_for(make_call("aten.avg_pool2d.default", {self}, {tensor_arg(0), ints_arg({2, 2})})).rules) == forward_rows);
  CHECK(rows_text(rule_for(make_call("aten._adaptive_avg_pool2d.default", {self}, {tensor_arg(0), ints_arg({1, 1})})).rules) == forward_rows);
}

TEST_CASE("R18: copy_, prims.rev, prims.device_put and tg.log_tensor", "[regressions_3]") {
  const TensorMeta t = meta({4, 6});
  const OpCall copy = make_call("aten.copy.default", {t, meta({6})}, {tensor_arg(0), tensor_arg(1)});
  OpCall copy_ = copy;
  copy_.op = "aten.copy_.default";
  CHECK(rows_text(rule_for(copy_).rules) == rows_text(rule_for(copy).rules));
  CHECK(rows_text(rule_for(copy_).rules) ==
        Rows{"S?(0),S?(0),R", "S?(1),S?(1),S?(0)", "P(sum),P(sum),P(sum)", "P(avg),P(avg),P(avg)", "P(max),P(max),P(max)", "P(min),P(min),P(min)"});
  // prims.rev / flip: the reversed dims stay whole, every Partial passes
  const TensorMeta band = meta({256, 257}, 2);
  const OpRule rev = rule_for(make_call("prims.rev.default", {band}, {tensor_arg(0), ints_arg({0})}));
  CHECK(rows_text(rev.rules) == Rows{"S?(1),S?(1)", "P(sum),P(sum)", "P(avg),P(avg)", "P(max),P(max)", "P(min),P(min)"});
  CHECK(rows_text(rule_for(make_call("aten.flip.default", {band}, {tensor_arg(0), ints_arg({0})})).rules) == rows_text(rev.rules));
  CHECK(chosen(rev, mesh_of({2}), {band}, {parse_spec("S(1)")}) == std::pair<std::string, double>{"S(1) | S(1)", 0.0});
  CHECK(chosen(rev, mesh_of({2}), {band}, {parse_spec("S(0)")}).first == "R | R");
  const OpRule rev4 = rule_for(make_call("prims.rev.default", {meta({1, 256, 1, 257})}, {tensor_arg(0), ints_arg({1, 3})}));
  CHECK(rows_text(rev4.rules)[0] == "S?(0),S?(0)");
  CHECK(rows_text(rev4.rules)[1] == "S?(2),S?(2)");
  CHECK(error_of([&] {
          return rule_for(make_call("prims.rev.default", {t}, {tensor_arg(0), ints_arg({1, -1})}));
        }) == "ctshard: prims.rev.default: ctshard::flip: dim -1 appears more than once in dims");
  // identities: the clone rule
  const Rows same{"S?(0),S?(0)", "S?(1),S?(1)", "P(sum),P(sum)", "P(avg),P(avg)", "P(max),P(max)", "P(min),P(min)"};
  OpArg device;
  device.kind = OpArg::Kind::other;
  device.text = "device(type='cuda', index=0)";
  CHECK(rows_text(rule_for(make_call("prims.device_put.default", {t}, {tensor_arg(0), device})).rules) == same);
  CHECK(rows_text(rule_for(make_call("tg.log_tensor.default", {t}, {tensor_arg(0), str_arg("tokens")})).rules) == same);
  CHECK(chosen(rule_for(make_call("tg.log_tensor.default", {t}, {tensor_arg(0), str_arg("tokens")})), mesh_of({2}), {t}, {parse_spec("P(max)")}) ==
        std::pair<std::string, double>{"P(max) | P(max)", 0.0});
}

TEST_CASE("R18: graphsafe_run_with_rng_state takes the rule of the op it runs, the RNG state replicated", "[regressions_3]") {
  // graphsafe_run_with_rng_state(aten._scaled_dot_product_flash_attention.default, q, k, v, 0.2,
  //                              scale = 0.1, rng_state = bwd_rng_state)  (ves_symbolic_bw)
  const TensorMeta q = meta({4, 8, 16, 32}, 2), state = meta({}, 8);
  OpArg op;
  op.kind = OpArg::Kind::other;
  op.text = "torch.ops.aten._scaled_dot_product_flash_attention.default";
  const OpCall wrapped =
      make_call("higher_order.graphsafe_run_with_rng_state", {q, q, q, state}, {op, tensor_arg(0), tensor_arg(1), tensor_arg(2), float_arg(0.2)},
                {{"scale", float_arg(0.1)}, {"rng_state", tensor_arg(3)}});
  const OpCall direct = make_call("aten._scaled_dot_product_flash_attention.default", {q, q, q},
                                  {tensor_arg(0), tensor_arg(1), tensor_arg(2), float_arg(0.2)}, {{"scale", float_arg(0.1)}});
  const OpRule w = rule_for(wrapped), d = rule_for(direct);
  REQUIRE(w.rules.size() == d.rules.size());
  REQUIRE(w.rules.num_inputs() == 4);
  CHECK(w.rules.num_outputs() == d.rules.num_outputs());
  for (std::size_t r = 0; r < d.rules.size(); ++r) {
    for (std::size_t k = 0; k < d.rules.width(); ++k) CHECK(w.rules.at(r, k) == d.rules.at(r, k));
    CHECK(w.rules.at(r, d.rules.width()) == Replicate());
  }
  CHECK(w.uneven_inputs == d.uneven_inputs);
  // batch-sharded q, k, v stay sharded; the state stays where it is
  const std::vector<TensorMeta> metas{q, q, q, state};
  const auto c = chosen(w, mesh_of({2}), metas, {parse_spec("S(0)"), parse_spec("S(0)"), parse_spec("S(0)"), parse_spec("R")});
  CHECK(c.second == 0.0);
  CHECK(c.first.substr(c.first.find('|')) == "| S(0) S(0) S(0) R");
  // no rule inside, or no op reference
  OpArg unknown = op;
  unknown.text = "torch.ops.aten.not_an_op.default";
  CHECK(error_of([&] {
          return rule_for(make_call("higher_order.graphsafe_run_with_rng_state", {q}, {unknown, tensor_arg(0)}));
        }) == "ctshard: no rule for aten.not_an_op.default inside higher_order.graphsafe_run_with_rng_state");
  CHECK(error_of([&] { return rule_for(make_call("higher_order.graphsafe_run_with_rng_state", {q}, {tensor_arg(0)})); }) ==
        "ctshard: higher_order.graphsafe_run_with_rng_state without an op reference as first argument");
  // the state may sit anywhere among the tensors: native_dropout(x, p, train) with the state first
  const OpCall dropout =
      make_call("higher_order.graphsafe_run_with_rng_state", {state, meta({6, 4})},
                {OpArg{OpArg::Kind::other, 0, 0, {}, "torch.ops.aten.native_dropout.default", {}}, tensor_arg(1), float_arg(0.1), bool_arg(true)},
                {{"rng_state", tensor_arg(0)}});
  CHECK(rows_text(rule_for(dropout).rules) == Rows{"S?(0),S?(0),R,S?(0)", "S?(1),S?(1),R,S?(1)"});
  // a wrapped rule's full-mesh filter still sees its own operands: amax of [3] over 4 ranks leaves
  // one rank an empty shard, so the P(max) row is dropped with the state column there too
  const OpCall amax =
      make_call("higher_order.graphsafe_run_with_rng_state", {meta({3}), state},
                {OpArg{OpArg::Kind::other, 0, 0, {}, "aten.amax.default", {}}, tensor_arg(0), ints_arg({0})}, {{"rng_state", tensor_arg(1)}});
  const OpRule amax_rule = rule_for(amax);
  REQUIRE(amax_rule.filter);
  const auto rows4 = candidates(amax_rule, mesh_of({4}), {meta({3}), state}, {parse_spec("S(0)"), parse_spec("R")});
  CHECK(std::find(rows4.begin(), rows4.end(), "P(max) | S(0) R") == rows4.end());
  const auto rows3 = candidates(amax_rule, mesh_of({3}), {meta({3}), state}, {parse_spec("S(0)"), parse_spec("R")});
  CHECK(std::find(rows3.begin(), rows3.end(), "P(max) | S(0) R") != rows3.end());
}
