#pragma once
/// \file solve/branch_and_bound.hpp
/// Depth-first branch and bound over the live nodes of a (reduced, reparametrized) working
/// problem. The bound of a partial labelling is
///
///   constant + sum over labelled u of h_u(x_u) + sum over unlabelled u of min_a h_u(a)
///            + sum over edges between unlabelled nodes of min theta'_e,
///
/// where h_u(a) = theta'_u(a) + the reparametrized costs of u's edges to labelled nodes. With
/// the dual's reparametrization the root bound is the dual bound, and it only grows down the tree.
/// A label is viable when the bound with it stays within the target and it keeps every enforced
/// usage limit within reach (the least usage of the unlabelled members counted); the node with
/// the fewest viable labels is branched on, its labels in increasing h order.
///
/// AND/OR decomposition: when the unlabelled nodes fall apart into several connected components
/// (no edge between them; edges to labelled nodes are already in h), their completions are
/// independent, and each is searched on its own for its best completion — the sum of the parts
/// instead of their product (a model's layers separate once the values between them are
/// labelled).
///
/// With one enforced usage limit the components are coupled only through it: each is searched for
/// its Pareto frontier of (cost, usage) completions instead of its best one, and the frontiers are
/// combined — one point each, the least total cost within the limit's slack (a multiple-choice
/// knapsack over the components, kept Pareto-small at each step). A component's partial labelling
/// whose every completion is no better in cost and usage than a point already found is pruned. In
/// a priced round (the Lagrangian penalisation of the limit) the searched cost h counts w·usage on
/// top of the cost: "cost" is h − w·usage there (`usage_weight`). With two or more enforced
/// limits the search does not split.

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <utility>
#include <vector>

#include "ctshard/solve/dual.hpp"
#include "ctshard/solve/problem.hpp"

namespace ctshard::solve::detail {

class BranchAndBound {
 public:
  /// Called with a full labelling of the live nodes (label index per node, by node id) and its
  /// cost in fine units; returns the new target (fine units; solutions above it are pruned).
  using Leaf = std::function<fine_t(const std::vector<std::uint32_t>& labels, fine_t cost)>;

  BranchAndBound(const Problem& p, fine_t target, Leaf leaf, std::chrono::steady_clock::time_point deadline,
                 std::size_t node_limit = static_cast<std::size_t>(-1))
      : p_(p), target_(target), leaf_(std::move(leaf)), deadline_(deadline), node_limit_(node_limit) {
    idx_.assign(p.nodes.size(), ~0u);
    for (std::uint32_t u = 0; u < p.nodes.size(); ++u)
      if (p.nodes[u].alive) {
        idx_[u] = static_cast<std::uint32_t>(live_.size());
        live_.push_back(u);
      }
    const std::size_t m = live_.size();
    h_.resize(m);
    hmin_.resize(m);
    x_.assign(m, -1);
    mark_.assign(m, 0);
    adj_.resize(m);
    bound_ = p.constant;
    for (std::size_t i = 0; i < m; ++i) {
      p.reparam_unary(live_[i], h_[i]);
      hmin_[i] = *std::min_element(h_[i].begin(), h_[i].end());
      bound_ = sat_add(bound_, hmin_[i]);
    }
    for (std::uint32_t ei = 0; ei < p.edges.size(); ++ei) {
      const WEdge& e = p.edges[ei];
      if (!e.alive) continue;
      const fine_t em = Srmp::edge_min(e);
      emin_.push_back(em);
      edge_id_.push_back(ei);
      const auto k = static_cast<std::uint32_t>(emin_.size() - 1);
      adj_[idx_[e.u]].push_back({k, idx_[e.v]});
      adj_[idx_[e.v]].push_back({k, idx_[e.u]});
      bound_ = sat_add(bound_, em);
    }
    // enforced limits
    limit_of_.resize(m);
    for (std::uint32_t li = 0; li < p.limits.size(); ++li) {
      const WLimit& l = p.limits[li];
      if (!l.enforced) continue;
      std::int64_t slack = l.limit;
      const auto k = static_cast<std::uint32_t>(slack_.size());
      for (auto u : l.nodes) {
        if (!p.nodes[u].alive) continue;
        const auto& us = p.nodes[u].usage;
        slack -= *std::min_element(us.begin(), us.end());
        limit_of_[idx_[u]].push_back(k);
      }
      slack_.push_back(slack);
      limit_index_.push_back(li);
    }
    min_usage_.assign(m, 0);
    for (std::size_t i = 0; i < m; ++i)
      if (!limit_of_[i].empty()) {
        const auto& us = p.nodes[live_[i]].usage;
        min_usage_[i] = *std::min_element(us.begin(), us.end());
      }
    // a search node scans the free nodes' labels and their limits: where that is long (thousands
    // of nodes in thousands of enforced limits, as on a staircase of IOPDDL intervals) the clock
    // is read at every node, else at every 256th (a node costing ~1 µs)
    std::size_t labels = 0, memberships = 0;
    for (std::size_t i = 0; i < m; ++i) {
      labels += h_[i].size();
      memberships += limit_of_[i].size() * h_[i].size();
    }
    check_mask_ = labels + memberships > 4096 ? 0 : 255;
  }

