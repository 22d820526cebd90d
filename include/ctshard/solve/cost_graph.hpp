#pragma once
/// \file solve/cost_graph.hpp
/// A pairwise cost graph: one variable per node, choosing one of its labels (strategies); the
/// objective is a constant plus a unary cost per node label plus, per edge, a cost per pair of
/// labels; optional per-label usages with linear limits (IOPDDL's per-time-step memory rows, a
/// per-device memory budget). Costs are integers (fixed point), so optimality is exact; a pair or
/// label may be forbidden.
///
/// Edge matrices are stored factored: each label of the edge's first node maps to a row class,
/// each label of the second to a column class, and the cost is `matrix[row][col]`. Sharding cost
/// graphs need this: a consumer with 10^3 strategies usually asks for a few dozen distinct input
/// specs, and the cost depends only on (producer output spec, consumer input spec). A dense
/// matrix is the special case of one class per label.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "ctshard/error.hpp"
#include "ctshard/solve/interval_steps.hpp"

namespace ctshard::solve {

/// Integer cost (fixed point: the unit is up to the producer of the graph; ctshard's sharding
/// graphs use nanoseconds).
using cost_t = std::int64_t;

/// A forbidden label or pair (DTensor's infinite redistributions, IOPDDL's 1e18 entries). Any
/// cost at or above it is forbidden.
inline constexpr cost_t forbidden = std::numeric_limits<cost_t>::max() / 4;

/// The solver's exact range: every finite cost lies in [-max_exact_cost, max_exact_cost] (2^56),
/// and so does the sum of their magnitudes (the fixed-point scale multiplies them and the dual's
/// messages add them in 64-bit integers). CostGraph::validate refuses a cost outside it, naming
/// the node or edge and the value; solve refuses a graph whose magnitudes sum beyond it
/// (ctshard::error).
inline constexpr cost_t max_exact_cost = cost_t{1} << 56;

/// The usage range: per limit (and per time step of an interval limit), |limit| plus the sum of
/// the members' largest |usage| stays within 2^60, so no usage sum wraps (they are 64-bit).
inline constexpr std::int64_t max_usage_total = std::int64_t{1} << 60;

/// True for a forbidden cost.
[[nodiscard]] constexpr bool is_forbidden(cost_t c) noexcept { return c >= forbidden; }

/// Saturating sum: forbidden when either side is.
[[nodiscard]] constexpr cost_t add_costs(cost_t a, cost_t b) noexcept { return is_forbidden(a) || is_forbidden(b) ? forbidden : a + b; }

/// A pairwise term between nodes `u` and `v` (u != v), factored by classes.
struct CostEdge {
  std::uint32_t u = 0, v = 0;
  std::vector<std::uint32_t> row_class;  ///< per label of u: its row in `matrix`
  std::vector<std::uint32_t> col_class;  ///< per label of v: its column in `matrix`
  std::uint32_t rows = 0, cols = 0;
  std::vector<cost_t> matrix;  ///< rows * cols, row-major; entries may be `forbidden`
  /// Alternatively a matrix shared with other edges (repeated blocks of a model): used when set,
  /// and then `matrix` stays empty.
  std::shared_ptr<const std::vector<cost_t>> shared{};

