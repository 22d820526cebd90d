#include "ctshard/graph/greedy.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <functional>
#include <iomanip>
#include <memory>
#include <optional>
#include <ostream>
#include <stdexcept>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include "ctshard/graph/dead_end_repair.hpp"
#include "ctshard/registry.hpp"

namespace ctshard::graph {
namespace {

/// Current spec and meta of one output of a value produced so far.
struct Resolved {
  Spec spec;
  TensorMeta meta;
  bool known = false;   ///< meta known (annotated, sizes evaluated)
  std::string unknown;  ///< why a meta is unknown when it is not just unannotated
  std::string origin;   ///< the node defining the value (getitems looked through)
  std::size_t origin_output = 0;
};

/// Every output of a value produced so far.
struct Value {
  std::vector<Resolved> outs;
};

/// A size expression's value, or why it has none.
struct Evaluated {
  bool ok = false;
  std::int64_t value = 0;
  std::string problem;
};

__extension__ using uint128 = unsigned __int128;  // g++ and clang; __extension__ keeps -Wpedantic quiet

/// a * b mod m without overflow (m < 2^63).
std::uint64_t mul_mod(std::uint64_t a, std::uint64_t b, std::uint64_t m) { return static_cast<std::uint64_t>(static_cast<uint128>(a) * b % m); }

std::uint64_t pow_mod(std::uint64_t a, std::uint64_t e, std::uint64_t m) {
  std::uint64_t r = 1;
  for (a %= m; e > 0; e >>= 1, a = mul_mod(a, a, m))
    if ((e & 1u) != 0) r = mul_mod(r, a, m);
  return r;
}

/// Deterministic Miller-Rabin for 64-bit n (these bases decide every n < 3.3e24): O(log n) per
/// test, so a hint near 2^62 costs microseconds, not the 2^31 divisions of trial division.
bool is_prime(std::int64_t value) {
  if (value < 2) return false;
  const auto n = static_cast<std::uint64_t>(value);
  for (std::uint64_t p : {2u, 3u, 5u, 7u, 11u, 13u, 17u, 19u, 23u, 29u, 31u, 37u}) {
    if (n % p == 0) return n == p;
  }
  std::uint64_t d = n - 1;
  int s = 0;
  for (; (d & 1u) == 0; d >>= 1) ++s;
  for (std::uint64_t a : {2u, 3u, 5u, 7u, 11u, 13u, 17u, 19u, 23u, 29u, 31u, 37u}) {
    std::uint64_t x = pow_mod(a, d, n);
    if (x == 1 || x == n - 1) continue;
    bool composite = true;
    for (int r = 1; r < s && composite; ++r) {
      x = mul_mod(x, x, n);
      if (x == n - 1) composite = false;
    }
    if (composite) return false;
  }
  return true;
}

/// The smallest prime above `n` not in `taken`.
std::int64_t next_prime(std::int64_t n, const std::unordered_set<std::int64_t>& taken) {
  if (n > (std::int64_t{1} << 62)) throw std::domain_error("is too large to take a prime hint");
  for (std::int64_t p = std::max<std::int64_t>(n + 1, 2);; ++p)
    if (is_prime(p) && taken.count(p) == 0) return p;
}

class Planner {
 public:
  Planner(const Graph& g, const PlanOptions& o, const OpRegistry& r, GreedyRecord* record = nullptr,
          const std::map<std::string, ForcedRow>* forced = nullptr)
      : graph_(g), options_(o), registry_(r), record_(record), forced_(forced) {
    std::size_t n = o.mesh.size();
    mesh_ = MeshTopology::build(std::span<const std::int64_t>(o.mesh.data(), n), o.devices_per_host, {}, o.cost_model);
  }