  /// The root bound (fine units).
  [[nodiscard]] fine_t root_bound() const noexcept { return bound_; }
  /// Called where the search reads the clock (every few thousand search nodes), e.g. for
  /// progress lines; empty: nothing.
  std::function<void()> on_poll;
  /// Per limit of the problem (Problem::limits index): the fine units per usage unit that the
  /// searched cost adds over the cost (a priced round's penalty n_k·scale); missing or empty: 0.
  /// Read by run(): the components of a split are compared on h − w·usage.
  std::vector<fine_t> usage_weight;

  /// Runs the search; true when it finished (every labelling within the target was seen).
  bool run() {
    if (std::any_of(slack_.begin(), slack_.end(), [](std::int64_t s) { return s < 0; })) return true;
    w_ = 0;
    split_with_limit_ = slack_.size() == 1;
    if (split_with_limit_ && limit_index_[0] < usage_weight.size()) {
      w_ = usage_weight[limit_index_[0]];
      split_with_limit_ = w_ >= 0 && w_ < forbidden_from;  // a weight out of the exact range: no split
    }
    labels_.assign(p_.nodes.size(), 0);
    aborted_ = false;
    std::vector<std::uint32_t> all(live_.size());
    for (std::uint32_t i = 0; i < all.size(); ++i) all[i] = i;
    Part top = whole(all, target_);
    dfs(top);
    return !aborted_;
  }

  [[nodiscard]] std::size_t nodes() const noexcept { return nodes_; }
  /// Search nodes where the unlabelled nodes fell apart and were searched component by component.
  [[nodiscard]] std::size_t splits() const noexcept { return splits_; }
  /// Components whose frontier (one enforced limit) came from the cache instead of a search.
  [[nodiscard]] std::size_t frontier_hits() const noexcept { return frontier_hits_; }

 private:
  struct Adj {
    std::uint32_t edge;   // compact edge index
    std::uint32_t other;  // compact node index
  };
  struct Saved {
    std::uint32_t node;
    fine_t hmin;
    std::vector<fine_t> h;
  };

  /// The usage of label a of node i beyond the node's least (0 outside the enforced limits).
  [[nodiscard]] std::int64_t extra_usage(std::size_t i, std::size_t a) const {
    return limit_of_[i].empty() ? 0 : p_.nodes[live_[i]].usage[a] - min_usage_[i];
  }

  [[nodiscard]] bool usage_ok(std::size_t i, std::size_t a) const {
    if (limit_of_[i].empty()) return true;
    const std::int64_t extra = extra_usage(i, a);
    for (auto k : limit_of_[i])
      if (extra > slack_[k]) return false;
    return true;
  }

  [[nodiscard]] bool viable(std::size_t i, std::size_t a, fine_t target) const {
    const fine_t h = h_[i][a];
    if (h >= inf) return false;
    return bound_ - hmin_[i] + h <= target && usage_ok(i, a);
  }

  /// One search: the completions of `nodes` (compact indices, closed under unlabelled adjacency)
  /// with a bound within `target`. `top`: a completion is a full labelling, reported to the leaf
  /// callback (which sets the next target); otherwise the best completion is kept in
  /// `found` / `best` (labels per position in `nodes`) and the target drops below it.
  /// A completion of a frontier part: its cost and usage from the part's start (the split).
  struct Point {
    fine_t dh;                         ///< the bound at completion minus the part's start bound
    std::int64_t used;                 ///< the enforced limit's usage it takes beyond the least
    fine_t real;                       ///< dh − w·used: its cost without the priced usage
    std::vector<std::int32_t> labels;  ///< per position in the part's nodes
  };
  struct Part {
    std::vector<std::uint32_t> nodes;
    fine_t target;
    fine_t found;
    std::vector<std::int32_t> best;
    bool top;
    bool frontier = false;  ///< keeps its Pareto frontier in `points` (one enforced limit)
    fine_t b0 = 0;          ///< the bound at its start
    std::int64_t u0 = 0;    ///< used_total_ at its start
    bool settled = false;   ///< in a subtree where no free node's labels differ in usage
    std::vector<Point> points;
  };

