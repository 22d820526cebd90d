// The exact search for DTensor's choice (select/search_choice.hpp and the searches it runs)
// against full enumeration on random problems under both cost models, its sanity on 5..8-dim
// meshes, the zero-cost claim of select/dim_costs.hpp, the admissibility of the prefix bounds, and
// row positions / filter counts without enumeration.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "../sanitizer_scale.hpp"
#include "ctshard/registry.hpp"
#include "op_call_builders.hpp"
#include "random_cases.hpp"

using namespace ctshard;

namespace {

/// Whether a full-mesh row survives, from filters.hpp alone (independent of RowCursor).
bool survives(const OpRule& rule, const std::vector<TensorMeta>& metas, const std::vector<Spec>& current, const std::vector<Spec>& operands,
              const MeshTopology& mesh) {
  for (const Spec& s : operands)
    if (!has_compatible_partials(s)) return false;
  const std::size_t nout = operands.size() - metas.size();
  for (std::size_t i = 0; i < metas.size(); ++i) {
    const Spec& target = operands[nout + i];
    bool ok = is_tensor_shardable(metas[i].shape, target, mesh);
    if (rule.uneven_inputs == UnevenInputs::keep_current) ok = ok || target == current[i];
    if (rule.uneven_inputs == UnevenInputs::keep_existing_shards) ok = keeps_existing_shards(metas[i].shape, target, current[i], mesh);
    if (!ok) return false;
  }
  return !rule.filter || rule.filter(operands, metas, mesh.dim_sizes());
}

std::vector<Spec> current_specs(test::CaseGenerator& gen, const test::RandomCase& c) {
  std::vector<Spec> specs;
  for (const TensorMeta& m : c.metas) specs.push_back(gen.spec(c.mesh.size(), m.shape.rank));
  return specs;
}

std::string describe(const test::RandomCase& c, const std::vector<Spec>& specs) {
  std::ostringstream s;
  s << c.label << " on mesh";
  for (std::size_t d = 0; d < c.mesh.size(); ++d) s << (d ? "x" : " ") << c.mesh.sizes[d];
  s << " (" << to_string(c.mesh.cost_model) << "), inputs";
  for (const Spec& x : specs) s << ' ' << to_string(x);
  return s.str();
}

}  // namespace

TEST_CASE("search: choose() equals full enumeration on random problems, both cost models", "[search]") {
  test::CaseGenerator gen(20261201);
  std::size_t queries[2] = {0, 0}, rules[4] = {0, 0, 0, 0};
  while (queries[0] < test::scaled(5000) || queries[1] < test::scaled(5000)) {
    const test::RandomCase c = gen.problem(1, 4);
    StrategyEnumerator search(c.rule.rules, c.mesh, c.rule.uneven_inputs, c.rule.filter, c.rule.placeholder_fill);
    StrategyEnumerator full(c.rule.rules, c.mesh, c.rule.uneven_inputs, c.rule.filter, c.rule.placeholder_fill);
    for (int q = 0; q < 3; ++q) {  // several queries per enumerator: memo stamps, fills per shard kind
      const std::vector<Spec> specs = current_specs(gen, c);
      std::size_t rows = 1;
      for (std::size_t d = 0; d < c.mesh.size(); ++d) rows *= full.filled_rules(specs).size();
      if (rows > 20000) break;  // keep full enumeration quick
      ChoiceAccumulator acc;
      const FilterCounts counts =
          full.for_each(c.metas, specs, [&](const CandidateView& v) { acc.offer(v.index, v.total_us, v.inputs_match, v.digits); });
      const Choice want = acc.choice();
      const Choice got = search.choose(c.metas, specs);
      INFO(describe(c, specs));
      if (acc.count() == 0) {  // an op filter rejecting every row, the all-Replicate one included
        CHECK(got.total_us == infinite_cost);
        continue;
      }
      CHECK(got.rule == want.rule);
      CHECK(got.total_us == want.total_us);
      CHECK(search.index_of(c.metas, specs, got) == want.index);
      for (std::size_t k = 0; k < c.rule.rules.width(); ++k)
        CHECK(search.spec_of(got, k) == full.spec_of(std::span<const std::uint8_t>(want.digits.data(), c.mesh.size()), k));
      const RowCounts rc = search.count(c.metas, specs);
      CHECK(rc.mixed_partial == counts.mixed_partial);
      CHECK(rc.unshardable == counts.unshardable);
      CHECK(rc.op_filter == counts.op_filter);
      CHECK(rc.survivors == acc.count());
      CHECK(search.choose(c.metas, specs, SelectAlgo::enumerate) == want);
      CHECK(search.choose(c.metas, specs).rule == want.rule);  // the remembered answer
      ++queries[c.mesh.cost_model == CostModel::consistent ? 1 : 0];
      ++rules[static_cast<int>(want.rule)];
    }
  }
  // every tie rule was exercised
  CHECK(rules[0] > test::scaled(50));
  CHECK(rules[1] > test::scaled(500));
  CHECK(rules[2] > test::scaled(200));
  CHECK(rules[3] > test::scaled(2000));
}

