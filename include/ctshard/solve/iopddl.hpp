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
/// strategies and pairs); other costs must lie in the solver's exact range (±2^56), usages and
/// the limit in ±2^60, or the reader names the field and the value. The time steps stay one
/// implicit limit (CostGraph::interval_limit) — unless one step holds every other (all nonempty
/// intervals overlap, no usage negative: a memory budget written as [0, 1)), which reads as one
/// plain usage limit (CostGraph::limits); `limits_from_intervals` lists them as usage
/// limits, one per maximal set of live nodes (the steps where some interval starts and, before
/// the next start, some interval ends; other steps' sets are subsets), or every distinct set
/// when some usage is negative. Parallel edges stay separate (the solver merges them); an edge
/// [u, u] folds its diagonal into u's costs. Skipped values nest at most max_iopddl_nesting
/// levels; the memory of the parsed arrays and the graph is bounded by IopddlReadOptions.
/// Writing: edges are written dense; forbidden entries as 10^18; a nonzero constant becomes an
/// extra node with one strategy; usage limits must be expressible as intervals (an interval
/// limit, the graph's own intervals, or at most one limit, written as the time step [0, 1)).

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "ctshard/error.hpp"
#include "ctshard/solve/budget.hpp"
#include "ctshard/solve/cost_graph.hpp"
#include "ctshard/solve/interval_steps.hpp"