  /// The whole search: its completions go to the leaf callback.
  [[nodiscard]] static Part whole(std::vector<std::uint32_t> nodes, fine_t target) {
    return {std::move(nodes), target, inf, {}, true, false, 0, 0, false, {}};
  }
  /// A part searched for its best completion (`found`, `best`).
  [[nodiscard]] static Part best_part(std::vector<std::uint32_t> nodes, fine_t target) {
    return {std::move(nodes), target, inf, {}, false, false, 0, 0, false, {}};
  }
  /// A part searched for its frontier, from the bound `b0` and the usage `u0` at its start.
  [[nodiscard]] static Part frontier_part(std::vector<std::uint32_t> nodes, fine_t target, fine_t b0, std::int64_t u0) {
    return {std::move(nodes), target, inf, {}, false, true, b0, u0, false, {}};
  }

  [[nodiscard]] fine_t real_of(fine_t dh, std::int64_t used) const noexcept {
    return saturate(static_cast<wide_t>(dh) - static_cast<wide_t>(w_) * used);
  }

  /// Keeps (dh, used) in `part`'s frontier unless a point is no worse in cost and usage; drops
  /// the points it is no worse than.
  void add_point(Part& part, fine_t dh, std::int64_t used, std::vector<std::int32_t> labels) {
    const fine_t real = real_of(dh, used);
    for (const Point& q : part.points)
      if (q.real <= real && q.used <= used) return;
    part.points.erase(std::remove_if(part.points.begin(), part.points.end(), [&](const Point& q) { return real <= q.real && used <= q.used; }),
                      part.points.end());
    part.points.push_back({dh, used, real, std::move(labels)});
  }

  /// The enforced limit's usage taken since `part` started.
  [[nodiscard]] std::int64_t used_in(const Part& part) const noexcept { return used_total_ - part.u0; }

  void complete(Part& part) {
    if (part.frontier) {
      std::vector<std::int32_t> labels(part.nodes.size());
      for (std::size_t k = 0; k < part.nodes.size(); ++k) labels[k] = x_[part.nodes[k]];
      add_point(part, bound_ - part.b0, used_in(part), std::move(labels));
      if (part.settled) part.target = std::min(part.target, bound_ - 1);  // the same usage: only a cheaper one counts
      return;
    }
    if (part.top) {
      for (std::size_t i = 0; i < live_.size(); ++i) labels_[live_[i]] = static_cast<std::uint32_t>(x_[i]);
      part.target = std::min(part.target, leaf_(labels_, bound_));
      return;
    }
    if (bound_ < part.found) {
      part.found = bound_;
      part.best.resize(part.nodes.size());
      for (std::size_t k = 0; k < part.nodes.size(); ++k) part.best[k] = x_[part.nodes[k]];
    }
    part.target = std::min(part.target, bound_ - 1);
  }

  /// The connected components of the unlabelled nodes in `free` (edges between unlabelled nodes).
  std::vector<std::vector<std::uint32_t>> components(const std::vector<std::uint32_t>& free) {
    std::vector<std::vector<std::uint32_t>> out;
    for (auto i : free) mark_[i] = 0;
    for (auto s : free) {
      if (mark_[s] != 0) continue;
      out.emplace_back();
      auto& c = out.back();
      c.push_back(s);
      mark_[s] = 1;
      for (std::size_t k = 0; k < c.size(); ++k)
        for (const Adj& ad : adj_[c[k]])
          if (x_[ad.other] < 0 && mark_[ad.other] == 0) {
            mark_[ad.other] = 1;
            c.push_back(ad.other);
          }
    }
    return out;
  }