  Plan run() {
    bind_symbols();
    check_placements();
    values_.reserve(graph_.nodes.size());
    Plan plan;
    plan.nodes.reserve(graph_.nodes.size());
    plan.source = graph_.source_name;
    plan.placements = options_.placements;
    for (const auto& name : symbol_order_) plan.symbols.push_back({name, symbol_values_.at(name), options_.symbols.count(name) != 0});
    for (const auto& node : graph_.nodes) {
      if (!node.sym_expr.empty()) {
        sym_values_[node.name] = size_of(node.sym_expr);
        sym_exprs_[node.name] = node.sym_expr;
      } else if (node.kind == "placeholder" || node.kind == "get_attr") {
        define_source(node);
      } else if (node.kind == "call_function" && node.target == "getitem") {
        define_getitem(node);
      } else if (node.kind == "call_function") {
        PlannedNode p = plan_node(node);
        plan.total_cost_us += p.cost_us;
        if (p.repaired) ++plan.nodes_repaired;
        if (p.fallback) {
          ++plan.nodes_fallback;
          ++plan.fallback_ops[p.op];
        } else {
          ++plan.nodes_with_rule;
        }
        plan.nodes.push_back(std::move(p));
      }
    }
    return plan;
  }

  /// The data-parallel inputs (data_parallel_inputs).
  DataParallelInputs data_parallel() {
    bind_symbols();
    DataParallelInputs dp;
    const auto dim0_text = [](const TensorType& t) {
      return !t.dim_exprs.empty() && t.dim_exprs[0] ? t.dim_exprs[0]->text() : std::to_string(t.shape[0]);
    };
    const auto value_of = [&](const std::string& text) {
      const Evaluated& e = size_of(text);
      if (!e.ok) throw error("ctshard plan --data-parallel: " + graph_.source_name + ": " + e.problem);
      return e.value;
    };
    if (options_.batch_size) {
      if (*options_.batch_size < 1)
        throw error("ctshard plan: --batch-size " + std::to_string(*options_.batch_size) + ": a batch size must be at least 1");
      dp.value = *options_.batch_size;
      dp.batch = std::to_string(dp.value);
    } else {
      std::map<std::string, std::size_t> counts;  // dim-0 text of the tensors of rank >= 3 -> how many
      for (const auto& node : graph_.nodes)
        for (const auto& t : node.outputs)
          if (t.known() && t.shape.size() >= 3) ++counts[dim0_text(t)];
      std::size_t best = 0;
      for (const auto& [text, count] : counts) {
        const std::int64_t v = value_of(text);
        if (count > best || (count == best && v < dp.value)) {
          best = count;
          dp.batch = text;
          dp.value = v;
        }
      }
      dp.inferred = true;
      if (best == 0) {
        dp.note = "no tensor of rank >= 3 to infer the batch size from (give --batch-size): no input placed";
        return dp;
      }
    }
    if (dp.value < options_.mesh[0]) {
      dp.note = "batch size " + dp.batch + " is below the size of mesh dim 0 (" + std::to_string(options_.mesh[0]) + "): no input placed";
      return dp;
    }
    for (const auto& node : graph_.nodes) {
      if (node.kind != "placeholder" || !node.sym_expr.empty() || node.outputs.empty()) continue;
      const TensorType& t = node.outputs[0];
      if (t.known() && !t.shape.empty() && value_of(dim0_text(t)) == dp.value) dp.inputs.push_back(node.name);
    }
    if (dp.inputs.empty()) dp.note = "no input has dim 0 of size " + dp.batch;
    return dp;
  }

 private:
  /// Checks PlanOptions::symbols against the graph and gives every unbound symbol its hint.
  void bind_symbols() {
    if (symbols_bound_) return;
    symbols_bound_ = true;
    try {
      symbol_order_ = graph_.symbols();
    } catch (const std::invalid_argument& e) {
      throw error("ctshard plan: " + graph_.source_name + ": " + e.what());
    }
    for (const auto& [name, value] : options_.symbols) {
      if (std::find(symbol_order_.begin(), symbol_order_.end(), name) == symbol_order_.end()) {
        std::string known;
        for (const auto& s : symbol_order_) known += (known.empty() ? "" : ", ") + s;
        throw error("ctshard plan: --sym names '" + name + "', which is not a symbol of " + graph_.source_name +
                    (known.empty() ? " (it has no symbolic sizes)" : " (its symbols: " + known + ")"));
      }
      if (value < 1) throw error("ctshard plan: --sym " + name + "=" + std::to_string(value) + ": a symbol's value must be a positive integer");
    }
    std::int64_t hint = first_symbol_hint - 1;
    for (const auto& name : symbol_order_) {
      if (const auto it = options_.symbols.find(name); it != options_.symbols.end()) {
        symbol_values_[name] = it->second;
      } else {
        hint = next_prime(hint, {});
        symbol_values_[name] = hint;
        hints_.insert(hint);
      }
    }
  }

