#include <catch2/catch.hpp>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "ctshard/core/spec.hpp"
#include "ctshard/registry/builtin_registry.hpp"
#include "ctshard/registry/tensor_ops.hpp"
#include "ctshard/rules/factory_rules.hpp"
#include "ctshard/rules/tensor_op_rules.hpp"
#include "ctshard/select/enumerator.hpp"

#include "op_call_builders.hpp"

using namespace ctshard;

namespace {

using test::rows;
constexpr auto& integer = test::int_arg;
constexpr auto& ints = test::ints_arg;

/// "[P(r), P(r), ...]" (width cells) for r = sum, avg, max, min.
std::vector<std::string> partials(std::size_t width) {
  std::vector<std::string> out;
  for (const char* r : {"sum", "avg", "max", "min"}) {
    std::string text = "[";
    for (std::size_t k = 0; k < width; ++k) {
      if (k > 0) text += ", ";
      text += "P(";
      text += r;
      text += ")";
    }
    out.push_back(text + "]");
  }
  return out;
}
std::vector<std::string> concat(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

OpArg none() { return OpArg{}; }
OpArg other(std::string text) {
  OpArg a;
  a.kind = OpArg::Kind::other;
  a.text = std::move(text);
  return a;
}

/// A call whose first `shapes.size()` tensors are positional (or one tensor list when `as_list`).
OpCall call_of(std::string op, std::vector<TensorShape> shapes, std::vector<OpArg> rest, bool as_list = false) {
  OpCall c;
  c.op = std::move(op);
  OpArg list;
  list.kind = OpArg::Kind::tensor_list;
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    c.tensors.push_back(TensorMeta{shapes[i], 4});
    OpArg t;
    t.kind = OpArg::Kind::tensor;
    t.integer = static_cast<std::int64_t>(i);
    if (as_list) list.ints.push_back(t.integer);
    else c.args.push_back(t);
  }
  if (as_list) c.args.push_back(list);
  for (auto& a : rest) c.args.push_back(std::move(a));
  return c;
}

OpRule rule_of(const OpCall& call) {
  const RuleFactory* f = builtin_registry().find(call.op);
  REQUIRE(f != nullptr);
  return (*f)(call);
}

/// DTensor's choice through the enumerator: output spec texts (all outputs), input spec texts,
/// total cost, number of surviving strategies.
struct Picked {
  std::vector<std::string> outputs, inputs;
  double total_us = 0;
  std::size_t strategies = 0;
};
Picked pick(const OpCall& call, std::vector<std::int64_t> mesh, const std::vector<std::string>& current, const OpRule* given = nullptr) {
  const OpRule rule = given != nullptr ? *given : rule_of(call);
  StrategyEnumerator e(rule.rules, MeshTopology::build(std::span<const std::int64_t>(mesh)), rule.uneven_inputs, rule.filter, rule.placeholder_fill);
  std::vector<Spec> specs;
  specs.reserve(current.size());
  for (const auto& s : current) specs.push_back(parse_spec(s));
  ChoiceAccumulator acc;
  std::vector<std::vector<std::uint8_t>> digits;
  (void)e.for_each(call.tensors, specs, [&](const CandidateView& c) {
    acc.offer(c.index, c.total_us, c.inputs_match);
    digits.emplace_back(c.digits.begin(), c.digits.end());
  });
  Picked p;
  p.strategies = acc.count();
  if (p.strategies == 0) return p;
  const Choice choice = acc.choice();
  for (std::size_t k = 0; k < e.num_outputs(); ++k) p.outputs.push_back(to_string(e.spec_of(digits[choice.index], k)));
  for (std::size_t i = 0; i < e.num_inputs(); ++i) p.inputs.push_back(to_string(e.spec_of(digits[choice.index], e.num_outputs() + i)));
  p.total_us = choice.total_us;
  return p;
}

}  // namespace

// The generators are constant expressions.
constexpr std::array<TensorShape, 2> cat_inputs{TensorShape{8, 8, 8}, TensorShape{8, 8, 8}};
static_assert(cat_single_dim_strategy(cat_inputs, 0).size() == 6);  // DTensor's rows (CatPieces::dtensor)
static_assert(cat_single_dim_strategy(cat_inputs, 0, CatPieces::strided_shard).size() == 7);
static_assert(cat_single_dim_strategy(cat_inputs, 0, CatPieces::strided_shard).at(6, 0) == StridedShard(0, 2));
static_assert(cat_single_dim_strategy(cat_inputs, 0).at(0, 2) == ShardingPlaceholder(1));
static_assert(unbind_single_dim_strategy(TensorShape{3, 4, 5}, 0).num_outputs() == 3);
static_assert(slice_single_dim_strategy(TensorShape{4, 8}, 1, 0, 4, 1).size() == 5);
static_assert(like_single_dim_strategy(TensorShape{4}).at(1, 0) == Replicate());
static_assert(cast_partials_for("torch.int64") == CastPartials::max_min);

