#pragma once
/// \file solve/interval_repair.hpp
/// A primal heuristic for IOPDDL's interval limit (CostGraph::interval_limit: at every time step,
/// the usages of the live nodes sum to at most the limit). A labelling whose pairs are all finite
/// (a Lagrangian penalisation's optimum, a round's optimum) is moved inside every step by
/// usage-lowering moves that keep every pair finite, then improved by moves that keep every step
/// and every pair. Lowering a node's usage lowers only the steps it lives over, so a repair move
/// never breaks a step; only moves that raise usage need the step check, done by a range-add /
/// range-maximum tree over the segments (IntervalSteps) in O(log segments).
///
/// The repair is the ratio greedy of Lagrangian heuristics (Fisher, "The Lagrangian relaxation
/// method for solving integer programming problems", Management Science 1981, §4) as in
/// repair_to_limits, over the interval limit: per scan, every usage-lowering move of a node live at
/// a broken step is scored by usage saved per cost added, and the best are applied in order, each
/// re-priced first. Where a node's only lower-usage labels clash with one neighbour's label, a
/// *pair move* changes both (an ejection chain of length 2, Glover, "Ejection chains, reference
/// structures and alternating path methods", Discrete Applied Mathematics 1996): IOPDDL's graphs
/// forbid most pairs (instance A: 68 %), so single moves alone get stuck.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

#include "ctshard/solve/budget.hpp"
#include "ctshard/solve/cost_graph.hpp"
#include "ctshard/solve/interval_steps.hpp"

namespace ctshard::solve {

namespace detail {

/// Range add and range maximum over a fixed array of int64 (a segment tree whose node keeps the
/// maximum of its range including the additions made at it and above it only through the query
/// path: no push-down). O(log n) per operation.
class RangeAddMax {
 public:
  explicit RangeAddMax(const std::vector<std::int64_t>& v) : n_(v.size()) {
    while (size_ < n_) size_ <<= 1;
    max_.assign(2 * size_, lowest);
    add_.assign(2 * size_, 0);
    for (std::size_t i = 0; i < n_; ++i) max_[size_ + i] = v[i];
    for (std::size_t i = size_; i-- > 1;) max_[i] = std::max(max_[2 * i], max_[2 * i + 1]);
  }
  /// Adds `d` to positions [lo, hi).
  void add(std::size_t lo, std::size_t hi, std::int64_t d) {
    if (lo < hi) add_at(1, 0, size_, lo, hi, d);
  }
  /// The maximum over positions [lo, hi) (lowest when empty).
  [[nodiscard]] std::int64_t max(std::size_t lo, std::size_t hi) const { return lo < hi ? max_at(1, 0, size_, lo, hi) : lowest; }
  /// The maximum over every position.
  [[nodiscard]] std::int64_t max_all() const noexcept { return n_ == 0 ? lowest : max_[1]; }

  static constexpr std::int64_t lowest = std::numeric_limits<std::int64_t>::min() / 4;

 private:
  std::size_t n_, size_ = 1;
  std::vector<std::int64_t> max_, add_;

  void add_at(std::size_t node, std::size_t nl, std::size_t nr, std::size_t lo, std::size_t hi, std::int64_t d) {
    if (hi <= nl || nr <= lo) return;
    if (lo <= nl && nr <= hi) {
      max_[node] += d;
      add_[node] += d;
      return;
    }
    const std::size_t mid = (nl + nr) / 2;
    add_at(2 * node, nl, mid, lo, hi, d);
    add_at(2 * node + 1, mid, nr, lo, hi, d);
    max_[node] = std::max(max_[2 * node], max_[2 * node + 1]) + add_[node];
  }
  [[nodiscard]] std::int64_t max_at(std::size_t node, std::size_t nl, std::size_t nr, std::size_t lo, std::size_t hi) const {
    if (hi <= nl || nr <= lo) return lowest;
    if (lo <= nl && nr <= hi) return max_[node];
    const std::size_t mid = (nl + nr) / 2;
    return std::max(max_at(2 * node, nl, mid, lo, hi), max_at(2 * node + 1, mid, nr, lo, hi)) + add_[node];
  }
};

/// A labelling's moves on a graph with an interval limit: cost changes of one or two nodes
/// (edges to the current labels of the neighbours) and the usage per segment.
class IntervalMoves {
 public:
  IntervalMoves(const CostGraph& g, const IntervalSteps& steps, std::int64_t limit, const std::vector<std::uint32_t>& x)
      : g_(g), steps_(steps), limit_(limit), adj_(g.num_nodes()), use_(steps.sums<std::int64_t>([&](std::size_t u) { return g.usage[u][x[u]]; })) {
    for (std::uint32_t i = 0; i < g.edges.size(); ++i) {
      adj_[g.edges[i].u].push_back(i);
      adj_[g.edges[i].v].push_back(i);
    }
  }

