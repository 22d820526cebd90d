// The solver under its budgets: limit propagation by worklist against the restarting sweep it
// replaced (same reduced domains on random instances), a tiny time limit on a real IOPDDL
// instance (status, a valid bound, the start labelling returned), the progress lines and the peak
// memory in the stats; a usage limit listing a node twice refused, "stopped" against
// "time_limit", and the dual's pass polling its deadline.
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "../sanitizer_scale.hpp"
#include "ctshard/solve/iopddl.hpp"
#include "ctshard/solve/reductions.hpp"
#include "ctshard/solve/solver.hpp"

using namespace ctshard;
using namespace ctshard::solve;
using detail::fine_t;
using detail::inf;
using detail::Problem;

namespace {

/// The limit propagation as it was before the worklist: arc consistency, then a sweep over every
/// limit, again from the start whenever a label went. The reference of the worklist's results.
bool propagate_by_sweeps(Problem& p) {
  bool again = true;
  while (again && !p.infeasible) {
    again = false;
    for (std::uint32_t ei = 0; ei < p.edges.size() && !p.infeasible; ++ei) {  // arc consistency by sweeps
      detail::WEdge& e = p.edges[ei];
      if (!e.alive) continue;
      for (int side = 0; side < 2 && !p.infeasible; ++side) {
        const std::uint32_t x = side == 0 ? e.u : e.v, y = side == 0 ? e.v : e.u;
        std::vector<char> keep(p.num_labels(x), 0);
        bool all = true;
        for (std::size_t a = 0; a < keep.size(); ++a) {
          for (std::size_t b = 0; b < p.num_labels(y) && !keep[a]; ++b) keep[a] = (side == 0 ? e.at(a, b) : e.at(b, a)) < inf;
          all = all && keep[a];
        }
        if (!all) {
          p.keep_labels(x, keep);
          again = true;
        }
      }
    }
    for (auto& l : p.limits) {
      if (p.infeasible) break;
      std::int64_t least = 0;
      for (auto u : l.nodes) least += *std::min_element(p.nodes[u].usage.begin(), p.nodes[u].usage.end());
      const std::int64_t slack = l.limit - least;
      if (slack < 0) {
        p.infeasible = true;
        break;
      }
      for (auto u : l.nodes) {
        const auto& us = p.nodes[u].usage;
        const std::int64_t lo = *std::min_element(us.begin(), us.end());
        std::vector<char> keep(us.size());
        bool all = true;
        for (std::size_t a = 0; a < us.size(); ++a) all = (keep[a] = us[a] - lo <= slack) && all;
        if (!all) {
          p.keep_labels(u, keep);
          again = true;
          break;  // restart: the sums changed
        }
      }
      if (again) break;
    }
  }
  return !p.infeasible;
}

/// A random graph of `n` nodes, `edges` dense edges (1 in 10 pairs forbidden) and tight usage
/// limits (many labels go by propagation); with `above_least`, every limit at least the sum of
/// its members' least usage.
CostGraph limited_graph(std::mt19937& rng, std::size_t n, std::size_t edges, bool above_least = false) {
  CostGraph g;
  for (std::size_t u = 0; u < n; ++u) {
    std::vector<cost_t> c;
    const std::size_t L = 1 + rng() % 5;
    for (std::size_t a = 0; a < L; ++a) c.push_back(static_cast<cost_t>(rng() % 30));
    g.add_node(std::move(c));
    std::vector<std::int64_t> us;
    for (std::size_t a = 0; a < L; ++a) us.push_back(static_cast<std::int64_t>(rng() % 12));
    g.usage.push_back(std::move(us));
  }
  for (std::size_t k = 0; k < edges; ++k) {
    const auto u = static_cast<std::uint32_t>(rng() % n), v = static_cast<std::uint32_t>(rng() % n);
    if (u == v) continue;
    std::vector<cost_t> m;
    for (std::size_t i = 0; i < g.num_labels(u) * g.num_labels(v); ++i) m.push_back(rng() % 10 == 0 ? forbidden : static_cast<cost_t>(rng() % 20));
    g.add_dense_edge(u, v, std::move(m));
  }
  const std::size_t limits = 1 + rng() % (2 * n);
  for (std::size_t k = 0; k < limits; ++k) {
    UsageLimit l;
    for (std::size_t u = 0; u < n; ++u)
      if (rng() % 3 == 0) l.nodes.push_back(static_cast<std::uint32_t>(u));
    l.limit = static_cast<std::int64_t>(2 * l.nodes.size() + rng() % (5 * l.nodes.size() + 4));
    if (above_least) {
      l.limit = static_cast<std::int64_t>(rng() % (2 * l.nodes.size() + 3));
      for (auto u : l.nodes) l.limit += *std::min_element(g.usage[u].begin(), g.usage[u].end());
    }
    g.limits.push_back(std::move(l));
  }
  return g;
}

/// Per node, its remaining input labels (sorted).
std::vector<std::vector<std::uint32_t>> domains(const Problem& p) {
  std::vector<std::vector<std::uint32_t>> d;
  for (const auto& n : p.nodes) {
    std::vector<std::uint32_t> l = n.label;
    std::sort(l.begin(), l.end());
    d.push_back(std::move(l));
  }
  return d;
}

}  // namespace