TEST_CASE("tensor op rules: cat rows and DTensor's 2x2x2 counts", "[view]") {
  const std::array<TensorShape, 2> shapes{TensorShape{8, 8, 8}, TensorShape{8, 8, 8}};
  CHECK(rows(cat_single_dim_strategy(shapes, 0)) == concat({"[S?(1), S?(1), S?(1)]", "[S?(2), S?(2), S?(2)]"}, partials(3)));
  CHECK(rows(cat_single_dim_strategy(shapes, -1)) == concat({"[S?(0), S?(0), S?(0)]", "[S?(1), S?(1), S?(1)]"}, partials(3)));
  const std::array<TensorShape, 2> legacy{TensorShape{0}, TensorShape{8, 8}};
  CHECK(rows(cat_single_dim_strategy(legacy, 0)) ==
        std::vector<std::string>{"[S?(1), R, S?(1)]", "[P(sum), R, P(sum)]", "[P(avg), R, P(avg)]", "[P(max), R, P(max)]", "[P(min), R, P(min)]"});

  // test_single_dim_strategy.py: cat dim 0 of (8, 8, 8) tensors on 2x2x2, with DTensor's rows
  // (CatPieces::dtensor); the registry's rule adds [_S(0, 2), S(0), S(0)] for the equal pieces
  // (8 single-dim rules per mesh dim instead of 7), and the choices stay DTensor's.
  const std::array<TensorShape, 2> eights{TensorShape{8, 8, 8}, TensorShape{8, 8, 8}};
  const std::array<TensorShape, 2> narrows{TensorShape{8, 4, 8}, TensorShape{8, 4, 8}};
  const OpRule dtensor_rule{cat_single_dim_strategy(eights, 0, CatPieces::dtensor), UnevenInputs::keep_existing_shards, {}};
  const OpRule dtensor_narrow{cat_single_dim_strategy(narrows, 0, CatPieces::dtensor), UnevenInputs::keep_existing_shards, {}};
  const OpCall cat = call_of("aten.cat.default", {TensorShape{8, 8, 8}, TensorShape{8, 8, 8}}, {integer(0)}, true);
  const OpCall narrow = call_of("aten.cat.default", {TensorShape{8, 4, 8}, TensorShape{8, 4, 8}}, {integer(0)}, true);
  CHECK(rule_of(cat).uneven_inputs == UnevenInputs::keep_existing_shards);
  for (const OpRule* rule : {&dtensor_rule, static_cast<const OpRule*>(nullptr)}) {
    const bool dtensor = rule != nullptr;
    INFO((dtensor ? "DTensor's rows" : "the registry's rule"));
    const Picked a = pick(cat, {2, 2, 2}, {"RRS(1)", "S(1)S(1)S(1)"}, rule);
    CHECK(a.strategies == (dtensor ? 199u : 338u));
    CHECK(a.outputs == std::vector<std::string>{"S(1)S(1)S(1)"});
    const Picked b = pick(cat, {2, 2, 2}, {"P(sum)RS(1)", "P(sum)S(1)S(1)"}, rule);
    CHECK(b.strategies == (dtensor ? 199u : 338u));
    CHECK(b.outputs == std::vector<std::string>{"P(sum)S(1)S(1)"});
    const Picked c = pick(narrow, {2, 2, 2}, {"RRS(1)", "S(1)S(1)R"}, dtensor ? &dtensor_narrow : nullptr);
    CHECK(c.strategies == (dtensor ? 198u : 337u));
    CHECK(c.outputs == std::vector<std::string>{"S(1)S(1)R"});
  }
  // the equal pieces sharded on the cat dim: the StridedShard row, no data moved
  const Picked d = pick(cat, {2, 2, 2}, {"S(0)RS(0)", "S(0)RS(0)"});
  CHECK(d.outputs == std::vector<std::string>{"_S(0, 2)R_S(0, 2)"});
  CHECK(d.total_us == 0.0);
}

