// The third set of regression cases (../shared/cases/regressions_3.json) owned by the rules work:
// R15 (rows reachable from a Partial-only input). One test per case and kind, asserting the right value: rows,
// choices and costs.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "ctshard/registry.hpp"
#include "op_call_builders.hpp"

using namespace ctshard;
using namespace ctshard::test;
using Rows = std::vector<std::string>;

namespace {

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
