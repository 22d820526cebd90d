#pragma once
/// \file solve/dual.hpp
/// The dual lower bound: sequential reweighted message passing (SRMP / TRW-S style) on the live
/// part of a working problem, in integer fine units, so the bound is exact arithmetic on a
/// reparametrization:
///
///   LB = constant + sum_u min_a theta'_u(a) + sum_e min theta'_e,
///
/// valid for any messages. A forward pass visits nodes in order; each node first collects the
/// min-marginals of its edges to earlier nodes (their message to it becomes
/// min_b (D(b, a) - message to the other end(b))), then sends 1/max(#earlier, #later) of its
/// reparametrized cost into each edge to a later node. The backward pass mirrors it. After a
/// backward pass every edge has been collected by its earlier end last, so min theta'_e = 0 for
/// every edge and the bound is the sum of the nodes' minima, read off during the pass. The bound
/// never decreases (up to the floor of the integer division). The forward pass also decodes a
/// labelling (each node takes its best label given the earlier nodes' labels and the later
/// nodes' messages).
///
/// How much a node sends is its weight (`DualWeights`). TRW-S's 1/max(#earlier, #later) keeps a
/// share at every node, so on a long graph a node's cost is split again at every fan-out it
/// passes (a GPT-2 fw+bw graph: the bound creeps for thousands of passes). `push` sends a node's
/// whole reparametrized cost on (1/#later): one pass carries it to the far end of the order
/// undivided, so the bound climbs in a few passes, but it stops at a weaker fixed point; the
/// solver runs a few push passes first, then TRW-S weights. The bound is valid under both: any
/// weights give a reparametrization, and every edge still ends a backward pass collected.
///
/// `StarBounds` turns the state a backward pass leaves into a lower bound per node and label
/// (each node's star: the node, its neighbours and the edges between), for reduced-cost fixing.

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <unordered_set>
#include <utility>
#include <vector>

#include "ctshard/solve/problem.hpp"

namespace ctshard::solve::detail {

/// The share of its reparametrized cost a node sends into each edge to a later node.
enum class DualWeights {
  trws,  ///< 1 / max(#earlier, #later): TRW-S / SRMP (Kolmogorov 2006, 2015); converges further
  push,  ///< 1 / #later: the node keeps nothing; climbs fastest in the first passes
};

/// One min-plus product over an edge's classes, seen from one end (`first`: its u end, rows):
/// col[r] = min over the other end's classes c of d(r, c) + g[c], per own class r. Both loops
/// walk the matrix row by row (contiguous) without branches: a forbidden entry or a class with no
/// live label (g = inf) makes a sum of at least inf - |finite|, which clamp_forbidden maps back
/// to inf. The messages (Srmp::collect) and the star bounds (StarBounds) both take their
/// min-marginals this way.
inline void edge_min_plus(const WEdge& e, bool first, const std::vector<fine_t>& g, std::vector<fine_t>& col) {
  const std::uint32_t own_n = first ? e.rows : e.cols, oth_n = first ? e.cols : e.rows;
  col.assign(own_n, inf);
  if (first) {
    for (std::uint32_t r = 0; r < own_n; ++r) col[r] = min_plus_reduce(e.d.data() + std::size_t{r} * e.cols, g.data(), oth_n, inf);
  } else {
    for (std::uint32_t c = 0; c < oth_n; ++c) min_plus_into(col.data(), e.d.data() + std::size_t{c} * e.cols, g[c], own_n);
  }
  for (auto& x : col) x = clamp_forbidden(x);
}

class Srmp {
 public:
  explicit Srmp(Problem& p) : p_(p) { prepare(); }

  /// Re-reads the live graph (after reductions).
  void prepare() {
    order_.clear();
    pos_.assign(p_.nodes.size(), 0);
    // node id order: a traced graph's topological order (a breadth-first order was tried on
    // GPT-2 fw+bw: 268 / 2,000 passes instead of 52)
    for (std::uint32_t u = 0; u < p_.nodes.size(); ++u)
      if (p_.nodes[u].alive) order_.push_back(u);
    for (std::size_t k = 0; k < order_.size(); ++k) pos_[order_[k]] = static_cast<std::uint32_t>(k);
  }