TEST_CASE("tensor op rules: split and unbind have one output per piece", "[view]") {
  const OpRule qkv = rule_of(call_of("aten.split_with_sizes.default", {TensorShape{32768, 2048}}, {ints({1536, 256, 256}), integer(-1)}));
  CHECK(qkv.rules.num_outputs() == 3);
  CHECK(qkv.rules.num_inputs() == 1);
  CHECK(rows(qkv.rules) == concat({"[S?(0), S?(0), S?(0), S?(0)]"}, partials(4)));
  CHECK(qkv.uneven_inputs == UnevenInputs::keep_existing_shards);

  const OpRule chunks = rule_of(call_of("aten.split.Tensor", {TensorShape{10, 4}}, {integer(4)}));
  CHECK(chunks.rules.num_outputs() == 3);  // 4 + 4 + 2
  CHECK(rows(chunks.rules) == concat({"[S?(1), S?(1), S?(1), S?(1)]"}, partials(4)));
  CHECK(split_piece_sizes(10, 4) == std::vector<std::int64_t>{4, 4, 2});
  CHECK(split_piece_sizes(8, 4) == std::vector<std::int64_t>{4, 4});

  // ViT: unbind(permute(qkv) (3, 8, 12, 197, 64), 0) -> q, k, v of rank 4.
  const OpRule unbind = rule_of(call_of("aten.unbind.int", {TensorShape{3, 8, 12, 197, 64}}, {}));
  CHECK(unbind.rules.num_outputs() == 3);
  CHECK(unbind.rules.rank(0) == 4);
  CHECK(rows(unbind.rules) ==
        concat({"[S?(0), S?(0), S?(0), S?(1)]", "[S?(1), S?(1), S?(1), S?(2)]", "[S?(2), S?(2), S?(2), S?(3)]", "[S?(3), S?(3), S?(3), S?(4)]"},
               partials(4)));
  const Picked p = pick(call_of("aten.unbind.int", {TensorShape{3, 8, 12, 197, 64}}, {}), {2, 4}, {"S(1)S(2)"});
  CHECK(p.total_us == 0.0);
  CHECK(p.outputs == std::vector<std::string>{"S(0)S(1)", "S(0)S(1)", "S(0)S(1)"});
}

TEST_CASE("tensor op rules: select, slice and slice_scatter", "[view]") {
  CHECK(rows(rule_of(call_of("aten.select.int", {TensorShape{8, 197, 768}}, {integer(1), integer(0)})).rules) ==
        concat({"[S?(0), S?(0)]", "[S?(1), S?(2)]"}, partials(2)));
  CHECK(rows(rule_of(call_of("aten.slice.Tensor", {TensorShape{8, 1536, 768}}, {integer(1), integer(0), integer(768)})).rules) ==
        concat({"[S?(0), S?(0)]", "[S?(2), S?(2)]"}, partials(2)));
  // A slice that keeps everything is a view: its dim stays shardable.
  CHECK(rows(rule_of(call_of("aten.slice.Tensor", {TensorShape{8, 16}}, {integer(0), integer(0), integer(INT64_MAX)})).rules) ==
        concat({"[S?(0), S?(0)]", "[S?(1), S?(1)]"}, partials(2)));
  CHECK(rows(rule_of(call_of("aten.slice.Tensor", {TensorShape{8, 16}}, {integer(-1), none(), none(), integer(2)})).rules) ==
        concat({"[S?(0), S?(0)]"}, partials(2)));

  const OpCall scatter = call_of("aten.slice_scatter.default", {TensorShape{8, 8}, TensorShape{8, 4}}, {integer(1), integer(0), integer(4)});
  CHECK(rows(rule_of(scatter).rules) == concat({"[S?(0), S?(0), S?(0)]"}, partials(3)));
  // Regression B13: src is S(0); the src-derived candidate costs nothing and is chosen.
  const Picked b13 = pick(scatter, {2}, {"R", "S(0)"});
  CHECK(b13.inputs == std::vector<std::string>{"S(0)", "S(0)"});
  CHECK(b13.outputs == std::vector<std::string>{"S(0)"});
  CHECK(b13.total_us == 0.0);
  // Megatron writes a whole dim back (end = INT64_MAX): the output is src, dim 1 may stay sharded.
  const OpCall whole =
      call_of("aten.slice_scatter.default", {TensorShape{8, 1536, 768}, TensorShape{8, 1536, 768}}, {integer(1), integer(0), integer(INT64_MAX)});
  CHECK(rows(rule_of(whole).rules) == concat({"[S?(0), S?(0), S?(0)]", "[S?(1), S?(1), S?(1)]", "[S?(2), S?(2), S?(2)]"}, partials(3)));
}

