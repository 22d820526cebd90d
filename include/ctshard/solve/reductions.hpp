#pragma once
/// \file solve/reductions.hpp
/// Exact reductions of a working problem; each keeps at least one optimal solution (of the
/// problem restricted to solutions no worse than any bound the caller prunes with):
/// - forbidden labels and pairs: a label without a finite partner on some edge goes (arc
///   consistency); a label whose usage alone breaks a limit, given the least usage of the other
///   members, goes (limit propagation);
/// - fixed nodes (one label) fold into their neighbours' unary costs;
/// - separable edges (cost = f(row) + g(col), which covers edges where one side has a single
///   class) fold into the unary costs;
/// - dominated labels: b goes when some a is never worse in any context
///   (theta(a) - theta(b) + sum over edges of max over the neighbour's labels of the difference
///   <= 0) and uses no more of any enforced limit;
/// - degree 0, 1 and 2 elimination of unprotected nodes: an isolated node takes its best label, a
///   leaf folds min over its labels into its neighbour, a degree-2 node becomes an edge between
///   its two neighbours (merged with a parallel edge when there is one). The eliminated node's
///   label is recovered afterwards (Problem::reconstruct).

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <limits>
#include <map>
#include <optional>
#include <queue>
#include <set>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "ctshard/solve/budget.hpp"
#include "ctshard/solve/problem.hpp"