  [[nodiscard]] const std::vector<std::uint32_t>& order() const noexcept { return order_; }

  /// The weights of the following passes (TRW-S unless set).
  void set_weights(DualWeights w) noexcept { weights_ = w; }

  /// One forward pass (decoding into `labels`, indexed by node: current label index) and one
  /// backward pass (decoding into `backward`, from the other end of the order: a decision the
  /// forward decoding takes early, before the messages carry the consequences at the far end,
  /// is taken last here); returns the lower bound (fine units, constant included).
  fine_t iterate(std::vector<std::uint32_t>& labels, std::vector<std::uint32_t>* backward = nullptr) { return *pass(labels, backward, nullptr); }

  /// iterate, polling `deadline` every 64 nodes: a pass it interrupts returns std::nullopt (its
  /// bound and labellings are incomplete; the messages stay a valid reparametrization, but not
  /// the state a backward pass leaves, which StarBounds reads). One pass of a 20,000-node graph
  /// took 0.4 s: a 1 s limit ended at 1.6 s.
  std::optional<fine_t> iterate_until(std::vector<std::uint32_t>& labels, std::vector<std::uint32_t>* backward,
                                      std::chrono::steady_clock::time_point deadline) {
    return pass(labels, backward, &deadline);
  }

 private:
  std::optional<fine_t> pass(std::vector<std::uint32_t>& labels, std::vector<std::uint32_t>* backward,
                             const std::chrono::steady_clock::time_point* deadline) {
    labels.assign(p_.nodes.size(), 0);
    if (backward != nullptr) backward->assign(p_.nodes.size(), 0);
    const auto passed = [&](std::size_t k) { return deadline != nullptr && k % 64 == 63 && std::chrono::steady_clock::now() > *deadline; };
    for (std::size_t k = 0; k < order_.size(); ++k) {
      if (passed(k)) return std::nullopt;
      step(order_[k], true, &labels);
    }
    fine_t lb = p_.constant;
    for (std::size_t k = order_.size(); k-- > 0;) {
      if (passed(k)) return std::nullopt;
      lb = sat_add(lb, step(order_[k], false, backward));
    }
    return lb;
  }

 public:
  /// The current bound computed from scratch (any state of the messages).
  [[nodiscard]] fine_t bound() const {
    fine_t lb = p_.constant;
    std::vector<fine_t> t;
    for (auto u : order_) {
      p_.reparam_unary(u, t);
      lb = sat_add(lb, *std::min_element(t.begin(), t.end()));
    }
    for (const auto& e : p_.edges) {
      if (!e.alive) continue;
      lb = sat_add(lb, edge_min(e));
    }
    return lb;
  }

  /// min over label pairs of theta'_e (inf when no pair is finite). Each row is one min-plus
  /// reduction against minus the columns' largest messages (the classes no label uses at inf).
  [[nodiscard]] static fine_t edge_min(const WEdge& e) {
    std::vector<fine_t> ru(e.rows, -inf), rv(e.cols, -inf);  // max message per class
    for (std::size_t a = 0; a < e.rc.size(); ++a) ru[e.rc[a]] = std::max(ru[e.rc[a]], e.mu[a]);
    for (std::size_t b = 0; b < e.cc.size(); ++b) rv[e.cc[b]] = std::max(rv[e.cc[b]], e.mv[b]);
    for (auto& x : rv) x = x <= -inf ? inf : -x;  // minus the message: added to the row below
    fine_t m = inf;
    for (std::uint32_t r = 0; r < e.rows; ++r) {
      if (ru[r] <= -inf) continue;
      const fine_t row_min = clamp_forbidden(min_plus_reduce(e.d.data() + std::size_t{r} * e.cols, rv.data(), e.cols, inf));
      if (row_min < inf) m = std::min(m, row_min - ru[r]);
    }
    return m;
  }