  /// Searches each component on its own (smallest first), labels it with its best completion, and
  /// completes `part` when every component has one within the target; then unlabels them all.
  void solve_apart(Part& part, std::vector<std::vector<std::uint32_t>> comps) {
    std::sort(comps.begin(), comps.end(), [](const auto& a, const auto& b) { return a.size() < b.size(); });
    struct Undo {
      std::size_t node, trail;
      fine_t bound;
    };
    std::vector<Undo> undo;
    bool all = true;
    for (auto& c : comps) {
      Part sub = best_part(std::move(c), part.target);
      dfs(sub);
      if (aborted_ || sub.found >= inf) {
        all = false;
        break;
      }
      for (std::size_t k = 0; k < sub.nodes.size(); ++k) {
        undo.push_back({sub.nodes[k], trail_.size(), bound_});
        assign(sub.nodes[k], static_cast<std::size_t>(sub.best[k]));
      }
    }
    if (all && bound_ <= part.target) complete(part);
    for (auto it = undo.rbegin(); it != undo.rend(); ++it) unassign(it->node, it->trail, it->bound);
  }

  /// A component's identity for the frontier cache: its nodes (sorted) and the labels of its
  /// labelled neighbours, which fix its costs (h) and so its frontier relative to the split.
  [[nodiscard]] std::vector<std::uint32_t> frontier_key(const std::vector<std::uint32_t>& comp) const {
    std::vector<std::uint32_t> key(comp.begin(), comp.end());
    key.push_back(~0u);
    std::vector<std::pair<std::uint32_t, std::uint32_t>> boundary;
    for (auto i : comp)
      for (const Adj& ad : adj_[i])
        if (x_[ad.other] >= 0) boundary.emplace_back(ad.other, static_cast<std::uint32_t>(x_[ad.other]));
    std::sort(boundary.begin(), boundary.end());
    boundary.erase(std::unique(boundary.begin(), boundary.end()), boundary.end());
    for (const auto& [j, a] : boundary) {
      key.push_back(j);
      key.push_back(a);
    }
    return key;
  }

  /// Keeps a finished frontier (searched within dh <= reach and usage <= slack); the cache is
  /// emptied when its labels pass 2^24 (64 MiB).
  void remember_frontier(std::vector<std::uint32_t> key, fine_t reach, std::int64_t slack, const std::vector<Point>& points) {
    std::size_t size = key.size();
    for (const Point& q : points) size += q.labels.size();
    if (frontier_cells_ + size > (std::size_t{1} << 24)) {
      frontiers_.clear();
      frontier_cells_ = 0;
    }
    frontier_cells_ += size;
    auto& entry = frontiers_[std::move(key)];
    entry = {reach, slack, points};
  }

