// Whole-graph planning, library side: the exact solver against brute force on random cost graphs
// (forbidden pairs, factored edges, usage limits, every part switched on and off), an independent
// certificate check of every answer, the time-limited answer's honesty, candidates against
// StrategyEnumerator's tables, and the IOPDDL reader / writer.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <regex>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "../sanitizer_scale.hpp"
#include "ctshard/registry.hpp"
#include "ctshard/solve/candidates.hpp"
#include "ctshard/solve/iopddl.hpp"
#include "ctshard/solve/reductions.hpp"
#include "ctshard/solve/solver.hpp"
#include "op_call_builders.hpp"

using namespace ctshard;
using namespace ctshard::solve;

namespace {

/// A random cost graph: 2..max_nodes nodes of 1..max_labels labels, random factored edges (some
/// parallel), ~10% forbidden unary labels and ~15% forbidden pairs, optional usage limits.
CostGraph random_graph(std::mt19937& rng, std::size_t max_nodes, std::size_t max_labels, std::size_t edge_factor, bool limits) {
  CostGraph g;
  const std::size_t n = 2 + rng() % (max_nodes - 1);
  for (std::size_t u = 0; u < n; ++u) {
    const std::size_t L = 1 + rng() % max_labels;
    std::vector<cost_t> c;
    for (std::size_t a = 0; a < L; ++a) c.push_back(rng() % 10 == 0 ? forbidden : static_cast<cost_t>(rng() % 50));
    g.add_node(std::move(c));
  }
  const std::size_t m = rng() % (edge_factor * n + 1);
  for (std::size_t k = 0; k < m; ++k) {
    const auto u = static_cast<std::uint32_t>(rng() % n), v = static_cast<std::uint32_t>(rng() % n);
    if (u == v) continue;
    CostEdge e;
    e.u = u;
    e.v = v;
    e.rows = 1 + static_cast<std::uint32_t>(rng() % 4);
    e.cols = 1 + static_cast<std::uint32_t>(rng() % 4);
    for (std::size_t a = 0; a < g.num_labels(u); ++a) e.row_class.push_back(static_cast<std::uint32_t>(rng() % e.rows));
    for (std::size_t b = 0; b < g.num_labels(v); ++b) e.col_class.push_back(static_cast<std::uint32_t>(rng() % e.cols));
    for (std::uint32_t i = 0; i < e.rows * e.cols; ++i) e.matrix.push_back(rng() % 7 == 0 ? forbidden : static_cast<cost_t>(rng() % 40));
    g.add_edge(std::move(e));
  }
  g.constant = static_cast<cost_t>(rng() % 7);
  if (limits) {
    for (std::size_t u = 0; u < n; ++u) {
      std::vector<std::int64_t> us;
      for (std::size_t a = 0; a < g.num_labels(u); ++a) us.push_back(static_cast<std::int64_t>(rng() % 10));
      g.usage.push_back(std::move(us));
    }
    const std::size_t nl = 1 + rng() % 3;
    for (std::size_t k = 0; k < nl; ++k) {
      UsageLimit l;
      for (std::size_t u = 0; u < n; ++u)
        if (rng() % 2) l.nodes.push_back(static_cast<std::uint32_t>(u));
      l.limit = static_cast<std::int64_t>(rng() % (4 * l.nodes.size() + 3));
      g.limits.push_back(std::move(l));
    }
  }
  return g;
}

/// Calls f(x, cost) for every full labelling x of g (cost: CostGraph::evaluate).
template <class F>
void for_each_labelling(const CostGraph& g, F&& f) {
  std::vector<std::uint32_t> x(g.num_nodes(), 0);
  while (true) {
    f(x, g.evaluate(x));
    std::size_t i = 0;
    while (i < x.size() && ++x[i] == g.num_labels(i)) x[i++] = 0;
    if (i == x.size()) break;
  }
}

/// The optimum by enumeration (forbidden when nothing is feasible).
cost_t brute_force(const CostGraph& g) {
  cost_t best = forbidden;
  for_each_labelling(g, [&](const std::vector<std::uint32_t>& x, cost_t c) {
    if (!is_forbidden(c) && c < best && g.feasible(x)) best = c;
  });
  return best;
}

/// Runs `passes` forward + backward passes of the dual on p, the push weights for the first
/// `push` of them; returns the last pass's bound (the state is the one a backward pass leaves).
solve::detail::fine_t dual_passes(solve::detail::Problem& p, std::size_t passes, std::size_t push) {
  solve::detail::Srmp dual(p);
  std::vector<std::uint32_t> labels, backward;
  solve::detail::fine_t lb = -solve::detail::inf;
  for (std::size_t pass = 0; pass < passes; ++pass) {
    dual.set_weights(pass < push ? solve::detail::DualWeights::push : solve::detail::DualWeights::trws);
    lb = dual.iterate(labels, &backward);
  }
  return lb;
}

/// A random graph for the dual's tests with its optimum and its fixed-point scale.
struct DualCase {
  CostGraph g;
  cost_t best = 0;
  solve::detail::fine_t scale = 1;
};

/// Seed `seed`'s random graph for the dual's tests (up to 9 nodes of up to 5 labels, no limits),
/// or nothing when it is infeasible.
std::optional<DualCase> feasible_graph(std::uint32_t seed) {
  std::mt19937 rng(seed);
  DualCase c{random_graph(rng, 9, 5, 3, /*limits=*/false)};
  c.best = brute_force(c.g);
  if (is_forbidden(c.best)) return std::nullopt;
  c.scale = solve::detail::choose_scale(c.g);
  return c;
}

/// The input's cost of the pair (label `a` of node u, label `b` of node v): every edge of `g`
/// between the two summed (either orientation); forbidden when one entry is.
cost_t input_pair_cost(const CostGraph& g, std::uint32_t u, std::uint32_t v, std::uint32_t a, std::uint32_t b) {
  cost_t sum = 0;
  for (const auto& f : g.edges) {
    if (f.u == u && f.v == v) sum = add_costs(sum, f.at(a, b));
    if (f.u == v && f.v == u) sum = add_costs(sum, f.at(b, a));
  }
  return sum;
}

/// The objective recomputed without CostGraph::evaluate: dense loops over every edge's label pairs.
cost_t independent_cost(const CostGraph& g, const std::vector<std::uint32_t>& x) {
  cost_t total = g.constant;
  bool forbidden_seen = false;
  for (std::size_t u = 0; u < g.num_nodes(); ++u) {
    forbidden_seen = forbidden_seen || is_forbidden(g.unary[u][x[u]]);
    total += is_forbidden(g.unary[u][x[u]]) ? 0 : g.unary[u][x[u]];
  }
  for (const auto& e : g.edges) {
    const auto& m = e.costs();
    for (std::size_t a = 0; a < g.num_labels(e.u); ++a)
      for (std::size_t b = 0; b < g.num_labels(e.v); ++b) {
        if (a != x[e.u] || b != x[e.v]) continue;
        const cost_t c = m[std::size_t{e.row_class[a]} * e.cols + e.col_class[b]];
        forbidden_seen = forbidden_seen || is_forbidden(c);
        total += is_forbidden(c) ? 0 : c;
      }
  }
  return forbidden_seen ? forbidden : total;
}

/// Certificate check of an answer: its labelling's cost recomputed independently, its limits,
/// the bound at most the cost, and for a claimed optimum, no single-node change improves it
/// (a necessary condition; brute force or the external solvers check sufficiency).
void check_certificate(const CostGraph& g, const SolveResult& r) {
  if (!r.feasible) {
    CHECK(r.labels.empty());
    return;
  }
  REQUIRE(r.labels.size() == g.num_nodes());
  CHECK(independent_cost(g, r.labels) == r.cost);
  CHECK(g.feasible(r.labels));
  CHECK(r.lower_bound <= r.cost);
  CHECK(r.optimal == (r.lower_bound == r.cost));
  CHECK(r.gap() >= 0.0);
  if (!r.optimal) return;
  std::vector<std::uint32_t> x = r.labels;
  for (std::size_t u = 0; u < g.num_nodes(); ++u) {
    const std::uint32_t keep = x[u];
    for (std::uint32_t a = 0; a < g.num_labels(u); ++a) {
      x[u] = a;
      const cost_t c = g.evaluate(x);
      if (!is_forbidden(c) && g.feasible(x)) CHECK(c >= r.cost);
    }
    x[u] = keep;
  }
}

}  // namespace

