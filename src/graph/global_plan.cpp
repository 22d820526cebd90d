#include "ctshard/graph/global_plan.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstring>
#include <functional>
#include <iomanip>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <set>
#include <sstream>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>

#include "ctshard/graph/dead_end_repair.hpp"
#include "ctshard/graph/option_checks.hpp"
#include "ctshard/registry.hpp"
#include "ctshard/solve/candidates.hpp"

namespace ctshard::graph {
namespace {

using solve::cost_t;
using solve::forbidden;

/// A cost in microseconds as the graph's fixed point (ns): forbidden when infinite (DTensor's
/// impossible redistributions), else rounded and within the solver's exact range. Throws
/// ctshard::error naming `describe()` (the term, built only then) and the value otherwise (a
/// redistribution of an exabyte tensor, a compute term at a vanishing rate).
template <class Describe>
cost_t units_of(double us, const Describe& describe) {
  if (std::isinf(us) && us > 0) return forbidden;
  const double u = std::round(us * units_per_us);
  if (!std::isfinite(u) || u > static_cast<double>(solve::max_exact_cost) || u < -static_cast<double>(solve::max_exact_cost))
    throw error("ctshard plan --global: " + describe() + " of " + solve::number_text(us) +
                " us is outside the solver's exact range (|cost| <= 2^56 ns, " +
                solve::number_text(static_cast<double>(solve::max_exact_cost) / units_per_us) + " us)");
  return static_cast<cost_t>(u);
}

/// a + b for costs within the exact range (forbidden when either is): throws ctshard::error naming
/// `what` when the sum leaves the range.
cost_t add_checked(cost_t a, cost_t b, const char* what) {
  if (solve::is_forbidden(a) || solve::is_forbidden(b)) return forbidden;
  const cost_t c = a + b;  // both within 2^56: no overflow
  if (c > solve::max_exact_cost || c < -solve::max_exact_cost)
    throw error(std::string("ctshard plan --global: ") + what + " sums to " + std::to_string(c) + " ns, outside the solver's exact range (2^56 ns)");
  return c;
}

/// Distinct values of some type, numbered by first appearance; values are equal when their keys
/// (`key_of`) are.
template <class T, class KeyOf, class Hash = std::hash<std::decay_t<std::invoke_result_t<KeyOf, const T&>>>>
class Pool {
 public:
  explicit Pool(KeyOf key_of) : key_of_(key_of) {}
  std::uint32_t id(const T& value) {
    auto [it, fresh] = ids_.emplace(key_of_(value), static_cast<std::uint32_t>(values_.size()));
    if (fresh) values_.push_back(value);
    return it->second;
  }
  const T& operator[](std::uint32_t id) const { return values_[id]; }
  std::size_t size() const { return values_.size(); }

 private:
  KeyOf key_of_;
  std::unordered_map<std::decay_t<std::invoke_result_t<KeyOf, const T&>>, std::uint32_t, Hash> ids_;
  std::vector<T> values_;
};

/// A spec is its own key (Spec's ==): the builder numbers every candidate's specs, and a string
/// key per spec was a heap allocation each (4% of a 2x2x2x2 build).
const Spec& spec_key(const Spec& s) { return s; }

/// Hash of a spec's placements on its mesh dims.
struct SpecHash {
  std::size_t operator()(const Spec& s) const noexcept {
    std::uint64_t h = s.size();
    for (const Placement& p : s) {
      const std::uint64_t v = static_cast<std::uint64_t>(p.kind) | static_cast<std::uint64_t>(static_cast<std::uint8_t>(p.dim)) << 8 |
                              std::uint64_t{p.split_factor} << 16 | static_cast<std::uint64_t>(p.reduce_op) << 32;
      h = (h ^ v) * 0x9E3779B97F4A7C15ull;
      h ^= h >> 29;
    }
    return static_cast<std::size_t>(h);
  }
};

std::string meta_key(const TensorMeta& m) {
  std::string k = std::to_string(m.itemsize) + ":";
  for (std::size_t d = 0; d < m.shape.rank; ++d) k += std::to_string(m.shape[d]) + ",";
  return k;
}

/// The memo of the pair costs that depend on the uneven-input bypass (a few per graph): an
/// open-addressing table (linear probing, one allocation), 16 bytes an entry at half load, freed at
/// once. Its growth is charged to the request's memory budget. Plain pairs live in DenseCosts.
class CostMemo {
 public:
  /// The value of `key`, or nullptr.
  [[nodiscard]] const cost_t* find(std::uint64_t key) const noexcept {
    if (slots_.empty()) return nullptr;
    for (std::size_t i = slot_of(key);; i = (i + 1) & mask_) {
      if (slots_[i].value == empty) return nullptr;
      if (slots_[i].key == key) return &slots_[i].value;
    }
  }
  /// Adds `key` (absent) with `value`, growing (and charging `budget`) at half load.
  void insert(std::uint64_t key, cost_t value, solve::MemoryBudget& budget) {
    if (2 * (size_ + 1) > slots_.size()) grow(budget);
    std::size_t i = slot_of(key);
    while (slots_[i].value != empty) i = (i + 1) & mask_;
    slots_[i] = {key, value};
    ++size_;
  }

 private:
  struct Slot {
    std::uint64_t key;
    cost_t value;
  };
  static constexpr cost_t empty = std::numeric_limits<cost_t>::min();  // no cost is this low (|cost| <= 2^56 or forbidden)
  [[nodiscard]] std::size_t slot_of(std::uint64_t key) const noexcept {
    return static_cast<std::size_t>((key * 0x9E3779B97F4A7C15ull) >> 17) & mask_;
  }
  void grow(solve::MemoryBudget& budget) {
    const std::size_t n = slots_.empty() ? 1024 : 2 * slots_.size();
    budget.charge(n * sizeof(Slot), "ctshard plan --global: the memo of redistribution costs");
    std::vector<Slot> old(n, Slot{0, empty});
    old.swap(slots_);
    mask_ = n - 1;
    size_ = 0;
    for (const Slot& x : old)
      if (x.value != empty) {
        std::size_t i = slot_of(x.key);
        while (slots_[i].value != empty) i = (i + 1) & mask_;
        slots_[i] = x;
        ++size_;
      }
    budget.release(old.size() * sizeof(Slot));
  }
  std::vector<Slot> slots_;
  std::size_t mask_ = 0, size_ = 0;
};

/// The redistribution costs of each tensor meta between the specs it is read at, without the
/// uneven-input bypass: per meta, every spec seen gets a local index (by first appearance) and each
/// source spec a dense row over the local targets, filled on demand. An edge matrix then reads
/// its cells row by row from one small table. GPT-2's training step on 2x2x2 asks 17.4 M cells of
/// 41 metas (at most 1,000 specs each, 9.5 M distinct pairs, 13.9 M slots): a hash memo over
/// (meta, source, target) missed the cache on nearly every cell. Rows grow as new specs appear,
/// charged to the request's memory budget.
class DenseCosts {
 public:
  static constexpr cost_t unset = std::numeric_limits<cost_t>::min();  // no cost is this low
  /// The local index of spec id `spec` among `meta`'s, added when new.
  std::uint32_t local(std::uint32_t meta, std::uint32_t spec) {
    if (meta >= tables_.size()) tables_.resize(std::size_t{meta} + 1);
    Table& t = tables_[meta];
    if (spec >= t.local.size()) t.local.resize(std::size_t{spec} + 1, none);
    if (t.local[spec] == none) t.local[spec] = t.count++;
    return t.local[spec];
  }
  /// The slot of (local source, local target) of `meta` (both from local()): `unset` until
  /// stored. The reference stays valid until the next call.
  cost_t& slot(std::uint32_t meta, std::uint32_t src, std::uint32_t dst, solve::MemoryBudget& budget) { return row(meta, src, dst + 1, budget)[dst]; }
  /// The slots of local source `src` of `meta`, at least the first `size` local targets (a row
  /// grows to every target given so far only when it must grow: rows sized to every spec of a
  /// tensor cost gigabytes on 2x2x2x2), valid until the next call.
  cost_t* row(std::uint32_t meta, std::uint32_t src, std::size_t size, solve::MemoryBudget& budget) {
    Table& t = tables_[meta];
    if (src >= t.rows.size()) {
      const std::size_t more = (std::size_t{src} + 1 - t.rows.size()) * sizeof(std::vector<cost_t>);
      budget.charge(more, "ctshard plan --global: the table of redistribution costs");
      t.rows.resize(std::size_t{src} + 1);
      t.charged += more;
      charged_ += more;
    }
    std::vector<cost_t>& r = t.rows[src];
    if (r.size() < size) {
      const std::size_t more = (t.count - r.size()) * sizeof(cost_t);
      budget.charge(more, "ctshard plan --global: the table of redistribution costs");
      r.resize(t.count, unset);
      t.charged += more;
      charged_ += more;
    }
    return r.data();
  }
  /// Frees `meta`'s table, giving back what it was charged (later calls fill it again).
  void drop(std::uint32_t meta, solve::MemoryBudget& budget) noexcept {
    if (meta >= tables_.size()) return;
    budget.release(tables_[meta].charged);
    charged_ -= tables_[meta].charged;
    tables_[meta] = Table{};
  }
  /// Frees every table, giving back what they were charged (later calls fill them again).
  void clear(solve::MemoryBudget& budget) noexcept {
    std::vector<Table>().swap(tables_);
    budget.release(charged_);
    charged_ = 0;
  }

 private:
  static constexpr std::uint32_t none = std::numeric_limits<std::uint32_t>::max();
  struct Table {
    std::vector<std::uint32_t> local;       // spec id -> local index (none: not seen)
    std::uint32_t count = 0;                // local indices given
    std::vector<std::vector<cost_t>> rows;  // per local source: the costs to local targets
    std::size_t charged = 0;                // bytes charged to the budget for the rows
  };
  std::vector<Table> tables_;
  std::size_t charged_ = 0;  // bytes charged to the budget by row()
};

using SpecPool = Pool<Spec, const Spec& (*)(const Spec&), SpecHash>;
using MetaPool = Pool<TensorMeta, std::string (*)(const TensorMeta&)>;

struct SourceInfo {
  Spec spec;
  TensorMeta meta;
  bool known = false;
  bool placeholder = false;
  bool pinned = false;
};

struct OpInfo {
  std::string name;
  std::vector<TensorMeta> in_metas, out_metas;
  std::vector<ValueSource> inputs;
  std::optional<OpRule> rule;
  PlannedNode planned;
  /// With a rule: the call's FLOPs and bytes from the registry (OpRegistry::compute), and the
  /// bytes beyond its operands' own (0 unless its cost function says more; the compute term).
  OpCompute compute;
  double extra_bytes = 0;
};

/// A variable of the cost graph: an op node with a rule (rows of outputs + inputs) or a free
/// input (rows of one spec).
struct Var {
  bool is_op = true;
  std::size_t info = 0;  // index into ops (op) or sources_order (source)
  std::size_t nout = 1, width = 1;
  std::vector<std::uint32_t> specs;   // spec ids, candidates x width
  std::vector<std::uint64_t> bypass;  // per candidate (op): inputs that need the uneven bypass
  std::uint32_t greedy = 0;           // the greedy plan's candidate
  [[nodiscard]] std::size_t count() const { return specs.size() / width; }
  [[nodiscard]] std::uint32_t spec(std::size_t c, std::size_t operand) const { return specs[c * width + operand]; }
};

/// The StridedShard and Partial placements the producers of an op's inputs can deliver (on any
/// mesh dim, in any candidate; a fixed source delivers its own spec's). A candidate whose input
/// needs such a placement that no producer delivers is not offered (docs/global_plan.md,
/// "delivered placements"): it could only be fed by a redistribution *into* a StridedShard or
/// Partial, and offering every split factor on every tensor dim and every reduce op on every
/// operand multiplies the candidates by up to 8 per mesh dim on 3-D meshes. One exception: a
/// Partial input on a mesh dim where the row itself creates that Partial (an output Partial there
/// with some input sharded, e.g. addmm's bias taken `P(sum)` beside a contraction).
class DeliveredPlacements {
 public:
  void add(const Spec& s) {
    for (const Placement& p : s)
      if (restricted(p) && !delivers(p)) seen_.push_back(p);
  }
  /// True when every restricted input placement of one mesh dim's single-dim row (`cells`, one
  /// placement per operand, outputs first, `nout` of them) is delivered by some producer or
  /// created by the row there. A full row is admitted when each of its mesh dims is, so
  /// enumerate_candidates applies it per single-dim rule (SingleDimFilter).
  [[nodiscard]] bool admits(std::span<const Placement> cells, std::size_t nout) const {
    for (std::size_t k = nout; k < cells.size(); ++k) {
      const Placement& p = cells[k];
      if (restricted(p) && !delivers(p) && !(p.is_partial() && creates(cells, nout, p))) return false;
    }
    return true;
  }

