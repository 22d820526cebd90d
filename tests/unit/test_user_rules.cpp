// Rules for the user's own ops (registry/user_rules.hpp): a constexpr single-dim strategy, kinds
// and a factory registered on a registry the user owns (a copy of the built-in one), expanded by
// the StrategyEnumerator like a built-in rule; the built-in registry stays as it was; errors name
// the rule and the entry.
#include <catch2/catch.hpp>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "ctshard/expand/mesh_expansion.hpp"
#include "ctshard/expand/single_dim_strategy.hpp"
#include "ctshard/registry.hpp"
#include "ctshard/registry/op_rule.hpp"
#include "op_call_builders.hpp"

using namespace ctshard;
using namespace ctshard::test;
using Rows = std::vector<std::string>;

namespace {

/// Rotary embedding `rope(x [b, s, h, d], freqs [s, d])`: local on batch and heads (x's dims 0 and
/// 2, freqs replicated), and on the sequence dim with freqs sharded alike; never on the rotated
/// dim d, whose halves are mixed.
struct rope_rule {
  constexpr RuleSet operator()() const {
    RuleSet r(1, 2);
    r.add({ShardingPlaceholder(0), ShardingPlaceholder(0), Replicate()});
    r.add({ShardingPlaceholder(1), ShardingPlaceholder(1), ShardingPlaceholder(0)});
    r.add({ShardingPlaceholder(2), ShardingPlaceholder(2), Replicate()});
    return r;
  }
};
constexpr auto rope = make_single_dim_strategy<rope_rule>();

// The user's rule is a constant: its size, its rows and the laws of its mesh expansion.
static_assert(rope.size() == 3 && rope.num_inputs() == 2);
static_assert(rope[1][2] == ShardingPlaceholder(0));
static_assert(table_laws_hold(mesh_expansion_v<rope, 2>));
static_assert(mesh_expansion_v<rope, 2>.size() == 16);  // (3 rules + all-Replicate)^2

OpCall tensor_call(std::string op, std::vector<TensorMeta> tensors, std::vector<OpArg> rest = {}) {
  std::vector<OpArg> args;
  for (std::size_t i = 0; i < tensors.size(); ++i) args.push_back(tensor_arg(static_cast<std::int64_t>(i)));
  for (auto& a : rest) args.push_back(std::move(a));
  return make_call(std::move(op), std::move(tensors), std::move(args));
}

OpRule rule_in(const OpRegistry& r, const OpCall& c) {
  const RuleFactory* f = r.find(c.op);
  if (f == nullptr) throw error("test: no rule for " + c.op);
  return (*f)(c);
}

const Rows partials2{"P(sum),P(sum)", "P(avg),P(avg)", "P(max),P(max)", "P(min),P(min)"};

}  // namespace

TEST_CASE("a constexpr user rule is registered on a copy of the built-in registry, which stays as it was") {
  OpRegistry mine = builtin_registry();
  mine.add("mylib.rope.default", rope);
  CHECK(mine.contains("mylib.rope.default"));
  CHECK_FALSE(builtin_registry().contains("mylib.rope.default"));
  CHECK(mine.size() == builtin_registry().size() + 1);
  CHECK(mine.contains("aten.mm.default"));  // the built-in rules come along

  const OpCall c = tensor_call("mylib.rope.default", {meta({4, 16, 8, 64}), meta({16, 64})});
  const OpRule rule = rule_in(mine, c);
  CHECK(rows_text(rule.rules) == Rows{"S?(0),S?(0),R", "S?(1),S?(1),S?(0)", "S?(2),S?(2),R"});
  CHECK(rule.rules.rank(1) == 4);
  CHECK(rule.rules.rank(2) == 2);

  // Expanded and priced by the enumerator like a built-in rule: x batch- and head-sharded stays put.
  const std::array<std::int64_t, 2> sizes{2, 4};
  const MeshTopology mesh = MeshTopology::build(sizes);
  const std::vector<Spec> current{parse_spec("S(0)S(2)"), parse_spec("RR")};
  StrategyEnumerator e(rule.rules, mesh, rule.uneven_inputs, rule.filter, rule.placeholder_fill);
  const Choice choice = e.choose(c.tensors, current);
  CHECK(to_string(e.spec_of(choice, 0)) == "S(0)S(2)");
  CHECK(to_string(e.spec_of(choice, 1)) == "S(0)S(2)");
  CHECK(to_string(e.spec_of(choice, 2)) == "RR");
  CHECK(choice.total_us == 0.0);
  // x sharded on the rotated dim 3 has no row: it is gathered (a cost), never kept.
  const std::vector<Spec> rotated{parse_spec("S(3)R"), parse_spec("RR")};
  const Choice moved = e.choose(c.tensors, rotated);
  CHECK(to_string(e.spec_of(moved, 1)).find("S(3)") == std::string::npos);
  CHECK(moved.total_us > 0.0);
}