TEST_CASE("tensor op rules: stack inserts a dim", "[view]") {
  const OpCall stack = call_of("aten.stack.default", {TensorShape{4, 8}, TensorShape{4, 8}}, {integer(1)}, true);
  CHECK(rows(rule_of(stack).rules) == concat({"[S?(0), S?(0), S?(0)]", "[S?(2), S?(1), S?(1)]"}, partials(3)));
  CHECK(rule_of(stack).rules.rank(0) == 3);
}

TEST_CASE("partial passthrough: DTensor's rows drop exactly the Partial-input rows", "[view]") {
  const OpRegistry faithful = make_builtin_registry(RegistryOptions{.partial_passthrough = PartialPassthrough::dtensor});
  const auto faithful_rule = [&](const OpCall& c) { return (*faithful.find(c.op))(c); };
  // clone: ctshard passes every Partial through; DTensor 2.13 keeps the Shard rows only
  const OpCall clone = call_of("aten.clone.default", {TensorShape{4, 8}}, {});
  CHECK(rows(faithful_rule(clone).rules) == std::vector<std::string>{"[S?(0), S?(0)]", "[S?(1), S?(1)]"});
  CHECK(rows(rule_of(clone).rules).size() == 6);
  // gelu_backward(grad, self): ctshard's rows linear in the gradient go; the Shard rows stay
  const OpCall gelu_bw = call_of("aten.gelu_backward.default", {TensorShape{4, 8}, TensorShape{4, 8}}, {});
  const auto all = rows(rule_of(gelu_bw).rules);
  const auto kept = rows(faithful_rule(gelu_bw).rules);
  std::vector<std::string> expected;
  for (const auto& r : all)
    if (r.find(", P(") == std::string::npos) expected.push_back(r);
  CHECK(kept == expected);
  CHECK(kept.size() < all.size());
  // an op outside partial_passthrough_ops is untouched (mm's Partial-input rows are DTensor's own)
  const OpCall mm = call_of("aten.mm.default", {TensorShape{4, 8}, TensorShape{8, 4}}, {});
  CHECK(rows(faithful_rule(mm).rules) == rows(rule_of(mm).rules));
  // every name of the list has a rule to replace
  for (const std::string_view op : partial_passthrough_ops) CHECK(faithful.contains(op));
  OpRegistry empty;
  CHECK_THROWS_WITH(empty.replace("aten.clone.default", [](const OpCall&) { return OpRule{}; }),
                    Catch::Contains("cannot replace the rule of 'aten.clone.default': not registered"));
}

TEST_CASE("tensor op rules: copies and casts", "[view]") {
  CHECK(rows(rule_of(call_of("aten.clone.default", {TensorShape{4, 8}}, {})).rules) == concat({"[S?(0), S?(0)]", "[S?(1), S?(1)]"}, partials(2)));
  CHECK(rows(rule_of(call_of("aten.detach.default", {TensorShape{}}, {})).rules) == partials(2));

  OpCall to_int = call_of("aten._to_copy.default", {TensorShape{8, 1536}}, {});
  to_int.kwargs.emplace_back("dtype", other("torch.int64"));
  CHECK(rows(rule_of(to_int).rules) == std::vector<std::string>{"[S?(0), S?(0)]", "[S?(1), S?(1)]", "[P(max), P(max)]", "[P(min), P(min)]"});
  OpCall to_bool = to_int;
  to_bool.kwargs[0].second.text = "torch.bool";
  CHECK(rows(rule_of(to_bool).rules) == std::vector<std::string>{"[S?(0), S?(0)]", "[S?(1), S?(1)]"});
  OpCall to_float = to_int;
  to_float.kwargs[0].second.text = "torch.float32";
  CHECK(rule_of(to_float).rules.size() == 6);
  CHECK(rows(rule_of(call_of("prims.convert_element_type.default", {TensorShape{4}}, {other("torch.bfloat16")})).rules) ==
        concat({"[S?(0), S?(0)]"}, partials(2)));

  // copy(dst (4, 8), src (8,)): the output is src broadcast to dst.
  CHECK(rows(rule_of(call_of("aten.copy.default", {TensorShape{4, 8}, TensorShape{8}}, {})).rules) ==
        concat({"[S?(0), S?(0), R]", "[S?(1), S?(1), S?(0)]"}, partials(3)));
}