 private:
  static bool restricted(const Placement& p) noexcept { return p.is_strided_shard() || p.is_partial(); }
  [[nodiscard]] bool delivers(const Placement& p) const { return std::find(seen_.begin(), seen_.end(), p) != seen_.end(); }
  /// The single-dim row writes `partial` while reading some input sharded there.
  static bool creates(std::span<const Placement> cells, std::size_t nout, const Placement& partial) {
    bool writes = false, reads_shard = false;
    for (std::size_t k = 0; k < cells.size(); ++k) {
      if (k < nout) writes = writes || cells[k] == partial;
      else reads_shard = reads_shard || cells[k].is_any_shard();
    }
    return writes && reads_shard;
  }
  std::vector<Placement> seen_;
};

class Builder {
 public:
  Builder(const Graph& g, const PlanOptions& o, const GlobalOptions& go, const OpRegistry& r)
      : graph_(g),
        options_(o),
        global_(go),
        registry_(r),
        specs_(&spec_key),
        metas_(&meta_key),
        budget_(memory_budget_bytes(go.max_memory_mib)),
        poll_(go.deadline, 256) {
    mesh_ = MeshTopology::build(std::span<const std::int64_t>(o.mesh.data(), o.mesh.size()), o.devices_per_host, {}, o.cost_model);
    replicate_ = specs_.id(Spec(o.mesh.size()));
  }

  /// Runs the greedy plan (plan_graph, dead ends repaired; the request's deadline applies), then
  /// builds the variables and the cost graph from it.
  void build() {
    PlanOptions timed = options_;
    timed.deadline = global_.deadline;  // the greedy plan is the first part of the request
    build(plan_graph_recorded(graph_, timed, registry_), true);
  }

  /// Builds the variables from a greedy plan and what it saw, and the cost graph when `costs`.
  void build(RecordedPlan greedy, bool costs) {
    for (SourceRecord& s : greedy.record.sources) {
      const bool pinned = options_.placements.count(s.name) != 0;
      sources_[s.name] = SourceInfo{std::move(s.spec), s.meta, s.known, s.placeholder, pinned};
      sources_order_.push_back(s.name);
    }
    for (OpRecord& op : greedy.record.ops) {
      OpInfo info;
      info.name = op.name;
      info.in_metas = std::move(op.call.tensors);
      info.out_metas = std::move(op.call.outputs);
      info.inputs = std::move(op.inputs);
      info.rule = std::move(op.rule);
      info.planned = std::move(op.planned);
      if (info.rule) {
        info.compute = registry_.compute(info.planned.op, info.in_metas, info.out_metas);
        info.extra_bytes = std::max(0.0, info.compute.bytes - op_compute::operand_bytes(info.in_metas, info.out_metas));
      }
      op_index_[info.name] = ops_.size();
      ops_.push_back(std::move(info));
    }
    greedy_ = std::move(greedy.plan);
    greedy_done_ = true;
    setup_training();
    if (costs && stop_when_greedy_optimal && greedy_is_optimal()) return;
    make_variables();
    if (training_) make_memory_table();
    if (costs) make_graph_within_budget();
  }

  /// make_graph may restrict the candidates when the full graph would not fit (global_plan; off
  /// for build_cost_graph, whose caller wants the full graph, and with every_candidate).
  bool allow_restriction = false;
  /// Set once the candidates were restricted (make_graph_within_budget).
  std::optional<RestrictedCandidates> restricted_;
  /// The full problem's lower bound when restricted: the constant plus each variable's least
  /// unary cost over its full candidates (edges, ties and gradient terms are nonnegative; the
  /// memory budget is relaxed). Cost units.
  cost_t full_bound_ = 0;

  /// How a suffix of the graph can be completed (solve_suffix).
  struct SuffixAnswer {
    enum class Status { feasible, infeasible, unknown } status = Status::unknown;
    bool is_var = false;    ///< the first node of the suffix is a variable (else its model is the fallback)
    std::vector<Spec> row;  ///< with `price_first` and a feasible answer: the first node's cheapest row
  };

  /// Whether the op nodes `first`, `first + 1`, ... have a finite labelling over the candidate rows
  /// when every earlier op node's outputs are fixed to `actual[i]` (sources at their specs, nodes
  /// outside the variables replicated, as in the cost graph): a 0 / forbidden cost graph of the
  /// suffix, solved exactly within `time_limit_s`. With `price_first`, node `first` is priced by
  /// its rows' redistribution costs from the fixed inputs and `row` is its cheapest row that
  /// leaves the rest a finite labelling.
  SuffixAnswer solve_suffix(std::size_t first, const std::vector<std::vector<Spec>>& actual, bool price_first, double time_limit_s) {
    SuffixAnswer answer;
    solve::CostGraph g;
    std::vector<int> node_of(vars_.size(), -1);
    for (std::size_t v = 0; v < vars_.size(); ++v)
      if (vars_[v].is_op && vars_[v].info >= first) node_of[v] = static_cast<int>(g.add_node(std::vector<cost_t>(vars_[v].count(), 0)));
    const auto fixed = [&](const ValueSource& s) {
      if (const auto it = op_index_.find(s.node); it != op_index_.end() && it->second < first) {
        const auto& outs = actual.at(it->second);
        return s.output < outs.size() ? specs_.id(outs[s.output]) : replicate_;
      }
      return fixed_spec(s);
    };
    const auto suffix_var = [&](const ValueSource& s) {
      const int v = var_of(s);
      return v >= 0 && node_of[static_cast<std::size_t>(v)] >= 0 ? v : -1;
    };
    const auto feasibility = [](cost_t c) { return solve::is_forbidden(c) ? forbidden : cost_t{0}; };
    bool impossible = false;
    for (std::size_t i = first; i < ops_.size() && !impossible; ++i) {
      const OpInfo& op = ops_[i];
      const auto it = op_var_.find(i);
      if (it == op_var_.end()) {  // outside the variables: the inputs are replicated
        for (const auto& in : op.inputs) {
          if (!in.known) continue;
          const std::uint32_t meta = metas_.id(in.meta);
          if (const int pv = suffix_var(in); pv >= 0) {
            const Var& p = vars_[static_cast<std::size_t>(pv)];
            auto& unary = g.unary[static_cast<std::size_t>(node_of[static_cast<std::size_t>(pv)])];
            for (std::size_t c = 0; c < p.count(); ++c)
              unary[c] = solve::add_costs(unary[c], feasibility(pair_cost(meta, p.spec(c, in.output), replicate_, UnevenInputs::reject, false)));
          } else {
            impossible = solve::is_forbidden(pair_cost(meta, fixed(in), replicate_, UnevenInputs::reject, false));
          }
        }
        continue;
      }
      const std::size_t ci = it->second;
      const Var& cv = vars_[ci];
      const UnevenInputs mode = op.rule->uneven_inputs;
      auto& unary = g.unary[static_cast<std::size_t>(node_of[ci])];
      std::map<std::size_t, std::vector<std::size_t>> groups;  // suffix producer var -> input positions
      for (std::size_t k = 0; k < op.inputs.size(); ++k) {
        if (const int pv = suffix_var(op.inputs[k]); pv >= 0) {
          groups[static_cast<std::size_t>(pv)].push_back(k);
          continue;
        }
        const std::uint32_t meta = metas_.id(op.in_metas[k]), src = fixed(op.inputs[k]);
        for (std::size_t c = 0; c < cv.count(); ++c) {
          const cost_t cost = pair_cost(meta, src, cv.spec(c, cv.nout + k), mode, (cv.bypass[c] >> k) & 1);
          unary[c] = solve::add_costs(unary[c], price_first && i == first ? cost : feasibility(cost));
        }
      }
      for (const auto& [pv, ks] : groups) {
        solve::CostEdge e = make_edge(pv, ci, ks, mode, true);
        e.u = static_cast<std::uint32_t>(node_of[pv]);
        e.v = static_cast<std::uint32_t>(node_of[ci]);
        g.add_edge(std::move(e));
      }
    }
    const auto first_var = op_var_.find(first);
    answer.is_var = first_var != op_var_.end();
    if (impossible) {
      answer.status = SuffixAnswer::Status::infeasible;
      return answer;
    }
    std::vector<std::uint32_t> labels;
    if (g.num_nodes() > 0) {
      solve::SolveOptions so;
      so.time_limit_s = std::max(0.0, time_limit_s);
      const solve::SolveResult r = solve::solve(g, so);
      if (!r.feasible) {
        answer.status = r.status == "infeasible" ? SuffixAnswer::Status::infeasible : SuffixAnswer::Status::unknown;
        return answer;
      }
      labels = r.labels;
    }
    answer.status = SuffixAnswer::Status::feasible;
    if (price_first && answer.is_var) {
      const Var& v = vars_[first_var->second];
      const std::uint32_t c = labels.at(static_cast<std::size_t>(node_of[first_var->second]));
      for (std::size_t k = 0; k < v.width; ++k) answer.row.push_back(specs_[v.spec(c, k)]);
    }
    return answer;
  }

  /// The inputs of op node `i` whose redistribution from their value under `actual` to `targets`
  /// (one spec per input) is infinite: "input 0 ('amax') P(max) -> P(sum)", joined.
  std::string infinite_inputs(std::size_t i, const std::vector<std::vector<Spec>>& actual, const std::vector<Spec>& targets) const {
    const OpInfo& op = ops_.at(i);
    std::string out;
    for (std::size_t k = 0; k < op.inputs.size() && k < targets.size(); ++k) {
      const ValueSource& in = op.inputs[k];
      if (!in.known) continue;
      Spec src = specs_[fixed_spec(in)];
      if (const auto it = op_index_.find(in.node); it != op_index_.end() && it->second < actual.size() && in.output < actual[it->second].size())
        src = actual[it->second][in.output];
      const Spec& dst = targets[k];
      if (std::isfinite(redistribute_cost(src, dst, op.in_metas.at(k), mesh_))) continue;
      out +=
          (out.empty() ? "" : ", ") + std::string("input ") + std::to_string(k) + " ('" + in.node + "') " + to_string(src) + " -> " + to_string(dst);
    }
    return out;
  }

  bool greedy_done_ = false;  ///< the greedy plan is complete (time may run out after it)

  /// The memory charged (MiB) and the budget, for messages.
  [[nodiscard]] const solve::MemoryBudget& budget() const noexcept { return budget_; }

  /// Every tensor input's placement under the greedy plan (the plan to return when time runs out
  /// before the cost graph is complete).
  std::map<std::string, Spec> greedy_inputs() const {
    std::map<std::string, Spec> out;
    for (const auto& name : sources_order_) {
      const SourceInfo& s = sources_.at(name);
      if (s.placeholder && s.known) out[name] = s.spec;
    }
    return out;
  }

  Plan greedy_;
  solve::CostGraph cg_;
  std::vector<Var> vars_;
  std::size_t greedy_rows_added_ = 0;
  /// candidate rows not offered: an input placement no producer delivers (counted before the other filters)
  std::size_t undelivered_rows_ = 0;

  std::vector<std::uint32_t> greedy_labels() const {
    std::vector<std::uint32_t> x;
    for (const auto& v : vars_) x.push_back(v.greedy);
    return x;
  }

  /// The plan of an assignment, in `plan`'s format, with the flags of the changed nodes.
  Plan plan_of(const std::vector<std::uint32_t>& labels, std::vector<bool>& changed, std::map<std::string, Spec>& inputs, double& compute_us) const {
    Plan p = greedy_;
    p.total_cost_us = 0;
    p.nodes_repaired = 0;  // the dead-end repair is the greedy plan's; a labelling is a plan of its own
    changed.assign(p.nodes.size(), false);
    compute_us = 0;
    for (std::size_t i = 0; i < ops_.size(); ++i) {
      const OpInfo& op = ops_[i];
      PlannedNode& n = p.nodes[i];
      n.cost_us = 0;
      n.repaired = false;
      n.repair.clear();
      const auto src = [&](std::size_t k) { return specs_[source_spec(op.inputs[k], labels)]; };
      if (const auto it = op_var_.find(i); it != op_var_.end()) {
        const Var& v = vars_[it->second];
        const std::uint32_t c = labels[it->second];
        n.inputs.clear();
        n.outputs.clear();
        for (std::size_t k = 0; k < v.nout; ++k) n.outputs.push_back(specs_[v.spec(c, k)]);
        for (std::size_t k = 0; k + v.nout < v.width; ++k) {
          const Spec& dst = specs_[v.spec(c, v.nout + k)];
          n.inputs.push_back(dst);
          n.cost_us += redistribute_cost(src(k), dst, op.in_metas[k], mesh_);
        }
        if (global_.free_inputs) compute_us += compute_time(i, v, c);
      } else {
        for (std::size_t k = 0; k < op.inputs.size(); ++k)
          if (op.inputs[k].known) n.cost_us += redistribute_cost(src(k), Spec(mesh_.size()), op.inputs[k].meta, mesh_);
      }
      p.total_cost_us += n.cost_us;
      changed[i] = n.inputs != greedy_.nodes[i].inputs || n.outputs != greedy_.nodes[i].outputs;
    }
    inputs.clear();
    for (const auto& name : sources_order_) {
      const SourceInfo& s = sources_.at(name);
      if (!s.placeholder || !s.known) continue;
      const auto it = source_var_.find(name);
      inputs[name] = it == source_var_.end() ? s.spec : specs_[vars_[it->second].spec(labels[it->second], 0)];
    }
    return p;
  }

  double compute_of_greedy() const {
    double t = 0;
    for (const auto& [i, vi] : op_var_) t += compute_time(i, vars_[vi], vars_[vi].greedy);
    return t;
  }

 private:
  /// The spec id of an input's source under an assignment.
  std::uint32_t source_spec(const ValueSource& s, const std::vector<std::uint32_t>& labels) const {
    if (const int v = var_of(s); v >= 0) return vars_[static_cast<std::size_t>(v)].spec(labels[static_cast<std::size_t>(v)], s.output);
    return fixed_spec(s);
  }