 private:
  /// Collects edge `ei`'s min-marginal into endpoint `u`: message to u becomes
  /// min_b (D(a, b) - message to the other end (b)).
  void collect(std::uint32_t ei, std::uint32_t u) {
    WEdge& e = p_.edges[ei];
    const bool first = e.u == u;
    const auto& own = first ? e.rc : e.cc;
    const auto& oth = first ? e.cc : e.rc;
    const auto& moth = first ? e.mv : e.mu;
    auto& mown = first ? e.mu : e.mv;
    g_.assign(first ? e.cols : e.rows, inf);  // per other-side class: min of -message
    for (std::size_t b = 0; b < oth.size(); ++b) g_[oth[b]] = std::min(g_[oth[b]], -moth[b]);
    edge_min_plus(e, first, g_, col_);
    for (std::size_t a = 0; a < own.size(); ++a) mown[a] = col_[own[a]] >= inf ? mown[a] : col_[own[a]];
  }

  /// Processes node u in a pass; returns min theta'_u after sending (backward pass bound term).
  fine_t step(std::uint32_t u, bool forward, std::vector<std::uint32_t>* labels) {
    WNode& n = p_.nodes[u];
    std::size_t n_in = 0, n_out = 0;
    for (auto ei : n.edges) {
      const std::uint32_t w = p_.edges[ei].other(u);
      const bool earlier = forward ? pos_[w] < pos_[u] : pos_[w] > pos_[u];
      if (earlier) {
        collect(ei, u);
        ++n_in;
      } else {
        ++n_out;
      }
    }
    p_.reparam_unary(u, t_);
    if (labels != nullptr) {
      // decode: base unary + messages from later nodes + actual costs to earlier labelled nodes
      dec_.assign(n.theta.begin(), n.theta.end());
      for (auto ei : n.edges) {
        const WEdge& e = p_.edges[ei];
        const std::uint32_t w = e.other(u);
        const bool first = e.u == u;
        if (forward ? pos_[w] < pos_[u] : pos_[w] > pos_[u]) {
          const std::uint32_t xw = (*labels)[w];
          for (std::size_t a = 0; a < dec_.size(); ++a) dec_[a] = sat_add(dec_[a], first ? e.at(a, xw) : e.at(xw, a));
        } else {
          const auto& m = first ? e.mu : e.mv;
          for (std::size_t a = 0; a < dec_.size(); ++a) dec_[a] = sat_add(dec_[a], m[a]);
        }
      }
      (*labels)[u] = static_cast<std::uint32_t>(std::min_element(dec_.begin(), dec_.end()) - dec_.begin());
    }
    const std::size_t k = weights_ == DualWeights::push ? n_out : std::max(n_in, n_out);
    if (n_out > 0) {
      send_.resize(t_.size());
      for (std::size_t a = 0; a < t_.size(); ++a) {
        const fine_t s = floor_div(t_[a], static_cast<fine_t>(k));
        t_[a] -= static_cast<fine_t>(n_out) * s;
        send_[a] = s;
      }
      for (auto ei : n.edges) {
        WEdge& e = p_.edges[ei];
        const std::uint32_t w = e.other(u);
        const bool later = forward ? pos_[w] > pos_[u] : pos_[w] < pos_[u];
        if (!later) continue;
        auto& m = e.u == u ? e.mu : e.mv;
        for (std::size_t a = 0; a < m.size(); ++a) m[a] -= send_[a];
      }
    }
    return *std::min_element(t_.begin(), t_.end());
  }

  Problem& p_;
  DualWeights weights_ = DualWeights::trws;
  std::vector<std::uint32_t> order_, pos_;
  std::vector<fine_t> g_, col_, t_, dec_, send_;
};

/// Per-label lower bounds from stars, for reduced-cost fixing after a backward pass. In that state
/// every edge's reparametrized minimum is 0 and the pass's bound is LB = constant + sum_v min
/// theta'_v. A labelling with x_u = a keeps every term outside u's star (u, its neighbours w, the
/// edges u-w) at its minimum or above, so it costs at least
///
///   LB + theta'_u(a) - min theta'_u + sum_w [min_b (theta'_uw(a, b) + theta'_w(b)) - min theta'_w]
///
/// (each neighbour once: parallel edges are merged). This is the star's exact min-marginal; it is
/// at least the unary reduced cost theta'_u(a) - min theta'_u that fixing used before, since
/// theta'_uw >= 0 and theta'_w >= min theta'_w. An edge collected by w has a zero minimum for every
/// label of w but not for every label of u, and the star sees that: GPT-2 fw+bw FSDP on 2x4 is
/// proven after 10 passes, where the unary test needed 52 (each followed by fixing and a larger
/// exact elimination). Costs one min-plus product per edge end, as a message pass does.
class StarBounds {
 public:
  explicit StarBounds(const Problem& p) : p_(p), rep_(p.nodes.size()), rep_min_(p.nodes.size(), 0) {
    for (std::uint32_t v = 0; v < p.nodes.size(); ++v)
      if (p.nodes[v].alive) {
        p.reparam_unary(v, rep_[v]);
        rep_min_[v] = *std::min_element(rep_[v].begin(), rep_[v].end());
      }
  }