namespace ctshard::solve::detail {

struct ReduceOptions {
  bool dominance = true;
  bool eliminate = true;
  /// Degree-2 eliminations whose work (label groups x new matrix cells) exceeds this are skipped.
  std::size_t max_series_work = std::size_t{1} << 24;
  /// ... or whose new matrix has more cells than this.
  std::size_t max_edge_cells = std::size_t{1} << 20;
  /// Dominance is tried on nodes whose pairwise-difference tables stay below this.
  std::size_t max_dominance_work = std::size_t{1} << 22;
  /// How often one node is looked at (its neighbourhood keeps changing while others are
  /// reduced). Once: with fixing from stars (dual.hpp) taking the labels dominance would find
  /// later, looking again cost more than it saved (54 exported plans: 3.0 s in all against 6.3 s
  /// with 4 looks; GPT-2 fw+bw FSDP 88-93 ms against 102-104 ms, DP 77-79 against 70 ms).
  std::uint8_t dominance_checks = 1;
  /// With dominance: degree-2 eliminations up to this work (labels x new matrix cells) run before
  /// the first dominance pass (0: none). Cheap ones shrink the graph dominance looks at (FSDP
  /// inputs: 15-45 % less solver work); costly ones are better left until dominance has shrunk
  /// the domains (where nearly every label is dominated, e.g. replicated inputs without a start
  /// labelling, eliminating everything first costs 1.5-4x more; 2^16 costs 1.3-1.8x there).
  std::size_t early_series_work = std::size_t{1} << 16;
  /// Candidate dominators per node: the labels least in theta plus the row minima of its edges.
  std::size_t dominators = std::numeric_limits<std::size_t>::max();
  /// On nodes of at least `dominance_sample_labels` labels, every `dominance_sample`-th label is
  /// tested first, and the others only when one of those was dominated (0 or 1: every label
  /// always). Most looks at large nodes find nothing: on the data-parallel longformer_fw and
  /// ves_symbolic_bw on 2x2x2 this took dominance from 765 to 550 ms and 440 to 360 ms, leaving
  /// 4-5 % of the dominated labels in place (the optimum is the same).
  std::size_t dominance_sample = 8;
  std::size_t dominance_sample_labels = 64;
  /// The request's deadline: once it has passed, the reductions stop between two steps and
  /// return (every step keeps an optimum, so a problem reduced part of the way is still exact;
  /// propagate leaves the edges it did not reach marked `arc_pending`).
  Deadline deadline{};
};

struct ReduceStats {
  std::size_t labels_removed = 0;
  std::size_t dominated = 0;
  std::size_t fixed = 0;
  std::size_t leaves = 0;
  std::size_t series = 0;
  std::size_t isolated = 0;
  std::size_t separable_edges = 0;
};

/// Arc consistency plus limit propagation to a fixpoint (or until `deadline` passes). False when
/// the problem became infeasible.
///
/// Both rules only ever remove labels and each removal only makes the others stricter, so the
/// fixpoint does not depend on the order: worklists, not sweeps. Edges wait in a queue (those
/// marked `arc_pending`, then those around a node that lost labels); limits wait in another (all
/// at the start, then those of a node that lost labels), each with the sum of its members' least
/// usage kept up to date as labels go. A limit is re-examined only when one of its members
/// changed: restarting every limit on every removed label took 15 min on an instance with
/// ~40,000 step limits. The deadline is polled per edge, per limit and per member looked at.
inline bool propagate(Problem& p, ReduceStats& stats, const Deadline& deadline = {}) {
  std::deque<std::uint32_t> queue;
  std::vector<char> queued(p.edges.size(), 0);
  for (std::uint32_t e = 0; e < p.edges.size(); ++e)
    if (p.edges[e].alive && p.edges[e].arc_pending) {  // the others are consistent since last time
      queue.push_back(e);
      queued[e] = 1;
    }
  // per node: its least and largest usage; per limit: the sum of its members' least usage
  const std::size_t num_limits = p.limits.size();
  std::vector<std::int64_t> lo, hi, least(num_limits, 0);
  std::deque<std::uint32_t> limit_queue;
  std::vector<char> limit_queued(num_limits, 0);
  const auto usage_range = [&](std::uint32_t u) {
    const auto& us = p.nodes[u].usage;
    const auto [a, b] = std::minmax_element(us.begin(), us.end());
    return std::pair<std::int64_t, std::int64_t>{*a, *b};
  };
  if (num_limits > 0) {
    lo.assign(p.nodes.size(), 0);
    hi.assign(p.nodes.size(), 0);
    for (std::uint32_t u = 0; u < p.nodes.size(); ++u)
      if (!p.nodes[u].limits.empty() && !p.nodes[u].usage.empty()) std::tie(lo[u], hi[u]) = usage_range(u);
    for (std::uint32_t k = 0; k < num_limits; ++k) {
      for (auto u : p.limits[k].nodes) least[k] += lo[u];
      limit_queue.push_back(k);
      limit_queued[k] = 1;
    }
  }
  // u lost labels: its edges (but `except`) and its limits are looked at again
  const auto touch = [&](std::uint32_t u, std::uint32_t except) {
    for (auto ei : p.nodes[u].edges)
      if (ei != except && !queued[ei]) {
        if (ei >= queued.size()) queued.resize(p.edges.size(), 0);
        queued[ei] = 1;
        queue.push_back(ei);
      }
    if (num_limits == 0 || p.nodes[u].limits.empty() || p.nodes[u].usage.empty()) return;
    const auto [l, h] = usage_range(u);
    for (auto li : p.nodes[u].limits) {
      least[li] += l - lo[u];
      if (!limit_queued[li]) {
        limit_queued[li] = 1;
        limit_queue.push_back(li);
      }
    }
    lo[u] = l;
    hi[u] = h;
  };
  // A revision scans own x other classes until each own class finds a finite entry; where most
  // entries are inf (after fix_by_threshold) and the matrix is large, that is the whole matrix on
  // every revision (6.3 G cells on a 1,800-edge graph on 2x2x2x2). Such matrices get an index of
  // their finite entries per class instead, built once per matrix and side (no matrix changes
  // while propagate runs: keep_labels defers its compactions).
  constexpr std::size_t kIndexedRevision = std::size_t{1} << 16;
  struct FiniteEntries {
    std::vector<std::uint32_t> start, other;  // per own class r: other[start[r] .. start[r + 1])
    bool dense = false;                       // over a quarter finite: scanning finds them soon enough
  };
  // keyed by the matrix's address and shape (one vector could be read as two shapes)
  std::map<std::tuple<const fine_t*, std::uint32_t, std::uint32_t>, FiniteEntries> finite_by_row, finite_by_col;
  const auto finite_entries = [&](const WEdge& e, bool by_row) -> const FiniteEntries& {
    auto& memo = by_row ? finite_by_row : finite_by_col;
    auto [it, fresh] = memo.try_emplace(std::tuple{e.d.data(), e.rows, e.cols});
    if (!fresh) return it->second;
    FiniteEntries& f = it->second;
    const std::uint32_t own_n = by_row ? e.rows : e.cols, oth_n = by_row ? e.cols : e.rows;
    const auto finite = static_cast<std::size_t>(std::count_if(e.d.begin(), e.d.end(), [](fine_t x) { return x < inf; }));
    f.dense = finite > e.d.size() / 4;
    if (f.dense) return f;
    f.other.reserve(finite);
    f.start.assign(std::size_t{own_n} + 1, 0);
    for (std::uint32_t r = 0; r < own_n; ++r) {
      f.start[r] = static_cast<std::uint32_t>(f.other.size());
      for (std::uint32_t c = 0; c < oth_n; ++c)
        if ((by_row ? e.d[std::size_t{r} * e.cols + c] : e.d[std::size_t{c} * e.cols + r]) < inf) f.other.push_back(c);
    }
    f.start[own_n] = static_cast<std::uint32_t>(f.other.size());
    return f;
  };
  // every 8 edges: one revision can compact a matrix of tens of millions of cells (2x2x2x2)
  DeadlinePoll poll(deadline, 8);
  const auto stop = [&] {  // the edges still queued are checked next time (every limit is)
    for (const auto ei : queue) p.edges[ei].arc_pending = true;
    p.tidy_classes();
    return !p.infeasible;
  };
  while (!p.infeasible && (!queue.empty() || !limit_queue.empty())) {
    while (!queue.empty() && !p.infeasible) {
      if (poll.passed()) return stop();
      const std::uint32_t ei = queue.front();
      queue.pop_front();
      queued[ei] = 0;
      if (!p.edges[ei].alive) continue;
      p.edges[ei].arc_pending = false;  // set again when an end loses labels below
      for (int side = 0; side < 2 && !p.infeasible; ++side) {
        WEdge& e = p.edges[ei];
        const std::uint32_t x = side == 0 ? e.u : e.v;
        const auto& own = side == 0 ? e.rc : e.cc;
        const auto& oth = side == 0 ? e.cc : e.rc;
        const std::uint32_t own_n = side == 0 ? e.rows : e.cols, oth_n = side == 0 ? e.cols : e.rows;
        // classes may be unused here (keep_labels below defers their removal): only the used
        // ones are scanned (after fix_by_threshold most pairs are inf and most classes unused)
        const std::vector<std::uint32_t> own_list = first_uses(own, own_n), oth_list = first_uses(oth, oth_n);
        std::vector<char> supported(own_n, 0);
        const FiniteEntries* fin = own_list.size() * oth_list.size() < kIndexedRevision ? nullptr : &finite_entries(e, side == 0);
        if (fin == nullptr || fin->dense) {
          for (const std::uint32_t r : own_list)
            for (std::size_t i = 0; i < oth_list.size() && !supported[r]; ++i) {
              const std::uint32_t c = oth_list[i];
              supported[r] = (side == 0 ? e.d[std::size_t{r} * e.cols + c] : e.d[std::size_t{c} * e.cols + r]) < inf;
            }
        } else {  // a large matrix: its finite entries, indexed once per matrix and side
          std::vector<char> oth_used(oth_n, 0);
          for (auto c : oth_list) oth_used[c] = 1;
          for (const std::uint32_t r : own_list)
            for (std::uint32_t i = fin->start[r]; i < fin->start[r + 1] && !supported[r]; ++i) supported[r] = oth_used[fin->other[i]];
        }
        std::vector<char> keep(own.size());
        bool all = true;
        for (std::size_t a = 0; a < own.size(); ++a) all = (keep[a] = supported[own[a]]) && all;
        if (!all) {
          stats.labels_removed += p.keep_labels(x, keep, Problem::ClassCleanup::deferred);
          if (p.infeasible) break;
          touch(x, ei);
          if (!queued[ei]) {
            queued[ei] = 1;
            queue.push_back(ei);
          }
        }
      }
    }
    // limits: a label whose extra usage exceeds the slack goes (one limit at a time, then the
    // edges its removals touched)
    while (!limit_queue.empty() && !p.infeasible && queue.empty()) {
      if (poll.passed()) return stop();
      const std::uint32_t k = limit_queue.front();
      limit_queue.pop_front();
      limit_queued[k] = 0;
      const WLimit& l = p.limits[k];
      const std::int64_t slack = l.limit - least[k];
      if (slack < 0) {
        p.infeasible = true;
        break;
      }
      // a removal below changes `least` and the member's usage, never the member list
      for (std::size_t i = 0; i < l.nodes.size() && !p.infeasible; ++i) {
        const std::uint32_t u = l.nodes[i];
        if (hi[u] - lo[u] <= slack) continue;
        if (poll.passed()) return stop();
        const auto& us = p.nodes[u].usage;
        std::vector<char> keep(us.size());
        for (std::size_t a = 0; a < us.size(); ++a) keep[a] = us[a] - lo[u] <= slack;
        stats.labels_removed += p.keep_labels(u, keep, Problem::ClassCleanup::deferred);
        if (p.infeasible) break;
        touch(u, ~0u);  // re-queues k too when u's least usage rose (its slack shrank)
      }
    }
  }
  p.tidy_classes();
  return !p.infeasible;
}

/// Folds a node with a single label into its neighbours.
inline void fix_node(Problem& p, std::uint32_t u, ReduceStats& stats) {
  WNode& n = p.nodes[u];
  p.record(u);
  p.constant = sat_add(p.constant, n.theta[0]);
  while (!n.edges.empty()) {
    const std::uint32_t ei = n.edges.back();
    WEdge& e = p.edges[ei];
    const std::uint32_t w = e.other(u);
    WNode& m = p.nodes[w];
    const bool u_first = e.u == u;
    std::vector<char> keep(m.theta.size(), 1);
    bool all = true;
    for (std::size_t b = 0; b < m.theta.size(); ++b) {
      const fine_t d = u_first ? e.at(0, b) : e.at(b, 0);
      m.theta[b] = sat_add(m.theta[b], d);
      if (m.theta[b] >= inf) all = (keep[b] = 0);
    }
    p.drop_edge(ei);
    if (!all) stats.labels_removed += p.keep_labels(w, keep);
  }
  p.leave_limits(u);
  n.alive = false;
  ++stats.fixed;
}

/// Folds a separable edge into the unary costs; false when it is not separable.
inline bool fold_if_separable(Problem& p, std::uint32_t ei, ReduceStats& stats) {
  WEdge& e = p.edges[ei];
  const std::uint32_t C = e.cols;
  if (e.rc.empty() || e.cc.empty()) return false;
  // only the classes in use count (an edge's classes are compacted lazily, Problem::add_edge):
  // walked through the labels' classes, so most edges stop at their first pair, allocating nothing
  const std::uint32_t r0 = e.rc[0], c0 = e.cc[0];
  const auto at = [&](std::uint32_t r, std::uint32_t c) { return e.d[std::size_t{r} * C + c]; };
  for (const std::uint32_t r : e.rc)
    for (const std::uint32_t c : e.cc)  // every entry in use finite, and d(r, c) = d(r, c0) + d(r0, c) - d(r0, c0)
      if (at(r, c) >= inf || at(r, c) - at(r, c0) - at(r0, c) + at(r0, c0) != 0) return false;
  WNode& nu = p.nodes[e.u];
  WNode& nv = p.nodes[e.v];
  for (std::size_t a = 0; a < nu.theta.size(); ++a) nu.theta[a] += at(e.rc[a], c0);
  for (std::size_t b = 0; b < nv.theta.size(); ++b) nv.theta[b] += at(r0, e.cc[b]) - at(r0, c0);
  p.drop_edge(ei);
  ++stats.separable_edges;
  return true;
}

/// Leaf elimination: u has one edge.
inline void eliminate_leaf(Problem& p, std::uint32_t u, ReduceStats& stats) {
  const std::uint32_t ei = p.nodes[u].edges[0];
  Elimination& el = p.record(u);
  el.factors.push_back(p.factor_from(ei, u));
  const ElimFactor& f = el.factors.back();
  const WNode& n = p.nodes[u];
  // best theta per own row class
  std::uint32_t rows = 0;
  for (auto r : f.rc) rows = std::max(rows, r + 1);
  std::vector<fine_t> best(rows, inf);
  for (std::size_t a = 0; a < n.theta.size(); ++a) best[f.rc[a]] = std::min(best[f.rc[a]], n.theta[a]);
  std::vector<fine_t> col(f.cols, inf);
  for (std::uint32_t c = 0; c < f.cols; ++c)
    for (std::uint32_t r = 0; r < rows; ++r)
      if (best[r] < inf) col[c] = std::min(col[c], sat_add(best[r], f.at(r, c)));
  const std::uint32_t w = f.other;
  const WEdge& e = p.edges[ei];
  const auto& wcls = e.u == u ? e.cc : e.rc;
  WNode& m = p.nodes[w];
  std::vector<char> keep(m.theta.size(), 1);
  bool all = true;
  for (std::size_t b = 0; b < m.theta.size(); ++b) {
    m.theta[b] = sat_add(m.theta[b], col[wcls[b]]);
    if (m.theta[b] >= inf) all = (keep[b] = 0);
  }
  p.drop_edge(ei);
  p.leave_limits(u);
  p.nodes[u].alive = false;
  if (!all) stats.labels_removed += p.keep_labels(w, keep);
  ++stats.leaves;
}

/// The end of a degree-2 elimination of u: its factors recorded (reconstruction), its two edges
/// replaced by `ne`, u gone.
inline void finish_series(Problem& p, std::uint32_t u, WEdge ne, ElimFactor f1, ElimFactor f2, ReduceStats& stats) {
  const std::uint32_t e1 = p.nodes[u].edges[0], e2 = p.nodes[u].edges[1];
  Elimination& el = p.record(u);
  el.factors.push_back(std::move(f1));
  el.factors.push_back(std::move(f2));
  p.drop_edge(e1);
  p.drop_edge(e2);
  p.leave_limits(u);
  p.nodes[u].alive = false;
  p.add_edge(std::move(ne));
  ++stats.series;
}

/// The matrices degree-2 eliminations made, by what they were made of: the groups of the node's
/// labels (class on each edge, least unary cost) and, per edge, the same matrix object in the
/// same orientation. The eliminations of a repeated block's nodes then share one new matrix
/// instead of each computing its min-plus product (and their neighbours' dominance contexts,
/// DominanceMemo, stay equal). Entries refer to matrices without keeping them alive
/// (SharedMatrix::Ref): a matrix that no edge holds any more is freed and its entry matches
/// nothing (keeping them held 68 MiB more on longformer_fw's 2x2x2 reductions).
class SeriesMemo {
 public:
  /// What eliminate_series's new matrix is made of.
  struct Key {
    std::vector<std::tuple<std::uint32_t, std::uint32_t, fine_t>> groups;  ///< (class on e1, class on e2, least theta)
    SharedMatrix::Ref d1, d2;
    bool row1 = true, row2 = true;  ///< the node is the row side of e1 / e2
    std::uint32_t own1 = 0, cols1 = 0, own2 = 0, cols2 = 0;
    std::uint64_t hash = 0;
    [[nodiscard]] bool operator==(const Key& o) const {
      return hash == o.hash && d1.same(o.d1) && d2.same(o.d2) && row1 == o.row1 && row2 == o.row2 && own1 == o.own1 && cols1 == o.cols1 &&
             own2 == o.own2 && cols2 == o.cols2 && groups == o.groups;
    }
  };