  /// One enforced limit: each component's frontier from the same state, then one point per
  /// component — the least cost within the slack for `part` at the top (its leaf), every Pareto
  /// point for a frontier part.
  void solve_frontiers(Part& part, std::vector<std::vector<std::uint32_t>> comps) {
    const fine_t b = bound_;
    const std::int64_t s = slack_[0];
    // first each part's least cost alone (its best completion, or its cached frontier): the least
    // the others add tightens each part's target before its frontier is searched
    std::vector<Part> subs;
    subs.reserve(comps.size());
    std::vector<std::vector<std::uint32_t>> keys(comps.size());
    std::vector<fine_t> least(comps.size(), 0);
    std::vector<char> cached(comps.size(), 0);
    fine_t total = 0;
    for (std::size_t k = 0; k < comps.size(); ++k) {
      auto& c = comps[k];
      std::sort(c.begin(), c.end());
      keys[k] = frontier_key(c);
      Part sub = frontier_part(c, part.target, b, used_total_);
      if (const auto it = frontiers_.find(keys[k]); it != frontiers_.end() && it->second.reach >= part.target - b && it->second.slack >= s) {
        // the same part with the same labelled neighbours, searched at least this far before:
        // its frontier within this target and slack (the points it kept dominate the others)
        ++frontier_hits_;
        cached[k] = 1;
        least[k] = inf;
        for (const Point& q : it->second.points)
          if (q.used <= s && sat_add(b, q.dh) <= part.target) {
            sub.points.push_back(q);
            least[k] = std::min(least[k], q.dh);
          }
        if (sub.points.empty()) return;
      } else {
        Part alone = best_part(std::move(c), part.target);
        dfs(alone);
        if (aborted_ || alone.found >= inf) return;
        least[k] = alone.found - b;
      }
      total = sat_add(total, least[k]);
      subs.push_back(std::move(sub));
    }
    if (sat_add(b, total) > part.target) return;
    for (std::size_t k = 0; k < subs.size(); ++k) {
      if (cached[k]) continue;
      Part& sub = subs[k];
      sub.target = part.target - (total - least[k]);
      dfs(sub);
      if (aborted_) return;
      remember_frontier(std::move(keys[k]), sub.target - b, s, sub.points);
      if (sub.points.empty()) return;
    }
    // the Pareto mixes of the first k frontiers: (used ascending, real strictly descending)
    struct Mix {
      fine_t dh;
      std::int64_t used;
      fine_t real;
      std::uint32_t prev, pick;
    };
    std::vector<std::vector<Mix>> mixes(subs.size() + 1);
    mixes[0].push_back({0, 0, 0, 0, 0});
    for (std::size_t k = 0; k < subs.size(); ++k) {
      auto& next = mixes[k + 1];
      for (std::uint32_t m = 0; m < mixes[k].size(); ++m)
        for (std::uint32_t q = 0; q < subs[k].points.size(); ++q) {
          const Mix& a = mixes[k][m];
          const Point& pt = subs[k].points[q];
          const std::int64_t used = a.used + pt.used;
          const fine_t dh = sat_add(a.dh, pt.dh);
          if (used > s || sat_add(b, dh) > part.target) continue;
          next.push_back({dh, used, real_of(dh, used), m, q});
        }
      std::sort(next.begin(), next.end(), [](const Mix& x, const Mix& y) { return x.used != y.used ? x.used < y.used : x.real < y.real; });
      std::size_t kept = 0;
      for (std::size_t i = 0; i < next.size(); ++i)
        if (kept == 0 || next[i].real < next[kept - 1].real) next[kept++] = next[i];
      next.resize(kept);
      if (next.empty()) return;
    }
    // writes mix m's labels into x_ (restore: clear_mix)
    const auto write_mix = [&](std::uint32_t m, auto&& each) {
      for (std::size_t k = subs.size(); k-- > 0;) {
        const Mix& mx = mixes[k + 1][m];
        const Point& pt = subs[k].points[mx.pick];
        for (std::size_t j = 0; j < subs[k].nodes.size(); ++j) each(subs[k].nodes[j], static_cast<std::size_t>(pt.labels[j]));
        m = mx.prev;
      }
    };
    const auto& last = mixes.back();
    if (!part.frontier) {
      // at the top the least cost within the slack: the last mix (real descends along the
      // frontier); a part searched for its best completion alone: the least searched cost (dh)
      std::size_t pick = last.size() - 1;
      if (!part.top)
        for (std::size_t m = 0; m < last.size(); ++m)
          if (last[m].dh < last[pick].dh) pick = m;
      struct Undo {
        std::size_t node, trail;
        fine_t bound;
      };
      std::vector<Undo> undo;
      write_mix(static_cast<std::uint32_t>(pick), [&](std::uint32_t i, std::size_t a) {
        undo.push_back({i, trail_.size(), bound_});
        assign(i, a);
      });
      if (bound_ <= part.target) complete(part);
      for (auto it = undo.rbegin(); it != undo.rend(); ++it) unassign(it->node, it->trail, it->bound);
      return;
    }
    for (std::uint32_t m = 0; m < last.size(); ++m) {
      write_mix(m, [&](std::uint32_t i, std::size_t a) { x_[i] = static_cast<std::int32_t>(a); });
      std::vector<std::int32_t> labels(part.nodes.size());
      for (std::size_t k = 0; k < part.nodes.size(); ++k) labels[k] = x_[part.nodes[k]];
      write_mix(m, [&](std::uint32_t i, std::size_t) { x_[i] = -1; });
      add_point(part, sat_add(b - part.b0, last[m].dh), used_in(part) + last[m].used, std::move(labels));
    }
  }