  /// The matrix in use (`shared` when set, else `matrix`).
  [[nodiscard]] const std::vector<cost_t>& costs() const noexcept { return shared ? *shared : matrix; }
  /// The cost of labels (a, b).
  [[nodiscard]] cost_t at(std::size_t a, std::size_t b) const noexcept { return costs()[std::size_t{row_class[a]} * cols + col_class[b]]; }
};

/// A linear limit over node usages: the sum, over `nodes`, of the usage of each node's label is at
/// most `limit` (IOPDDL: the nodes alive at one time step). `nodes` is a set: a node listed twice
/// is an error (CostGraph::validate).
struct UsageLimit {
  std::vector<std::uint32_t> nodes;
  std::int64_t limit = 0;
};

/// The cost graph (see the file comment).
struct CostGraph {
  std::vector<std::vector<cost_t>> unary;  ///< per node, per label (the label count is unary[u].size() >= 1)
  std::vector<CostEdge> edges;
  cost_t constant = 0;
  /// Per node, per label usage; empty when the graph has no usage limits.
  std::vector<std::vector<std::int64_t>> usage;
  std::vector<UsageLimit> limits;
  /// IOPDDL only: per node [start, end) lifetime, kept to write the instance back.
  std::vector<std::pair<std::int64_t, std::int64_t>> intervals;
  /// IOPDDL's usage limit over time: at every time step t, the usages of the nodes whose interval
  /// [start, end) contains t sum to at most this (needs `intervals` and `usage` for every node).
  /// Kept implicit (IntervalSteps): listing one UsageLimit per step is quadratic in the nodes on
  /// a staircase of intervals; the solver turns the steps a round's optimum breaks into limits.
  std::optional<std::int64_t> interval_limit;

  [[nodiscard]] std::size_t num_nodes() const noexcept { return unary.size(); }
  [[nodiscard]] std::size_t num_labels(std::size_t u) const noexcept { return unary[u].size(); }

  /// Adds a node with these label costs; returns its index.
  std::uint32_t add_node(std::vector<cost_t> costs) {
    if (costs.empty()) throw error("ctshard::solve::CostGraph: a node needs at least one label");
    unary.push_back(std::move(costs));
    return static_cast<std::uint32_t>(unary.size() - 1);
  }

  /// Adds a dense edge: `costs[a * num_labels(v) + b]`.
  void add_dense_edge(std::uint32_t u, std::uint32_t v, std::vector<cost_t> costs) {
    CostEdge e;
    e.u = u;
    e.v = v;
    e.rows = static_cast<std::uint32_t>(num_labels(u));
    e.cols = static_cast<std::uint32_t>(num_labels(v));
    e.row_class.resize(e.rows);
    e.col_class.resize(e.cols);
    for (std::uint32_t a = 0; a < e.rows; ++a) e.row_class[a] = a;
    for (std::uint32_t b = 0; b < e.cols; ++b) e.col_class[b] = b;
    e.matrix = std::move(costs);
    add_edge(std::move(e));
  }

  /// Adds a factored edge after checking its shape. Throws ctshard::error when malformed.
  void add_edge(CostEdge e) {
    const auto bad = [&](const std::string& why) {
      throw error("ctshard::solve::CostGraph: edge " + std::to_string(e.u) + "-" + std::to_string(e.v) + ": " + why);
    };
    if (e.u >= num_nodes() || e.v >= num_nodes()) bad("node out of range");
    if (e.u == e.v) bad("a self edge (fold it into the unary costs)");
    if (e.row_class.size() != num_labels(e.u) || e.col_class.size() != num_labels(e.v)) bad("class maps do not match the label counts");
    if (e.costs().size() != std::size_t{e.rows} * e.cols) bad("matrix size is not rows * cols");
    for (auto r : e.row_class)
      if (r >= e.rows) bad("row class out of range");
    for (auto c : e.col_class)
      if (c >= e.cols) bad("column class out of range");
    edges.push_back(std::move(e));
  }

  /// The objective of a full assignment (one label per node), `forbidden` when it uses a
  /// forbidden label or pair. Throws ctshard::error for a malformed assignment.
  [[nodiscard]] cost_t evaluate(std::span<const std::uint32_t> labels) const {
    check_assignment(labels);
    cost_t total = constant;
    for (std::size_t u = 0; u < num_nodes(); ++u) total = add_costs(total, unary[u][labels[u]]);
    for (const auto& e : edges) total = add_costs(total, e.at(labels[e.u], labels[e.v]));
    return total;
  }