  [[nodiscard]] static Key key_of(const std::map<std::pair<std::uint32_t, std::uint32_t>, fine_t>& groups, const ElimFactor& f1,
                                  const ElimFactor& f2) {
    Key k{{}, SharedMatrix::Ref(f1.d), SharedMatrix::Ref(f2.d), f1.own_is_row, f2.own_is_row, f1.own, f1.cols, f2.own, f2.cols, 0};
    std::uint64_t h = 1469598103934665603ull;  // FNV-1a over words
    const auto mix = [&h](std::uint64_t x) { h = (h ^ x) * 1099511628211ull; };
    k.groups.reserve(groups.size());
    for (const auto& [classes, theta] : groups) {
      k.groups.emplace_back(classes.first, classes.second, theta);
      mix(classes.first);
      mix(classes.second);
      mix(static_cast<std::uint64_t>(theta));
    }
    for (const std::uint64_t x :
         {std::uint64_t{f1.d.identity()}, std::uint64_t{f2.d.identity()}, std::uint64_t{f1.own_is_row}, std::uint64_t{f2.own_is_row},
          std::uint64_t{f1.own}, std::uint64_t{f1.cols}, std::uint64_t{f2.own}, std::uint64_t{f2.cols}})
      mix(x);
    k.hash = h;
    return k;
  }