namespace ctshard::solve {

/// IOPDDL's infinity: costs at or above it are forbidden.
inline constexpr std::int64_t iopddl_infinity = 1'000'000'000'000'000'000;

/// The deepest nesting of a value the reader skips (a key it does not know): deeper is an error
/// (it recursed without bound: a 2 KB `.json.gz` of nested lists crashed it).
inline constexpr std::size_t max_iopddl_nesting = 64;

/// How the reader may read: its memory (the parsed arrays plus the CostGraph, estimated) and its
/// time. Defaults: no bound.
struct IopddlReadOptions {
  std::size_t max_memory_bytes = std::numeric_limits<std::size_t>::max();
  Deadline deadline{};
};

/// An IOPDDL instance read into a CostGraph, with its name.
struct IopddlInstance {
  std::string name;
  CostGraph graph;
  std::int64_t usage_limit = -1;  ///< -1: none
};

namespace detail {

/// A minimal JSON reader for the IOPDDL schema: objects, arrays, integers (floats are accepted
/// when integral), strings, true / false / null. Errors name the byte offset. It counts the
/// memory of the arrays it returns against `max_memory_bytes` and polls the deadline.
class JsonCursor {
 public:
  explicit JsonCursor(std::string_view text, const IopddlReadOptions& o = {})
      : s_(text), max_bytes_(o.max_memory_bytes), poll_(o.deadline, 1 << 16) {}

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
  /// An integer as integer() read it, for messages: its maximum stands for any value at or above
  /// it ("9223372036854775807 or more"), not for the file's text.
  [[nodiscard]] static std::string integer_text(std::int64_t x) {
    return std::to_string(x) + (x == std::numeric_limits<std::int64_t>::max() ? " or more" : "");
  }
  /// An integer; a float when integral. Values above int64 read as its maximum (at or above
  /// IOPDDL's infinity: forbidden as a cost, out of range elsewhere); values below it are an
  /// error naming the text.
  std::int64_t integer() {
    ws();
    tick();
    const std::size_t start = pos_;
    while (pos_ < s_.size() && (std::isdigit(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '-' || s_[pos_] == '+' || s_[pos_] == '.' ||
                                s_[pos_] == 'e' || s_[pos_] == 'E'))
      ++pos_;
    const std::string_view t = s_.substr(start, pos_ - start);
    if (t.empty()) fail("expected a number");
    std::int64_t v = 0;
    const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
    if (ec == std::errc{} && end == t.data() + t.size()) return v;
    // a float or an out-of-range integer: accept integral values, clamp huge positive ones
    const std::string text(t.substr(0, 200));
    double d = 0;
    try {
      std::size_t used = 0;
      d = std::stod(std::string(t), &used);
      if (used != t.size()) fail("bad number '" + text + "'");
    } catch (const std::out_of_range&) {
      d = t.front() == '-' ? -HUGE_VAL : HUGE_VAL;
    } catch (const std::invalid_argument&) {
      fail("bad number '" + text + "'");
    }
    if (std::isnan(d)) fail("bad number '" + text + "'");
    if (d >= 9.2e18) return std::numeric_limits<std::int64_t>::max();
    if (d <= -9.2e18) fail("the number '" + text + "' is below the 64-bit range");
    if (d != static_cast<double>(static_cast<std::int64_t>(d))) fail("a non-integral number '" + text + "'");
    return static_cast<std::int64_t>(d);
  }
  /// An array whose elements `read()` reads, one call per element, in order.
  template <class Read>
  std::vector<std::invoke_result_t<Read&>> array_of(Read&& read) {
    std::vector<std::invoke_result_t<Read&>> out;
    expect('[');
    if (!accept(']')) {
      do {
        out.push_back(read());
        if (out.size() == out.capacity()) charge(out.capacity() * sizeof(out[0]));  // a doubling: the next capacity's bytes
      } while (accept(','));
      expect(']');
    }
    charge(sizeof(out));
    return out;
  }
  std::vector<std::int64_t> int_array() {
    return array_of([this] { return integer(); });
  }
  std::vector<std::vector<std::int64_t>> int_arrays() {
    return array_of([this] { return int_array(); });
  }
  /// Skips any value, nested at most max_iopddl_nesting levels deep.
  void skip(std::size_t depth = 0) {
    const char c = peek();
    tick();
    if ((c == '{' || c == '[') && depth >= max_iopddl_nesting) fail("a value nested deeper than " + std::to_string(max_iopddl_nesting) + " levels");
    if (c == '{') {
      ++pos_;
      if (accept('}')) return;
      do {
        string();
        expect(':');
        skip(depth + 1);
      } while (accept(','));
      expect('}');
    } else if (c == '[') {
      ++pos_;
      if (accept(']')) return;
      do skip(depth + 1);
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
  /// Adds `bytes` to the memory counted so far; throws ctshard::error past the budget.
  void charge(std::size_t bytes) {
    bytes_ += bytes;
    if (bytes_ > max_bytes_)
      throw error("ctshard iopddl: the instance needs more than " + memory_text(max_bytes_) + " of memory to read (at byte " + std::to_string(pos_) +
                  "; --max-memory-mib)");
  }
  [[nodiscard]] std::size_t bytes() const noexcept { return bytes_; }

 private:
  void tick() {
    if (poll_.passed())
      throw time_limit_reached("ctshard iopddl: reading the instance (at byte " + std::to_string(pos_) + "): the time limit was reached");
  }
  std::string_view s_;
  std::size_t pos_ = 0;
  std::size_t bytes_ = 0, max_bytes_;
  DeadlinePoll poll_;
};

inline cost_t iopddl_cost(std::int64_t c) { return c >= iopddl_infinity ? forbidden : c; }

}  // namespace detail

/// The usage limits of per-node lifetimes: one per maximal set of live nodes (see the file
/// comment; with `all_sets`, one per distinct set); nodes with an empty interval are never live.
/// O(n log n) plus the output (IntervalSteps), which itself can be quadratic in the nodes: the
/// reader keeps the limit implicit (CostGraph::interval_limit) and the solver lists only the
/// steps it finds broken.
[[nodiscard]] inline std::vector<UsageLimit> limits_from_intervals(const std::vector<std::pair<std::int64_t, std::int64_t>>& intervals,
                                                                   std::int64_t limit, bool all_sets) {
  const IntervalSteps steps(intervals);
  const std::vector<std::uint32_t> segs = all_sets ? steps.live_segments(true) : steps.maximal_segments(true);
  std::vector<UsageLimit> out;
  out.reserve(segs.size());
  for (auto& set : steps.live_sets(segs)) out.push_back({std::move(set), limit});
  return out;
}

/// The number of distinct maximal sets of live nodes (the limits limits_from_intervals would
/// list), without listing them. O(n log n).
[[nodiscard]] inline std::size_t count_interval_limits(const std::vector<std::pair<std::int64_t, std::int64_t>>& intervals, bool all_sets) {
  const IntervalSteps steps(intervals);
  return (all_sets ? steps.live_segments(true) : steps.maximal_segments(true)).size();
}

/// Reads an IOPDDL instance from its JSON text. The usage limit becomes CostGraph::interval_limit
/// (with `intervals` and `usage`). Throws ctshard::error naming the problem: malformed JSON (the
/// byte offset), a count that does not match, a number outside the solver's range (the field and
/// the value, e.g. `nodes.costs[3][1]`), a negative usage_limit, a skipped value nested deeper
/// than max_iopddl_nesting, or more memory than `options.max_memory_bytes`; throws
/// time_limit_reached when `options.deadline` passes.
[[nodiscard]] inline IopddlInstance read_iopddl(std::string_view text, const IopddlReadOptions& options = {}) {
  detail::JsonCursor j(text, options);
  IopddlInstance inst;
  std::vector<std::vector<std::int64_t>> intervals, node_costs, usages, edge_nodes, edge_costs;
  bool has_problem = false, has_limit = false;
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
        if (j.peek() == 'n') {
          j.skip();
        } else {
          inst.usage_limit = j.integer();
          has_limit = true;
        }
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
  if (has_limit && (inst.usage_limit < 0 || inst.usage_limit > max_usage_total))
    throw error("ctshard iopddl: usage_limit " + detail::JsonCursor::integer_text(inst.usage_limit) + " is outside [0, 2^60]");
  const std::size_t n = node_costs.size();
  if (!usages.empty() && usages.size() != n)
    throw error("ctshard iopddl: " + std::to_string(usages.size()) + " usage rows for " + std::to_string(n) + " nodes");
  if (!intervals.empty() && intervals.size() != n)
    throw error("ctshard iopddl: " + std::to_string(intervals.size()) + " intervals for " + std::to_string(n) + " nodes");
  if (edge_costs.size() != edge_nodes.size())
    throw error("ctshard iopddl: " + std::to_string(edge_costs.size()) + " edge cost tables for " + std::to_string(edge_nodes.size()) + " edges");
  // a cost: forbidden at or above IOPDDL's infinity, else within the solver's exact range
  const auto cost_of = [](std::int64_t x, const auto& field) {
    if (x >= iopddl_infinity) return forbidden;
    if (x > max_exact_cost || x < -max_exact_cost)
      throw error("ctshard iopddl: " + field() + " = " + std::to_string(x) +
                  " is outside the solver's exact range [-2^56, 2^56] (costs of 10^18 and more are forbidden)");
    return static_cast<cost_t>(x);
  };
  CostGraph& g = inst.graph;
  std::size_t graph_bytes = 0;
  const auto charge = [&](std::size_t bytes) {
    graph_bytes += bytes;
    if (j.bytes() + graph_bytes > options.max_memory_bytes)
      throw error("ctshard iopddl: the instance needs more than " + memory_text(options.max_memory_bytes) + " of memory (" + std::to_string(n) +
                  " nodes, " + std::to_string(edge_nodes.size()) + " edges; --max-memory-mib)");
  };
  DeadlinePoll poll(options.deadline, 4096);
  for (std::size_t u = 0; u < n; ++u) {
    if (node_costs[u].empty()) throw error("ctshard iopddl: node " + std::to_string(u) + " has no strategy");
    poll.check("ctshard iopddl: building the cost graph");
    std::vector<cost_t> c;
    c.reserve(node_costs[u].size());
    for (std::size_t a = 0; a < node_costs[u].size(); ++a)
      c.push_back(cost_of(node_costs[u][a], [&] { return "nodes.costs[" + std::to_string(u) + "][" + std::to_string(a) + "]"; }));
    charge(sizeof(std::vector<cost_t>) + c.size() * sizeof(cost_t));  // the row's header and its costs
    g.add_node(std::move(c));
    if (!usages.empty()) {
      if (usages[u].size() != node_costs[u].size())
        throw error("ctshard iopddl: node " + std::to_string(u) + " has " + std::to_string(usages[u].size()) + " usages for " +
                    std::to_string(node_costs[u].size()) + " strategies");
      for (std::size_t a = 0; a < usages[u].size(); ++a) {
        const std::int64_t x = usages[u][a];
        if (x > max_usage_total || x < -max_usage_total)
          throw error("ctshard iopddl: nodes.usages[" + std::to_string(u) + "][" + std::to_string(a) + "] = " + detail::JsonCursor::integer_text(x) +
                      " is outside [-2^60, 2^60]");
      }
    }
  }
  for (std::size_t u = 0; u < intervals.size(); ++u) {
    const auto& iv = intervals[u];
    if (iv.size() != 2) throw error("ctshard iopddl: nodes.intervals[" + std::to_string(u) + "] is not [start, end]");
    g.intervals.emplace_back(iv[0], iv[1]);
  }
  for (std::size_t e = 0; e < edge_nodes.size(); ++e) {
    poll.check("ctshard iopddl: building the cost graph");
    if (edge_nodes[e].size() != 2) throw error("ctshard iopddl: edge " + std::to_string(e) + " is not [u, v]");
    const auto u = edge_nodes[e][0], v = edge_nodes[e][1];
    if (u < 0 || v < 0 || static_cast<std::size_t>(u) >= n || static_cast<std::size_t>(v) >= n)
      throw error("ctshard iopddl: edge " + std::to_string(e) + " names a node out of range");
    const std::size_t su = g.num_labels(static_cast<std::size_t>(u)), sv = g.num_labels(static_cast<std::size_t>(v));
    if (edge_costs[e].size() != su * sv)
      throw error("ctshard iopddl: edge " + std::to_string(e) + " has " + std::to_string(edge_costs[e].size()) + " costs for " + std::to_string(su) +
                  " x " + std::to_string(sv) + " strategies");
    const auto field = [&](std::size_t i) { return [&, i] { return "edges.costs[" + std::to_string(e) + "][" + std::to_string(i) + "]"; }; };
    if (u == v) {  // only the diagonal can be chosen
      for (std::size_t a = 0; a < su; ++a) {
        const cost_t d = cost_of(edge_costs[e][a * sv + a], field(a * sv + a));
        cost_t& c = g.unary[static_cast<std::size_t>(u)][a];
        c = add_costs(c, d);
        if (!is_forbidden(c) && (c > max_exact_cost || c < -max_exact_cost))
          throw error("ctshard iopddl: node " + std::to_string(u) + " strategy " + std::to_string(a) + ": its cost plus edges.costs[" +
                      std::to_string(e) + "] = " + std::to_string(c) + " is outside the solver's exact range [-2^56, 2^56]");
      }
      continue;
    }
    std::vector<cost_t> c;
    c.reserve(edge_costs[e].size());
    for (std::size_t i = 0; i < edge_costs[e].size(); ++i) c.push_back(cost_of(edge_costs[e][i], field(i)));
    charge(sizeof(CostEdge) + (su + sv) * sizeof(std::uint32_t) + c.size() * sizeof(cost_t));
    g.add_dense_edge(static_cast<std::uint32_t>(u), static_cast<std::uint32_t>(v), std::move(c));
    std::vector<std::int64_t>().swap(edge_costs[e]);  // the parsed row is no longer needed
  }
  if (has_limit && !usages.empty()) {
    if (g.intervals.size() != n) throw error("ctshard iopddl: a usage limit needs an interval per node");
    charge(usages.size() * sizeof(std::vector<std::int64_t>));  // the rows' headers (their elements were counted as read)
    g.usage = std::move(usages);
    g.interval_limit = inst.usage_limit;
    // one time step holds every other (every nonempty interval contains the latest start, no
    // usage negative: the other steps' sums are partial sums of that one): a plain usage limit
    // over the live nodes, as a memory budget is written (the solver's one-limit search)
    std::int64_t latest_start = std::numeric_limits<std::int64_t>::min(), earliest_end = std::numeric_limits<std::int64_t>::max();
    bool negative = false;
    UsageLimit live;
    for (std::uint32_t u = 0; u < n; ++u) {
      const auto [start, end] = g.intervals[u];
      if (start >= end) continue;
      latest_start = std::max(latest_start, start);
      earliest_end = std::min(earliest_end, end);
      live.nodes.push_back(u);
      for (const std::int64_t x : g.usage[u]) negative = negative || x < 0;
    }
    if (!live.nodes.empty() && latest_start < earliest_end && !negative) {
      live.limit = inst.usage_limit;
      g.limits.push_back(std::move(live));
      g.interval_limit.reset();
    }
  }
  g.validate_numbers();  // sums: a time step's usages, the magnitudes the solver adds
  return inst;
}

/// The usage limits an instance read by read_iopddl implies, listed (limits_from_intervals: one
/// per maximal set of live nodes, every distinct set when some usage is negative). Empty without
/// an interval limit. The output can be quadratic in the nodes.
[[nodiscard]] inline std::vector<UsageLimit> explicit_limits(const CostGraph& g) {
  if (!g.interval_limit) return {};
  bool negative = false;
  for (const auto& row : g.usage)
    for (auto x : row) negative = negative || x < 0;
  return limits_from_intervals(g.intervals, *g.interval_limit, negative);
}

/// Writes `g` in the IOPDDL JSON format (see the file comment). Throws ctshard::error when its
/// usage limits cannot be written as intervals.
[[nodiscard]] inline std::string write_iopddl(const CostGraph& g, const std::string& name) {
  g.validate();
  const bool extra = g.constant != 0;
  const std::size_t n = g.num_nodes();
  std::vector<std::pair<std::int64_t, std::int64_t>> intervals;
  std::int64_t limit = -1;
  if (g.interval_limit) {
    if (!g.limits.empty()) throw error("ctshard iopddl: a graph with an interval limit and other usage limits cannot be written");
    intervals = g.intervals;
    limit = *g.interval_limit;
  } else if (!g.limits.empty()) {
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