  /// The value of a size expression's text under the symbol values (cached per text).
  const Evaluated& size_of(const std::string& text) {
    if (const auto it = sizes_.find(text); it != sizes_.end()) return it->second;
    try {
      return size_of(SizeExpr::parse(text));
    } catch (const std::exception& ex) {
      Evaluated r;
      r.problem = ex.what();
      return sizes_.emplace(text, std::move(r)).first->second;
    }
  }

  /// The value of a parsed size expression under the symbol values (cached per text).
  const Evaluated& size_of(const SizeExpr& e) {
    const std::string& text = e.text();
    if (const auto it = sizes_.find(text); it != sizes_.end()) return it->second;
    Evaluated r;
    try {
      r.value = e.evaluate([&](const std::string& name) { return symbol_values_.at(name); });
      const bool unbound = std::any_of(e.symbols().begin(), e.symbols().end(), [&](const std::string& n) { return options_.symbols.count(n) == 0; });
      if (unbound && !e.is_monomial()) {
        try {
          r.value = next_prime(r.value, hints_);
        } catch (const std::domain_error& ex) {
          throw std::domain_error("size expression '" + text + "' " + ex.what());
        }
      }
      r.ok = true;
    } catch (const std::exception& ex) {
      r.problem = ex.what();
    }
    return sizes_.emplace(text, std::move(r)).first->second;
  }

  /// The meta of a tensor type with its sizes evaluated; nullopt with `*problem` set when a size
  /// has no (non-negative integer) value.
  std::optional<TensorMeta> meta_of(const TensorType& t, std::string* problem = nullptr) {
    TensorMeta m;
    std::vector<std::int64_t> shape = t.shape;  // symbolic dims hold -1 until evaluated
    for (std::size_t i = 0; i < t.dim_exprs.size() && i < shape.size(); ++i) {
      if (!t.dim_exprs[i]) continue;
      const Evaluated& e = size_of(*t.dim_exprs[i]);
      std::string why = e.ok ? "size '" + t.dim_exprs[i]->text() + "' evaluates to " + std::to_string(e.value) : e.problem;
      if (!e.ok || e.value < 0) {
        if (problem != nullptr) *problem = std::move(why);
        return std::nullopt;
      }
      shape[i] = e.value;
    }
    m.shape = TensorShape(std::span<const std::int64_t>(shape));
    m.itemsize = t.known() ? t.itemsize() : 4;
    return m;
  }

  /// The graph's tensor placeholders, quoted and comma-separated (the first 40, then the count).
  [[nodiscard]] std::string tensor_input_names() const {
    std::string out;
    std::size_t count = 0;
    for (const Node& node : graph_.nodes) {
      if (node.kind != "placeholder" || !node.sym_expr.empty()) continue;
      if (++count <= 40) out += (count > 1 ? ", '" : "'") + node.name + "'";
    }
    if (count > 40) out += ", ... (" + std::to_string(count) + " in all)";
    return count == 0 ? std::string("none") : out;
  }

  void check_placements() {
    for (const auto& [name, spec] : options_.placements) {
      const Node* n = graph_.find(name);
      if (n == nullptr || n->kind != "placeholder")
        throw error("ctshard plan: --place names '" + name + "', which is not an input (placeholder) of " + graph_.source_name +
                    "; its tensor inputs: " + tensor_input_names());
      if (!n->sym_expr.empty())
        throw error("ctshard plan: --place names '" + name + "', a symbolic integer input (Sym(" + n->sym_expr + ")), not a tensor");
      if (spec.size() != mesh_.size())
        throw error("ctshard plan: --place " + name + "=" + to_string(spec) + " has " + std::to_string(spec.size()) + " placements for a " +
                    std::to_string(mesh_.size()) + "-dim mesh");
      if (!n->outputs.empty() && n->outputs[0].known())
        if (const auto meta = meta_of(n->outputs[0])) check_shard_dims(spec, meta->shape, "ctshard plan: --place " + name);
    }
  }