TEST_CASE("user rules by kind: identity, pointwise (broadcasting, extra rows), replicate") {
  OpRegistry mine = builtin_registry();
  mine.add("mylib.log_tensor.default", RuleKind::identity);
  mine.add("mylib.bias_gelu.default", RuleKind::pointwise);
  RuleSet scale_partials(1, 2);
  scale_partials.add({Partial(ReduceOp::sum), Partial(ReduceOp::sum), Replicate()});
  mine.add("mylib.scale.default", RuleKind::pointwise, 1, scale_partials);
  mine.add("mylib.opaque.default", RuleKind::replicate, 2);

  OpCall log = tensor_call("mylib.log_tensor.default", {meta({32, 1024}, 8)}, {str_arg("tokens")});
  CHECK(rows_text(rule_in(mine, log).rules) ==
        Rows{"S?(0),S?(0)", "S?(1),S?(1)", "P(sum),P(sum)", "P(avg),P(avg)", "P(max),P(max)", "P(min),P(min)"});
  CHECK(rows_text(rule_in(mine, tensor_call("mylib.bias_gelu.default", {meta({8, 6}), meta({6})})).rules) ==
        Rows{"S?(0),S?(0),R", "S?(1),S?(1),S?(0)"});
  CHECK(rows_text(rule_in(mine, tensor_call("mylib.scale.default", {meta({8, 6}), meta({8, 6})})).rules) ==
        Rows{"S?(0),S?(0),S?(0)", "S?(1),S?(1),S?(1)", "P(sum),P(sum),R"});
  const OpRule opaque = rule_in(mine, tensor_call("mylib.opaque.default", {meta({8, 6})}));
  CHECK(opaque.rules.size() == 0);
  CHECK(opaque.rules.num_outputs() == 2);
  CHECK(opaque.rules.num_inputs() == 1);

  CHECK(error_of([&] {
          return rule_in(mine, tensor_call("mylib.log_tensor.default", {meta({4}), meta({4})}));
        }) == "ctshard: rule 'mylib.log_tensor.default' (identity): takes one tensor input, the call has 2");
  CHECK(error_of([&] {
          return rule_in(mine, tensor_call("mylib.bias_gelu.default", {meta({8, 6}), meta({5})}));
        }).starts_with("ctshard: rule 'mylib.bias_gelu.default' (pointwise): "));
  CHECK(error_of([&] {
          return rule_in(mine, tensor_call("mylib.scale.default", {meta({8, 6})}));
        }) == "ctshard: rule 'mylib.scale.default': its extra rows have 3 entries, the call's rows 2 (1 output(s) + 1 input(s))");
  CHECK(error_of([] { return parse_rule_kind("mylib.x.default", "elementwise"); }) ==
        "ctshard: rule 'mylib.x.default': unknown kind 'elementwise' (identity, pointwise or replicate)");
}