  /// The cost change of moving u to b while the other nodes keep `x`. Forbidden when the move
  /// uses a forbidden label or pair. The edges between u and `w` (when not `none`) are left out
  /// (pair_delta prices them once, with both ends moved).
  [[nodiscard]] cost_t delta(const std::vector<std::uint32_t>& x, std::uint32_t u, std::uint32_t b, std::uint32_t w = none) const {
    const std::uint32_t a = x[u];
    if (is_forbidden(g_.unary[u][b])) return forbidden;
    cost_t d = g_.unary[u][b] - g_.unary[u][a];
    for (auto ei : adj_[u]) {
      const CostEdge& e = g_.edges[ei];
      const std::uint32_t other = e.u == u ? e.v : e.u;
      if (other == w) continue;
      const std::uint32_t y = x[other];
      const cost_t after = e.u == u ? e.at(b, y) : e.at(y, b);
      if (is_forbidden(after)) return forbidden;
      const cost_t before = e.u == u ? e.at(a, y) : e.at(y, a);
      d += is_forbidden(before) ? -max_exact_cost : after - before;
    }
    return d;
  }

  /// The cost change of moving u to b and w to c together (w a neighbour of u or not).
  [[nodiscard]] cost_t pair_delta(const std::vector<std::uint32_t>& x, std::uint32_t u, std::uint32_t b, std::uint32_t w, std::uint32_t c) const {
    const cost_t du = delta(x, u, b, w);
    if (is_forbidden(du)) return forbidden;
    const cost_t dw = delta(x, w, c, u);
    if (is_forbidden(dw)) return forbidden;
    cost_t d = du + dw;
    for (auto ei : adj_[u]) {  // the edges between u and w, before and after
      const CostEdge& e = g_.edges[ei];
      if ((e.u == u ? e.v : e.u) != w) continue;
      const cost_t after = e.u == u ? e.at(b, c) : e.at(c, b);
      if (is_forbidden(after)) return forbidden;
      const cost_t before = e.u == u ? e.at(x[u], x[w]) : e.at(x[w], x[u]);
      d += is_forbidden(before) ? -max_exact_cost : after - before;
    }
    return d;
  }

  /// Per segment, the usage of the labelling at the last refresh_profile (or construction).
  [[nodiscard]] const std::vector<std::int64_t>& usage() const noexcept { return use_; }
  /// The most usage of any segment node u lives over (RangeAddMax::lowest when none).
  [[nodiscard]] std::int64_t peak_of(std::uint32_t u) const { return tree_.max(steps_.first(u), steps_.last(u)); }
  /// The most usage of any segment.
  [[nodiscard]] std::int64_t peak() const noexcept { return tree_.max_all(); }
  /// Whether raising u's usage by `du` (> 0) keeps every step it lives over.
  [[nodiscard]] bool room_for(std::uint32_t u, std::int64_t du) const { return du <= 0 || peak_of(u) + du <= limit_; }

  /// Moves u to b in `x`, updating the usage per segment in the tree (usage() is refreshed by
  /// refresh_profile: a move would cost O(lifetime) there).
  void apply(std::vector<std::uint32_t>& x, std::uint32_t u, std::uint32_t b) {
    const std::int64_t du = g_.usage[u][b] - g_.usage[u][x[u]];
    if (du != 0) tree_.add(steps_.first(u), steps_.last(u), du);
    x[u] = b;
  }
  /// Recomputes usage() from `x`. O(n + segments).
  void refresh_profile(const std::vector<std::uint32_t>& x) {
    use_ = steps_.sums<std::int64_t>([&](std::size_t u) { return g_.usage[u][x[u]]; });
  }

  [[nodiscard]] const std::vector<std::uint32_t>& edges_of(std::uint32_t u) const noexcept { return adj_[u]; }

  static constexpr std::uint32_t none = std::numeric_limits<std::uint32_t>::max();