  Value replicated(const Node& node) {
    Value v;
    const std::size_t n = node.outputs.empty() ? 1 : node.outputs.size();
    v.outs.reserve(n);
    for (std::size_t i = 0; i < n; ++i) {
      std::string problem;
      std::optional<TensorMeta> meta;
      if (i < node.outputs.size() && node.outputs[i].known()) meta = meta_of(node.outputs[i], &problem);
      v.outs.push_back(Resolved{Spec(mesh_.size()), meta ? *meta : TensorMeta{}, meta.has_value(), std::move(problem), "", 0});
    }
    return v;
  }

  void define_source(const Node& node) {
    Value v = replicated(node);
    if (const auto it = options_.placements.find(node.name); it != options_.placements.end()) v.outs[0].spec = it->second;
    for (std::size_t k = 0; k < v.outs.size(); ++k) origins_[node.name].emplace_back(node.name, k);
    if (record_ != nullptr) record_->sources.push_back({node.name, v.outs[0].spec, v.outs[0].meta, v.outs[0].known, node.kind == "placeholder"});
    values_[node.name] = std::move(v);
  }

  void define_getitem(const Node& node) {
    Value v = replicated(node);
    if (!node.args.empty() && node.args[0].is_node() && node.args.size() > 1 && node.args[1].kind == ArgKind::integer) {
      const auto it = values_.find(node.args[0].text);
      const auto k = static_cast<std::size_t>(node.args[1].int_value);
      if (it != values_.end() && k < it->second.outs.size()) {
        v.outs[0].spec = it->second.outs[k].spec;
        if (const auto o = origins_.find(node.args[0].text); o != origins_.end() && k < o->second.size()) origins_[node.name].push_back(o->second[k]);
      }
    }
    if (origins_[node.name].empty()) origins_[node.name].emplace_back(node.name, 0);
    values_[node.name] = std::move(v);
  }

  Resolved resolve(const Arg& a) const {
    Resolved r{Spec(mesh_.size()), TensorMeta{}, false, "", "", 0};
    const auto it = values_.find(a.text);
    if (it == values_.end()) return r;
    const std::size_t k = a.index ? static_cast<std::size_t>(*a.index) : 0;
    if (k >= it->second.outs.size()) return r;
    Resolved out = it->second.outs[k];
    out.origin = a.text;
    out.origin_output = k;
    if (const auto o = origins_.find(a.text); o != origins_.end() && k < o->second.size()) std::tie(out.origin, out.origin_output) = o->second[k];
    return out;
  }

  /// `a` with every reference to a symbolic-integer node replaced by its value (an integer), or
  /// by its expression text (opaque) when it has no integer value.
  Arg substitute(const Arg& a) const {
    if (a.kind == ArgKind::list) {
      Arg out = a;
      for (auto& item : out.items) item = substitute(item);
      return out;
    }
    if (!a.is_node() || a.index) return a;
    const auto it = sym_values_.find(a.text);
    if (it == sym_values_.end()) return a;
    return it->second.ok ? Arg::make_int(it->second.value) : Arg::make_opaque(sym_exprs_.at(a.text));
  }

  /// A reference, in a higher-order op's arguments, to a get_attr node without a tensor type: a
  /// submodule (flex attention's score_mod / mask_mod), not a tensor input. Its OpArg is `other`
  /// with the submodule's name; when the graph holds the submodule's body, `integer` is 1 and
  /// `ints` lists the positions of the placeholders the body reads.
  std::optional<OpArg> submodule_reference(const Arg& a) const {
    if (!a.is_node() || a.index) return std::nullopt;
    const Node* n = graph_.find(a.text);
    if (n == nullptr || n->kind != "get_attr" || (!n->outputs.empty() && n->outputs[0].known())) return std::nullopt;
    OpArg out;
    out.kind = OpArg::Kind::other;
    out.text = n->target;
    if (const Submodule* sub = graph_.submodule(n->target); sub != nullptr && sub->unreadable.empty()) {
      out.integer = 1;
      for (std::size_t k = 0;; ++k) {
        const std::optional<bool> used = sub->graph.uses_placeholder(k);
        if (!used) break;
        if (*used) out.ints.push_back(static_cast<std::int64_t>(k));
      }
    }
    return out;
  }

