#pragma once
/// \file solve/solver.hpp
/// The exact solver for a CostGraph: reductions, the dual bound, primal decoding and local search,
/// reduced-cost fixing, then branch and bound on what remains. Anytime: under a time limit it
/// returns the best labelling found, a proven lower bound and the gap (0 = proven optimal).
///
/// Usage limits are handled lazily: every limit removes labels that break it whatever the other
/// nodes do (propagation), and a round solves the problem with the limits enforced so far (the
/// others relaxed). If the round's optimum keeps every limit it is optimal; otherwise the limits
/// it breaks become enforced and the next round starts. Every round's bound is a bound of the
/// full problem.
///
/// \code
///   ctshard::solve::CostGraph g;
///   auto a = g.add_node({0, 5}), b = g.add_node({3, 0});
///   g.add_dense_edge(a, b, {0, 7, 7, 0});
///   const auto r = ctshard::solve::solve(g);  // r.cost == 3, r.lower_bound == 3, r.optimal
/// \endcode

#include <sys/resource.h>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <deque>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "ctshard/error.hpp"
#include "ctshard/solve/branch_and_bound.hpp"
#include "ctshard/solve/budget.hpp"
#include "ctshard/solve/cost_graph.hpp"
#include "ctshard/solve/dual.hpp"
#include "ctshard/solve/elimination.hpp"
#include "ctshard/solve/interval_repair.hpp"
#include "ctshard/solve/interval_steps.hpp"
#include "ctshard/solve/limit_repair.hpp"
#include "ctshard/solve/problem.hpp"
#include "ctshard/solve/reductions.hpp"

namespace ctshard::solve {

/// Diagnostics of a solve; both off by default. The solver reads no environment variable: this is
/// the only way to turn them on.
struct SolveTrace {
  /// Progress lines, each ended by '\n' (per round: the degrees after the reductions, the
  /// elimination plan's work and the elimination's optimum, every dual pass's bound, incumbent and
  /// live size; costs in the graph's cost units); null: none. Not owned, written from the solving
  /// thread, never flushed by the solver.
  std::ostream* stream = nullptr;
  /// When not empty: after every round's reductions, the file at this path is replaced by the live
  /// core, one `n <node> <labels>` line per live node and one `e <u> <v> <rows> <cols>` line per
  /// live edge (input node indices; the last round's core remains). A file that cannot be opened
  /// or written throws ctshard::error naming the path.
  std::string dump_core_path;
};

/// The time a round spends building its working copy, per cell of the graph's matrices (ns): a
/// round that cannot get through it in the time left is not started (solve).
inline constexpr double round_setup_ns_per_cell = 15;

/// The estimated time (s) a round takes to build its working copy of a graph of `graph_bytes`
/// (CostGraph::memory_bytes) at round_setup_ns_per_cell.
[[nodiscard]] inline double round_setup_s(std::size_t graph_bytes) noexcept {
  return static_cast<double>(graph_bytes) / static_cast<double>(sizeof(cost_t)) * round_setup_ns_per_cell * 1e-9;
}

/// What the solver may use, and for how long.
struct SolveOptions {
  /// Wall-clock budget from the call (checked_time_limit_s: NaN or negative is an error, more
  /// than max_time_limit_s is clamped); the best answer so far is returned.
  double time_limit_s = 10.0;
  /// The request's deadline (reading and building the graph included); the solve stops at the
  /// earlier of it and time_limit_s.
  Deadline deadline{};
  /// Memory for the graph and the solver's working copy of it (estimated as three times
  /// CostGraph::memory_bytes: the scaled matrices, classes and messages); a problem above it is
  /// refused with ctshard::error. The exact elimination's tables stay within a quarter of it.
  std::size_t max_memory_bytes = std::numeric_limits<std::size_t>::max();
  /// With an interval limit: the most members the broken time steps of one round add as usage
  /// limits (the most broken steps first; at least one limit per round).
  std::size_t max_step_memberships = std::size_t{1} << 22;
  std::size_t max_dual_iterations = 2000;  ///< per round of the dual
  /// The first dual iterations of a round send each node's whole cost on (`DualWeights::push`):
  /// the bound climbs in a few passes where TRW-S weights creep; TRW-S weights follow.
  std::size_t push_iterations = 32;
  bool reductions = true;  ///< exact reductions (elimination, dominance, ...)
  bool dominance = true;   ///< dominated-label removal (part of the reductions)
  bool dual = true;        ///< message passing (bound, decoding, reduced-cost fixing)
  bool search = true;      ///< branch and bound on what remains
  /// Exact variable elimination of the remaining core when its plan costs at most this much work
  /// (table cells x factors; 0 disables it).
  std::size_t elimination_work = std::size_t{1} << 25;
  std::size_t node_limit = static_cast<std::size_t>(-1);  ///< branch-and-bound nodes per round
  /// A labelling to start from (e.g. the greedy plan): the first incumbent when it is feasible.
  std::vector<std::uint32_t> start{};
  SolveTrace trace{};  ///< progress lines and the core dump (off by default)
  /// Periodic progress lines for a user (`ctshard: 2.0 s  bound 1234.5 µs  incumbent 1300.2 µs
  /// gap 5.06 %`, each ended by '\n' and flushed), one at most every `progress_interval_s`, the
  /// first once the solve has run that long; null: none (the CLI's `--quiet`). Not owned,
  /// written from the solving thread.
  std::ostream* progress = nullptr;
  double progress_interval_s = 1.0;  ///< seconds between two progress lines
  /// With usage limits (not the interval limit): the share of the time budget the Lagrangian
  /// bound (lagrangian_bound) may use before the rounds start; 0 turns it off. The tries of one
  /// limit stop by themselves once converged (lagrangian_tolerance); where they are slow the
  /// bound is what a time-limited run ends with: GPT-2's training step on 2x2x2 in 10 s ended at
  /// gap 0.0018 with 0.8 and 0.050 with 0.5 (one try instead of three), when its tries were
  /// slower than now (it is proven in ~8 s).
  double lagrangian_share = 0.8;
  /// With one usage limit: the Lagrangian tries stop once no multiplier can raise the bound by
  /// more than this share of it (the labellings found over and within the limit give two lines
  /// above the dual function; their crossing caps its maximum). The search closes the rest: on
  /// GPT-2's training step on 2x2x2 the last two of six tries (1.7 s each) gained 7 µs of 78,290.
  double lagrangian_tolerance = 1e-4;
  /// With a Lagrangian bound: the rounds search the penalised graph at its best multipliers
  /// (cost + λ·usage, pruned against the incumbent's cost), so the dual, reduced-cost fixing and
  /// the search see the budget; false searches the input graph under the limits alone.
  bool priced_rounds = true;
  /// With usage limits (not the interval limit): before the Lagrangian bound and the rounds, the
  /// labels dominated in cost *and* usage are removed from the input graph (limits_dominance):
  /// every later phase, the penalised ones included, works on the smaller graph.
  bool limits_dominance = true;
  /// Dominance inside the Lagrangian's relaxed solves. The solve that follows limits_dominance
  /// turns it off: a label dominated in cost and usage is dominated at every multiplier, so those
  /// solves would repeat the same pairwise tests (~3 s each on GPT-2's training step on 2x2x2) to
  /// find a few hundred more labels.
  bool relaxation_dominance = true;
  /// When not forbidden (cost units of the graph): the first round's first reduced-cost fixing
  /// also lists, in SolveResult::ruled_out, every label that no labelling costing at most this
  /// much uses (its star bound is above it). Listed only by a round that removed nothing against
  /// an incumbent before (no start labelling, no limits): the bounds are then those of the whole
  /// graph. lagrangian_bound asks it with the best plan's cost in a try's penalised units.
  cost_t rule_out_above = forbidden;
  /// With an interval limit (IOPDDL) and no feasible plan at the start: the share of the time
  /// left that the first round may use before its best labelling is repaired into a plan
  /// (repair_to_interval_limit); the Lagrangian heuristic of the steps gets the time left
  /// (interval_lagrangian_tries), then the rounds go on.
  double interval_round_share = 0.1;
  /// With an interval limit, when the first round leaves no feasible plan proven optimal: the
  /// tries of the Lagrangian heuristic (detail::interval_lagrangian) looking for plans; 0 turns
  /// the heuristic off.
  std::size_t interval_lagrangian_tries = 3;
  /// The share of the time left after the first round that the heuristic's last try (a lower
  /// multiplier, for the bound) gets; the plan tries share the rest.
  double interval_bound_share = 0.5;
  /// Progress lines show costs divided by this, followed by `progress_unit` (ctshard's sharding
  /// graphs: ns shown as µs; IOPDDL: the instance's units, no unit text).
  double progress_unit_scale = 1.0;
  std::string progress_unit{};
  /// Named after "ctshard" in progress lines when the graph solved is a restriction of the
  /// caller's problem (`ctshard (restricted candidates): ...`): the bound shown is the graph's.
  std::string progress_scope{};
};

/// Counters of one solve.
struct SolveStats {
  std::size_t nodes = 0, labels = 0, edges = 0;                 ///< input
  std::size_t live_nodes = 0, live_labels = 0, live_edges = 0;  ///< after the first reduction
  std::size_t core_nodes = 0, core_labels = 0;                  ///< what branch and bound saw (last round)
  std::size_t eliminated = 0, dominated = 0, labels_removed = 0, reduced_cost_fixed = 0;
  /// Labels removed against the incumbent before a round's reductions (fix_by_threshold; the
  /// pairs it removes are not counted).
  std::size_t threshold_fixed = 0;
  std::size_t dual_iterations = 0, search_nodes = 0, rounds = 0, enforced_limits = 0;
  std::size_t search_splits = 0;     ///< search nodes whose unlabelled part fell apart into components
  std::size_t elimination_work = 0;  ///< work of the exact variable elimination (0: not used)
  std::int64_t scale = 1;            ///< fixed-point factor of the dual
  double reduce_ms = 0, dual_ms = 0, search_ms = 0, elimination_ms = 0;
  /// The Lagrangian bound of the usage limits (lagrangian_bound; INT64_MIN: not computed) and
  /// its time, ms.
  std::int64_t lagrangian_bound = std::numeric_limits<std::int64_t>::min();
  double lagrangian_ms = 0;
  double repair_ms = 0;        ///< moving round optima inside the interval limit (repair_to_interval_limit)
  bool priced_rounds = false;  ///< the rounds searched the penalised graph (SolveOptions::priced_rounds)
  /// Labels removed before the Lagrangian bound as dominated in cost and usage
  /// (SolveOptions::limits_dominance), and that phase's time, ms.
  std::size_t limits_dominated = 0;
  double limits_dominance_ms = 0;
  /// The solver's peak memory, bytes: the larger of its accounting (the working copy with its
  /// messages, twice CostGraph::memory_bytes, the estimate SolveOptions::max_memory_bytes checks)
  /// and the growth of the process's peak resident set over the solve (getrusage ru_maxrss).
  std::size_t peak_memory_bytes = 0;
};

/// The answer.
struct SolveResult {
  std::vector<std::uint32_t> labels;  ///< one label per node; empty when nothing feasible was found
  cost_t cost = forbidden;            ///< objective of `labels` (forbidden when none)
  cost_t lower_bound = 0;             ///< proven: no feasible labelling costs less (forbidden: infeasible)
  bool feasible = false;              ///< `labels` keeps every usage limit and has a finite cost
  bool optimal = false;               ///< cost == lower_bound
  /// "optimal", "infeasible", "time_limit" (the deadline ended it unproven) or "stopped" (a limit
  /// of the options did: node_limit, max_dual_iterations, search or dual off)
  std::string status;
  /// (node, label) pairs no labelling costing at most SolveOptions::rule_out_above uses; empty
  /// when not asked or not listed.
  std::vector<std::pair<std::uint32_t, std::uint32_t>> ruled_out;
  double seconds = 0;
  double cpu_seconds = 0;  ///< processor time of the solve (this thread's process, single-threaded)
  SolveStats stats;

