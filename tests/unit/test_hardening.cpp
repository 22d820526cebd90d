// Hardening: every registered rule called with too few / too many tensors and odd arguments gives
// rules or a clean ctshard::error (never a read past a list); overflow-checked size arithmetic.
// This target is built with _GLIBCXX_ASSERTIONS, so an unchecked out-of-range index aborts.

#include <catch2/catch.hpp>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "ctshard/registry.hpp"
#include "op_call_builders.hpp"

namespace {

using namespace ctshard;
using namespace ctshard::test;
using Catch::Matchers::Contains;

/// Calls the factory; returns "" on rules, the error text on ctshard::error. Anything else fails.
std::string call_rule(const RuleFactory& factory, const OpCall& call) {
  try {
    const OpRule rule = factory(call);
    if (rule.rules.num_inputs() == call.tensors.size() && !call.tensors.empty()) {
      std::vector<std::int64_t> sizes{2};
      StrategyEnumerator e(rule.rules, MeshTopology::build(sizes), rule.uneven_inputs, rule.filter, rule.placeholder_fill);
      std::vector<Spec> specs(call.tensors.size(), Spec(std::size_t{1}));
      (void)e.choose(call.tensors, specs);
    }
    return "";
  } catch (const error& e) {
    return e.what();
  }
}

OpCall call_with(const std::string& op, std::size_t n, std::size_t rank, bool tensor_args) {
  OpCall call;
  call.op = op;
  for (std::size_t i = 0; i < n; ++i) {
    TensorMeta m;
    for (std::size_t d = 0; d < rank; ++d) m.shape.push_back(4);
    call.tensors.push_back(m);
    if (tensor_args) call.args.push_back(tensor_arg(static_cast<std::int64_t>(i)));
  }
  return call;
}

}  // namespace

TEST_CASE("hardening: every registered op with 0..4 tensors of rank 0..3 gives rules or a clean error", "[hardening]") {
  const OpRegistry& registry = builtin_registry();
  std::size_t calls = 0, errors = 0;
  for (const auto& name : registry.names()) {
    const RuleFactory& factory = *registry.find(name);
    for (std::size_t n = 0; n <= 4; ++n)
      for (std::size_t rank = 0; rank <= 3; ++rank)
        for (bool tensor_args : {false, true}) {
          OpCall call = call_with(name, n, rank, tensor_args);
          ++calls;
          errors += call_rule(factory, call).empty() ? 0 : 1;
          // the same with trailing odd arguments: None, a negative int, an empty list, a list
          // naming a tensor the call does not have
          call.args.push_back(none_arg());
          call.args.push_back(int_arg(-7));
          call.args.push_back(ints_arg({}));
          call.args.push_back(tensors_arg({static_cast<std::int64_t>(n) + 3}));
          call.args.push_back(list_arg({tensor_arg(static_cast<std::int64_t>(n) + 5), none_arg()}));
          ++calls;
          errors += call_rule(factory, call).empty() ? 0 : 1;
        }
  }
  CHECK(calls == registry.size() * 5 * 4 * 2 * 2);
  CHECK(errors > 0);
  CHECK(errors < calls);
}

TEST_CASE("hardening: an equation over two operands given one tensor is a clean error", "[hardening]") {
  OpCall call;
  call.op = "aten.einsum.default";
  OpArg eq;
  eq.kind = OpArg::Kind::string;
  eq.text = "ij,jk->ik";
  call.args.push_back(eq);
  call.tensors.push_back(TensorMeta{TensorShape{4, 8}, 4});
  call.args.push_back(tensors_arg({0}));
  const std::string message = call_rule(*builtin_registry().find("aten.einsum.default"), call);
  CHECK_THAT(message, Contains("takes 2 tensor inputs, got 1"));
}