TEST_CASE("solve: the optimum of random cost graphs equals brute force, every part on and off", "[global][solve]") {
  std::size_t with_core = 0, searched = 0, eliminated = 0;
  for (std::uint32_t seed = 0; seed < test::scaled(4000); ++seed) {
    std::mt19937 rng(seed);
    const bool limits = seed % 2 == 1;
    const bool dense = seed % 5 == 4;  // bigger, denser graphs exercise the dual and the search
    const CostGraph g = dense ? random_graph(rng, 9, 5, 3, limits) : random_graph(rng, 8, 4, 2, limits);
    const cost_t best = brute_force(g);
    SolveOptions o;
    o.time_limit_s = 5;
    // the variant is the seed's position in a cycle of 16 (not its low bits: dense = seed % 5)
    const unsigned variant = (seed / 5) % 16;
    o.dominance = (variant & 1) != 0;
    o.reductions = (variant & 2) != 0;
    o.dual = (variant & 4) != 0;
    // exact variable elimination finishes every small core on its own; without it the branch
    // and bound solves what the reductions and the dual leave
    if ((variant & 8) == 0) o.elimination_work = 0;
    const SolveResult r = solve::solve(g, o);
    INFO("seed " << seed << " variant " << variant << " brute force " << best << " solver " << r.cost << " bound " << r.lower_bound);
    if (is_forbidden(best)) {
      CHECK_FALSE(r.feasible);
      CHECK(r.status == "infeasible");
      continue;
    }
    REQUIRE(r.feasible);
    CHECK(r.cost == best);
    CHECK(r.lower_bound == best);
    CHECK(r.status == "optimal");
    check_certificate(g, r);
    with_core += r.stats.core_nodes > 0 ? 1 : 0;
    searched += r.stats.search_nodes > 0 ? 1 : 0;
    eliminated += r.stats.elimination_work > 0 ? 1 : 0;
  }
  // the dual, reduced-cost fixing, the elimination and the search all had work to do on some instances
  CHECK(with_core > test::scaled(50));
  CHECK(searched > test::scaled(50));
  CHECK(eliminated > test::scaled(50));
}

TEST_CASE("solve: the dual's bound holds pass after pass under TRW-S and push weights", "[global][solve]") {
  // any weights give a reparametrization: every pass's bound, and the bound recomputed from the
  // messages, stay at or below the optimum, whichever weights the passes used, in any mix
  namespace sd = solve::detail;
  std::size_t tight = 0;
  for (std::uint32_t seed = 0; seed < test::scaled(600); ++seed) {
    const auto dc = feasible_graph(seed);
    if (!dc) continue;
    const CostGraph& g = dc->g;
    const cost_t best = dc->best;
    const sd::fine_t scale = dc->scale;
    sd::Problem p(g, scale);
    sd::Srmp dual(p);
    std::vector<std::uint32_t> labels, backward;
    sd::fine_t last = -sd::inf;
    for (std::size_t pass = 0; pass < 12; ++pass) {
      // seeds alternate which weights come first; the last passes mix them
      const bool push = pass < 6 ? seed % 2 == 0 : pass % 2 == 0;
      dual.set_weights(push ? sd::DualWeights::push : sd::DualWeights::trws);
      last = dual.iterate(labels, &backward);
      INFO("seed " << seed << " pass " << pass << " optimum " << best << " bound " << last);
      CHECK(sd::ceil_div(last, scale) <= best);
      CHECK(sd::ceil_div(dual.bound(), scale) <= best);
    }
    // each edge's term of the bound is its least reparametrized pair, forbidden pairs left out
    for (const auto& e : p.edges) {
      if (!e.alive) continue;
      sd::fine_t least = sd::inf;
      for (std::size_t a = 0; a < e.rc.size(); ++a)
        for (std::size_t b = 0; b < e.cc.size(); ++b)
          if (e.at(a, b) < sd::inf) least = std::min(least, e.at(a, b) - e.mu[a] - e.mv[b]);
      CHECK(sd::Srmp::edge_min(e) == least);
    }
    tight += sd::ceil_div(last, scale) == best ? 1 : 0;
  }
  CHECK(tight > test::scaled(100));  // and the bound is often exact on these small graphs
}

TEST_CASE("solve: the min-plus kernels give the plain loops' values at every vector width", "[global][solve]") {
  // the dispatched kernels (AVX-512, AVX2 or the baseline, whichever the processor runs) against
  // the loops they are compiled from, on rows of every length up to 40 (vector bodies and tails),
  // unaligned starts, negative and forbidden entries
  namespace sd = solve::detail;
  std::mt19937 rng(7);
  std::uniform_int_distribution<sd::fine_t> cost(-1'000'000, 1'000'000);
  for (std::size_t n = 0; n <= 40; ++n)
    for (std::size_t offset = 0; offset < 3; ++offset) {
      std::vector<sd::fine_t> row(n + offset), other(n + offset), out(n + offset), acc(n + offset);
      for (std::size_t i = 0; i < row.size(); ++i) {
        row[i] = rng() % 7 == 0 ? sd::inf : cost(rng);
        other[i] = rng() % 5 == 0 ? sd::inf : cost(rng);
        out[i] = rng() % 6 == 0 ? sd::inf : cost(rng);
        acc[i] = cost(rng);
      }
      const sd::fine_t x = cost(rng);
      std::vector<sd::fine_t> want_out = out, got_out = out, want_acc = acc, got_acc = acc;
      sd::min_plus_into_loop(want_out.data() + offset, row.data() + offset, x, n);
      sd::min_plus_into(got_out.data() + offset, row.data() + offset, x, n);
      CHECK(got_out == want_out);
      CHECK(sd::min_plus_reduce(row.data() + offset, other.data() + offset, n, sd::inf) ==
            sd::min_plus_reduce_loop(row.data() + offset, other.data() + offset, n, sd::inf));
      sd::add_capped_loop(want_acc.data() + offset, other.data() + offset, n);
      sd::add_capped(got_acc.data() + offset, other.data() + offset, n);
      CHECK(got_acc == want_acc);
    }
}

TEST_CASE("solve: reduced-cost fixing from stars keeps every label within the gap of its true best", "[global][solve]") {
  // after a backward pass, lb + StarBounds::excess(u)[a] is at most the cost of the best labelling
  // with x_u = a (so fixing removes no label a labelling below the incumbent uses), and at least
  // the unary reduced cost lb + theta'_u(a) - min theta'_u (what fixing used before)
  namespace sd = solve::detail;
  std::size_t labels = 0, stronger = 0, exact = 0;
  for (std::uint32_t seed = 0; seed < test::scaled(400); ++seed) {
    std::mt19937 rng(seed);
    const CostGraph g = random_graph(rng, 8, 5, 3, /*limits=*/false);
    // the best cost with each node at each label, by enumeration
    std::vector<std::vector<cost_t>> best_with(g.num_nodes());
    for (std::size_t u = 0; u < g.num_nodes(); ++u) best_with[u].assign(g.num_labels(u), forbidden);
    for_each_labelling(g, [&](const std::vector<std::uint32_t>& x, cost_t c) {
      for (std::size_t u = 0; u < x.size(); ++u) best_with[u][x[u]] = std::min(best_with[u][x[u]], c);
    });
    if (is_forbidden(*std::min_element(best_with[0].begin(), best_with[0].end()))) continue;  // infeasible
    const sd::fine_t scale = sd::choose_scale(g);
    sd::Problem p(g, scale);
    REQUIRE_FALSE(p.infeasible);
    const sd::fine_t lb = dual_passes(p, 1 + seed % 6, seed % 2 == 0 ? 2 : 0);
    sd::StarBounds stars(p);
    std::vector<sd::fine_t> excess;
    for (std::uint32_t u = 0; u < p.nodes.size(); ++u) {
      if (!p.nodes[u].alive) continue;
      stars.excess(u, excess);
      const auto& rep = stars.reparametrized(u);
      const sd::fine_t rep_min = *std::min_element(rep.begin(), rep.end());
      REQUIRE(excess.size() == p.num_labels(u));
      for (std::size_t a = 0; a < excess.size(); ++a) {
        const cost_t truth = best_with[u][p.nodes[u].label[a]];
        INFO("seed " << seed << " node " << u << " label " << p.nodes[u].label[a] << " best " << truth << " lb " << lb << " excess " << excess[a]);
        ++labels;
        if (excess[a] >= sd::inf) {
          CHECK(is_forbidden(truth));
          continue;
        }
        if (!is_forbidden(truth)) CHECK(lb + excess[a] <= truth * scale);
        CHECK(excess[a] >= rep[a] - rep_min);
        stronger += excess[a] > rep[a] - rep_min ? 1 : 0;
        exact += !is_forbidden(truth) && lb + excess[a] > (truth - 1) * scale ? 1 : 0;
      }
    }
  }
  CHECK(stronger > labels / 10);  // the star often sees more than the unary reduced cost
  CHECK(exact > labels / 4);      // and often the exact best cost with the label
}