  /// (cost - lower_bound) / cost; 0 when proven optimal, 1 when nothing was found.
  [[nodiscard]] double gap() const noexcept {
    if (!feasible) return 1.0;
    if (cost <= lower_bound) return 0.0;
    return static_cast<double>(cost - lower_bound) / static_cast<double>(std::max<cost_t>(1, std::abs(cost)));
  }
};

namespace detail {

/// Per edge of a graph: its least finite cost (forbidden when it has none) and its largest
/// finite |cost|, in cost units. A matrix shared by many edges (a model's repeated blocks) is read
/// once; every full scan of the input used to read it once per edge.
struct EdgeExtremes {
  std::vector<cost_t> least, largest;
};

[[nodiscard]] inline EdgeExtremes edge_extremes(const CostGraph& g) {
  EdgeExtremes x;
  x.least.reserve(g.edges.size());
  x.largest.reserve(g.edges.size());
  std::unordered_map<const void*, std::pair<cost_t, cost_t>> shared;
  for (const auto& e : g.edges) {
    const auto it = e.shared ? shared.find(e.shared.get()) : shared.end();
    std::pair<cost_t, cost_t> m{forbidden, 0};
    if (it != shared.end()) {
      m = it->second;
    } else {
      for (auto c : e.costs())
        if (!is_forbidden(c)) m = {std::min(m.first, c), std::max(m.second, std::abs(c))};
      if (e.shared) shared.emplace(e.shared.get(), m);
    }
    x.least.push_back(m.first);
    x.largest.push_back(m.second);
  }
  return x;
}

/// The largest magnitude an objective can reach: |constant| plus every node's and edge's largest
/// finite |cost| (cost units). A forbidden constant counts 0: every labelling is forbidden, and
/// the solve answers "infeasible" (the trivial bound is forbidden) rather than refusing its
/// magnitude.
inline long double cost_magnitude(const CostGraph& g, const EdgeExtremes& x) {
  long double total = is_forbidden(g.constant) ? 0 : std::abs(static_cast<long double>(g.constant));
  for (const auto& u : g.unary) {
    cost_t m = 0;
    for (auto c : u)
      if (!is_forbidden(c)) m = std::max(m, std::abs(c));
    total += static_cast<long double>(m);
  }
  for (auto m : x.largest) total += static_cast<long double>(m);
  return total;
}

inline long double cost_magnitude(const CostGraph& g) { return cost_magnitude(g, edge_extremes(g)); }

/// How many of the `requested` push passes (DualWeights::push) a problem whose objective reaches
/// `magnitude` (fine units) may run. Push passes shift the messages by up to about half the
/// magnitude each (TRW-S passes do not), and a message sum at inf / 2 = 2^60 reads as forbidden:
/// the passes stop while the shift is below 2^57 (a problem at the 2^56 limit gets 2).
inline std::size_t push_passes_in_range(long double magnitude, std::size_t requested) {
  const long double room = std::ldexp(1.0L, 58) / std::max(1.0L, magnitude);
  return room >= static_cast<long double>(requested) ? requested : static_cast<std::size_t>(room);
}

/// The fixed-point factor of the dual: a power of two (at most 2^16) that keeps every objective
/// magnitude (`total`, cost_magnitude) times it below 2^56. Throws ctshard::error when the costs
/// are too large even at 1.
inline fine_t choose_scale(long double total) {
  const long double cap = std::ldexp(1.0L, 56);
  if (total > cap) throw error("ctshard::solve: the costs are too large for exact arithmetic (their sum exceeds 2^56)");
  fine_t scale = 1;
  while (scale < (fine_t{1} << 16) && total * static_cast<long double>(scale * 2) <= cap) scale *= 2;
  return scale;
}

inline fine_t choose_scale(const CostGraph& g) { return choose_scale(cost_magnitude(g)); }

/// The trivial lower bound: the constant plus every unary and every edge at its least finite
/// value (forbidden when some node or edge has no finite value).
[[nodiscard]] inline cost_t trivial_bound(const CostGraph& g, const EdgeExtremes& x) {
  cost_t total = g.constant;
  for (const auto& u : g.unary) {
    cost_t m = forbidden;
    for (auto c : u)
      if (!is_forbidden(c)) m = std::min(m, c);
    total = add_costs(total, m);
  }
  for (auto m : x.least) total = add_costs(total, m);
  return total;
}

/// Writes printf-style text to `out` (nothing when null): a trace line or a piece of one.
[[gnu::format(printf, 2, 3)]] inline void trace_printf(std::ostream* out, const char* format, ...) {
  if (out == nullptr) return;
  std::va_list args, again;
  va_start(args, format);
  va_copy(again, args);
  const int n = std::vsnprintf(nullptr, 0, format, args);
  va_end(args);
  if (n > 0) {
    std::string text(static_cast<std::size_t>(n) + 1, '\0');
    std::vsnprintf(text.data(), text.size(), format, again);
    out->write(text.data(), n);
  }
  va_end(again);
}

/// Replaces the file at `path` with the live core of `p` (SolveTrace::dump_core_path). Throws
/// ctshard::error naming the path when it cannot be opened or written.
inline void dump_core(const Problem& p, const std::string& path) {
  std::ofstream f(path, std::ios::out | std::ios::trunc);
  if (!f) throw error("ctshard::solve: cannot open the core dump file '" + path + "' for writing");
  for (std::uint32_t u = 0; u < p.nodes.size(); ++u)
    if (p.nodes[u].alive) f << "n " << u << ' ' << p.num_labels(u) << '\n';
  for (const auto& e : p.edges)
    if (e.alive) f << "e " << e.u << ' ' << e.v << ' ' << e.rows << ' ' << e.cols << '\n';
  f.close();
  if (!f) throw error("ctshard::solve: cannot write the core dump file '" + path + "'");
}

/// Ceil(a / b) for b > 0.
[[nodiscard]] inline fine_t ceil_div(fine_t a, fine_t b) noexcept { return -floor_div(-a, b); }

/// Iterated conditional modes on the live nodes (base costs): each node takes its best label
/// given its neighbours, until nothing changes.
inline void local_search(const Problem& p, std::vector<std::uint32_t>& labels, std::size_t sweeps = 20) {
  std::vector<fine_t> c;
  for (std::size_t s = 0; s < sweeps; ++s) {
    bool changed = false;
    for (std::uint32_t u = 0; u < p.nodes.size(); ++u) {
      const WNode& n = p.nodes[u];
      if (!n.alive || n.theta.size() < 2) continue;
      c.assign(n.theta.begin(), n.theta.end());
      for (auto ei : n.edges) {
        const WEdge& e = p.edges[ei];
        if (e.u == u) {
          const std::uint32_t xb = labels[e.v];
          for (std::size_t a = 0; a < c.size(); ++a) c[a] = sat_add(c[a], e.at(a, xb));
        } else {
          const std::uint32_t xa = labels[e.u];
          for (std::size_t b = 0; b < c.size(); ++b) c[b] = sat_add(c[b], e.at(xa, b));
        }
      }
      const auto best = static_cast<std::uint32_t>(std::min_element(c.begin(), c.end()) - c.begin());
      if (c[best] < c[labels[u]]) {
        labels[u] = best;
        changed = true;
      }
    }
    if (!changed) break;
  }
}

/// A range-maximum tree over a fixed array (iterative segment tree): O(log n) per query.
class RangeMax {
 public:
  explicit RangeMax(const std::vector<std::int64_t>& v) : n_(v.size()), t_(2 * v.size(), std::numeric_limits<std::int64_t>::min()) {
    for (std::size_t i = 0; i < n_; ++i) t_[n_ + i] = v[i];
    for (std::size_t i = n_; i-- > 1;) t_[i] = std::max(t_[2 * i], t_[2 * i + 1]);
  }
  /// max of v[lo, hi) (lo < hi).
  [[nodiscard]] std::int64_t max(std::size_t lo, std::size_t hi) const noexcept {
    std::int64_t m = std::numeric_limits<std::int64_t>::min();
    for (lo += n_, hi += n_; lo < hi; lo >>= 1, hi >>= 1) {
      if (lo & 1) m = std::max(m, t_[lo++]);
      if (hi & 1) m = std::max(m, t_[--hi]);
    }
    return m;
  }

 private:
  std::size_t n_;
  std::vector<std::int64_t> t_;
};

/// The interval limit of a graph (CostGraph::interval_limit) as the solver uses it: a sweep
/// checks a labelling against every time step, the steps it breaks become usage limits, and a
/// label that breaks some step whatever the other nodes take goes at the start.
struct StepLimits {
  const CostGraph& g;
  IntervalSteps steps;
  std::int64_t limit = 0;
  bool negative = false;               ///< some usage is negative: every broken step counts, not only maximal ones
  std::vector<std::uint32_t> maximal;  ///< the segments with a maximal live set (ascending)

  explicit StepLimits(const CostGraph& graph) : g(graph), steps(graph.intervals), limit(*graph.interval_limit) {
    for (const auto& row : g.usage)
      for (auto x : row) negative = negative || x < 0;
    if (!negative) maximal = steps.maximal_segments(false);
  }

  /// Per segment, the usage of `labels`.
  [[nodiscard]] std::vector<std::int64_t> profile(const std::vector<std::uint32_t>& labels) const {
    return steps.sums<std::int64_t>([&](std::size_t u) { return g.usage[u][labels[u]]; });
  }
  /// True when `labels` keeps every time step.
  [[nodiscard]] bool keeps(const std::vector<std::uint32_t>& labels) const {
    for (const std::int64_t x : profile(labels))
      if (x > limit) return false;
    return true;
  }
  /// The usage limits of the time steps `labels` breaks: one per distinct live set, only
  /// maximal ones when no usage is negative (a broken step's live set is then contained in a
  /// broken maximal one), the most broken first, at most `max_memberships` members in all (at
  /// least one limit): a staircase breaks thousands of steps of thousands of nodes each, and the
  /// next round must fit the time left. O(n log n + segments + output).
  [[nodiscard]] std::vector<UsageLimit> broken(const std::vector<std::uint32_t>& labels, std::size_t max_memberships) const {
    const std::vector<std::int64_t> use = profile(labels);
    std::vector<std::uint32_t> segs;
    if (negative) {
      for (std::uint32_t t = 0; t < use.size(); ++t)
        if (use[t] > limit) segs.push_back(t);
    } else {
      for (const auto t : maximal)
        if (use[t] > limit) segs.push_back(t);
    }
    std::vector<UsageLimit> out;
    if (segs.empty()) return out;
    segs = steps.distinct_among(segs);
    const std::vector<std::int64_t> count = steps.live_counts();
    std::stable_sort(segs.begin(), segs.end(), [&](std::uint32_t a, std::uint32_t b) { return use[a] > use[b]; });
    std::size_t total = 0, take = 0;
    while (take < segs.size() && (take == 0 || total + static_cast<std::size_t>(count[segs[take]]) <= max_memberships))
      total += static_cast<std::size_t>(count[segs[take++]]);
    segs.resize(take);
    std::sort(segs.begin(), segs.end());
    for (auto& set : steps.live_sets(segs)) out.push_back({std::move(set), limit});
    return out;
  }
  /// Per node, the most usage any of its labels may have whatever the others take (the least
  /// usages of the other nodes live with it at its fullest step counted): one single-node limit
  /// per node where some finite label exceeds it. False when even the least usages break a step
  /// (no labelling is feasible).
  bool propagate(std::vector<UsageLimit>& out) const {
    const std::size_t n = g.num_nodes();
    std::vector<std::int64_t> least(n, 0);
    for (std::size_t u = 0; u < n; ++u) {
      bool any = false;
      for (std::size_t a = 0; a < g.num_labels(u); ++a)
        if (!is_forbidden(g.unary[u][a]) && (!any || g.usage[u][a] < least[u])) {
          least[u] = g.usage[u][a];
          any = true;
        }
      if (!any) least[u] = *std::min_element(g.usage[u].begin(), g.usage[u].end());
    }
    const std::vector<std::int64_t> floor = steps.sums<std::int64_t>([&](std::size_t u) { return least[u]; });
    for (const std::int64_t x : floor)
      if (x > limit) return false;
    if (floor.empty()) return true;
    const RangeMax peak(floor);
    for (std::size_t u = 0; u < n; ++u) {
      if (steps.first(u) >= steps.last(u)) continue;
      const std::int64_t cap = least[u] + (limit - peak.max(steps.first(u), steps.last(u)));
      bool cut = false;
      for (std::size_t a = 0; a < g.num_labels(u) && !cut; ++a) cut = !is_forbidden(g.unary[u][a]) && g.usage[u][a] > cap;
      if (cut) out.push_back({{static_cast<std::uint32_t>(u)}, cap});
    }
    return true;
  }
};

/// The process's peak resident set so far (getrusage ru_maxrss), bytes; 0 where unknown.
[[nodiscard]] inline std::size_t peak_rss_bytes() noexcept {
  rusage u{};
  if (getrusage(RUSAGE_SELF, &u) != 0) return 0;
  return static_cast<std::size_t>(u.ru_maxrss) * 1024;  // kilobytes on Linux
}

/// SolveOptions::progress: a line at most every interval, from the solve's start.
class ProgressLines {
 public:
  using clock = std::chrono::steady_clock;
  ProgressLines(const SolveOptions& o, clock::time_point start)
      : out_(o.progress),
        start_(start),
        every_(std::max(0.05, o.progress_interval_s)),
        unit_scale_(o.progress_unit_scale > 0 ? o.progress_unit_scale : 1.0),
        unit_(o.progress_unit.empty() ? std::string() : " " + o.progress_unit),
        name_(o.progress_scope.empty() ? std::string("ctshard") : "ctshard (" + o.progress_scope + ")"),
        next_(every_) {}
  /// Writes a line when the next one is due: `bound` (the proven lower bound so far) and
  /// `incumbent` (the best feasible cost, forbidden when none) in cost units.
  void tick(cost_t bound, cost_t incumbent) {
    if (out_ == nullptr) return;
    const double t = std::chrono::duration<double>(clock::now() - start_).count();
    if (t < next_) return;
    next_ = t + every_;
    char line[256];
    const double b = static_cast<double>(bound) / unit_scale_;
    if (is_forbidden(incumbent)) {
      std::snprintf(line, sizeof line, "%s: %.1f s  bound %.1f%s  incumbent none\n", name_.c_str(), t, b, unit_.c_str());
    } else {
      const double c = static_cast<double>(incumbent) / unit_scale_;
      const double gap =
          incumbent <= bound ? 0.0 : static_cast<double>(incumbent - bound) / static_cast<double>(std::max<cost_t>(1, std::abs(incumbent)));
      std::snprintf(line, sizeof line, "%s: %.1f s  bound %.1f%s  incumbent %.1f%s  gap %.2f %%\n", name_.c_str(), t, b, unit_.c_str(), c,
                    unit_.c_str(), 100.0 * gap);
    }
    *out_ << line << std::flush;
  }

