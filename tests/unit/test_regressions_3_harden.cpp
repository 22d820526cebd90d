// Issue 22, hardening the whole-graph entry points (library side): numbers checked where they
// enter the solver and the IOPDDL reader, the one deadline of a request, the interval limit
// kept implicit (the staircase of intervals), the bounded IOPDDL reader. Each case asserts the
// value or the error the fix gives; each failed on the revision before it (docs/robustness.md).

#include <catch2/catch.hpp>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "../sanitizer_scale.hpp"
#include "ctshard/solve/budget.hpp"
#include "ctshard/solve/interval_steps.hpp"
#include "ctshard/solve/iopddl.hpp"
#include "ctshard/solve/solver.hpp"

using namespace ctshard;
using namespace ctshard::solve;
using Catch::Matchers::Contains;

namespace {

/// The usage of `x` at every time step, straight from the intervals (no IntervalSteps).
bool keeps_every_step(const CostGraph& g, const std::vector<std::uint32_t>& x) {
  std::map<std::int64_t, std::int64_t> use;
  for (std::size_t u = 0; u < x.size(); ++u)
    for (std::int64_t t = g.intervals[u].first; t < g.intervals[u].second; ++t) use[t] += g.usage[u][x[u]];
  for (const auto& [t, sum] : use)
    if (sum > *g.interval_limit) return false;
  return true;
}

/// The optimum by enumeration, feasibility judged per time step (forbidden when none).
cost_t brute_force_steps(const CostGraph& g) {
  std::vector<std::uint32_t> x(g.num_nodes(), 0);
  cost_t best = forbidden;
  while (true) {
    const cost_t c = g.evaluate(x);
    if (!is_forbidden(c) && c < best && keeps_every_step(g, x)) best = c;
    std::size_t i = 0;
    while (i < x.size() && ++x[i] == g.num_labels(i)) x[i++] = 0;
    if (i == x.size()) break;
  }
  return best;
}

/// A random graph with per-node intervals in [0, 8) and one interval limit.
CostGraph random_interval_graph(std::mt19937& rng, bool negative_usages) {
  CostGraph g;
  const std::size_t n = 2 + rng() % 6;
  for (std::size_t u = 0; u < n; ++u) {
    const std::size_t L = 1 + rng() % 3;
    std::vector<cost_t> c;
    std::vector<std::int64_t> us;
    for (std::size_t a = 0; a < L; ++a) {
      c.push_back(rng() % 12 == 0 ? forbidden : static_cast<cost_t>(rng() % 30));
      us.push_back(static_cast<std::int64_t>(rng() % 6) - (negative_usages ? 2 : 0));
    }
    g.add_node(std::move(c));
    g.usage.push_back(std::move(us));
    const auto s = static_cast<std::int64_t>(rng() % 8), len = static_cast<std::int64_t>(rng() % 5);
    g.intervals.emplace_back(s, s + len);
  }
  for (std::size_t k = rng() % (2 * n + 1); k-- > 0;) {
    const auto u = static_cast<std::uint32_t>(rng() % n), v = static_cast<std::uint32_t>(rng() % n);
    if (u == v) continue;
    std::vector<cost_t> m(g.num_labels(u) * g.num_labels(v));
    for (auto& x : m) x = rng() % 9 == 0 ? forbidden : static_cast<cost_t>(rng() % 20);
    g.add_dense_edge(u, v, std::move(m));
  }
  g.interval_limit = static_cast<std::int64_t>(rng() % 12);
  return g;
}

/// IOPDDL text of a staircase: node i lives over [i, i + window), strategies (cost 0, usage 1)
/// and (cost 10, usage 0), usage limit window / 2 (benchmarks/attacks/staircase_iopddl.py).
std::string staircase_text(std::size_t nodes, std::size_t window) {
  std::string iv, costs, use;
  for (std::size_t i = 0; i < nodes; ++i) {
    iv += (i ? ",[" : "[") + std::to_string(i) + "," + std::to_string(i + window) + "]";
    costs += i ? ",[0,10]" : "[0,10]";
    use += i ? ",[1,0]" : "[1,0]";
  }
  return "{\"problem\":{\"name\":\"staircase\",\"nodes\":{\"intervals\":[" + iv + "],\"costs\":[" + costs + "],\"usages\":[" + use +
         "]},\"edges\":{\"nodes\":[],\"costs\":[]},\"usage_limit\":" + std::to_string(window / 2) + "}}";
}

}  // namespace