  void assign(std::size_t i, std::size_t a) {
    bound_ = bound_ - hmin_[i] + h_[i][a];
    const std::uint32_t u = live_[i];
    for (const Adj& ad : adj_[i]) {
      const std::size_t j = ad.other;
      if (x_[j] >= 0) continue;
      bound_ -= emin_[ad.edge];
      const WEdge& e = p_.edges[edge_id_[ad.edge]];
      trail_.push_back({static_cast<std::uint32_t>(j), hmin_[j], h_[j]});
      auto& hj = h_[j];
      const bool u_first = e.u == u;
      fine_t mn = inf;
      if (u_first) {
        const fine_t* row = &e.d[std::size_t{e.rc[a]} * e.cols];
        const fine_t ma = e.mu[a];
        for (std::size_t b = 0; b < hj.size(); ++b) {
          const fine_t d = row[e.cc[b]];
          hj[b] = (d >= inf || hj[b] >= inf) ? inf : hj[b] + d - ma - e.mv[b];
          mn = std::min(mn, hj[b]);
        }
      } else {
        const fine_t mv = e.mv[a];
        for (std::size_t b = 0; b < hj.size(); ++b) {
          const fine_t d = e.d[std::size_t{e.rc[b]} * e.cols + e.cc[a]];
          hj[b] = (d >= inf || hj[b] >= inf) ? inf : hj[b] + d - mv - e.mu[b];
          mn = std::min(mn, hj[b]);
        }
      }
      bound_ = sat_add(bound_ - hmin_[j], mn);
      hmin_[j] = mn;
    }
    x_[i] = static_cast<std::int32_t>(a);
    if (!limit_of_[i].empty()) {
      const std::int64_t extra = extra_usage(i, a);
      for (auto k : limit_of_[i]) slack_[k] -= extra;
      used_total_ += extra;
    }
  }

  void unassign(std::size_t i, std::size_t trail_size, fine_t bound) {
    while (trail_.size() > trail_size) {
      Saved& s = trail_.back();
      h_[s.node] = std::move(s.h);
      hmin_[s.node] = s.hmin;
      trail_.pop_back();
    }
    if (!limit_of_[i].empty()) {
      const std::int64_t extra = extra_usage(i, static_cast<std::size_t>(x_[i]));
      for (auto k : limit_of_[i]) slack_[k] += extra;
      used_total_ -= extra;
    }
    x_[i] = -1;
    bound_ = bound;
  }

  void dfs(Part& part) {
    if (aborted_) return;
    if (++nodes_ > node_limit_ || ((nodes_ & check_mask_) == 0 && std::chrono::steady_clock::now() > deadline_)) {
      aborted_ = true;
      return;
    }
    if ((nodes_ & check_mask_) == 0 && on_poll) on_poll();
    if (bound_ > part.target) return;
    std::vector<std::uint32_t> free;
    for (auto i : part.nodes)
      if (x_[i] < 0) free.push_back(i);
    if (free.empty()) {
      complete(part);
      return;
    }
    if ((slack_.empty() || split_with_limit_) && free.size() > 1) {
      auto comps = components(free);
      if (comps.size() > 1) {
        ++splits_;
        if (slack_.empty()) solve_apart(part, std::move(comps));
        else solve_frontiers(part, std::move(comps));
        return;
      }
    }
    // the unlabelled node with the fewest viable labels (ties: largest gap to its second label)
    std::size_t best = ~std::size_t{0}, best_count = ~std::size_t{0};
    fine_t best_gap = -1;
    std::size_t varying = 0, best_varying = ~std::size_t{0}, best_varying_count = ~std::size_t{0};
    // a frontier part: the least cost (h − w·usage) and the least usage any completion can
    // reach, beyond the bound and the usage so far
    fine_t beyond = 0;
    std::int64_t more_usage = 0;
    for (auto i : free) {
      std::size_t count = 0;
      fine_t first = inf, second = inf, least_real = inf;
      std::int64_t least_extra = std::numeric_limits<std::int64_t>::max(), most_extra = 0;
      for (std::size_t a = 0; a < h_[i].size(); ++a) {
        if (!viable(i, a, part.target)) continue;
        if (part.frontier) {
          const std::int64_t extra = extra_usage(i, a);
          least_real = std::min(least_real, real_of(h_[i][a], extra));
          least_extra = std::min(least_extra, extra);
          most_extra = std::max(most_extra, extra);
        }
        ++count;
        if (h_[i][a] < first) {
          second = first;
          first = h_[i][a];
        } else if (h_[i][a] < second) {
          second = h_[i][a];
        }
      }
      if (count == 0) return;
      if (part.frontier) {
        beyond = sat_add(beyond, least_real - hmin_[i]);
        more_usage += least_extra;
        if (most_extra > least_extra) {
          ++varying;
          if (count < best_varying_count) {
            best_varying = i;
            best_varying_count = count;
          }
        }
      }
      const fine_t gap = second >= inf ? inf : second - first;
      if (count < best_count || (count == best_count && gap > best_gap)) {
        best = i;
        best_count = count;
        best_gap = gap;
      }
    }
    // a frontier part with few nodes left whose labels differ in usage: those first (once they
    // are labelled the part's usage is known and the points found prune the rest)
    if (varying > 0 && varying <= kFewVarying) best = best_varying;
    // a frontier part: the completions using `cap` or more are no better in cost and usage than a
    // point found (every completion costs at least `least`); when that is all of them the node is
    // pruned, else the slack drops below the cap while its labels are searched
    const std::int64_t slack_before = slack_.empty() ? 0 : slack_[0];
    if (part.frontier && !part.points.empty()) {
      const std::int64_t used = used_in(part);
      const fine_t least = sat_add(real_of(bound_ - part.b0, used), beyond);
      std::int64_t cap = std::numeric_limits<std::int64_t>::max();
      for (const Point& q : part.points)
        if (q.real <= least) cap = std::min(cap, q.used);
      if (cap <= used + more_usage) return;
      if (cap != std::numeric_limits<std::int64_t>::max()) slack_[0] = std::min(slack_[0], cap - 1 - used);
    }
    // a frontier part whose free nodes' labels all use the same: every completion uses
    // used + more_usage, so only one cheaper than the points within that usage counts (the
    // target drops to it, and to each completion found below, for this subtree)
    const fine_t target_before = part.target;
    const bool settle = part.frontier && !part.settled && varying == 0;
    if (settle) {
      const std::int64_t used = used_in(part) + more_usage;
      fine_t least_real = inf;
      for (const Point& q : part.points)
        if (q.used <= used) least_real = std::min(least_real, q.real);
      if (least_real < inf)
        part.target = std::min(part.target, saturate(static_cast<wide_t>(part.b0) + least_real + static_cast<wide_t>(w_) * used - 1));
      part.settled = true;
    }
    std::vector<std::uint32_t> labels;
    for (std::size_t a = 0; a < h_[best].size(); ++a)
      if (viable(best, a, part.target)) labels.push_back(static_cast<std::uint32_t>(a));
    std::stable_sort(labels.begin(), labels.end(), [&](std::uint32_t a, std::uint32_t b) { return h_[best][a] < h_[best][b]; });
    for (auto a : labels) {
      if (aborted_) break;
      if (!viable(best, a, part.target)) continue;  // the target may have dropped
      const std::size_t trail_size = trail_.size();
      const fine_t bound = bound_;
      assign(best, a);
      dfs(part);
      unassign(best, trail_size, bound);
    }
    if (!slack_.empty()) slack_[0] = slack_before;
    if (settle) {
      part.target = target_before;
      part.settled = false;
    }
  }