TEST_CASE("solve: fixing from stars keeps every label of every labelling within the target", "[global][solve]") {
  // fix_by_stars after a few passes, with the target at the optimum or above it: every labelling
  // costing at most the target keeps all its labels (all nodes are judged before any removal;
  // judging a node after its neighbour lost labels read the neighbour's old label indices)
  namespace sd = solve::detail;
  std::size_t fixed_some = 0, emptied = 0;
  for (std::uint32_t seed = 0; seed < test::scaled(1500); ++seed) {
    const auto dc = feasible_graph(seed);
    if (!dc) continue;
    sd::Problem p(dc->g, dc->scale);
    const CostGraph& g = dc->g;
    const cost_t best = dc->best;
    const sd::fine_t scale = dc->scale;
    const sd::fine_t lb = dual_passes(p, 1 + seed % 4, 0);
    // below the optimum (nothing may survive... or anything may: only the labellings within count)
    const sd::fine_t target = (best + static_cast<cost_t>(seed % 4) - 1) * scale;
    const std::size_t removed = sd::fix_by_stars(p, lb, target);
    fixed_some += removed > 0 ? 1 : 0;
    emptied += p.infeasible ? 1 : 0;
    // the edges are tidied once every node lost its labels: each pair keeps its input cost
    // (parallel edges summed) and every class left is in use
    for (const auto& e : p.edges) {
      if (!e.alive || p.infeasible) continue;
      CHECK_FALSE(e.untidy);
      for (std::size_t a = 0; a < e.rc.size(); ++a)
        for (std::size_t b = 0; b < e.cc.size(); ++b) {
          const cost_t want = input_pair_cost(g, e.u, e.v, p.nodes[e.u].label[a], p.nodes[e.v].label[b]);
          CHECK(e.at(a, b) == (is_forbidden(want) ? sd::inf : want * scale));
        }
      std::vector<char> rows(e.rows, 0), cols(e.cols, 0);
      for (auto r : e.rc) rows[r] = 1;
      for (auto c : e.cc) cols[c] = 1;
      if (e.compact) {
        CHECK(std::count(rows.begin(), rows.end(), 0) == 0);
        CHECK(std::count(cols.begin(), cols.end(), 0) == 0);
      }
    }
    std::vector<std::vector<char>> kept(g.num_nodes());
    for (std::uint32_t u = 0; u < g.num_nodes(); ++u) {
      kept[u].assign(g.num_labels(u), 0);
      for (auto l : p.nodes[u].label) kept[u][l] = 1;
    }
    for_each_labelling(g, [&](const std::vector<std::uint32_t>& x, cost_t c) {
      if (is_forbidden(c) || c * scale > target) return;
      INFO("seed " << seed << " optimum " << best << " labelling cost " << c << " target " << target / scale);
      REQUIRE_FALSE(p.infeasible);
      for (std::uint32_t u = 0; u < g.num_nodes(); ++u) CHECK(kept[u][x[u]] == 1);
    });
  }
  CHECK(fixed_some > test::scaled(300));  // fixing had work to do
  CHECK(emptied > test::scaled(50));      // and a target below the optimum often leaves nothing
}

TEST_CASE("solve: reductions see only the classes in use and forbidden entries where they are", "[global][solve]") {
  namespace sd = solve::detail;
  SECTION("a row [0, 10] dominates [0, forbidden] at equal unary cost, though its largest entry is larger") {
    CostGraph g;
    g.add_node({0, 0});
    g.add_node({0, 0});
    g.add_dense_edge(0, 1, {0, 10, 0, forbidden});
    sd::Problem p(g, 1);
    CHECK(sd::remove_dominated(p, 0, sd::ReduceOptions{}) == 1);
    REQUIRE(p.num_labels(0) == 1);
    CHECK(p.nodes[0].label[0] == 0);
  }
  SECTION("nodes of repeated blocks take the dominance result of an equal context; another matrix or unary cost is looked at anew") {
    // per block: a 3-label node and a 2-label neighbour; label 1's row [0, forbidden] is
    // dominated by label 0's [0, 10] when both cost 0 (blocks 0, 1 and 2); block 3 costs label 0
    // 20, so label 2 ([1, 1]) dominates it instead and label 1 stays
    const auto matrix = std::make_shared<const std::vector<cost_t>>(std::vector<cost_t>{0, 10, 0, forbidden, 1, 1});
    CostGraph g;
    const auto block = [&](std::vector<cost_t> theta, bool shared) {
      const std::uint32_t u = g.add_node(std::move(theta));
      const std::uint32_t v = g.add_node({0, 0});
      CostEdge e;
      e.u = u;
      e.v = v;
      e.rows = 3;
      e.cols = 2;
      e.row_class = {0, 1, 2};
      e.col_class = {0, 1};
      if (shared) e.shared = matrix;
      else e.matrix = *matrix;
      g.add_edge(std::move(e));
      return u;
    };
    const std::uint32_t first = block({0, 0, 5}, true), same = block({0, 0, 5}, true);
    const std::uint32_t copied = block({0, 0, 5}, false), dearer = block({20, 0, 5}, true);
    sd::Problem p(g, 1);
    sd::DominanceMemo memo;
    // one look at u: one label removed, the memo's hits so far, the labels u keeps
    const auto look = [&](std::uint32_t u, std::size_t hits, std::vector<std::uint32_t> kept) {
      INFO("node " << u);
      CHECK(sd::remove_dominated(p, u, sd::ReduceOptions{}, &memo) == 1);
      CHECK(memo.hits() == hits);
      CHECK(p.nodes[u].label == kept);
    };
    look(first, 0, {0, 2});
    look(same, 1, {0, 2});
    look(copied, 1, {0, 2});  // equal costs in another matrix object: computed again, the same result
    look(dearer, 1, {1, 2});
  }
  SECTION("an edge separable on its classes in use folds into the unary costs, whatever an unused class holds") {
    CostGraph g;
    g.add_node({0, 0});
    g.add_node({0, 0});
    CostEdge e;
    e.u = 0;
    e.v = 1;
    e.rows = 3;  // row class 2 is used by no label
    e.cols = 2;
    e.row_class = {0, 1};
    e.col_class = {0, 1};
    e.matrix = {1, 2, 3, 4, forbidden, 0};
    g.add_edge(std::move(e));
    sd::Problem p(g, 1);
    sd::ReduceOptions o;
    o.eliminate = false;
    o.dominance = false;
    sd::ReduceStats st;
    REQUIRE(sd::reduce(p, o, st));
    CHECK(st.separable_edges == 1);
    CHECK_FALSE(p.edges[0].alive);
    CHECK(p.nodes[0].theta == std::vector<sd::fine_t>{1, 3});  // d(a, 0)
    CHECK(p.nodes[1].theta == std::vector<sd::fine_t>{0, 1});  // d(0, b) - d(0, 0)
  }
}

TEST_CASE("solve: arc consistency holds after the label reductions, re-checking only the edges that changed", "[global][solve]") {
  namespace sd = solve::detail;
  std::mt19937 rng(4242);
  std::size_t checked = 0, removed = 0;
  for (int it = 0; it < 3000; ++it) {
    const CostGraph g = random_graph(rng, 9, 5, 3, /*limits=*/false);
    sd::Problem p(g, 1);
    sd::ReduceOptions o;
    o.eliminate = false;  // eliminations build new edges after the last propagation
    o.dominance = it % 2 == 0;
    sd::ReduceStats st;
    if (!sd::reduce(p, o, st)) continue;
    // labels removed from outside, as reduced-cost fixing does, then the reductions again
    for (std::uint32_t u = 0; u < p.nodes.size(); ++u) {
      if (!p.nodes[u].alive || p.num_labels(u) < 2 || rng() % 2) continue;
      std::vector<char> keep(p.num_labels(u), 1);
      keep[rng() % keep.size()] = 0;
      removed += p.keep_labels(u, keep);
    }
    if (!sd::reduce(p, o, st)) continue;
    removed += st.labels_removed;
    for (const auto& e : p.edges) {
      if (!e.alive) continue;
      ++checked;
      const auto supported = [&](std::size_t a, bool row) {
        const std::size_t other = row ? e.cc.size() : e.rc.size();
        for (std::size_t b = 0; b < other; ++b)
          if ((row ? e.at(a, b) : e.at(b, a)) < sd::inf) return true;
        return false;
      };
      for (std::size_t a = 0; a < e.rc.size(); ++a) CHECK(supported(a, true));
      for (std::size_t b = 0; b < e.cc.size(); ++b) CHECK(supported(b, false));
      CHECK_FALSE(e.arc_pending);
    }
  }
  CHECK(checked > 500);   // live edges left to check (most fold away)
  CHECK(removed > 1000);  // labels went, and supports with them
}