TEST_CASE("issue 22: costs outside the solver's exact range are errors naming the value", "[harden][solve]") {
  // -9.2e18 was clamped to INT64_MIN, passed the 2^56 guard (std::abs(INT64_MIN) is undefined)
  // and came back "optimal" with cost 0
  const std::string low = R"({"problem": {"nodes": {"costs": [[-10000000000000000000, 0]]}, "edges": {"nodes": [], "costs": []}}})";
  CHECK_THROWS_WITH(read_iopddl(low), Contains("below the 64-bit range"));
  const std::string big = R"({"problem": {"nodes": {"costs": [[0, 1], [-100000000000000000]]}, "edges": {"nodes": [], "costs": []}}})";
  CHECK_THROWS_WITH(read_iopddl(big), Contains("nodes.costs[1][0] = -100000000000000000") && Contains("exact range"));
  const std::string edge = R"({"problem": {"nodes": {"costs": [[0], [0]]}, "edges": {"nodes": [[0, 1]], "costs": [[900000000000000000]]}}})";
  CHECK_THROWS_WITH(read_iopddl(edge), Contains("edges.costs[0][0] = 900000000000000000"));
  // 10^18 and above stay forbidden, as the contest files use them
  const IopddlInstance ok = read_iopddl(R"({"problem": {"nodes": {"costs": [[1000000000000000000, 5]]}, "edges": {"nodes": [], "costs": []}}})");
  CHECK(is_forbidden(ok.graph.unary[0][0]));
  CHECK(solve::solve(ok.graph).cost == 5);
  // the same rule for graphs built through the API
  CostGraph g;
  g.add_node({std::numeric_limits<cost_t>::min(), 0});
  CHECK_THROWS_WITH(solve::solve(g), Contains("node 0 label 0: cost -9223372036854775808 is outside the solver's exact range"));
  g.unary[0][0] = -max_exact_cost;  // the bound itself is in range
  CHECK(solve::solve(g).cost == -max_exact_cost);
  g.constant = max_exact_cost + 1;
  CHECK_THROWS_WITH(solve::solve(g), Contains("the constant"));
  // a forbidden constant forbids every labelling: infeasible, not a magnitude refused
  g.constant = forbidden;
  const SolveResult r = solve::solve(g);
  CHECK(r.status == "infeasible");
  CHECK_FALSE(r.feasible);
  CHECK(is_forbidden(r.lower_bound));
  CostGraph h;  // and with a usage limit (its dominance and Lagrangian phases)
  h.add_node({0, 1});
  h.add_node({0, 1});
  h.add_dense_edge(0, 1, {0, 1, 1, 0});
  h.usage = {{1, 1}, {2, 1}};
  h.limits = {UsageLimit{{0, 1}, 2}};
  h.constant = forbidden;
  CHECK(solve::solve(h).status == "infeasible");
}

TEST_CASE("issue 22: usage sums that could wrap are errors, not a feasible answer", "[harden][solve]") {
  // four usages of 2^62 against a limit: the 64-bit sum wrapped negative, so this infeasible
  // instance was reported feasible and optimal
  const std::string text = R"({"problem": {"nodes": {"intervals": [[0, 1], [0, 1], [0, 1], [0, 1]],
    "costs": [[0], [0], [0], [0]], "usages": [[4611686018427387904], [4611686018427387904], [4611686018427387904], [4611686018427387904]]},
    "edges": {"nodes": [], "costs": []}, "usage_limit": 10}})";
  CHECK_THROWS_WITH(read_iopddl(text), Contains("nodes.usages[0][0] = 4611686018427387904 is outside [-2^60, 2^60]"));
  // a value past 64 bits reads as the maximum: the message says so instead of naming that value
  std::string past = text;
  past.replace(past.find("4611686018427387904"), 19, "18446744073709551626");
  CHECK_THROWS_WITH(read_iopddl(past), Contains("nodes.usages[0][0] = 9223372036854775807 or more is outside [-2^60, 2^60]"));
  std::string limit = text;
  limit.replace(limit.find("\"usage_limit\": 10"), 17, "\"usage_limit\": 1e300");
  CHECK_THROWS_WITH(read_iopddl(limit), Contains("usage_limit 9223372036854775807 or more is outside [0, 2^60]"));
  // within the per-usage range, but their sum at one step is not
  CostGraph g;
  for (int u = 0; u < 4; ++u) g.add_node({0});
  g.usage.assign(4, {std::int64_t{1} << 59});
  g.intervals.assign(4, {0, 1});
  g.interval_limit = 10;
  CHECK_THROWS_WITH(solve::solve(g), Contains("the interval limit at time 0") && Contains("beyond 2^60"));
  g.interval_limit.reset();
  g.limits.push_back({{0, 1, 2, 3}, 10});
  CHECK_THROWS_WITH(solve::solve(g), Contains("usage limit 0"));
  // a negative usage_limit is refused (it was read as "no limit")
  CHECK_THROWS_WITH(read_iopddl(R"({"problem": {"nodes": {"intervals": [[0, 1]], "costs": [[0]], "usages": [[1]]}, "usage_limit": -5}})"),
                    Contains("usage_limit -5"));
}

