// The interval limit's primal heuristic and Lagrangian pricing (IOPDDL): on small random graphs
// with lifetimes, forbidden pairs and a per-time-step limit, checked against brute force —
// repaired labellings keep every step and every pair and cost at least the optimum; the penalised
// graph prices a labelling exactly as its formula says; every Lagrangian bound (the tries' and the
// solve's) is at most the optimum; the range-add/range-max tree against a plain array.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "ctshard/solve/interval_repair.hpp"
#include "ctshard/solve/solver.hpp"

using namespace ctshard::solve;

namespace {

/// Calls `f(x)` for every labelling of `g` (odometer order).
template <class F>
void for_each_labelling(const CostGraph& g, F&& f) {
  std::vector<std::uint32_t> x(g.num_nodes(), 0);
  while (true) {
    f(x);
    std::size_t u = 0;
    while (u < x.size() && ++x[u] == g.num_labels(u)) x[u++] = 0;
    if (u == x.size()) return;
  }
}

/// The least cost of a labelling keeping every step and pair; `forbidden` when none does.
cost_t brute_force_optimum(const CostGraph& g) {
  cost_t best = forbidden;
  for_each_labelling(g, [&](const std::vector<std::uint32_t>& x) {
    if (g.feasible(x)) best = std::min(best, g.evaluate(x));
  });
  return best;
}

/// Random graph: 3..7 nodes of 1..4 labels (unary in [0, 40], a few forbidden; usage in
/// [0, 20]), lifetimes [s, e) in [0, 6] (some empty), a chain plus random edges whose pairs are
/// forbidden with probability 1/3, and an interval limit between the least and the largest peak.
CostGraph random_interval_graph(std::mt19937& rng) {
  const auto pick = [&rng](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  CostGraph g;
  const int n = pick(3, 7);
  for (int u = 0; u < n; ++u) {
    const int k = pick(1, 4);
    std::vector<cost_t> c;
    std::vector<std::int64_t> use;
    for (int a = 0; a < k; ++a) {
      c.push_back(k > 1 && pick(0, 7) == 0 ? forbidden : pick(0, 40));
      use.push_back(pick(0, 20));
    }
    g.add_node(c);
    g.usage.push_back(use);
    const int s = pick(0, 5);
    g.intervals.emplace_back(s, pick(0, 3) == 0 ? s : pick(s + 1, 6));
  }
  const auto add_edge = [&](int u, int v) {
    std::vector<cost_t> m(g.num_labels(static_cast<std::size_t>(u)) * g.num_labels(static_cast<std::size_t>(v)));
    for (auto& c : m) c = pick(0, 2) == 0 ? forbidden : pick(0, 30);
    g.add_dense_edge(static_cast<std::uint32_t>(u), static_cast<std::uint32_t>(v), m);
  };
  for (int u = 0; u + 1 < n; ++u) add_edge(u, u + 1);
  for (int u = 0; u < n; ++u)
    for (int v = u + 2; v < n; ++v)
      if (pick(0, 3) == 0) add_edge(u, v);
  const IntervalSteps steps(g.intervals);
  std::int64_t least = 0, most = 0;
  {
    const auto lo = steps.sums<std::int64_t>([&](std::size_t u) { return *std::min_element(g.usage[u].begin(), g.usage[u].end()); });
    const auto hi = steps.sums<std::int64_t>([&](std::size_t u) { return *std::max_element(g.usage[u].begin(), g.usage[u].end()); });
    for (auto x : lo) least = std::max(least, x);
    for (auto x : hi) most = std::max(most, x);
  }
  g.interval_limit = pick(static_cast<int>(least), static_cast<int>(std::max(least, most)));
  return g;
}

}  // namespace

TEST_CASE("range add / range max tree: agrees with a plain array", "[solve][interval]") {
  std::mt19937 rng(7);
  const auto pick = [&rng](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  for (int n : {1, 2, 5, 17, 64}) {
    std::vector<std::int64_t> v(static_cast<std::size_t>(n));
    for (auto& x : v) x = pick(-50, 50);
    detail::RangeAddMax t(v);
    for (int it = 0; it < 300; ++it) {
      const auto lo = static_cast<std::size_t>(pick(0, n - 1)), hi = static_cast<std::size_t>(pick(static_cast<int>(lo) + 1, n));
      if (pick(0, 1) == 0) {
        const int d = pick(-20, 20);
        t.add(lo, hi, d);
        for (std::size_t i = lo; i < hi; ++i) v[i] += d;
      } else {
        CHECK(t.max(lo, hi) == *std::max_element(v.begin() + static_cast<std::ptrdiff_t>(lo), v.begin() + static_cast<std::ptrdiff_t>(hi)));
      }
      CHECK(t.max_all() == *std::max_element(v.begin(), v.end()));
    }
  }
}

TEST_CASE("interval repair: a repaired labelling keeps every step and pair, costs at least the optimum", "[solve][interval][repair]") {
  std::size_t repaired = 0, started_broken = 0;
  for (unsigned seed = 0; seed < 400; ++seed) {
    std::mt19937 rng(seed);
    const CostGraph g = random_interval_graph(rng);
    const cost_t opt = brute_force_optimum(g);
    const IntervalSteps steps(g.intervals);
    // every labelling with finite cost as a start
    for_each_labelling(g, [&](const std::vector<std::uint32_t>& start) {
      if (is_forbidden(g.evaluate(start))) return;
      std::vector<std::uint32_t> x = start;
      const bool broken = !g.feasible(start);
      const bool ok = repair_to_interval_limit(g, steps, x, Deadline::after(5.0));
      INFO("seed " << seed << " optimum " << opt);
      CHECK(!is_forbidden(g.evaluate(x)));  // never a forbidden pair
      if (!ok) return;
      CHECK(g.feasible(x));
      CHECK(opt != forbidden);
      CHECK(g.evaluate(x) >= opt);
      if (!broken) CHECK(g.evaluate(x) <= g.evaluate(start));  // the improvement never costs more
      ++repaired;
      if (broken) ++started_broken;
    });
  }
  CHECK(started_broken > 200);  // the repair does repair
  CHECK(repaired > started_broken);
}

TEST_CASE("interval penalisation: the priced cost and every Lagrangian bound", "[solve][interval][lagrangian]") {
  std::size_t bounds = 0, binding = 0;
  for (unsigned seed = 0; seed < 300; ++seed) {
    std::mt19937 rng(seed);
    const CostGraph g = random_interval_graph(rng);
    const cost_t opt = brute_force_optimum(g);
    if (opt == forbidden) continue;
    const IntervalSteps steps(g.intervals);
    const auto pick = [&rng](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
    StepPenalty pen{std::vector<cost_t>(steps.segments()), 3};
    for (auto& n : pen.numerators) n = pick(0, 40);
    const auto h = interval_penalised_graph(g, steps, pen);
    REQUIRE(h.has_value());
    const penalty_wide offset = step_penalty_offset(steps, pen, *g.interval_limit);
    cost_t least_h = forbidden;
    for_each_labelling(g, [&](const std::vector<std::uint32_t>& x) {
      const cost_t c = g.evaluate(x), hc = h->evaluate(x);
      CHECK(is_forbidden(c) == is_forbidden(hc));
      if (is_forbidden(c)) return;
      // h(x) = 2^shift·(cost(x) - constant) + Σ_t n_t·use_t(x)
      const auto use = steps.sums<std::int64_t>([&](std::size_t u) { return g.usage[u][x[u]]; });
      penalty_wide expect = static_cast<penalty_wide>(c - g.constant) << pen.shift;
      for (std::size_t t = 0; t < use.size(); ++t) expect += static_cast<penalty_wide>(pen.numerators[t]) * use[t];
      CHECK(static_cast<penalty_wide>(hc) == expect);
      least_h = std::min(least_h, hc);
    });
    // the Lagrangian bound of these multipliers: ceil((min h + 2^shift·constant - offset) / 2^shift)
    const penalty_wide total = static_cast<penalty_wide>(least_h) + (static_cast<penalty_wide>(g.constant) << pen.shift) - offset;
    const penalty_wide bound = total >= 0 ? (total + 7) >> 3 : -((-total) >> 3);
    INFO("seed " << seed << " optimum " << opt);
    CHECK(bound <= opt);
    // the heuristic's tries: a valid bound, every recorded plan feasible and at least the optimum
    detail::StepLimits step_limits(g);
    detail::Incumbents inc{g, {}, {}, &step_limits, {}, {}, forbidden, forbidden, nullptr, 0};
    const auto lb = detail::interval_lagrangian(g, steps, SolveOptions{}, Deadline::after(5.0), 4, 0.5, inc);
    if (lb) {
      ++bounds;
      CHECK(*lb <= opt);
    }
    if (!is_forbidden(inc.feasible_cost)) {
      CHECK(g.feasible(inc.feasible_labels));
      CHECK(inc.feasible_cost == g.evaluate(inc.feasible_labels));
      CHECK(inc.feasible_cost >= opt);
    }
    CostGraph free = g;
    free.interval_limit.reset();
    if (brute_force_optimum(free) < opt) ++binding;
    // the whole solve: feasible, at least the optimum, a bound at most the optimum
    const SolveResult r = solve(g);
    CHECK(r.feasible);
    CHECK(g.feasible(r.labels));
    CHECK(r.cost == opt);
    CHECK(r.lower_bound <= opt);
  }
  CHECK(bounds > 100);
  CHECK(binding > 30);  // the limit binds on many seeds
}

TEST_CASE("interval Lagrangian heuristic: a binding limit on a chain, by hand", "[solve][interval][lagrangian]") {
  // three nodes living together at step [0, 1); each has a cheap heavy label (cost 0, usage 10)
  // and a dear light one (cost 4, 5, 6; usage 0); limit 10: the optimum keeps one heavy label
  // (node 2's: it saves 6) and costs 4 + 5 = 9. Pairs are free except node 0 heavy with node 1
  // light (forbidden), so node 1 light needs node 0 light too.
  CostGraph g;
  g.add_node({0, 4});
  g.add_node({0, 5});
  g.add_node({0, 6});
  g.add_dense_edge(0, 1, {0, forbidden, 0, 0});
  g.usage = {{10, 0}, {10, 0}, {10, 0}};
  g.intervals = {{0, 1}, {0, 1}, {0, 1}};
  g.interval_limit = 10;
  REQUIRE(brute_force_optimum(g) == 9);
  const IntervalSteps steps(g.intervals);
  // from every node heavy (usage 30), the repair reaches a plan within the limit
  std::vector<std::uint32_t> x = {0, 0, 0};
  REQUIRE(repair_to_interval_limit(g, steps, x, Deadline::after(5.0)));
  CHECK(g.feasible(x));
  CHECK(g.evaluate(x) >= 9);
  const SolveResult r = solve(g);
  CHECK(r.cost == 9);
  CHECK(r.optimal);
}