  /// theta'_u, as the pass left it.
  [[nodiscard]] const std::vector<fine_t>& reparametrized(std::uint32_t u) const noexcept { return rep_[u]; }

  /// out[a] = the star bound above minus LB, per current label a of u (inf: no finite labelling
  /// of the star takes a). Reads the problem as it was at construction: judge every node before
  /// removing any label (a removal re-indexes the node's labels, which its neighbours' stars read).
  void excess(std::uint32_t u, std::vector<fine_t>& out) {
    const WNode& n = p_.nodes[u];
    const auto& tu = rep_[u];
    out.resize(tu.size());
    for (std::size_t a = 0; a < tu.size(); ++a) out[a] = tu[a] >= forbidden_from ? inf : tu[a] - rep_min_[u];
    for (auto ei : n.edges) {
      const WEdge& e = p_.edges[ei];
      const bool first = e.u == u;
      const std::uint32_t w = e.other(u);
      const auto& own = first ? e.rc : e.cc;
      const auto& oth = first ? e.cc : e.rc;
      const auto& mown = first ? e.mu : e.mv;
      const auto& moth = first ? e.mv : e.mu;
      // per other-side class: min over its labels of theta'_w(b) - message to w(b)
      g_.assign(first ? e.cols : e.rows, inf);
      const auto& tw = rep_[w];
      for (std::size_t b = 0; b < oth.size(); ++b)
        if (tw[b] < forbidden_from) g_[oth[b]] = std::min(g_[oth[b]], tw[b] - moth[b]);
      edge_min_plus(e, first, g_, col_);
      for (std::size_t a = 0; a < own.size(); ++a) {
        const fine_t x = col_[own[a]];
        out[a] = (x >= inf || out[a] >= inf) ? inf : out[a] + (x - mown[a] - rep_min_[w]);
      }
    }
  }

