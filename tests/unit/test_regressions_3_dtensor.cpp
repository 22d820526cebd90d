// The third set of regression cases (../shared/cases/regressions_3.json), case R16: plans that
// DTensor's own dispatch executes need DTensor 2.13's rows (the `dtensor` rule set), while
// ctshard's rules keep their sound extra rows. Plus the rule set's machinery: the options it
// implies, the ops that follow the current input, listed rows, fixed points, DTensor's errors.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "ctshard/registry.hpp"
#include "op_call_builders.hpp"

using namespace ctshard;
using namespace ctshard::test;
using Rows = std::vector<std::string>;

namespace {

const OpRegistry& dtensor_rules() {
  static const OpRegistry r = make_builtin_registry(RegistryOptions{.rule_set = RuleProfile::dtensor});
  return r;
}

/// The dtensor rule set's rule for `call`, built with the current specs `current` on `mesh`.
OpRule dtensor_rule(OpCall call, const std::vector<Spec>& current, std::initializer_list<std::int64_t> mesh) {
  call.current = current;
  call.mesh_sizes = std::vector<std::int64_t>(mesh);
  const RuleFactory* f = dtensor_rules().find(call.op);
  REQUIRE(f != nullptr);
  return (*f)(call);
}

std::vector<Spec> specs(std::initializer_list<const char*> texts) {
  std::vector<Spec> out;
  for (const char* t : texts) out.push_back(parse_spec(t));
  return out;
}

/// `ctshard table --op aten._native_batch_norm_legit_no_training.default --shapes
/// 8x16x32x32,16,16,16,16 --mesh 2x2 --inputs "S(0)R;RR;RR;RR;RR" --args
/// '["$0","$1","$2","$3","$4",0.1,1e-5]'`
OpCall r16_call() {
  return make_call("aten._native_batch_norm_legit_no_training.default", {meta({8, 16, 32, 32}), meta({16}), meta({16}), meta({16}), meta({16})},
                   {tensor_arg(0), tensor_arg(1), tensor_arg(2), tensor_arg(3), tensor_arg(4), float_arg(0.1), float_arg(1e-5)});
}

}  // namespace

TEST_CASE("R16: eval batch norm gets DTensor's channel rows under the dtensor rule set, ctshard's batch rows by default", "[regressions_3]") {
  const OpCall call = r16_call();
  const std::vector<Spec> current = specs({"S(0)R", "RR", "RR", "RR", "RR"});
  const MeshTopology mesh = mesh_of({2, 2});

  // DTensor 2.13 (`batch_norm_strategy`): the channel row only: out S(1), save_mean / invstd,
  // weight, bias and running stats S(0)
  const OpRule dt = dtensor_rule(call, current, {2, 2});
  CHECK(rows_text(dt.rules) == Rows{"S?(1),S?(0),S?(0),S?(1),S?(0),S?(0),S?(0),S?(0)"});
  CHECK(dt.uneven_inputs == UnevenInputs::reject);
  CHECK_FALSE(dt.filter);  // no empty-shard filter: DTensor has none
  const auto dt_rows = candidates(dt, mesh, call.tensors, current);
  CHECK(dt_rows == Rows{"RR RR RR | RR RR RR RR RR", "RS(1) RS(0) RS(0) | RS(1) RS(0) RS(0) RS(0) RS(0)",
                        "S(1)R S(0)R S(0)R | S(1)R S(0)R S(0)R S(0)R S(0)R",
                        "S(1)S(1) S(0)S(0) S(0)S(0) | S(1)S(1) S(0)S(0) S(0)S(0) S(0)S(0) S(0)S(0)"});
  for (const auto& row : dt_rows) {  // the input is never batch-sharded
    const std::string input = row.substr(row.find("| ") + 2, row.find(' ', row.find("| ") + 2) - row.find("| ") - 2);
    CHECK(input.find("S(0)") == std::string::npos);
  }
  CHECK(dt_rows[2].substr(dt_rows[2].find("| ") + 2, 5) == "S(1)R");
  // the batch shard must go: DTensor all-gathers the input (on the 2x2 CPU mesh: 8.59 us here,
  // the channel row on the last mesh dim)
  const auto dt_choice = chosen(dt, mesh, call.tensors, current);
  CHECK(dt_choice.first == "RS(1) RS(0) RS(0) | RS(1) RS(0) RS(0) RS(0) RS(0)");
  CHECK(dt_choice.second == Approx(redistribute_cost(parse_spec("S(0)R"), parse_spec("RS(1)"), meta({8, 16, 32, 32}), mesh)));
  CHECK(dt_choice.second > 0.0);

  // ctshard's rules: eval batch norm is an affine map per channel, so the batch row keeps S(0) at 0 us
  const OpRule ours = rule_for(call);
  const auto our_rows = candidates(ours, mesh, call.tensors, current);
  CHECK(std::find(our_rows.begin(), our_rows.end(), "S(0)R RR RR | S(0)R RR RR RR RR") != our_rows.end());
  CHECK(chosen(ours, mesh, call.tensors, current) == std::pair<std::string, double>{"S(0)R RR RR | S(0)R RR RR RR RR", 0.0});
  // every DTensor row is one of ctshard's (the default only adds rows)
  for (const auto& row : dt_rows) CHECK(std::find(our_rows.begin(), our_rows.end(), row) != our_rows.end());
}

