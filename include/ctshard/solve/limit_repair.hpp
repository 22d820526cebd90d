#pragma once
/// \file solve/limit_repair.hpp
/// A primal heuristic for usage-limited cost graphs (a per-device memory budget): a labelling that
/// breaks some of `CostGraph::limits` is moved inside them by the cheapest usage-saving label
/// changes, then improved by label changes that keep every limit. The solver runs it on the
/// labellings its Lagrangian bound finds (lagrangian_bound): a penalty λ·usage close to the right
/// one leaves a labelling just over (or just under) the budget, a few moves from a good feasible
/// plan. (The interval limit of IOPDDL is not handled here: its steps are checked by the caller.)
///
/// The repair is the ratio greedy of knapsack-style Lagrangian heuristics (Fisher, "The Lagrangian
/// relaxation method for solving integer programming problems", Management Science 1981, §4): per
/// scan, every move of a node in a broken limit is scored by usage saved per cost added (its
/// unary and its edges to the neighbours' current labels), and the best moves are applied in
/// order, each re-priced first, until no limit is broken.

#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

#include "ctshard/solve/budget.hpp"
#include "ctshard/solve/cost_graph.hpp"

namespace ctshard::solve {

namespace detail {

/// A labelling's usage per limit and the moves that change it, over `g.limits`.
class LimitMoves {
 public:
  explicit LimitMoves(const CostGraph& g) : g_(g), adj_(g.num_nodes()), member_(g.num_nodes()) {
    for (std::uint32_t i = 0; i < g.edges.size(); ++i) {
      adj_[g.edges[i].u].push_back(i);
      adj_[g.edges[i].v].push_back(i);
    }
    for (std::uint32_t k = 0; k < g.limits.size(); ++k)
      for (auto u : g.limits[k].nodes) member_[u].push_back(k);
  }

  /// Per limit: limit - usage of `x` (negative: broken).
  [[nodiscard]] std::vector<std::int64_t> slack(const std::vector<std::uint32_t>& x) const {
    std::vector<std::int64_t> s(g_.limits.size());
    for (std::size_t k = 0; k < s.size(); ++k) {
      std::int64_t sum = 0;
      for (auto u : g_.limits[k].nodes) sum += g_.usage[u][x[u]];
      s[k] = g_.limits[k].limit - sum;
    }
    return s;
  }

  /// The cost change of moving node u to label b (forbidden when b, or a pair with a
  /// neighbour's label, is forbidden).
  [[nodiscard]] cost_t delta(const std::vector<std::uint32_t>& x, std::uint32_t u, std::uint32_t b) const {
    const std::uint32_t a = x[u];
    if (is_forbidden(g_.unary[u][b])) return forbidden;
    cost_t d = g_.unary[u][b] - g_.unary[u][a];
    for (auto ei : adj_[u]) {
      const CostEdge& e = g_.edges[ei];
      const cost_t after = e.u == u ? e.at(b, x[e.v]) : e.at(x[e.u], b);
      if (is_forbidden(after)) return forbidden;
      const cost_t before = e.u == u ? e.at(a, x[e.v]) : e.at(x[e.u], a);
      d += is_forbidden(before) ? -max_exact_cost : after - before;
    }
    return d;
  }

  /// Whether moving u to b breaks no limit that `s` keeps and adds to none that is broken; sets
  /// `saved` to the usage it takes off the broken limits.
  [[nodiscard]] bool admissible(const std::vector<std::int64_t>& s, std::uint32_t u, std::uint32_t a, std::uint32_t b, std::int64_t& saved) const {
    saved = 0;
    const std::int64_t du = g_.usage[u][b] - g_.usage[u][a];
    for (auto k : member_[u]) {
      if (s[k] < 0) {
        if (du > 0) return false;
        saved += std::min(-du, -s[k]);
      } else if (s[k] - du < 0) {
        return false;
      }
    }
    return true;
  }

  void apply(std::vector<std::uint32_t>& x, std::vector<std::int64_t>& s, std::uint32_t u, std::uint32_t b) const {
    const std::int64_t du = g_.usage[u][b] - g_.usage[u][x[u]];
    for (auto k : member_[u]) s[k] -= du;
    x[u] = b;
  }