  /// The variable defining a value, or -1 when the value is fixed.
  int var_of(const ValueSource& s) const {
    if (const auto it = op_index_.find(s.node); it != op_index_.end()) {
      const auto v = op_var_.find(it->second);
      return v == op_var_.end() ? -1 : static_cast<int>(v->second);
    }
    if (const auto it = source_var_.find(s.node); it != source_var_.end()) return static_cast<int>(it->second);
    return -1;
  }

  /// The spec of a fixed value: a pinned or replicated source, a fallback node's output (R).
  std::uint32_t fixed_spec(const ValueSource& s) const {
    if (const auto it = sources_.find(s.node); it != sources_.end()) return specs_.id(it->second.spec);
    return replicate_;
  }

  void make_variables() {
    // free inputs
    if (global_.free_inputs) {
      for (const auto& name : sources_order_) {
        const SourceInfo& s = sources_.at(name);
        if (!s.placeholder || s.pinned || !s.known) continue;
        Var v;
        v.is_op = false;
        v.info = 0;
        std::vector<Spec> all{Spec(mesh_.size())};
        for (std::size_t d = 0; d < mesh_.size(); ++d) {
          std::vector<Spec> next;
          for (const Spec& base : all) {
            next.push_back(base);
            for (std::size_t t = 0; t < s.meta.shape.rank; ++t) {
              Spec x = base;
              x[d] = Shard(static_cast<int>(t));
              next.push_back(x);
            }
          }
          all = std::move(next);
        }
        for (const Spec& x : all)
          if (is_tensor_shardable(s.meta.shape, x, mesh_)) v.specs.push_back(specs_.id(x));
        v.greedy = 0;  // all-Replicate comes first
        source_var_[name] = vars_.size();
        vars_.push_back(std::move(v));
      }
    }
    for (std::size_t i = 0; i < ops_.size(); ++i) {
      const OpInfo& op = ops_[i];
      if (!op.rule) continue;
      global_.deadline.check("ctshard plan --global: the candidates (at node '" + op.name + "')");
      const OpRule& rule = *op.rule;
      Var v;
      v.info = i;
      v.nout = rule.rules.num_outputs();
      v.width = rule.rules.width();
      // shard kinds: plain Shard, and the strided kinds producer candidates can deliver (below)
      ShardKinds kinds;
      kinds.shard = true;
      ShardKinds greedy_kinds;
      // A view (a rule with regrouped rows) re-expresses a StridedShard input as a new compound
      // split factor; filling it with every strided kind its producers can deliver would let split
      // factors multiply along chains of views (2 .. 8192 on Qwen3-MoE, ~3600 candidates per
      // node). Views regroup plain Shard and the greedy plan's kinds only; other ops take every
      // kind their producers deliver on a shardable spec of the value.
      bool regroups = false;
      for (std::size_t r = 0; r < rule.rules.size() && !regroups; ++r) regroups = rule.rules.regroup(r) != nullptr;
      DeliveredPlacements delivered;
      for (std::size_t k = 0; k < op.inputs.size(); ++k) {
        const ValueSource& in = op.inputs[k];
        if (const int pv = var_of(in); pv >= 0) {
          const Var& p = vars_[static_cast<std::size_t>(pv)];
          std::uint32_t last = ~0u;
          for (std::size_t c = 0; c < p.count(); ++c) {
            const std::uint32_t id = p.spec(c, in.output);
            if (id == last) continue;
            last = id;
            const Spec& out = specs_[id];
            delivered.add(out);
            if (regroups || (k < op.in_metas.size() && !is_tensor_shardable(op.in_metas[k].shape, out, mesh_))) continue;
            for (const Placement& pl : out) kinds.add(pl);
          }
          for (const Placement& pl : specs_[p.spec(p.greedy, in.output)]) {
            greedy_kinds.add(pl);
            if (regroups) kinds.add(pl);
          }
        } else {
          delivered.add(specs_[fixed_spec(in)]);
          for (const Placement& pl : specs_[fixed_spec(in)]) {
            kinds.add(pl);
            greedy_kinds.add(pl);
          }
        }
      }
      solve::CandidateSet cands;
      bool enumerated = false;
      // the delivered-placements rule, per single-dim row: the rows it leaves out are never walked
      solve::SingleDimFilter delivered_only;
      if (!global_.every_candidate)
        delivered_only = [&delivered, nout = v.nout](std::span<const Placement> cells) { return delivered.admits(cells, nout); };
      for (const ShardKinds* k : {&kinds, &greedy_kinds}) {
        try {
          cands = solve::enumerate_candidates(rule.rules, mesh_, op.in_metas, *k, rule.uneven_inputs, rule.filter, std::size_t{1} << 20, &budget_,
                                              global_.deadline, delivered_only);
          enumerated = true;
          break;
        } catch (const solve::memory_limit_reached&) {
          throw;
        } catch (const error&) {}  // above the row limit: the greedy kinds, else the greedy row only
      }
      std::unordered_set<std::string> seen;
      const auto add_row = [&](std::span<const Spec> row, std::uint64_t bypass) {
        std::string key;
        std::vector<std::uint32_t> ids;
        for (const Spec& s : row) {
          ids.push_back(specs_.id(s));
          key.append(reinterpret_cast<const char*>(&ids.back()), sizeof(std::uint32_t));
        }
        if (!seen.insert(key).second) return false;
        v.specs.insert(v.specs.end(), ids.begin(), ids.end());
        v.bypass.push_back(bypass);
        return true;
      };
      undelivered_rows_ += cands.rows_single_dim_refused;
      for (std::size_t c = 0; enumerated && c < cands.size(); ++c) add_row(cands.row(c), cands.needs_bypass[c]);
      // the greedy row
      std::vector<Spec> row;
      for (const Spec& s : op.planned.outputs) row.push_back(s);
      for (const Spec& s : op.planned.inputs) row.push_back(s);
      std::string key;
      for (const Spec& s : row) {
        const std::uint32_t id = specs_.id(s);
        key.append(reinterpret_cast<const char*>(&id), sizeof(std::uint32_t));
      }
      if (!seen.count(key)) {
        std::uint64_t bypass = 0;
        for (std::size_t k = 0; k + v.nout < row.size(); ++k)
          if (!is_tensor_shardable(op.in_metas[k].shape, row[v.nout + k], mesh_)) bypass |= std::uint64_t{1} << k;
        add_row(row, bypass);
        ++greedy_rows_added_;
      }
      // locate the greedy row
      for (std::size_t c = 0; c < v.count(); ++c) {
        bool same = true;
        for (std::size_t k = 0; k < v.width && same; ++k) same = specs_[v.spec(c, k)] == row[k];
        if (same) {
          v.greedy = static_cast<std::uint32_t>(c);
          break;
        }
      }
      budget_.release(cands.charged);
      budget_.charge(v.specs.size() * sizeof(std::uint32_t) + v.bypass.size() * sizeof(std::uint64_t),
                     "ctshard plan --global: the candidates of node '" + op.name + "'");
      op_var_[i] = vars_.size();
      vars_.push_back(std::move(v));
    }
  }

  /// Cost (ns, fixed point) of feeding `src` to an input whose strategy needs `dst`; forbidden for
  /// DTensor's infinite redistributions and for a target the op's uneven-input bypass would not
  /// let through from this source.
  cost_t pair_cost(std::uint32_t meta, std::uint32_t src, std::uint32_t dst, UnevenInputs mode, bool bypass) {
    if (!bypass) return plain_cost(meta, src, dst, dense_.local(cost_class(meta), src), dense_.local(cost_class(meta), dst));
    const std::uint64_t key =
        (std::uint64_t{meta} << 42) | (std::uint64_t{src} << 22) | (std::uint64_t{dst} << 2) | (static_cast<std::uint64_t>(mode) + 1);
    if (meta >= (1u << 22) || src >= (1u << 20) || dst >= (1u << 20)) throw error("ctshard plan --global: too many distinct specs or shapes");
    if (const cost_t* hit = memo_.find(key)) return *hit;
    const cost_t c = computed_cost(meta, src, dst, mode, bypass);
    memo_.insert(key, c, budget_);
    return c;
  }

  /// pair_cost without the bypass, given the local indices of `src` and `dst` (DenseCosts::local).
  cost_t plain_cost(std::uint32_t meta, std::uint32_t src, std::uint32_t dst, std::uint32_t local_src, std::uint32_t local_dst) {
    cost_t& c = dense_.slot(cost_class(meta), local_src, local_dst, budget_);
    if (c == DenseCosts::unset) c = computed_cost(meta, src, dst, UnevenInputs::reject, false);
    return c;
  }

  /// The key of `meta`'s table in dense_: metas whose costs without the uneven-input bypass are
  /// equal share one. Under DTensor's cost model such a cost reads the tensor's rank (which dims a
  /// spec may shard: computed_cost) and its bytes (greedy_redistribute) and nothing else of it, so
  /// tensors of one rank and size share a table (data-parallel graphs on 2x2x2x2: 23-29 % fewer
  /// costs computed on the GPT graphs, 3-4 % on llama32_1b_fw and qwen3_moe_fw); the consistent
  /// model also reads the shape (the dim it borrows), so there each meta has its own.
  std::uint32_t cost_class(std::uint32_t meta) {
    if (mesh_.cost_model != CostModel::dtensor) return meta;
    if (meta < cost_class_.size() && cost_class_[meta] != no_class) return cost_class_[meta];
    if (meta >= cost_class_.size()) cost_class_.resize(std::size_t{meta} + 1, no_class);
    const TensorMeta& m = metas_[meta];
    const double bytes = bytes_of(meta);
    std::uint64_t bits = 0;
    std::memcpy(&bits, &bytes, sizeof bits);
    const auto [it, fresh] = cost_classes_.try_emplace({m.shape.rank, bits}, static_cast<std::uint32_t>(cost_classes_.size()));
    return cost_class_[meta] = it->second;
  }
  static constexpr std::uint32_t no_class = std::numeric_limits<std::uint32_t>::max();
  std::vector<std::uint32_t> cost_class_;                                          ///< per meta id (no_class: not seen)
  std::map<std::pair<std::uint64_t, std::uint64_t>, std::uint32_t> cost_classes_;  ///< (rank, bytes of the double) -> class

  /// pair_cost computed (not memoised).
  cost_t computed_cost(std::uint32_t meta, std::uint32_t src, std::uint32_t dst, UnevenInputs mode, bool bypass) const {
    const TensorMeta& m = metas_[meta];
    const Spec& s = specs_[src];
    const Spec& d = specs_[dst];
    bool allowed = shard_rank(src) <= m.shape.rank && shard_rank(dst) <= m.shape.rank;
    if (allowed && bypass)
      allowed = mode == UnevenInputs::unchecked || (mode != UnevenInputs::reject && s == d) ||
                (mode == UnevenInputs::keep_existing_shards && keeps_existing_shards(m.shape, d, s, mesh_));
    if (!allowed) return forbidden;
    // the specs are the mesh's and shard dims the tensor has (dims_ok): DTensor's cost without the
    // checks redistribute_cost makes
    const double us = mesh_.cost_model == CostModel::dtensor ? detail::greedy_redistribute_checked(s, d, bytes_of(meta), mesh_, detail::IgnoreSteps{})
                                                             : redistribute_cost(s, d, m, mesh_);
    return units_of(us, [&] { return "a redistribution " + to_string(s) + " -> " + to_string(d); });
  }

  /// The least tensor rank spec `id` fits (1 + its largest shard dim; 0 without a shard; past any
  /// rank with a negative dim), kept per spec id: computed_cost asks it of every pair.
  std::size_t shard_rank(std::uint32_t id) const {
    if (id >= shard_rank_.size()) shard_rank_.resize(specs_.size(), unknown_rank);
    std::uint8_t& r = shard_rank_[id];
    if (r == unknown_rank) {
      r = 0;
      for (const Placement& p : specs_[id])
        if (p.is_any_shard()) r = p.dim < 0 ? std::uint8_t{254} : std::max(r, static_cast<std::uint8_t>(p.dim + 1));
    }
    return r;
  }
  static constexpr std::uint8_t unknown_rank = 255;
  mutable std::vector<std::uint8_t> shard_rank_;  ///< per spec id (unknown_rank: not computed)

  /// metas_[meta].bytes(), kept per meta id (its numel is a product over the shape).
  double bytes_of(std::uint32_t meta) const {
    if (meta >= meta_bytes_.size()) meta_bytes_.resize(metas_.size(), -1.0);
    double& b = meta_bytes_[meta];
    if (b < 0) b = metas_[meta].bytes();
    return b;
  }
  mutable std::vector<double> meta_bytes_;  ///< per meta id (-1: not computed)