  const Problem& p_;
  fine_t target_;
  Leaf leaf_;
  std::chrono::steady_clock::time_point deadline_;
  std::size_t node_limit_;
  std::vector<std::uint32_t> live_, idx_;
  std::vector<std::vector<fine_t>> h_;
  std::vector<fine_t> hmin_;
  std::vector<std::int32_t> x_;
  std::vector<std::vector<Adj>> adj_;
  std::vector<fine_t> emin_;
  std::vector<std::uint32_t> edge_id_;
  std::vector<std::vector<std::uint32_t>> limit_of_;
  std::vector<std::int64_t> slack_, min_usage_;
  std::vector<std::uint32_t> limit_index_;  ///< per enforced limit (slack_ index): its Problem::limits index
  static constexpr std::size_t kFewVarying = 2;
  std::int64_t used_total_ = 0;  ///< the usage beyond the least of the labelled limit members
  fine_t w_ = 0;                 ///< usage_weight of the one enforced limit
  struct Frontier {
    fine_t reach;        ///< searched for completions with dh up to this
    std::int64_t slack;  ///< and usage up to this
    std::vector<Point> points;
  };
  std::map<std::vector<std::uint32_t>, Frontier> frontiers_;  ///< by frontier_key
  std::size_t frontier_cells_ = 0, frontier_hits_ = 0;
  bool split_with_limit_ = false;  ///< one enforced limit: splits keep frontiers
  std::vector<Saved> trail_;
  std::vector<std::uint32_t> labels_;
  std::vector<char> mark_;  ///< per compact node: component search scratch
  fine_t bound_ = 0;
  std::size_t nodes_ = 0, splits_ = 0;
  std::size_t check_mask_ = 255;  ///< the clock is read when (nodes_ & check_mask_) == 0
  bool aborted_ = false;
};

}  // namespace ctshard::solve::detail
