// libFuzzer target: the IOPDDL reader and the solver. The first byte picks the mode:
// - even: the rest is IOPDDL JSON text, read by read_iopddl (a 64 MiB budget); an instance that
//   reads is solved (small ones checked by brute force, below);
// - odd: the rest describes a small instance byte by byte (nodes, labels, costs, usages,
//   intervals, a limit, edges), written with write_iopddl and read back, so that most inputs
//   reach the solver.
// Only ctshard::error may come out of the reader. For every instance with at most 4096
// labellings, the solver's answer is checked against enumeration: a feasible answer costs what
// CostGraph::evaluate says and keeps every time step (counted directly from the intervals); its
// lower bound never exceeds the optimum; "optimal" means the optimum and "infeasible" means
// there is none. A wrong answer aborts (a finding).
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "ctshard/solve/iopddl.hpp"
#include "ctshard/solve/solver.hpp"
#include "fuzz_common.hpp"

namespace {

using namespace ctshard::solve;

/// Reads bytes in order, 0 past the end.
struct Bytes {
  const std::uint8_t* p;
  std::size_t n, at = 0;
  std::uint8_t next() { return at < n ? p[at++] : 0; }
};

/// Every time step's usage of `x` within the limit, counted from the intervals directly.
bool keeps_steps(const CostGraph& g, const std::vector<std::uint32_t>& x) {
  if (g.interval_limit) {
    std::map<std::int64_t, std::int64_t> use;
    for (std::size_t u = 0; u < x.size(); ++u)
      for (std::int64_t t = g.intervals[u].first; t < g.intervals[u].second && t - g.intervals[u].first < 64; ++t) use[t] += g.usage[u][x[u]];
    for (const auto& [t, s] : use)
      if (s > *g.interval_limit) return false;
  }
  for (const auto& l : g.limits) {
    std::int64_t s = 0;
    for (auto u : l.nodes) s += g.usage[u][x[u]];
    if (s > l.limit) return false;
  }
  return true;
}

void check(const CostGraph& g) {
  double count = 1;
  for (std::size_t u = 0; u < g.num_nodes(); ++u) count *= static_cast<double>(g.num_labels(u));
  SolveOptions o;
  o.time_limit_s = 10;
  o.max_memory_bytes = std::size_t{256} << 20;
  SolveResult r;
  try {
    r = solve(g, o);
  } catch (const ctshard::error&) {
    return;  // out of the exact range, above the budget: refused, as documented
  }
  if (r.feasible && (g.evaluate(r.labels) != r.cost || !g.feasible(r.labels))) std::abort();
  if (r.feasible && r.lower_bound > r.cost) std::abort();
  if (count > 4096 || r.status == "time_limit") return;
  // brute force (intervals of at most 64 steps are counted directly; longer ones by the sweep)
  cost_t best = forbidden;
  std::vector<std::uint32_t> x(g.num_nodes(), 0);
  while (true) {
    const cost_t c = g.evaluate(x);
    if (!is_forbidden(c) && c < best && keeps_steps(g, x) && g.feasible(x)) best = c;
    std::size_t i = 0;
    while (i < x.size() && ++x[i] == g.num_labels(i)) x[i++] = 0;
    if (i == x.size()) break;
  }
  if (is_forbidden(best)) {
    if (r.feasible) std::abort();
    return;
  }
  if (!r.feasible && r.status == "infeasible") std::abort();
  if (r.lower_bound > best) std::abort();
  if (r.optimal && r.cost != best) std::abort();
  if (r.feasible && r.cost < best) std::abort();
}

/// A small instance from bytes: 1-6 nodes of 1-4 labels, costs 0-63 (63: forbidden), usages 0-7
/// (or -2..5), intervals within [0, 12), a limit 0-15 (or none), up to 10 edges.
std::string instance_text(Bytes& b) {
  const std::size_t n = 1 + b.next() % 6;
  const bool negative = (b.next() & 1) != 0, limit = (b.next() & 3) != 0;
  std::string iv, costs, use, en, ec;
  std::vector<std::size_t> labels(n);
  for (std::size_t u = 0; u < n; ++u) {
    labels[u] = 1 + b.next() % 4;
    const int s = b.next() % 12, len = b.next() % 6;
    iv += (u ? ",[" : "[") + std::to_string(s) + "," + std::to_string(s + len) + "]";
    costs += u ? ",[" : "[";
    use += u ? ",[" : "[";
    for (std::size_t a = 0; a < labels[u]; ++a) {
      const int c = b.next() % 64;
      costs += (a ? "," : "") + (c == 63 ? std::string("1000000000000000000") : std::to_string(c));
      use += (a ? "," : "") + std::to_string(static_cast<int>(b.next() % 8) - (negative ? 2 : 0));
    }
    costs += "]";
    use += "]";
  }
  const std::size_t m = b.next() % 11;
  for (std::size_t e = 0; e < m; ++e) {
    const std::size_t u = b.next() % n, v = b.next() % n;
    en += (e ? ",[" : "[") + std::to_string(u) + "," + std::to_string(v) + "]";
    ec += e ? ",[" : "[";
    for (std::size_t k = 0; k < labels[u] * labels[v]; ++k) {
      const int c = b.next() % 32;
      ec += (k ? "," : "") + (c == 31 ? std::string("1000000000000000000") : std::to_string(c));
    }
    ec += "]";
  }
  std::string out = "{\"problem\": {\"name\": \"fuzz\", \"nodes\": {\"intervals\": [" + iv + "], \"costs\": [" + costs + "], \"usages\": [" + use +
                    "]}, \"edges\": {\"nodes\": [" + en + "], \"costs\": [" + ec + "]}";
  if (limit) out += ", \"usage_limit\": " + std::to_string(b.next() % 16);
  return out + "}}";
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  std::string text;
  if ((data[0] & 1) == 0) {
    text.assign(ctshard::fuzz::as_text(data + 1, size - 1));
  } else {
    Bytes b{data + 1, size - 1};
    text = instance_text(b);
  }
  IopddlReadOptions ro;
  ro.max_memory_bytes = std::size_t{64} << 20;
  IopddlInstance inst;
  try {
    inst = read_iopddl(text, ro);
  } catch (const ctshard::error&) {
    return 0;
  }
  if (inst.graph.num_nodes() > 64) return 0;
  check(inst.graph);
  // written and read back: the same instance (the writer is exercised too)
  if ((data[0] & 1) != 0) {
    try {
      const IopddlInstance back = read_iopddl(write_iopddl(inst.graph, inst.name));
      if (back.graph.num_nodes() < inst.graph.num_nodes()) std::abort();
    } catch (const ctshard::error&) {
      std::abort();  // what was read must write and read back
    }
  }
  return 0;
}