  OpArg convert(const Arg& a, OpCall& call, std::vector<Resolved>& inputs, bool higher_order = false) const {
    OpArg out;
    if (higher_order)
      if (std::optional<OpArg> sub = submodule_reference(a)) return *sub;
    switch (a.kind) {
      case ArgKind::node:
        out.kind = OpArg::Kind::tensor;
        out.integer = static_cast<std::int64_t>(call.tensors.size());
        inputs.push_back(resolve(a));
        call.tensors.push_back(inputs.back().meta);
        break;
      case ArgKind::integer:
        out.kind = OpArg::Kind::integer;
        out.integer = a.int_value;
        break;
      case ArgKind::floating:
        out.kind = OpArg::Kind::floating;
        out.floating = a.float_value;
        break;
      case ArgKind::boolean:
        out.kind = OpArg::Kind::boolean;
        out.integer = a.bool_value ? 1 : 0;
        break;
      case ArgKind::none: out.kind = OpArg::Kind::none; break;
      case ArgKind::string:
        out.kind = OpArg::Kind::string;
        out.text = a.text;
        break;
      case ArgKind::list: {
        const auto all = [&](ArgKind k) {
          return std::all_of(a.items.begin(), a.items.end(),
                             [&](const Arg& item) { return item.kind == k && !(higher_order && submodule_reference(item)); });
        };
        if (all(ArgKind::integer)) {
          out.kind = OpArg::Kind::int_list;
          for (const auto& item : a.items) out.ints.push_back(item.int_value);
        } else if (all(ArgKind::node)) {
          out.kind = OpArg::Kind::tensor_list;
          for (const auto& item : a.items) out.ints.push_back(convert(item, call, inputs).integer);
        } else {
          out.kind = OpArg::Kind::list;
          for (const auto& item : a.items) out.items.push_back(convert(item, call, inputs, higher_order));
        }
        break;
      }
      case ArgKind::dict:
        out.kind = OpArg::Kind::dict;
        for (const auto& item : a.items) out.items.push_back(convert(item, call, inputs, higher_order));
        break;
      case ArgKind::opaque:
        out.kind = OpArg::Kind::other;
        out.text = a.text;
        break;
    }
    return out;
  }