TEST_CASE("propagate: the limit worklist reaches the domains of the restarting sweeps", "[global][solve]") {
  std::mt19937 rng(20261202);
  std::size_t removed_somewhere = 0, infeasible = 0;
  const std::size_t trials = test::scaled(400);
  for (std::size_t trial = 0; trial < trials; ++trial) {
    const CostGraph g = limited_graph(rng, 3 + rng() % 10, 3 + rng() % 20);
    const fine_t scale = detail::choose_scale(g);
    std::vector<char> enforced(g.limits.size(), static_cast<char>(trial % 2));
    Problem a(g, scale, &enforced), b(g, scale, &enforced);
    detail::ReduceStats stats;
    const bool ok_new = detail::propagate(a, stats);
    const bool ok_old = propagate_by_sweeps(b);
    INFO("trial " << trial);
    REQUIRE(ok_new == ok_old);
    if (!ok_new) {
      ++infeasible;
      continue;
    }
    CHECK(domains(a) == domains(b));
    removed_somewhere += stats.labels_removed > 0 ? 1 : 0;
  }
  // the instances exercise both ways out and real removals
  CHECK(removed_somewhere > trials / 10);
  CHECK(infeasible > 0);
  CHECK(infeasible < trials);
}

TEST_CASE("propagate: a passed deadline stops it with every step it took exact", "[global][solve]") {
  std::mt19937 rng(7);
  std::size_t stopped_early = 0;
  for (int trial = 0; trial < 20; ++trial) {
    const CostGraph g = limited_graph(rng, 400, 100, /*above_least=*/true);
    const fine_t scale = detail::choose_scale(g);
    Problem p(g, scale), q(g, scale);
    detail::ReduceStats partial, full;
    const bool ok_partial = detail::propagate(p, partial, Deadline::after(0.0, "test"));
    const std::size_t removed_before_stop = partial.labels_removed;
    // a full run from where it stopped ends where a full run from the start does
    const bool ok_full = detail::propagate(q, full);
    const bool ok_after = ok_partial && detail::propagate(p, partial);
    INFO("trial " << trial);
    REQUIRE(ok_after == ok_full);
    if (ok_full) CHECK(domains(p) == domains(q));
    stopped_early += ok_partial && ok_full && removed_before_stop < full.labels_removed ? 1 : 0;
  }
  CHECK(stopped_early > 0);
}

TEST_CASE("propagate: edges sharing a matrix that lose the same labels share the compacted matrix; every class left is in use", "[global][solve]") {
  // nodes 0-1, 2-3 and 4-5 joined by one shared 4 x 4 matrix (as repeated layers are); node 1 of
  // each pair but the last loses labels 2 and 3 through a forbidden unary cost, so arc
  // consistency removes the rows that only they supported
  const std::vector<cost_t> m{0,         5,         forbidden, forbidden,  //
                              5,         0,         forbidden, forbidden,  //
                              forbidden, forbidden, 0,         5,          //
                              forbidden, forbidden, 5,         0};
  const auto shared = std::make_shared<const std::vector<cost_t>>(m);
  CostGraph g;
  for (int pair = 0; pair < 3; ++pair) {
    const std::uint32_t a = g.add_node({0, 1, 2, 3});
    const std::uint32_t b = g.add_node(pair < 2 ? std::vector<cost_t>{0, 1, forbidden, forbidden} : std::vector<cost_t>{0, 1, 2, 3});
    CostEdge e;
    e.u = a;
    e.v = b;
    e.rows = e.cols = 4;
    e.row_class = e.col_class = {0, 1, 2, 3};
    e.shared = shared;
    g.add_edge(std::move(e));
  }
  Problem p(g, detail::choose_scale(g));
  detail::ReduceStats stats;
  REQUIRE(detail::propagate(p, stats));
  CHECK(stats.labels_removed == 2 * 2);  // labels 2 and 3 of nodes 0 and 2
  for (std::uint32_t u : {0u, 2u}) CHECK(p.nodes[u].label == std::vector<std::uint32_t>{0, 1});
  CHECK(p.nodes[4].label == std::vector<std::uint32_t>{0, 1, 2, 3});
  // the two shrunk edges hold one 2 x 2 matrix between them; the third keeps its 4 x 4
  CHECK(p.edges[0].d.data() == p.edges[1].d.data());
  CHECK(p.edges[0].rows == 2);
  CHECK(p.edges[0].cols == 2);
  CHECK(p.edges[2].rows == 4);
  for (const auto& e : p.edges) {
    CHECK_FALSE(e.untidy);
    std::vector<char> row_used(e.rows, 0), col_used(e.cols, 0);
    for (auto r : e.rc) row_used.at(r) = 1;
    for (auto c : e.cc) col_used.at(c) = 1;
    CHECK(std::count(row_used.begin(), row_used.end(), 0) == 0);
    CHECK(std::count(col_used.begin(), col_used.end(), 0) == 0);
    // every label pair still reads its input cost
    for (std::size_t a = 0; a < e.rc.size(); ++a)
      for (std::size_t b = 0; b < e.cc.size(); ++b) {
        const cost_t in = m[p.nodes[e.u].label[a] * 4 + p.nodes[e.v].label[b]];
        CHECK(e.at(a, b) == (is_forbidden(in) ? inf : in * p.scale));
      }
  }
}

