// The third set of regression cases (../shared/cases/regressions_3.json) owned by the rules work:
// R10 (histc's data-derived range) and R15 (rows reachable from a Partial-only input). One test per case and kind, asserting the right value: rows,
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
  const OpRule sin_all = rule_with(RegistryOptions{.placeholder_fill = PlaceholderFill::shard_from_partial},
                                   make_call("aten.sin.default", {x}, {tensor_arg(0)}));
  CHECK(chosen(sin_all, mesh, {x}, psum) == std::pair<std::string, double>{"S(0) | S(0)", reduce_scatter});
}
