#pragma once
/// \file solve/elimination.hpp
/// Exact variable elimination (bucket elimination on a tree decomposition) of the live part of a
/// working problem, for cores whose treewidth and domains are small enough: after the
/// reductions and reduced-cost fixing, a core of a few hundred nodes of treewidth ~5 with a
/// handful of labels each is solved exactly here in milliseconds, where message passing would
/// need hundreds of iterations to close the last part of the gap.
///
/// The elimination order is greedy: the node whose elimination builds the smallest table
/// (product of the domains of the node and its current neighbours) goes first. `plan` simulates
/// it and reports the work; `solve` runs it on dense tables in the base form (no messages), so
/// the result is the exact optimum of the live problem over the current labels.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <queue>
#include <set>
#include <utility>
#include <vector>

#include "ctshard/solve/problem.hpp"

namespace ctshard::solve::detail {

class VariableElimination {
 public:
  explicit VariableElimination(const Problem& p) : p_(p) {}

  /// Simulates the greedy order; returns the total work (table cells times factors touched), or
  /// max when some table would exceed `max_cells` or the work `max_work`.
  std::size_t plan(std::size_t max_work, std::size_t max_cells) {
    order_.clear();
    const std::size_t n = p_.nodes.size();
    std::vector<std::set<std::uint32_t>> adj(n);
    std::vector<char> live(n, 0);
    std::size_t remaining = 0;
    for (std::uint32_t u = 0; u < n; ++u)
      if (p_.nodes[u].alive) {
        live[u] = 1;
        ++remaining;
      }
    for (const auto& e : p_.edges)
      if (e.alive) {
        adj[e.u].insert(e.v);
        adj[e.v].insert(e.u);
      }
    const auto cells = [&](std::uint32_t x) {
      long double c = static_cast<long double>(p_.num_labels(x));
      for (auto w : adj[x]) c *= static_cast<long double>(p_.num_labels(w));
      return c;
    };
    // a node's table size depends on its neighbourhood only: kept per node, recomputed for the
    // neighbours of each eliminated node
    std::vector<long double> size(n, 0);
    for (std::uint32_t u = 0; u < n; ++u)
      if (live[u]) size[u] = cells(u);
    // the least table first (then the lowest id), from a heap whose stale entries are skipped
    using Entry = std::pair<long double, std::uint32_t>;
    std::priority_queue<Entry, std::vector<Entry>, std::greater<>> next;
    for (std::uint32_t u = 0; u < n; ++u)
      if (live[u]) next.emplace(size[u], u);
    long double work = 0;
    while (remaining > 0) {
      const auto [best_cells, best] = next.top();
      next.pop();
      if (!live[best] || best_cells != size[best]) continue;
      if (best_cells > static_cast<long double>(max_cells)) return std::numeric_limits<std::size_t>::max();
      work += best_cells * static_cast<long double>(adj[best].size() + 1);
      if (work > static_cast<long double>(max_work)) return std::numeric_limits<std::size_t>::max();
      order_.push_back(best);
      live[best] = 0;
      --remaining;
      for (auto a : adj[best]) {
        adj[a].erase(best);
        for (auto b : adj[best])
          if (a != b) adj[a].insert(b);
      }
      for (auto a : adj[best]) {
        size[a] = cells(a);
        next.emplace(size[a], a);
      }
      adj[best].clear();
    }
    return static_cast<std::size_t>(work);
  }