  /// The matrix made of a key equal to `k` while it lives, or an empty one.
  [[nodiscard]] SharedMatrix find(const Key& k) {
    const auto [first, last] = entries_.equal_range(k.hash);
    for (auto it = first; it != last; ++it)
      if (it->second.key == k)
        if (SharedMatrix made = it->second.held.size() > 0 ? it->second.held : it->second.made.get(); made.size() > 0) {
          ++hits_;
          return made;
        }
    return {};
  }
  /// How many eliminations took a stored matrix.
  [[nodiscard]] std::size_t hits() const noexcept { return hits_; }

  /// Stores `d` as made of `k`; it is kept alive while the matrices kept stay within
  /// `max_held_bytes` (a new matrix is often merged into a parallel edge or eliminated again
  /// before the next block's node comes up).
  void store(Key k, const SharedMatrix& d) {
    const std::uint64_t h = k.hash;
    Entry e{std::move(k), SharedMatrix::Ref(d), {}};
    if (held_bytes_ + d.size() * sizeof(fine_t) <= max_held_bytes) {
      held_bytes_ += d.size() * sizeof(fine_t);
      e.held = d;
    }
    entries_.emplace(h, std::move(e));
  }
  /// The most matrix bytes the memo keeps alive (entries beyond it refer to theirs weakly).
  static constexpr std::size_t max_held_bytes = std::size_t{32} << 20;

