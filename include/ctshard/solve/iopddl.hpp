#pragma once
/// \file solve/iopddl.hpp
/// The IOPDDL contest format (ASPLOS / EuroSys 2025, google/iopddl) as a CostGraph, both ways.
///
/// JSON: `{"problem": {"name", "nodes": {"intervals", "costs", "usages"}, "edges": {"nodes",
/// "costs"}, "usage_limit"}}`; node i has one cost and one usage per strategy and lives over the
/// half-open interval [start, end); edge e = [u, v] has |S_u| x |S_v| costs, row-major; at every
/// time step the usages of the live nodes sum to at most `usage_limit` (absent: no limit).
///
/// Reading: a cost of 10^18 or more is forbidden (the instances use 10^18 for impossible
/// strategies and pairs); the time steps become usage limits, one per maximal set of live nodes
/// (for intervals these are the steps where some interval starts and, before the next start,
/// some interval ends; other steps' sets are subsets), unless some usage is negative, in which
/// case every distinct set is kept. Parallel edges stay separate (the solver merges them); an
/// edge [u, u] folds its diagonal into u's costs.
/// Writing: edges are written dense; forbidden entries as 10^18; a nonzero constant becomes an
/// extra node with one strategy; usage limits must be expressible as intervals (the graph's own
/// intervals, or at most one limit, written as the time step [0, 1)).

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "ctshard/error.hpp"
#include "ctshard/solve/cost_graph.hpp"

namespace ctshard::solve {

/// IOPDDL's infinity: costs at or above it are forbidden.
inline constexpr std::int64_t iopddl_infinity = 1'000'000'000'000'000'000;

/// An IOPDDL instance read into a CostGraph, with its name.
struct IopddlInstance {
  std::string name;
  CostGraph graph;
  std::int64_t usage_limit = -1;  ///< -1: none
};

namespace detail {

/// A minimal JSON reader for the IOPDDL schema: objects, arrays, integers (floats are accepted
/// when integral), strings, true / false / null. Errors name the byte offset.
class JsonCursor {
 public:
  explicit JsonCursor(std::string_view text) : s_(text) {}