TEST_CASE("solve: removing labels keeps every remaining pair's cost and leaves no unused class", "[global][solve]") {
  // keep_labels compacts an input edge the first time its labels shrink and afterwards only drops
  // the classes no label uses (drop_unused_classes): the costs of the remaining label pairs are
  // the input's (parallel edges summed), and every class of a compacted edge stays in use
  namespace sd = solve::detail;
  std::mt19937 rng(777);
  std::size_t pairs = 0, compacted = 0;
  for (std::size_t it = 0; it < test::scaled(1500); ++it) {
    const CostGraph g = random_graph(rng, 8, 6, 3, /*limits=*/false);
    sd::Problem p(g, 1);
    if (p.infeasible) continue;
    for (int round = 0; round < 3; ++round) {
      for (std::uint32_t u = 0; u < p.nodes.size(); ++u) {
        if (p.num_labels(u) < 2 || rng() % 2) continue;
        std::vector<char> keep(p.num_labels(u), 1);
        keep[rng() % keep.size()] = 0;
        p.keep_labels(u, keep);
      }
      for (const auto& e : p.edges) {
        if (!e.alive) continue;
        for (std::size_t a = 0; a < e.rc.size(); ++a)
          for (std::size_t b = 0; b < e.cc.size(); ++b) {
            const cost_t want = input_pair_cost(g, e.u, e.v, p.nodes[e.u].label[a], p.nodes[e.v].label[b]);
            ++pairs;
            CHECK(e.at(a, b) == (is_forbidden(want) ? sd::inf : want));
          }
        if (!e.compact) continue;
        std::vector<char> rows(e.rows, 0), cols(e.cols, 0);
        for (auto r : e.rc) rows[r] = 1;
        for (auto c : e.cc) cols[c] = 1;
        CHECK(std::count(rows.begin(), rows.end(), 0) == 0);
        CHECK(std::count(cols.begin(), cols.end(), 0) == 0);
        ++compacted;
      }
    }
  }
  CHECK(pairs > test::scaled(10000));
  CHECK(compacted > test::scaled(1000));  // compacted edges were checked
}

TEST_CASE("solve: a degree-2 node is eliminated when its label groups fit the budget, though its labels do not", "[global][solve]") {
  namespace sd = solve::detail;
  // u: 40 labels in 2 x 2 groups of classes on its two edges (10 columns each): estimated work
  // 40 x 10 x 10 = 4000, real work 4 x 100 = 400; a and b sit in a 4-clique (degree 3 and more)
  CostGraph g;
  std::mt19937 rng(7);
  const auto costs = [&](std::size_t n) {
    std::vector<cost_t> c(n);
    for (auto& x : c) x = static_cast<cost_t>(rng() % 20);
    return c;
  };
  for (int k = 0; k < 4; ++k) g.add_node(costs(10));
  g.add_node(costs(40));  // u = 4
  for (std::uint32_t x = 0; x < 4; ++x)
    for (std::uint32_t y = x + 1; y < 4; ++y) g.add_dense_edge(x, y, costs(100));
  for (std::uint32_t w : {0u, 1u}) {
    CostEdge e;
    e.u = 4;
    e.v = w;
    e.rows = 2;
    e.cols = 10;
    for (std::uint32_t a = 0; a < 40; ++a) e.row_class.push_back(w == 0 ? a % 2 : (a / 2) % 2);
    for (std::uint32_t b = 0; b < 10; ++b) e.col_class.push_back(b);
    e.matrix = costs(20);
    g.add_edge(std::move(e));
  }
  sd::Problem p(g, 1);
  sd::ReduceOptions o;
  o.dominance = false;
  o.max_series_work = 1000;
  sd::ReduceStats st;
  REQUIRE(sd::reduce(p, o, st));
  CHECK(st.series == 1);
  CHECK_FALSE(p.nodes[4].alive);
}

TEST_CASE("solve: a degree-2 elimination's new edge is the least over the node's labels, however its groups fold", "[global][solve]") {
  namespace sd = solve::detail;
  // u (node 2, 24 labels) between nodes 0 and 1 (10 labels each); its classes on the two edges
  // decide the product's form: groups sharing few classes on e2 fold over e1's side first, those
  // sharing few on e1 the other way, all distinct run group by group
  struct Shape {
    const char* name;
    std::uint32_t (*c1)(std::uint32_t);
    std::uint32_t (*c2)(std::uint32_t);
  };
  const Shape shapes[] = {
      {"12 groups, 3 classes on e2", [](std::uint32_t a) { return a % 12; }, [](std::uint32_t a) { return a % 3; }},
      {"12 groups, 3 classes on e1", [](std::uint32_t a) { return a % 3; }, [](std::uint32_t a) { return a % 12; }},
      {"24 distinct groups", [](std::uint32_t a) { return a; }, [](std::uint32_t a) { return (a * 7) % 24; }},
  };
  for (const Shape& shape : shapes)
    for (std::uint32_t seed = 0; seed < 20; ++seed) {
      INFO(shape.name << ", seed " << seed);
      std::mt19937 rng(seed);
      const auto cost = [&] { return rng() % 9 == 0 ? forbidden : static_cast<cost_t>(rng() % 50) - 10; };
      CostGraph g;
      for (const std::size_t n : {10u, 10u, 24u}) {
        std::vector<cost_t> c(n);
        for (auto& x : c) x = static_cast<cost_t>(rng() % 30);
        g.add_node(std::move(c));
      }
      for (const std::uint32_t w : {0u, 1u}) {
        CostEdge e;
        e.u = 2;
        e.v = w;
        for (std::uint32_t a = 0; a < 24; ++a) e.row_class.push_back(w == 0 ? shape.c1(a) : shape.c2(a));
        e.rows = *std::max_element(e.row_class.begin(), e.row_class.end()) + 1;
        e.cols = 10;
        for (std::uint32_t b = 0; b < 10; ++b) e.col_class.push_back(b);
        for (std::uint32_t k = 0; k < e.rows * e.cols; ++k) e.matrix.push_back(cost());
        g.add_edge(std::move(e));
      }
      sd::Problem p(g, 1);
      sd::ReduceStats st;
      REQUIRE(sd::eliminate_series(p, 2, sd::ReduceOptions{}, st));
      CHECK_FALSE(p.nodes[2].alive);
      const sd::WEdge& ne = p.edges.back();
      REQUIRE(ne.alive);
      REQUIRE(((ne.u == 0 && ne.v == 1) || (ne.u == 1 && ne.v == 0)));
      for (std::uint32_t x0 = 0; x0 < 10; ++x0)
        for (std::uint32_t x1 = 0; x1 < 10; ++x1) {
          cost_t best = forbidden;
          for (std::uint32_t a = 0; a < 24; ++a) {
            const cost_t l = g.edges[0].at(a, x0), r = g.edges[1].at(a, x1);
            if (!is_forbidden(l) && !is_forbidden(r)) best = std::min(best, g.unary[2][a] + l + r);
          }
          const sd::fine_t got = ne.u == 0 ? ne.at(x0, x1) : ne.at(x1, x0);
          if (is_forbidden(best)) CHECK(got >= sd::inf);
          else CHECK(got == best);
        }
    }
}