 private:
  struct Entry {
    Key key;
    SharedMatrix::Ref made;
    SharedMatrix held;  ///< `made`, kept alive (within max_held_bytes), or empty
  };
  std::unordered_multimap<std::uint64_t, Entry> entries_;
  std::size_t held_bytes_ = 0;
  std::size_t hits_ = 0;
};

/// Degree-2 elimination: u's two edges become one edge between its neighbours (its matrix taken
/// from `memo` when one made of the same is there). False (nothing done) when the work would
/// exceed the options' budget.
inline bool eliminate_series(Problem& p, std::uint32_t u, const ReduceOptions& opt, ReduceStats& stats, SeriesMemo* memo = nullptr) {
  const std::uint32_t e1 = p.nodes[u].edges[0], e2 = p.nodes[u].edges[1];
  ElimFactor f1 = p.factor_from(e1, u), f2 = p.factor_from(e2, u);
  const WNode& n = p.nodes[u];
  // groups of u's labels by (row class on e1, row class on e2): best theta
  std::map<std::pair<std::uint32_t, std::uint32_t>, fine_t> groups;
  for (std::size_t a = 0; a < n.theta.size(); ++a) {
    auto [it, fresh] = groups.emplace(std::make_pair(f1.rc[a], f2.rc[a]), n.theta[a]);
    if (!fresh) it->second = std::min(it->second, n.theta[a]);
  }
  const std::size_t cells = std::size_t{f1.cols} * f2.cols;
  if (cells > opt.max_edge_cells || groups.size() * cells > opt.max_series_work) return false;
  WEdge ne;
  ne.u = f1.other;
  ne.v = f2.other;
  {
    const WEdge& a = p.edges[e1];
    const WEdge& b = p.edges[e2];
    ne.rc = a.u == u ? a.cc : a.rc;
    ne.mu = a.u == u ? a.mv : a.mu;
    ne.cc = b.u == u ? b.cc : b.rc;
    ne.mv = b.u == u ? b.mv : b.mu;
  }
  ne.rows = f1.cols;
  ne.cols = f2.cols;
  std::optional<SeriesMemo::Key> made_of;
  if (memo != nullptr) {
    made_of = SeriesMemo::key_of(groups, f1, f2);
    if (SharedMatrix made = memo->find(*made_of); made.size() > 0) {
      ne.d = std::move(made);
      finish_series(p, u, std::move(ne), std::move(f1), std::move(f2), stats);
      return true;
    }
  }
  std::vector<fine_t> nd(cells, inf);
  std::vector<fine_t> t1, t2;  // transposed copies only when a matrix is stored other x own
  if (!f1.own_is_row) t1 = f1.rows();
  if (!f2.own_is_row) t2 = f2.rows();
  const fine_t* m1 = f1.own_is_row ? f1.d.data() : t1.data();
  const fine_t* m2 = f2.own_is_row ? f2.d.data() : t2.data();
  // nd(c1, c2) = min over the groups (rc1, rc2) of theta + m1(rc1, c1) + m2(rc2, c2). Groups that
  // share rc2 first take their minimum over c1 (Y(rc2, c1) = min theta + m1(rc1, c1)), or those
  // that share rc1 over c2, whichever leaves less work: the product then runs over the distinct
  // classes instead of the groups (longformer_fw on 2x2x2: 1.5 G steps instead of 2.2 G).
  struct Term {
    fine_t theta;
    const fine_t* left;   // f1.cols entries
    const fine_t* right;  // f2.cols entries
  };
  std::vector<std::uint32_t> k1, k2;  // the distinct classes of the groups on e1 / e2, ascending
  for (const auto& [key, th] : groups) {
    k1.push_back(key.first);
    k2.push_back(key.second);
  }
  for (auto* k : {&k1, &k2}) {
    std::sort(k->begin(), k->end());
    k->erase(std::unique(k->begin(), k->end()), k->end());
  }
  const std::size_t c1n = f1.cols, c2n = f2.cols;
  const std::size_t plain = groups.size() * cells, by_right = groups.size() * c1n + k2.size() * cells,
                    by_left = groups.size() * c2n + k1.size() * cells;
  std::vector<Term> terms;
  std::vector<fine_t> folded;  // Y (k2 x c1n) or Z (k1 x c2n)
  if (std::min(by_right, by_left) < plain) {
    const bool right = by_right <= by_left;
    const std::vector<std::uint32_t>& ks = right ? k2 : k1;
    const std::size_t len = right ? c1n : c2n;
    folded.assign(ks.size() * len, inf);
    for (std::size_t i = 0; i < ks.size(); ++i)
      terms.push_back({0, right ? &folded[i * len] : &m1[std::size_t{ks[i]} * c1n], right ? &m2[std::size_t{ks[i]} * c2n] : &folded[i * len]});
    for (const auto& [key, th] : groups) {
      const std::size_t i = static_cast<std::size_t>(std::lower_bound(ks.begin(), ks.end(), right ? key.second : key.first) - ks.begin());
      fine_t* out = &folded[i * len];
      const fine_t* in = right ? &m1[std::size_t{key.first} * c1n] : &m2[std::size_t{key.second} * c2n];
      for (std::size_t c = 0; c < len; ++c) out[c] = std::min(out[c], sat_add(th, in[c]));
    }
  } else {
    terms.reserve(groups.size());
    for (const auto& [key, th] : groups) terms.push_back({th, &m1[std::size_t{key.first} * c1n], &m2[std::size_t{key.second} * c2n]});
  }
  // min-plus product, branch-free inside: a forbidden right entry gives a sum far above any finite
  // value (left + right < 2^62), clamped back to inf afterwards (clamp_forbidden). Tiles of rows
  // of the new matrix stay in the first-level cache while every term adds into them.
  constexpr std::size_t tile_cells = 4096;  // 32 KiB of fine_t
  const std::size_t tile = std::max<std::size_t>(1, tile_cells / std::max<std::size_t>(1, c2n));
  for (std::size_t t0 = 0; t0 < c1n; t0 += tile) {
    const std::size_t t_end = std::min(c1n, t0 + tile);
    for (const Term& t : terms)
      for (std::size_t c1 = t0; c1 < t_end; ++c1) {
        const fine_t x = sat_add(t.theta, t.left[c1]);
        if (x >= inf) continue;
        min_plus_into(&nd[c1 * c2n], t.right, x, c2n);
      }
  }
  for (auto& x : nd) x = clamp_forbidden(x);
  ne.d = SharedMatrix(std::move(nd));
  if (made_of) memo->store(std::move(*made_of), ne.d);
  finish_series(p, u, std::move(ne), std::move(f1), std::move(f2), stats);
  return true;
}

/// Whether dominance looks at u: two labels at least, and the pairwise work (labels^2 x edges)
/// within `opt.max_dominance_work`.
[[nodiscard]] inline bool dominance_looks_at(const Problem& p, std::uint32_t u, const ReduceOptions& opt) {
  const WNode& n = p.nodes[u];
  const std::size_t L = n.theta.size();
  return L >= 2 && L * L * std::max<std::size_t>(1, n.edges.size()) <= opt.max_dominance_work;
}

/// The labels of u that no other label dominates (see the file comment): keep[a] = 1 for a label
/// kept, per current label of u; empty when u is not looked at (dominance_looks_at). Reads u's
/// unary costs and usages and, per edge, its matrix, orientation and both class maps, nothing
/// else.
[[nodiscard]] inline std::vector<char> undominated_labels(const Problem& p, std::uint32_t u, const ReduceOptions& opt) {
  if (!dominance_looks_at(p, u, opt)) return {};
  const WNode& n = p.nodes[u];
  const std::size_t L = n.theta.size();
  // per edge: maxdiff(ra, rb) = max over the neighbour's classes in use of d(ra, c) - d(rb, c),
  // computed when asked (most pairs are rejected by a probe column or the first edges; a memo of
  // own x own entries cost more to fill than the few pairs that reach it)
  struct Table {
    std::uint32_t own = 0, oth = 0;
    bool first = true;
    const WEdge* e = nullptr;
    std::vector<std::uint32_t> used;    // the neighbour's classes in use
    std::vector<std::uint32_t> lo, hi;  // per own class: the column in use of its least / largest finite cost
    std::vector<fine_t> min, max;       // per own class: that least / largest cost (inf: no finite one)
    std::vector<fine_t> dear;           // per own class: its largest cost, inf when any is forbidden
    const std::vector<std::uint32_t>* cls = nullptr;
    [[nodiscard]] fine_t d(std::uint32_t r, std::uint32_t c) const {
      return first ? e->d[std::size_t{r} * e->cols + c] : e->d[std::size_t{c} * e->cols + r];
    }
    /// A lower bound of maxdiff(ra, rb): the difference at b's cheapest and at a's dearest column.
    [[nodiscard]] fine_t probe(std::uint32_t ra, std::uint32_t rb) const {
      fine_t m = -inf;
      if (min[rb] < inf) {  // d(rb, lo[rb]) = min[rb]
        const fine_t da = d(ra, lo[rb]);
        if (da >= inf) return inf;
        m = da - min[rb];
      }
      const fine_t db = d(rb, hi[ra]);
      if (db < inf) {  // d(ra, hi[ra]) = max[ra]
        if (max[ra] >= inf) return inf;
        m = std::max(m, max[ra] - db);
      }
      return m;
    }
    /// maxdiff(ra, rb), or some value above `enough` once the max is known to exceed it (the
    /// caller's pair is then not dominated: most pairs stop within a few columns).
    [[nodiscard]] fine_t get(std::uint32_t ra, std::uint32_t rb, fine_t enough) const {
      fine_t m = ra == rb ? 0 : -inf;
      if (ra == rb) return m;
      if (!dense.empty()) {  // the same, on contiguous rows
        const fine_t* xa = dense.data() + std::size_t{ra} * used.size();
        const fine_t* xb = dense.data() + std::size_t{rb} * used.size();
        for (std::size_t i = 0; i < used.size(); ++i) {
          if (xb[i] >= inf) continue;
          if (xa[i] >= inf) return inf;
          m = std::max(m, xa[i] - xb[i]);
          if (m > enough) return m;
        }
        return m;
      }
      for (auto c : used) {
        const fine_t db = d(rb, c);
        if (db >= inf) continue;
        const fine_t da = d(ra, c);
        if (da >= inf) return inf;
        m = std::max(m, da - db);
        if (m > enough) return m;
      }
      return m;
    }
    /// Per own class, its costs at the columns in `used` (own x used, row-major): get() reads two
    /// rows instead of striding through the edge's matrix when the node is its column side
    /// (cache misses on every cell: most of GPT-2's training-step reductions on 2x2x2). Empty
    /// when it would be larger than max_dense_cells.
    std::vector<fine_t> dense;
  };
  constexpr std::size_t max_dense_cells = std::size_t{1} << 22;
  std::vector<Table> tables;
  for (auto ei : n.edges) {
    const WEdge& e = p.edges[ei];
    Table t;
    t.first = e.u == u;
    t.e = &e;
    t.own = t.first ? e.rows : e.cols;
    t.oth = t.first ? e.cols : e.rows;
    t.cls = t.first ? &e.rc : &e.cc;
    std::vector<char> seen(t.oth, 0);
    for (auto c : (t.first ? e.cc : e.rc))
      if (!seen[c]) {
        seen[c] = 1;
        t.used.push_back(c);
      }
    t.lo.assign(t.own, t.used.empty() ? 0 : t.used[0]);
    t.hi.assign(t.own, t.used.empty() ? 0 : t.used[0]);
    t.min.assign(t.own, t.used.empty() ? 0 : inf);
    t.max.assign(t.own, t.used.empty() ? 0 : inf);
    t.dear.assign(t.own, t.used.empty() ? 0 : inf);
    if (!t.first && std::size_t{t.own} * t.used.size() <= max_dense_cells) {
      t.dense.resize(std::size_t{t.own} * t.used.size());
      for (std::size_t i = 0; i < t.used.size(); ++i) {
        const fine_t* column = e.d.data() + std::size_t{t.used[i]} * e.cols;
        for (std::uint32_t r = 0; r < t.own; ++r) t.dense[std::size_t{r} * t.used.size() + i] = column[r];
      }
    }
    for (std::uint32_t r = 0; r < t.own; ++r) {
      fine_t mn = inf, mx = -inf;
      bool forbidden_seen = false;
      // the row's costs at the columns in use, contiguous in `dense` when it was made
      const fine_t* row = t.dense.empty() ? nullptr : t.dense.data() + std::size_t{r} * t.used.size();
      for (std::size_t i = 0; i < t.used.size(); ++i) {
        const std::uint32_t c = t.used[i];
        const fine_t x = row != nullptr ? row[i] : t.d(r, c);
        if (x >= inf) {
          forbidden_seen = true;
          continue;
        }
        if (x < mn) {
          mn = x;
          t.lo[r] = c;
        }
        if (x > mx) {
          mx = x;
          t.hi[r] = c;
        }
      }
      if (!t.used.empty()) {
        t.min[r] = mn;
        t.max[r] = mn >= inf ? inf : mx;
        t.dear[r] = forbidden_seen ? inf : mx;
      }
    }
    tables.push_back(std::move(t));
  }
  // Two necessary conditions, summed over the edges: maxdiff(a, b) >= min_c d(a, c) - min_c d(b, c)
  // (take b's cheapest column: infinite when a forbids it) and, when b forbids nothing there,
  // >= max_c d(a, c) - max_c d(b, c) (a's dearest column; infinite when a forbids any column b
  // allows). So a can only dominate b when theta + the sum of row minima is no larger at a than
  // at b, and the same for the row maxima with a row that forbids anything counted as infinite
  // (a row [0, 10] dominates [0, inf]: its maximum is larger, but the inf column is skipped).
  // Candidate dominators are walked in order of the first sum and the walk stops past b's.
  std::vector<fine_t> key_min(L), key_max(L);
  for (std::uint32_t a = 0; a < L; ++a) {
    fine_t lo = n.theta[a], hi = n.theta[a];
    for (const auto& t : tables) {
      lo = sat_add(lo, t.min[(*t.cls)[a]]);
      hi = sat_add(hi, t.dear[(*t.cls)[a]]);
    }
    key_min[a] = lo;
    key_max[a] = hi;
  }
  std::vector<char> keep(L, 1);
  const bool usage = !n.usage.empty() && !n.limits.empty();
  // labels with the same class on every edge differ only in their unary cost (and usage): the
  // cheapest of each group stays (the first by index among equals), before the pairwise test;
  // groups are found by sorting on a hash of the classes, then checked class by class
  {
    const auto same_group = [&](std::uint32_t x, std::uint32_t y) {
      for (const auto& t : tables)
        if ((*t.cls)[x] != (*t.cls)[y]) return false;
      return !usage || n.usage[x] == n.usage[y];
    };
    std::vector<std::uint64_t> h(L, 0);
    for (std::uint32_t a = 0; a < L; ++a) {
      for (const auto& t : tables) h[a] = h[a] * 0x9E3779B97F4A7C15ull + (*t.cls)[a] + 1;
      if (usage) h[a] = h[a] * 0x9E3779B97F4A7C15ull + static_cast<std::uint64_t>(n.usage[a]);
    }
    std::vector<std::uint32_t> order(L);
    for (std::uint32_t a = 0; a < L; ++a) order[a] = a;
    std::sort(order.begin(), order.end(), [&](std::uint32_t x, std::uint32_t y) {
      if (h[x] != h[y]) return h[x] < h[y];
      return n.theta[x] != n.theta[y] ? n.theta[x] < n.theta[y] : x < y;
    });
    const std::vector<std::uint32_t> leader = leaders_of_equal(order, h, same_group);  // runs in (theta, index) order
    for (std::uint32_t a = 0; a < L; ++a) keep[a] = leader[a] == a ? 1 : 0;
  }
  // dominators are looked for among the remaining labels least in key_min only (a label that
  // dominates another is cheap itself; missing a dominance only leaves a label in place)
  std::vector<std::uint32_t> by_cost;
  for (std::uint32_t a = 0; a < L; ++a)
    if (keep[a]) by_cost.push_back(a);
  std::stable_sort(by_cost.begin(), by_cost.end(), [&](std::uint32_t x, std::uint32_t y) { return key_min[x] < key_min[y]; });
  if (by_cost.size() > opt.dominators) by_cost.resize(opt.dominators);
  // in context: theta(a) plus a's costs at b's cheapest column of every edge (b's best
  // context), capped at inf; a can only dominate b when it is no dearer there than b
  // (= key_min[b]). Computed for the pairs that pass the key tests only (a pass over every a per
  // b cost L^2 per edge: most of GPT-2's training-step reductions on 2x2x2).
  std::vector<std::uint32_t> context(tables.size());  // per edge: b's cheapest column
  // whether b is dominated by a label kept (then b is dropped)
  const auto test = [&](std::size_t b) -> bool {
    if (!keep[b]) return false;
    const bool filter = key_min[b] < inf;
    if (filter)
      for (std::size_t i = 0; i < tables.size(); ++i)
        if (!tables[i].used.empty()) context[i] = tables[i].lo[(*tables[i].cls)[b]];
    const auto in_context = [&](std::size_t a) {
      fine_t x = n.theta[a];
      for (std::size_t i = 0; i < tables.size(); ++i)
        if (!tables[i].used.empty()) x = std::min(x + tables[i].d((*tables[i].cls)[a], context[i]), inf);
      return x;
    };
    for (const std::size_t a : by_cost) {
      if (key_min[a] > key_min[b]) break;
      if (a == b || !keep[a] || key_max[a] > key_max[b]) continue;
      if (usage && n.usage[a] > n.usage[b]) continue;
      if (filter && in_context(a) > key_min[b]) continue;
      fine_t total = n.theta[a] - n.theta[b];
      // cheap necessary condition first (see Table::probe)
      fine_t probe = total;
      for (const auto& t : tables) {
        if (t.used.empty()) continue;
        const fine_t m = t.probe((*t.cls)[a], (*t.cls)[b]);
        if (m >= inf) {
          probe = inf;
          break;
        }
        if (m > -inf) probe += m;
        if (probe > 0) break;
      }
      if (probe > 0) continue;
      for (const auto& t : tables) {
        const fine_t m = t.get((*t.cls)[a], (*t.cls)[b], -total);
        if (m >= inf) {
          total = inf;
          break;
        }
        if (m <= -inf) continue;  // b has no finite partner here (arc consistency removes it)
        total += m;
        if (total > 0) break;
      }
      if (total <= 0) {
        keep[b] = 0;
        return true;
      }
    }
    return false;
  };
  // On a node of many labels the test first runs on every `dominance_sample`-th label; when none
  // of them is dominated the others are not tried (dominance is a reduction: a label left in place
  // costs the later steps a little, never the optimum). longformer_fw on 2x2x2: 1,177 of 1,893
  // looks removed 22 labels in all and took 229 of its 764 ms.
  const std::size_t stride = opt.dominance_sample;
  if (stride > 1 && L >= opt.dominance_sample_labels) {
    std::size_t found = 0;
    for (std::size_t b = 0; b < L; b += stride) found += test(b) ? 1 : 0;
    if (found > 0)
      for (std::size_t b = 0; b < L; ++b)
        if (b % stride != 0) test(b);
  } else {
    for (std::size_t b = 0; b < L; ++b) test(b);
  }
  return keep;
}

/// The results of undominated_labels by node context, for the nodes of repeated blocks: a node
/// whose context (unary costs, usages when the usage test applies, and per edge, in order: the
/// same matrix object, its shape and orientation, and both class maps) equals one already looked
/// at takes that node's result without building its tables (labels x neighbour classes per edge)
/// or testing pairs. Equal contexts give equal results: undominated_labels reads nothing else.
/// Entries refer to matrices without keeping them alive (SharedMatrix::Ref): those that class
/// drops, fixing and merges replace are freed as before, and their entries match nothing
/// (keeping them held 96 MiB more on longformer_fw's 2x4 reductions with every candidate).
class DominanceMemo {
 public:
  /// What undominated_labels reads of a node.
  struct Context {
    struct Side {
      SharedMatrix::Ref d;
      bool first = false;                                ///< the node is the edge's row side
      std::uint32_t own_classes = 0, other_classes = 0;  ///< the matrix's shape, seen from the node
      std::vector<std::uint32_t> own, other;
      [[nodiscard]] bool operator==(const Side& o) const {
        return d.same(o.d) && first == o.first && own_classes == o.own_classes && other_classes == o.other_classes && own == o.own &&
               other == o.other;
      }
    };
    std::vector<fine_t> theta;
    std::vector<std::int64_t> usage;  ///< empty when the usage test does not apply
    std::vector<Side> edges;
    std::uint64_t hash = 0;
    [[nodiscard]] bool operator==(const Context& o) const { return hash == o.hash && theta == o.theta && usage == o.usage && edges == o.edges; }
  };