  /// Per-device compute time (µs) of op `i` under candidate `c`: the registry's FLOPs for the call
  /// (OpRegistry::compute) divided among the devices that share the work (the mesh dims where
  /// some operand is not Replicate), and bytes — every operand's at its local size, plus what the
  /// call moves beyond its operands divided like the FLOPs — at the device's rates (roofline: the
  /// larger of the two).
  double compute_time(std::size_t i, const Var& v, std::size_t c) const {
    const OpInfo& op = ops_[i];
    double share = 1;
    for (std::size_t d = 0; d < mesh_.size(); ++d) {
      bool split = false;
      for (std::size_t k = 0; k < v.width && !split; ++k) split = !specs_[v.spec(c, k)][d].is_replicate();
      if (split) share *= static_cast<double>(mesh_.sizes[d]);
    }
    double bytes = 0;
    for (std::size_t k = 0; k < v.width; ++k) {
      const TensorMeta* m = k < v.nout ? (k < op.out_metas.size() ? &op.out_metas[k] : nullptr) : &op.in_metas[k - v.nout];
      if (m == nullptr) continue;
      bytes += m->bytes() / static_cast<double>(num_shards(specs_[v.spec(c, k)], mesh_.sizes));
    }
    if (op.extra_bytes > 0) bytes += op.extra_bytes / share;
    return std::max(op.compute.flops / share / (global_.device_tflops * 1e6), bytes / (global_.device_gbps * 1e3));
  }

  void make_graph() {
    std::vector<EdgeShape> shapes;  // every edge's classes first, then the matrices (the size test between)
    for (const auto& v : vars_) {
      charge_graph(sizeof(std::vector<cost_t>) + v.count() * sizeof(cost_t), "ctshard plan --global: the cost graph's unary costs");
      cg_.add_node(std::vector<cost_t>(v.count(), 0));
    }
    for (std::size_t i = 0; i < ops_.size(); ++i) {
      const OpInfo& op = ops_[i];
      global_.deadline.check("ctshard plan --global: the cost graph (at node '" + op.name + "')");
      const auto it = op_var_.find(i);
      if (it == op_var_.end()) {  // fallback: every known input is replicated
        for (const auto& in : op.inputs) {
          if (!in.known) continue;
          const std::uint32_t meta = metas_.id(in.meta);
          if (const int pv = var_of(in); pv >= 0) {
            const Var& p = vars_[static_cast<std::size_t>(pv)];
            for (std::size_t c = 0; c < p.count(); ++c)
              cg_.unary[static_cast<std::size_t>(pv)][c] =
                  add_checked(cg_.unary[static_cast<std::size_t>(pv)][c],
                              pair_cost(meta, p.spec(c, in.output), replicate_, UnevenInputs::reject, false), "a unary cost");
          } else {
            cg_.constant = add_checked(cg_.constant, pair_cost(meta, fixed_spec(in), replicate_, UnevenInputs::reject, false), "the constant cost");
          }
        }
        continue;
      }
      const std::size_t ci = it->second;
      const Var& cv = vars_[ci];
      const UnevenInputs mode = op.rule->uneven_inputs;
      std::map<std::size_t, std::vector<std::size_t>> groups;  // producer var -> input positions
      for (std::size_t k = 0; k < op.inputs.size(); ++k) {
        const ValueSource& in = op.inputs[k];
        if (const int pv = var_of(in); pv >= 0) {
          groups[static_cast<std::size_t>(pv)].push_back(k);
          continue;
        }
        const std::uint32_t meta = metas_.id(op.in_metas[k]), src = fixed_spec(in);
        for (std::size_t c = 0; c < cv.count(); ++c)
          cg_.unary[ci][c] =
              add_checked(cg_.unary[ci][c], pair_cost(meta, src, cv.spec(c, cv.nout + k), mode, (cv.bypass[c] >> k) & 1), "a unary cost");
      }
      for (const auto& [pv, ks] : groups) shapes.push_back(shape_edge(pv, ci, ks, mode, false));
      if (global_.free_inputs)
        for (std::size_t c = 0; c < cv.count(); ++c)
          cg_.unary[ci][c] = add_checked(
              cg_.unary[ci][c], units_of(compute_time(i, cv, c), [&] { return "the compute term of node '" + op.name + "'"; }), "a unary cost");
    }
    std::optional<FillPace> pace;
    if (may_restrict()) {
      const MatrixSize size = new_matrices(shapes);
      // the solver takes a graph of at most a third of the budget (its working copy needs twice
      // the graph more); three tenths leaves room for the estimate's slack
      const std::size_t more = size.bytes + later_terms_bytes();
      const bool memory = graph_charged_ + more > budget_.limit() / 10 * 3 || more > budget_.limit() - std::min(budget_.limit(), budget_.used());
      // time: the fill, then one whole solver round on the graph (a graph whose round cannot end
      // in the time left gives a worse plan than the restricted one: the greedy plan for
      // qwen3_moe_fw on 2x2x2x2 at 9 s, whose fill fitted)
      const double fill_s = static_cast<double>(size.cells) * fill_ns_per_cell * 1e-9;
      const double round_s = static_cast<double>(graph_charged_ + more) / sizeof(cost_t) * first_round_ns_per_cell * 1e-9;
      if (memory || fill_s + round_s > full_graph_time_share * global_.deadline.remaining_s())
        throw GraphTooLarge{size, memory ? RestrictedCandidates::Why::memory : RestrictedCandidates::Why::time};
      pace = FillPace{size, round_s};
    }
    fill_edges(shapes, pace);
    add_ties();
    add_gradient_terms();
    add_budget();
  }

  /// An edge before its matrix is filled (make_edge's first half): the producer's and the
  /// consumer's candidates grouped into cost classes, and the content key under which repeated
  /// blocks share one matrix.
  struct EdgeShape {
    solve::CostEdge edge;                               ///< u, v, the classes; no matrix yet
    std::vector<std::vector<std::uint32_t>> row_specs;  ///< per row class: the producer's spec ids
    std::vector<std::vector<std::uint32_t>> col_specs;  ///< per column class: (spec id, bypass bit) per input
    std::vector<std::uint32_t> meta;                    ///< per input: its meta id
    std::vector<std::size_t> ks;                        ///< the consumer's input positions
    UnevenInputs mode = UnevenInputs::reject;
    bool feasibility = false;
    std::string key;
    [[nodiscard]] std::size_t cells() const { return std::size_t{edge.rows} * edge.cols; }
  };

  /// The matrices `shapes` would fill (one per key not filled yet): cells, and bytes as
  /// fill_edge charges them.
  struct MatrixSize {
    std::size_t cells = 0, bytes = 0;
  };

  /// The time test's expectation of a fill (make_graph): the matrices to fill and the first
  /// round's estimated time after them.
  struct FillPace {
    MatrixSize size;
    double round_s = 0;
  };

  /// Fills the matrices of `shapes` in order, dropping each cost class's table of dense_ after the
  /// last new matrix that reads it (edges of a repeated block share the first block's matrices, so
  /// most tables go early: the freed rows are reused by the next tables, not asked anew of the
  /// system). With `pace` (the graph may still be restricted), once half the time left at the
  /// start is spent, after each new matrix, the fill's own rate predicts the rest, and with the
  /// first round's estimate: when they would pass the time left, the graph is abandoned
  /// (GraphTooLarge) while the restriction still has time. A safety net for a fill much slower
  /// than the estimate (a loaded machine: llama32_1b_fw on 2x2x2x2 ended with the greedy plan at
  /// 9.4 s; a sanitizer build), not an early guess: the first matrices of a graph of repeated
  /// blocks price most of its pairs, and a rate taken after an eighth of the cells was 2-2.5x the
  /// whole fill's (gpt_megatron_l1_tp2_r0, whose full graph is proven in 5 s, was abandoned).
  void fill_edges(std::vector<EdgeShape>& shapes, const std::optional<FillPace>& pace) {
    const std::vector<char> fresh = fresh_shapes(shapes);
    std::vector<std::size_t> readers;  // per cost class: the new matrices left to fill that read it
    const auto classes_of = [&](const EdgeShape& e) {
      std::vector<std::uint32_t> out;
      for (const std::uint32_t m : e.meta) out.push_back(cost_class(m));
      std::sort(out.begin(), out.end());
      out.erase(std::unique(out.begin(), out.end()), out.end());
      return out;
    };
    for (std::size_t i = 0; i < shapes.size(); ++i) {
      if (!fresh[i]) continue;
      for (const std::uint32_t c : classes_of(shapes[i])) {
        if (c >= readers.size()) readers.resize(std::size_t{c} + 1, 0);
        ++readers[c];
      }
    }
    const auto start = std::chrono::steady_clock::now();
    const double time_at_start = global_.deadline.remaining_s();
    std::size_t filled = 0;  // cells of the new matrices so far
    for (std::size_t i = 0; i < shapes.size(); ++i) {
      const std::vector<std::uint32_t> classes = fresh[i] ? classes_of(shapes[i]) : std::vector<std::uint32_t>{};
      const std::size_t cells = fresh[i] ? shapes[i].cells() : 0;
      cg_.add_edge(fill_edge(std::move(shapes[i])));
      for (const std::uint32_t c : classes)
        if (--readers[c] == 0) dense_.drop(c, budget_);
      filled += cells;
      if (!pace || cells == 0 || filled >= pace->size.cells) continue;
      const double spent = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (2 * spent < time_at_start) continue;
      const double left_s = spent / static_cast<double>(filled) * static_cast<double>(pace->size.cells - filled) + pace->round_s;
      if (left_s > global_.deadline.remaining_s()) throw GraphTooLarge{pace->size, RestrictedCandidates::Why::time};
    }
  }

  /// The size of the new matrices of `shapes` (MatrixSize).
  MatrixSize new_matrices(const std::vector<EdgeShape>& shapes) const {
    MatrixSize out;
    const std::vector<char> fresh = fresh_shapes(shapes);
    for (std::size_t i = 0; i < shapes.size(); ++i) {
      if (!fresh[i]) continue;
      out.cells += shapes[i].cells();
      out.bytes += shapes[i].cells() * sizeof(cost_t) + shapes[i].key.size() + 64;
    }
    return out;
  }

  /// Per shape of `shapes`: whether fill_edge fills a new matrix for it (the first of its key, and
  /// no matrix of that key filled before) rather than sharing one.
  std::vector<char> fresh_shapes(const std::vector<EdgeShape>& shapes) const {
    std::vector<char> fresh(shapes.size(), 0);
    std::unordered_set<std::string_view> keys;
    for (std::size_t i = 0; i < shapes.size(); ++i) fresh[i] = matrices_.count(shapes[i].key) == 0 && keys.insert(shapes[i].key).second;
    return fresh;
  }

  /// Fill cost of one matrix cell, for the time test of the restriction policy (measured 33-35 ns
  /// on llama32_1b_fw and qwen3_moe_fw on 2x2x2x2; the lower end, so a graph that fits is not cut).
  static constexpr double fill_ns_per_cell = 33;
  /// The first solver round on the whole graph per cell of it, for the same test: its working copy
  /// (solve::round_setup_ns_per_cell) and its reductions, up to a bound and a plan (measured 21-26
  /// ns on the same graphs).
  static constexpr double first_round_ns_per_cell = 25;
  /// The share of the time left that the fill and the first round may take: both vary with the
  /// machine's load, and a full graph that misses ends with a worse plan than the restriction's
  /// (qwen3_moe_fw on 2x2x2x2 at 10 s, estimated at 99 % of the time left, ended with the
  /// greedy plan while a compile ran on the other core).
  static constexpr double full_graph_time_share = 0.9;

  /// Thrown by make_graph (before any matrix is filled) when the policy restricts.
  struct GraphTooLarge {
    MatrixSize size;
    RestrictedCandidates::Why why = RestrictedCandidates::Why::memory;
  };

  /// Another mesh dim can still be tied (make_graph's size test applies).
  [[nodiscard]] bool may_restrict() const {
    return allow_restriction && !global_.every_candidate && (restricted_ ? restricted_->tied_mesh_dims : 1) < mesh_.size();
  }

  /// Charges the cost graph's memory, counted in graph_charged_ so an abandoned graph gives it back.
  void charge_graph(std::size_t bytes, std::string_view what) {
    budget_.charge(bytes, what);
    graph_charged_ += bytes;
  }
  std::size_t graph_charged_ = 0;

  /// make_graph, and when the graph would take more than three tenths of the memory budget (the
  /// solver takes at most a third) or its matrices longer to fill than the time left
  /// (GraphTooLarge), the candidates restricted to ones whose placements agree on one more mesh
  /// dim (tie_mesh_dims) and the graph made again.
  void make_graph_within_budget() {
    for (;;) {
      graph_charged_ = 0;
      try {
        make_graph();
        // every matrix is filled: the tables go before the solver's working copy is made (qwen3_moe_fw
        // on 2x2x2x2: 1.8 GB); a later pair cost (the plan's repair) fills them again
        dense_.clear(budget_);
        for (DenseCosts& d : bypass_dense_) d.clear(budget_);
        return;
      } catch (const GraphTooLarge& big) {
        if (!restricted_) {
          RestrictedCandidates r;
          r.why = big.why;
          r.full_cells = big.size.cells;
          r.full_bytes = big.size.bytes;
          r.tied_mesh_dims = 1;
          for (const Var& v : vars_) r.full_candidates += v.count();
          restricted_ = r;
          // the constant plus each node's least unary cost (0 when a node has none finite); the
          // edges filled before a slow fill was abandoned are left out, so the bound does not
          // depend on the timing
          solve::CostGraph unaries;
          unaries.constant = cg_.constant;
          unaries.unary = cg_.unary;
          const cost_t bound = solve::trivial_bound(unaries);
          full_bound_ = solve::is_forbidden(bound) ? 0 : bound;
        }
        cg_ = solve::CostGraph{};
        matrices_.clear();  // (filled before the fill was abandoned; charged to the graph)
        budget_.release(graph_charged_);
        tie_mesh_dims(++restricted_->tied_mesh_dims);
        if (training_) make_memory_table();
      }
    }
  }