TEST_CASE("solve: degree-2 eliminations of repeated blocks share one new matrix; another unary cost makes its own", "[global][solve]") {
  namespace sd = solve::detail;
  // three blocks: a 6-label node between two 4-label nodes; the blocks' edges share two matrices;
  // blocks 0 and 1 have the same unary costs, block 2 other ones
  std::mt19937 rng(7);
  const auto cost = [&] { return rng() % 7 == 0 ? forbidden : static_cast<cost_t>(rng() % 40); };
  std::shared_ptr<const std::vector<cost_t>> m[2];
  for (auto& x : m) {
    std::vector<cost_t> c(24);
    for (auto& y : c) y = cost();
    x = std::make_shared<const std::vector<cost_t>>(std::move(c));
  }
  CostGraph g;
  const std::vector<cost_t> theta{3, 0, 5, 1, 2, 4}, other_theta{0, 9, 5, 1, 2, 4};
  std::uint32_t middle[3] = {};
  for (int b = 0; b < 3; ++b) {
    const std::uint32_t x = g.add_node({0, 1, 2, 3}), y = g.add_node({1, 0, 1, 0});
    middle[b] = g.add_node(b == 2 ? other_theta : theta);
    for (int side = 0; side < 2; ++side) {
      CostEdge e;
      e.u = middle[b];
      e.v = side == 0 ? x : y;
      e.rows = 6;
      e.cols = 4;
      e.row_class = {0, 1, 2, 3, 4, 5};
      e.col_class = {0, 1, 2, 3};
      e.shared = m[side];
      g.add_edge(std::move(e));
    }
  }
  sd::Problem p(g, 1);
  sd::ReduceStats st;
  sd::SeriesMemo memo;
  std::vector<std::size_t> made;  // the new edges' indices
  for (const std::uint32_t u : middle) {
    REQUIRE(sd::eliminate_series(p, u, sd::ReduceOptions{}, st, &memo));
    made.push_back(p.edges.size() - 1);
  }
  CHECK(memo.hits() == 1);
  CHECK(p.edges[made[0]].d.same(p.edges[made[1]].d));
  CHECK_FALSE(p.edges[made[0]].d.same(p.edges[made[2]].d));
  for (int b = 0; b < 3; ++b) {
    INFO("block " << b);
    const sd::WEdge& ne = p.edges[made[static_cast<std::size_t>(b)]];
    REQUIRE(ne.alive);
    for (std::uint32_t x = 0; x < 4; ++x)
      for (std::uint32_t y = 0; y < 4; ++y) {
        cost_t best = forbidden;
        for (std::uint32_t a = 0; a < 6; ++a) {
          const cost_t l = (*m[0])[a * 4 + x], r = (*m[1])[a * 4 + y];
          if (!is_forbidden(l) && !is_forbidden(r)) best = std::min(best, g.unary[middle[b]][a] + l + r);
        }
        const sd::fine_t got = ne.at(x, y);
        if (is_forbidden(best)) CHECK(got >= sd::inf);
        else CHECK(got == best);
      }
  }
}

TEST_CASE("solve: a memo's reference to a matrix does not keep it alive, and matches nothing once it is freed", "[global][solve]") {
  namespace sd = solve::detail;
  auto a = std::make_unique<sd::SharedMatrix>(std::vector<sd::fine_t>{1, 2, 3});
  const sd::SharedMatrix b(std::vector<sd::fine_t>{1, 2, 3});  // equal costs, another object
  const sd::SharedMatrix::Ref ra(*a), ra2(*a), rb(b);
  CHECK(ra.same(ra2));
  CHECK_FALSE(ra.same(rb));
  CHECK(ra.get().same(*a));
  a.reset();  // the last holder goes: the costs are freed
  CHECK(ra.get().size() == 0);
  CHECK_FALSE(ra.same(ra2));
  const sd::SharedMatrix c(std::vector<sd::fine_t>{1, 2, 3});
  CHECK_FALSE(ra.same(sd::SharedMatrix::Ref(c)));
}

TEST_CASE("solve: dominance tried on a sample of a large node's labels first stays exact", "[global][solve]") {
  // chains of three 70-label nodes (the sample runs from 64 labels): with the sample and without,
  // dominance removes labels and the labels left still hold the brute-force optimum
  for (std::uint32_t seed = 0; seed < 6; ++seed) {
    INFO("seed " << seed);
    std::mt19937 rng(seed);
    CostGraph g;
    for (int k = 0; k < 3; ++k) {
      std::vector<cost_t> c(70);
      for (auto& x : c) x = static_cast<cost_t>(rng() % 200);
      g.add_node(std::move(c));
    }
    for (std::uint32_t k = 0; k + 1 < 3; ++k) {
      std::vector<cost_t> m(70 * 70);
      for (auto& x : m) x = rng() % 20 == 0 ? forbidden : static_cast<cost_t>(rng() % 40);
      g.add_dense_edge(k, k + 1, std::move(m));
    }
    const cost_t best = brute_force(g);
    for (const std::size_t sample : {std::size_t{8}, std::size_t{1}}) {
      INFO("dominance_sample " << sample);
      solve::detail::Problem p(g, 1);
      solve::detail::ReduceOptions o;
      o.dominance_sample = sample;
      o.eliminate = false;
      solve::detail::ReduceStats st;
      REQUIRE(solve::detail::reduce(p, o, st));
      CHECK(st.dominated > 0);
      cost_t kept_best = forbidden;
      std::vector<std::uint32_t> x(3);
      for (const auto a : p.nodes[0].label)
        for (const auto b : p.nodes[1].label)
          for (const auto c : p.nodes[2].label) {
            x = {a, b, c};
            kept_best = std::min(kept_best, g.evaluate(x));
          }
      CHECK(kept_best == best);
    }
  }
}

TEST_CASE("solve: variable elimination reports an infeasible core as infeasible, with negative costs too", "[global][solve]") {
  namespace sd = solve::detail;
  // a triangle of 2-label nodes whose edges forbid equal labels: arc consistent, no labelling
  CostGraph g;
  for (int k = 0; k < 3; ++k) g.add_node({-5, -5});
  for (std::uint32_t x = 0; x < 3; ++x) g.add_dense_edge(x, (x + 1) % 3, {forbidden, 0, 0, forbidden});
  sd::Problem p(g, 1);
  sd::VariableElimination ve(p);
  REQUIRE(ve.plan(1000, 1000) != std::numeric_limits<std::size_t>::max());
  std::vector<std::uint32_t> labels;
  CHECK(ve.solve(labels) == sd::inf);
  SolveOptions o;
  o.reductions = false;
  CHECK(solve::solve(g, o).status == "infeasible");
}

TEST_CASE("solve: push passes near the exact-arithmetic limit keep the messages in range", "[global][solve]") {
  // a long graph (a chain plus random back edges, 2 labels) with costs scaled to the 2^56 limit:
  // push passes shift its messages by about half the objective's magnitude each; the solver
  // runs no more of them than keep every message sum clear of the forbidden range, where a pass's
  // bound would fall below the bound recomputed from the same messages
  namespace sd = solve::detail;
  std::mt19937 rng(3);
  CostGraph g;
  const std::uint32_t n = 300;
  for (std::uint32_t u = 0; u < n; ++u) g.add_node({static_cast<cost_t>(rng() % 1000), static_cast<cost_t>(rng() % 1000)});
  for (std::uint32_t u = 1; u < n; ++u)
    for (int k = 0; k < 3; ++k) {
      const std::uint32_t v = k == 0 ? u - 1 : static_cast<std::uint32_t>(rng() % u);
      if (k > 0 && v == u - 1) continue;
      std::vector<cost_t> m(4);
      for (auto& x : m) x = static_cast<cost_t>(rng() % 1000);
      g.add_dense_edge(v, u, std::move(m));
    }
  const auto f = static_cast<cost_t>(std::ldexp(1.0L, 56) / sd::cost_magnitude(g)) - 1;
  for (auto& u : g.unary)
    for (auto& c : u) c *= f;
  for (auto& e : g.edges)
    for (auto& c : e.matrix) c *= f;
  const sd::fine_t scale = sd::choose_scale(g);
  CHECK(scale == 1);
  const std::size_t allowed = sd::push_passes_in_range(sd::cost_magnitude(g) * static_cast<long double>(scale), 32);
  CHECK(allowed >= 2);
  CHECK(allowed < 32);
  const auto run = [&](std::size_t push_passes) {
    sd::Problem p(g, scale);
    sd::Srmp dual(p);
    std::vector<std::uint32_t> labels, backward;
    std::size_t consistent = 0;
    for (std::size_t pass = 0; pass < push_passes + 8; ++pass) {
      dual.set_weights(pass < push_passes ? sd::DualWeights::push : sd::DualWeights::trws);
      consistent += dual.iterate(labels, &backward) == dual.bound() ? 1 : 0;
    }
    return consistent == push_passes + 8;
  };
  CHECK(run(allowed));  // every pass's bound is the bound of its messages
  CHECK(run(0));
  CHECK_FALSE(run(256));                            // far past the allowance the sums reach the forbidden range
  CHECK(sd::push_passes_in_range(1e6L, 32) == 32);  // ordinary costs: no limit
}