TEST_CASE("search: on 5..8-dim meshes the answer survives and no sampled row beats it", "[search]") {
  test::CaseGenerator gen(777);
  std::size_t checked = 0;
  for (std::size_t trial = 0; trial < test::scaled(150); ++trial) {
    const test::RandomCase c = gen.problem(5, 8, 3);
    StrategyEnumerator e(c.rule.rules, c.mesh, c.rule.uneven_inputs, c.rule.filter, c.rule.placeholder_fill);
    const std::vector<Spec> specs = current_specs(gen, c);
    const Choice got = e.choose(c.metas, specs);
    INFO(describe(c, specs) << " -> " << to_string(got.rule) << " " << got.total_us);
    const std::size_t n = c.mesh.size(), width = c.rule.rules.width(), nout = width - c.metas.size();
    const std::size_t s = e.filled_rules(specs).size();
    const auto specs_of = [&](std::span<const std::uint8_t> digits) {
      std::vector<Spec> out;
      for (std::size_t k = 0; k < width; ++k) out.push_back(e.spec_of(digits, k));
      return out;
    };
    const auto total_of = [&](const std::vector<Spec>& operands) {
      double t = 0;
      for (std::size_t i = 0; i < c.metas.size(); ++i) t += redistribute_cost(specs[i], operands[nout + i], c.metas[i], c.mesh);
      return t;
    };
    const std::span<const std::uint8_t> chosen(got.digits.data(), n);
    const std::vector<Spec> best = specs_of(chosen);
    // Known limit: under the DTensor model a StridedShard (in an input or a filled cell) makes
    // the greedy costs non-separable per mesh dim; tables of at most max_enumerated_rows rows are
    // walked (exact, property-tested on meshes of 1..4 dims), larger ones only get a surviving row.
    bool strided_dtensor = c.mesh.cost_model == CostModel::dtensor;
    if (strided_dtensor) {
      bool any = false;
      for (const Spec& sp : specs)
        for (const Placement& p : sp) any = any || p.is_strided_shard();
      const RuleSet& filled = e.filled_rules(specs);
      for (std::size_t r = 0; r < filled.size(); ++r)
        for (std::size_t k = 0; k < filled.width(); ++k) any = any || filled.cell(r, k).is_strided_shard();
      strided_dtensor = any;
    }
    REQUIRE(survives(c.rule, c.metas, specs, best, c.mesh));
    CHECK(total_of(best) == got.total_us);
    bool matches = true;
    for (std::size_t i = 0; i < c.metas.size(); ++i) matches = matches && best[nout + i] == specs[i];
    CHECK((got.rule == ChoiceRule::no_redistribute) == (matches && got.rule != ChoiceRule::only));
    std::vector<std::uint8_t> digits(n);
    for (int sample = 0; sample < 300; ++sample) {
      for (auto& x : digits) x = static_cast<std::uint8_t>(gen.uniform(0, static_cast<int>(s) - 1));
      if (sample < 100) {  // near the answer: one mesh dim changed
        std::copy(chosen.begin(), chosen.end(), digits.begin());
        digits[static_cast<std::size_t>(gen.uniform(0, static_cast<int>(n) - 1))] =
            static_cast<std::uint8_t>(gen.uniform(0, static_cast<int>(s) - 1));
      }
      if (std::equal(digits.begin(), digits.end(), chosen.begin())) continue;
      const std::vector<Spec> row = specs_of(digits);
      if (!survives(c.rule, c.metas, specs, row, c.mesh)) continue;
      CHECK(got.rule != ChoiceRule::only);
      const double total = total_of(row);
      const bool earlier = std::lexicographical_compare(digits.begin(), digits.end(), chosen.begin(), chosen.end());
      if (got.rule == ChoiceRule::no_redistribute) {
        bool m = true;
        for (std::size_t i = 0; i < c.metas.size(); ++i) m = m && row[nout + i] == specs[i];
        CHECK((!m || !std::lexicographical_compare(chosen.begin(), chosen.end(), digits.begin(), digits.end())));  // the last match
      } else if (!strided_dtensor) {
        CHECK(total >= got.total_us);
        if (total == got.total_us) CHECK(!earlier);
      }
      ++checked;
    }
  }
  CHECK(checked > test::scaled(5000));
}