  /// The bytes add_ties, add_gradient_terms and add_budget will add to the graph (CostGraph::
  /// memory_bytes): their dense edges (two variables) and the usage table.
  [[nodiscard]] std::size_t later_terms_bytes() const {
    std::size_t bytes = 0;
    const auto dense = [&](int a, int b) {
      if (a < 0 || b < 0 || a == b) return;
      const std::size_t ra = vars_[static_cast<std::size_t>(a)].count(), rb = vars_[static_cast<std::size_t>(b)].count();
      bytes += sizeof(solve::CostEdge) + ra * rb * sizeof(cost_t) + (ra + rb) * sizeof(std::uint32_t);
    };
    for (const auto& [a, b] : global_.ties) {
      const int va = var_of(value_named(a));  // (a first: add_ties names a bad `a` before `b`)
      dense(va, var_of(value_named(b)));
    }
    for (const auto& [g, p] : grads_) {
      ValueSource ps;
      ps.node = p;
      dense(var_of(g), var_of(ps));
    }
    if (global_.free_inputs && global_.memory_budget_gib > 0)
      for (const Var& v : vars_) bytes += sizeof(std::vector<std::int64_t>) + v.count() * sizeof(std::int64_t);
    return bytes;
  }

  /// Keeps, of every variable, the candidates whose specs (every operand) carry one placement on
  /// the `n` innermost mesh dims, and its greedy row. The innermost: the dims within a host, whose
  /// links cost alike (tying the outermost pair, across hosts, gave Llama on 2x2x2x2 a plan 12 %
  /// dearer in the same 30 s).
  void tie_mesh_dims(std::size_t n) {
    const auto tied = [&](std::uint32_t id) {
      const Spec& x = specs_[id];
      const std::size_t first = x.size() - std::min(n, x.size());
      for (std::size_t d = first + 1; d < x.size(); ++d)
        if (!(x[d] == x[first])) return false;
      return true;
    };
    for (Var& v : vars_) {
      std::vector<std::uint32_t> specs;
      std::vector<std::uint64_t> bypass;
      std::uint32_t greedy = 0;
      for (std::size_t c = 0; c < v.count(); ++c) {
        bool all_tied = true;
        for (std::size_t k = 0; k < v.width && all_tied; ++k) all_tied = tied(v.spec(c, k));
        if (c != v.greedy && !all_tied) continue;
        if (c == v.greedy) greedy = static_cast<std::uint32_t>(specs.size() / v.width);
        specs.insert(specs.end(), v.specs.begin() + static_cast<std::ptrdiff_t>(c * v.width),
                     v.specs.begin() + static_cast<std::ptrdiff_t>((c + 1) * v.width));
        if (!v.bypass.empty()) bypass.push_back(v.bypass[c]);
      }
      if (v.is_op)
        budget_.release((v.specs.size() - specs.size()) * sizeof(std::uint32_t) + (v.bypass.size() - bypass.size()) * sizeof(std::uint64_t));
      v.specs = std::move(specs);
      v.bypass = std::move(bypass);
      v.greedy = greedy;
    }
  }

  /// The edge between producer variable `pv` and consumer `ci` for the consumer's inputs `ks`
  /// (nodes numbered as the variables); with `feasibility`, every finite cost is 0.
  solve::CostEdge make_edge(std::size_t pv, std::size_t ci, const std::vector<std::size_t>& ks, UnevenInputs mode, bool feasibility) {
    return fill_edge(shape_edge(pv, ci, ks, mode, feasibility));
  }

  /// make_edge's first half: the classes and the key (charged to the memory budget).
  EdgeShape shape_edge(std::size_t pv, std::size_t ci, const std::vector<std::size_t>& ks, UnevenInputs mode, bool feasibility) {
    const Var& p = vars_[pv];
    const Var& c = vars_[ci];
    const OpInfo& op = ops_[c.info];
    EdgeShape shape;
    shape.ks = ks;
    shape.mode = mode;
    shape.feasibility = feasibility;
    solve::CostEdge& e = shape.edge;
    e.u = static_cast<std::uint32_t>(pv);
    e.v = static_cast<std::uint32_t>(ci);
    std::unordered_map<std::string, std::uint32_t> rows, cols;
    auto& row_specs = shape.row_specs;
    auto& col_specs = shape.col_specs;
    for (std::size_t a = 0; a < p.count(); ++a) {
      std::vector<std::uint32_t> t;
      t.reserve(ks.size());
      for (auto k : ks) t.push_back(p.spec(a, op.inputs[k].output));
      const std::string key(reinterpret_cast<const char*>(t.data()), t.size() * sizeof(std::uint32_t));
      auto [it, fresh] = rows.emplace(key, static_cast<std::uint32_t>(row_specs.size()));
      if (fresh) row_specs.push_back(std::move(t));
      e.row_class.push_back(it->second);
    }
    for (std::size_t b = 0; b < c.count(); ++b) {
      std::vector<std::uint32_t> t;
      t.reserve(2 * ks.size());
      for (auto k : ks) {
        t.push_back(c.spec(b, c.nout + k));
        t.push_back(static_cast<std::uint32_t>((c.bypass[b] >> k) & 1));
      }
      const std::string key(reinterpret_cast<const char*>(t.data()), t.size() * sizeof(std::uint32_t));
      auto [it, fresh] = cols.emplace(key, static_cast<std::uint32_t>(col_specs.size()));
      if (fresh) col_specs.push_back(std::move(t));
      e.col_class.push_back(it->second);
    }
    e.rows = static_cast<std::uint32_t>(row_specs.size());
    e.cols = static_cast<std::uint32_t>(col_specs.size());
    std::vector<std::uint32_t>& meta = shape.meta;
    meta.reserve(ks.size());
    for (auto k : ks) meta.push_back(metas_.id(op.in_metas[k]));
    // repeated blocks give identical matrices: key = metas, mode, row and column spec tuples
    std::string& key = shape.key;
    key.assign(reinterpret_cast<const char*>(meta.data()), meta.size() * sizeof(std::uint32_t));
    key += static_cast<char>(mode);
    key += feasibility ? 'f' : 'c';
    for (const auto& t : row_specs) key.append(reinterpret_cast<const char*>(t.data()), t.size() * sizeof(std::uint32_t));
    key += '|';
    for (const auto& t : col_specs) key.append(reinterpret_cast<const char*>(t.data()), t.size() * sizeof(std::uint32_t));
    charge_graph((e.row_class.size() + e.col_class.size()) * sizeof(std::uint32_t) + sizeof(solve::CostEdge),
                 "ctshard plan --global: the edge " + ops_[p.info].name + " -> " + op.name);
    return shape;
  }

  /// make_edge's second half: the matrix, shared with an earlier edge of the same key or filled
  /// (charged to the memory budget before it is allocated; the deadline is polled per cell).
  solve::CostEdge fill_edge(EdgeShape shape) {
    solve::CostEdge e = std::move(shape.edge);
    const auto& row_specs = shape.row_specs;
    const auto& col_specs = shape.col_specs;
    const auto& meta = shape.meta;
    const auto& ks = shape.ks;
    const UnevenInputs mode = shape.mode;
    const bool feasibility = shape.feasibility;
    std::string& key = shape.key;
    const std::string what = "the edge " + ops_[vars_[e.u].info].name + " -> " + ops_[vars_[e.v].info].name;
    const std::string budget_what = "ctshard plan --global: " + what;
    if (const auto it = matrices_.find(key); it != matrices_.end()) {
      e.shared = it->second;
    } else {
      // charged before it is allocated: a 5-dim mesh with every candidate asked for 32,768 x
      // 32,768 entries here (8 GiB) and ran out of memory after a minute
      charge_graph(std::size_t{e.rows} * e.cols * sizeof(cost_t) + key.size() + 64,
                   budget_what + " (" + std::to_string(e.rows) + " x " + std::to_string(e.cols) + " cost classes)");
      // local indices into dense_ per input, looked up once per class rather than per cell
      std::vector<std::uint32_t> row_local(std::size_t{e.rows} * ks.size()), col_local(std::size_t{e.cols} * ks.size());
      for (std::size_t j = 0; j < ks.size(); ++j) {
        const std::uint32_t cls = cost_class(meta[j]);
        for (std::uint32_t r = 0; r < e.rows; ++r) row_local[r * ks.size() + j] = dense_.local(cls, row_specs[r][j]);
        for (std::uint32_t q = 0; q < e.cols; ++q) col_local[q * ks.size() + j] = dense_.local(cls, col_specs[q][2 * j]);
      }
      e.matrix.reserve(std::size_t{e.rows} * e.cols);
      // one input (the common case): a row of the dense tables per row class, read without lookups
      DenseCosts& through_bypass = bypass_dense_.at(static_cast<std::size_t>(mode));
      std::vector<std::uint32_t> row_bypass, col_bypass;  // local indices in through_bypass
      if (ks.size() == 1 && std::any_of(col_specs.begin(), col_specs.end(), [](const auto& t) { return t[1] != 0; })) {
        for (std::uint32_t r = 0; r < e.rows; ++r) row_bypass.push_back(through_bypass.local(meta[0], row_specs[r][0]));
        for (std::uint32_t q = 0; q < e.cols; ++q) col_bypass.push_back(col_specs[q][1] != 0 ? through_bypass.local(meta[0], col_specs[q][0]) : 0);
      }
      // the row widths this edge reads: one past its largest local target index in each table
      std::size_t plain_width = 0, bypass_width = 0;
      for (std::uint32_t q = 0; q < e.cols && ks.size() == 1; ++q) {
        if (col_specs[q][1] != 0) bypass_width = std::max<std::size_t>(bypass_width, col_bypass[q] + std::size_t{1});
        else plain_width = std::max<std::size_t>(plain_width, col_local[q] + std::size_t{1});
      }
      for (std::uint32_t r = 0; r < e.rows && ks.size() == 1; ++r) {
        if (poll_.passed()) throw solve::time_limit_reached("ctshard plan --global: " + what + ": the time limit was reached");
        cost_t* dense_row = dense_.row(cost_class(meta[0]), row_local[r], plain_width, budget_);
        cost_t* bypass_row = row_bypass.empty() ? nullptr : through_bypass.row(meta[0], row_bypass[r], bypass_width, budget_);
        const std::uint32_t src = row_specs[r][0];
        for (std::uint32_t q = 0; q < e.cols; ++q) {
          const std::uint32_t dst = col_specs[q][0];
          cost_t pair = 0;
          if (col_specs[q][1] != 0) {
            cost_t& slot = bypass_row[col_bypass[q]];
            if (slot == DenseCosts::unset) slot = computed_cost(meta[0], src, dst, mode, true);
            pair = slot;
          } else {
            cost_t& slot = dense_row[col_local[q]];
            if (slot == DenseCosts::unset) slot = computed_cost(meta[0], src, dst, UnevenInputs::reject, false);
            pair = slot;
          }
          e.matrix.push_back(feasibility && !solve::is_forbidden(pair) ? 0 : pair);
        }
      }
      for (std::uint32_t r = 0; r < e.rows && ks.size() != 1; ++r)
        for (std::uint32_t q = 0; q < e.cols; ++q) {
          if (poll_.passed()) throw solve::time_limit_reached("ctshard plan --global: " + what + ": the time limit was reached");
          cost_t total = 0;
          for (std::size_t j = 0; j < ks.size() && !solve::is_forbidden(total); ++j) {
            const std::uint32_t src = row_specs[r][j], dst = col_specs[q][2 * j];
            const cost_t pair = col_specs[q][2 * j + 1] != 0
                                    ? pair_cost(meta[j], src, dst, mode, true)
                                    : plain_cost(meta[j], src, dst, row_local[r * ks.size() + j], col_local[q * ks.size() + j]);
            total = add_checked(total, pair, "an edge cost");
          }
          e.matrix.push_back(feasibility && !solve::is_forbidden(total) ? 0 : total);
        }
      e.shared = std::make_shared<const std::vector<cost_t>>(std::move(e.matrix));
      e.matrix.clear();
      matrices_.emplace(std::move(key), e.shared);
    }
    return e;
  }

  /// The value a name refers to: (defining node, output), looking through getitem nodes.
  ValueSource value_named(const std::string& name) const {
    const Node* n = graph_.find(name);
    if (n == nullptr) throw error("ctshard plan --tie: '" + name + "' is not a node of " + graph_.source_name);
    if (n->kind == "call_function" && n->target == "getitem" && n->args.size() > 1 && n->args[0].is_node() && n->args[1].kind == ArgKind::integer) {
      ValueSource s = value_named(n->args[0].text);
      s.output = static_cast<std::size_t>(n->args[1].int_value);
      return s;
    }
    ValueSource s;
    s.node = name;
    return s;
  }