  /// Runs the planned elimination: returns the optimum (fine units, constant included; inf when
  /// infeasible) and the labelling of the live nodes (current label index per node id).
  fine_t solve(std::vector<std::uint32_t>& labels) {
    const std::size_t n = p_.nodes.size();
    factors_.clear();
    bucket_.assign(n, {});
    // every factor lists its variables latest-eliminated first: the variable a factor is
    // consumed with is then its last (stride 1), and the inner loops below run contiguously
    pos_.assign(n, 0);
    for (std::size_t i = 0; i < order_.size(); ++i) pos_[order_[i]] = i;
    const auto later = [&](std::uint32_t a, std::uint32_t b) { return pos_[a] > pos_[b]; };
    for (std::uint32_t u = 0; u < n; ++u) {
      if (!p_.nodes[u].alive) continue;
      Factor f;
      f.vars = {u};
      f.t = p_.nodes[u].theta;
      add(std::move(f));
    }
    for (const auto& e : p_.edges) {
      if (!e.alive) continue;
      Factor f;
      const std::size_t lu = p_.num_labels(e.u), lv = p_.num_labels(e.v);
      f.t.resize(lu * lv);
      if (later(e.u, e.v)) {
        f.vars = {e.u, e.v};
        for (std::size_t a = 0; a < lu; ++a)
          for (std::size_t b = 0; b < lv; ++b) f.t[a * lv + b] = e.at(a, b);
      } else {
        f.vars = {e.v, e.u};
        for (std::size_t b = 0; b < lv; ++b)
          for (std::size_t a = 0; a < lu; ++a) f.t[b * lu + a] = e.at(a, b);
      }
      add(std::move(f));
    }
    std::vector<std::vector<std::size_t>> consumed(n);
    for (auto x : order_) {
      std::vector<std::size_t> fs;
      for (auto fi : bucket_[x])
        if (!factors_[fi].dead) fs.push_back(fi);
      consumed[x] = fs;
      std::vector<std::uint32_t> scope;
      for (auto fi : fs)
        for (auto v : factors_[fi].vars)
          if (v != x) scope.push_back(v);
      std::sort(scope.begin(), scope.end(), later);
      scope.erase(std::unique(scope.begin(), scope.end()), scope.end());
      Factor nf;
      nf.vars = scope;
      std::size_t size = 1;
      for (auto v : scope) size *= p_.num_labels(v);
      nf.t.assign(size, inf);
      // odometer over scope (last fastest), inner loop over x
      const std::size_t k = scope.size(), lx = p_.num_labels(x);
      std::vector<std::size_t> digit(k, 0);
      std::vector<std::size_t> idx(fs.size(), 0);
      std::vector<std::vector<std::size_t>> stride(fs.size(), std::vector<std::size_t>(k, 0));
      for (std::size_t j = 0; j < fs.size(); ++j) {
        const Factor& f = factors_[fs[j]];
        for (std::size_t i = 0; i < f.vars.size(); ++i) {
          const std::size_t s = f.stride[i];
          if (f.vars[i] != x) stride[j][static_cast<std::size_t>(std::lower_bound(scope.begin(), scope.end(), f.vars[i], later) - scope.begin())] = s;
        }
      }
      std::vector<fine_t> acc(lx);
      std::vector<const fine_t*> base(fs.size());
      for (std::size_t j = 0; j < fs.size(); ++j) base[j] = factors_[fs[j]].t.data();
      for (std::size_t out = 0; out < size; ++out) {
        // every factor here contains x, last (stride 1); entries are at most inf, so a sum of
        // two stays below 2^63: add_capped keeps partial sums at most inf, the last factor is
        // added inside the minimum, clamp_forbidden maps a forbidden sum back to inf
        const std::size_t last = fs.size() - 1;
        fine_t m = inf;
        if (last == 0) {
          const fine_t* t = base[0] + idx[0];
          m = *std::min_element(t, t + lx);
        } else {
          std::copy(base[0] + idx[0], base[0] + idx[0] + lx, acc.begin());
          for (std::size_t j = 1; j < last; ++j) add_capped(acc.data(), base[j] + idx[j], lx);
          m = min_plus_reduce(base[last] + idx[last], acc.data(), lx, inf);
        }
        nf.t[out] = clamp_forbidden(m);
        // next scope assignment
        for (std::size_t i = k; i-- > 0;) {
          const std::size_t L = p_.num_labels(scope[i]);
          if (++digit[i] < L) {
            for (std::size_t j = 0; j < fs.size(); ++j) idx[j] += stride[j][i];
            break;
          }
          digit[i] = 0;
          for (std::size_t j = 0; j < fs.size(); ++j) idx[j] -= stride[j][i] * (L - 1);
        }
      }
      for (auto fi : fs) factors_[fi].dead = true;
      add(std::move(nf));
    }
    fine_t total = p_.constant;
    for (const auto& f : factors_)
      if (!f.dead) total = sat_add(total, f.t[0]);
    // back substitution
    labels.assign(n, 0);
    std::vector<char> done(n, 0);
    for (std::size_t r = order_.size(); r-- > 0;) {
      const std::uint32_t x = order_[r];
      const std::size_t lx = p_.num_labels(x);
      fine_t best = inf;
      std::uint32_t arg = 0;
      for (std::size_t a = 0; a < lx; ++a) {
        fine_t c = 0;
        for (auto fi : consumed[x]) {
          const Factor& f = factors_[fi];
          std::size_t i = 0;
          for (std::size_t q = 0; q < f.vars.size(); ++q) i += f.stride[q] * (f.vars[q] == x ? a : labels[f.vars[q]]);
          c = sat_add(c, f.t[i]);
        }
        if (c < best) {
          best = c;
          arg = static_cast<std::uint32_t>(a);
        }
      }
      labels[x] = arg;
      done[x] = 1;
    }
    return total;
  }

 private:
  struct Factor {
    std::vector<std::uint32_t> vars;
    std::vector<std::size_t> stride;
    std::vector<fine_t> t;
    bool dead = false;
  };

  void add(Factor f) {
    f.stride.assign(f.vars.size(), 1);
    for (std::size_t i = f.vars.size(); i-- > 1;) f.stride[i - 1] = f.stride[i] * p_.num_labels(f.vars[i]);
    const std::size_t id = factors_.size();
    for (auto v : f.vars) bucket_[v].push_back(id);
    factors_.push_back(std::move(f));
  }

  const Problem& p_;
  std::vector<std::uint32_t> order_;
  std::vector<std::size_t> pos_;  ///< position of each node in order_
  std::vector<Factor> factors_;
  std::vector<std::vector<std::size_t>> bucket_;
};

}  // namespace ctshard::solve::detail