TEST_CASE("issue 22: time limits are checked and clamped; inf and 1e300 no longer stop the solver at once", "[harden][solve]") {
  CHECK_THROWS_WITH(checked_time_limit_s(std::nan(""), "--time-limit-s"), Contains("--time-limit-s must be a number of seconds >= 0, got nan"));
  CHECK_THROWS_WITH(checked_time_limit_s(-1, "--time-limit-s"), Contains("got -1"));
  CHECK(checked_time_limit_s(std::numeric_limits<double>::infinity(), "x") == max_time_limit_s);
  CHECK(checked_time_limit_s(1e300, "x") == max_time_limit_s);
  CHECK(checked_time_limit_s(2.5, "x") == 2.5);
  CHECK(Deadline::after(1e300).remaining_s() > 0.99 * max_time_limit_s);
  // a graph the first round leaves to the search (no reductions, no elimination): with inf or
  // 1e300 the deadline overflowed into the past and the search stopped after 256 nodes
  std::mt19937 rng(7);
  CostGraph g;
  for (int u = 0; u < 14; ++u) {
    std::vector<cost_t> c(4);
    for (auto& x : c) x = static_cast<cost_t>(rng() % 50);
    g.add_node(std::move(c));
  }
  for (std::uint32_t u = 0; u < 14; ++u)
    for (std::uint32_t v = u + 1; v < 14; v += 1 + u % 3) {
      std::vector<cost_t> m(16);
      for (auto& x : m) x = static_cast<cost_t>(rng() % 40);
      g.add_dense_edge(u, v, std::move(m));
    }
  SolveOptions o;
  o.reductions = false;
  o.dual = false;
  o.elimination_work = 0;
  o.time_limit_s = 60;
  const SolveResult ref = solve::solve(g, o);
  REQUIRE(ref.optimal);
  REQUIRE(ref.stats.search_nodes > 256);  // the case needs more than the first clock check
  for (const double limit : {std::numeric_limits<double>::infinity(), 1e300}) {
    o.time_limit_s = limit;
    const SolveResult r = solve::solve(g, o);
    INFO(limit);
    CHECK(r.status == "optimal");
    CHECK(r.cost == ref.cost);
  }
  o.time_limit_s = std::nan("");
  CHECK_THROWS_WITH(solve::solve(g, o), Contains("SolveOptions::time_limit_s"));
}

TEST_CASE("issue 22: a deadline already passed returns the start at once, with a valid bound", "[harden][solve]") {
  std::mt19937 rng(5);
  CostGraph g;
  for (int u = 0; u < 10; ++u) g.add_node({static_cast<cost_t>(rng() % 9), static_cast<cost_t>(rng() % 9), static_cast<cost_t>(rng() % 9)});
  for (std::uint32_t u = 0; u + 1 < 10; ++u) g.add_dense_edge(u, u + 1, {0, 3, 5, 3, 0, 3, 5, 3, 0});
  g.add_dense_edge(0, 9, {1, 0, 0, 0, 1, 0, 0, 0, 1});
  SolveOptions o;
  o.deadline = Deadline(std::chrono::steady_clock::now() - std::chrono::seconds(1));
  o.start.assign(10, 0);
  const SolveResult r = solve::solve(g, o);
  CHECK(r.status != "stopped");
  CHECK(r.stats.rounds == 0);  // no work after the deadline: counted, not timed
  CHECK(r.stats.dual_iterations == 0);
  CHECK(r.stats.search_nodes == 0);
  REQUIRE(r.feasible);
  CHECK(r.labels == o.start);
  o.deadline = Deadline();
  const SolveResult full = solve::solve(g, o);
  REQUIRE(full.optimal);
  CHECK(r.lower_bound <= full.cost);
  CHECK(r.cost >= full.cost);
}