TEST_CASE("R16: convolution gets DTensor's batch row only under the dtensor rule set", "[regressions_3]") {
  // convolution(x [4, 4, 8, 8], w [6, 4, 3, 3], b [6], stride 1, padding 1)
  const OpCall call = make_call("aten.convolution.default", {meta({4, 4, 8, 8}), meta({6, 4, 3, 3}), meta({6})},
                                {tensor_arg(0), tensor_arg(1), tensor_arg(2), ints_arg({1, 1}), ints_arg({1, 1}), ints_arg({1, 1}), bool_arg(false),
                                 ints_arg({0, 0}), int_arg(1)});
  const std::vector<Spec> current = specs({"R", "S(0)", "S(0)"});
  const OpRule dt = dtensor_rule(call, current, {2});
  CHECK(rows_text(dt.rules) == Rows{"S?(0),S?(0),R,R"});  // DTensor `convolution_single_dim_strategy`
  // ctshard's output-channel row keeps the sharded weight: (R, S(0), S(0)) -> S(1) at 0 us
  CHECK(chosen(rule_for(call), mesh_of({2}), call.tensors, current) == std::pair<std::string, double>{"S(1) | R S(0) S(0)", 0.0});
  // DTensor all-gathers weight and bias instead
  const auto dt_choice = chosen(dt, mesh_of({2}), call.tensors, current);
  CHECK(dt_choice.first == "R | R R R");
  CHECK(dt_choice.second > 0.0);
  // the backward: batch row only (grad_weight / grad_bias P(sum)), whatever output_mask says
  const OpCall bw = make_call("aten.convolution_backward.default", {meta({4, 6, 8, 8}), meta({4, 4, 8, 8}), meta({6, 4, 3, 3})},
                              {tensor_arg(0), tensor_arg(1), tensor_arg(2), ints_arg({6}), ints_arg({1, 1}), ints_arg({1, 1}), ints_arg({1, 1}),
                               bool_arg(false), ints_arg({0, 0}), int_arg(1), bools_arg({true, true, true})});
  CHECK(rows_text(dtensor_rule(bw, specs({"S(0)", "S(0)", "R"}), {2}).rules) == Rows{"S?(0),P(sum),P(sum),S?(0),S?(0),R"});
}