 private:
  const Problem& p_;
  std::vector<std::vector<fine_t>> rep_;
  std::vector<fine_t> rep_min_, g_, col_;
};

/// Labels fix_by_stars lists against a second target without removing them for it: every live
/// label whose star bound exceeds `target` (fine units) goes to `out` as (node, input label id).
/// No labelling of the problem costing at most `target` uses a listed label.
struct StarReport {
  fine_t target = inf;
  std::vector<std::pair<std::uint32_t, std::uint32_t>>* out = nullptr;  ///< null: no list
};

/// Reduced-cost fixing after a backward pass whose bound is `lb`: removes every label whose star
/// bound (StarBounds) exceeds `target` (the incumbent minus one, fine units), so no labelling
/// costing at most `target` loses a label; `report` lists the labels above its own target, read
/// from the same stars. Every node is judged on the unchanged state first (a removal re-indexes
/// its node's labels, which the neighbours' stars read), then the labels go. Returns the number
/// removed; may leave the problem infeasible (nothing at most `target`).
inline std::size_t fix_by_stars(Problem& p, fine_t lb, fine_t target, const StarReport& report = {}) {
  std::vector<std::pair<std::uint32_t, std::vector<char>>> fixes;
  {
    StarBounds stars(p);
    std::vector<fine_t> excess;
    for (std::uint32_t u = 0; u < p.nodes.size(); ++u) {
      if (!p.nodes[u].alive) continue;
      stars.excess(u, excess);
      std::vector<char> keep(excess.size(), 1);
      bool all = true;
      for (std::size_t a = 0; a < excess.size(); ++a) all = (keep[a] = excess[a] < inf && lb + excess[a] <= target) && all;
      if (report.out != nullptr)
        for (std::size_t a = 0; a < excess.size(); ++a)
          if (excess[a] >= inf || lb + excess[a] > report.target) report.out->emplace_back(u, p.nodes[u].label[a]);
      if (!all) fixes.emplace_back(u, std::move(keep));
    }
  }
  std::size_t removed = 0;
  // the edges' matrices are compacted once, after every node has lost its labels (tidy_classes),
  // not once per end: an edge's first shrink hashes its whole matrix (Problem::compaction), and
  // edges sharing a matrix and its outcome share the copy (GPT-2's training step on 2x2x2: a
  // Lagrangian try's first fixing and the reductions after it took 0.6-0.95 s, now 0.3-0.4 s);
  // an edge compacted before only drops its unused classes, as keep_labels did at once
  for (const auto& [u, keep] : fixes) {
    if (p.infeasible) break;
    if (p.nodes[u].alive) removed += p.keep_labels(u, keep, Problem::ClassCleanup::deferred);
  }
  p.tidy_classes(Problem::Recompact::drop_unused);
  return removed;
}

/// Reduced-cost fixing before any message pass, against the trivial bound LB = constant + sum_v
/// min theta_v (every edge term >= 0 dropped): a labelling with x_u = a costs at least
/// LB + theta_u(a) - min theta_u, and one using the pair (a, b) of an edge at least LB + its cost.
/// So with `target` (the incumbent minus one, fine units of `scale`) every label and pair above
/// the slack target - LB can go, and no labelling costing at most `target` loses anything. This
/// is that slack for `g` at `scale`; none when some edge entry of `g` is negative (the bound
/// drops the edge terms) or a node has no finite label. Strong where the incumbent is near the
/// optimum: a greedy plan of 12 µs on a 4,096-label graph on 2x2x2x2 keeps only the pairs below
/// 12 µs. Negative: nothing costs at most `target`.
[[nodiscard]] inline std::optional<fine_t> threshold_slack(const CostGraph& g, fine_t scale, fine_t target) {
  std::unordered_set<const void*> seen;
  for (const auto& e : g.edges) {
    if (e.shared && !seen.insert(e.shared.get()).second) continue;
    const auto& m = e.costs();
    if (std::any_of(m.begin(), m.end(), [](cost_t x) { return x < 0; })) return std::nullopt;
  }
  wide_t lb = static_cast<wide_t>(g.constant);
  for (const auto& unary : g.unary) {
    cost_t least = forbidden;
    for (const cost_t x : unary)
      if (!is_forbidden(x)) least = std::min(least, x);
    if (is_forbidden(least)) return std::nullopt;
    lb += least;
  }
  const wide_t slack = static_cast<wide_t>(target) - lb * static_cast<wide_t>(scale);
  if (slack >= static_cast<wide_t>(inf)) return std::nullopt;
  return slack < 0 ? fine_t{-1} : static_cast<fine_t>(slack);
}

/// The labels part of threshold_slack's fixing (the Problem constructor's `pair_cap` does the
/// pairs; propagate then removes the labels left without a partner): removes every label of a
/// fresh Problem whose unary cost exceeds its node's least by more than `slack` (negative: the
/// problem becomes infeasible). Returns the number removed.
inline std::size_t fix_by_threshold(Problem& p, fine_t slack) {
  if (slack < 0) {
    p.infeasible = true;
    return 0;
  }
  std::size_t removed = 0;
  for (std::uint32_t u = 0; u < p.nodes.size() && !p.infeasible; ++u) {
    const WNode& n = p.nodes[u];
    if (!n.alive) continue;
    const fine_t least = *std::min_element(n.theta.begin(), n.theta.end());
    std::vector<char> keep(n.theta.size());
    for (std::size_t a = 0; a < keep.size(); ++a) keep[a] = n.theta[a] - least <= slack;
    removed += p.keep_labels(u, keep, Problem::ClassCleanup::deferred);
  }
  p.tidy_classes();
  return removed;
}

}  // namespace ctshard::solve::detail