 private:
  const CostGraph& g_;
  const IntervalSteps& steps_;
  std::int64_t limit_;
  std::vector<std::vector<std::uint32_t>> adj_;
  std::vector<std::int64_t> use_;
  RangeAddMax tree_{use_};
};

/// Lowers the cost of `x` (keeping every step of the interval limit and every pair finite) by
/// single-node moves (each node its cheapest label with room at its steps), then by moves of the
/// two ends of an edge together (at most `max_pair_labels` label pairs per edge), for at most
/// `sweeps` passes or until a pass changes nothing. `moves` holds x's usage per segment.
inline void improve_within_interval_limit(const CostGraph& g, IntervalMoves& moves, std::vector<std::uint32_t>& x, const Deadline& until,
                                          std::size_t sweeps, std::size_t max_pair_labels = 4096) {
  DeadlinePoll poll(until, 256);
  for (std::size_t sweep = 0; sweep < sweeps; ++sweep) {
    bool changed = false;
    for (std::uint32_t u = 0; u < g.num_nodes(); ++u) {
      if (poll.passed()) return;
      std::uint32_t best = x[u];
      cost_t best_d = 0;
      for (std::uint32_t b = 0; b < g.num_labels(u); ++b) {
        if (b == x[u]) continue;
        const cost_t d = moves.delta(x, u, b);
        if (is_forbidden(d) || d >= best_d || !moves.room_for(u, g.usage[u][b] - g.usage[u][x[u]])) continue;
        best = b;
        best_d = d;
      }
      if (best != x[u]) {
        moves.apply(x, u, best);
        changed = true;
      }
    }
    for (const CostEdge& e : g.edges) {
      if (poll.passed()) return;
      if (std::size_t{g.num_labels(e.u)} * g.num_labels(e.v) > max_pair_labels) continue;
      std::uint32_t bb = x[e.u], bc = x[e.v];
      cost_t best_d = 0;
      for (std::uint32_t b = 0; b < g.num_labels(e.u); ++b) {
        if (b == x[e.u] || is_forbidden(g.unary[e.u][b])) continue;
        for (std::uint32_t c = 0; c < g.num_labels(e.v); ++c) {
          if (c == x[e.v] || is_forbidden(e.at(b, c))) continue;
          const cost_t d = moves.pair_delta(x, e.u, b, e.v, c);
          if (is_forbidden(d) || d >= best_d) continue;
          best_d = d;
          bb = b;
          bc = c;
        }
      }
      if (bb == x[e.u]) continue;
      // both usage changes must fit: the fall first, then the rise (undone when it does not fit)
      const std::int64_t du = g.usage[e.u][bb] - g.usage[e.u][x[e.u]], dv = g.usage[e.v][bc] - g.usage[e.v][x[e.v]];
      const std::uint32_t first = du <= dv ? e.u : e.v, second = du <= dv ? e.v : e.u;
      const std::uint32_t first_to = du <= dv ? bb : bc, second_to = du <= dv ? bc : bb;
      const std::uint32_t first_was = x[first];
      if (!moves.room_for(first, std::min(du, dv))) continue;
      moves.apply(x, first, first_to);
      if (!moves.room_for(second, std::max(du, dv))) {
        moves.apply(x, first, first_was);
        continue;
      }
      moves.apply(x, second, second_to);
      changed = true;
    }
    if (!changed) break;
  }
}

}  // namespace detail

/// What repair_to_interval_limit may do.
struct IntervalRepairOptions {
  /// Passes of the improvement (each node takes its cheapest label keeping every step and pair;
  /// then pairs of neighbours move together); 0 leaves a repaired labelling as it is.
  std::size_t improvement_sweeps = 8;
  /// Scans of the repair without progress in the peak before it gives up.
  std::size_t max_stalled_scans = 4;
};

/// Moves `x` (one label per node, every pair finite) inside every step of `g`'s interval limit
/// (the steps of `steps`, built from g.intervals) by usage-lowering single and pair moves that
/// keep every pair finite (file comment), then lowers its cost by moves that keep every step and
/// every pair. Returns true when `x` keeps every step afterwards; false when no usage-lowering move
/// is left at a broken step, `until` passed, or `x` has a forbidden label or pair to start with
/// (then `x` is what the moves reached, still with finite pairs when it started so). Exact
/// integers throughout; deterministic. O(scans · Σ labels · degree · log segments).
inline bool repair_to_interval_limit(const CostGraph& g, const IntervalSteps& steps, std::vector<std::uint32_t>& x, const Deadline& until = {},
                                     const IntervalRepairOptions& opt = {}) {
  if (!g.interval_limit || g.usage.size() != g.num_nodes() || x.size() != g.num_nodes()) return false;
  if (is_forbidden(g.evaluate(x))) return false;
  const std::int64_t limit = *g.interval_limit;
  detail::IntervalMoves moves(g, steps, limit, x);
  const std::size_t S = steps.segments();
  DeadlinePoll poll(until, 256);
  struct Move {
    double score;
    std::uint32_t u, b, w, c;  // w = none: a single move
  };
  std::vector<Move> cand;
  std::vector<std::int64_t> broken_before(S + 1, 0);  // prefix count of broken segments
  std::vector<char> moved(g.num_nodes(), 0);
  std::size_t stalled = 0;
  std::int64_t best_peak = moves.peak();
  while (moves.peak() > limit) {
    if (until.passed()) return false;
    moves.refresh_profile(x);
    const std::vector<std::int64_t>& use = moves.usage();
    for (std::size_t t = 0; t < S; ++t) broken_before[t + 1] = broken_before[t] + (use[t] > limit ? 1 : 0);
    cand.clear();
    for (std::uint32_t u = 0; u < g.num_nodes(); ++u) {
      const std::int64_t hits = broken_before[steps.last(u)] - broken_before[steps.first(u)];
      if (hits == 0) continue;
      const std::int64_t excess = moves.peak_of(u) - limit;
      const std::int64_t au = g.usage[u][x[u]];
      for (std::uint32_t b = 0; b < g.num_labels(u); ++b) {
        if (g.usage[u][b] >= au) continue;
        const double saved = static_cast<double>(std::min(au - g.usage[u][b], excess)) * static_cast<double>(hits);
        const cost_t d = moves.delta(x, u, b);
        const auto score = [&](cost_t dc) {
          return dc <= 0 ? std::numeric_limits<double>::max() / 4 + saved - static_cast<double>(dc) : saved / static_cast<double>(dc);
        };
        if (!is_forbidden(d)) {
          cand.push_back({score(d), u, b, detail::IntervalMoves::none, 0});
          continue;
        }
        // a pair move: one neighbour w whose label clashes with b takes a label c that fits
        for (auto ei : moves.edges_of(u)) {
          const CostEdge& e = g.edges[ei];
          const std::uint32_t w = e.u == u ? e.v : e.u;
          if (!is_forbidden(e.u == u ? e.at(b, x[w]) : e.at(x[w], b))) continue;
          for (std::uint32_t c = 0; c < g.num_labels(w); ++c) {
            if (c == x[w]) continue;
            const std::int64_t dw = g.usage[w][c] - g.usage[w][x[w]];
            if (dw > 0 && !moves.room_for(w, dw)) continue;
            const cost_t dp = moves.pair_delta(x, u, b, w, c);
            if (!is_forbidden(dp)) cand.push_back({score(dp), u, b, w, c});
          }
          break;  // the first clashing neighbour only (a second one makes the pair move fail)
        }
      }
      if (poll.passed()) return false;
    }
    if (cand.empty()) return false;
    std::stable_sort(cand.begin(), cand.end(), [](const Move& l, const Move& r) { return l.score > r.score; });
    std::fill(moved.begin(), moved.end(), 0);
    bool any = false;
    for (const Move& m : cand) {
      if (moves.peak() <= limit) break;
      if (moved[m.u] || (m.w != detail::IntervalMoves::none && moved[m.w])) continue;
      if (moves.peak_of(m.u) <= limit) continue;  // its steps are kept by now
      if (m.w == detail::IntervalMoves::none) {
        if (is_forbidden(moves.delta(x, m.u, m.b))) continue;
        moves.apply(x, m.u, m.b);
      } else {
        const std::int64_t dw = g.usage[m.w][m.c] - g.usage[m.w][x[m.w]];
        if (is_forbidden(moves.pair_delta(x, m.u, m.b, m.w, m.c))) continue;
        // w's rise must fit where it lives once u has moved down
        const std::uint32_t a = x[m.u];
        moves.apply(x, m.u, m.b);
        if (!moves.room_for(m.w, dw)) {
          moves.apply(x, m.u, a);
          continue;
        }
        moves.apply(x, m.w, m.c);
        moved[m.w] = 1;
      }
      moved[m.u] = 1;
      any = true;
    }
    if (!any) return false;
    if (moves.peak() < best_peak) {
      best_peak = moves.peak();
      stalled = 0;
    } else if (++stalled > opt.max_stalled_scans) {
      return false;
    }
  }
  detail::improve_within_interval_limit(g, moves, x, until, opt.improvement_sweeps);
  return true;
}

}  // namespace ctshard::solve
