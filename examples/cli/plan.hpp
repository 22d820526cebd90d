#pragma once
/// \file plan.hpp
/// Sharding propagation through an aten FX graph: every op node, in graph order, takes the
/// strategy DTensor's selection would take given its inputs' current specs; ops without a rule
/// fall back visibly (all inputs replicated, outputs Replicate).
///
/// Symbolic shapes: every size expression (fx::SizeExpr) is evaluated with the symbol values of
/// PlanOptions::symbols. An unbound symbol is never assumed divisible by anything: the distinct
/// unbound symbols get the primes 8191, 8209, 8219, ... as hints in order of first appearance
/// (fx::Graph::symbols), so a monomial size k*s is divisible by exactly what divides k; a
/// non-monomial expression with an unbound symbol (`s0 + 1`, `(s0//2)`) takes the smallest prime
/// above its hinted value that is not a symbol's hint. Shapes and costs use these values. A
/// symbolic-integer node (fx::Node::sym_expr) is not planned; used as an argument it is the
/// integer value of its expression.

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <map>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ctshard/core/spec.hpp"
#include "ctshard/cost/mesh_topology.hpp"
#include "ctshard/registry/builtin_registry.hpp"
#include "ctshard/registry/op_registry.hpp"
#include "ctshard/select/enumerator.hpp"
#include "fx_graph.hpp"

namespace ctshard::cli {

/// One planned op node.
struct PlannedNode {
  std::string name;
  std::string op;                    ///< aten overload name (or namespace.op.overload)
  std::vector<std::string> inputs;   ///< specs the strategy needs for each tensor input
  std::vector<std::string> outputs;  ///< spec of each output
  double cost_us = 0;                ///< redistribution cost of the inputs (µs)
  bool fallback = false;             ///< no rule applied: inputs replicated
  std::string reason;                ///< why it fell back ("no rule", or the rule's error)
};

/// The value a symbol took in a plan.
struct SymbolValue {
  std::string name;
  std::int64_t value = 0;  ///< the bound value, or the prime hint of an unbound symbol
  bool bound = false;      ///< given in PlanOptions::symbols
};

/// The plan of a whole graph.
struct Plan {
  std::string source;
  std::vector<SymbolValue> symbols;  ///< the graph's symbols in order of first appearance
  std::vector<PlannedNode> nodes;
  double total_cost_us = 0;
  std::size_t nodes_with_rule = 0;
  std::size_t nodes_fallback = 0;
  std::map<std::string, std::size_t> fallback_ops;  ///< op name -> count
};

/// Options of `ctshard plan`.
struct PlanOptions {
  std::vector<std::int64_t> mesh{2, 4};
  std::int64_t devices_per_host = 8;
  std::map<std::string, Spec> placements;       ///< placeholder name -> spec; others Replicate
  std::map<std::string, std::int64_t> symbols;  ///< symbol name -> value (`--sym s77=1024`); others get prime hints
  CostModel cost_model = CostModel::dtensor;    ///< how redistributions are priced (`--cost-model`)
  SelectAlgo algo = SelectAlgo::search;         ///< how each node's choice is found (`--algo`)
  /// The rule set the registry given to plan_graph was built with (`--rule-set`), recorded in
  /// plan_json as `rule_set`; the registry itself decides the rows.
  RuleProfile rule_set = RuleProfile::ctshard;
};

/// Where a tensor input of an op node comes from: the node that defines the value (a placeholder,
/// get_attr or op node; getitem nodes are looked through) and which of its outputs it is.
struct ValueSource {
  std::string node;        ///< defining node; empty when the argument names no known value
  std::size_t output = 0;  ///< output index of the defining node
  TensorMeta meta{};       ///< the value's meta (as the consumer sees it)
  bool known = false;      ///< meta known
};

/// What `plan_graph` saw at one node, for tools that build on the greedy plan (the global
/// planner): every source value (placeholder / get_attr) as it is defined, and every op node
/// with its call, the sources of its tensor inputs, its rule (nullptr when it fell back) and the
/// greedy choice. The references are valid only during the callback.
struct PlanObserver {
  /// A placeholder or get_attr node: its spec (pinned by PlanOptions::placements, else Replicate)
  /// and meta.
  std::function<void(const fx::Node& node, const Spec& spec, const TensorMeta& meta, bool known)> on_source;
  /// An op node (not getitem, not symbolic).
  std::function<void(const fx::Node& node, const OpCall& call, std::span<const ValueSource> inputs, const OpRule* rule, const PlannedNode& planned)>
      on_op;
};

/// The first hint prime of an unbound symbol (the next ones are the following primes).
inline constexpr std::int64_t first_symbol_hint = 8191;

/// Plans `graph`. Throws ctshard::error when a `placements` name is not a tensor placeholder of
/// the graph or its spec has the wrong mesh rank, when a `symbols` name is not a symbol of the
/// graph or its value is below 1, or when a size expression of the graph does not parse.
Plan plan_graph(const fx::Graph& graph, const PlanOptions& options, const OpRegistry& registry);
/// The same plan, reporting every source and op node to `observer` as it is planned.
Plan plan_graph(const fx::Graph& graph, const PlanOptions& options, const OpRegistry& registry, const PlanObserver& observer);

/// The `plan --json` document: source, mesh, rule_set, placements, symbols ([{name, value,
/// bound}]), nodes ({name, op, inputs, outputs, cost_us, fallback[, reason]}), total_cost_us,
/// nodes_with_rule, nodes_fallback, fallback_ops.
nlohmann::json plan_json(const Plan& plan, const PlanOptions& options);

/// Text rendering of a plan: one line per op node, then totals and the fallback ops.
void print_plan(const Plan& plan, const PlanOptions& options, std::ostream& out);

/// The embedded default graph (`examples/default_graph.fx.txt`: one pre-norm transformer block).
fx::Graph default_graph();

/// Placements the embedded default block starts from when none are given: activations
/// batch-sharded on mesh dim 0 (data parallel) and, on a mesh of 2+ dims, Megatron-style tensor
/// parallelism on the last mesh dim (QKV and MLP-up weights split by output rows, attention-out
/// and MLP-down weights by input columns).
std::map<std::string, Spec> default_placements(std::size_t mesh_ndim);

}  // namespace ctshard::cli
