// R17 of ../shared/cases/regressions_3.json at the rule level: cat of equally sized pieces along a
// sharded dim keeps the shard as a StridedShard. The plans (R12's dead end, R17's ViT-B/16
// backward and its miniature) are tested through the tool in tests/cli/test_regressions_3_plan.cpp.
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

OpCall cat_of(std::vector<std::vector<std::int64_t>> shapes, std::int64_t dim) {
  std::vector<TensorMeta> metas;
  std::vector<std::int64_t> refs;
  for (const auto& s : shapes) {
    metas.push_back(TensorMeta{TensorShape(std::span<const std::int64_t>(s.data(), s.size())), 4});
    refs.push_back(static_cast<std::int64_t>(refs.size()));
  }
  OpCall c;
  c.op = "aten.cat.default";
  c.tensors = metas;
  c.args = {tensors_arg(refs), int_arg(dim)};
  c.outputs = {TensorMeta{}};
  return c;
}

}  // namespace

TEST_CASE("R17: cat of equal pieces along the sharded dim is their StridedShard, at no cost", "[regressions_3][R17]") {
  // three q/k/v gradients [8, 12, 16, 4] concatenated along the batch dim
  const OpCall c = cat_of({{8, 12, 16, 4}, {8, 12, 16, 4}, {8, 12, 16, 4}}, 0);
  const OpRule rule = rule_for(c);
  const Rows text = rows_text(rule.rules);
  CHECK(text.back() == "_S(0, 3),S(0),S(0),S(0)");  // after DTensor's rows: [S?(i)] for i != 0, then the Partials
  CHECK(std::count(text.begin(), text.end(), "_S(0, 3),S(0),S(0),S(0)") == 1);
  const Spec s0r = parse_spec("S(0)R");
  const auto got = chosen(rule, mesh_of({2, 4}), c.tensors, {s0r, s0r, s0r});
  CHECK(got == std::pair<std::string, double>{"_S(0, 3)R | S(0)R S(0)R S(0)R", 0.0});
  // nested: both mesh dims shard the batch dim
  const Spec s0s0 = parse_spec("S(0)S(0)");
  CHECK(chosen(rule, mesh_of({2, 2}), c.tensors, {s0s0, s0s0, s0s0}) ==
        std::pair<std::string, double>{"_S(0, 3)_S(0, 3) | S(0)S(0) S(0)S(0) S(0)S(0)", 0.0});
  // any cat dim, two pieces, uneven chunks on 3 devices
  const OpCall d = cat_of({{4, 5}, {4, 5}}, -1);
  CHECK(rows_text(rule_for(d).rules).back() == "_S(1, 2),S(1),S(1)");
  CHECK(chosen(rule_for(d), mesh_of({3}), d.tensors, {parse_spec("S(1)"), parse_spec("S(1)")}) ==
        std::pair<std::string, double>{"_S(1, 2) | S(1) S(1)", 0.0});
  // pieces of different sizes along the cat dim, or one piece: no such row (DTensor's rows only)
  for (const OpCall& other : {cat_of({{2, 4}, {3, 4}}, 0), cat_of({{4, 4}}, 0)}) {
    const Rows r = rows_text(rule_for(other).rules);
    CHECK(std::none_of(r.begin(), r.end(), [](const std::string& row) { return row.find("_S(") != std::string::npos; }));
  }
  const OpCall uneven = cat_of({{2, 4}, {3, 4}}, 0);
  CHECK(chosen(rule_for(uneven), mesh_of({2}), uneven.tensors, {parse_spec("S(0)"), parse_spec("S(0)")}).second > 0.0);
}