  void add_ties() {
    for (const auto& [a, b] : global_.ties) {
      const ValueSource sa = value_named(a), sb = value_named(b);
      const int va = var_of(sa), vb = var_of(sb);
      const auto specs_of = [&](int v, const ValueSource& s) {
        std::vector<std::uint32_t> out;
        if (v < 0) out.push_back(fixed_spec(s));
        else
          for (std::size_t c = 0; c < vars_[static_cast<std::size_t>(v)].count(); ++c)
            out.push_back(vars_[static_cast<std::size_t>(v)].spec(c, s.output));
        return out;
      };
      const std::vector<std::uint32_t> xa = specs_of(va, sa), xb = specs_of(vb, sb);
      if (va < 0 && vb < 0) {
        if (xa[0] != xb[0]) throw error("ctshard plan --tie " + a + "=" + b + ": both are fixed, at different placements");
        continue;
      }
      if (va == vb) {
        for (std::size_t c = 0; c < xa.size(); ++c)
          if (xa[c] != xb[c]) cg_.unary[static_cast<std::size_t>(va)][c] = forbidden;
        continue;
      }
      if (va < 0 || vb < 0) {
        const int v = va < 0 ? vb : va;
        const auto& mine = va < 0 ? xb : xa;
        const std::uint32_t fixed = va < 0 ? xa[0] : xb[0];
        for (std::size_t c = 0; c < mine.size(); ++c)
          if (mine[c] != fixed) cg_.unary[static_cast<std::size_t>(v)][c] = forbidden;
        continue;
      }
      std::vector<cost_t> m(xa.size() * xb.size());
      for (std::size_t i = 0; i < xa.size(); ++i)
        for (std::size_t j = 0; j < xb.size(); ++j) m[i * xb.size() + j] = xa[i] == xb[j] ? 0 : forbidden;
      cg_.add_dense_edge(static_cast<std::uint32_t>(va), static_cast<std::uint32_t>(vb), std::move(m));
    }
  }

  /// Bytes of the largest local shard of `meta` at `spec` (rank 0's: largest_local_shape), within
  /// the usage range; `what` names the value. The average (bytes / shards) let an uneven shape pass
  /// a budget that rank 0 breaks: Linear(17, 33) and (33, 8) on 2x2 counted 866 bytes of
  /// parameters, rank 0 holds 944.
  std::int64_t local_bytes(const TensorMeta& meta, const Spec& spec, const std::string& what) const {
    const TensorShape local = largest_local_shape(meta.shape, spec, mesh_.sizes);
    double b = static_cast<double>(meta.itemsize);
    for (std::size_t d = 0; d < local.rank; ++d) b *= static_cast<double>(local.dims[d]);
    if (!(b <= static_cast<double>(solve::max_usage_total) / 8))
      throw error("ctshard plan --global: " + what + " has " + solve::number_text(b) + " bytes per device as " + to_string(spec) +
                  ", beyond the usage range of 2^57 bytes");
    return static_cast<std::int64_t>(b);
  }

  void add_budget() {
    if (!global_.free_inputs || global_.memory_budget_gib <= 0) return;
    // memory_budget_gib <= 2^30 (check_global_options): the limit fits 64 bits
    std::int64_t limit = static_cast<std::int64_t>(std::min(global_.memory_budget_gib, max_memory_budget_gib) * 1073741824.0);
    solve::UsageLimit l;
    cg_.usage.assign(cg_.num_nodes(), {});
    for (std::size_t v = 0; v < vars_.size(); ++v) cg_.usage[v].assign(vars_[v].count(), 0);
    if (training_) {  // the training step: every category of MemoryFigures
      for (std::size_t v = 0; v < vars_.size(); ++v) {
        for (std::size_t c = 0; c < vars_[v].count(); ++c) cg_.usage[v][c] = static_cast<std::int64_t>(var_memory_[v][c].total());
        l.nodes.push_back(static_cast<std::uint32_t>(v));
      }
      fixed_usage_ = static_cast<std::int64_t>(fixed_memory_.total());
      l.limit = limit - fixed_usage_;
      push_budget_limit(std::move(l));
      return;
    }
    for (const auto& name : sources_order_) {
      const SourceInfo& s = sources_.at(name);
      if (!s.placeholder || !s.known) continue;
      const auto local = [&](const Spec& x) { return local_bytes(s.meta, x, "input '" + name + "'"); };
      if (const auto it = source_var_.find(name); it != source_var_.end()) {
        const Var& v = vars_[it->second];
        for (std::size_t c = 0; c < v.count(); ++c) cg_.usage[it->second][c] = local(specs_[v.spec(c, 0)]);
        l.nodes.push_back(static_cast<std::uint32_t>(it->second));
      } else {
        fixed_usage_ += local(s.spec);
        if (fixed_usage_ > solve::max_usage_total / 2)
          throw error("ctshard plan --global: the pinned inputs' bytes per device (at '" + name + "') are beyond the usage range of 2^60 bytes");
      }
    }
    l.limit = limit - fixed_usage_;
    push_budget_limit(std::move(l));
  }

  /// Adds the budget's usage limit `l`, its limit lowered to what its members can use together
  /// at most when it is above (such a budget cannot bind, and the solver needs the limit plus the
  /// members' largest usages within 2^60: a budget of 2^30 GiB was refused there).
  void push_budget_limit(solve::UsageLimit l) {
    std::int64_t most = 0;
    for (const auto v : l.nodes) most += *std::max_element(cg_.usage[v].begin(), cg_.usage[v].end());
    l.limit = std::min(l.limit, most);
    cg_.limits.push_back(std::move(l));
  }

  enum class GradientSource { given, detected };

  /// A gradient has its parameter's shape (both annotated: a value without a type is not
  /// checked). Throws ctshard::error naming both values and types; for pairs read from the AOT
  /// format (`detected`) the message says so and how to give them instead.
  void check_gradient_shape(const std::string& g, const std::string& p, GradientSource source) const {
    const auto type = [&](const std::string& name) -> const TensorType* {
      const Node* n = graph_.find(name);
      return n != nullptr && n->outputs.size() == 1 && n->outputs[0].known() ? &n->outputs[0] : nullptr;
    };
    const TensorType* gt = type(g);
    const TensorType* pt = type(p);
    if (gt == nullptr || pt == nullptr || (gt->shape == pt->shape && gt->dim_exprs == pt->dim_exprs)) return;
    throw error("ctshard plan --global: the gradient '" + g + "' (" + gt->to_string() + ") does not have the shape of its parameter '" + p + "' (" +
                pt->to_string() + ")" +
                (source == GradientSource::detected ? "; these pairs were read from the AOT format of " + graph_.source_name +
                                                          " (training_gradients): give them with --gradient GRAD=PARAM, or plan without the "
                                                          "training step (--no-training)"
                                                    : ""));
  }

  /// The training step's parameters, gradients and saved activations (docs/global_plan.md,
  /// "Training step"): explicit gradients, else the AOT joint format's.
  void setup_training() {
    const TrainingStep& t = global_.training;
    grads_.clear();
    std::vector<std::pair<std::string, std::string>> pairs = t.gradients;
    if (pairs.empty() && (t.enabled || (global_.free_inputs && t.detect))) pairs = training_gradients(graph_);
    if (pairs.empty()) {
      if (t.enabled)
        throw error("ctshard plan --global --training: " + graph_.source_name +
                    " names no gradient (not an AOT joint graph: inputs primals_* then tangents_*, one gradient per primal at the end of "
                    "the outputs); give the gradients explicitly");
      return;
    }
    if (!global_.free_inputs) throw error("ctshard plan --global: the training step needs free inputs (--free-inputs / free_inputs=True)");
    if (t.gradients.empty() && !t.enabled) {
      // detected, not asked for: a graph that only looks like the AOT joint format (a backward
      // graph, whose primals_* are saved values, some not tensors, and whose outputs are not one
      // gradient per primal) is planned without the training step, as --no-training would
      for (const auto& [g, p] : pairs) {
        const auto it = sources_.find(p);
        if (it == sources_.end() || !it->second.placeholder || !it->second.known || graph_.find(g) == nullptr) return;
      }
    }
    training_ = true;
    opt_states_ = optimizer_states(t.optimizer);
    for (const auto& [g, p] : pairs) {
      const auto it = sources_.find(p);
      if (it == sources_.end() || !it->second.placeholder)
        throw error("ctshard plan --global: the gradient '" + g + "' names the parameter '" + p + "', which is not an input of " +
                    graph_.source_name);
      if (!it->second.known) throw error("ctshard plan --global: the parameter '" + p + "' has no known shape");
      if (graph_.find(g) == nullptr)
        throw error("ctshard plan --global: the gradient '" + g + "' (of '" + p + "') is not a node of " + graph_.source_name);
      if (!params_.insert(p).second) throw error("ctshard plan --global: the parameter '" + p + "' has two gradients");
      if (g == p) throw error("ctshard plan --global: the parameter '" + p + "' is named as its own gradient");
      check_gradient_shape(g, p, t.gradients.empty() ? GradientSource::detected : GradientSource::given);
      grads_.emplace_back(value_named(g), p);
      grad_names_.emplace_back(g, p);
    }
    // backward = depends on a tangents_* placeholder (AOT joint graphs) or, in a graph without
    // one (a training step traced as `(params..., batch) -> (loss, grads...)`), every op node that
    // no forward output (an output that is not a gradient) depends on; saved = forward values
    // (not a parameter) that a backward node reads
    std::unordered_set<std::string> backward;
    for (const auto& name : sources_order_)
      if (sources_.at(name).placeholder && name.rfind("tangents_", 0) == 0) backward.insert(name);
    if (backward.empty()) {
      std::unordered_set<std::string> forward;
      for (const auto& o : graph_.outputs)  // (a getitem output stands for its producer)
        if (graph_.find(o) != nullptr && std::none_of(grad_names_.begin(), grad_names_.end(), [&](const auto& gp) { return gp.first == o; }))
          forward.insert(value_named(o).node);
      for (auto op = ops_.rbegin(); op != ops_.rend(); ++op)
        if (forward.count(op->name))
          for (const auto& in : op->inputs) forward.insert(in.node);
      for (const OpInfo& op : ops_)
        if (!forward.count(op.name)) backward.insert(op.name);
    }
    std::set<std::pair<std::string, std::size_t>> saved;
    for (const OpInfo& op : ops_) {
      bool bw = backward.count(op.name) != 0;
      for (const auto& in : op.inputs) bw = bw || backward.count(in.node) != 0;
      if (!bw) continue;
      backward.insert(op.name);
      for (const auto& in : op.inputs)
        if (!backward.count(in.node) && !params_.count(in.node) && in.known) saved.emplace(in.node, in.output);
    }
    for (const auto& [node, output] : saved) {
      ValueSource s;
      s.node = node;
      s.output = output;
      saved_.push_back(s);
    }
  }

  /// A value whose local size a device keeps for the step: a parameter (with its gradient and
  /// optimizer state) or an activation saved for the backward.
  struct MemoryTerm {
    ValueSource value;
    const TensorMeta* meta = nullptr;
    std::string what;  ///< for local_bytes' error
    bool parameter = false;
  };

  /// The values of the training step's memory figure, parameters first.
  std::vector<MemoryTerm> memory_terms() const {
    std::vector<MemoryTerm> terms;
    for (const auto& p : params_) {
      MemoryTerm t;
      t.value.node = p;
      t.meta = &sources_.at(p).meta;
      t.what = "parameter '" + p + "'";
      t.parameter = true;
      terms.push_back(std::move(t));
    }
    for (const ValueSource& sv : saved_) {
      MemoryTerm t;
      t.value = sv;
      if (const auto it = sources_.find(sv.node); it != sources_.end()) t.meta = &it->second.meta;
      else if (const auto jt = op_index_.find(sv.node); jt != op_index_.end() && sv.output < ops_[jt->second].out_metas.size())
        t.meta = &ops_[jt->second].out_metas[sv.output];
      if (t.meta == nullptr) continue;
      t.what = "the saved activation '" + sv.node + "'";
      terms.push_back(std::move(t));
    }
    return terms;
  }

  /// Adds a term held at `spec` to `m` (bytes per device).
  void add_memory(MemoryFigures& m, const MemoryTerm& t, const Spec& spec) const {
    const auto b = static_cast<double>(local_bytes(*t.meta, spec, t.what));
    if (!t.parameter) {
      m.activations += b;
      return;
    }
    m.parameters += b;
    m.gradients += b;
    m.optimizer += opt_states_ * b;
  }

  /// The bytes per device of each variable's labels and of the fixed values, by category.
  void make_memory_table() {
    var_memory_.assign(vars_.size(), {});
    for (std::size_t v = 0; v < vars_.size(); ++v) var_memory_[v].assign(vars_[v].count(), MemoryFigures{});
    fixed_memory_ = {};
    for (const MemoryTerm& t : memory_terms()) {
      if (const int v = var_of(t.value); v >= 0) {
        const Var& x = vars_[static_cast<std::size_t>(v)];
        for (std::size_t c = 0; c < x.count(); ++c) add_memory(var_memory_[static_cast<std::size_t>(v)][c], t, specs_[x.spec(c, t.value.output)]);
      } else {
        add_memory(fixed_memory_, t, specs_[fixed_spec(t.value)]);
      }
    }
  }