  /// True when the assignment meets every usage limit (and every time step of the interval
  /// limit). Throws ctshard::error for a malformed assignment.
  [[nodiscard]] bool feasible(std::span<const std::uint32_t> labels) const {
    check_assignment(labels);
    for (const auto& l : limits) {
      std::int64_t sum = 0;
      for (auto u : l.nodes) sum += usage[u][labels[u]];
      if (sum > l.limit) return false;
    }
    if (interval_limit) {
      const IntervalSteps steps(intervals);
      for (const std::int64_t sum : steps.sums<std::int64_t>([&](std::size_t u) { return usage[u][labels[u]]; }))
        if (sum > *interval_limit) return false;
    }
    return true;
  }

  /// An estimate of the graph's memory (bytes): its vectors' contents and headers, a shared edge
  /// matrix counted once. What --max-memory-mib bounds (docs/robustness.md).
  [[nodiscard]] std::size_t memory_bytes() const {
    constexpr std::size_t vec = sizeof(std::vector<cost_t>);
    std::size_t b = sizeof(CostGraph) + unary.size() * vec + edges.size() * sizeof(CostEdge);
    for (const auto& u : unary) b += u.size() * sizeof(cost_t);
    std::unordered_set<const void*> seen;
    for (const auto& e : edges) {
      b += (e.row_class.size() + e.col_class.size()) * sizeof(std::uint32_t) + e.matrix.size() * sizeof(cost_t);
      if (e.shared && seen.insert(e.shared.get()).second) b += vec + e.shared->size() * sizeof(cost_t);
    }
    b += usage.size() * vec;
    for (const auto& u : usage) b += u.size() * sizeof(std::int64_t);
    for (const auto& l : limits) b += sizeof(UsageLimit) + l.nodes.size() * sizeof(std::uint32_t);
    b += intervals.size() * sizeof(intervals[0]);
    return b;
  }

  /// Total number of labels over all nodes.
  [[nodiscard]] std::size_t total_labels() const noexcept {
    std::size_t n = 0;
    for (const auto& u : unary) n += u.size();
    return n;
  }

  /// Checks the whole graph (edges, usage table, limits). Throws ctshard::error.
  void validate() const {
    for (std::size_t u = 0; u < num_nodes(); ++u)
      if (unary[u].empty()) throw error("ctshard::solve::CostGraph: node " + std::to_string(u) + " has no label");
    for (const auto& e : edges) {
      if (e.u >= num_nodes() || e.v >= num_nodes() || e.u == e.v || e.row_class.size() != num_labels(e.u) || e.col_class.size() != num_labels(e.v) ||
          e.costs().size() != std::size_t{e.rows} * e.cols)
        throw error("ctshard::solve::CostGraph: malformed edge " + std::to_string(e.u) + "-" + std::to_string(e.v));
      for (auto r : e.row_class)
        if (r >= e.rows) throw error("ctshard::solve::CostGraph: row class out of range");
      for (auto c : e.col_class)
        if (c >= e.cols) throw error("ctshard::solve::CostGraph: column class out of range");
    }
    if (!limits.empty() && usage.size() != num_nodes()) throw error("ctshard::solve::CostGraph: usage limits need a usage row per node");
    for (std::size_t u = 0; u < usage.size(); ++u)
      if (usage[u].size() != num_labels(u))
        throw error("ctshard::solve::CostGraph: node " + std::to_string(u) + ": usage row size differs from its label count");
    std::vector<std::size_t> listed(limits.empty() ? 0 : num_nodes(), 0);  // per node: 1 + the last limit listing it
    for (std::size_t k = 0; k < limits.size(); ++k)
      for (auto u : limits[k].nodes) {
        if (u >= num_nodes()) throw error("ctshard::solve::CostGraph: a usage limit names node " + std::to_string(u) + ", out of range");
        if (listed[u] == k + 1)
          throw error("ctshard::solve::CostGraph: usage limit " + std::to_string(k) + " lists node " + std::to_string(u) +
                      " twice (a limit is a set of nodes; to count a usage twice, double it in the usage row)");
        listed[u] = k + 1;
      }
    if (interval_limit && (intervals.size() != num_nodes() || usage.size() != num_nodes()))
      throw error("ctshard::solve::CostGraph: an interval limit needs an interval and a usage row per node");
    validate_numbers();
  }