TEST_CASE("a user rule that depends on the call's arguments is a factory of the call") {
  OpRegistry mine = builtin_registry();
  // mylib.fused_norm(x, dim): local on every dim but the normalized one.
  mine.add("mylib.fused_norm.default", [](const OpCall& call) {
    const auto rank = static_cast<std::int64_t>(call.tensors.at(0).shape.rank);
    const std::int64_t dim = (call.args.at(1).integer + rank) % rank;
    RuleSet r(1, 1);
    for (std::int64_t d = 0; d < rank; ++d)
      if (d != dim) r.add({ShardingPlaceholder(static_cast<int>(d)), ShardingPlaceholder(static_cast<int>(d))});
    return r;
  });
  CHECK(rows_text(rule_in(mine, tensor_call("mylib.fused_norm.default", {meta({4, 6, 8})}, {int_arg(-1)})).rules) ==
        Rows{"S?(0),S?(0)", "S?(1),S?(1)"});
  CHECK(rows_text(rule_in(mine, tensor_call("mylib.fused_norm.default", {meta({4, 6, 8})}, {int_arg(1)})).rules) ==
        Rows{"S?(0),S?(0)", "S?(2),S?(2)"});
  // its errors carry the rule's name
  mine.add("mylib.picky.default", [](const OpCall&) -> RuleSet { throw error("needs a 3-d input"); });
  CHECK(error_of([&] { return rule_in(mine, tensor_call("mylib.picky.default", {meta({4})})); }) ==
        "ctshard: rule 'mylib.picky.default': needs a 3-d input");
}

TEST_CASE("a user rule that does not fit a call names the rule, the row and the entry") {
  OpRegistry mine = builtin_registry();
  mine.add("mylib.rope.default", rope);
  CHECK(error_of([&] {
          return rule_in(mine, tensor_call("mylib.rope.default", {meta({4, 16, 8, 64})}));
        }) == "ctshard: rule 'mylib.rope.default': its rows have 1 output(s) + 2 input(s) = 3 entries, but the call has 1 tensor input(s)");
  // S?(2) of x on a 2-d x
  CHECK(error_of([&] {
          return rule_in(mine, tensor_call("mylib.rope.default", {meta({16, 64}), meta({16, 64})}));
        }) == "ctshard: rule 'mylib.rope.default': row 2, entry 1 (input 0): S?(2) names dim 2 of a rank-2 tensor");
  // an output the graph annotates is checked too (an unannotated one is a 0-d meta: not checked)
  OpCall annotated = tensor_call("mylib.rope.default", {meta({4, 16, 8, 64}), meta({16, 64})});
  annotated.outputs = {meta({16, 64})};
  CHECK(error_of([&] { return rule_in(mine, annotated); }) ==
        "ctshard: rule 'mylib.rope.default': row 2, entry 0 (output 0): S?(2) names dim 2 of a rank-2 tensor");
  annotated.outputs = {meta({})};
  CHECK(rule_in(mine, annotated).rules.size() == 3);
  CHECK(error_of([&] {
          return rule_in(mine, tensor_call("mylib.rope.default", {meta({4, 16, 8, 64}), meta({})}));
        }) == "ctshard: rule 'mylib.rope.default': row 1, entry 2 (input 1): S?(0) names dim 0 of a rank-0 tensor");
  // an all-Replicate row is the framework's: dropped, not an error
  RuleSet with_r(1, 1);
  with_r.add({Replicate(), Replicate()});
  with_r.add({ShardingPlaceholder(0), ShardingPlaceholder(0)});
  mine.add("mylib.copy.default", with_r);
  CHECK(rows_text(rule_in(mine, tensor_call("mylib.copy.default", {meta({4})})).rules) == Rows{"S?(0),S?(0)"});
  // a name registered twice
  CHECK(error_of([&] {
          mine.add("mylib.copy.default", RuleKind::identity);
          return 0;
        }) == "ctshard::OpRegistry: op 'mylib.copy.default' registered twice");
  CHECK(error_of([] { return user_rule_factory(UserRule{"mylib.empty.default"}); }) == "ctshard: rule 'mylib.empty.default': give rows or a kind");
}