TEST_CASE("solve: branch and bound searches the components apart once their separators are labelled, exactly", "[global][solve]") {
  // clusters of 2-3 nodes hanging off two hub nodes: labelling the hubs leaves the clusters
  // independent; only the search runs (no reductions, no dual), so every split is its work
  std::size_t splits = 0;
  for (std::uint32_t seed = 0; seed < test::scaled(300); ++seed) {
    std::mt19937 rng(seed + 7000);
    std::uniform_int_distribution<int> cost(0, 20), labels(2, 3), pick(0, 1);
    CostGraph g;
    const auto node = [&] {
      std::vector<cost_t> u(static_cast<std::size_t>(labels(rng)));
      for (auto& c : u) c = cost(rng);
      return g.add_node(std::move(u));
    };
    const auto edge = [&](std::uint32_t a, std::uint32_t b) {
      std::vector<cost_t> m(g.num_labels(a) * g.num_labels(b));
      for (auto& c : m) c = cost(rng) == 0 ? forbidden : cost(rng);
      g.add_dense_edge(a, b, std::move(m));
    };
    const std::uint32_t h0 = node(), h1 = node();
    edge(h0, h1);
    for (int c = 0; c < 3; ++c) {
      const std::uint32_t a = node(), b = node();
      edge(a, b);
      edge(a, pick(rng) == 0 ? h0 : h1);
      edge(b, h1);
      if (pick(rng) == 1) edge(b, node());
    }
    const cost_t best = brute_force(g);
    SolveOptions o;
    o.reductions = o.dominance = o.dual = false;
    o.elimination_work = 0;
    const SolveResult r = solve::solve(g, o);
    INFO("seed " << seed << " brute force " << best << " solver " << r.cost);
    if (is_forbidden(best)) {
      CHECK_FALSE(r.feasible);
      continue;
    }
    REQUIRE(r.feasible);
    CHECK(r.cost == best);
    CHECK(r.optimal);
    check_certificate(g, r);
    splits += r.stats.search_splits;
  }
  CHECK(splits > test::scaled(300));
}

TEST_CASE("fix_by_threshold: every labelling at most the target keeps its labels and pairs; the solve from a start stays exact", "[global][solve]") {
  std::size_t trials = 0, cut_somewhere = 0, emptied = 0;
  for (std::uint32_t seed = 0; seed < 400; ++seed) {
    std::mt19937 rng(seed + 700000);
    const CostGraph g = random_graph(rng, 7, 4, 3, /*limits=*/seed % 2 == 1);
    // a random feasible labelling as the incumbent
    std::vector<std::vector<std::uint32_t>> feasible;
    for_each_labelling(g, [&](const std::vector<std::uint32_t>& x, cost_t c) {
      if (!is_forbidden(c) && g.feasible(x)) feasible.push_back(x);
    });
    if (feasible.empty()) continue;
    ++trials;
    const std::vector<std::uint32_t> start = feasible[rng() % feasible.size()];
    const cost_t upper = g.evaluate(start);
    const solve::detail::fine_t scale = solve::detail::choose_scale(g), target = (upper - 1) * scale;
    const std::optional<solve::detail::fine_t> slack = solve::detail::threshold_slack(g, scale, target);
    REQUIRE(slack.has_value());  // random_graph's costs are >= 0
    solve::detail::Problem p(g, scale, nullptr, nullptr, std::max<solve::detail::fine_t>(*slack, 0));
    solve::detail::fix_by_threshold(p, *slack);
    solve::detail::ReduceStats rs;
    const bool ok = !p.infeasible && solve::detail::propagate(p, rs);
    // every feasible labelling costing at most the target is still there, label and pair
    std::size_t below = 0;
    for_each_labelling(g, [&](const std::vector<std::uint32_t>& x, cost_t c) {
      if (is_forbidden(c) || c > upper - 1 || !g.feasible(x)) return;
      ++below;
      REQUIRE(ok);
      std::vector<std::uint32_t> at(x.size());
      for (std::uint32_t u = 0; u < x.size(); ++u) {
        const auto& labels = p.nodes[u].label;
        const auto it = std::find(labels.begin(), labels.end(), x[u]);
        REQUIRE(it != labels.end());
        at[u] = static_cast<std::uint32_t>(it - labels.begin());
      }
      for (const auto& e : p.edges)
        if (e.alive) CHECK(e.at(at[e.u], at[e.v]) < solve::detail::inf);
    });
    emptied += below == 0 && !ok ? 1 : 0;
    std::size_t left = 0, before = 0;
    for (std::uint32_t u = 0; u < g.num_nodes(); ++u) {
      left += p.nodes[u].label.size();
      for (const cost_t x : g.unary[u]) before += is_forbidden(x) ? 0 : 1;
    }
    cut_somewhere += !ok || left < before ? 1 : 0;
    // the solve from that start: the brute-force optimum, proven
    SolveOptions o;
    o.start = start;
    const SolveResult r = solve::solve(g, o);
    INFO("seed " << seed);
    REQUIRE(r.feasible);
    CHECK(r.cost == brute_force(g));
    CHECK(r.lower_bound == r.cost);
    check_certificate(g, r);
  }
  // the trials remove labels, and some leave nothing below the incumbent
  CHECK(trials > 100);
  CHECK(cut_somewhere > trials / 4);
  CHECK(emptied > 0);
}

TEST_CASE("solve: a start labelling is the first incumbent; a zero time limit still answers honestly", "[global][solve]") {
  for (std::uint32_t seed = 0; seed < 300; ++seed) {
    std::mt19937 rng(seed + 100000);
    const CostGraph g = random_graph(rng, 9, 5, 3, false);
    const cost_t best = brute_force(g);
    if (is_forbidden(best)) continue;
    // the brute-force optimum's labelling as the start
    std::vector<std::uint32_t> x(g.num_nodes(), 0), arg;
    while (true) {
      if (g.evaluate(x) == best) {
        arg = x;
        break;
      }
      std::size_t i = 0;
      while (i < x.size() && ++x[i] == g.num_labels(i)) x[i++] = 0;
      if (i == x.size()) break;
    }
    SolveOptions o;
    o.time_limit_s = 0;
    o.start = arg;
    const SolveResult r = solve::solve(g, o);
    REQUIRE(r.feasible);
    CHECK(r.cost == best);  // never worse than the start
    CHECK(r.lower_bound <= best);
    check_certificate(g, r);
    // and with a bad start and no time, the answer is still a valid labelling with a valid bound
    o.start.assign(g.num_nodes(), 0);
    const SolveResult q = solve::solve(g, o);
    if (q.feasible) {
      CHECK(q.cost >= best);
      check_certificate(g, q);
    }
    CHECK(q.lower_bound <= best);
  }
}

TEST_CASE("solve: a start at the trivial bound is proven optimal without a round", "[global][solve]") {
  // 200 nodes of 30 labels in a cycle, every label pair costing 0..9 except label 0 everywhere
  // (all zero): the start (all 0) costs the constant, the least any labelling can cost
  CostGraph g;
  std::mt19937 rng(7);
  for (int u = 0; u < 200; ++u) {
    std::vector<cost_t> c(30);
    for (std::size_t a = 1; a < c.size(); ++a) c[a] = static_cast<cost_t>(rng() % 10);
    g.add_node(std::move(c));
  }
  for (std::uint32_t u = 0; u < 200; ++u) {
    std::vector<cost_t> m(900);
    for (std::size_t k = 1; k < m.size(); ++k) m[k] = (k % 30 == 0 || k < 30) ? static_cast<cost_t>(rng() % 10) : static_cast<cost_t>(1 + rng() % 9);
    m[0] = 0;
    g.add_dense_edge(u, (u + 1) % 200, std::move(m));
  }
  g.constant = 5;
  SolveOptions o;
  o.start.assign(200, 0);
  const SolveResult r = solve::solve(g, o);
  CHECK(r.optimal);
  CHECK(r.cost == 5);
  CHECK(r.lower_bound == 5);
  CHECK(r.status == "optimal");
  CHECK(r.stats.rounds == 0);  // proven by the trivial bound alone
  CHECK(r.labels == o.start);
  // a start one above the trivial bound is not proven that way: the rounds run and find 5
  o.start[3] = 1;
  const cost_t above = g.evaluate(o.start);
  REQUIRE(above > 5);
  const SolveResult s = solve::solve(g, o);
  CHECK(s.cost == 5);
  CHECK(s.optimal);
  CHECK(s.stats.rounds >= 1);
}

