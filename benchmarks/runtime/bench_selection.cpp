// Run-time benchmarks: DTensor's choice by exact search (and by full enumeration beside it), the
// cold path with the rule factory and enumerator construction, and `plan` of real graphs.
// Figures go to docs/benchmarks.md.
#include <benchmark/benchmark.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "ctshard/fx/reader.hpp"
#include "ctshard/graph/greedy.hpp"
#include "ctshard/registry.hpp"
#include "ctshard/report/plan_report.hpp"

namespace {
using namespace ctshard;

struct Query {
  std::vector<std::string> specs;  // one per tensor input
};

std::vector<Spec> parse_all(const Query& q) {
  std::vector<Spec> out;
  for (const auto& s : q.specs) out.push_back(parse_spec(s));
  return out;
}

/// A spec cycling over tensor dims: "S(start)S(start+1)..." (mod rank), or P(sum) everywhere.
std::string cycle(std::size_t n, int start, bool partial, int rank = 4) {
  std::string s;
  for (std::size_t d = 0; d < n; ++d) s += partial ? "P(sum)" : "S(" + std::to_string((start + static_cast<int>(d)) % rank) + ")";
  return s;
}

/// A call of binary op `op` on tensors `a` and `b` (float32), both passed positionally.
OpCall binary_call(const char* op, TensorShape a, TensorShape b) {
  OpCall call;
  call.op = op;
  call.tensors = {TensorMeta{a, 4}, TensorMeta{b, 4}};
  for (std::int64_t i = 0; i < 2; ++i) {
    OpArg arg;
    arg.kind = OpArg::Kind::tensor;
    arg.integer = i;
    call.args.push_back(arg);
  }
  return call;
}

OpCall add4d_call() { return binary_call("aten.add.Tensor", TensorShape{8, 16, 32, 64}, TensorShape{8, 16, 32, 64}); }
OpCall mm_call() { return binary_call("aten.mm.default", TensorShape{1024, 512}, TensorShape{512, 2048}); }

/// Rows priced and prefixes expanded by the searches of the two queries (outside the timing).
void search_counters(benchmark::State& state, const OpRule& rule, const MeshTopology& mesh, const std::vector<TensorMeta>& metas,
                     const std::vector<Spec>& a, const std::vector<Spec>& b) {
  double priced = 0, expanded = 0;
  for (const auto* specs : {&a, &b}) {
    FilledTable table(with_replicate_row(rule.rules), shard_kinds_of(*specs), mesh, rule.uneven_inputs, rule.filter);
    CostMemo memo(table);
    SearchStats stats;
    const SearchQuery query = SearchQuery::make(metas, *specs, metas.size(), mesh);
    (void)search_choice(table, memo, query, &stats);
    priced += static_cast<double>(stats.priced);
    expanded += static_cast<double>(stats.expanded);
  }
  state.counters["rows_priced"] = priced / 2;
  state.counters["prefixes"] = expanded / 2;
}

/// A choice for `call` on `mesh_sizes`, alternating queries `a` and `b` so that every call sees
/// changed input specs (a cold query: the memo has not priced these inputs); `algo` search or
/// enumerate. Tables and placeholder fills are built before timing.
void choose(benchmark::State& state, OpCall call, std::vector<std::int64_t> mesh_sizes, Query qa, Query qb, SelectAlgo algo) {
  const MeshTopology mesh = MeshTopology::build(mesh_sizes, 8);
  const OpRule rule = (*builtin_registry().find(call.op))(call);
  StrategyEnumerator e(rule.rules, mesh, rule.uneven_inputs, rule.filter, rule.placeholder_fill);
  const std::vector<Spec> a = parse_all(qa), b = parse_all(qb);
  Choice c = e.choose(call.tensors, a, algo);  // warm: placeholder fills, memo sizing
  c = e.choose(call.tensors, b, algo);
  bool flip = false;
  for (auto _ : state) {
    c = e.choose(call.tensors, flip ? b : a, algo);
    flip = !flip;
    benchmark::DoNotOptimize(c);
  }
  state.counters["table_rows"] = std::pow(static_cast<double>(e.filled_rules(a).size()), static_cast<double>(mesh_sizes.size()));
  if (algo == SelectAlgo::search) search_counters(state, rule, mesh, call.tensors, a, b);
  state.SetLabel(std::string(to_string(c.rule)));
}

// mm 1024x512 @ 512x2048: the queries of the previous benchmark (inputs matching no row)
const Query mm8_a{{"P(sum)", "S(1)"}}, mm8_b{{"P(avg)", "S(0)"}};
const Query mm24_a{{"S(0)P(sum)", "RS(0)"}}, mm24_b{{"P(sum)S(1)", "S(1)R"}};
const Query mm222_a{{"S(0)RP(sum)", "RS(1)S(0)"}}, mm222_b{{"P(sum)S(1)R", "S(1)RS(0)"}};
const Query mm2222_a{{"S(0)RP(sum)R", "RS(1)S(0)R"}}, mm2222_b{{"P(sum)S(1)RR", "S(1)RS(0)R"}};
BENCHMARK_CAPTURE(choose, mm_cold_8, mm_call(), {8}, mm8_a, mm8_b, SelectAlgo::search);
BENCHMARK_CAPTURE(choose, mm_cold_2x4, mm_call(), {2, 4}, mm24_a, mm24_b, SelectAlgo::search);
BENCHMARK_CAPTURE(choose, mm_cold_2x2x2, mm_call(), {2, 2, 2}, mm222_a, mm222_b, SelectAlgo::search);
BENCHMARK_CAPTURE(choose, mm_cold_2x2x2x2, mm_call(), {2, 2, 2, 2}, mm2222_a, mm2222_b, SelectAlgo::search);
BENCHMARK_CAPTURE(choose, mm_enumerate_8, mm_call(), {8}, mm8_a, mm8_b, SelectAlgo::enumerate);
BENCHMARK_CAPTURE(choose, mm_enumerate_2x4, mm_call(), {2, 4}, mm24_a, mm24_b, SelectAlgo::enumerate);
BENCHMARK_CAPTURE(choose, mm_enumerate_2x2x2, mm_call(), {2, 2, 2}, mm222_a, mm222_b, SelectAlgo::enumerate);
BENCHMARK_CAPTURE(choose, mm_enumerate_2x2x2x2, mm_call(), {2, 2, 2, 2}, mm2222_a, mm2222_b, SelectAlgo::enumerate);
// inputs that match a row (DTensor's no-redistribute choice, found without pricing)
BENCHMARK_CAPTURE(choose, mm_matching_2x2x2, mm_call(), {2, 2, 2}, Query{{"S(0)RS(1)", "RS(1)S(0)"}}, Query{{"RS(0)R", "RRS(1)"}},
                  SelectAlgo::search);

// add [8,16,32,64] + [8,16,32,64] on meshes of N dims of size 2: (P(sum)^N, S(0)S(1)S(2)S(3)...)
// and (S(1)S(2)S(3)S(0)..., P(sum)^N)
void add4d(benchmark::State& state, std::size_t n, SelectAlgo algo) {
  const std::vector<std::int64_t> sizes(n, 2);
  choose(state, add4d_call(), sizes, Query{{cycle(n, 0, true), cycle(n, 0, false)}}, Query{{cycle(n, 1, false), cycle(n, 0, true)}}, algo);
}
BENCHMARK_CAPTURE(add4d, cold_1, 1, SelectAlgo::search);
BENCHMARK_CAPTURE(add4d, cold_2, 2, SelectAlgo::search);
BENCHMARK_CAPTURE(add4d, cold_3, 3, SelectAlgo::search);
BENCHMARK_CAPTURE(add4d, cold_4, 4, SelectAlgo::search);
BENCHMARK_CAPTURE(add4d, cold_5, 5, SelectAlgo::search);
BENCHMARK_CAPTURE(add4d, cold_6, 6, SelectAlgo::search);
BENCHMARK_CAPTURE(add4d, cold_7, 7, SelectAlgo::search);
BENCHMARK_CAPTURE(add4d, cold_8, 8, SelectAlgo::search);
BENCHMARK_CAPTURE(add4d, enumerate_1, 1, SelectAlgo::enumerate);
BENCHMARK_CAPTURE(add4d, enumerate_2, 2, SelectAlgo::enumerate);
BENCHMARK_CAPTURE(add4d, enumerate_3, 3, SelectAlgo::enumerate);
BENCHMARK_CAPTURE(add4d, enumerate_4, 4, SelectAlgo::enumerate)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(add4d, enumerate_5, 5, SelectAlgo::enumerate)->Unit(benchmark::kMillisecond);

// The repeated query: the remembered answer.
BENCHMARK_CAPTURE(choose, mm_repeat_2x2x2, mm_call(), {2, 2, 2}, mm222_a, mm222_a, SelectAlgo::search);

/// What `ctshard._ext._bench_choose` reports as cold_ns: the rule built by the op's factory, a new
/// StrategyEnumerator, choose() — nothing cached.
void cold_with_factory(benchmark::State& state, OpCall call, std::vector<std::int64_t> mesh_sizes, Query q) {
  const MeshTopology mesh = MeshTopology::build(mesh_sizes, 8);
  const RuleFactory& factory = *builtin_registry().find(call.op);
  const std::vector<Spec> specs = parse_all(q);
  for (auto _ : state) {
    const OpRule rule = factory(call);
    StrategyEnumerator e(rule.rules, mesh, rule.uneven_inputs, rule.filter, rule.placeholder_fill);
    benchmark::DoNotOptimize(e.choose(call.tensors, specs));
  }
}
BENCHMARK_CAPTURE(cold_with_factory, mm_8, mm_call(), {8}, Query{{"S(0)", "P(sum)"}});
BENCHMARK_CAPTURE(cold_with_factory, mm_2x4, mm_call(), {2, 4}, Query{{"S(0)S(0)", "P(sum)P(sum)"}});
BENCHMARK_CAPTURE(cold_with_factory, mm_2x2x2, mm_call(), {2, 2, 2}, Query{{"S(0)S(0)S(0)", "P(sum)P(sum)P(sum)"}});
BENCHMARK_CAPTURE(cold_with_factory, mm_2x2x2x2, mm_call(), {2, 2, 2, 2}, Query{{"S(0)S(0)S(0)S(0)", "P(sum)P(sum)P(sum)P(sum)"}});
BENCHMARK_CAPTURE(cold_with_factory, add_8, add4d_call(), {8}, Query{{"P(sum)", "S(1)"}});
BENCHMARK_CAPTURE(cold_with_factory, add_2x4, add4d_call(), {2, 4}, Query{{"P(sum)P(sum)", "S(1)S(1)"}});
BENCHMARK_CAPTURE(cold_with_factory, add_2x2x2, add4d_call(), {2, 2, 2}, Query{{"P(sum)P(sum)P(sum)", "S(1)S(1)S(1)"}});
BENCHMARK_CAPTURE(cold_with_factory, add_2x2x2x2, add4d_call(), {2, 2, 2, 2}, Query{{"P(sum)P(sum)P(sum)P(sum)", "S(1)S(1)S(1)S(1)"}});

void plan_graph(benchmark::State& state, const fx::Graph& graph, std::vector<std::int64_t> mesh, SelectAlgo algo,
                std::map<std::string, Spec> placements) {
  graph::PlanOptions options;
  options.mesh = std::move(mesh);
  options.algo = algo;
  options.placements = std::move(placements);
  std::size_t fallback = 0;
  for (auto _ : state) {
    auto plan = graph::plan_graph(graph, options, builtin_registry());
    fallback = plan.nodes_fallback;
    benchmark::DoNotOptimize(plan);
  }
  state.counters["nodes"] = static_cast<double>(graph.nodes.size());
  state.counters["fallback"] = static_cast<double>(fallback);
}

/// `plan` of a real graph, parse excluded.
void plan_graph_file(benchmark::State& state, std::string file, std::vector<std::int64_t> mesh, SelectAlgo algo) {
  const std::string path = std::string(CTSHARD_SHARED_DIR) + "/graphs/" + file;
  if (!std::filesystem::exists(path)) {
    state.SkipWithError(("missing " + path).c_str());
    return;
  }
  plan_graph(state, fx::read_fx_graph_file(path), std::move(mesh), algo, {});
}
BENCHMARK_CAPTURE(plan_graph_file, vit_2x4, "vit_b16_fw.fx.txt", {2, 4}, SelectAlgo::search)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(plan_graph_file, vit_2x2x2, "vit_b16_fw.fx.txt", {2, 2, 2}, SelectAlgo::search)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(plan_graph_file, vit_2x4_enumerate, "vit_b16_fw.fx.txt", {2, 4}, SelectAlgo::enumerate)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(plan_graph_file, vit_2x2x2x2x2x2x2x2, "vit_b16_fw.fx.txt", {2, 2, 2, 2, 2, 2, 2, 2}, SelectAlgo::search)
    ->Unit(benchmark::kMillisecond);

/// The embedded default block (data + tensor parallel placements) on an 8-dim mesh.
void plan_default_8(benchmark::State& state) {
  const std::vector<std::int64_t> mesh(8, 2);
  plan_graph(state, report::default_graph(), mesh, SelectAlgo::search, report::default_placements(mesh.size()));
}
BENCHMARK(plan_default_8)->Unit(benchmark::kMillisecond);
}  // namespace

BENCHMARK_MAIN();