TEST_CASE("dtensor rule set: implies DTensor's einsum linearity and Partial passthrough", "[dtensor_rules]") {
  const OpRegistry asked = make_builtin_registry(RegistryOptions{
      .einsum_linearity = EinsumLinearity::per_input, .partial_passthrough = PartialPassthrough::ctshard, .rule_set = RuleProfile::dtensor});
  // batch-only einsum: DTensor's all-Partial rows are there although per_input was asked
  const OpCall mul = make_call("aten.bmm.default", {meta({2, 3, 4}), meta({2, 4, 5})}, {tensor_arg(0), tensor_arg(1)});
  const OpRule dt_bmm = (*asked.find(mul.op))(mul);
  CHECK(rows_text(dt_bmm.rules) == rows_text(rule_for(mul).rules));  // the library default is DTensor's linearity
  // clone: no Partial-input row (PartialPassthrough::dtensor)
  const OpCall clone = make_call("aten.clone.default", {meta({4})}, {tensor_arg(0)});
  for (const auto& row : rows_text((*asked.find(clone.op))(clone).rules)) CHECK(row.find("P(") == std::string::npos);
  CHECK(to_string(RuleProfile::dtensor) == std::string_view("dtensor"));
  CHECK(to_string(RuleProfile::ctshard) == std::string_view("ctshard"));
  // the ctshard rule set reads no current specs
  CHECK(builtin_registry().current_spec_readers() == 0);
  CHECK(dtensor_rules().reads_current_specs("aten.sum.dim_IntList"));
  CHECK(dtensor_rules().reads_current_specs("aten.view.default"));
  CHECK_FALSE(dtensor_rules().reads_current_specs("aten.mm.default"));
  CHECK(dtensor_rules().size() == builtin_registry().size());
}

TEST_CASE("dtensor rule set: reductions list only the row that follows the current input", "[dtensor_rules]") {
  // sum.default of [12, 12] P(max)S(1) on 2x2 (DTensor `linear_reduction_strategy`): a Partial of
  // another op makes the reduction non-linear, so everything is replicated first
  const OpCall sum = make_call("aten.sum.default", {meta({12, 12})}, {tensor_arg(0)});
  const OpRule r = dtensor_rule(sum, specs({"P(max)S(1)"}), {2, 2});
  CHECK(r.uneven_inputs == UnevenInputs::unchecked);
  CHECK(candidates(r, mesh_of({2, 2}), sum.tensors, specs({"P(max)S(1)"})) == Rows{"RR | RR"});
  // a linear one keeps its input: S(0) reduced over dim 0 is P(sum), S(1) stays S(0)
  const OpCall sum_dim = make_call("aten.sum.dim_IntList", {meta({12, 12})}, {tensor_arg(0), ints_arg({0})});
  CHECK(candidates(dtensor_rule(sum_dim, specs({"S(0)S(1)"}), {2, 2}), mesh_of({2, 2}), sum_dim.tensors, specs({"S(0)S(1)"})) ==
        Rows{"P(sum)S(0) | S(0)S(1)"});
  // DTensor reads dim=[] as no reduction (unsound: the 0-d result keeps the shard), and the rule
  // set reproduces it; ctshard's rules reduce every dim
  const OpCall empty_dims = make_call("aten.sum.dim_IntList", {meta({4})}, {tensor_arg(0), ints_arg({})});
  CHECK(candidates(dtensor_rule(empty_dims, specs({"S(0)"}), {4}), mesh_of({4}), empty_dims.tensors, specs({"S(0)"})) == Rows{"S(0) | S(0)"});
  CHECK(chosen(rule_for(empty_dims), mesh_of({4}), empty_dims.tensors, specs({"S(0)"})).first == "P(sum) | S(0)");
  // mean of an unevenly sharded dim: not linear, replicated first
  const OpCall mean = make_call("aten.mean.dim", {meta({5, 4})}, {tensor_arg(0), ints_arg({0})});
  CHECK(candidates(dtensor_rule(mean, specs({"S(0)"}), {2}), mesh_of({2}), mean.tensors, specs({"S(0)"})) == Rows{"R | R"});
}