TEST_CASE("solve: chains, trees and cycles of 50-label nodes reduce exactly", "[global][solve]") {
  // a ring of 40 nodes with one chord: degree-2 elimination and parallel-edge merging close it
  std::mt19937 rng(7);
  CostGraph g;
  const std::uint32_t n = 40;
  for (std::uint32_t u = 0; u < n; ++u) {
    std::vector<cost_t> c(50);
    for (auto& x : c) x = static_cast<cost_t>(rng() % 1000);
    g.add_node(std::move(c));
  }
  const auto dense = [&](std::uint32_t u, std::uint32_t v) {
    std::vector<cost_t> m(std::size_t{50} * 50);
    for (auto& x : m) x = rng() % 9 == 0 ? forbidden : static_cast<cost_t>(rng() % 1000);
    g.add_dense_edge(u, v, std::move(m));
  };
  for (std::uint32_t u = 0; u < n; ++u) dense(u, (u + 1) % n);
  dense(0, n / 2);
  const SolveResult r = solve::solve(g);
  REQUIRE(r.feasible);
  CHECK(r.optimal);
  check_certificate(g, r);
  // the same answer without reductions (dual + search only)
  SolveOptions o;
  o.reductions = false;
  o.dominance = false;
  o.time_limit_s = 60;
  const SolveResult q = solve::solve(g, o);
  CHECK(q.optimal);
  CHECK(q.cost == r.cost);
}

TEST_CASE("solve: usage limits are enforced lazily and exactly", "[global][solve]") {
  // two nodes that both want their big label; the limit admits only one big label
  CostGraph g;
  g.add_node({0, 10});
  g.add_node({0, 7});
  g.add_dense_edge(0, 1, {0, 0, 0, 0});
  g.usage = {{5, 1}, {5, 1}};
  g.limits.push_back({{0, 1}, 6});
  const SolveResult r = solve::solve(g);
  CHECK(r.optimal);
  CHECK(r.cost == 7);
  CHECK(r.labels == std::vector<std::uint32_t>{0, 1});
  g.limits[0].limit = 1;  // nothing fits
  const SolveResult q = solve::solve(g);
  CHECK_FALSE(q.feasible);
  CHECK(q.status == "infeasible");
}

TEST_CASE("solve: the reduction counters are reported however the round ends", "[global][solve]") {
  // K4 with 3 labels per node; node 0's label 2 costs more than label 1 in the unary term and the
  // same on every edge: dominance removes it, and the exact elimination then finishes the round
  CostGraph g;
  g.add_node({0, 1, 4});
  for (int u = 1; u < 4; ++u) g.add_node({0, 2, 1});
  for (std::uint32_t u = 0; u < 4; ++u)
    for (std::uint32_t v = u + 1; v < 4; ++v) {
      std::vector<cost_t> m(9);
      for (std::uint32_t a = 0; a < 3; ++a)
        for (std::uint32_t b = 0; b < 3; ++b) m[a * 3 + b] = static_cast<cost_t>(((u == 0 ? std::min(a, 1u) : a) * 7 + b * 3 + u + v) % 5);
      g.add_dense_edge(u, v, m);
    }
  const SolveResult r = solve::solve(g);
  REQUIRE(r.optimal);
  CHECK(r.cost == brute_force(g));
  CHECK(r.stats.elimination_work > 0);  // the round ended in the exact elimination
  CHECK(r.stats.dominated >= 1);        // and the label dominance removed is counted
}

TEST_CASE("solve: malformed graphs and starts are errors", "[global][solve]") {
  CostGraph g;
  g.add_node({1, 2});
  CHECK_THROWS_AS(g.add_node({}), ctshard::error);
  CHECK_THROWS_AS(g.add_dense_edge(0, 0, {0, 0, 0, 0}), ctshard::error);
  g.add_node({3});
  CHECK_THROWS_AS(g.add_dense_edge(0, 1, {0, 0, 0}), ctshard::error);
  SolveOptions o;
  o.start = {0};
  CHECK_THROWS_AS(solve::solve(g, o), ctshard::error);
  g.unary[0][0] = std::numeric_limits<cost_t>::max() / 8;  // finite but too large for exact arithmetic
  CHECK_THROWS_AS(solve::solve(g), ctshard::error);
}

