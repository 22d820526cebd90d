// Run-time benchmarks: strategy choice latency for mm (tables and caches warm), and `plan` time
// of a real graph. Figures go to docs/benchmarks.md.
#include <benchmark/benchmark.h>

#include <filesystem>
#include <string>
#include <vector>

#include "ctshard/ctshard.hpp"
#include "fx_graph.hpp"
#include "plan.hpp"

namespace {
using namespace ctshard;

// mm (1024x512 @ 512x2048, float32) with inputs that need redistribution, so the whole table is
// priced: lhs S(0) on mesh dim 0 and Partial on the last, rhs sharded on its columns.
void choose_mm(benchmark::State& state, std::vector<std::int64_t> mesh_sizes, std::vector<std::string> specs) {
  const MeshTopology mesh = MeshTopology::build(mesh_sizes, 8);
  StrategyEnumerator mm(einsum_strategy_v<"mk,kn->mn">.to_rule_set(), mesh, false);
  const TensorMeta shapes[] = {{{1024, 512}, 4}, {{512, 2048}, 4}};
  const Spec current[] = {parse_spec(specs[0]), parse_spec(specs[1])};
  Choice c = mm.choose(shapes, current);  // warm: fills placeholders, sizes memo
  for (auto _ : state) {
    c = mm.choose(shapes, current);
    benchmark::DoNotOptimize(c);
  }
  state.counters["rows"] = static_cast<double>(mm.filled_rules(current).size());
  state.SetLabel("choice=" + std::to_string(c.index));
}
BENCHMARK_CAPTURE(choose_mm, mesh_8, {8}, {"S(0)", "S(1)"});
BENCHMARK_CAPTURE(choose_mm, mesh_2x4, {2, 4}, {"S(0)P(sum)", "RS(1)"});
BENCHMARK_CAPTURE(choose_mm, mesh_2x2x2, {2, 2, 2}, {"S(0)RP(sum)", "RS(1)S(0)"});
// The common case: inputs already match a row (DTensor's no-redistribute choice).
BENCHMARK_CAPTURE(choose_mm, mesh_2x2x2_matching, {2, 2, 2}, {"S(0)RS(1)", "RS(1)S(0)"});

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