  /// The numeric half of validate(): every finite cost (unary, edge, constant) within
  /// ±max_exact_cost, every usage sum a limit can take within max_usage_total. Throws
  /// ctshard::error naming the node, label or edge and the value.
  void validate_numbers() const {
    const auto bad_cost = [](cost_t c) { return !is_forbidden(c) && (c > max_exact_cost || c < -max_exact_cost); };
    const std::string range = " is outside the solver's exact range [-2^56, 2^56] (forbidden is " + std::to_string(forbidden) + " or more)";
    if (bad_cost(constant)) throw error("ctshard::solve::CostGraph: the constant " + std::to_string(constant) + range);
    for (std::size_t u = 0; u < num_nodes(); ++u)
      for (std::size_t a = 0; a < unary[u].size(); ++a)
        if (bad_cost(unary[u][a]))
          throw error("ctshard::solve::CostGraph: node " + std::to_string(u) + " label " + std::to_string(a) + ": cost " +
                      std::to_string(unary[u][a]) + range);
    std::unordered_set<const void*> seen;
    for (const auto& e : edges) {
      if (e.shared && !seen.insert(e.shared.get()).second) continue;
      for (const cost_t c : e.costs())
        if (bad_cost(c))
          throw error("ctshard::solve::CostGraph: edge " + std::to_string(e.u) + "-" + std::to_string(e.v) + ": cost " + std::to_string(c) + range);
    }
    // the largest |usage| per node (long double: exact far beyond the 2^60 bound checked)
    std::vector<long double> big(usage.size(), 0);
    for (std::size_t u = 0; u < usage.size(); ++u)
      for (std::size_t a = 0; a < usage[u].size(); ++a) {
        const long double x = std::fabs(static_cast<long double>(usage[u][a]));
        if (x > static_cast<long double>(max_usage_total))
          throw error("ctshard::solve::CostGraph: node " + std::to_string(u) + " label " + std::to_string(a) + ": usage " +
                      std::to_string(usage[u][a]) + " is outside [-2^60, 2^60]");
        big[u] = std::max(big[u], x);
      }
    const auto check_total = [&](long double total, std::int64_t limit, const std::string& which) {
      if (total + std::fabs(static_cast<long double>(limit)) > static_cast<long double>(max_usage_total))
        throw error("ctshard::solve::CostGraph: " + which + " (limit " + std::to_string(limit) +
                    "): its usages and limit can sum beyond 2^60, outside the exact 64-bit range");
    };
    for (std::size_t k = 0; k < limits.size(); ++k) {
      long double total = 0;
      for (auto u : limits[k].nodes) total += big[u];
      check_total(total, limits[k].limit, "usage limit " + std::to_string(k));
    }
    if (interval_limit) {
      const IntervalSteps steps(intervals);
      const std::vector<long double> per_step = steps.sums<long double>([&](std::size_t u) { return big[u]; });
      for (std::size_t t = 0; t < per_step.size(); ++t)
        check_total(per_step[t], *interval_limit, "the interval limit at time " + std::to_string(steps.start_time(t)));
    }
  }

 private:
  void check_assignment(std::span<const std::uint32_t> labels) const {
    if (labels.size() != num_nodes())
      throw error("ctshard::solve::CostGraph: an assignment has " + std::to_string(labels.size()) + " labels for " + std::to_string(num_nodes()) +
                  " nodes");
    for (std::size_t u = 0; u < labels.size(); ++u)
      if (labels[u] >= num_labels(u))
        throw error("ctshard::solve::CostGraph: label " + std::to_string(labels[u]) + " of node " + std::to_string(u) + " out of range");
  }
};

}  // namespace ctshard::solve