  PlannedNode plan_node(const Node& node) {
    options_.deadline.check("ctshard: the greedy plan (at node '" + node.name + "')");
    PlannedNode p;
    p.name = node.name;
    p.op = node.target;
    OpCall call;
    call.op = node.target;
    std::vector<Resolved> inputs;
    const bool higher_order = node.target.starts_with("higher_order.");
    for (const auto& a : node.args) call.args.push_back(convert(substitute(a), call, inputs, higher_order));
    for (const auto& [k, a] : node.kwargs) call.kwargs.emplace_back(k, convert(substitute(a), call, inputs, higher_order));
    for (const auto& t : node.outputs) {
      std::optional<TensorMeta> meta;
      if (t.known()) meta = meta_of(t);
      call.outputs.push_back(meta ? *meta : TensorMeta{});
    }

    std::vector<Spec> current;
    current.reserve(inputs.size());
    for (const auto& in : inputs) current.push_back(in.spec);
    call.current = current;  // read only by the dtensor rule set's op-strategy rules
    call.mesh_sizes.assign(mesh_.dim_sizes().begin(), mesh_.dim_sizes().end());
    Value out = replicated(node);
    bool planned = false;
    const ForcedRow* forced = nullptr;
    if (forced_ != nullptr)
      if (const auto it = forced_->find(node.name); it != forced_->end()) forced = &it->second;
    std::optional<OpRule> used_rule;
    const OpCall* observed_call = &call;  // moves into the enumerator cache below
    if (!node.unreadable.empty()) {
      p.reason = "cannot read the arguments: " + node.unreadable;
    } else if (const RuleFactory* factory = registry_.find(node.target); factory == nullptr) {
      p.reason = "no rule";
    } else {
      try {
        infer_unknown_input(node, inputs, call);
        for (const auto& in : inputs)
          if (!in.known) throw error(in.unknown.empty() ? "an input's shape is unknown" : in.unknown);
        if (record_ != nullptr && registry_.reads_current_specs(call.op)) {
          // for the global planner, a rule that follows the current inputs built without them:
          // the rows it keeps for any input (the dtensor rule set's fixed points), which a
          // whole-graph search can use
          OpCall whole_graph = call;
          whole_graph.current.clear();
          whole_graph.mesh_sizes.clear();
          used_rule.emplace((*factory)(whole_graph));
        }
        StrategyEnumerator& e = enumerator_for(*factory, std::move(call));
        const OpCall& cached = calls_[last_call_].call;
        observed_call = &cached;
        // the rule the node's table was built from: each factory runs once per distinct call
        if (record_ != nullptr && !used_rule) used_rule = calls_[last_call_].rule;
        // A graph may use fewer outputs than an op returns (getitems of unused outputs are absent).
        if (e.num_outputs() < out.outs.size())
          throw error("rule has " + std::to_string(e.num_outputs()) + " outputs, node has " + std::to_string(out.outs.size()));
        while (out.outs.size() < e.num_outputs()) out.outs.push_back(Resolved{Spec(mesh_.size()), TensorMeta{}, false, "", "", 0});
        if (forced == nullptr) {
          const Choice choice = e.choose(cached.tensors, current, options_.algo);
          for (std::size_t i = 0; i < inputs.size(); ++i) p.inputs.push_back(e.spec_of(choice, e.num_outputs() + i));
          for (std::size_t k = 0; k < out.outs.size(); ++k) out.outs[k].spec = e.spec_of(choice, k);
          p.cost_us = choice.total_us;
        } else if (!forced->fallback) {
          if (forced->specs.size() != e.num_outputs() + inputs.size())
            throw error("ctshard plan: internal error: the repaired row of '" + node.name + "' has " + std::to_string(forced->specs.size()) +
                        " specs for " + std::to_string(e.num_outputs() + inputs.size()) + " operands");
          for (std::size_t i = 0; i < inputs.size(); ++i) {
            const Spec& target = forced->specs[e.num_outputs() + i];
            p.inputs.push_back(target);
            p.cost_us += redistribute_cost(current[i], target, cached.tensors[i], mesh_);
          }
          for (std::size_t k = 0; k < out.outs.size(); ++k) out.outs[k].spec = forced->specs[k];
        }
        planned = forced == nullptr || !forced->fallback;
      } catch (const error& ex) {
        p.reason = ex.what();
      }
    }
    if (forced != nullptr) {
      p.repaired = true;
      p.repair = forced->why;
      if (forced->fallback && p.reason.empty()) p.reason = "replicated by the dead-end repair";
    }
    if (!planned) {
      used_rule.reset();
      p.fallback = true;
      p.inputs.clear();
      p.cost_us = 0;
      for (std::size_t i = 0; i < inputs.size(); ++i) {
        p.inputs.push_back(Spec(mesh_.size()));
        if (inputs[i].known) p.cost_us += redistribute_cost(inputs[i].spec, Spec(mesh_.size()), inputs[i].meta, mesh_);
      }
      out = replicated(node);
    }
    for (const auto& o : out.outs) p.outputs.push_back(o.spec);
    for (std::size_t k = 0; k < out.outs.size(); ++k) origins_[node.name].emplace_back(node.name, k);
    if (record_ != nullptr) {
      std::vector<ValueSource> sources;
      sources.reserve(inputs.size());
      for (const auto& in : inputs) sources.push_back({in.origin, in.origin_output, in.meta, in.known});
      record_->ops.push_back(OpRecord{node.name, *observed_call, std::move(sources), std::move(used_rule), p});
    }
    values_[node.name] = std::move(out);
    return p;
  }