  [[nodiscard]] static Context context_of(const Problem& p, std::uint32_t u) {
    const WNode& n = p.nodes[u];
    Context c;
    std::uint64_t h = 1469598103934665603ull;  // FNV-1a over words
    const auto mix = [&h](std::uint64_t x) { h = (h ^ x) * 1099511628211ull; };
    c.theta = n.theta;
    for (const fine_t x : n.theta) mix(static_cast<std::uint64_t>(x));
    if (!n.usage.empty() && !n.limits.empty()) {
      c.usage = n.usage;
      for (const std::int64_t x : n.usage) mix(static_cast<std::uint64_t>(x));
    }
    for (const std::uint32_t ei : n.edges) {
      const WEdge& e = p.edges[ei];
      const bool first = e.u == u;
      Context::Side side{SharedMatrix::Ref(e.d), first, first ? e.rows : e.cols, first ? e.cols : e.rows, first ? e.rc : e.cc, first ? e.cc : e.rc};
      mix(e.d.identity());
      mix(first ? 1 : 2);
      mix(side.own_classes);
      mix(side.other_classes);
      for (const std::uint32_t x : side.own) mix(x);
      mix(~std::uint64_t{0});
      for (const std::uint32_t x : side.other) mix(x);
      c.edges.push_back(std::move(side));
    }
    c.hash = h;
    return c;
  }