TEST_CASE("issue 22: interval limits kept implicit are exact (brute force, negative usages too)", "[harden][solve][iopddl]") {
  std::mt19937 rng(22);
  std::size_t feasible = 0, infeasible = 0, bound = 0;
  for (std::size_t k = 0; k < test::scaled(400); ++k) {
    const CostGraph g = random_interval_graph(rng, k % 3 == 2);
    const cost_t best = brute_force_steps(g);
    const SolveResult r = solve::solve(g);
    INFO("case " << k);
    if (is_forbidden(best)) {
      CHECK_FALSE(r.feasible);
      CHECK(r.status == "infeasible");
      ++infeasible;
      continue;
    }
    ++feasible;
    REQUIRE(r.feasible);
    CHECK(r.optimal);
    CHECK(r.cost == best);
    CHECK(g.evaluate(r.labels) == r.cost);
    CHECK(keeps_every_step(g, r.labels));
    CHECK(g.feasible(r.labels));  // the sweep agrees with the direct count
    bound += r.stats.enforced_limits > 0 ? 1 : 0;
    // the explicit limits say the same: solved with them listed, the optimum is the same
    CostGraph listed = g;
    listed.limits = explicit_limits(g);
    listed.interval_limit.reset();
    CHECK(solve::solve(listed).cost == best);
  }
  CHECK(feasible > 10);
  CHECK(infeasible > 0);
  CHECK(bound > 0);  // some optimum needed broken steps added as limits
}

TEST_CASE("issue 22: the staircase of intervals is read implicitly and solved within its limit", "[harden][iopddl]") {
  // 8,000 nodes, windows of 4,000: the explicit limits have 4,001 x 4,000 memberships; listing
  // them scanned every node per segment before the time limit applied (43 s for a 3 s limit)
  const std::string text = staircase_text(8000, 4000);
  const IopddlInstance inst = read_iopddl(text);
  CHECK(inst.graph.limits.empty());
  REQUIRE(inst.graph.interval_limit);
  CHECK(*inst.graph.interval_limit == 2000);
  CHECK(count_interval_limits(inst.graph.intervals, false) == 4001);
  SolveOptions o;
  o.time_limit_s = 1;
  const auto t0 = std::chrono::steady_clock::now();
  const SolveResult r = solve::solve(inst.graph, o);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  REQUIRE(r.feasible);  // the least-usage labelling at least
  CHECK(inst.graph.feasible(r.labels));
  CHECK(r.lower_bound <= r.cost);
  CHECK(s < test::time_limit_s(20));  // a generous bound for a busy machine (before: 40 s and more)
}

TEST_CASE("issue 22: limits_from_intervals lists maximal sets in O(n log n + output)", "[harden][iopddl]") {
  // the reference answers of the explicit construction
  const auto limits = limits_from_intervals({{0, 3}, {1, 2}, {2, 5}, {4, 5}}, 10, false);
  std::vector<std::vector<std::uint32_t>> sets;
  sets.reserve(limits.size());
  for (const auto& l : limits) sets.push_back(l.nodes);
  CHECK(sets == std::vector<std::vector<std::uint32_t>>{{0, 1}, {0, 2}, {2, 3}});
  // a set that recurs ({0} at [0,1) and [2,3)) is listed once with all_sets
  CHECK(limits_from_intervals({{0, 3}, {1, 2}}, 1, true).size() == 2);
  const IntervalSteps steps({{0, 4}, {1, 2}, {5, 5}});
  CHECK(steps.segments() == 3);  // points 0 1 2 4 (the empty interval adds none)
  CHECK(steps.first(1) == 1);
  CHECK(steps.last(1) == 2);
  CHECK(steps.first(2) == steps.last(2));
  CHECK(steps.live_counts() == std::vector<std::int64_t>{1, 2, 1});
  CHECK(steps.live_segments(true) == std::vector<std::uint32_t>{0, 1});
}