TEST_CASE("validate: a usage limit listing a node twice is refused, naming the limit and the node", "[global][solve]") {
  // solve() and feasible() read such a limit differently: "optimal" at cost 19 while {1, 0, 0}
  // costs 7 and keeps the limit under either reading
  CostGraph g;
  g.add_node({19, 7, 25, 0});
  g.add_node({0, 18, 0});
  g.add_node({0, 0});
  g.usage = {{0, 13, 0, 19}, {8, 0, 13}, {16, 17}};
  g.limits.push_back({{0, 1, 2}, 59});
  g.limits.push_back({{0, 0, 1, 2}, 59});
  CHECK_THROWS_WITH(g.validate(), Catch::Contains("usage limit 1 lists node 0 twice"));
  CHECK_THROWS_WITH(solve::solve(g, SolveOptions{}), Catch::Contains("usage limit 1 lists node 0 twice"));
  g.limits.pop_back();
  const SolveResult r = solve::solve(g, SolveOptions{});
  cost_t least = forbidden;  // by enumeration
  for (std::uint32_t a = 0; a < 4; ++a)
    for (std::uint32_t b = 0; b < 3; ++b)
      for (std::uint32_t c = 0; c < 2; ++c)
        if (const std::vector<std::uint32_t> x{a, b, c}; g.feasible(x)) least = std::min(least, g.evaluate(x));
  REQUIRE(r.optimal);
  CHECK(r.cost == least);
  CHECK(least == 0);  // {3, 0, 0}: usage 19 + 8 + 16 = 43
}

namespace {

/// `n` nodes of `labels` labels, each node after the first joined to `fan_in` earlier ones by
/// dense edges; every cost uniform in [0, `range`).
CostGraph random_graph(unsigned seed, int n, int labels, int fan_in, unsigned range) {
  std::mt19937 rng(seed);
  CostGraph g;
  const auto costs = [&](int count) {
    std::vector<cost_t> c(static_cast<std::size_t>(count));
    for (auto& x : c) x = static_cast<cost_t>(rng() % range);
    return c;
  };
  for (int u = 0; u < n; ++u) g.add_node(costs(labels));
  for (int u = 1; u < n; ++u)
    for (int k = 0; k < fan_in; ++k) {
      const auto from = static_cast<std::uint32_t>(rng() % static_cast<unsigned>(u));
      g.add_dense_edge(from, static_cast<std::uint32_t>(u), costs(labels * labels));
    }
  return g;
}

}  // namespace

TEST_CASE("status: a solve ended by a limit of the options is \"stopped\", by the deadline \"time_limit\"", "[global][solve]") {
  const CostGraph g = random_graph(7, 60, 8, 4, 100);
  SolveOptions o;
  o.time_limit_s = 300;
  o.elimination_work = 0;
  o.search = false;  // the dual alone does not prove this graph
  const SolveResult stopped = solve::solve(g, o);
  REQUIRE(!stopped.optimal);
  CHECK(stopped.status == "stopped");
  CHECK(stopped.seconds < 60);
  o.search = true;
  o.node_limit = 1;
  CHECK(solve::solve(g, o).status == "stopped");
  o.node_limit = static_cast<std::size_t>(-1);
  o.time_limit_s = 0;
  const SolveResult timed = solve::solve(g, o);
  CHECK(timed.status == "time_limit");
  // nothing found in the time and no usage limit: the least unary label of every node, not none
  REQUIRE(timed.feasible);
  for (std::size_t u = 0; u < g.num_nodes(); ++u) CHECK(g.unary[u][timed.labels[u]] == *std::min_element(g.unary[u].begin(), g.unary[u].end()));
  CHECK(timed.cost == g.evaluate(timed.labels));
  CHECK(timed.lower_bound <= timed.cost);
}

TEST_CASE("dual: a pass polls its deadline; a pass it interrupts gives no bound, one it does not the same as iterate", "[global][solve]") {
  const CostGraph g = random_graph(11, 300, 5, 1, 50);
  Problem timed(g, 16), plain(g, 16);
  detail::Srmp a(timed), b(plain);
  std::vector<std::uint32_t> la, ba, lb, bb;
  const auto passed = std::chrono::steady_clock::now() - std::chrono::seconds(1);
  CHECK(!a.iterate_until(la, &ba, passed).has_value());  // polled within the pass (300 nodes)
  Problem fresh(g, 16);
  detail::Srmp c(fresh);
  for (int pass = 0; pass < 3; ++pass) {
    const std::optional<fine_t> until_max = c.iterate_until(la, &ba, std::chrono::steady_clock::time_point::max());
    const fine_t full = b.iterate(lb, &bb);
    REQUIRE(until_max.has_value());
    CHECK(*until_max == full);
    CHECK(la == lb);
    CHECK(ba == bb);
  }
}