TEST_CASE("dtensor rule set: views follow DTensor's propagation, errors included", "[dtensor_rules]") {
  // [2, 2, 3] S(0)S(1) flattened to [4, 3] (R11's call): DTensor's rewrite gives S(0) _S(0, 1)
  // from the local sizes, no redistribution
  const OpCall flat = make_call("aten.view.default", {meta({2, 2, 3})}, {tensor_arg(0), ints_arg({4, 3})});
  CHECK(candidates(dtensor_rule(flat, specs({"S(0)S(1)"}), {2, 2}), mesh_of({2, 2}), flat.tensors, specs({"S(0)S(1)"})) ==
        Rows{"S(0)_S(0, 1) | S(0)S(1)"});
  // a strict view of an unevenly sharded non-last dim: DTensor raises, so does the rule set
  const OpCall uneven = make_call("aten.view.default", {meta({3, 4})}, {tensor_arg(0), ints_arg({12})});
  CHECK_THAT(error_of([&] { return dtensor_rule(uneven, specs({"S(0)"}), {2}); }),
             Catch::Contains("DTensor 2.13 raises: Cannot flatten unevenly sharded tensor: dimension 0 (size 3)"));
  // reshape (not strict) replicates that dim instead
  const OpCall reshape = make_call("aten.reshape.default", {meta({3, 4})}, {tensor_arg(0), ints_arg({12})});
  CHECK(candidates(dtensor_rule(reshape, specs({"S(0)"}), {2}), mesh_of({2}), reshape.tensors, specs({"S(0)"})) == Rows{"R | R"});
  // reshape of an inner flattened dim: DTensor's non-strict path replicates it (ctshard's rules keep _S)
  const OpCall inner = make_call("aten.reshape.default", {meta({4, 4})}, {tensor_arg(0), ints_arg({16})});
  CHECK(candidates(dtensor_rule(inner, specs({"S(1)"}), {2}), mesh_of({2}), inner.tensors, specs({"S(1)"})) == Rows{"R | R"});
  CHECK(chosen(rule_for(inner), mesh_of({2}), inner.tensors, specs({"S(1)"})) == std::pair<std::string, double>{"_S(0, 4) | S(1)", 0.0});
  // squeeze of a sharded size-1 dim: DTensor refuses to redistribute inside a strict view
  const OpCall squeeze = make_call("aten.squeeze.dim", {meta({1, 4})}, {tensor_arg(0), int_arg(0)});
  CHECK_THAT(error_of([&] { return dtensor_rule(squeeze, specs({"S(0)"}), {2}); }),
             Catch::Contains("This operation would remove or reshape sharded dimension 0"));
  // an expanded sharded size-1 dim: DTensor's rewrite raises KeyError
  const OpCall expand = make_call("aten.expand.default", {meta({1, 4})}, {tensor_arg(0), ints_arg({4, 4})});
  CHECK_THAT(error_of([&] { return dtensor_rule(expand, specs({"S(0)"}), {2}); }), Catch::Contains("KeyError: 0"));
  // t: DTensor's transpose_strategy
  const OpCall t = make_call("aten.t.default", {meta({4, 6})}, {tensor_arg(0)});
  CHECK(candidates(dtensor_rule(t, specs({"S(0)P(sum)"}), {2, 2}), mesh_of({2, 2}), t.tensors, specs({"S(0)P(sum)"})) ==
        Rows{"S(1)P(sum) | S(0)P(sum)"});
}