TEST_CASE("issue 22: the IOPDDL reader bounds the nesting of skipped values and its memory", "[harden][iopddl]") {
  // a 2 KB .json.gz of nested lists under an unknown key overflowed the stack (SIGSEGV)
  const std::string deep = "{\"x\": " + std::string(200000, '[') + std::string(200000, ']') + ", \"problem\": {}}";
  CHECK_THROWS_WITH(read_iopddl(deep), Contains("nested deeper than 64 levels"));
  const std::string ok = "{\"x\": " + std::string(64, '[') + std::string(64, ']') + ", \"problem\": {\"nodes\": {\"costs\": [[1]]}}}";
  CHECK(read_iopddl(ok).graph.num_nodes() == 1);
  // memory: the parsed arrays and the graph are counted against the budget
  IopddlReadOptions ro;
  ro.max_memory_bytes = 4096;
  CHECK_THROWS_WITH(read_iopddl(staircase_text(2000, 10), ro), Contains("needs more than 4096 bytes of memory"));
  ro.max_memory_bytes = std::size_t{1} << 30;
  CHECK(read_iopddl(staircase_text(2000, 10), ro).graph.num_nodes() == 2000);
  // a deadline already passed: the reader stops
  ro.deadline = Deadline(std::chrono::steady_clock::now() - std::chrono::seconds(1));
  CHECK_THROWS_AS(read_iopddl(staircase_text(20000, 10), ro), time_limit_reached);
}

TEST_CASE("issue 22: the solver refuses a graph above its memory budget", "[harden][solve]") {
  CostGraph g;
  for (int u = 0; u < 100; ++u) g.add_node(std::vector<cost_t>(100, 1));
  for (std::uint32_t u = 0; u + 1 < 100; ++u) g.add_dense_edge(u, u + 1, std::vector<cost_t>(10000, 2));
  SolveOptions o;
  o.max_memory_bytes = g.memory_bytes();  // the working copy does not fit beside it
  CHECK_THROWS_AS(solve::solve(g, o), memory_limit_reached);
  // amounts below 1 MiB in bytes: a budget of 0 read "0 MiB", as did a small graph
  o.max_memory_bytes = 0;
  CHECK_THROWS_WITH(solve::solve(g, o),
                    Contains("the graph (8 MiB) and the solver's working copy need about 24 MiB, above the memory budget of 0 bytes"));
  CHECK(memory_text(0) == "0 bytes");
  CHECK(memory_text((std::size_t{1} << 20) - 1) == "1048575 bytes");
  CHECK(memory_text(std::size_t{1} << 20) == "1 MiB");
  CHECK(memory_text((std::size_t{1} << 20) + 1) == "2 MiB");
  o.max_memory_bytes = 4 * g.memory_bytes();
  CHECK(solve::solve(g, o).optimal);
  MemoryBudget b(1000);
  b.charge(600, "a");
  CHECK_THROWS_WITH(b.charge(500, "the thing"), Contains("the thing needs 500 bytes more (600 bytes in use), above the memory budget of 1000 bytes"));
  b.release(600);
  b.charge(1000, "b");
  CHECK(b.used() == 1000);
}

TEST_CASE("iopddl: one time step holding every other reads as a plain usage limit", "[harden][iopddl]") {
  // a memory budget as ctshard writes it: every member over [0, 1), the others never live
  const auto instance = [](const std::string& intervals, const std::string& usages) {
    return R"({"problem": {"name": "budget", "nodes": {"intervals": )" + intervals + R"(, "costs": [[5, 1], [4, 0], [3, 3]], "usages": )" + usages +
           R"(}, "edges": {"nodes": [[0, 1]], "costs": [[0, 2, 2, 0]]}, "usage_limit": 10}})";
  };
  const IopddlInstance budget = read_iopddl(instance("[[0, 1], [0, 1], [0, 0]]", "[[2, 8], [1, 6], [50, 50]]"));
  CHECK_FALSE(budget.graph.interval_limit);
  REQUIRE(budget.graph.limits.size() == 1);
  CHECK(budget.graph.limits[0].nodes == std::vector<std::uint32_t>{0, 1});  // node 2 never lives
  CHECK(budget.graph.limits[0].limit == 10);
  // the cheapest labelling (1, 1) uses 14: the optimum within 10 is (0, 1) or (1, 0): 5 + 0 + 2 or 1 + 4 + 2
  const SolveResult r = solve::solve(budget.graph);
  CHECK(r.optimal);
  CHECK(r.cost == 7 + 3);
  // steps that are not all one (no common time), or a negative usage: the implicit interval limit
  CHECK(read_iopddl(instance("[[0, 1], [1, 2], [0, 0]]", "[[2, 8], [1, 6], [50, 50]]")).graph.interval_limit);
  CHECK(read_iopddl(instance("[[0, 1], [0, 1], [0, 0]]", "[[2, 8], [-1, 6], [50, 50]]")).graph.interval_limit);
}