  /// Each gradient redistributed to its parameter's placement: DDP's all-reduce (a Partial
  /// gradient to a Replicate parameter), FSDP's reduce-scatter (to a sharded one).
  void add_gradient_terms() {
    for (const auto& gp : grads_) {
      const ValueSource& g = gp.first;  // (not a structured binding: Clang 14 cannot capture one)
      const std::string& p = gp.second;
      const SourceInfo& s = sources_.at(p);
      const std::uint32_t meta = metas_.id(s.meta);
      const int gv = var_of(g);
      const auto pit = source_var_.find(p);
      const int pv = pit == source_var_.end() ? -1 : static_cast<int>(pit->second);
      const std::string what = "the gradient of '" + p + "'";
      const auto grad_specs = [&] {
        std::vector<std::uint32_t> out;
        if (gv < 0) out.push_back(fixed_spec(g));
        else
          for (std::size_t c = 0; c < vars_[static_cast<std::size_t>(gv)].count(); ++c)
            out.push_back(vars_[static_cast<std::size_t>(gv)].spec(c, g.output));
        return out;
      }();
      std::vector<std::uint32_t> param_specs;
      if (pv < 0) param_specs.push_back(specs_.id(s.spec));
      else
        for (std::size_t c = 0; c < vars_[static_cast<std::size_t>(pv)].count(); ++c)
          param_specs.push_back(vars_[static_cast<std::size_t>(pv)].spec(c, 0));
      const auto cost = [&](std::uint32_t a, std::uint32_t b) { return pair_cost(meta, a, b, UnevenInputs::reject, false); };
      if (gv < 0 && pv < 0) {
        cg_.constant = add_checked(cg_.constant, cost(grad_specs[0], param_specs[0]), "the constant cost");
      } else if (gv == pv) {
        for (std::size_t c = 0; c < grad_specs.size(); ++c)
          cg_.unary[static_cast<std::size_t>(gv)][c] =
              add_checked(cg_.unary[static_cast<std::size_t>(gv)][c], cost(grad_specs[c], param_specs[c]), "a unary cost");
      } else if (gv < 0 || pv < 0) {
        const std::size_t v = static_cast<std::size_t>(gv < 0 ? pv : gv);
        const std::size_t n = gv < 0 ? param_specs.size() : grad_specs.size();
        for (std::size_t c = 0; c < n; ++c)
          cg_.unary[v][c] =
              add_checked(cg_.unary[v][c], gv < 0 ? cost(grad_specs[0], param_specs[c]) : cost(grad_specs[c], param_specs[0]), "a unary cost");
      } else {
        std::vector<cost_t> m(grad_specs.size() * param_specs.size());
        budget_.charge(m.size() * sizeof(cost_t), "ctshard plan --global: " + what);
        for (std::size_t i = 0; i < grad_specs.size(); ++i)
          for (std::size_t j = 0; j < param_specs.size(); ++j) m[i * param_specs.size() + j] = cost(grad_specs[i], param_specs[j]);
        cg_.add_dense_edge(static_cast<std::uint32_t>(gv), static_cast<std::uint32_t>(pv), std::move(m));
      }
    }
  }

 public:
  /// build() stops after the greedy plan when that plan is optimal (greedy_is_optimal): no cost
  /// graph is made. Off for build_cost_graph, whose caller wants the graph.
  bool stop_when_greedy_optimal = false;
  /// The objective is redistribution alone (no compute term, training step or tie) and the greedy
  /// plan redistributes nothing: it is optimal, since every cost is nonnegative (bound 0).
  [[nodiscard]] bool greedy_is_optimal() const { return !global_.free_inputs && !training_ && global_.ties.empty() && greedy_.total_cost_us == 0; }
  bool training_ = false;
  int opt_states_ = 0;
  std::vector<std::pair<ValueSource, std::string>> grads_;       ///< (gradient value, parameter)
  std::vector<std::pair<std::string, std::string>> grad_names_;  ///< the same, by name
  std::set<std::string> params_;
  std::vector<ValueSource> saved_;                      ///< activations saved for the backward
  std::vector<std::vector<MemoryFigures>> var_memory_;  ///< per variable, per label (bytes per device)
  MemoryFigures fixed_memory_;                          ///< of the fixed values
  std::int64_t fixed_usage_ = 0;                        ///< the budget's constant part (bytes)

  /// The spec of a value in the greedy plan (an op's output as planned, a source as placed).
  const Spec& greedy_spec(const ValueSource& s) const {
    if (const auto it = op_index_.find(s.node); it != op_index_.end() && s.output < greedy_.nodes[it->second].outputs.size())
      return greedy_.nodes[it->second].outputs[s.output];
    if (const auto it = sources_.find(s.node); it != sources_.end()) return it->second.spec;
    return specs_[replicate_];
  }

  /// The greedy plan's memory per device, read from its specs: needs no variable, so it is known
  /// when the deadline ends the build (training step).
  MemoryFigures greedy_memory() const {
    MemoryFigures m;
    for (const MemoryTerm& t : memory_terms()) add_memory(m, t, greedy_spec(t.value));
    return m;
  }

  /// The memory per device of an assignment (training step).
  MemoryFigures memory_of(const std::vector<std::uint32_t>& labels) const {
    MemoryFigures m = fixed_memory_;
    for (std::size_t v = 0; v < var_memory_.size() && v < labels.size(); ++v) {
      const MemoryFigures& x = var_memory_[v][labels[v]];
      m.parameters += x.parameters;
      m.gradients += x.gradients;
      m.optimizer += x.optimizer;
      m.activations += x.activations;
    }
    return m;
  }

  /// The gradient -> parameter redistributions of an assignment (µs).
  double gradient_reduction_of(const std::vector<std::uint32_t>& labels) const {
    return gradient_reduction_at([&](const ValueSource& x) -> const Spec& { return specs_[source_spec(x, labels)]; });
  }

  /// The same at the specs `spec_of(value)` gives (µs).
  template <class SpecOf>
  double gradient_reduction_at(SpecOf spec_of) const {
    double t = 0;
    for (const auto& [g, p] : grads_) {
      ValueSource ps;
      ps.node = p;
      t += redistribute_cost(spec_of(g), spec_of(ps), sources_.at(p).meta, mesh_);
    }
    return t;
  }

  /// The smallest usage total (bytes per device, the constant part included) of any finite
  /// labelling of `g` (its usage table), solved exactly within the deadline: every finite cost 0,
  /// each label's cost its usage.
  double min_usage_bytes(const solve::CostGraph& g, const solve::Deadline& deadline) const {
    solve::CostGraph m;
    for (std::size_t v = 0; v < g.num_nodes(); ++v) {
      std::vector<cost_t> u(g.unary[v].size());
      for (std::size_t c = 0; c < u.size(); ++c) u[c] = solve::is_forbidden(g.unary[v][c]) ? forbidden : g.usage[v][c];
      m.add_node(std::move(u));
    }
    for (const auto& e : g.edges) {
      solve::CostEdge x;
      x.u = e.u;
      x.v = e.v;
      x.row_class = e.row_class;
      x.col_class = e.col_class;
      x.rows = e.rows;
      x.cols = e.cols;
      for (const cost_t c : e.costs()) x.matrix.push_back(solve::is_forbidden(c) ? forbidden : 0);
      m.add_edge(std::move(x));
    }
    solve::SolveOptions so;
    so.time_limit_s = solve::max_time_limit_s;
    so.deadline = deadline;
    const solve::SolveResult r = solve::solve(m, so);
    if (!r.feasible) return INFINITY;
    return static_cast<double>(r.optimal ? r.cost : r.lower_bound) + static_cast<double>(fixed_usage_);
  }

  /// The input placements of a hand-written plan: "ddp" (parameters Replicate, every other input
  /// S(0) on every mesh dim), "fsdp" (parameters S(0) on every mesh dim too), "megatron_tp_fsdp"
  /// (the last mesh dim tensor-parallel: 2-D weights column- or row-parallel, other parameters
  /// Replicate there; the other mesh dims as fsdp). A shard that does not divide is Replicate.
  std::map<std::string, Spec> hand_pins(const std::string& kind) const {
    const std::size_t nd = mesh_.size();
    const std::size_t tp = nd - 1;
    const bool megatron = kind == "megatron_tp_fsdp";
    // column (S(0) on tp) or row (S(1)) for each 2-D parameter in input order: out > in is column
    // (up-projections, fused qkv, embeddings), in > out row; runs of square weights are column
    // but the last (q, k, v then out), a single square one after a column weight is row
    std::map<std::string, int> role;
    if (megatron) {
      std::vector<std::string> mats;
      for (const auto& name : sources_order_)
        if (params_.count(name) && sources_.at(name).meta.shape.rank == 2) mats.push_back(name);
      const auto dims = [&](const std::string& n) { return std::pair{sources_.at(n).meta.shape[0], sources_.at(n).meta.shape[1]}; };
      for (std::size_t i = 0; i < mats.size();) {
        const auto [o, in] = dims(mats[i]);
        if (o != in) {
          role[mats[i]] = o > in ? 0 : 1;
          ++i;
          continue;
        }
        std::size_t j = i;
        while (j < mats.size() && dims(mats[j]).first == dims(mats[j]).second) ++j;
        const bool after_column = i > 0 && role.count(mats[i - 1]) && role[mats[i - 1]] == 0 && dims(mats[i - 1]).first != dims(mats[i - 1]).second;
        for (std::size_t k = i; k < j; ++k) role[mats[k]] = (j - i == 1) ? (after_column ? 1 : 0) : (k + 1 == j ? 1 : 0);
        i = j;
      }
    }
    std::map<std::string, Spec> out;
    for (const auto& name : sources_order_) {
      const SourceInfo& s = sources_.at(name);
      if (!s.placeholder || !s.known) continue;
      Spec x(nd);
      const bool param = params_.count(name) != 0;
      const auto try_shard = [&](std::size_t d, int dim) {
        if (dim >= static_cast<int>(s.meta.shape.rank)) return;
        Spec y = x;
        y[d] = Shard(dim);
        if (is_tensor_shardable(s.meta.shape, y, mesh_)) x = y;
      };
      for (std::size_t d = 0; d < nd; ++d) {
        if (megatron && d == tp && nd > 0) {
          if (param && role.count(name)) try_shard(d, role.at(name));
          continue;
        }
        if (!param || kind != "ddp") try_shard(d, 0);
      }
      out[name] = x;
    }
    return out;
  }