  /// The stored result of a context equal to `c`, or nullptr.
  [[nodiscard]] const std::vector<char>* find(const Context& c) {
    const auto [first, last] = entries_.equal_range(c.hash);
    for (auto it = first; it != last; ++it)
      if (it->second.first == c) {
        ++hits_;
        return &it->second.second;
      }
    return nullptr;
  }
  /// How many looks took a stored result.
  [[nodiscard]] std::size_t hits() const noexcept { return hits_; }

  void store(Context c, std::vector<char> keep) {
    const std::uint64_t h = c.hash;
    entries_.emplace(h, std::make_pair(std::move(c), std::move(keep)));
  }

 private:
  std::unordered_multimap<std::uint64_t, std::pair<Context, std::vector<char>>> entries_;
  std::size_t hits_ = 0;
};

/// Removes dominated labels of u (see the file comment), taking the result of an equal context
/// from `memo` when one is given. Returns the number removed.
inline std::size_t remove_dominated(Problem& p, std::uint32_t u, const ReduceOptions& opt, DominanceMemo* memo = nullptr) {
  const auto apply = [&](const std::vector<char>& keep) -> std::size_t { return keep.empty() ? 0 : p.keep_labels(u, keep); };
  if (memo == nullptr || !dominance_looks_at(p, u, opt)) return apply(undominated_labels(p, u, opt));
  DominanceMemo::Context context = DominanceMemo::context_of(p, u);
  if (const std::vector<char>* keep = memo->find(context)) return apply(*keep);
  std::vector<char> keep = undominated_labels(p, u, opt);
  memo->store(std::move(context), keep);
  return apply(keep);
}

/// Whether reduce_labels also removes dominated labels.
enum class Dominance { skip, apply };

/// The label reductions to a fixpoint: arc consistency and limits (propagate), fixed nodes,
/// separable edges, and dominated labels when `dominance` says so (and the options allow it).
/// Returns false when the problem is infeasible.
inline bool reduce_labels(Problem& p, const ReduceOptions& opt, ReduceStats& stats, Dominance dominance) {
  bool changed = true;
  DeadlinePoll poll(opt.deadline, 1);  // per node: one dominance test can take ~0.1 s on a 2x2x2x2 mesh
  DominanceMemo memo;                  // the nodes of repeated blocks share their results
  while (changed) {
    changed = false;
    if (!propagate(p, stats, opt.deadline)) return false;
    if (opt.deadline.passed()) return !p.infeasible;
    for (std::uint32_t u = 0; u < p.nodes.size(); ++u) {
      if (!p.nodes[u].alive) continue;
      if (p.num_labels(u) == 1) {
        fix_node(p, u, stats);
        changed = true;
      }
    }
    if (p.infeasible) return false;
    for (std::uint32_t ei = 0; ei < p.edges.size(); ++ei)
      if (p.edges[ei].alive && fold_if_separable(p, ei, stats)) changed = true;
    if (opt.dominance && dominance == Dominance::apply) {
      // only nodes whose neighbourhood changed since they were last looked at (Problem::dirty;
      // drop_edge / add_edge / keep_labels / merges mark both ends, which covers the unary folds)
      for (std::uint32_t u = 0; u < p.nodes.size(); ++u) {
        if (poll.passed()) return !p.infeasible;
        if (!p.nodes[u].alive || !p.dirty[u] || p.dominance_checks[u] >= opt.dominance_checks) continue;
        p.dirty[u] = 0;
        ++p.dominance_checks[u];
        const std::size_t removed = remove_dominated(p, u, opt, &memo);
        if (removed > 0) {
          stats.dominated += removed;
          changed = true;
        }
      }
    }
  }
  return !p.infeasible;
}

/// Eliminates unprotected nodes of degree 0 and 1 (cheap, and they turn degree-2 nodes into
/// leaves), then degree-2 nodes one at a time, cheapest new edge first (estimated as labels x new
/// matrix cells), each when its work (label groups x new cells) stays within `series_work` and the
/// options' limits. Returns false when the problem is infeasible.
///
/// Worklists, not scans: an elimination changes the degrees and estimates of the nodes around
/// it only, so those are queued again (leaves on a stack, degree-2 nodes in a heap whose stale
/// entries are recognised when they come up); scanning every node after each elimination cost
/// ~10 % of a GPT-2 fw+bw FSDP solve.
inline bool eliminate_low_degree(Problem& p, const ReduceOptions& opt, ReduceStats& stats, std::size_t series_work) {
  ReduceOptions limits = opt;
  limits.max_series_work = std::min(opt.max_series_work, series_work);
  const auto estimate = [&](std::uint32_t u) {
    const WEdge& e1 = p.edges[p.nodes[u].edges[0]];
    const WEdge& e2 = p.edges[p.nodes[u].edges[1]];
    const std::size_t c1 = e1.u == u ? e1.cols : e1.rows, c2 = e2.u == u ? e2.cols : e2.rows;
    return p.num_labels(u) * c1 * c2;
  };
  const auto candidate = [&](std::uint32_t u) { return p.nodes[u].alive && !p.is_protected(u); };
  std::vector<std::uint32_t> leaves;
  using Entry = std::pair<std::size_t, std::uint32_t>;  // (estimate, node): least first, then lowest id
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> series;
  std::vector<char> skip(p.nodes.size(), 0);  // degree-2 nodes over the limits (until they change)
  // u's degree or estimate may have changed: queue it where it now belongs
  const auto requeue = [&](std::uint32_t u) {
    if (!candidate(u)) return;
    const std::size_t deg = p.degree(u);
    if (deg <= 1) leaves.push_back(u);
    else if (deg == 2) {
      skip[u] = 0;
      series.emplace(estimate(u), u);
    }
  };
  // u and its neighbours (a neighbour's estimate reads u's classes on their edge)
  const auto requeue_around = [&](std::uint32_t u) {
    requeue(u);
    for (auto ei : p.nodes[u].edges) requeue(p.edges[ei].other(u));
  };
  for (std::uint32_t u = 0; u < p.nodes.size(); ++u) requeue(u);
  DeadlinePoll poll(opt.deadline, 64);
  SeriesMemo memo;  // the nodes of repeated blocks share their new matrices
  while (!p.infeasible && !poll.passed()) {
    if (!leaves.empty()) {
      const std::uint32_t u = leaves.back();
      leaves.pop_back();
      if (!candidate(u)) continue;
      const std::size_t deg = p.degree(u);
      if (deg == 0) {
        WNode& n = p.nodes[u];
        const auto best = std::min_element(n.theta.begin(), n.theta.end());
        p.record(u);
        p.constant = sat_add(p.constant, *best);
        p.leave_limits(u);
        n.alive = false;
        ++stats.isolated;
      } else if (deg == 1) {
        const std::uint32_t w = p.edges[p.nodes[u].edges[0]].other(u);
        eliminate_leaf(p, u, stats);
        requeue_around(w);
      }
      continue;
    }
    if (series.empty()) break;
    const auto [work, u] = series.top();
    series.pop();
    if (!candidate(u) || p.degree(u) != 2 || skip[u]) continue;
    if (estimate(u) != work) continue;  // stale: u was queued again with its current estimate
    // the estimate counts labels; the real work counts u's label groups (pairs of classes), which
    // can be far fewer, so a node over the budget is tried and skipped only when it fails
    const std::uint32_t v = p.edges[p.nodes[u].edges[0]].other(u), w = p.edges[p.nodes[u].edges[1]].other(u);
    if (!eliminate_series(p, u, limits, stats, &memo)) {
      skip[u] = 1;
      continue;
    }
    requeue_around(v);
    requeue_around(w);
  }
  return !p.infeasible;
}

/// All reductions to a fixpoint. Returns false when the problem is infeasible.
///
/// Order: with dominance on, the label reductions without it and the cheap eliminations
/// (`early_series_work`) go first: they shrink the graph dominance then looks at, and a label
/// dominated before an elimination is still dominated after it (folding a leaf or a degree-2
/// node replaces an edge's largest difference by one no larger). Then the label reductions with
/// dominance (smaller domains make the remaining eliminations cheaper), then every elimination
/// within the options' limits.
inline bool reduce(Problem& p, const ReduceOptions& opt, ReduceStats& stats) {
  if (opt.dominance && opt.eliminate && opt.early_series_work > 0) {
    if (!reduce_labels(p, opt, stats, Dominance::skip)) return false;
    if (!eliminate_low_degree(p, opt, stats, opt.early_series_work)) return false;
  }
  if (!reduce_labels(p, opt, stats, Dominance::apply)) return false;
  if (opt.eliminate && !eliminate_low_degree(p, opt, stats, opt.max_series_work)) return false;
  return !p.infeasible;
}

}  // namespace ctshard::solve::detail