TEST_CASE("hardening: checked size arithmetic", "[hardening]") {
  constexpr std::int64_t big = std::numeric_limits<std::int64_t>::max();
  static_assert(checked_mul(3037000499, 3037000499, "x") == 9223372030926249001);
  static_assert(checked_add(big - 1, 1, "x") == big);
  static_assert(saturating_mul(big / 2, 3) == big);
  CHECK_THROWS_WITH(checked_mul(3037000500, 3037000500, "numel"), "ctshard: numel: 3037000500 * 3037000500 overflows a 64-bit size");
  CHECK_THROWS_WITH(checked_add(big, 1, "sum"), "ctshard: sum: 9223372036854775807 + 1 overflows a 64-bit size");
  // a shape whose element count does not fit is refused when it is built
  CHECK_THROWS_WITH((TensorShape{3037000500, 3037000500}), "ctshard: TensorShape: product of sizes: 3037000500 * 3037000500 overflows a 64-bit size");
  CHECK((TensorShape{3037000499, 3037000499}).numel() == 9223372030926249001);
  CHECK((TensorShape{0, 4294967296, 1073741824}).numel() == 0);  // a 0 dim: the other sizes still must fit together
  // a mesh whose device count does not fit
  const std::vector<std::int64_t> mesh{4294967296, 4294967296};
  CHECK_THROWS_WITH(MeshTopology::build(mesh), Contains("MeshTopology: number of devices: 4294967296 * 4294967296 overflows"));
  // view sizes that agree only modulo 2^64
  const std::vector<std::int64_t> target{4294967296, 4294967297};
  CHECK_THROWS_WITH(view_dim_map(TensorShape{4294967296}, target),
                    "ctshard: view: product of the target sizes: 4294967296 * 4294967297 overflows a 64-bit size");
  // split into more outputs than a rule may have
  CHECK_THROWS_WITH(split_piece_sizes(std::int64_t{1} << 40, 1), Contains("more outputs than max_rule_operands (65536)"));
  CHECK(split_piece_sizes(10, 4) == std::vector<std::int64_t>{4, 4, 2});
  CHECK_THROWS_WITH(RuleSet(70000, 1), "ctshard::RuleSet: 70000 outputs + 1 inputs exceed max_rule_operands (65536)");
}

TEST_CASE("hardening: a link model whose costs would be negative, NaN or infinite is refused", "[hardening]") {
  const std::vector<std::int64_t> mesh{2, 4};
  const auto with = [](auto set) {
    LinkModel l;
    set(l);
    return l;
  };
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  CHECK_THROWS_WITH(MeshTopology::build(mesh, 8, with([](LinkModel& l) { l.intra_host_bandwidth_gbps = 0; })),
                    "ctshard::LinkModel: intra_host_bandwidth_gbps must be finite and > 0, got 0");
  CHECK_THROWS_WITH(MeshTopology::build(mesh, 8, with([&](LinkModel& l) { l.intra_host_bandwidth_gbps = nan; })),
                    "ctshard::LinkModel: intra_host_bandwidth_gbps must be finite and > 0, got nan");
  CHECK_THROWS_WITH(MeshTopology::build(mesh, 8, with([](LinkModel& l) { l.inter_host_bandwidth_factor = -0.22; })),
                    "ctshard::LinkModel: inter_host_bandwidth_factor must be finite and > 0, got -0.22");
  CHECK_THROWS_WITH(MeshTopology::build(mesh, 8, with([](LinkModel& l) { l.base_latency_us = -100; })),
                    "ctshard::LinkModel: base_latency_us must be finite and >= 0, got -100");
  CHECK_THROWS_WITH(MeshTopology::build(mesh, 8, with([&](LinkModel& l) { l.inter_host_latency_us = inf; })),
                    "ctshard::LinkModel: inter_host_latency_us must be finite and >= 0, got inf");
  // the defaults, and a free link (latency 0), are accepted
  CHECK(MeshTopology::build(mesh).bandwidth_gbps[0] == 87.7);
  CHECK(MeshTopology::build(mesh, 8, with([](LinkModel& l) { l.base_latency_us = l.intra_host_latency_us = 0; })).latency_us[1] == 0);
}

TEST_CASE("hardening: chunk counts of sizes near 2^63 do not wrap (found by fuzz_rules)", "[hardening]") {
  // torch.chunk of 7776568577364674889 rows over 2 devices: pieces of 3888284288682337445, two of
  // them; ceil((size + chunk - 1) / chunk) overflowed int64 here.
  const std::vector<std::int64_t> sizes{2};
  const MeshTopology mesh = MeshTopology::build(sizes);
  CHECK(has_no_empty_shard_on(TensorShape{7776568577364674889}, parse_spec("S(0)"), mesh.dim_sizes(), 1));
  CHECK_FALSE(has_no_empty_shard_on(TensorShape{1}, parse_spec("S(0)"), mesh.dim_sizes(), 1));
  CHECK(has_no_empty_shard_on(TensorShape{std::numeric_limits<std::int64_t>::max()}, parse_spec("S(0)"), mesh.dim_sizes(), 1));
}