 private:
  const Graph& graph_;
  const PlanOptions& options_;
  const GlobalOptions& global_;
  const OpRegistry& registry_;
  MeshTopology mesh_;
  mutable SpecPool specs_;
  MetaPool metas_;
  std::uint32_t replicate_ = 0;
  std::map<std::string, SourceInfo> sources_;
  std::vector<std::string> sources_order_;
  std::vector<OpInfo> ops_;
  std::map<std::string, std::size_t> op_index_;
  std::map<std::size_t, std::size_t> op_var_;      // op index -> variable
  std::map<std::string, std::size_t> source_var_;  // free input -> variable
  CostMemo memo_;
  /// Per UnevenInputs mode: the costs through the bypass (pair_cost with `bypass`), as dense_ holds
  /// the plain ones, for make_edge's single-input rows (the memo's hash lookups were a third of
  /// Longformer's build on 2x2x2x2).
  std::array<DenseCosts, 4> bypass_dense_;
  DenseCosts dense_;
  std::unordered_map<std::string, std::shared_ptr<const std::vector<cost_t>>> matrices_;  // edge matrices by content key
  solve::MemoryBudget budget_;
  solve::DeadlinePoll poll_;  ///< polled once per edge-matrix cell (each a memoised redistribution cost)
};

double us_of(cost_t c) { return solve::is_forbidden(c) ? INFINITY : static_cast<double>(c) / units_per_us; }

/// "(S(1)) -> P(max)": a planned node's row.
std::string row_text(const PlannedNode& n) { return "(" + specs_text(n.inputs) + ") -> " + specs_text(n.outputs); }

}  // namespace

Plan repair_dead_ends(const Graph& graph, const PlanOptions& options, const OpRegistry& registry, GreedyRecord* record, Plan first) {
  using clock = std::chrono::steady_clock;
  const auto deadline = clock::now() + std::chrono::duration<double, std::milli>(std::max(0.0, options.repair_time_limit_ms));
  const auto remaining_s = [&] { return std::max(0.0, std::chrono::duration<double>(deadline - clock::now()).count()); };
  // The candidate rows: those `plan --global --every-candidate` offers, built from the unrepaired
  // pass (every row of each op's table, filled with the shard kinds its producers deliver).
  GlobalOptions every;
  every.every_candidate = true;
  Builder b(graph, options, every, registry);
  {
    GreedyRecord seen;
    Plan unrepaired = greedy_pass(graph, options, registry, &seen, {});
    b.build(RecordedPlan{std::move(unrepaired), std::move(seen)}, false);
  }
  using Status = Builder::SuffixAnswer::Status;
  std::map<std::string, ForcedRow> forced;
  Plan pass = std::move(first);
  // `lo`: the last op node up to which the pass is known to leave a finite completion (the last
  // repaired node; -1 before the first check of the empty prefix).
  long lo = -1;
  bool start_checked = false;
  for (;;) {
    long v = -1;
    for (std::size_t i = static_cast<std::size_t>(lo + 1); i < pass.nodes.size() && v < 0; ++i)
      if (!std::isfinite(pass.nodes[i].cost_us)) v = static_cast<long>(i);
    if (v < 0) break;
    std::vector<std::vector<Spec>> actual;
    actual.reserve(pass.nodes.size());
    for (const auto& n : pass.nodes) {
      actual.emplace_back();
      for (const Spec& o : n.outputs) actual.back().push_back(o);
    }
    const PlannedNode& dead = pass.nodes[static_cast<std::size_t>(v)];
    const std::string why_dead = b.infinite_inputs(static_cast<std::size_t>(v), actual, dead.inputs);
    const std::string dead_text =
        "node '" + dead.name + "' (" + dead.op + ") has no finite row: DTensor's choice " + row_text(dead) +
        (why_dead.empty() ? std::string(" costs inf")
                          : " needs " + why_dead + ", no finite redistribution under the " + to_string(options.cost_model) + " cost model");
    const auto timeout = [&] {
      return error("ctshard plan: " + graph.source_name + ": " + dead_text + "; the search for a finite plan did not finish within " +
                   std::to_string(static_cast<long long>(options.repair_time_limit_ms)) + " ms (--repair-time-limit-ms)");
    };
    // C(k): the op nodes after k have a finite labelling given the pass's outputs up to k.
    const auto completes = [&](long k) {
      const Status st = b.solve_suffix(static_cast<std::size_t>(k + 1), actual, false, remaining_s()).status;
      if (st == Status::unknown) throw timeout();
      return st == Status::feasible;
    };
    if (!start_checked) {
      if (!completes(-1))
        throw error("ctshard plan: no finite plan for " + graph.source_name + ": " + dead_text +
                    ", and no plan over the candidate rows of plan --global --every-candidate is finite (the exact solver proves it)");
      start_checked = true;
    }
    // The repair point: j in (lo, v] with C(j - 1) true and C(j) false (C(lo) holds; C(v) fails,
    // v's choice costs inf). Usually v itself: try C(v - 1) first, then bisect.
    long good = lo, bad = v;
    const auto probe = [&](long k) {
      if (completes(k)) good = k;
      else bad = k;
    };
    if (v - 1 > good) probe(v - 1);
    while (bad - good > 1) probe(good + (bad - good) / 2);
    const auto j = static_cast<std::size_t>(bad);
    const Builder::SuffixAnswer row = b.solve_suffix(j, actual, true, remaining_s());
    if (row.status == Status::unknown) throw timeout();
    if (row.status != Status::feasible)
      throw error("ctshard plan: internal error: " + graph.source_name + ": the dead-end repair found no row for '" + pass.nodes[j].name + "'");
    ForcedRow f;
    f.fallback = !row.is_var;
    f.specs = row.row;
    const PlannedNode& n = pass.nodes[j];
    f.why = (static_cast<long>(j) == v ? "DTensor's choice " + row_text(n) + " costs inf" + (why_dead.empty() ? "" : " (" + why_dead + ")")
                                       : "DTensor's choice " + row_text(n) + " leaves '" + dead.name + "' with no finite row" +
                                             (why_dead.empty() ? "" : " (" + why_dead + ")")) +
            "; took the cheapest row after which the rest of the graph has a finite plan";
    forced[n.name] = std::move(f);
    pass = greedy_pass(graph, options, registry, nullptr, forced);
    lo = bad;
  }
  if (record != nullptr) {
    *record = GreedyRecord{};
    pass = greedy_pass(graph, options, registry, record, forced);
  }
  return pass;
}

int optimizer_states(Optimizer o) noexcept {
  switch (o) {
    case Optimizer::sgd: return 0;
    case Optimizer::sgd_momentum: return 1;
    case Optimizer::adam: return 2;
  }
  return 0;
}

Optimizer parse_optimizer(const std::string& text, std::string_view api) {
  if (text == "adam") return Optimizer::adam;
  if (text == "sgd") return Optimizer::sgd;
  if (text == "sgd_momentum") return Optimizer::sgd_momentum;
  throw error(std::string(api) + ": unknown optimizer '" + text + "' (expected adam, sgd or sgd_momentum)");
}

std::string to_string(Optimizer o) {
  switch (o) {
    case Optimizer::sgd: return "sgd";
    case Optimizer::sgd_momentum: return "sgd_momentum";
    case Optimizer::adam: return "adam";
  }
  return "adam";
}

std::vector<std::pair<std::string, std::string>> training_gradients(const Graph& graph) {
  // primals_k by k; other placeholders (a partitioned backward's saved activations)
  std::map<std::size_t, std::string> primals;
  bool tangents = false, others = false;
  for (const Node& n : graph.nodes) {
    if (n.kind != "placeholder") continue;
    std::size_t k = 0;
    if (n.name.rfind("primals_", 0) == 0 && n.name.size() > 8 &&
        std::all_of(n.name.begin() + 8, n.name.end(), [](char c) { return c >= '0' && c <= '9'; }) && n.name.size() < 8 + 10) {
      k = std::stoul(n.name.substr(8));
      if (k > 0) primals.emplace(k, n.name);
    }
    if (k > 0) continue;
    if (n.name.rfind("tangents_", 0) == 0) tangents = true;
    else others = true;
  }
  std::vector<std::pair<std::string, std::string>> out;
  if (!tangents || primals.empty()) return out;
  const std::size_t size = graph.outputs.size(), last = primals.rbegin()->first;
  // the joint graph: inputs primals_1..primals_N and tangents only, outputs the forward's then
  // one gradient per primal; else a partitioned backward: one output per forward input, in
  // order (the gradient of primals_k is output k - 1), whose inputs are the primals it saved
  const bool joint = !others && last == primals.size();
  if (size < last) return out;
  const std::size_t first = joint ? size - last : 0;
  for (const auto& [k, name] : primals)
    if (!graph.outputs[first + k - 1].empty()) out.emplace_back(graph.outputs[first + k - 1], name);
  return out;
}

solve::CostGraph build_cost_graph(const Graph& graph, const PlanOptions& unresolved, const GlobalOptions& global_in, const OpRegistry& registry) {
  GlobalOptions global = global_in;
  check_global_options(global, "ctshard plan --export-costgraph", OptionNames::cli);
  std::optional<DataParallelInputs> dp;
  const PlanOptions options = resolve_inputs(graph, unresolved, dp);
  Builder b(graph, options, global, registry);
  b.build();
  return std::move(b.cg_);
}

namespace {

/// A solve of restricted candidates as an answer to the full problem: its bound is the full
/// problem's `full_bound` (the restricted solve's own bound holds for the restriction only);
/// optimal when the plan meets it, else "restricted" (the restriction solved), "time_limit", or
/// "restricted_infeasible" (no restricted plan meets the memory budget or the ties: not a proof
/// that no plan does).
void bound_by_full_problem(solve::SolveResult& r, cost_t full_bound) {
  r.lower_bound = full_bound;
  r.optimal = r.feasible && r.cost <= full_bound;
  if (r.optimal) r.status = "optimal";
  else if (r.status == "optimal") r.status = "restricted";
  else if (r.status == "infeasible") r.status = "restricted_infeasible";  // the full problem may have a plan
}

}  // namespace

GlobalPlan global_plan(const Graph& graph, const PlanOptions& unresolved, const GlobalOptions& global_in, const OpRegistry& registry) {
  using clock = std::chrono::steady_clock;
  const auto t0 = clock::now();
  std::optional<DataParallelInputs> dp;
  const PlanOptions options = resolve_inputs(graph, unresolved, dp);  // the builder counts the data-parallel inputs as pinned
  GlobalOptions global = global_in;
  // every number checked (and the time limit clamped) here too, not only by the front ends: a
  // C++ caller's NaN budget reached the budget's integer conversion
  check_global_options(global, "ctshard plan --global", OptionNames::cli);
  // one deadline for the request: the caller's (set at start-up), else the time limit from now
  global.deadline = solve::Deadline::after(global.time_limit_ms / 1000.0).earlier(global_in.deadline);
  Builder b(graph, options, global, registry);
  GlobalPlan out;
  // the greedy plan as the answer, against the bound 0 (every redistribution and compute cost is
  // nonnegative): when the deadline passed while the cost graph was built, or when it is optimal
  enum class Why { out_of_time, greedy_optimal };
  // the training step's fields of the answer: the plan's memory and gradient reduction, and the
  // greedy plan's memory
  const auto training_figures = [&](const MemoryFigures& memory, const MemoryFigures& greedy_memory, double gradient_reduction_us) {
    out.training = true;
    out.optimizer = global.training.optimizer;
    out.gradients = b.grad_names_;
    out.memory = memory;
    out.greedy_memory = greedy_memory;
    out.gradient_reduction_us = gradient_reduction_us;
  };
  const auto greedy_only = [&](Why why) {
    out.built = why == Why::greedy_optimal;  // (no cost graph is needed then)
    out.build_ms = std::chrono::duration<double, std::milli>(clock::now() - t0).count();
    out.greedy = b.greedy_;
    out.plan = b.greedy_;
    out.changed.assign(out.plan.nodes.size(), false);
    out.inputs = b.greedy_inputs();
    out.result.status = "time_limit";
    out.result.lower_bound = 0;
    out.lower_bound_us = 0;
    // with --free-inputs the greedy plan's objective (compute included) is not known: gap 1
    out.optimality_gap = global.free_inputs || out.plan.total_cost_us > 0 ? 1.0 : 0.0;
    if (!global.free_inputs && out.plan.total_cost_us == 0) {  // nothing to redistribute: optimal all the same
      out.result.status = "optimal";
      out.result.optimal = true;
      out.result.feasible = true;  // cost 0; the labelling is the greedy plan (no cost graph holds it)
      out.result.cost = 0;
    }
    out.objective_us = out.greedy_objective_us = global.free_inputs ? NAN : out.plan.total_cost_us;
    if (b.training_) {  // read from the greedy plan's specs (no variable needed)
      const MemoryFigures m = b.greedy_memory();
      training_figures(m, m, b.gradient_reduction_at([&](const ValueSource& x) -> const Spec& { return b.greedy_spec(x); }));
    }
    out.memory_bytes = b.budget().used();
    out.restricted = b.restricted_;  // (the deadline passed while the restricted graph was built)
    return out;
  };
  b.stop_when_greedy_optimal = true;
  b.allow_restriction = true;
  try {
    b.build();
  } catch (const solve::time_limit_reached&) {
    if (!b.greedy_done_) throw;
    return greedy_only(Why::out_of_time);
  }
  if (b.greedy_is_optimal()) return greedy_only(Why::greedy_optimal);
  out.build_ms = std::chrono::duration<double, std::milli>(clock::now() - t0).count();
  out.greedy = b.greedy_;
  out.graph = std::move(b.cg_);
  out.memory_bytes = out.graph.memory_bytes();
  out.variables = b.vars_.size();
  for (const auto& v : b.vars_) {
    out.candidates += v.count();
    out.max_candidates = std::max(out.max_candidates, v.count());
  }
  out.greedy_rows_added = b.greedy_rows_added_;
  out.undelivered_rows = b.undelivered_rows_;
  solve::SolveOptions so;
  so.time_limit_s = solve::max_time_limit_s;  // the request's deadline decides
  so.deadline = global.deadline;
  so.max_memory_bytes = memory_budget_bytes(global.max_memory_mib);
  so.start = b.greedy_labels();
  so.progress = global.progress;
  so.progress_unit_scale = units_per_us;
  so.progress_unit = "µs";
  if (b.restricted_) so.progress_scope = "restricted candidates";
  out.greedy_labels = so.start;
  const auto t1 = clock::now();
  out.result = solve::solve(out.graph, so);
  out.solve_ms = std::chrono::duration<double, std::milli>(clock::now() - t1).count();
  const cost_t greedy_cost = out.graph.evaluate(so.start);
  out.greedy_objective_us = us_of(greedy_cost);
  std::vector<std::uint32_t> labels = out.result.feasible ? out.result.labels : so.start;
  out.plan = b.plan_of(labels, out.changed, out.inputs, out.compute_us);
  if (global.free_inputs) out.greedy_compute_us = b.compute_of_greedy();
  out.objective_us = out.result.feasible ? us_of(out.result.cost) : out.greedy_objective_us;
  if (b.restricted_) bound_by_full_problem(out.result, b.full_bound_);
  out.restricted = b.restricted_;
  out.lower_bound_us = us_of(out.result.lower_bound);
  out.optimality_gap = out.result.gap();
  if (b.training_) training_figures(b.memory_of(labels), b.memory_of(so.start), b.gradient_reduction_of(labels));
  if (out.result.status == "infeasible" && !out.graph.limits.empty()) out.min_memory_bytes = b.min_usage_bytes(out.graph, global.deadline);
  if (global.hand_plans) {
    if (!b.training_) throw error("ctshard plan --global --hand-plans: the hand plans need the training step (a joint graph, --training)");
    for (const char* kind : {"ddp", "fsdp", "megatron_tp_fsdp"}) {
      HandPlan h;
      h.name = kind;
      h.inputs = b.hand_pins(kind);
      for (const auto& [name, spec] : unresolved.placements) h.inputs[name] = spec;  // the caller's pins hold in every plan
      PlanOptions pinned = unresolved;
      pinned.data_parallel = false;
      pinned.placements = h.inputs;
      GlobalOptions sub = global;
      // each hand plan its own time limit: priced beside the plan, not within its deadline (the
      // plan may have used all of it)
      sub.deadline = solve::Deadline{};
      sub.time_limit_ms = global_in.time_limit_ms;
      sub.hand_plans = false;
      sub.memory_budget_gib = 0;
      sub.training.enabled = true;
      sub.training.gradients = b.grad_names_;
      const GlobalPlan p = global_plan(graph, pinned, sub, registry);
      h.step_time_us = p.objective_us;
      h.redistribution_us = p.plan.total_cost_us + p.gradient_reduction_us;
      h.memory = p.memory;
      h.status = p.result.status;
      out.hand_plans.push_back(std::move(h));
    }
  }
  return out;
}

}  // namespace ctshard::graph