  [[noreturn]] void fail(const std::string& what) const {
    throw error("ctshard iopddl: malformed JSON at byte " + std::to_string(pos_) + ": " + what);
  }
  void ws() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\n' || s_[pos_] == '\r' || s_[pos_] == '\t')) ++pos_;
  }
  [[nodiscard]] char peek() {
    ws();
    return pos_ < s_.size() ? s_[pos_] : '\0';
  }
  void expect(char c) {
    if (peek() != c) fail(std::string("expected '") + c + "'");
    ++pos_;
  }
  bool accept(char c) {
    if (peek() != c) return false;
    ++pos_;
    return true;
  }
  std::string string() {
    expect('"');
    std::string out;
    while (pos_ < s_.size() && s_[pos_] != '"') {
      if (s_[pos_] == '\\') {
        ++pos_;
        if (pos_ >= s_.size()) fail("unterminated string");
        const char e = s_[pos_];
        out += e == 'n' ? '\n' : e == 't' ? '\t' : e;
        if (e == 'u') pos_ += 4;
      } else {
        out += s_[pos_];
      }
      ++pos_;
    }
    if (pos_ >= s_.size()) fail("unterminated string");
    ++pos_;
    return out;
  }
  std::int64_t integer() {
    ws();
    const std::size_t start = pos_;
    while (pos_ < s_.size() && (std::isdigit(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '-' || s_[pos_] == '+' || s_[pos_] == '.' ||
                                s_[pos_] == 'e' || s_[pos_] == 'E'))
      ++pos_;
    const std::string_view t = s_.substr(start, pos_ - start);
    if (t.empty()) fail("expected a number");
    std::int64_t v = 0;
    const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
    if (ec == std::errc{} && end == t.data() + t.size()) return v;
    // a float or an out-of-range integer: accept integral values, clamp huge ones (infinity)
    double d = 0;
    try {
      d = std::stod(std::string(t));
    } catch (...) {
      fail("bad number '" + std::string(t) + "'");
    }
    if (d >= 9.2e18) return std::numeric_limits<std::int64_t>::max();
    if (d <= -9.2e18) return std::numeric_limits<std::int64_t>::min();
    if (d != static_cast<double>(static_cast<std::int64_t>(d))) fail("a non-integral number '" + std::string(t) + "'");
    return static_cast<std::int64_t>(d);
  }
  /// An array whose elements `read()` reads, one call per element, in order.
  template <class Read>
  std::vector<std::invoke_result_t<Read&>> array_of(Read&& read) {
    std::vector<std::invoke_result_t<Read&>> out;
    expect('[');
    if (accept(']')) return out;
    do out.push_back(read());
    while (accept(','));
    expect(']');
    return out;
  }
  std::vector<std::int64_t> int_array() {
    return array_of([this] { return integer(); });
  }
  std::vector<std::vector<std::int64_t>> int_arrays() {
    return array_of([this] { return int_array(); });
  }
  /// Skips any value.
  void skip() {
    const char c = peek();
    if (c == '{') {
      ++pos_;
      if (accept('}')) return;
      do {
        string();
        expect(':');
        skip();
      } while (accept(','));
      expect('}');
    } else if (c == '[') {
      ++pos_;
      if (accept(']')) return;
      do skip();
      while (accept(','));
      expect(']');
    } else if (c == '"') {
      string();
    } else if (c == 't' || c == 'f' || c == 'n') {
      while (pos_ < s_.size() && std::isalpha(static_cast<unsigned char>(s_[pos_]))) ++pos_;
    } else {
      integer();
    }
  }
  /// Calls `f(key)` for each member of an object; `f` must consume the value.
  template <class F>
  void object(F&& f) {
    expect('{');
    if (accept('}')) return;
    do {
      const std::string key = string();
      expect(':');
      f(key);
    } while (accept(','));
    expect('}');
  }
  void end() {
    if (peek() != '\0') fail("text after the document");
  }

 private:
  std::string_view s_;
  std::size_t pos_ = 0;
};

inline cost_t iopddl_cost(std::int64_t c) { return c >= iopddl_infinity ? forbidden : c; }

}  // namespace detail

/// The usage limits of per-node lifetimes: one per maximal set of live nodes (see the file
/// comment); nodes with an empty interval are never live.
[[nodiscard]] inline std::vector<UsageLimit> limits_from_intervals(const std::vector<std::pair<std::int64_t, std::int64_t>>& intervals,
                                                                   std::int64_t limit, bool all_sets) {
  std::set<std::int64_t> points;
  for (const auto& [s, e] : intervals)
    if (s < e) {
      points.insert(s);
      points.insert(e);
    }
  std::vector<std::int64_t> p(points.begin(), points.end());
  std::vector<UsageLimit> out;
  std::set<std::vector<std::uint32_t>> seen;
  for (std::size_t i = 0; i + 1 < p.size(); ++i) {
    const std::int64_t a = p[i], b = p[i + 1];  // segment [a, b)
    bool starts = false, ends = false;
    std::vector<std::uint32_t> alive;
    for (std::uint32_t u = 0; u < intervals.size(); ++u) {
      const auto [s, e] = intervals[u];
      if (s <= a && a < e) {
        alive.push_back(u);
        starts = starts || s == a;
        ends = ends || e == b;
      }
    }
    if (alive.empty()) continue;
    if (!all_sets && !(starts && ends)) continue;
    if (!seen.insert(alive).second) continue;
    out.push_back({std::move(alive), limit});
  }
  return out;
}

/// Reads an IOPDDL instance from its JSON text. Throws ctshard::error naming the problem.
[[nodiscard]] inline IopddlInstance read_iopddl(std::string_view text) {
  detail::JsonCursor j(text);
  IopddlInstance inst;
  std::vector<std::vector<std::int64_t>> intervals, node_costs, usages, edge_nodes, edge_costs;
  bool has_problem = false;
  j.object([&](const std::string& key) {
    if (key != "problem") {
      j.skip();
      return;
    }
    has_problem = true;
    j.object([&](const std::string& k) {
      if (k == "name") {
        if (j.peek() == '"') inst.name = j.string();
        else j.skip();
      } else if (k == "usage_limit") {
        if (j.peek() == 'n') j.skip();
        else inst.usage_limit = j.integer();
      } else if (k == "nodes") {
        j.object([&](const std::string& f) {
          if (f == "intervals") intervals = j.int_arrays();
          else if (f == "costs") node_costs = j.int_arrays();
          else if (f == "usages") usages = j.int_arrays();
          else j.skip();
        });
      } else if (k == "edges") {
        j.object([&](const std::string& f) {
          if (f == "nodes") edge_nodes = j.int_arrays();
          else if (f == "costs") edge_costs = j.int_arrays();
          else j.skip();
        });
      } else {
        j.skip();
      }
    });
  });
  j.end();
  if (!has_problem) throw error("ctshard iopddl: no \"problem\" object");
  const std::size_t n = node_costs.size();
  if (!usages.empty() && usages.size() != n)
    throw error("ctshard iopddl: " + std::to_string(usages.size()) + " usage rows for " + std::to_string(n) + " nodes");
  if (!intervals.empty() && intervals.size() != n)
    throw error("ctshard iopddl: " + std::to_string(intervals.size()) + " intervals for " + std::to_string(n) + " nodes");
  if (edge_costs.size() != edge_nodes.size())
    throw error("ctshard iopddl: " + std::to_string(edge_costs.size()) + " edge cost tables for " + std::to_string(edge_nodes.size()) + " edges");
  CostGraph& g = inst.graph;
  bool negative = false;
  for (std::size_t u = 0; u < n; ++u) {
    if (node_costs[u].empty()) throw error("ctshard iopddl: node " + std::to_string(u) + " has no strategy");
    std::vector<cost_t> c;
    for (auto x : node_costs[u]) c.push_back(detail::iopddl_cost(x));
    g.add_node(std::move(c));
    if (!usages.empty()) {
      if (usages[u].size() != node_costs[u].size())
        throw error("ctshard iopddl: node " + std::to_string(u) + " has " + std::to_string(usages[u].size()) + " usages for " +
                    std::to_string(node_costs[u].size()) + " strategies");
      for (auto x : usages[u]) negative = negative || x < 0;
    }
  }
  for (const auto& iv : intervals) {
    if (iv.size() != 2) throw error("ctshard iopddl: an interval is not [start, end]");
    g.intervals.emplace_back(iv[0], iv[1]);
  }
  for (std::size_t e = 0; e < edge_nodes.size(); ++e) {
    if (edge_nodes[e].size() != 2) throw error("ctshard iopddl: edge " + std::to_string(e) + " is not [u, v]");
    const auto u = edge_nodes[e][0], v = edge_nodes[e][1];
    if (u < 0 || v < 0 || static_cast<std::size_t>(u) >= n || static_cast<std::size_t>(v) >= n)
      throw error("ctshard iopddl: edge " + std::to_string(e) + " names a node out of range");
    const std::size_t su = g.num_labels(static_cast<std::size_t>(u)), sv = g.num_labels(static_cast<std::size_t>(v));
    if (edge_costs[e].size() != su * sv)
      throw error("ctshard iopddl: edge " + std::to_string(e) + " has " + std::to_string(edge_costs[e].size()) + " costs for " + std::to_string(su) +
                  " x " + std::to_string(sv) + " strategies");
    if (u == v) {  // only the diagonal can be chosen
      for (std::size_t a = 0; a < su; ++a)
        g.unary[static_cast<std::size_t>(u)][a] = add_costs(g.unary[static_cast<std::size_t>(u)][a], detail::iopddl_cost(edge_costs[e][a * sv + a]));
      continue;
    }
    std::vector<cost_t> c;
    c.reserve(edge_costs[e].size());
    for (auto x : edge_costs[e]) c.push_back(detail::iopddl_cost(x));
    g.add_dense_edge(static_cast<std::uint32_t>(u), static_cast<std::uint32_t>(v), std::move(c));
  }
  if (inst.usage_limit >= 0 && !usages.empty()) {
    if (g.intervals.size() != n) throw error("ctshard iopddl: a usage limit needs an interval per node");
    for (auto& row : usages) g.usage.push_back(row);
    g.limits = limits_from_intervals(g.intervals, inst.usage_limit, negative);
  }
  return inst;
}

/// Writes `g` in the IOPDDL JSON format (see the file comment). Throws ctshard::error when its
/// usage limits cannot be written as intervals.
[[nodiscard]] inline std::string write_iopddl(const CostGraph& g, const std::string& name) {
  g.validate();
  const bool extra = g.constant != 0;
  const std::size_t n = g.num_nodes();
  std::vector<std::pair<std::int64_t, std::int64_t>> intervals;
  std::int64_t limit = -1;
  if (!g.limits.empty()) {
    if (g.intervals.size() == n) {
      intervals = g.intervals;
      limit = g.limits.front().limit;
      for (const auto& l : g.limits)
        if (l.limit != limit) throw error("ctshard iopddl: usage limits differ; IOPDDL has one usage_limit");
    } else if (g.limits.size() == 1) {
      intervals.assign(n, {0, 0});
      for (auto u : g.limits[0].nodes) intervals[u] = {0, 1};
      limit = g.limits[0].limit;
    } else {
      throw error("ctshard iopddl: " + std::to_string(g.limits.size()) + " usage limits without node intervals cannot be written");
    }
  } else if (g.intervals.size() == n) {
    intervals = g.intervals;
  } else {
    intervals.assign(n, {0, 0});
  }
  const auto num = [](cost_t c) { return std::to_string(is_forbidden(c) ? iopddl_infinity : c); };
  std::string out;
  out.reserve(1 << 20);
  out += "{\"problem\": {\"name\": \"";
  for (char c : name) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  out += "\",\n\"nodes\": {\"intervals\": [";
  for (std::size_t u = 0; u < n + (extra ? 1 : 0); ++u) {
    const auto iv = u < n ? intervals[u] : std::pair<std::int64_t, std::int64_t>{0, 0};
    out += (u ? ", [" : "[") + std::to_string(iv.first) + ", " + std::to_string(iv.second) + "]";
  }
  out += "],\n\"costs\": [";
  for (std::size_t u = 0; u < n + (extra ? 1 : 0); ++u) {
    out += u ? ",\n[" : "\n[";
    if (u < n) {
      for (std::size_t a = 0; a < g.num_labels(u); ++a) out += (a ? ", " : "") + num(g.unary[u][a]);
    } else {
      out += num(g.constant);
    }
    out += "]";
  }
  out += "],\n\"usages\": [";
  for (std::size_t u = 0; u < n + (extra ? 1 : 0); ++u) {
    out += u ? ", [" : "[";
    const std::size_t L = u < n ? g.num_labels(u) : 1;
    for (std::size_t a = 0; a < L; ++a) out += (a ? ", " : "") + std::to_string(u < n && !g.usage.empty() ? g.usage[u][a] : 0);
    out += "]";
  }
  out += "]},\n\"edges\": {\"nodes\": [";
  for (std::size_t e = 0; e < g.edges.size(); ++e)
    out += (e ? ", [" : "[") + std::to_string(g.edges[e].u) + ", " + std::to_string(g.edges[e].v) + "]";
  out += "],\n\"costs\": [";
  for (std::size_t e = 0; e < g.edges.size(); ++e) {
    const CostEdge& ed = g.edges[e];
    out += e ? ",\n[" : "\n[";
    bool first = true;
    for (std::size_t a = 0; a < g.num_labels(ed.u); ++a)
      for (std::size_t b = 0; b < g.num_labels(ed.v); ++b) {
        out += first ? "" : ", ";
        first = false;
        out += num(ed.at(a, b));
      }
    out += "]";
  }
  out += "]}";
  if (limit >= 0) out += ",\n\"usage_limit\": " + std::to_string(limit);
  out += "}}\n";
  return out;
}

}  // namespace ctshard::solve