  [[nodiscard]] const std::vector<std::uint32_t>& limits_of(std::uint32_t u) const { return member_[u]; }

 private:
  const CostGraph& g_;
  std::vector<std::vector<std::uint32_t>> adj_;
  std::vector<std::vector<std::uint32_t>> member_;
};

}  // namespace detail

/// Moves `x` (one label per node) inside every limit of `g.limits` by the ratio greedy (file
/// comment), then improves it with label changes that keep them (at most `sweeps` passes).
/// Returns true when `x` keeps every limit afterwards; false when no admissible move is left
/// while some limit is broken, or `until` passed (then `x` is what the moves reached). Costs of
/// `x` never become forbidden by a move. O(scans · Σ labels · degree).
inline bool repair_to_limits(const CostGraph& g, std::vector<std::uint32_t>& x, const Deadline& until = {}, std::size_t sweeps = 4) {
  if (g.limits.empty() || g.usage.size() != g.num_nodes() || x.size() != g.num_nodes()) return g.limits.empty();
  const detail::LimitMoves moves(g);
  std::vector<std::int64_t> s = moves.slack(x);
  const auto broken = [&] { return std::any_of(s.begin(), s.end(), [](std::int64_t v) { return v < 0; }); };
  struct Move {
    double score;
    std::uint32_t u, b;
  };
  std::vector<Move> cand;
  std::vector<char> moved(g.num_nodes(), 0);
  while (broken()) {
    if (until.passed()) return false;
    cand.clear();
    for (std::uint32_t u = 0; u < g.num_nodes(); ++u) {
      const auto& ls = moves.limits_of(u);
      if (std::none_of(ls.begin(), ls.end(), [&](std::uint32_t k) { return s[k] < 0; })) continue;
      for (std::uint32_t b = 0; b < g.num_labels(u); ++b) {
        std::int64_t saved = 0;
        if (b == x[u] || !moves.admissible(s, u, x[u], b, saved) || saved <= 0) continue;
        const cost_t d = moves.delta(x, u, b);
        if (is_forbidden(d)) continue;
        // a move that saves cost too comes first; otherwise usage saved per cost added
        const double score = d <= 0 ? std::numeric_limits<double>::max() / 2 + static_cast<double>(saved) - static_cast<double>(d)
                                    : static_cast<double>(saved) / static_cast<double>(d);
        cand.push_back({score, u, b});
      }
    }
    if (cand.empty()) return false;
    std::sort(cand.begin(), cand.end(), [](const Move& l, const Move& r) { return l.score > r.score || (l.score == r.score && l.u < r.u); });
    std::fill(moved.begin(), moved.end(), 0);
    bool any = false;
    for (const Move& m : cand) {
      if (!broken()) break;
      if (moved[m.u]) continue;
      std::int64_t saved = 0;
      if (!moves.admissible(s, m.u, x[m.u], m.b, saved) || saved <= 0 || is_forbidden(moves.delta(x, m.u, m.b))) continue;
      moves.apply(x, s, m.u, m.b);
      moved[m.u] = 1;
      any = true;
    }
    if (!any) return false;
  }
  // improvement keeping the limits: each node takes its cheapest admissible label
  for (std::size_t sweep = 0; sweep < sweeps && !until.passed(); ++sweep) {
    bool changed = false;
    for (std::uint32_t u = 0; u < g.num_nodes(); ++u) {
      std::uint32_t best = x[u];
      cost_t best_d = 0;
      for (std::uint32_t b = 0; b < g.num_labels(u); ++b) {
        std::int64_t saved = 0;
        if (b == x[u] || !moves.admissible(s, u, x[u], b, saved)) continue;
        const cost_t d = moves.delta(x, u, b);
        if (!is_forbidden(d) && d < best_d) {
          best = b;
          best_d = d;
        }
      }
      if (best != x[u]) {
        moves.apply(x, s, u, best);
        changed = true;
      }
    }
    if (!changed) break;
  }
  return true;
}

}  // namespace ctshard::solve