TEST_CASE("tensor op rules: like and new_* factories never emit a Partial output from a Partial input", "[view]") {
  CHECK(rows(like_single_dim_strategy(TensorShape{4, 8})) ==
        std::vector<std::string>{"[S?(0), S?(0)]", "[S?(1), S?(1)]", "[R, P(sum)]", "[R, P(avg)]", "[R, P(max)]", "[R, P(min)]"});
  // Regression B19.
  const Picked ones = pick(call_of("aten.ones_like.default", {TensorShape{4, 8}}, {}), {2}, {"P(sum)"});
  CHECK(ones.outputs == std::vector<std::string>{"R"});
  CHECK(ones.total_us == 0.0);
  const Picked zeros = pick(call_of("aten.zeros_like.default", {TensorShape{4, 8}}, {}), {2}, {"S(0)"});
  CHECK(zeros.outputs == std::vector<std::string>{"S(0)"});
  CHECK(zeros.total_us == 0.0);
  const Picked full = pick(call_of("aten.full_like.default", {TensorShape{}}, {OpArg{OpArg::Kind::floating, 0, 3.0, {}, {}, {}}}), {2}, {"R"});
  CHECK(full.outputs == std::vector<std::string>{"R"});
  CHECK(full.total_us == 0.0);
  const Picked new_full = pick(call_of("aten.new_full.default", {TensorShape{4, 8}}, {ints({4, 8}), integer(0)}), {2}, {"S(0)"});
  CHECK(new_full.inputs == std::vector<std::string>{"S(0)"});
  CHECK(new_full.outputs == std::vector<std::string>{"S(0)"});  // follows the input (DTensor's -0.1 preference)
  CHECK(new_full.total_us == 0.0);

  CHECK(rows(new_factory_single_dim_strategy(TensorShape{4, 8}, TensorShape{2, 2}, FactoryContents::filled)) ==
        std::vector<std::string>{"[R, S?(0)]", "[R, S?(1)]", "[R, P(sum)]", "[R, P(avg)]", "[R, P(max)]", "[R, P(min)]"});
  CHECK(rows(new_factory_single_dim_strategy(TensorShape{4}, TensorShape{4}, FactoryContents::uninitialized)) ==
        concat({"[R, S?(0)]", "[S?(0), S?(0)]", "[R, P(sum)]", "[R, P(avg)]", "[R, P(max)]", "[R, P(min)]"}, partials(2)));
  // empty_like keeps Partial: its values are overwritten.
  CHECK(rows(rule_of(call_of("aten.empty_like.default", {TensorShape{4}}, {})).rules) == concat({"[S?(0), S?(0)]"}, partials(2)));
}

TEST_CASE("tensor op rules: size-only factories", "[view]") {
  CHECK(rows(factory_single_dim_strategy(TensorShape{768, 1, 768}, FactoryShards::each_dim)) == std::vector<std::string>{"[S(0)]", "[S(2)]"});
  CHECK(factory_single_dim_strategy(TensorShape{768, 1, 768}, FactoryShards::replicate_only).size() == 0);
  // Registered without Shard rows: a zero-input op would otherwise take the last (Shard) row.
  const OpRule empty = rule_of(call_of("aten.empty.memory_format", {}, {ints({768, 1, 768})}));
  CHECK(empty.rules.num_outputs() == 1);
  CHECK(empty.rules.num_inputs() == 0);
  CHECK(empty.rules.rank(0) == 3);
  CHECK(empty.rules.size() == 0);
  const Picked e = pick(call_of("aten.empty.memory_format", {}, {ints({768, 8, 768})}), {2, 2, 2}, {});
  CHECK(e.outputs == std::vector<std::string>{"RRR"});
  CHECK(rule_of(call_of("aten.zeros.default", {}, {ints({})})).rules.size() == 0);  // 0-d: Replicate only
  CHECK(rule_of(call_of("aten.arange.start", {}, {integer(0), integer(12288)})).rules.size() == 0);
  const Picked z = pick(call_of("aten.zeros.default", {}, {ints({})}), {2, 2}, {});
  CHECK(z.outputs == std::vector<std::string>{"RR"});
}

