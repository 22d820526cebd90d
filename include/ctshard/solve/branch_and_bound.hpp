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

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
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
    }
    min_usage_.assign(m, 0);
    for (std::size_t i = 0; i < m; ++i)
      if (!limit_of_[i].empty()) {
        const auto& us = p.nodes[live_[i]].usage;
        min_usage_[i] = *std::min_element(us.begin(), us.end());
      }
  }

  /// The root bound (fine units).
  [[nodiscard]] fine_t root_bound() const noexcept { return bound_; }

  /// Runs the search; true when it finished (every labelling within the target was seen).
  bool run() {
    if (std::any_of(slack_.begin(), slack_.end(), [](std::int64_t s) { return s < 0; })) return true;
    labels_.assign(p_.nodes.size(), 0);
    aborted_ = false;
    dfs(0);
    return !aborted_;
  }

  [[nodiscard]] std::size_t nodes() const noexcept { return nodes_; }

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

  [[nodiscard]] bool usage_ok(std::size_t i, std::size_t a) const {
    if (limit_of_[i].empty()) return true;
    const std::int64_t extra = p_.nodes[live_[i]].usage[a] - min_usage_[i];
    for (auto k : limit_of_[i])
      if (extra > slack_[k]) return false;
    return true;
  }

  [[nodiscard]] bool viable(std::size_t i, std::size_t a) const {
    const fine_t h = h_[i][a];
    if (h >= inf) return false;
    return bound_ - hmin_[i] + h <= target_ && usage_ok(i, a);
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
      const std::int64_t extra = p_.nodes[u].usage[a] - min_usage_[i];
      for (auto k : limit_of_[i]) slack_[k] -= extra;
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
      const std::int64_t extra = p_.nodes[live_[i]].usage[static_cast<std::size_t>(x_[i])] - min_usage_[i];
      for (auto k : limit_of_[i]) slack_[k] += extra;
    }
    x_[i] = -1;
    bound_ = bound;
  }

  void dfs(std::size_t depth) {
    if (aborted_) return;
    if (++nodes_ > node_limit_ || ((nodes_ & 255) == 0 && std::chrono::steady_clock::now() > deadline_)) {
      aborted_ = true;
      return;
    }
    if (bound_ > target_) return;
    if (depth == live_.size()) {
      for (std::size_t i = 0; i < live_.size(); ++i) labels_[live_[i]] = static_cast<std::uint32_t>(x_[i]);
      target_ = leaf_(labels_, bound_);
      return;
    }
    // the unlabelled node with the fewest viable labels (ties: largest gap to its second label)
    std::size_t best = ~std::size_t{0}, best_count = ~std::size_t{0};
    fine_t best_gap = -1;
    for (std::size_t i = 0; i < live_.size(); ++i) {
      if (x_[i] >= 0) continue;
      std::size_t count = 0;
      fine_t first = inf, second = inf;
      for (std::size_t a = 0; a < h_[i].size(); ++a) {
        if (!viable(i, a)) continue;
        ++count;
        if (h_[i][a] < first) {
          second = first;
          first = h_[i][a];
        } else if (h_[i][a] < second) {
          second = h_[i][a];
        }
      }
      if (count == 0) return;
      const fine_t gap = second >= inf ? inf : second - first;
      if (count < best_count || (count == best_count && gap > best_gap)) {
        best = i;
        best_count = count;
        best_gap = gap;
      }
    }
    std::vector<std::uint32_t> labels;
    for (std::size_t a = 0; a < h_[best].size(); ++a)
      if (viable(best, a)) labels.push_back(static_cast<std::uint32_t>(a));
    std::stable_sort(labels.begin(), labels.end(), [&](std::uint32_t a, std::uint32_t b) { return h_[best][a] < h_[best][b]; });
    for (auto a : labels) {
      if (aborted_) return;
      if (!viable(best, a)) continue;  // the target may have dropped
      const std::size_t trail_size = trail_.size();
      const fine_t bound = bound_;
      assign(best, a);
      dfs(depth + 1);
      unassign(best, trail_size, bound);
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
  std::vector<Saved> trail_;
  std::vector<std::uint32_t> labels_;
  fine_t bound_ = 0;
  std::size_t nodes_ = 0;
  bool aborted_ = false;
};

}  // namespace ctshard::solve::detail
