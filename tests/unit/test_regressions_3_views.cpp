// Regression case R11 of ../shared/cases/regressions_3.json and its kind: a view whose flatten /
// split group is sharded by several mesh dims. The shard a later mesh dim takes is re-expressed on
// the local sizes the earlier mesh dims leave (`regroup_mesh_dim`), the placeholder fill lists a
// row per placement those local sizes can call for, and the full-mesh check keeps the one each
// input spec needs. Every value below is also what the simulated mesh computes
// (tests/sim/test_view_law.cpp proves the law by brute force).
#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <string>
#include <vector>

#include "ctshard/registry.hpp"
#include "ctshard/solve/candidates.hpp"
#include "op_call_builders.hpp"

using namespace ctshard;
using namespace ctshard::test;
using Pick = std::pair<std::string, double>;

namespace {

OpCall view_call(std::initializer_list<std::int64_t> in, std::vector<std::int64_t> to, const char* op = "aten.view.default") {
  return make_call(op, {meta(in)}, {tensor_arg(0), ints_arg(std::move(to))});
}

/// DTensor's choice for a view of `in` to `to` on `mesh` with the input at `spec`.
Pick view_choice(std::initializer_list<std::int64_t> in, std::vector<std::int64_t> to, std::initializer_list<std::int64_t> mesh, const char* spec) {
  const OpCall call = view_call(in, std::move(to));
  return chosen(rule_for(call), mesh_of(mesh), call.tensors, {parse_spec(spec)});
}

}  // namespace

TEST_CASE("R11: a flatten of dims sharded on consecutive mesh dims keeps the data where it is", "[regressions_3][views]") {
  // ctshard table --op aten.view.default --shapes 2x2x3 --mesh 2x2 --inputs "S(0)S(1)" --args '[[4, 3]]'
  // Rank (i, j) holds x[i, j, :], row 2i + j of the flattened [4, 3]: exactly S(0)S(0).
  const OpCall call = view_call({2, 2, 3}, {4, 3});
  const OpRule rule = rule_for(call);
  const std::vector<Spec> current{parse_spec("S(0)S(1)")};
  StrategyEnumerator e(rule.rules, mesh_of({2, 2}), rule.uneven_inputs, rule.filter);
  const Choice c = e.choose(call.tensors, current);
  CHECK(to_string(e.spec_of(c, 0)) == "S(0)S(0)");
  CHECK(to_string(e.spec_of(c, 1)) == "S(0)S(1)");
  CHECK(c.total_us == 0.0);
  CHECK(c.rule == ChoiceRule::no_redistribute);
  // the global-size reading of mesh dim 1 (S(1) of [2, 2] is _S(0, 2) of [4]) would be wrong
  // after mesh dim 0: it is not offered
  const auto rows = candidates(rule, mesh_of({2, 2}), call.tensors, current);
  CHECK(std::count(rows.begin(), rows.end(), "S(0)S(0) | S(0)S(1)") == 1);
  CHECK(std::count(rows.begin(), rows.end(), "S(0)_S(0, 2) | S(0)S(1)") == 0);
  // mesh dim 1 alone still reads S(1) on the global sizes
  CHECK(std::count(rows.begin(), rows.end(), "R_S(0, 2) | RS(1)") == 1);
  // the filled rules list both placements of an S(1) input, the global one first
  const std::vector<std::string> filled = rows_text(e.filled_rules(current));
  const auto global = std::find(filled.begin(), filled.end(), "_S(0, 2),S(1)");
  const auto local = std::find(filled.begin(), filled.end(), "S(0),S(1)");
  REQUIRE(global != filled.end());
  REQUIRE(local != filled.end());
  CHECK(local == global + 1);
  // on one mesh dim the table is what it was
  CHECK(
      rows_text(StrategyEnumerator(rule.rules, mesh_of({4}), rule.uneven_inputs, rule.filter).filled_rules(current)) ==
      std::vector<std::string>{"R,R", "S(0),S(0)", "S(1),S(2)", "_S(0, 2),S(1)", "P(sum),P(sum)", "P(avg),P(avg)", "P(max),P(max)", "P(min),P(min)"});
}