TEST_CASE("dtensor rule set: tensor ops and factories follow DTensor's op strategies", "[dtensor_rules]") {
  // cat: one row per distinct exemplar, the cat dim unsharded
  OpCall cat = make_call("aten.cat.default", {meta({4, 6}), meta({4, 6})}, {tensors_arg({0, 1}), int_arg(0)});
  const auto cur = specs({"S(0)", "S(1)"});
  CHECK(candidates(dtensor_rule(cat, cur, {2}), mesh_of({2}), cat.tensors, cur) == Rows{"R | R R", "S(1) | S(1) S(1)"});
  // new_zeros of the input's shape: Replicate, then the input's spec (DTensor's -0.1 tie device;
  // here both rows cost 0 and the last matching one wins)
  const OpCall nz = make_call("aten.new_zeros.default", {meta({4, 4})}, {tensor_arg(0), ints_arg({4, 4})});
  const OpRule nzr = dtensor_rule(nz, specs({"S(0)"}), {2});
  CHECK(candidates(nzr, mesh_of({2}), nz.tensors, specs({"S(0)"})) == Rows{"R | S(0)", "S(0) | S(0)"});
  CHECK(chosen(nzr, mesh_of({2}), nz.tensors, specs({"S(0)"})).first == "S(0) | S(0)");
  // unbind along a sharded dim: DTensor raises
  const OpCall unbind = make_call("aten.unbind.int", {meta({4, 2})}, {tensor_arg(0), int_arg(0)});
  CHECK_THAT(error_of([&] { return dtensor_rule(unbind, specs({"S(0)"}), {2}); }),
             Catch::Contains("Attempted to unbind along the sharded dimension 0"));
  // in-place bernoulli_: self keeps its spec; a Partial self has no such row and DTensor raises
  const OpCall bern = make_call("aten.bernoulli_.float", {meta({4, 4})}, {tensor_arg(0), float_arg(0.5)});
  CHECK(candidates(dtensor_rule(bern, specs({"S(1)"}), {2}), mesh_of({2}), bern.tensors, specs({"S(1)"})) == Rows{"S(1) | S(1)"});
  CHECK_THAT(error_of([&] { return dtensor_rule(bern, specs({"P(sum)"}), {2}); }),
             Catch::Contains("in-place operations that require placement changes"));
  // a mixed-Partial input DTensor 2.13's op strategies pass through: listed rows skip the
  // mixed-Partial filter (UnevenInputs::unchecked), so the rule set lists it as DTensor does
  const OpCall view = make_call("aten.view.default", {meta({4, 4})}, {tensor_arg(0), ints_arg({16})});
  CHECK(candidates(dtensor_rule(view, specs({"P(max)P(sum)"}), {2, 2}), mesh_of({2, 2}), view.tensors, specs({"P(max)P(sum)"})) ==
        Rows{"P(max)P(sum) | P(max)P(sum)"});
}

TEST_CASE("dtensor rule set: a call without current specs gets the rows DTensor runs as they are", "[dtensor_rules]") {
  // softmax over dim 1 of [4, 6]: DTensor's follow function keeps S(0) and reduces every Partial;
  // the fixed points are the rows whose input DTensor leaves alone
  const OpCall sm = make_call("aten._softmax.default", {meta({4, 6})}, {tensor_arg(0), int_arg(1), bool_arg(false)});
  const OpRule fixed = (*dtensor_rules().find(sm.op))(sm);
  CHECK(fixed.uneven_inputs == UnevenInputs::unchecked);
  // (queried with a sharded input, so the placeholders fill)
  const auto rows = candidates(fixed, mesh_of({2}), sm.tensors, specs({"S(1)"}));
  CHECK(rows == Rows{"R | R", "S(0) | S(0)"});
  // and a call with current specs that do not fit is an error naming DTensor's function
  OpCall bad = sm;
  bad.current = specs({"R", "R"});
  bad.mesh_sizes = {2};
  CHECK_THAT(error_of([&] { return (*dtensor_rules().find(sm.op))(bad); }), Catch::Contains("softmax_strategy"));
}

TEST_CASE("dtensor rule set: listed_rows lists exactly the given full-mesh rows", "[dtensor_rules]") {
  const std::vector<MeshStrategy> rows{{parse_spec("S(0)R"), parse_spec("S(0)R")}, {parse_spec("RS(1)"), parse_spec("RS(0)")}};
  const ListedRows l = listed_rows(rows, 1, 1, 2);
  CHECK(rows_text(l.rules) == Rows{"S(0),S(0)", "S(1),S(0)"});
  const OpRule rule{l.rules, UnevenInputs::unchecked, l.filter};
  CHECK(candidates(rule, mesh_of({2, 2}), {meta({4, 4})}, specs({"RR"})) == Rows{"RS(1) | RS(0)", "S(0)R | S(0)R"});
  CHECK_THAT(error_of([&] { return listed_rows({{parse_spec("R")}}, 1, 1, 1); }), Catch::Contains("1 specs for 2 operands"));
  CHECK_THAT(error_of([&] { return listed_rows({{parse_spec("R"), parse_spec("RR")}}, 1, 1, 1); }), Catch::Contains("'RR' has 2 placements"));
  CHECK(to_string(UnevenInputs::unchecked) == std::string("unchecked"));
}