  /// Graph constants (`self._tensor_constant0`) carry no type; the copy that lifts them
  /// (`lift_fresh_copy`, also `clone` / `detach` / `alias`) has the same shape and dtype, so its
  /// output annotation stands in for the input's.
  ///
  /// The `rng_state` of `higher_order.graphsafe_run_with_rng_state` is a torch.Generator, which a
  /// graph passes by name with no annotation: it becomes an opaque 0-d value (8 bytes), which the
  /// wrapper's rule keeps Replicate (an unplaced graph input is Replicate, so it moves nothing).
  void infer_unknown_input(const Node& node, std::vector<Resolved>& inputs, OpCall& call) {
    if (node.target == "higher_order.graphsafe_run_with_rng_state")
      for (const auto& [name, arg] : call.kwargs)
        if (name == "rng_state" && arg.kind == OpArg::Kind::tensor && static_cast<std::size_t>(arg.integer) < inputs.size()) {
          Resolved& state = inputs[static_cast<std::size_t>(arg.integer)];
          if (state.known || !state.unknown.empty()) continue;
          state.meta = TensorMeta{TensorShape{}, 8};
          state.known = true;
          call.tensors[static_cast<std::size_t>(arg.integer)] = state.meta;
        }
    static constexpr std::string_view same_layout[] = {"aten.lift_fresh_copy.default", "aten.clone.default", "aten.detach.default",
                                                       "aten.alias.default"};
    if (inputs.size() != 1 || inputs[0].known || node.outputs.size() != 1 || !node.outputs[0].known()) return;
    if (std::find(std::begin(same_layout), std::end(same_layout), node.target) == std::end(same_layout)) return;
    const std::optional<TensorMeta> meta = meta_of(node.outputs[0]);
    if (!meta) return;
    inputs[0].meta = *meta;
    inputs[0].known = true;
    call.tensors[0] = inputs[0].meta;
  }

  /// The enumerator of a call: the factory's rule depends only on the call (op, tensor metas,
  /// arguments, output annotations, and the current input specs for the rules that read them) — a
  /// full-mesh filter may capture its arguments — so one enumerator serves every identical call
  /// (repeated layers) and its memo carries over.
  StrategyEnumerator& enumerator_for(const RuleFactory& factory, OpCall&& call) {
    const std::size_t h = hash_of(call);
    auto [first, end] = call_index_.equal_range(h);
    for (auto it = first; it != end; ++it)
      if (same_call(calls_[it->second].call, call)) return calls_[last_call_ = it->second].enumerator;
    OpRule rule = factory(call);
    std::optional<OpRule> kept;
    if (record_ != nullptr) kept = rule;  // recorded for the planners that build on this plan
    calls_.push_back(CachedCall{
        std::move(call),
        StrategyEnumerator(rule.rules, mesh_, rule.uneven_inputs, std::move(rule.filter), options_.greedy_fill.value_or(rule.placeholder_fill)),
        std::move(kept)});
    call_index_.emplace(h, last_call_ = calls_.size() - 1);
    return calls_.back().enumerator;
  }

  static bool same_arg(const OpArg& a, const OpArg& b) {
    if (a.kind != b.kind || a.integer != b.integer || a.ints != b.ints || a.text != b.text || a.items.size() != b.items.size()) return false;
    if (std::bit_cast<std::uint64_t>(a.floating) != std::bit_cast<std::uint64_t>(b.floating)) return false;  // bitwise: NaN equals itself
    for (std::size_t i = 0; i < a.items.size(); ++i)
      if (!same_arg(a.items[i], b.items[i])) return false;
    return true;
  }
  bool same_call(const OpCall& a, const OpCall& b) const {
    if (a.op != b.op || a.tensors != b.tensors || a.outputs != b.outputs || a.args.size() != b.args.size() || a.kwargs.size() != b.kwargs.size())
      return false;
    // a rule that follows the current input specs (the dtensor rule set) is one per current specs
    if (registry_.reads_current_specs(a.op) && a.current != b.current) return false;
    for (std::size_t i = 0; i < a.args.size(); ++i)
      if (!same_arg(a.args[i], b.args[i])) return false;
    for (std::size_t i = 0; i < a.kwargs.size(); ++i)
      if (a.kwargs[i].first != b.kwargs[i].first || !same_arg(a.kwargs[i].second, b.kwargs[i].second)) return false;
    return true;
  }
  static std::size_t hash_of(const OpCall& c) {
    std::size_t h = std::hash<std::string>{}(c.op);
    const auto mix = [&h](std::uint64_t v) { h ^= static_cast<std::size_t>(v + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2)); };
    for (const TensorMeta& m : c.tensors) {
      mix(m.itemsize);
      for (std::size_t d = 0; d < m.shape.rank; ++d) mix(static_cast<std::uint64_t>(m.shape[d]));
    }
    for (const OpArg& a : c.args) {
      mix(static_cast<std::uint64_t>(a.kind));
      mix(static_cast<std::uint64_t>(a.integer));
      for (std::int64_t v : a.ints) mix(static_cast<std::uint64_t>(v));
    }
    return h;
  }

