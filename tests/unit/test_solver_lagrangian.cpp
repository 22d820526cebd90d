// The Lagrangian bound of usage limits: never above the constrained optimum (brute force on
// random cost graphs with one limit), and the hand-computed value on a 2-node instance where the
// limit binds (strictly above the optimum without the limit).
#include <catch2/catch.hpp>

#include <cstddef>
#include <cstdint>
#include <random>
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

/// Random graph: 3..6 nodes with 2..3 labels (unary in [-20, 40], usage in [0, 12]), random dense
/// edges (costs in [0, 30]), one limit over every node between the least and the largest usage sum.
CostGraph random_graph(std::mt19937& rng) {
  const auto pick = [&rng](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  CostGraph g;
  const int n = pick(3, 6);
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
      if (pick(0, 2) != 0) continue;
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

}  // namespace

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
  // max 3 on [0.3, 0.5]. The first λ (cost per usage of a typical node: (5 + 3) / 2 / (10 / 2) =
  // 0.8) has subgradient -10, the next (0.4) has subgradient 0: bound 3.
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