TEST_CASE("tensor op rules: bad arguments name the op and the argument", "[view]") {
  CHECK_THROWS_WITH(rule_of(call_of("aten.split_with_sizes.default", {TensorShape{10}}, {ints({4, 4})})),
                    Catch::Contains("aten.split_with_sizes.default") && Catch::Contains("add up to 8"));
  CHECK_THROWS_WITH(rule_of(call_of("aten.split.Tensor", {TensorShape{10}}, {integer(0)})),
                    Catch::Contains("aten.split.Tensor") && Catch::Contains("split_size must be >= 1"));
  CHECK_THROWS_WITH(rule_of(call_of("aten.select.int", {TensorShape{4, 8}}, {integer(2), integer(0)})),
                    Catch::Contains("aten.select.int") && Catch::Contains("dim 2 is out of range"));
  CHECK_THROWS_WITH(rule_of(call_of("aten.select.int", {TensorShape{4, 8}}, {integer(0)})), Catch::Contains("argument 'index' is missing"));
  CHECK_THROWS_WITH(rule_of(call_of("aten.slice.Tensor", {TensorShape{4, 8}}, {integer(0), integer(0), integer(2), integer(0)})),
                    Catch::Contains("aten.slice.Tensor") && Catch::Contains("step must be >= 1"));
  CHECK_THROWS_WITH(rule_of(call_of("aten.slice_scatter.default", {TensorShape{8, 8}, TensorShape{4, 4}}, {integer(1)})),
                    Catch::Contains("aten.slice_scatter.default") && Catch::Contains("differs from input size"));
  CHECK_THROWS_WITH(rule_of(call_of("aten.cat.default", {TensorShape{8, 8}, TensorShape{8}}, {integer(0)}, true)),
                    Catch::Contains("aten.cat.default") && Catch::Contains("ranks 2 and 1"));
  CHECK_THROWS_WITH(rule_of(call_of("aten.copy.default", {TensorShape{4, 8}, TensorShape{3}}, {})),
                    Catch::Contains("aten.copy.default") && Catch::Contains("not broadcast"));
  CHECK_THROWS_WITH(rule_of(call_of("aten.zeros.default", {}, {other("s0")})), Catch::Contains("argument 'size' must be a list of integers"));
  CHECK_THROWS_WITH(rule_of(call_of("prims.convert_element_type.default", {TensorShape{4}}, {})), Catch::Contains("argument 'dtype' is missing"));
}

TEST_CASE("tensor op rules: registered overloads", "[view]") {
  OpRegistry r;
  register_tensor_ops(r);
  CHECK(r.size() == 39);
  for (const char* op :
       {"aten.split.Tensor", "aten.unbind.int", "aten.cat.default", "aten.copy.default", "aten._to_copy.default", "aten.slice_backward.default",
        "aten.tril.default", "aten.triu.default", "prims.convert_element_type.default", "aten.lift_fresh_copy.default", "aten.new_zeros.default",
        "aten.arange.start", "aten.new_empty_strided.default", "prims.iota.default", "aten.scalar_tensor.default", "aten.copy_.default",
        "prims.device_put.default", "tg.log_tensor.default"})
    CHECK(r.contains(op));
}

TEST_CASE("tensor op rules: slice_backward keeps other dims' shards and every Partial; tril keeps batch dims", "[view]") {
  const OpRule sb =
      rule_of(call_of("aten.slice_backward.default", {TensorShape{4, 3, 2}}, {ints({4, 7, 2}), integer(1), integer(2), integer(5), integer(1)}));
  CHECK(rows(sb.rules) == concat({"[S?(0), S?(0)]", "[S?(2), S?(2)]"}, partials(2)));
  CHECK(sb.uneven_inputs == UnevenInputs::keep_existing_shards);
  CHECK_THROWS_WITH(rule_of(call_of("aten.slice_backward.default", {TensorShape{4, 3}}, {ints({4}), integer(0), integer(0), integer(4), integer(1)})),
                    Catch::Contains("argument 'input_sizes' must have the gradient's rank"));
  const OpRule tl = rule_of(call_of("aten.tril.default", {TensorShape{2, 3, 4, 4}}, {}));
  CHECK(rows(tl.rules) == concat({"[S?(0), S?(0)]", "[S?(1), S?(1)]"}, partials(2)));
  CHECK(rows(rule_of(call_of("aten.triu.default", {TensorShape{5, 5}}, {integer(1)})).rules) == partials(2));
}