  const Graph& graph_;
  const PlanOptions& options_;
  const OpRegistry& registry_;
  GreedyRecord* record_ = nullptr;
  const std::map<std::string, ForcedRow>* forced_ = nullptr;  // rows the dead-end repair imposes
  bool symbols_bound_ = false;
  std::map<std::string, std::vector<std::pair<std::string, std::size_t>>> origins_;  // value -> defining (node, output) per output
  MeshTopology mesh_;
  std::unordered_map<std::string, Value> values_;
  std::vector<std::string> symbol_order_;                   // the graph's symbols, first appearance first
  std::map<std::string, std::int64_t> symbol_values_;       // bound value or hint per symbol
  std::unordered_set<std::int64_t> hints_;                  // the hint primes of unbound symbols
  std::unordered_map<std::string, std::string> sym_exprs_;  // symbolic-integer node -> its expression
  std::map<std::string, Evaluated> sizes_;                  // size expression text -> value
  std::map<std::string, Evaluated> sym_values_;             // symbolic-integer node -> value
  struct CachedCall {
    OpCall call;
    StrategyEnumerator enumerator;
    std::optional<OpRule> rule;  // kept when recording (GreedyRecord)
  };
  std::vector<CachedCall> calls_;                                 // one enumerator per distinct call
  std::unordered_multimap<std::size_t, std::size_t> call_index_;  // hash_of(call) -> index in calls_
  std::size_t last_call_ = 0;
};

}  // namespace

Plan greedy_pass(const Graph& graph, const PlanOptions& options, const OpRegistry& registry, GreedyRecord* record,
                 const std::map<std::string, ForcedRow>& forced) {
  return Planner(graph, options, registry, record, forced.empty() ? nullptr : &forced).run();
}

DataParallelInputs data_parallel_inputs(const Graph& graph, const PlanOptions& options) {
  return Planner(graph, options, builtin_registry()).data_parallel();
}

PlanOptions resolve_inputs(const Graph& graph, const PlanOptions& options, std::optional<DataParallelInputs>& dp) {
  check_graph(graph, "ctshard plan");  // (every planner's entry point resolves its inputs first)
  dp.reset();
  if (!options.data_parallel) return options;
  PlanOptions out = options;
  dp = data_parallel_inputs(graph, options);
  Spec s(options.mesh.size());
  s[0] = Shard(0);
  for (const auto& name : dp->inputs) out.placements.emplace(name, s);  // a --place of the same input wins
  return out;
}

namespace {
Plan plan_with_repair(const Graph& graph, const PlanOptions& options, const OpRegistry& registry, GreedyRecord* record) {
  std::optional<DataParallelInputs> dp;
  const PlanOptions resolved = resolve_inputs(graph, options, dp);
  Plan plan = greedy_pass(graph, resolved, registry, record, {});
  if (!std::isfinite(plan.total_cost_us)) plan = repair_dead_ends(graph, resolved, registry, record, std::move(plan));
  plan.data_parallel = std::move(dp);
  return plan;
}
}  // namespace

Plan plan_graph(const Graph& graph, const PlanOptions& options, const OpRegistry& registry) {
  return plan_with_repair(graph, options, registry, nullptr);
}

RecordedPlan plan_graph_recorded(const Graph& graph, const PlanOptions& options, const OpRegistry& registry) {
  RecordedPlan out;
  out.plan = plan_with_repair(graph, options, registry, &out.record);
  return out;
}

std::string specs_text(const std::vector<Spec>& specs, std::string_view separator) {
  std::string s;
  for (std::size_t i = 0; i < specs.size(); ++i) {
    if (i != 0) s += separator;
    s += to_string(specs[i]);
  }
  return s;
}

std::vector<std::string> spec_texts(const std::vector<Spec>& specs) {
  std::vector<std::string> out;
  out.reserve(specs.size());
  for (const Spec& s : specs) out.push_back(to_string(s));
  return out;
}

}  // namespace ctshard::graph