TEST_CASE("views on N-D meshes: a flatten takes each mesh dim's shard on the local sizes before it", "[regressions_3][views]") {
  // 2x2: the second shard is interleaved on the local [2, 6] -> [12]: _S(0, 2) (DTensor agrees)
  CHECK(view_choice({4, 6}, {24}, {2, 2}, "S(0)S(1)") == Pick{"S(0)_S(0, 2) | S(0)S(1)", 0.0});
  // 2x3: after S(0) each rank holds [1, 3, 4]; S(1) over 3 ranks is rows of the local [12]
  CHECK(view_choice({2, 3, 4}, {24}, {2, 3}, "S(0)S(1)") == Pick{"S(0)S(0) | S(0)S(1)", 0.0});
  // 2x2x2: three mesh dims, each the outermost non-trivial dim left
  CHECK(view_choice({2, 2, 2, 3}, {8, 3}, {2, 2, 2}, "S(0)S(1)S(2)") == Pick{"S(0)S(0)S(0) | S(0)S(1)S(2)", 0.0});
  // the other order interleaves: [2, 2, 3] S(1)S(0) is _S(0, 2)S(0)
  CHECK(view_choice({2, 2, 3}, {4, 3}, {2, 2}, "S(1)S(0)") == Pick{"_S(0, 2)S(0) | S(1)S(0)", 0.0});
  // DTensor's conformance case _unsafe_view #6: [4, 2, 5] S(0)S(1) as [8, 5] on 2x4 (2 rows over 4
  // ranks: pieces 1, 1, 0, 0, exact on the innermost dim of the group)
  const OpCall unsafe = view_call({4, 2, 5}, {8, 5}, "aten._unsafe_view.default");
  CHECK(chosen(rule_for(unsafe), mesh_of({2, 4}), unsafe.tensors, {parse_spec("S(0)S(1)")}) == Pick{"S(0)_S(0, 2) | S(0)S(1)", 0.0});
}

TEST_CASE("views on N-D meshes: an unflatten moves each mesh dim's shard to the piece it describes", "[regressions_3][views]") {
  // [4, 3] S(0)S(0) on 2x2: rank (i, j) holds row 2i + j = y[i, j, :] of [2, 2, 3]: S(0)S(1).
  // (DTensor 2.13 answers S(0)S(0), whose local view of a [1, 3] piece as [1, 2, 3] fails.)
  CHECK(view_choice({4, 3}, {2, 2, 3}, {2, 2}, "S(0)S(0)") == Pick{"S(0)S(1) | S(0)S(0)", 0.0});
  // 2x3: [24] -> [2, 3, 4]: the second mesh dim splits the local [12] = [1, 3, 4] on its dim 1
  CHECK(view_choice({24}, {2, 3, 4}, {2, 3}, "S(0)S(0)") == Pick{"S(0)S(1) | S(0)S(0)", 0.0});
  CHECK(view_choice({8, 3}, {2, 2, 2, 3}, {2, 2, 2}, "S(0)S(0)S(0)") == Pick{"S(0)S(1)S(2) | S(0)S(0)S(0)", 0.0});
  // a split of a flatten: [2, 6] S(0)S(1) as [4, 3] on 2x2 — after S(0) the local [1, 6] is rows
  // 2i, 2i + 1 of [4, 3], and S(1) of it halves those two rows: S(0)S(0)
  const OpCall resplit = view_call({2, 6}, {4, 3}, "aten.reshape.default");
  CHECK(chosen(rule_for(resplit), mesh_of({2, 2}), resplit.tensors, {parse_spec("S(0)S(1)")}) == Pick{"S(0)S(0) | S(0)S(1)", 0.0});
}

