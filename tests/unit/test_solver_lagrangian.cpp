// The Lagrangian bound of usage limits: never above the constrained optimum (brute force on
// random cost graphs with one limit), and the hand-computed value on a 2-node instance where the
// limit binds (strictly above the optimum without the limit).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <random>
#include <utility>
#include <vector>

#include "ctshard/solve/limit_repair.hpp"
#include "ctshard/solve/solver.hpp"

using namespace ctshard::solve;

namespace {

/// The least cost of a labelling meeting every limit, by enumeration; `forbidden` when none does.
cost_t brute_force_optimum(const CostGraph& g) {
  std::vector<std::uint32_t> x(g.num_nodes(), 0);
  cost_t best = forbidden;
  while (true) {
    if (g.feasible(x)) best = std::min(best, g.evaluate(x));
    std::size_t u = 0;
    while (u < x.size() && ++x[u] == g.num_labels(u)) x[u++] = 0;
    if (u == x.size()) return best;
  }
}

/// Random graph: `min_nodes`..`max_nodes` nodes with 2..3 labels (unary in [-20, 40], usage in
/// [0, 12]), a dense edge (costs in [0, 30]) between a pair of nodes with probability
/// 1 / `edge_one_in`, one limit over every node between the least and the largest usage sum.
CostGraph random_graph(std::mt19937& rng, int min_nodes = 3, int max_nodes = 6, int edge_one_in = 3) {
  const auto pick = [&rng](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  CostGraph g;
  const int n = pick(min_nodes, max_nodes);
  std::int64_t least = 0, most = 0;
  for (int u = 0; u < n; ++u) {
    const int k = pick(2, 3);
    std::vector<cost_t> c;
    std::vector<std::int64_t> use;
    for (int a = 0; a < k; ++a) {
      c.push_back(pick(-20, 40));
      use.push_back(pick(0, 12));
    }
    least += *std::min_element(use.begin(), use.end());
    most += *std::max_element(use.begin(), use.end());
    g.add_node(c);
    g.usage.push_back(use);
  }
  for (int u = 0; u < n; ++u)
    for (int v = u + 1; v < n; ++v) {
      if (pick(0, edge_one_in - 1) != 0) continue;
      std::vector<cost_t> m(g.num_labels(static_cast<std::size_t>(u)) * g.num_labels(static_cast<std::size_t>(v)));
      for (auto& c : m) c = pick(0, 30);
      g.add_dense_edge(static_cast<std::uint32_t>(u), static_cast<std::uint32_t>(v), m);
    }
  UsageLimit l;
  for (int u = 0; u < n; ++u) l.nodes.push_back(static_cast<std::uint32_t>(u));
  l.limit = pick(static_cast<int>(least), static_cast<int>(most));
  g.limits.push_back(l);
  return g;
}

/// The Lagrangian dual optimum max_{λ >= 0} min_x c(x) + λ(u(x) - B) of a graph with one limit,
/// by enumeration: by LP duality, the least expected cost of a mix of two labellings whose expected
/// usage keeps the limit (a labelling within it alone, or one over it mixed with one within it at
/// usage B). As a long double.
long double dual_optimum(const CostGraph& g) {
  std::vector<std::pair<cost_t, std::int64_t>> points;  // (cost, usage) of every finite labelling
  std::vector<std::uint32_t> x(g.num_nodes(), 0);
  while (true) {
    const cost_t c = g.evaluate(x);
    if (!is_forbidden(c)) {
      std::int64_t use = 0;
      for (auto u : g.limits[0].nodes) use += g.usage[u][x[u]];
      points.emplace_back(c, use);
    }
    std::size_t u = 0;
    while (u < x.size() && ++x[u] == g.num_labels(u)) x[u++] = 0;
    if (u == x.size()) break;
  }
  const std::int64_t b = g.limits[0].limit;
  long double best = std::numeric_limits<long double>::infinity();
  for (const auto& [cq, uq] : points) {
    if (uq > b) continue;
    best = std::min(best, static_cast<long double>(cq));
    for (const auto& [cp, up] : points)
      if (up > b) {
        const long double t = static_cast<long double>(b - uq) / static_cast<long double>(up - uq);
        best = std::min(best, cq + t * static_cast<long double>(cp - cq));
      }
  }
  return best;
}

}  // namespace

TEST_CASE("lagrangian bound: one limit reaches the dual optimum (breakpoints)", "[solve][lagrangian]") {
  // the bound is ceil of L at the multiplier found, L <= the dual optimum; with exact tries the
  // breakpoint steps end on the optimum's multiplier (up to its rounding to n / 2^d)
  std::size_t at_optimum = 0;
  for (unsigned seed = 0; seed < 300; ++seed) {
    std::mt19937 rng(seed);
    const CostGraph g = random_graph(rng);
    const long double dual = dual_optimum(g);
    const auto lb = lagrangian_bound(g, SolveOptions{}, Deadline::after(5.0));
    INFO("seed " << seed << " dual optimum " << static_cast<double>(dual));
    REQUIRE(lb.has_value());
    CHECK(static_cast<long double>(*lb) <= std::ceil(dual - 1e-9L));
    CHECK(static_cast<long double>(*lb) >= std::ceil(dual - 1e-9L) - 1);
    if (static_cast<long double>(*lb) == std::ceil(dual - 1e-9L)) ++at_optimum;
  }
  CHECK(at_optimum >= 290);
}

TEST_CASE("lagrangian bound: a label ruled out is in no labelling within the limit cheaper than the plan", "[solve][lagrangian]") {
  // denser graphs without reductions, so the tries' duals run and fix labels; the plan's cost is
  // the optimum or above it (any cost: the rule holds below it)
  std::size_t ruled = 0, graphs_ruling = 0, capped = 0, checked = 0;
  for (unsigned seed = 0; seed < 400; ++seed) {
    std::mt19937 rng(seed);
    const CostGraph g = random_graph(rng, 7, 8, 2);
    const cost_t opt = brute_force_optimum(g);
    if (is_forbidden(opt)) continue;
    const cost_t plan = opt + std::uniform_int_distribution<cost_t>(0, 12)(rng);
    SolveOptions o;
    o.reductions = false;
    o.elimination_work = 0;
    std::vector<std::vector<char>> out;
    cost_t below = 0;
    LagrangianHooks hooks;
    hooks.plan_cost = [plan] { return plan; };
    hooks.ruled_out = &out;
    hooks.ruled_out_below = &below;
    LimitPenalty pen;
    CostGraph penalised;
    hooks.best_penalty = &pen;
    hooks.best_penalised = &penalised;
    const auto lb = lagrangian_bound(g, o, Deadline::after(5.0), 12, hooks);
    INFO("seed " << seed << " optimum " << opt << " plan " << plan << " ruled out below " << below);
    REQUIRE(lb.has_value());
    CHECK(*lb <= opt);
    {  // the penalisation at the best multipliers, made of the tries' matrices, has no label ruled out
      const CostGraph want = penalised_graph(g, pen);
      REQUIRE(penalised.num_nodes() == g.num_nodes());
      CHECK(penalised.unary == want.unary);
      CHECK(penalised.usage == want.usage);
      CHECK(penalised.constant == want.constant);
      REQUIRE(penalised.limits.size() == want.limits.size());
      CHECK(penalised.limits[0].limit == want.limits[0].limit);
      REQUIRE(penalised.edges.size() == want.edges.size());
      for (std::size_t e = 0; e < want.edges.size(); ++e) CHECK(penalised.edges[e].costs() == want.edges[e].costs());
    }
    if (out.empty()) {
      CHECK(is_forbidden(below));
      continue;
    }
    // the least plan the tries saw: the one given, or a labelling within the limit they found
    CHECK(below <= plan);
    CHECK(below >= opt);
    ++graphs_ruling;
    if (*lb == below) ++capped;
    REQUIRE(out.size() == g.num_nodes());
    for (std::size_t u = 0; u < g.num_nodes(); ++u) ruled += static_cast<std::size_t>(std::count(out[u].begin(), out[u].end(), 1));
    // every labelling within the limit below that plan keeps away from them
    std::vector<std::uint32_t> x(g.num_nodes(), 0);
    while (true) {
      if (g.feasible(x) && g.evaluate(x) < below) {
        ++checked;
        for (std::size_t u = 0; u < x.size(); ++u) CHECK(out[u][x[u]] == 0);
      }
      std::size_t u = 0;
      while (u < x.size() && ++x[u] == g.num_labels(u)) x[u++] = 0;
      if (u == x.size()) break;
    }
  }
  INFO("graphs ruling labels out " << graphs_ruling << ", labels " << ruled << ", labellings checked " << checked << ", bounds at the plan's cost "
                                   << capped);
  CHECK(graphs_ruling >= 20);
  CHECK(ruled >= 100);
  CHECK(checked >= 100);
}

TEST_CASE("lagrangian bound: on_try comes once the try's labelling is in `labellings`", "[solve][lagrangian]") {
  // solve takes each try's labelling as a plan in on_try, so its progress lines show one while
  // the tries run (GPT-2's training step on 2x2x2: an incumbent after the first try at 4.7 s, where
  // the lines said "incumbent none" for the tries' 13 s)
  std::size_t calls = 0, seen = 0;
  for (unsigned seed = 0; seed < 50; ++seed) {
    std::mt19937 rng(seed);
    const CostGraph g = random_graph(rng);
    std::vector<std::vector<std::uint32_t>> labellings;
    std::vector<std::size_t> held;  // labellings.size() at each call
    LagrangianHooks hooks;
    hooks.labellings = &labellings;
    hooks.on_try = [&](cost_t) { held.push_back(labellings.size()); };
    const auto lb = lagrangian_bound(g, SolveOptions{}, Deadline::after(5.0), 12, hooks);
    REQUIRE(lb.has_value());
    INFO("seed " << seed);
    REQUIRE_FALSE(held.empty());
    for (std::size_t i = 0; i < held.size(); ++i) CHECK(held[i] >= i + 1);
    calls += held.size();
    seen += labellings.size();
  }
  CHECK(calls >= 50);
  CHECK(seen >= calls);
}

TEST_CASE("lagrangian bound: one limit stops within lagrangian_tolerance of the dual optimum", "[solve][lagrangian]") {
  // costs scaled by 10^6, so that a share of 1e-4 of the bound is hundreds of units: the tries
  // may stop short of the optimum's multiplier, but never further than the tolerance below the
  // dual optimum (the lines of the labellings found cap what is left); tolerance 0 runs on
  // until λ repeats
  std::size_t short_of_optimum = 0;
  for (unsigned seed = 0; seed < 300; ++seed) {
    std::mt19937 rng(seed);
    CostGraph g = random_graph(rng);
    for (auto& row : g.unary)
      for (auto& c : row) c *= 1000000;
    for (auto& e : g.edges)
      for (auto& c : e.matrix) c *= 1000000;
    const long double dual = dual_optimum(g);
    SolveOptions loose, exact;
    loose.lagrangian_tolerance = 1e-2;
    exact.lagrangian_tolerance = 0;
    const auto lb = lagrangian_bound(g, loose, Deadline::after(5.0));
    const auto lb_exact = lagrangian_bound(g, exact, Deadline::after(5.0));
    INFO("seed " << seed << " dual optimum " << static_cast<double>(dual));
    REQUIRE(lb.has_value());
    REQUIRE(lb_exact.has_value());
    CHECK(static_cast<long double>(*lb) <= std::ceil(dual - 1e-9L));
    CHECK(static_cast<long double>(*lb) >= dual - 1e-2L * std::abs(dual) - 1);
    CHECK(static_cast<long double>(*lb_exact) >= std::ceil(dual - 1e-9L) - 1);
    CHECK(*lb <= *lb_exact);
    if (static_cast<long double>(*lb) < std::ceil(dual - 1e-9L) - 1) ++short_of_optimum;
  }
  CHECK(short_of_optimum > 0);  // the tolerance was used: some runs stopped early
}

TEST_CASE("limits dominance: labels dominated in cost and usage go first, the optimum stays", "[solve][lagrangian]") {
  std::size_t removed = 0;
  for (unsigned seed = 0; seed < 300; ++seed) {
    std::mt19937 rng(seed);
    const CostGraph g = random_graph(rng);
    const cost_t opt = brute_force_optimum(g);
    SolveOptions off;
    off.limits_dominance = false;
    const SolveResult with = solve(g), without = solve(g, off);
    INFO("seed " << seed << " optimum " << opt);
    CHECK(with.cost == opt);
    CHECK(with.optimal);
    CHECK(g.feasible(with.labels));
    CHECK(g.evaluate(with.labels) == with.cost);
    CHECK(without.cost == opt);
    CHECK(without.stats.limits_dominated == 0);
    removed += with.stats.limits_dominated;
  }
  CHECK(removed > 100);
  // hand-made: node 0's label 1 costs more and uses more than label 0 in every context (removed);
  // label 2 is cheaper but uses more (kept: it may break the limit, label 0 never does more)
  CostGraph g;
  g.add_node({10, 12, 4});
  g.add_node({0, 1});
  g.add_dense_edge(0, 1, {0, 5, 0, 6, 3, 9});
  g.usage = {{5, 7, 9}, {1, 0}};
  g.limits.push_back(UsageLimit{{0, 1}, 10});
  std::size_t gone = 0;
  const auto kept = detail::labels_within_limits(g, Deadline::after(5.0), {}, gone);
  REQUIRE(kept.has_value());
  CHECK((*kept)[0] == std::vector<std::uint32_t>{0, 2});
  CHECK(gone == 1);
  const SolveResult r = solve(g);
  CHECK(r.stats.limits_dominated == 1);
  CHECK(r.cost == brute_force_optimum(g));
  CHECK(r.optimal);
  // a protected label stays (the start labelling of a solve)
  const std::vector<std::uint32_t> start{1, 0};
  CHECK((*detail::labels_within_limits(g, Deadline::after(5.0), start, gone))[0] == std::vector<std::uint32_t>{0, 1, 2});
  // a start label out of range is an error before any label is removed (never a read past a node)
  SolveOptions bad;
  bad.start = {3, 0};
  CHECK_THROWS_WITH(solve(g, bad), Catch::Contains("label 3 of node 0 out of range"));
  bad.start = {0};
  CHECK_THROWS_WITH(solve(g, bad), Catch::Contains("wrong size"));
}

TEST_CASE("priced rounds: the first round searches, not pruned by the unconstrained try's labelling", "[solve][lagrangian]") {
  // the λ = 0 try's labelling breaks the limit; taken while no limit was enforced, it was the
  // relaxation incumbent, and the first priced round (every limit enforced) pruned against it
  // below its own bound, ended at once, and a second round did the work
  // (no round at all when the tries' bound meets their best plan)
  std::size_t searched = 0;
  for (unsigned seed = 0; seed < 300; ++seed) {
    std::mt19937 rng(seed);
    const CostGraph g = random_graph(rng);
    SolveOptions o;
    o.limits_dominance = false;
    const SolveResult r = solve(g, o);
    INFO("seed " << seed);
    CHECK(r.cost == brute_force_optimum(g));
    if (!r.stats.priced_rounds) continue;
    CHECK(r.optimal);
    CHECK(r.stats.rounds <= 1);
    CostGraph free = g;  // the unconstrained optimum breaks the limit: the case of the fault
    free.limits.clear();
    if (r.stats.rounds == 1 && solve(free).cost < r.cost) ++searched;
  }
  CHECK(searched > 20);
}

TEST_CASE("lagrangian bound: never above the constrained optimum on random graphs", "[solve][lagrangian]") {
  std::size_t above_unconstrained = 0;
  for (unsigned seed = 0; seed < 300; ++seed) {
    std::mt19937 rng(seed);
    const CostGraph g = random_graph(rng);
    const cost_t opt = brute_force_optimum(g);
    REQUIRE(opt != forbidden);  // the limit is at least the least usage sum
    CostGraph free = g;
    free.limits.clear();
    const cost_t unconstrained = brute_force_optimum(free);
    const auto lb = lagrangian_bound(g, SolveOptions{}, Deadline::after(5.0));
    INFO("seed " << seed << " optimum " << opt << " unconstrained " << unconstrained);
    REQUIRE(lb.has_value());
    CHECK(*lb <= opt);
    if (*lb > unconstrained) ++above_unconstrained;
    const SolveResult r = solve(g);
    CHECK(r.cost == opt);
    CHECK(r.lower_bound <= opt);
    CHECK(r.optimal);
  }
  CHECK(above_unconstrained > 30);  // the limit binds on many seeds and the bound sees it
}

TEST_CASE("lagrangian bound: the hand-computed value on two nodes", "[solve][lagrangian]") {
  // node 0: label 0 costs 0 with usage 10, label 1 costs 5 with usage 0; node 1: 0/10 and 3/0;
  // limit 10. Without the limit the optimum is 0 (usage 20); with it 3 (node 1 on label 1).
  // L(λ) = min(10λ, 5) + min(10λ, 3) - 10λ = 10λ (λ <= 0.3), 3 (0.3..0.5), 8 - 10λ (λ >= 0.5):
  // max 3 on [0.3, 0.5]. One limit, so the multiplier moves between breakpoints: λ = 0 gives
  // (0, 0) (cost 0, usage 20, over); the least-usage labelling (1, 1) (cost 8, usage 0) is within;
  // λ = (8 - 0) / (20 - 0) = 0.4 gives (0, 1) (cost 3, usage 10, within) and L = 3; λ = 3 / 10 =
  // 0.3 gives L = 3 again and λ repeats: bound 3.
  CostGraph g;
  g.add_node({0, 5});
  g.add_node({0, 3});
  g.usage = {{10, 0}, {10, 0}};
  g.limits.push_back(UsageLimit{{0, 1}, 10});
  const auto lb = lagrangian_bound(g, SolveOptions{}, Deadline::after(5.0));
  REQUIRE(lb.has_value());
  CHECK(*lb == 3);
  CostGraph free = g;
  free.limits.clear();
  CHECK(solve(free).cost == 0);
  const SolveResult r = solve(g);
  CHECK(r.stats.lagrangian_bound == 3);
  CHECK(r.cost == 3);
  CHECK(r.optimal);
  SolveOptions off;
  off.lagrangian_share = 0;
  CHECK(solve(g, off).stats.lagrangian_bound == std::numeric_limits<std::int64_t>::min());
}

TEST_CASE("lagrangian bound: usages near 2^58 clamp the multiplier and stay valid", "[solve][lagrangian]") {
  // the same shape as the two-node case with usage 2^58: λ = 1 / 2^d already prices a label at
  // 2^58 / 2^d · 2^d > 2^54, so the multiplier is clamped (to 0 here) and the bound stays the
  // unconstrained 0; the solver still proves the constrained optimum 3.
  const std::int64_t big = std::int64_t{1} << 58;
  CostGraph g;
  g.add_node({0, 5});
  g.add_node({0, 3});
  g.usage = {{big, 0}, {big, 0}};
  g.limits.push_back(UsageLimit{{0, 1}, big});
  const auto lb = lagrangian_bound(g, SolveOptions{}, Deadline::after(5.0));
  REQUIRE(lb.has_value());
  CHECK(*lb == 0);
  const SolveResult r = solve(g);
  CHECK(r.cost == 3);
  CHECK(r.optimal);
}

TEST_CASE("lagrangian bound: a multiplier doubled against an unreachable limit stays within exact arithmetic", "[solve][lagrangian]") {
  // a chain of 8 nodes, label 0 (cost 0, usage 10) or 1 (cost 2^40, usage 1), no two adjacent 1s:
  // at least 4 nodes use 10, so no labelling keeps the limit 20, though the least usages (8) do.
  // No labelling within the limit is ever found, so the tries double λ; with each node's priced
  // cost clamped to 2^54 alone, the 8 of them summed past 2^56 and the try's solve threw
  // "the costs are too large for exact arithmetic" (GPT-2's training step at a 2 GiB budget)
  const cost_t dear = cost_t{1} << 40;
  CostGraph g;
  for (int u = 0; u < 8; ++u) {
    g.add_node({0, dear});
    g.usage.push_back({10, 1});
  }
  for (std::uint32_t u = 0; u + 1 < 8; ++u) g.add_dense_edge(u, u + 1, {0, 0, 0, forbidden});
  g.limits.push_back(UsageLimit{{0, 1, 2, 3, 4, 5, 6, 7}, 20});
  const auto lb = lagrangian_bound(g, SolveOptions{}, Deadline::after(5.0));
  REQUIRE(lb.has_value());
  CHECK(*lb >= 0);
  const SolveResult r = solve(g);
  CHECK_FALSE(r.feasible);
  CHECK(r.status == "infeasible");
}

TEST_CASE("limits out of reach: the least usages past a limit answer infeasible without the tries", "[solve][lagrangian]") {
  // three nodes with usages {5, 2}, {4, 3} and {1, 7}; node 2's label 0 (usage 1) has a forbidden
  // cost, so the least usage over labels of finite cost is 2 + 3 + 7 = 12 (6 counting it)
  CostGraph g;
  g.add_node({0, 9});
  g.usage.push_back({5, 2});
  g.add_node({0, 9});
  g.usage.push_back({4, 3});
  g.add_node({forbidden, 0});
  g.usage.push_back({1, 7});
  g.add_dense_edge(0, 1, {0, 1, 1, 0});
  g.add_dense_edge(1, 2, {0, 1, 1, 0});
  g.limits.push_back(UsageLimit{{0, 1, 2}, 11});
  CHECK(limits_out_of_reach(g));
  const SolveResult r = solve(g);
  CHECK_FALSE(r.feasible);
  CHECK(r.status == "infeasible");
  CHECK(r.stats.lagrangian_ms == 0);  // no try ran
  CHECK(r.stats.rounds == 0);
  CHECK(r.lower_bound == forbidden);
  // at the least usage exactly the limit is kept by one labelling (labels 1, 1, 1): cost 18
  g.limits[0].limit = 12;
  CHECK_FALSE(limits_out_of_reach(g));
  const SolveResult at = solve(g);
  REQUIRE(at.feasible);
  CHECK(at.optimal);
  CHECK(at.cost == 9 + 9 + 0);
  CHECK(at.labels == std::vector<std::uint32_t>{1, 1, 1});
  // a graph without limits is never out of reach
  g.limits.clear();
  CHECK_FALSE(limits_out_of_reach(g));
}

TEST_CASE("limit repair: moves a labelling inside the limit, and no single admissible move improves it", "[solve][lagrangian][repair]") {
  std::size_t repaired = 0;
  for (unsigned seed = 0; seed < 300; ++seed) {
    std::mt19937 rng(seed);
    const CostGraph g = random_graph(rng);
    const cost_t opt = brute_force_optimum(g);
    // start from the unconstrained optimum (every node at its cheapest label in context)
    CostGraph free = g;
    free.limits.clear();
    std::vector<std::uint32_t> x = solve(free).labels;
    const bool was_feasible = g.feasible(x);
    INFO("seed " << seed);
    // one limit over every node, no forbidden costs: the least-usage labels are always reachable
    REQUIRE(repair_to_limits(g, x));
    REQUIRE(g.feasible(x));
    const cost_t c = g.evaluate(x);
    CHECK(c >= opt);
    if (!was_feasible) ++repaired;
    std::int64_t used = 0;
    for (std::size_t u = 0; u < x.size(); ++u) used += g.usage[u][x[u]];
    for (std::uint32_t u = 0; u < g.num_nodes(); ++u)
      for (std::uint32_t b = 0; b < g.num_labels(u); ++b) {
        std::vector<std::uint32_t> y = x;
        y[u] = b;
        if (used - g.usage[u][x[u]] + g.usage[u][b] <= g.limits[0].limit) CHECK(g.evaluate(y) >= c);
      }
  }
  CHECK(repaired > 30);  // the unconstrained optimum breaks the limit on many seeds
}

TEST_CASE("limit repair: the hand-worked two-node case takes the cheaper saving", "[solve][lagrangian][repair]") {
  // both nodes at label 0 use 20 > 10; moving node 1 saves 10 for 3, node 0 saves 10 for 5
  CostGraph g;
  g.add_node({0, 5});
  g.add_node({0, 3});
  g.usage = {{10, 0}, {10, 0}};
  g.limits.push_back(UsageLimit{{0, 1}, 10});
  std::vector<std::uint32_t> x{0, 0};
  REQUIRE(repair_to_limits(g, x));
  CHECK(x == std::vector<std::uint32_t>{0, 1});
  // a limit below every labelling's usage cannot be met: false, and no move leaves a forbidden cost
  g.limits[0].limit = -1;
  x = {0, 0};
  CHECK_FALSE(repair_to_limits(g, x));
  CHECK(g.evaluate(x) != forbidden);
}

namespace {

/// Random graph whose nodes fall apart once a hub is labelled: a hub (2 labels) joined to 2..4
/// chains of 1..2 nodes (3 labels each), unary in [-20, 40], usage in [0, 12] (a third of the
/// nodes: the same usage for every label), edge costs in [0, 30], one limit over every node
/// between the least and the largest usage sum.
CostGraph hub_and_chains(std::mt19937& rng) {
  const auto pick = [&rng](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  CostGraph g;
  std::int64_t least = 0, most = 0;
  const auto node = [&](int labels) {
    std::vector<cost_t> c;
    std::vector<std::int64_t> use;
    const bool constant = pick(0, 2) == 0;
    const int same = pick(0, 12);
    for (int a = 0; a < labels; ++a) {
      c.push_back(pick(-20, 40));
      use.push_back(constant ? same : pick(0, 12));
    }
    least += *std::min_element(use.begin(), use.end());
    most += *std::max_element(use.begin(), use.end());
    g.usage.push_back(use);
    return g.add_node(c);
  };
  const auto edge = [&](std::uint32_t u, std::uint32_t v) {
    std::vector<cost_t> m(g.num_labels(u) * g.num_labels(v));
    for (auto& c : m) c = pick(0, 30);
    g.add_dense_edge(u, v, m);
  };
  const std::uint32_t hub = node(2);
  for (int c = pick(2, 4); c > 0; --c) {
    std::uint32_t prev = hub;
    for (int k = pick(1, 2); k > 0; --k) {
      const std::uint32_t v = node(3);
      edge(prev, v);
      prev = v;
    }
  }
  UsageLimit l;
  for (std::uint32_t u = 0; u < g.num_nodes(); ++u) l.nodes.push_back(u);
  l.limit = pick(static_cast<int>(least), static_cast<int>(most));
  g.limits.push_back(l);
  return g;
}

}  // namespace

TEST_CASE("search under one limit: the parts apart, each by its cost and usage frontier", "[solve][lagrangian][search]") {
  // only the search (no reductions or dual; with and without the Lagrangian's priced rounds):
  // once the hub is labelled the chains are searched apart and their frontiers combined
  std::size_t splits = 0, priced_splits = 0, infeasible = 0;
  for (unsigned seed = 0; seed < 400; ++seed) {
    std::mt19937 rng(seed);
    const CostGraph g = hub_and_chains(rng);
    const cost_t opt = brute_force_optimum(g);
    INFO("seed " << seed << " optimum " << opt);
    SolveOptions o;
    o.reductions = false;
    o.dual = false;
    o.limits_dominance = false;
    for (const double share : {0.0, 0.5}) {
      o.lagrangian_share = share;
      const SolveResult r = solve(g, o);
      if (is_forbidden(opt)) {
        CHECK(!r.feasible);
        ++infeasible;
        continue;
      }
      CHECK(r.cost == opt);
      CHECK(r.optimal);
      CHECK(g.feasible(r.labels));
      CHECK(g.evaluate(r.labels) == opt);
      (share > 0 ? priced_splits : splits) += r.stats.search_splits;
    }
  }
  CHECK(splits > 100);
  CHECK(priced_splits > 20);
  CHECK(infeasible == 0);  // the limit is at least the least usage sum
}
