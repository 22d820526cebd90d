// Run-time benchmarks: strategy choice latency for mm (tables and caches warm), and `plan` time
// of a real graph. Figures go to docs/benchmarks.md.
#include <benchmark/benchmark.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "ctshard/ctshard.hpp"
#include "fx_graph.hpp"
#include "plan.hpp"

namespace {
using namespace ctshard;

// mm (1024x512 @ 512x2048, float32); tables and placeholder fills are built before timing.
// Each benchmark alternates between two queries so that no answer is reused:
//  - `priced`: inputs that match no row on some mesh dim, so every row of the (1+7)^N table is
//    filtered and priced (full enumeration);
//  - `matching`: inputs that match a row (DTensor's no-redistribute choice, found without pricing);
//  - `repeat`: the same query again (the enumerator returns its remembered answer).
struct Query {
  const char* lhs;
  const char* rhs;
};

void choose_mm(benchmark::State& state, std::vector<std::int64_t> mesh_sizes, Query a, Query b) {
  const MeshTopology mesh = MeshTopology::build(mesh_sizes, 8);
  StrategyEnumerator mm(einsum_strategy_v<"mk,kn->mn">.to_rule_set(), mesh, UnevenInputs::reject);
  const TensorMeta shapes[] = {{{1024, 512}, 4}, {{512, 2048}, 4}};
  const Spec qa[] = {parse_spec(a.lhs), parse_spec(a.rhs)};
  const Spec qb[] = {parse_spec(b.lhs), parse_spec(b.rhs)};
  Choice c = mm.choose(shapes, qa);  // warm: placeholder fill, memo sizing
  c = mm.choose(shapes, qb);
  bool flip = false;
  for (auto _ : state) {
    c = mm.choose(shapes, flip ? qb : qa);
    flip = !flip;
    benchmark::DoNotOptimize(c);
  }
  state.counters["table_rows"] = std::pow(static_cast<double>(mm.filled_rules(qa).size()), static_cast<double>(mesh_sizes.size()));
  state.SetLabel(std::string(to_string(c.rule)));
}
// priced: full enumeration
BENCHMARK_CAPTURE(choose_mm, priced_8, {8}, Query{"P(sum)", "S(1)"}, Query{"P(avg)", "S(0)"});
BENCHMARK_CAPTURE(choose_mm, priced_2x4, {2, 4}, Query{"S(0)P(sum)", "RS(0)"}, Query{"P(sum)S(1)", "S(1)R"});
BENCHMARK_CAPTURE(choose_mm, priced_2x2x2, {2, 2, 2}, Query{"S(0)RP(sum)", "RS(1)S(0)"}, Query{"P(sum)S(1)R", "S(1)RS(0)"});
// matching: no-redistribute fast path
BENCHMARK_CAPTURE(choose_mm, matching_8, {8}, Query{"S(0)", "R"}, Query{"R", "S(1)"});
BENCHMARK_CAPTURE(choose_mm, matching_2x4, {2, 4}, Query{"S(0)R", "RS(1)"}, Query{"S(1)S(0)", "S(0)R"});
BENCHMARK_CAPTURE(choose_mm, matching_2x2x2, {2, 2, 2}, Query{"S(0)RS(1)", "RS(1)S(0)"}, Query{"RS(0)R", "RRS(1)"});
// repeat: same query twice
BENCHMARK_CAPTURE(choose_mm, repeat_2x2x2, {2, 2, 2}, Query{"S(0)RP(sum)", "RS(1)S(0)"}, Query{"S(0)RP(sum)", "RS(1)S(0)"});

void plan_graph_file(benchmark::State& state, std::string file, std::vector<std::int64_t> mesh) {
  const std::string path = std::string(CTSHARD_SHARED_DIR) + "/graphs/" + file;
  if (!std::filesystem::exists(path)) {
    state.SkipWithError(("missing " + path).c_str());
    return;
  }
  const fx::Graph graph = fx::read_fx_graph_file(path);
  cli::PlanOptions options;
  options.mesh = mesh;
  for (auto _ : state) {
    auto plan = cli::plan_graph(graph, options, builtin_registry());
    benchmark::DoNotOptimize(plan);
  }
}
BENCHMARK_CAPTURE(plan_graph_file, vit_2x4, "vit_b16_fw.fx.txt", {2, 4})->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(plan_graph_file, vit_2x2x2, "vit_b16_fw.fx.txt", {2, 2, 2})->Unit(benchmark::kMillisecond);
}  // namespace

BENCHMARK_MAIN();