TEST_CASE("views on N-D meshes: StridedShard where the local blocks interleave, and back", "[regressions_3][views][strided]") {
  // [2, 4, 3] S(0)_S(1, 2) as [8, 3] on 2x2: rank (i, j) holds rows 4i + {j, j + 2}: on the local
  // [4] that S(0) leaves, _S(0, 2) (the global reading would say _S(0, 4))
  CHECK(view_choice({2, 4, 3}, {8, 3}, {2, 2}, "S(0)_S(1, 2)") == Pick{"S(0)_S(0, 2) | S(0)_S(1, 2)", 0.0});
  // and the unflatten of that layout back: [8, 3] S(0)_S(0, 2) as [2, 4, 3] is S(0)_S(1, 2)
  CHECK(view_choice({8, 3}, {2, 4, 3}, {2, 2}, "S(0)_S(0, 2)") == Pick{"S(0)_S(1, 2) | S(0)_S(0, 2)", 0.0});
  // a StridedShard input on mesh dim 0: [4, 6] _S(0, 2)S(1) flattened to [24] — mesh dim 0 holds
  // rows {i, i + 2} (blocks of 12 elements), mesh dim 1 halves the columns of the local [2, 6]
  CHECK(view_choice({4, 6}, {24}, {2, 2}, "_S(0, 2)S(1)") == Pick{"_S(0, 2)_S(0, 2) | _S(0, 2)S(1)", 0.0});
}

TEST_CASE("views on N-D meshes: uneven sizes are exact exactly when torch.chunk's pieces coincide", "[regressions_3][views][uneven]") {
  // [2, 5] S(0)S(1) on 2x2: 5 columns over 2 ranks chunk 3, 2 inside each local row = S(0)S(0)
  CHECK(view_choice({2, 5}, {10}, {2, 2}, "S(0)S(1)") == Pick{"S(0)S(0) | S(0)S(1)", 0.0});
  // and the unflatten: [10] S(0)S(0) as [2, 5]: the local 5 chunks 3, 2 as dim 1 does
  CHECK(view_choice({10}, {2, 5}, {2, 2}, "S(0)S(0)") == Pick{"S(0)S(1) | S(0)S(0)", 0.0});
  // [3, 4] S(0)S(1): 3 rows over 2 ranks (2 + 1) are 8 + 4 elements, torch.chunk of 12 is 6 + 6:
  // not exact, the input is redistributed
  const OpCall flat = view_call({3, 4}, {12});
  const Pick p = chosen(rule_for(flat), mesh_of({2, 2}), flat.tensors, {parse_spec("S(0)S(1)")});
  CHECK(p.second > 0.0);
  CHECK(p.first.find("| S(0)") == std::string::npos);
  const std::array<std::int64_t, 1> to_12{12};
  const std::array<std::int64_t, 2> two_two{2, 2};
  CHECK_FALSE(view_output_spec(view_dim_map(TensorShape{3, 4}, to_12), parse_spec("S(0)S(1)"), two_two).has_value());
  // uneven yet exact: [3, 2] S(0) on 4 ranks: rows 1, 1, 1, 0 are elements 2, 2, 2, 0 = torch.chunk of 6
  CHECK(view_choice({3, 2}, {6}, {4}, "S(0)") == Pick{"S(0) | S(0)", 0.0});
  // a piece of one row on a mesh dim: [2, 3, 4] S(1)S(1) on 2x2 cuts the 3 rows 2 + 1, then 1 + 1
  // and 1 + 0. The first rank of a one-row piece keeps it, and the output blocks of one row say so:
  // _S(0, 2) describes both classes of ranks on mesh dim 1
  CHECK(view_choice({2, 3, 4}, {6, 4}, {2, 2}, "S(1)S(1)") == Pick{"_S(0, 2)_S(0, 2) | S(1)S(1)", 0.0});
}