TEST_CASE("search: a redistribution costs 0 exactly when every mesh dim is free (both models, size-1 dims)", "[search]") {
  test::CaseGenerator gen(4242);
  std::size_t zeros = 0, pairs = 0;
  for (int trial = 0; trial < 40000; ++trial) {
    const MeshTopology mesh = gen.mesh(1, 4, 3);
    const std::vector<std::int64_t> dims = gen.shape(gen.uniform(1, 3));
    const TensorMeta meta{TensorShape(std::span<const std::int64_t>(dims)), 4};
    const Spec current = gen.spec(mesh.size(), dims.size());
    Spec target = gen.spec(mesh.size(), dims.size());
    for (std::size_t d = 0; d < mesh.size(); ++d)
      if (gen.chance(0.5)) target[d] = current[d];  // many near-equal pairs
    // the characterisation of select/dim_costs.hpp, written out independently
    bool free = true;
    if (mesh.cost_model == CostModel::consistent) {
      for (std::size_t d = 0; d < mesh.size(); ++d) free = free && (mesh.sizes[d] == 1 || current[d] == target[d] || current[d].is_replicate());
    } else if (!current.is_replicated() && !(current == target)) {
      bool strided = false;
      for (std::size_t d = 0; d < mesh.size(); ++d) strided = strided || current[d].is_strided_shard() || target[d].is_strided_shard();
      const bool nested = mesh.size() > 1 && num_shards(current, mesh.sizes) > 1;
      if (strided) continue;  // not per-dim: DimCosts::zero_cost_is_per_dim() is false then
      for (std::size_t d = 0; d < mesh.size() && free; ++d) {
        free = current[d] == target[d] || current[d].is_replicate();
        if (nested && current[d].is_replicate() && target[d].is_shard())
          for (std::size_t e = d + 1; e < mesh.size(); ++e) free = free && !(current[e].is_shard() && current[e].dim == target[d].dim);
      }
    }
    INFO(to_string(current) << " -> " << to_string(target) << " on " << mesh.size() << " dims, " << to_string(mesh.cost_model));
    CHECK((redistribute_cost(current, target, meta, mesh) == 0.0) == free);
    zeros += free ? 1 : 0;
    ++pairs;
  }
  CHECK(zeros > 5000);
  CHECK(pairs - zeros > 5000);
}

TEST_CASE("search: prefix bounds never exceed the priced total of a row below them", "[search]") {
  test::CaseGenerator gen(99);
  std::size_t checked = 0;
  for (int trial = 0; trial < 400; ++trial) {
    const test::RandomCase c = gen.problem(1, 4);
    const std::vector<Spec> specs = current_specs(gen, c);
    const SearchQuery query = SearchQuery::make(c.metas, specs, c.metas.size(), c.mesh);
    const FilledTable table(with_replicate_row(c.rule.rules), shard_kinds_of(specs), c.mesh, c.rule.uneven_inputs, c.rule.filter);
    if (table.num_rows() > 4096) continue;
    if (walks_for_strided_costs(table, query)) continue;  // walked, not bounded (search_choice.hpp)
    CostMemo memo(table);
    std::vector<std::vector<std::uint8_t>> rows;
    std::vector<double> totals;
    (void)for_each_row(table, memo, query, [&](const CandidateView& v) {
      rows.emplace_back(v.digits.begin(), v.digits.end());
      totals.push_back(v.total_us);
    });
    memo.begin(query);
    memo.begin_costs(table, query);
    RowCursor& cursor = memo.cursor();
    PrefixBounds& bounds = memo.bounds();
    INFO(describe(c, specs));
    for (std::size_t j = 0; j < rows.size(); ++j) {
      cursor.begin(table, query);
      for (std::size_t k = 0; k < table.mesh_ndim(); ++k) {
        const double rest = k + 1 < table.mesh_ndim() ? bounds.rest_bound(k) : 0.0;
        const double quick = bounds.quick_bound(k, rows[j][k], bounds.level_bound(k), rest) * PrefixBounds::slack;
        cursor.extend(k, rows[j][k]);
        const double child = bounds.child_bound(k, cursor, rest) * PrefixBounds::slack;
        CHECK(quick <= totals[j]);
        CHECK(child <= totals[j]);
        ++checked;
      }
    }
  }
  CHECK(checked > 20000);
}

TEST_CASE("search: tables beyond the enumeration limit are searched and counted", "[search]") {
  const std::vector<std::int64_t> sizes(8, 2);
  const MeshTopology mesh = MeshTopology::build(sizes);
  StrategyEnumerator mm(einsum_strategy_v<"mk,kn->mn">.to_rule_set(), mesh, UnevenInputs::reject);
  const TensorMeta metas[] = {{{1024, 512}, 4}, {{512, 2048}, 4}};
  const Spec specs[] = {parse_spec("S(0)RRRRRRP(sum)"), parse_spec("RS(1)RRRRRS(0)")};
  CHECK_THROWS_WITH(mm.for_each(metas, specs, [](const CandidateView&) {}), Catch::Contains("above the enumeration limit"));
  CHECK_THROWS_WITH(mm.choose(metas, specs, SelectAlgo::enumerate), Catch::Contains("above the enumeration limit"));
  const Choice c = mm.choose(metas, specs);
  CHECK(c.rule == ChoiceRule::min_cost);
  CHECK(c.index == Choice::unknown_index);
  const RowCounts counts = mm.count(metas, specs);
  CHECK(counts.rows == 16777216);  // 8^8
  CHECK(counts.rows == counts.mixed_partial + counts.unshardable + counts.survivors);
  const auto index = mm.index_of(metas, specs, c);
  REQUIRE(index.has_value());
  CHECK(*index < counts.survivors);
  // the matching row is found without pricing: keep the inputs where they are
  const Spec kept[] = {parse_spec("S(0)RRRRRRR"), parse_spec("RS(1)RRRRRR")};
  CHECK(mm.choose(metas, kept).rule == ChoiceRule::no_redistribute);
}