namespace {

/// K4 of 3-label nodes, no forbidden entry: the reductions leave a core (it is not a tree).
CostGraph k4_graph() {
  CostGraph g;
  for (int u = 0; u < 4; ++u) g.add_node({0, 2, 1});
  for (std::uint32_t u = 0; u < 4; ++u)
    for (std::uint32_t v = u + 1; v < 4; ++v) {
      std::vector<cost_t> m(9);
      for (std::uint32_t a = 0; a < 3; ++a)
        for (std::uint32_t b = 0; b < 3; ++b) m[a * 3 + b] = static_cast<cost_t>((a * 7 + b * 3 + u + v) % 5);
      g.add_dense_edge(u, v, m);
    }
  return g;
}

/// The lines of `text` (without their '\n'); CHECKs that `text` ends with one.
std::vector<std::string> lines_of(const std::string& text) {
  if (!text.empty()) CHECK(text.back() == '\n');
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

}  // namespace

TEST_CASE("solve: progress lines go to SolveOptions::trace.stream, in their format, and change nothing", "[global][solve]") {
  const CostGraph g = k4_graph();
  const SolveResult quiet = solve::solve(g);
  REQUIRE(quiet.optimal);
  const std::regex reduction(R"(after reduction: max labels \d+; degrees:( \d+:\d+)*)");
  const std::regex plan(R"(elimination plan: work [0-9.e+]+ \(limit \d+\))");
  const std::regex elimination(R"(elimination: work \d+, optimum -?\d+\.\d{3})");
  const std::regex dual(R"(dual \d+: bound -?\d+\.\d{3}, best -?\d+, live \d+ nodes / \d+ labels)");
  SECTION("the exact elimination finishes the round") {
    std::ostringstream out;
    SolveOptions o;
    o.trace.stream = &out;
    const SolveResult r = solve::solve(g, o);
    CHECK(r.cost == quiet.cost);
    CHECK(r.labels == quiet.labels);
    const auto lines = lines_of(out.str());
    REQUIRE(lines.size() >= 3);
    CHECK(std::regex_match(lines[0], reduction));
    CHECK(lines[0].find(" 3:4") != std::string::npos);  // four live nodes of degree 3
    CHECK(std::regex_match(lines[1], plan));
    CHECK(std::regex_match(lines[2], elimination));
  }
  SECTION("message passing: one line per dual pass") {
    std::ostringstream out;
    SolveOptions o;
    o.elimination_work = 0;
    o.trace.stream = &out;
    const SolveResult r = solve::solve(g, o);
    CHECK(r.cost == quiet.cost);
    const auto lines = lines_of(out.str());
    REQUIRE(!lines.empty());
    CHECK(std::regex_match(lines[0], reduction));
    std::size_t passes = 0;
    for (const auto& line : lines) {
      INFO(line);
      CHECK((std::regex_match(line, reduction) || std::regex_match(line, dual)));
      passes += std::regex_match(line, dual) ? 1 : 0;
    }
    CHECK(passes == r.stats.dual_iterations);
    CHECK(passes > 0);
  }
}

TEST_CASE("solve: SolveOptions::trace.dump_core_path writes the live core, and a path it cannot write is an error naming it", "[global][solve]") {
  const CostGraph g = k4_graph();
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / ("ctshard_dump_core_" + std::to_string(std::random_device{}()));
  std::filesystem::create_directories(dir);
  SECTION("a good path: one `n` line per live node and one `e` line per live edge, the file replaced") {
    const std::string path = (dir / "core.txt").string();
    std::ofstream(path) << "stale content that is longer than the core dump will be\n";
    SolveOptions o;
    o.elimination_work = 0;
    o.trace.dump_core_path = path;
    const SolveResult r = solve::solve(g, o);
    CHECK(r.optimal);
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    const std::regex node(R"(n (\d+) (\d+))"), edge(R"(e (\d+) (\d+) (\d+) (\d+))");
    std::size_t nodes = 0, labels = 0, edges = 0;
    for (const auto& line : lines_of(text.str())) {
      INFO(line);
      std::smatch m;
      if (std::regex_match(line, m, node)) {
        ++nodes;
        CHECK(std::stoul(m[1].str()) < g.num_nodes());
        labels += std::stoul(m[2].str());
      } else {
        CHECK(std::regex_match(line, m, edge));
        ++edges;
        CHECK(std::stoul(m[1].str()) < std::stoul(m[2].str()));
        CHECK(std::stoul(m[2].str()) < g.num_nodes());
      }
    }
    CHECK(nodes == r.stats.live_nodes);  // one round: its core is the first reduction's
    CHECK(labels == r.stats.live_labels);
    CHECK(edges == r.stats.live_edges);
    CHECK(nodes > 0);
    CHECK(edges > 0);
  }
  SECTION("a directory that does not exist") {
    const std::string path = (dir / "no_such_dir" / "core.txt").string();
    SolveOptions o;
    o.trace.dump_core_path = path;
    CHECK_THROWS_AS(solve::solve(g, o), ctshard::error);
    CHECK_THROWS_WITH(solve::solve(g, o), Catch::Contains("cannot open the core dump file '" + path + "'"));
    CHECK_FALSE(std::filesystem::exists(path));
  }
  SECTION("a device that is full") {
    if (!std::filesystem::exists("/dev/full")) return;
    SolveOptions o;
    o.trace.dump_core_path = "/dev/full";
    CHECK_THROWS_WITH(solve::solve(g, o), Catch::Contains("cannot write the core dump file '/dev/full'"));
  }
  std::filesystem::remove_all(dir);
}

TEST_CASE("candidates: every row DTensor's enumeration lists for some input specs is a candidate", "[global][candidates]") {
  // For ops of each UnevenInputs kind, random current specs: each surviving row of
  // StrategyEnumerator::for_each is among enumerate_candidates' rows (placeholders filled with
  // plain Shard), and a row that passed through the uneven bypass is flagged for that input.
  const auto& registry = builtin_registry();
  std::vector<OpCall> calls;
  calls.push_back(test::make_call("aten.mm.default", {test::meta({8, 6}), test::meta({6, 4})}, {test::tensor_arg(0), test::tensor_arg(1)}));
  calls.push_back(test::make_call("aten.add.Tensor", {test::meta({3, 8}), test::meta({3, 8})}, {test::tensor_arg(0), test::tensor_arg(1)}));
  calls.push_back(test::make_call("aten.view.default", {test::meta({3, 4, 8})}, {test::tensor_arg(0), test::ints_arg({12, 8})}));
  calls.push_back(test::make_call("aten.sum.dim_IntList", {test::meta({3, 8, 2})}, {test::tensor_arg(0), test::ints_arg({1})}));
  std::mt19937 rng(11);
  for (const auto& sizes : {std::vector<std::int64_t>{4}, std::vector<std::int64_t>{2, 4}, std::vector<std::int64_t>{2, 2, 2}}) {
    const MeshTopology mesh = MeshTopology::build(std::span<const std::int64_t>(sizes.data(), sizes.size()), 8);
    for (const auto& call : calls) {
      const OpRule rule = (*registry.find(call.op))(call);
      const CandidateSet cands = enumerate_candidates(rule.rules, mesh, call.tensors, plain_shard_kinds, rule.uneven_inputs, rule.filter);
      StrategyEnumerator e(rule.rules, mesh, rule.uneven_inputs, rule.filter, rule.placeholder_fill);
      for (std::size_t trial = 0; trial < test::scaled(40); ++trial) {
        // a random current spec per input: R, S(d) or P(sum) per mesh dim
        std::vector<Spec> current;
        for (const auto& m : call.tensors) {
          Spec s(mesh.size());
          for (std::size_t d = 0; d < mesh.size(); ++d) {
            const auto pick = rng() % (m.shape.rank + 2);
            if (pick < m.shape.rank) s[d] = Shard(static_cast<int>(pick));
            else if (pick == m.shape.rank) s[d] = Partial(ReduceOp::sum);
          }
          current.push_back(s);
        }
        std::size_t rows = 0, found = 0;
        e.for_each(call.tensors, current, [&](const CandidateView& v) {
          ++rows;
          for (std::size_t c = 0; c < cands.size(); ++c) {
            bool same = true;
            for (std::size_t k = 0; k < cands.width() && same; ++k) same = cands.spec(c, k) == e.spec_of(v.digits, k);
            if (!same) continue;
            ++found;
            for (std::size_t i = 0; i < cands.num_inputs; ++i) {
              const bool shardable = is_tensor_shardable(call.tensors[i].shape, cands.spec(c, cands.num_outputs + i), mesh);
              CHECK(((cands.needs_bypass[c] >> i) & 1) == (shardable ? 0u : 1u));
            }
            break;
          }
        });
        INFO(call.op << " on a " << mesh.size() << "-dim mesh");
        CHECK(found == rows);
      }
    }
  }
}

TEST_CASE("iopddl: the worked example, a round trip, and the writer's limits", "[global][iopddl]") {
  const std::string path = std::string(CTSHARD_SHARED_DIR) + "/iopddl/example.json";
  if (!std::filesystem::exists(path)) {
    WARN("../shared/iopddl not found (" << path << "): skipping the IOPDDL example");
  } else {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    const IopddlInstance inst = read_iopddl(text.str());
    CHECK(inst.name == "example");
    CHECK(inst.graph.num_nodes() == 5);
    CHECK(inst.usage_limit == 50);
    const cost_t best = brute_force(inst.graph);
    const SolveResult r = solve::solve(inst.graph);
    CHECK(r.optimal);
    CHECK(r.cost == best);
    check_certificate(inst.graph, r);
    // written and read back: the same optimum
    const IopddlInstance back = read_iopddl(write_iopddl(inst.graph, inst.name));
    CHECK(back.graph.num_nodes() == inst.graph.num_nodes());
    CHECK(solve::solve(back.graph).cost == r.cost);
  }
  // a graph with a constant, forbidden entries and one limit round-trips
  std::mt19937 rng(3);
  for (int k = 0; k < 50; ++k) {
    CostGraph g = random_graph(rng, 6, 4, 2, false);
    if (k % 2 == 0) {
      for (std::size_t u = 0; u < g.num_nodes(); ++u) g.usage.push_back(std::vector<std::int64_t>(g.num_labels(u), static_cast<std::int64_t>(u % 3)));
      UsageLimit l;
      for (std::uint32_t u = 0; u < g.num_nodes(); u += 2) l.nodes.push_back(u);
      l.limit = 3;
      g.limits.push_back(l);
    }
    const IopddlInstance back = read_iopddl(write_iopddl(g, "random"));
    CHECK(brute_force(back.graph) == brute_force(g));
  }
  CHECK_THROWS_AS(read_iopddl("{\"problem\": {\"nodes\": {\"costs\": [[1]]}, \"edges\": {\"nodes\": [[0, 3]], \"costs\": [[1]]}}}"), ctshard::error);
  CHECK_THROWS_AS(read_iopddl("{\"problem\": "), ctshard::error);
  CHECK_THROWS_AS(read_iopddl("[]"), ctshard::error);
}

TEST_CASE("iopddl: usage limits come from the maximal sets of live nodes", "[global][iopddl]") {
  // [0,3) [1,2) [2,5) [4,5): live sets {0} {0,1} {0,2} {2} {2,3}; maximal: {0,1} {0,2} {2,3}
  const auto limits = limits_from_intervals({{0, 3}, {1, 2}, {2, 5}, {4, 5}}, 10, false);
  std::vector<std::vector<std::uint32_t>> sets;
  sets.reserve(limits.size());
  for (const auto& l : limits) sets.push_back(l.nodes);
  CHECK(sets == std::vector<std::vector<std::uint32_t>>{{0, 1}, {0, 2}, {2, 3}});
  CHECK(limits_from_intervals({{0, 3}, {1, 2}, {2, 5}, {4, 5}}, 10, true).size() == 5);
  CHECK(limits_from_intervals({{3, 3}}, 10, false).empty());  // an empty interval is never live
}