TEST_CASE("views on N-D meshes: the law step by step", "[regressions_3][views]") {
  // regroup_mesh_dim on [2, 2] -> [4]: S(0) then S(1) on 2 ranks each
  std::vector<RegroupLocal> ranks{{TensorShape{2, 2}, TensorShape{4}}};
  CHECK(regroup_mesh_dim(ranks, RunShard{0, 1}, 2) == RunShard{0, 1});
  CHECK(ranks == std::vector<RegroupLocal>{{TensorShape{1, 2}, TensorShape{2}}});
  CHECK(regroup_mesh_dim(ranks, RunShard{1, 1}, 2) == RunShard{0, 1});
  CHECK(ranks == std::vector<RegroupLocal>{{TensorShape{1, 1}, TensorShape{1}}});
  // uneven pieces make two classes of ranks: [2, 5] S(1) on 2 leaves [2, 3] and [2, 2]
  std::vector<RegroupLocal> uneven{{TensorShape{2, 5}, TensorShape{10}}};
  CHECK(regroup_mesh_dim(uneven, RunShard{1, 1}, 2) == RunShard{0, 2});
  CHECK(uneven == std::vector<RegroupLocal>{{TensorShape{2, 3}, TensorShape{6}}, {TensorShape{2, 2}, TensorShape{4}}});
  // a later mesh dim must describe both classes alike: S(0) of [2, 3] / [2, 2] is S(0) of [6] / [4]
  CHECK(regroup_mesh_dim(uneven, RunShard{0, 1}, 2) == RunShard{0, 1});
  // not exact: [3, 4] -> [12] S(0) on 2 (rows 2 + 1 against elements 6 + 6); ranks stay as they were
  std::vector<RegroupLocal> bad{{TensorShape{3, 4}, TensorShape{12}}};
  CHECK_FALSE(regroup_mesh_dim(bad, RunShard{0, 1}, 2).has_value());
  CHECK(bad.size() == 1);
  CHECK(bad.front().input == TensorShape{3, 4});
  // chunk_piece follows torch.chunk
  CHECK(chunk_piece(5, 4, 0) == 2);
  CHECK(chunk_piece(5, 4, 2) == 1);
  CHECK(chunk_piece(5, 4, 3) == 0);
  CHECK(chunk_piece(3, 4, 2) == 1);
  CHECK(chunk_piece(3, 4, 3) == 0);
  // the alternatives the fill lists for S(1) of [2, 2] -> [4] on 2x2 with plain Shard inputs
  const std::array<std::int64_t, 2> mesh{2, 2};
  const std::array<std::int64_t, 1> shard_only{1};
  CHECK(regroup_shard_alternatives(TensorShape{2, 2}, RunShard{1, 1}, TensorShape{4}, mesh, shard_only) == std::vector<RunShard>{{0, 2}, {0, 1}});
  // the fill lists both rows of R11's S(1) on 2x2, and for S(0) also the one-row-block row
  // [_S(0, 2), S(0)] (after an earlier S(0) each rank holds one row of dim 0); over a row budget it
  // falls back to the global ones
  const RuleSet r11 = with_replicate_row(rule_for(view_call({2, 2, 3}, {4, 3})).rules);
  CHECK(rows_text(fill_placeholders(r11, plain_shard_kinds, mesh)) == std::vector<std::string>{"R,R", "S(0),S(0)", "_S(0, 2),S(0)", "S(1),S(2)",
                                                                                               "_S(0, 2),S(1)", "S(0),S(1)", "P(sum),P(sum)",
                                                                                               "P(avg),P(avg)", "P(max),P(max)", "P(min),P(min)"});
  CHECK(fill_placeholders(r11, plain_shard_kinds, mesh, 8) == fill_placeholders(r11, plain_shard_kinds));
  CHECK(fill_placeholders(r11, plain_shard_kinds).size() == 8);
  // and on one mesh dim only the global one
  const std::array<std::int64_t, 1> one{4};
  CHECK(regroup_shard_alternatives(TensorShape{2, 2}, RunShard{1, 1}, TensorShape{4}, one, shard_only) == std::vector<RunShard>{{0, 2}});
}

TEST_CASE("views on N-D meshes: the global planner's candidates hold the local-size rows", "[regressions_3][views][global]") {
  const OpCall call = view_call({2, 2, 3}, {4, 3});
  const OpRule rule = rule_for(call);
  ShardKinds kinds;
  kinds.shard = true;  // what plan --global fills every op with
  const solve::CandidateSet c = solve::enumerate_candidates(rule.rules, mesh_of({2, 2}), call.tensors, kinds, rule.uneven_inputs, rule.filter);
  bool r11 = false, wrong = false;
  for (std::size_t k = 0; k < c.size(); ++k) {
    r11 = r11 || (c.spec(k, 0) == parse_spec("S(0)S(0)") && c.spec(k, 1) == parse_spec("S(0)S(1)"));
    wrong = wrong || (c.spec(k, 0) == parse_spec("S(0)_S(0, 2)") && c.spec(k, 1) == parse_spec("S(0)S(1)"));
  }
  CHECK(r11);
  CHECK_FALSE(wrong);
}