 private:
  std::ostream* out_;
  clock::time_point start_;
  double every_, unit_scale_;
  std::string unit_, name_;
  double next_;
};

/// Shared state of a solve across rounds: the usage limits in use (the graph's, then single-node
/// and broken-step limits of its interval limit), which are enforced, and the incumbents.
struct Incumbents {
  const CostGraph& g;
  std::vector<UsageLimit> limits;
  std::vector<char> enforced;
  const StepLimits* steps = nullptr;
  std::vector<std::uint32_t> relax_labels, feasible_labels;
  cost_t relax_cost = forbidden, feasible_cost = forbidden;
  ProgressLines* progress = nullptr;  ///< SolveOptions::progress (null: none)
  cost_t lower = 0;                   ///< the proven bound of the whole problem so far (for progress lines)

  /// Records a full labelling: a relaxation incumbent when it keeps the enforced limits, a
  /// feasible one when it keeps them all (and every time step of the interval limit).
  void consider(const std::vector<std::uint32_t>& labels) {
    const cost_t c = g.evaluate(labels);
    if (is_forbidden(c)) return;
    if (c >= relax_cost && c >= feasible_cost) return;
    bool keeps_enforced = true, keeps_all = true;
    for (std::size_t k = 0; k < limits.size(); ++k) {
      std::int64_t sum = 0;
      for (auto u : limits[k].nodes) sum += g.usage[u][labels[u]];
      if (sum > limits[k].limit) {
        keeps_all = false;
        if (enforced[k]) keeps_enforced = false;
      }
    }
    if (keeps_all && steps != nullptr && c < feasible_cost) keeps_all = steps->keeps(labels);
    if (keeps_enforced && c < relax_cost) {
      relax_cost = c;
      relax_labels = labels;
    }
    if (keeps_all && c < feasible_cost) {
      feasible_cost = c;
      feasible_labels = labels;
    }
  }
  /// The pruning value: no labelling at or above it is of interest.
  [[nodiscard]] cost_t upper() const noexcept { return std::min(relax_cost, feasible_cost); }
  /// Drops the relaxation incumbent, once more limits are enforced than when it was taken (it may
  /// break them, and would prune a round below its own bound).
  void forget_relaxation() noexcept {
    relax_cost = forbidden;
    relax_labels.clear();
  }
};

/// How the graph a round searches relates to the input graph `inc.g`: the input itself (not
/// priced), or its Lagrangian penalisation h (penalised_graph), whose cost of a labelling x is
/// h(x) = 2^shift·L(x) - base with L(x) <= cost(x) for every x that keeps the limits. A round on h
/// prunes against the incumbent's cost mapped into h's units, so no feasible x cheaper than the
/// incumbent is pruned, and labels the budget rules out carry their price. A priced round keeps
/// the whole set {x : h(x) <= target} within the enforced limits (limit propagation and
/// reduced-cost fixing only: dominance and elimination keep the least h, not the least cost), so
/// a finished search proves the incumbent optimal; every limit is enforced (no split search).
struct RoundPricing {
  bool priced = false;
  int shift = 0;
  fine_t base = 0;
  /// The penalty numerators n_k per limit of the graph (LimitPenalty): the searched cost adds
  /// n_k·usage over 2^shift·cost, which a split search takes out again (BranchAndBound::usage_weight).
  std::vector<cost_t> numerators;
  /// A cost in input units (cost_t) as a round cost in fine units of `scale` (the target).
  [[nodiscard]] fine_t to_fine(cost_t c, fine_t scale) const noexcept { return ((c << shift) - base) * scale; }
  /// A round bound in fine units as a bound in input units: ceil((b / scale + base) / 2^shift).
  [[nodiscard]] cost_t to_cost(fine_t b, fine_t scale) const noexcept { return ceil_div(b + base * scale, scale << shift); }
};

/// One round with the limits `inc.enforced`, searching `g` (the input graph `inc.g`, or its
/// penalisation as `pricing` says). Returns the proven lower bound of the input graph's optimum
/// under the enforced limits (forbidden when none keeps them); `complete` tells whether the round
/// finished. `magnitude` is cost_magnitude(g).
inline cost_t solve_round(const CostGraph& g, const SolveOptions& o, Incumbents& inc, fine_t scale, long double magnitude, const Deadline& until,
                          SolveStats& st, bool first_round, bool& complete, const RoundPricing& pricing = {}, StarReport rule_out = {}) {
  using clock = std::chrono::steady_clock;
  const auto ms_since = [](clock::time_point t) { return std::chrono::duration<double, std::milli>(clock::now() - t).count(); };
  const clock::time_point deadline = until.at();
  complete = false;
  std::ostream* const trace = o.trace.stream;
  auto t0 = clock::now();
  // what no labelling below the incumbent can use goes before the reductions look at it (the
  // pairs as the matrices are scaled); then an empty problem means the incumbent is this round's
  // optimum
  const bool below_incumbent = !is_forbidden(inc.upper());
  const std::optional<fine_t> slack = below_incumbent ? threshold_slack(g, scale, pricing.to_fine(inc.upper() - 1, scale)) : std::nullopt;
  Problem p(g, scale, &inc.enforced, &inc.limits, slack.has_value() ? std::max<fine_t>(*slack, 0) : inf);
  if (slack.has_value()) st.threshold_fixed += fix_by_threshold(p, *slack);
  // the labels SolveOptions::rule_out_above asks for come from the first fixing's stars, and only
  // where nothing went against an incumbent before (they bound the whole graph then)
  if (below_incumbent) rule_out = {};
  ReduceOptions ro;
  ro.dominance = o.dominance;
  ro.eliminate = o.reductions;
  ro.deadline = until;
  ReduceStats rs;
  // the reduction counters reach the stats on every way out of the round (they were added on
  // one path only, so `dominated_labels` read 0 whenever elimination or fixing finished)
  struct Tally {
    SolveStats& st;
    const ReduceStats& rs;
    const Problem& p;
    ~Tally() {
      st.dominated += rs.dominated;
      st.labels_removed += rs.labels_removed;
      st.eliminated = p.eliminated.size();
    }
  } tally{st, rs, p};
  // a priced round keeps the exact reductions that hold in any units — propagation, fixing,
  // separable edges and the elimination of nodes whose usage is the same for every label (their
  // priced and real costs differ by a constant) — but not dominance, which would keep the least
  // priced label, not the least costly one
  const auto reduce_now = [&] {
    if (!o.reductions) return propagate(p, rs, until);
    if (!pricing.priced) return reduce(p, ro, rs);
    ReduceOptions priced_ro = ro;
    priced_ro.dominance = false;
    return reduce(p, priced_ro, rs);
  };
  const auto live_count = [&](std::size_t& nodes, std::size_t& labels, std::size_t& edges) {
    nodes = labels = edges = 0;
    for (std::uint32_t u = 0; u < p.nodes.size(); ++u)
      if (p.nodes[u].alive) {
        ++nodes;
        labels += p.num_labels(u);
      }
    for (const auto& e : p.edges) edges += e.alive ? 1 : 0;
  };
  bool ok = !p.infeasible && reduce_now();
  st.reduce_ms += ms_since(t0);
  if (first_round) live_count(st.live_nodes, st.live_labels, st.live_edges);
  if (trace) {
    std::map<std::size_t, std::size_t> deg;
    std::size_t max_l = 0;
    for (std::uint32_t u = 0; u < p.nodes.size(); ++u)
      if (p.nodes[u].alive) {
        ++deg[p.degree(u)];
        max_l = std::max(max_l, p.num_labels(u));
      }
    trace_printf(trace, "after reduction: max labels %zu; degrees:", max_l);
    for (auto [d, c] : deg) trace_printf(trace, " %zu:%zu", d, c);
    trace_printf(trace, "\n");
  }
  if (!o.trace.dump_core_path.empty()) dump_core(p, o.trace.dump_core_path);
  if (!ok) {
    complete = true;
    // nothing below the incumbent; without one, no labelling keeps the enforced limits and the
    // forbidden pairs
    return below_incumbent ? inc.upper() : forbidden;
  }
  if (until.passed()) return std::numeric_limits<cost_t>::min();  // stopped inside the reductions: no bound of this round
  std::vector<std::uint32_t> live(p.nodes.size(), 0);
  // a labelling of the live nodes is priced on the base form first; only an improvement is
  // reconstructed and evaluated on the input graph (with limits: always, feasibility matters)
  const auto consider_live = [&](const std::vector<std::uint32_t>& labels) {
    if (g.limits.empty()) {
      const fine_t c = p.live_cost(labels);
      const cost_t u = inc.upper();
      if (c >= inf || (!is_forbidden(u) && c >= pricing.to_fine(u, scale))) return;
    }
    inc.consider(p.reconstruct(labels));
  };
  const auto target_fine = [&]() -> fine_t {
    const cost_t u = inc.upper();
    return is_forbidden(u) ? inf - 1 : pricing.to_fine(u - 1, scale);
  };
  const auto bound_of = [&](fine_t b) { return pricing.to_cost(b, scale); };
  // a finished exact search with least value `least` (round fine units): nothing below it, and
  // nothing cheaper than the incumbents it was pruned against (a priced round: every labelling
  // within the target was seen, RoundPricing)
  const auto finished = [&](fine_t least) { return least >= inf || pricing.priced ? inc.upper() : std::min(inc.upper(), bound_of(least)); };
  std::size_t live_nodes = 0, live_labels = 0, live_edges = 0;
  live_count(live_nodes, live_labels, live_edges);
  if (live_nodes == 0) {  // everything eliminated: the reconstruction is this round's optimum
    consider_live(live);
    complete = true;
    st.core_nodes = st.core_labels = 0;
    return p.constant >= inf ? inc.upper() : finished(p.constant);
  }
  // exact variable elimination when the core is small enough (no enforced limit: it ignores them)
  fine_t eliminated_optimum = inf;
  const auto try_elimination = [&]() -> bool {
    if (o.elimination_work == 0) return false;
    for (const auto& l : p.limits)
      if (l.enforced && !l.nodes.empty()) return false;
    if (until.passed()) return false;
    auto te = clock::now();
    VariableElimination ve(p);
    // its tables (8-byte cells) within a quarter of the memory budget
    const std::size_t max_cells = std::min(o.elimination_work / 2, o.max_memory_bytes / 32);
    const std::size_t work = ve.plan(o.elimination_work, max_cells);
    if (trace) {
      VariableElimination probe(p);
      trace_printf(trace, "elimination plan: work %.3g (limit %zu)\n",
                   static_cast<double>(probe.plan(std::numeric_limits<std::size_t>::max() / 2, std::numeric_limits<std::size_t>::max() / 2)),
                   o.elimination_work);
    }
    if (work == std::numeric_limits<std::size_t>::max()) return false;
    // about 4 ns per unit of work (Release, one core): a plan that cannot finish in the time
    // left is not started (it would overrun the deadline)
    if (until.is_set() && static_cast<double>(work) * 4e-9 > until.remaining_s()) return false;
    std::vector<std::uint32_t> labels;
    const fine_t opt = ve.solve(labels);
    st.elimination_work += work;
    st.elimination_ms += ms_since(te);
    if (opt < inf) consider_live(labels);
    eliminated_optimum = opt;
    if (trace) trace_printf(trace, "elimination: work %zu, optimum %.3f\n", work, static_cast<double>(opt) / static_cast<double>(scale));
    return true;
  };
  if (try_elimination()) {
    complete = true;
    live_count(st.core_nodes, st.core_labels, live_edges);
    return finished(eliminated_optimum);
  }
  // the trivial bound (every term at its least: a scan of every matrix, 5 % of GPT-2's 2x2x2
  // training-step proof) only where no message pass gives one
  const auto trivial_bound_now = [&p] { return Srmp(p).bound(); };
  fine_t lb_fine = o.dual ? -inf : trivial_bound_now();
  if (o.dual) {
    // Message passing in chunks of two passes; after each chunk, reduced-cost fixing removes the
    // labels that cannot be in a labelling below the incumbent, and the reductions run again on
    // what is left (smaller domains make the next passes cheaper and the bound tighter; GPT-2
    // FSDP: 52 passes in chunks of 2, 76-116 in chunks of 8, with less work in all). The first
    // chunk has four passes: fixing after two removed ~8 % of the labels of GPT-2's training step
    // on 2x2x2 for the price of a pass (StarBounds) and a compaction, in every Lagrangian try.
    auto t1 = clock::now();
    const std::size_t push_iterations = push_passes_in_range(magnitude * static_cast<long double>(scale), o.push_iterations);
    constexpr std::size_t chunk = 2;
    std::size_t total_it = 0;
    // the bound at the end of the last chunks: "stalled" means less than scale / 1024 gained over
    // the last 8 passes with nothing fixed (a 2-pass window would give up on a slow climb)
    constexpr std::size_t stall_window = 8 / chunk;
    std::deque<fine_t> recent;
    while (total_it < o.max_dual_iterations && clock::now() <= deadline) {
      Srmp srmp(p);
      std::vector<std::uint32_t> labels, backward;
      fine_t best_lb = -inf, last_pass_lb = -inf;
      const std::size_t chunk_passes = total_it == 0 ? 2 * chunk : chunk;  // the first: four
      for (std::size_t it = 0; it < chunk_passes && total_it < o.max_dual_iterations; ++it, ++total_it) {
        srmp.set_weights(total_it < push_iterations ? DualWeights::push : DualWeights::trws);
        const std::optional<fine_t> pass_lb = srmp.iterate_until(labels, &backward, deadline);
        if (!pass_lb) break;  // the deadline, inside the pass: nothing of it is used
        const fine_t lb = *pass_lb;
        last_pass_lb = lb;
        ++st.dual_iterations;
        best_lb = std::max(best_lb, lb);
        for (auto* x : {&labels, &backward}) {
          local_search(p, *x, 3);
          consider_live(*x);
        }
        if (trace)
          trace_printf(trace, "dual %zu: bound %.3f, best %lld, live %zu nodes / %zu labels\n", total_it,
                       static_cast<double>(lb) / static_cast<double>(scale), static_cast<long long>(inc.upper()), live_nodes, live_labels);
        if (inc.progress != nullptr) inc.progress->tick(std::max(inc.lower, std::min(bound_of(best_lb), inc.upper())), inc.feasible_cost);
        if (bound_of(best_lb) >= inc.upper() || clock::now() > deadline) break;
      }
      lb_fine = std::max(lb_fine, best_lb);
      if (bound_of(lb_fine) >= inc.upper() || clock::now() > deadline) break;
      // reduced-cost fixing with the state after the last backward pass (every edge's minimum
      // 0, so that pass's bound is the bound of this state): a labelling with x_u = a costs at
      // least lb + the excess of a over u's star (StarBounds; the unary reduced cost
      // theta'_u(a) - min theta'_u alone fixed labels far more slowly: GPT-2 FSDP 52 passes, 10
      // with the star)
      const fine_t last_lb = last_pass_lb;
      const fine_t target = target_fine();
      const std::size_t removed = fix_by_stars(p, last_lb, target, rule_out);
      // later fixings judge a problem already fixed against the round's incumbent: they list
      // nothing (pruning every fixing at the caller's higher target instead kept the Lagrangian
      // tries' problems large: GPT-2's 2x2x2 tries took 10-18 s each instead of 2)
      rule_out = {};
      st.reduced_cost_fixed += removed;
      if (p.infeasible) {  // nothing below the incumbent: it is optimal for this round
        lb_fine = std::max(lb_fine, target + 1);
        break;
      }
      if (removed > 0) {
        auto tr = clock::now();
        const bool feasible = reduce_now();
        st.reduce_ms += ms_since(tr);
        if (!feasible) {
          lb_fine = std::max(lb_fine, target + 1);
          break;
        }
        live_count(live_nodes, live_labels, live_edges);
        if (live_nodes == 0 || try_elimination()) {
          if (live_nodes == 0) {
            live.assign(p.nodes.size(), 0);
            consider_live(live);
            eliminated_optimum = p.constant;
          }
          complete = true;
          st.dual_ms += ms_since(t1);
          live_count(st.core_nodes, st.core_labels, live_edges);
          return finished(eliminated_optimum);
        }
      } else if (recent.size() == stall_window && lb_fine - recent.front() < std::max<fine_t>(1, scale / 1024)) {
        break;  // stalled: the bound no longer moves and nothing can be fixed
      }
      recent.push_back(lb_fine);
      if (recent.size() > stall_window) recent.pop_front();
    }
    st.dual_ms += ms_since(t1);
    if (lb_fine <= -inf) {  // no pass ran (the deadline, or max_dual_iterations 0)
      // past the deadline the trivial bound (a scan of every matrix) would overrun it: the
      // caller's bound of the whole graph stands
      if (clock::now() > deadline) return std::numeric_limits<cost_t>::min();
      lb_fine = trivial_bound_now();
    }
  }
  if (p.infeasible || bound_of(lb_fine) >= inc.upper()) {
    complete = true;
    return inc.upper();
  }
  live_count(st.core_nodes, st.core_labels, live_edges);
  // (a search set up after the deadline would scan every edge's matrix before its first poll)
  if (!o.search || clock::now() > deadline) return bound_of(lb_fine);
  auto t2 = clock::now();
  fine_t least_leaf = inf;
  BranchAndBound bb(
      p, target_fine(),
      [&](const std::vector<std::uint32_t>& labels, fine_t value) {
        least_leaf = std::min(least_leaf, value);
        consider_live(labels);
        return target_fine();
      },
      deadline, o.node_limit);
  for (std::size_t k = 0; k < pricing.numerators.size() && k < p.limits.size(); ++k)
    bb.usage_weight.push_back(saturate(static_cast<wide_t>(pricing.numerators[k]) * scale));
  if (inc.progress != nullptr) {
    const cost_t round_bound = bound_of(lb_fine);
    bb.on_poll = [&inc, round_bound] { inc.progress->tick(std::max(inc.lower, std::min(round_bound, inc.upper())), inc.feasible_cost); };
  }
  const bool done = bb.run();
  st.search_nodes += bb.nodes();
  st.search_splits += bb.splits();
  st.search_ms += ms_since(t2);
  if (done) {
    complete = true;
    // without splits every labelling at or below the target was a leaf: nothing within the limits
    // is cheaper than the incumbent; a split part keeps only its best completion (with one
    // enforced limit: the best mix of its parts' frontiers within the slack), so the least leaf
    // is the bound
    return bb.splits() == 0 ? inc.upper() : finished(least_leaf);
  }
  return std::max(bound_of(lb_fine), bound_of(bb.root_bound()));
}

}  // namespace detail

/// The labelling that takes, at every node, a label of least usage (the cheapest among them;
/// finite unary costs first). Its usage at every step is the least any labelling has there, so it
/// keeps the limits whenever some labelling does: a first feasible plan for usage-limited graphs
/// (IOPDDL) unless its pairs are forbidden.
[[nodiscard]] inline std::vector<std::uint32_t> least_usage_labels(const CostGraph& g) {
  std::vector<std::uint32_t> x(g.num_nodes(), 0);
  if (g.usage.size() != g.num_nodes()) return x;
  for (std::size_t u = 0; u < g.num_nodes(); ++u) {
    const auto better = [&](std::size_t a, std::size_t b) {  // a before b
      const bool fa = !is_forbidden(g.unary[u][a]), fb = !is_forbidden(g.unary[u][b]);
      if (fa != fb) return fa;
      if (g.usage[u][a] != g.usage[u][b]) return g.usage[u][a] < g.usage[u][b];
      return g.unary[u][a] < g.unary[u][b];
    };
    for (std::size_t a = 1; a < g.num_labels(u); ++a)
      if (better(a, x[u])) x[u] = static_cast<std::uint32_t>(a);
  }
  return x;
}

/// Whether some usage limit of `g` (not the interval limit) is above every labelling's reach: the
/// least usage at each of its members (over labels of finite unary cost, least_usage_labels)
/// sums past it. Then no labelling keeps it, and solve answers `infeasible` without its
/// Lagrangian tries (GPT-2's training step below its least footprint spent 0.4 s of 0.45 in them).
[[nodiscard]] inline bool limits_out_of_reach(const CostGraph& g) {
  if (g.limits.empty() || g.usage.size() != g.num_nodes()) return false;
  const std::vector<std::uint32_t> least = least_usage_labels(g);
  return std::any_of(g.limits.begin(), g.limits.end(), [&](const UsageLimit& l) {
    __extension__ typedef __int128 wide;
    wide sum = 0;
    for (auto u : l.nodes) sum += g.usage[u][least[u]];
    return sum > l.limit;
  });
}

[[nodiscard]] SolveResult solve(const CostGraph& g, const SolveOptions& o = {});

namespace detail {
/// solve() without validating `g` first: for the graphs the solver makes from a validated one
/// (a Lagrangian try's penalisation, whose magnitude lagrangian_bound keeps in range; a
/// restriction), with `extremes` = edge_extremes(g) when the caller has them (a try's edges are
/// the same in every try). Validation and the extremes were 3.5 % of GPT-2's 2x2x2 training step.
[[nodiscard]] SolveResult solve_validated(const CostGraph& g, const SolveOptions& o, const EdgeExtremes* extremes = nullptr);
}  // namespace detail

/// Lagrangian multipliers of the usage limits as exact fractions: λ_k = numerators[k] / 2^shift
/// (cost units per usage unit).
struct LimitPenalty {
  std::vector<cost_t> numerators;
  int shift = 0;
};

__extension__ typedef __int128 penalty_wide;  ///< 128-bit sums of multipliers times usages

/// Σ_k n_k·limit_k of `pen` over `g.limits` (128 bits: up to 2^54 · 2^60): what the penalised
/// graph's cost adds over 2^shift·L(x) - 2^shift·g.constant.
[[nodiscard]] inline penalty_wide penalty_offset(const CostGraph& g, const LimitPenalty& pen) {
  using wide = penalty_wide;
  wide offset = 0;
  for (std::size_t k = 0; k < g.limits.size() && k < pen.numerators.size(); ++k) offset += static_cast<wide>(pen.numerators[k]) * g.limits[k].limit;
  return offset;
}

/// Adds Σ_k numerators[k]·usage (over limit k's members of `g`) to `unary` (g's unaries, scaled
/// or not; forbidden stays forbidden). The caller keeps the sums within the exact range.
inline void price_unaries(std::vector<std::vector<cost_t>>& unary, const CostGraph& g, std::span<const cost_t> numerators) {
  for (std::size_t k = 0; k < g.limits.size() && k < numerators.size(); ++k) {
    const cost_t n = numerators[k];
    if (n == 0) continue;
    for (auto u : g.limits[k].nodes)
      for (std::size_t a = 0; a < unary[u].size(); ++a)
        if (!is_forbidden(unary[u][a])) unary[u][a] += n * g.usage[u][a];
  }
}

/// Makes every label marked in `mask` (per node and label; may be empty) forbidden in `unary`:
/// the labels the Lagrangian tries ruled out (LagrangianHooks::ruled_out).
inline void forbid_labels(std::vector<std::vector<cost_t>>& unary, const std::vector<std::vector<char>>& mask) {
  for (std::size_t u = 0; u < mask.size(); ++u)
    for (std::size_t a = 0; a < mask[u].size(); ++a)
      if (mask[u][a]) unary[u][a] = forbidden;
}

/// The penalisation of `g` under `pen`: unaries 2^shift·cost + Σ_k n_k·usage (over limit k's
/// members; forbidden stays forbidden), edges 2^shift·cost, constant 0, usages and limits kept.
/// Its cost of x is 2^shift·L(x) - 2^shift·g.constant + Σ_k n_k·limit_k, where
/// L(x) = cost(x) + Σ_k λ_k·(usage_k(x) - limit_k) <= cost(x) for every x within the limits.
/// The caller keeps the costs within the exact range (lagrangian_bound clamps the numerators).
[[nodiscard]] inline CostGraph penalised_graph(const CostGraph& g, const LimitPenalty& pen) {
  CostGraph h;
  h.unary = g.unary;
  h.edges = g.edges;
  h.usage = g.usage;
  h.limits = g.limits;
  const int d = pen.shift;
  for (auto& row : h.unary)
    for (cost_t& c : row)
      if (!is_forbidden(c)) c <<= d;
  if (d > 0) {
    // edges sharing a matrix keep sharing its scaled copy
    std::unordered_map<const void*, std::shared_ptr<const std::vector<cost_t>>> scaled_shared;
    for (auto& e : h.edges) {
      std::vector<cost_t> scaled = e.costs();
      for (cost_t& c : scaled)
        if (!is_forbidden(c)) c <<= d;
      if (e.shared) {
        auto& copy = scaled_shared[e.shared.get()];
        if (!copy) copy = std::make_shared<const std::vector<cost_t>>(std::move(scaled));
        e.shared = copy;
      } else {
        e.matrix = std::move(scaled);
      }
    }
  }
  price_unaries(h.unary, g, pen.numerators);
  h.constant = 0;
  return h;
}

namespace detail {

/// The options of a relaxation solved inside a solve (a Lagrangian try): `o` without search,
/// start labelling, progress lines or trace, with dominance as `o.relaxation_dominance` says.
[[nodiscard]] inline SolveOptions relaxation_options(const SolveOptions& o) {
  SolveOptions so = o;
  so.search = false;
  so.dominance = o.dominance && o.relaxation_dominance;
  so.start.clear();
  so.progress = nullptr;
  so.trace = {};
  return so;
}

/// ceil(total / 2^shift), exactly (a priced bound back in cost units).
[[nodiscard]] inline penalty_wide ceil_shift(penalty_wide total, int shift) noexcept {
  return total >= 0 ? (total + (penalty_wide{1} << shift) - 1) >> shift : -((-total) >> shift);
}

}  // namespace detail

/// Lagrangian multipliers of the time steps of an interval limit as exact fractions: step
/// (segment) t's multiplier is numerators[t] / 2^shift (cost units per usage unit).
struct StepPenalty {
  std::vector<cost_t> numerators;  ///< one per segment of IntervalSteps(g.intervals), >= 0
  int shift = 0;
};

/// Per node, Σ_t n_t over the segments it lives over (prefix sums: O(n + segments)).
[[nodiscard]] inline std::vector<penalty_wide> step_penalty_per_node(const IntervalSteps& steps, const StepPenalty& pen) {
  std::vector<penalty_wide> prefix(steps.segments() + 1, 0);
  for (std::size_t t = 0; t < steps.segments() && t < pen.numerators.size(); ++t) prefix[t + 1] = prefix[t] + pen.numerators[t];
  for (std::size_t t = std::min(steps.segments(), pen.numerators.size()); t < steps.segments(); ++t) prefix[t + 1] = prefix[t];
  std::vector<penalty_wide> out(steps.nodes(), 0);
  for (std::size_t u = 0; u < steps.nodes(); ++u)
    if (steps.first(u) < steps.last(u)) out[u] = prefix[steps.last(u)] - prefix[steps.first(u)];
  return out;
}

/// The penalisation of `g`'s interval limit under `pen` (the time steps as usage limits, priced
/// as in penalised_graph): unaries 2^shift·cost + usage·Σ_t n_t (over the segments the node lives
/// over; forbidden stays forbidden), edges 2^shift·cost, constant 0, without usages or limits (a
/// relaxation). Its cost of x is 2^shift·(L(x) - g.constant) + Σ_t n_t·limit with L(x) <= cost(x)
/// on every x that keeps every step. Returns std::nullopt when a priced cost would leave
/// [-2^54, 2^54] (the caller lowers the multipliers).
[[nodiscard]] inline std::optional<CostGraph> interval_penalised_graph(const CostGraph& g, const IntervalSteps& steps, const StepPenalty& pen) {
  LimitPenalty scale_only{{}, pen.shift};
  CostGraph h = penalised_graph(g, scale_only);
  const std::vector<penalty_wide> per_node = step_penalty_per_node(steps, pen);
  const penalty_wide cap = penalty_wide{1} << 54;
  for (std::size_t u = 0; u < h.num_nodes(); ++u)
    for (std::size_t a = 0; a < h.unary[u].size(); ++a) {
      if (is_forbidden(h.unary[u][a])) continue;
      if (per_node[u] > cap && g.usage[u][a] != 0) return std::nullopt;  // (the product stays within 128 bits below)
      const penalty_wide c = static_cast<penalty_wide>(h.unary[u][a]) + per_node[u] * g.usage[u][a];
      if (c > cap || c < -cap) return std::nullopt;
      h.unary[u][a] = static_cast<cost_t>(c);
    }
  h.usage.clear();
  h.limits.clear();
  h.intervals.clear();
  h.interval_limit.reset();
  return h;
}

/// Σ_t n_t·limit of `pen` over the segments of `steps` (what interval_penalised_graph's cost adds
/// over 2^shift·(L(x) - g.constant)).
[[nodiscard]] inline penalty_wide step_penalty_offset(const IntervalSteps& steps, const StepPenalty& pen, std::int64_t limit) {
  penalty_wide offset = 0;
  for (std::size_t t = 0; t < steps.segments() && t < pen.numerators.size(); ++t) offset += static_cast<penalty_wide>(pen.numerators[t]) * limit;
  return offset;
}

/// What lagrangian_bound hands back, and what it asks its caller, as its tries go (each optional).
struct LagrangianHooks {
  /// Receives each try's best labelling of the penalised problem (a primal candidate:
  /// repair_to_limits moves it inside the limits; with one limit, a labelling over it comes
  /// already moved, when the repair keeps it).
  std::vector<std::vector<std::uint32_t>>* labellings = nullptr;
  LimitPenalty* best_penalty = nullptr;  ///< receives the multipliers of the best bound
  /// Called after each try with the best bound so far, once `labellings` holds that try's
  /// labelling (solve takes it as a plan and writes a progress line: a try can take seconds, and
  /// its relaxation writes none).
  std::function<void(cost_t)> on_try;
  /// The cost of the caller's best labelling within the limits (forbidden: none), read before each
  /// try: the labels no cheaper labelling uses are ruled out (lagrangian_bound).
  std::function<cost_t()> plan_cost;
  /// Receives, per node and label of g, 1 where the label was ruled out: no labelling within the
  /// limits cheaper than the best plan the tries saw uses it (empty when none was).
  std::vector<std::vector<char>>* ruled_out = nullptr;
  /// Receives the cost the labels were ruled out below (that plan's; forbidden when none was).
  cost_t* ruled_out_below = nullptr;
  /// Receives penalised_graph(g, *best_penalty) when a bound was found, made of the tries' scaled
  /// matrices (not scaled again: a copy of every matrix, 2.5 % of GPT-2's 2x2x2 training step).
  CostGraph* best_penalised = nullptr;
};

/// The Lagrangian bound of the usage limits `g.limits` (the interval limit's steps stay out:
/// dropping a constraint only relaxes). For multipliers λ_k >= 0 (cost per usage unit), the
/// problem without limits whose unaries are cost + Σ_k λ_k·usage (over limit k's members) and
/// whose constant is lowered by Σ_k λ_k·limit_k is a lower bound of the constrained optimum. Proof:
/// for every feasible x, Σ_k λ_k·(usage_k(x) - limit_k) <= 0, so L_λ(x) <= cost(x); hence
/// min_x L_λ(x) <= min_{x feasible} cost(x), and any bound of min L_λ is one of the optimum.
/// λ_k = n_k / 2^d (n_k integer, 2^d chosen so the scaled costs stay within 2^54): the scaled
/// problem 2^d·cost + Σ n_k·usage has integer costs, its dual bound B gives ceil((B - Σ n_k·limit_k)
/// / 2^d). λ_k is tuned per limit by bisection on the subgradient (usage of the dual's best
/// labelling minus limit_k): doubling while positive, halving the bracket after (one limit:
/// Kelley's cutting planes over every labelling seen, see the body). A λ that would put a cost beyond 2^54, or the priced problem's magnitude (summed
/// over the nodes) beyond 2^55, is clamped (to 0 at worst); a try whose clamped multipliers repeat the last ends the tries. Returns the best bound
/// over at most `iterations` tries before `until`, or std::nullopt when none was found (or a cost exceeds 2^52, or the costs sum past 2^53: no room
/// for λ); `hooks` (LagrangianHooks) take the tries' labellings and multipliers and give the best plan's cost.
///
/// Labels ruled out on the way: with a plan of cost P within the limits, a try's first reduced-cost fixing lists the labels whose star bound in the
/// penalised graph exceeds the image of P - 1 (SolveOptions::rule_out_above). No labelling within the limits cheaper than P uses them (its
/// penalised cost is at most that image), so the later tries and the priced rounds start without them (forbidden unaries): on GPT-2's 2x2x2
/// training step 232 k of 513 k labels by the last try, and the priced round's dual ran on 131 k labels instead of 409 k. Their bounds then hold
/// for labellings cheaper than P only, so a bound is capped at P (the plan's cost, which the caller holds).
[[nodiscard]] inline std::optional<cost_t> lagrangian_bound(const CostGraph& g, const SolveOptions& o, const Deadline& until,
                                                            std::size_t iterations = 12, const LagrangianHooks& hooks = {}) {
  if (g.limits.empty() || g.usage.size() != g.num_nodes()) return std::nullopt;
  // the relaxation's copy of the graph, then a try's working copy: not started when the time left
  // cannot cover a round's setup (solve; a 190 MB graph took 0.45 s past a passed deadline)
  if (until.passed() || (until.is_set() && until.remaining_s() < round_setup_s(g.memory_bytes()))) return std::nullopt;
  __extension__ typedef __int128 wide;  // Σ λ·limit: up to 2^54 · 2^60
  constexpr long double cap = static_cast<long double>(cost_t{1} << 54);
  long double max_cost = 1;
  for (const auto& row : g.unary)
    for (cost_t c : row)
      if (!is_forbidden(c)) max_cost = std::max(max_cost, std::abs(static_cast<long double>(c)));
  for (const cost_t c : detail::edge_extremes(g).largest) max_cost = std::max(max_cost, static_cast<long double>(c));  // (shared matrices read once)
  if (max_cost > std::ldexp(1.0L, 52)) return std::nullopt;  // no room left for the usage terms
  int d = 0;                                                 // 2^d · max_cost <= 2^52: room left for the usage terms
  while (d < 20 && std::ldexp(max_cost, d + 1) <= std::ldexp(1.0L, 52)) ++d;
  // the relaxation's magnitude (what its solve's choose_scale sums: every node's largest |unary|
  // and every edge's largest) within 2^53 too, so the usage terms have room below its 2^56
  const long double magnitude = detail::cost_magnitude(g);
  while (d > 0 && std::ldexp(magnitude, d) > std::ldexp(1.0L, 53)) --d;
  if (magnitude > std::ldexp(1.0L, 53)) return std::nullopt;
  const long double den = std::ldexp(1.0L, d);
  const std::size_t m = g.limits.size();
  // per limit: the members' largest |usage| sum per node (a node in several limits adds up)
  std::vector<long double> node_usage_max(g.num_nodes(), 0);
  for (std::size_t u = 0; u < g.num_nodes(); ++u)
    for (auto x : g.usage[u]) node_usage_max[u] = std::max(node_usage_max[u], std::abs(static_cast<long double>(x)));
  long double usage_scale = 1;  // a typical usage: the largest limit's average per member
  for (const auto& l : g.limits)
    if (!l.nodes.empty())
      usage_scale = std::max(usage_scale, static_cast<long double>(std::max<std::int64_t>(1, std::abs(l.limit))) / l.nodes.size());
  long double cost_sum = 0;
  for (const auto& row : g.unary) {
    long double lo = 0;
    for (cost_t c : row)
      if (!is_forbidden(c)) lo = std::max(lo, std::abs(static_cast<long double>(c)));
    cost_sum += lo;
  }
  // first try: λ at the cost per usage unit of a typical node
  const long double lambda0 = std::max(1.0L / den, cost_sum / std::max<std::size_t>(1, g.num_nodes()) / usage_scale);
  std::vector<long double> lambda(m, lambda0), lo(m, 0), hi(m, -1);
  // One limit (a memory budget): Kelley's cutting planes on the dual. Start at λ = 0 (the
  // unconstrained optimum; within the limit it is the answer), then double λ0 until a labelling
  // keeps the limit. Every labelling x seen (each try's, its repair inside the limit, the
  // labelling of least usage) gives a line c(x) + λ·(u(x) - limit) above the dual function; the
  // next λ is where their lower envelope peaks (an over line crossing a within line), until λ
  // repeats (the dual optimum when the tries are exact: the dual is concave and piecewise linear,
  // and each try adds the line that touches it there). GPT-2's training step needed 5-12
  // subgradient tries from λ0 for what this finds in 4. With only the last labelling of each
  // side, and no repair once one within the limit was known, the Llama shape's training step on
  // 2x4 took 6 tries instead of 4 (1.8-2.5 s instead of 1.5-1.9, the same bound): the labelling of least
  // usage put the second try at 25x the multiplier the budget needs.
  struct Side {
    bool seen = false;
    cost_t cost = 0;
    wide usage = 0;
  } within;                // the cheapest labelling seen within the limit
  bool seen_over = false;  // some try's labelling broke the limit
  // a labelling's cost and usage of the one limit (seen: its cost is finite)
  const auto side_of = [&](const std::vector<std::uint32_t>& x) {
    wide usage = 0;
    for (auto u : g.limits[0].nodes) usage += g.usage[u][x[u]];
    const cost_t c = g.evaluate(x);
    return Side{!is_forbidden(c), c, usage};
  };
  const auto keeps_limit = [&](const Side& x) { return x.seen && x.usage <= g.limits[0].limit; };
  // every labelling seen (cost, usage): each line cost + λ·(usage - limit) lies above the dual
  // function, so their lower envelope is a model of it (Kelley's cutting planes) whose maximum
  // caps the bound; the next λ is where that maximum is
  std::vector<Side> lines;
  const auto see = [&](const Side& x) {
    if (!x.seen) return;
    lines.push_back(x);
    if (keeps_limit(x) && (!within.seen || x.cost < within.cost)) within = x;
  };
  // the model's maximum over λ >= 0 and where it is (valid when some line keeps the limit and some
  // breaks it: the maximum is where an increasing line crosses a non-increasing one, or at 0)
  const auto model_top = [&]() -> std::pair<long double, long double> {
    const long double limit = static_cast<long double>(g.limits[0].limit);
    const auto at = [&](long double lam) {
      long double v = std::numeric_limits<long double>::max();
      for (const Side& x : lines) v = std::min(v, static_cast<long double>(x.cost) + lam * (static_cast<long double>(x.usage) - limit));
      return v;
    };
    std::pair<long double, long double> top{at(0), 0};  // (value, λ)
    for (const Side& a : lines)
      for (const Side& b : lines)
        if (a.usage > g.limits[0].limit && b.usage <= g.limits[0].limit) {
          const long double lam = std::max(0.0L, static_cast<long double>(b.cost - a.cost) / static_cast<long double>(a.usage - b.usage));
          if (const long double v = at(lam); v > top.first) top = {v, lam};
        }
    return top;
  };
  if (m == 1) {
    lambda[0] = 0;
    // the labelling of least usage, when finite and within the limit, is the first within it
    if (const Side x = side_of(least_usage_labels(g)); keeps_limit(x)) see(x);
  }
  std::optional<cost_t> best;
  std::vector<cost_t> last_num;  // the last try's numerators
  SolveOptions so = detail::relaxation_options(o);
  constexpr double first_try_share = 0.5;
  // the labels ruled out, and the cost of the plan they were ruled out against (the least so far:
  // no labelling within the limits below it uses any of them)
  std::vector<std::vector<char>> out;
  std::size_t ruled = 0;
  cost_t plan_cap = forbidden, plan = forbidden;
  std::optional<LimitPenalty> best_pen;  // the multipliers of the best bound
  // the relaxation's edges and scaled unaries, once: each try only re-prices the unaries
  CostGraph h = penalised_graph(g, LimitPenalty{{}, d});
  h.usage.clear();
  h.limits.clear();
  const std::vector<std::vector<cost_t>> scaled_unary = h.unary;
  const detail::EdgeExtremes h_extremes = detail::edge_extremes(h);
  for (std::size_t it = 0; it < iterations && !until.passed(); ++it) {
    // the integer numerators, clamped so every node's added usage term stays within the cap
    std::vector<cost_t> num(m);
    for (std::size_t k = 0; k < m; ++k) num[k] = static_cast<cost_t>(std::llround(std::min(lambda[k] * den, cap)));
    std::vector<long double> added(g.num_nodes(), 0);
    for (std::size_t k = 0; k < m; ++k)
      for (auto u : g.limits[k].nodes) added[u] += static_cast<long double>(num[k]) * node_usage_max[u];
    long double worst = 0, total_added = 0;
    for (auto a : added) {
      worst = std::max(worst, a);
      total_added += a;
    }
    // clamp all numerators by the same factor: every node's priced cost within 2^54, and the
    // priced problem's magnitude within 2^55 (a sum over every node: GPT-2's training step at a
    // 2 GiB budget doubled λ until the relaxation's solve gave up on exact arithmetic)
    long double f = 1;
    if (worst + std::ldexp(max_cost, d) > cap) f = std::min(f, std::max(0.0L, (cap - std::ldexp(max_cost, d)) / worst));
    if (const long double room = std::ldexp(1.0L, 55) - std::ldexp(magnitude, d); total_added > room)
      f = std::min(f, std::max(0.0L, room / total_added));
    if (f < 1)
      for (auto& n : num) n = static_cast<cost_t>(std::floor(static_cast<long double>(n) * f));
    if (num == last_num) break;  // the same multipliers as the last try (clamped): the same answer
    last_num = num;
    const LimitPenalty pen{num, d};
    h.unary = scaled_unary;
    price_unaries(h.unary, g, pen.numerators);
    forbid_labels(h.unary, out);
    const wide offset = penalty_offset(g, pen);  // taken off after the solve (the constant need not hold it)
    // the best plan's cost minus one in the penalised units: 2^d·(P - 1 - constant) + Σ n_k·limit_k
    if (hooks.plan_cost) plan = std::min(plan, hooks.plan_cost());
    if (m == 1 && within.seen) plan = std::min(plan, within.cost);
    so.rule_out_above = forbidden;
    if (!is_forbidden(plan))
      if (const wide t = (static_cast<wide>(plan) - 1 - g.constant) * (wide{1} << d) + offset; t > -(wide{1} << 60) && t < (wide{1} << 60))
        so.rule_out_above = static_cast<cost_t>(t);
    // the λ = 0 try of one limit gets at most half the time left: its bound is the unconstrained
    // optimum's, the weakest of the tries, and where its dual creeps it left no time for the
    // multipliers that price the budget (the Llama shape's 2x2x2 training step: 0.05 % gained in
    // 36 passes, the whole 6.8 s of the tries)
    so.deadline = m == 1 && it == 0 ? Deadline::after(first_try_share * until.remaining_s()).earlier(until) : until;
    const SolveResult r = detail::solve_validated(h, so, &h_extremes);
    if (is_forbidden(r.lower_bound) && ruled > 0) {  // no labelling cheaper than `plan_cap` is left: that plan is optimal
      best = std::max(best.value_or(plan_cap), plan_cap);
      break;
    }
    if (r.lower_bound == std::numeric_limits<cost_t>::min() || is_forbidden(r.lower_bound)) break;
    const wide total = static_cast<wide>(r.lower_bound) + static_cast<wide>(g.constant) * (wide{1} << d) - offset;
    const cost_t b = std::min(static_cast<cost_t>(detail::ceil_shift(total, d)), plan_cap);
    if (!best || b > *best) {
      best = b;
      best_pen = pen;
    }
    if (!r.ruled_out.empty() && !is_forbidden(so.rule_out_above)) {
      if (out.empty()) {
        out.resize(g.num_nodes());
        for (std::size_t u = 0; u < g.num_nodes(); ++u) out[u].assign(g.num_labels(u), 0);
      }
      for (const auto& [u, a] : r.ruled_out)
        if (out[u][a] == 0) {
          out[u][a] = 1;
          ++ruled;
        }
      plan_cap = plan;
    }
    // with one limit: the try's labelling is a line of the model; one over the limit is moved
    // inside it (repair_to_limits) — a plan, and a line near the budget (GPT-2's training step on
    // 2x2x2: without one, λ0 overshot ~130x and three more tries came back down) — and the caller
    // gets the repaired labelling instead (solve would repair it again)
    Side found;
    std::vector<std::uint32_t> candidate = r.labels;
    if (m == 1 && r.feasible) {
      found = side_of(r.labels);
      see(found);
      if (found.seen && !keeps_limit(found)) {
        seen_over = true;
        std::vector<std::uint32_t> x = r.labels;
        if (repair_to_limits(g, x, until))
          if (const Side repaired = side_of(x); keeps_limit(repaired)) {
            see(repaired);
            candidate = std::move(x);
          }
      }
    }
    if (r.feasible && hooks.labellings != nullptr) hooks.labellings->push_back(std::move(candidate));
    if (hooks.on_try) hooks.on_try(*best);
    if (!r.feasible) break;
    if (m == 1) {
      if (!found.seen) break;
      if (!seen_over) break;  // the relaxation's optimum keeps the limit: nothing to price
      long double next = 0;
      if (within.seen) {
        const auto [top, at] = model_top();
        next = at;
        // the model's maximum caps the dual's, and the cost of a labelling within the limit caps
        // the optimum: close enough to the best bound, no multiplier can raise it by much
        if (best && std::min(top, static_cast<long double>(within.cost)) - static_cast<long double>(*best) <=
                        o.lagrangian_tolerance * std::abs(static_cast<long double>(*best)))
          break;
      } else {
        next = lambda[0] == 0 ? lambda0 : 2 * lambda[0];
      }
      if (std::llround(std::min(next * den, cap)) == num[0]) break;  // λ repeats
      lambda[0] = next;
      continue;
    }
    bool moved = false;
    for (std::size_t k = 0; k < m; ++k) {  // the subgradient: usage of the best labelling - limit
      wide sum = 0;
      for (auto u : g.limits[k].nodes) sum += g.usage[u][r.labels[u]];
      if (sum > g.limits[k].limit) {
        lo[k] = lambda[k];
        lambda[k] = hi[k] < 0 ? 2 * lambda[k] : (lo[k] + hi[k]) / 2;
        moved = true;
      } else if (sum < g.limits[k].limit && lambda[k] > 0) {
        hi[k] = lambda[k];
        lambda[k] = (lo[k] + hi[k]) / 2;
        moved = true;
      }
    }
    if (!moved) break;  // complementary slackness at the best labelling
  }
  if (hooks.ruled_out != nullptr && ruled > 0) *hooks.ruled_out = std::move(out);
  if (hooks.best_penalty != nullptr && best_pen) *hooks.best_penalty = *best_pen;
  if (hooks.best_penalised != nullptr && best_pen) {  // penalised_graph(g, *best_pen)
    h.unary = scaled_unary;
    price_unaries(h.unary, g, best_pen->numerators);
    h.usage = g.usage;
    h.limits = g.limits;
    h.constant = 0;
    *hooks.best_penalised = std::move(h);
  }
  if (hooks.ruled_out_below != nullptr) *hooks.ruled_out_below = ruled > 0 ? plan_cap : forbidden;
  return best;
}

namespace detail {

/// The labels (input ids, ascending) of each node of `g` that remain after the reductions that
/// keep, for every labelling within the usage limits, one no dearer that keeps them too: limit
/// propagation and arc consistency with every limit enforced, nodes left with one label fixed,
/// and dominance in cost *and* usage (label a replaces b when a is no dearer than b with every
/// labelling of the neighbours and uses no more: remove_dominated's usage test). Replacing b by a
/// in a labelling within the limits keeps it within them, so the optimum over the remaining
/// labels is the optimum of `g`. No elimination (it would fold usages). Labels of `protect`
/// (a labelling, or empty) are kept. std::nullopt when the limits are infeasible or `until`
/// passed (then nothing is known to be removable).
[[nodiscard]] inline std::optional<std::vector<std::vector<std::uint32_t>>> labels_within_limits(const CostGraph& g, const Deadline& until,
                                                                                                 std::span<const std::uint32_t> protect,
                                                                                                 std::size_t& removed) {
  removed = 0;
  const std::vector<char> all(g.limits.size(), 1);
  Problem p(g, 1, &all, &g.limits);
  ReduceOptions ro;
  ro.eliminate = false;
  ro.deadline = until;
  ReduceStats rs;
  if (!reduce_labels(p, ro, rs, Dominance::apply) || until.passed()) return std::nullopt;
  std::vector<std::vector<std::uint32_t>> kept(g.num_nodes());
  for (std::size_t u = 0; u < g.num_nodes(); ++u) {
    std::vector<std::uint32_t>& k = kept[u];
    k = p.nodes[u].label;
    if (!protect.empty() && std::find(k.begin(), k.end(), protect[u]) == k.end()) k.push_back(protect[u]);
    std::sort(k.begin(), k.end());
    removed += g.num_labels(u) - k.size();
  }
  return kept;
}

/// `g` with node u's labels restricted to `kept[u]` (input ids; label i of the result is
/// kept[u][i]): unary costs, usages and edge class maps restricted, edge matrices shared, limits
/// and the constant unchanged.
[[nodiscard]] inline CostGraph restricted_graph(const CostGraph& g, const std::vector<std::vector<std::uint32_t>>& kept) {
  CostGraph r;
  r.constant = g.constant;
  r.limits = g.limits;
  r.intervals = g.intervals;
  r.interval_limit = g.interval_limit;
  const auto pick = [&](const auto& row, std::size_t u) {
    std::remove_cvref_t<decltype(row)> out;
    out.reserve(kept[u].size());
    for (auto a : kept[u]) out.push_back(row[a]);
    return out;
  };
  for (std::size_t u = 0; u < g.num_nodes(); ++u) r.unary.push_back(pick(g.unary[u], u));
  for (std::size_t u = 0; u < g.usage.size(); ++u) r.usage.push_back(pick(g.usage[u], u));
  for (const CostEdge& e : g.edges) {
    CostEdge x;
    x.u = e.u;
    x.v = e.v;
    x.rows = e.rows;
    x.cols = e.cols;
    x.row_class = pick(e.row_class, e.u);
    x.col_class = pick(e.col_class, e.v);
    x.shared = e.shared ? e.shared : std::make_shared<const std::vector<cost_t>>(e.matrix);
    r.edges.push_back(std::move(x));
  }
  return r;
}

/// The first multiplier of interval_lagrangian (cost per usage unit per time step): the sum over
/// nodes of their finite unary cost range over the sum of their usage range times the segments
/// they live over (a label change's cost against its usage over its lifetime). 0 when no node's
/// usage varies.
[[nodiscard]] inline long double first_step_multiplier(const CostGraph& g, const IntervalSteps& steps) {
  long double cost_range = 0, usage_range = 0;
  for (std::size_t u = 0; u < g.num_nodes(); ++u) {
    if (steps.first(u) >= steps.last(u)) continue;
    cost_t lo = forbidden, hi = -forbidden;
    for (const cost_t c : g.unary[u])
      if (!is_forbidden(c)) {
        lo = std::min(lo, c);
        hi = std::max(hi, c);
      }
    if (lo <= hi) cost_range += static_cast<long double>(hi - lo);
    const auto [umin, umax] = std::minmax_element(g.usage[u].begin(), g.usage[u].end());
    usage_range += static_cast<long double>(*umax - *umin) * (steps.last(u) - steps.first(u));
  }
  return usage_range > 0 ? std::max(cost_range, 1.0L) / usage_range : 0;
}

/// The Lagrangian heuristic of an interval limit (IOPDDL): for one multiplier μ on every time
/// step with live nodes, the penalisation (interval_penalised_graph) is solved without search
/// (reductions, the dual and its decoded labellings, `o`'s other settings), its best labelling is
/// recorded and moved inside every step (repair_to_interval_limit). `primal_tries` tries share
/// (1 - bound_share) of the time left: μ starts at first_step_multiplier and is multiplied by 4
/// while the repair fails; once it succeeds the next tries look around that μ (×√2, ×1/√2, ×2,
/// ×1/2: on IOPDDL A the plans are cheapest near the first μ, and a lower μ gives a poorer
/// labelling of the penalisation within the same time). A last try gets the rest of the time at
/// a quarter of that μ, for the bound (on A the best of the μ tried within 20 s: a lower μ costs
/// less in Σ μ·limit, a higher one prices the steps). Returns the best Lagrangian bound of the
/// tries (each a relaxation: on every x keeping every step, Σ_t μ·(use_t(x) - limit) <= 0;
/// computed exactly in 128 bits), std::nullopt when none was found or the costs leave no room
/// for the prices.
inline std::optional<cost_t> interval_lagrangian(const CostGraph& g, const IntervalSteps& steps, const SolveOptions& o, const Deadline& until,
                                                 std::size_t primal_tries, double bound_share, Incumbents& inc) {
  const long double magnitude = cost_magnitude(g);
  if (magnitude > std::ldexp(1.0L, 52) || steps.segments() == 0) return std::nullopt;
  int d = 0;  // 2^d · magnitude <= 2^52: room left for the usage terms
  while (d < 20 && std::ldexp(magnitude, d + 1) <= std::ldexp(1.0L, 52)) ++d;
  long double anchor = first_step_multiplier(g, steps);
  if (anchor <= 0) return std::nullopt;
  const std::vector<std::int64_t> live = steps.live_counts();
  std::optional<cost_t> best;
  SolveOptions so = relaxation_options(o);
  // one try at μ within `slice`: its bound, its labelling recorded and repaired; false when no
  // labelling was repaired (or μ's prices leave the exact range)
  const auto attempt = [&](long double mu, const Deadline& slice) -> bool {
    const auto n = static_cast<cost_t>(std::max(1.0L, std::round(std::ldexp(mu, d))));
    StepPenalty pen{std::vector<cost_t>(steps.segments(), 0), d};
    for (std::size_t t = 0; t < steps.segments(); ++t)
      if (live[t] > 0) pen.numerators[t] = n;
    std::optional<CostGraph> h = interval_penalised_graph(g, steps, pen);
    if (!h || cost_magnitude(*h) > std::ldexp(1.0L, 55)) return false;
    so.deadline = slice;
    so.time_limit_s = std::max(0.0, slice.remaining_s());
    const SolveResult r = solve_validated(*h, so);
    if (r.lower_bound != std::numeric_limits<cost_t>::min() && !is_forbidden(r.lower_bound)) {
      const penalty_wide total = static_cast<penalty_wide>(r.lower_bound) + (static_cast<penalty_wide>(g.constant) << d) -
                                 step_penalty_offset(steps, pen, *g.interval_limit);
      const auto q = static_cast<cost_t>(ceil_shift(total, d));
      if (!best || q > *best) best = q;
    }
    bool ok = false;
    if (r.feasible) {
      std::vector<std::uint32_t> x = r.labels;
      inc.consider(x);
      ok = repair_to_interval_limit(g, steps, x, until);
      if (ok) inc.consider(x);
    }
    if (inc.progress != nullptr) inc.progress->tick(std::max(inc.lower, best.value_or(inc.lower)), inc.feasible_cost);
    return ok;
  };
  const Deadline primal_until = Deadline::after((1.0 - std::clamp(bound_share, 0.0, 1.0)) * until.remaining_s()).earlier(until);
  const long double root2 = std::sqrt(2.0L);
  const long double around[] = {root2, 1 / root2, 2, 0.5L};
  bool found = false;
  for (std::size_t k = 0, next = 0; k < primal_tries && !primal_until.passed(); ++k) {
    const Deadline slice = Deadline::after(primal_until.remaining_s() / static_cast<double>(primal_tries - k)).earlier(primal_until);
    const long double mu = found ? anchor * around[next++ % std::size(around)] : anchor;
    const bool ok = attempt(mu, slice);
    if (!found && ok) found = true;
    else if (!found) anchor *= 4;
  }
  if (bound_share > 0 && !until.passed()) attempt(anchor / 4, until);
  return best;
}

}  // namespace detail

/// The trivial lower bound of `g`: the constant plus every unary and every edge at its least
/// finite value (forbidden when some node or edge has no finite value).
[[nodiscard]] inline cost_t trivial_bound(const CostGraph& g) { return detail::trivial_bound(g, detail::edge_extremes(g)); }

/// Solves `g` (see the file comment). Throws ctshard::error for a malformed graph (costs outside
/// the exact range and usage sums beyond 2^60 included, CostGraph::validate), a start labelling
/// of the wrong size, a NaN or negative time limit; memory_limit_reached (a ctshard::error) for a
/// graph above `o.max_memory_bytes`.
inline SolveResult solve(const CostGraph& g, const SolveOptions& o) {
  g.validate();
  return detail::solve_validated(g, o);
}

inline SolveResult detail::solve_validated(const CostGraph& g, const SolveOptions& o, const EdgeExtremes* given_extremes) {
  using clock = std::chrono::steady_clock;
  const auto start = clock::now();
  const std::clock_t cpu_start = std::clock();
  const Deadline until = Deadline::after(o.time_limit_s, "ctshard::solve: SolveOptions::time_limit_s").earlier(o.deadline);
  if (!o.start.empty()) {
    if (o.start.size() != g.num_nodes()) throw error("ctshard::solve: the start labelling has the wrong size");
    (void)g.evaluate(o.start);  // a label out of range: ctshard::error naming it
  }
  const bool out_of_reach = limits_out_of_reach(g);  // infeasible: no limits dominance, no tries
  if (o.limits_dominance && o.reductions && o.dominance && !g.limits.empty() && !g.interval_limit && !out_of_reach) {
    // solve the graph without the labels dominated in cost and usage, then map the labels back
    std::size_t removed = 0;
    const auto kept = detail::labels_within_limits(g, until, o.start, removed);
    const double ms = std::chrono::duration<double, std::milli>(clock::now() - start).count();
    if (kept && removed > 0) {
      SolveOptions inner = o;
      inner.limits_dominance = false;
      inner.relaxation_dominance = false;
      inner.deadline = until;
      for (std::size_t u = 0; u < inner.start.size(); ++u)
        inner.start[u] = static_cast<std::uint32_t>(std::lower_bound((*kept)[u].begin(), (*kept)[u].end(), o.start[u]) - (*kept)[u].begin());
      SolveResult r = solve_validated(restricted_graph(g, *kept), inner);
      for (std::size_t u = 0; u < r.labels.size(); ++u) r.labels[u] = (*kept)[u][r.labels[u]];
      r.stats.labels = g.total_labels();
      r.stats.limits_dominated = removed;
      r.stats.limits_dominance_ms = ms;
      r.seconds = std::chrono::duration<double>(clock::now() - start).count();
      r.cpu_seconds = static_cast<double>(std::clock() - cpu_start) / CLOCKS_PER_SEC;
      return r;
    }
  }
  const std::size_t bytes = g.memory_bytes();
  if (bytes > o.max_memory_bytes / 3)
    throw memory_limit_reached("ctshard::solve: the graph (" + memory_text(bytes) + ") and the solver's working copy need about " +
                               memory_text(3 * bytes) + ", above the memory budget of " + memory_text(o.max_memory_bytes));
  SolveResult r;
  r.stats.nodes = g.num_nodes();
  r.stats.labels = g.total_labels();
  r.stats.edges = g.edges.size();
  const detail::EdgeExtremes extremes = given_extremes != nullptr ? *given_extremes : detail::edge_extremes(g);
  const long double magnitude = detail::cost_magnitude(g, extremes);
  const detail::fine_t scale = detail::choose_scale(magnitude);
  r.stats.scale = scale;
  std::optional<detail::StepLimits> steps;
  const std::size_t rss_start = detail::peak_rss_bytes();
  detail::ProgressLines progress(o, start);
  detail::Incumbents inc{g, g.limits, std::vector<char>(g.limits.size(), 0), nullptr, {}, {}, forbidden, forbidden, &progress, 0};
  bool infeasible = false, timed_out = false;
  if (g.interval_limit) {
    steps.emplace(g);
    inc.steps = &*steps;
    infeasible = !steps->propagate(inc.limits);  // single-node limits: labels no step admits
    inc.enforced.resize(inc.limits.size(), 0);
  }
  if (!o.start.empty()) inc.consider(o.start);
  if (!inc.limits.empty() || steps) inc.consider(least_usage_labels(g));
  // the rounds' graph when they search the Lagrangian penalisation (SolveOptions::priced_rounds)
  struct PricedRounds {
    CostGraph graph;
    long double magnitude;
    detail::fine_t scale;
    detail::RoundPricing pricing;
  };
  std::optional<PricedRounds> priced;
  cost_t lower = std::numeric_limits<cost_t>::min();
  if (const cost_t t = detail::trivial_bound(g, extremes); !is_forbidden(t)) lower = t;
  else infeasible = true;  // some node or edge has no finite cost
  if (out_of_reach) infeasible = true;
  // a start at the trivial bound (every term at its least value) is optimal without further work
  // (e.g. a greedy plan without redistribution when every cost is nonnegative)
  if (!infeasible && !g.limits.empty() && o.lagrangian_share > 0 && !(!is_forbidden(inc.feasible_cost) && inc.feasible_cost <= lower)) {
    const Deadline share = Deadline::after(std::min(1.0, o.lagrangian_share) * until.remaining_s()).earlier(until);
    const auto t0 = clock::now();
    std::vector<std::vector<std::uint32_t>> candidates;
    LimitPenalty pen;
    // the penalised optima, moved inside the limits: first plans near the budget, taken after
    // each try (a try can take seconds: the progress lines show the plan found so far)
    std::size_t considered = 0;
    const auto consider_candidates = [&] {
      for (; considered < candidates.size(); ++considered) {
        std::vector<std::uint32_t> x = candidates[considered];
        inc.consider(x);
        if (repair_to_limits(g, x, until)) inc.consider(x);
      }
    };
    const auto tick = [&](cost_t b) {
      consider_candidates();
      progress.tick(std::max(lower, b), inc.feasible_cost);
    };
    std::vector<std::vector<char>> ruled_out;
    cost_t ruled_out_below = forbidden;
    CostGraph best_penalised;
    LagrangianHooks hooks{&candidates, &pen, tick, [&inc] { return inc.feasible_cost; }, &ruled_out, &ruled_out_below, &best_penalised};
    if (const auto lb = lagrangian_bound(g, o, share, 12, hooks)) {
      lower = std::max(lower, *lb);
      r.stats.lagrangian_bound = *lb;
      if (o.priced_rounds && std::any_of(pen.numerators.begin(), pen.numerators.end(), [](cost_t n) { return n != 0; })) {
        // the rounds search the penalisation at the best multipliers (RoundPricing), when its
        // costs, the offset and the incumbent's image stay well inside the exact range
        CostGraph h = best_penalised.num_nodes() == g.num_nodes() ? std::move(best_penalised) : penalised_graph(g, pen);
        // the labels the tries ruled out: no labelling within the limits cheaper than the
        // incumbent uses them, and the priced rounds prune there (a labelling the tries took as
        // the plan keeps the usage limits, but it may break an interval limit: then the
        // incumbent is dearer, and the labels stay)
        consider_candidates();
        if (is_forbidden(inc.feasible_cost) || inc.feasible_cost > ruled_out_below) ruled_out.clear();
        forbid_labels(h.unary, ruled_out);
        __extension__ typedef __int128 wide;
        const wide base = (static_cast<wide>(g.constant) << pen.shift) - penalty_offset(g, pen);
        const long double mh = detail::cost_magnitude(h);
        const long double room = std::ldexp(1.0L, 55);
        if (mh <= room && base < (wide{1} << 54) && -base < (wide{1} << 54)) {
          const detail::fine_t sh = detail::choose_scale(mh + std::abs(static_cast<long double>(base)));
          priced.emplace(
              PricedRounds{std::move(h), mh, sh, detail::RoundPricing{true, pen.shift, static_cast<detail::fine_t>(base), pen.numerators}});
          std::fill(inc.enforced.begin(), inc.enforced.end(), 1);  // RoundPricing: every limit, from the first round
          // the relaxation incumbent was taken while no limit was enforced (the λ = 0 try's
          // labelling, over the budget): left in place, it pruned the first priced round below its
          // own bound, and that round ended at once (GPT-2's training step on 2x2x2: 1.1 s lost)
          inc.forget_relaxation();
        }
      }
    }
    consider_candidates();
    progress.tick(lower, inc.feasible_cost);  // (the rounds may have no time left to write one)
    r.stats.lagrangian_ms = std::chrono::duration<double, std::milli>(clock::now() - t0).count();
  }
  const bool proven_at_start = !is_forbidden(inc.feasible_cost) && inc.feasible_cost <= lower;
  detail::StarReport rule_out;  // SolveOptions::rule_out_above in the rounds' fine units
  if (!is_forbidden(o.rule_out_above)) rule_out = {detail::saturate(static_cast<detail::wide_t>(o.rule_out_above) * scale), &r.ruled_out};
  r.stats.priced_rounds = priced.has_value();
  // A round first builds its working copy of the graph (every distinct matrix scaled, fixed
  // against the incumbent and compacted), which no deadline poll interrupts. A round that cannot
  // get through it in the time left is not started (llama32_1b_fw on 2x2x2x2 started one 0.2 s
  // before a 10 s deadline and ended 1.4 s late). The copy took 15-32 ns per matrix cell while
  // its pages were new to the process; now that the builder's cost tables are freed first, 2-7
  // ns (0.3-0.9 s for the 0.75-1.3 GB graphs of the 2x2x2x2 data-parallel runs): 15 ns keeps a
  // margin (overrun 2-3 % at 8-9 s limits there).
  const double setup_s = round_setup_s(bytes);
  for (std::size_t round = 0; !proven_at_start && !infeasible; ++round) {
    if (until.passed() || (until.is_set() && until.remaining_s() < setup_s)) {
      timed_out = true;
      break;
    }
    bool complete = false;
    ++r.stats.rounds;
    inc.lower = lower;
    // with an interval limit and no feasible plan yet, the first round gets a share of the time:
    // its best labelling is then repaired into one (repair_to_interval_limit)
    const bool repair_after = steps && round == 0 && is_forbidden(inc.feasible_cost);
    const Deadline round_until = repair_after ? Deadline::after(o.interval_round_share * until.remaining_s()).earlier(until) : until;
    const cost_t lb = priced ? detail::solve_round(priced->graph, o, inc, priced->scale, priced->magnitude, round_until, r.stats, round == 0,
                                                   complete, priced->pricing)
                             : detail::solve_round(g, o, inc, scale, magnitude, round_until, r.stats, round == 0, complete, {},
                                                   round == 0 ? rule_out : detail::StarReport{});
    lower = std::max(lower, lb);
    if (steps && !inc.relax_labels.empty() && !steps->keeps(inc.relax_labels)) {
      // the round's best labelling moved inside every time step (repair_to_interval_limit)
      std::vector<std::uint32_t> x = inc.relax_labels;
      const auto t0 = clock::now();
      if (repair_to_interval_limit(g, steps->steps, x, until)) inc.consider(x);
      r.stats.repair_ms += std::chrono::duration<double, std::milli>(clock::now() - t0).count();
    }
    inc.lower = lower;
    if (repair_after && !(!is_forbidden(inc.feasible_cost) && inc.feasible_cost <= lower) && !until.passed() && o.interval_lagrangian_tries > 0) {
      // no feasible plan proven optimal yet: the Lagrangian heuristic of the interval limit
      const auto t0 = clock::now();
      if (const auto priced_lb = detail::interval_lagrangian(g, steps->steps, o, until, o.interval_lagrangian_tries, o.interval_bound_share, inc)) {
        lower = std::max(lower, *priced_lb);
        r.stats.lagrangian_bound = *priced_lb;
      }
      r.stats.lagrangian_ms += std::chrono::duration<double, std::milli>(clock::now() - t0).count();
    }
    progress.tick(lower, inc.feasible_cost);
    if (is_forbidden(lb) && complete) {
      infeasible = true;
      break;
    }
    if (!is_forbidden(inc.feasible_cost) && inc.feasible_cost <= lower) break;  // proven
    if ((!complete && !repair_after) || until.passed()) {                       // (a first round's share running out is not the end)
      // the deadline, or else a limit of the options (node_limit, max_dual_iterations, search or
      // dual off): "stopped", not "time_limit"
      timed_out = until.passed();
      break;
    }
    // the round's optimum breaks some limits: enforce them and go again
    std::size_t added = 0;
    if (!inc.relax_labels.empty()) {
      for (std::size_t k = 0; k < inc.limits.size(); ++k) {
        if (inc.enforced[k]) continue;
        std::int64_t sum = 0;
        for (auto u : inc.limits[k].nodes) sum += g.usage[u][inc.relax_labels[u]];
        if (sum > inc.limits[k].limit) {
          inc.enforced[k] = 1;
          ++added;
        }
      }
      if (steps)  // the time steps it breaks become limits, enforced from the next round on
        for (auto& l : steps->broken(inc.relax_labels, o.max_step_memberships)) {
          inc.limits.push_back(std::move(l));
          inc.enforced.push_back(1);
          ++added;
        }
    }
    if (added == 0) {  // should not happen: enforce everything
      for (auto& e : inc.enforced) e = 1;
    }
    r.stats.enforced_limits = static_cast<std::size_t>(std::count(inc.enforced.begin(), inc.enforced.end(), 1));
    inc.forget_relaxation();
    if (added == 0 && r.stats.rounds > inc.limits.size() + 1) {
      timed_out = until.passed();
      break;
    }
  }
  const std::size_t rss_end = detail::peak_rss_bytes();
  r.stats.peak_memory_bytes = std::max(2 * bytes, rss_end - std::min(rss_start, rss_end));
  r.seconds = std::chrono::duration<double>(clock::now() - start).count();
  r.cpu_seconds = static_cast<double>(std::clock() - cpu_start) / CLOCKS_PER_SEC;
  // nothing found in the time (a limit of a few ms on a large graph): without usage limits, the
  // least unary label of every node is a labelling when no pair of it is forbidden (an O(edges)
  // check), rather than none
  if (is_forbidden(inc.feasible_cost) && !infeasible && g.limits.empty() && !g.interval_limit) {
    std::vector<std::uint32_t> least(g.num_nodes(), 0);
    for (std::size_t u = 0; u < g.num_nodes(); ++u)
      least[u] = static_cast<std::uint32_t>(std::min_element(g.unary[u].begin(), g.unary[u].end()) - g.unary[u].begin());
    inc.consider(least);
  }
  if (!is_forbidden(inc.feasible_cost)) {
    r.labels = inc.feasible_labels;
    r.cost = inc.feasible_cost;
    r.feasible = true;
  }
  if (infeasible) {
    r.lower_bound = r.feasible ? r.cost : forbidden;
    r.status = r.feasible ? "optimal" : "infeasible";
  } else {
    r.lower_bound = r.feasible ? std::min(lower, r.cost) : lower;
  }
  r.optimal = r.feasible && r.lower_bound >= r.cost;
  if (r.optimal) r.lower_bound = r.cost;
  if (r.status.empty()) r.status = r.optimal ? "optimal" : (timed_out ? "time_limit" : "stopped");
  return r;
}

}  // namespace ctshard::solve
