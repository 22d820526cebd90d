#pragma once
/// \file greedy.hpp
/// Sharding propagation through an aten FX graph: every op node, in graph order, takes the
/// strategy DTensor's selection would take given its inputs' current specs; ops without a rule
/// fall back visibly (all inputs replicated, outputs Replicate).
///
/// Symbolic shapes: every size expression (SizeExpr) is evaluated with the symbol values of
/// PlanOptions::symbols. An unbound symbol is never assumed divisible by anything: the distinct
/// unbound symbols get the primes 8191, 8209, 8219, ... as hints in order of first appearance
/// (Graph::symbols), so a monomial size k*s is divisible by exactly what divides k; a
/// non-monomial expression with an unbound symbol (`s0 + 1`, `(s0//2)`) takes the smallest prime
/// above its hinted value that is not a symbol's hint. Shapes and costs use these values. A
/// symbolic-integer node (Node::sym_expr) is not planned; used as an argument it is the
/// integer value of its expression.

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ctshard/core/spec.hpp"
#include "ctshard/cost/mesh_topology.hpp"
#include "ctshard/graph/ir.hpp"
#include "ctshard/registry/builtin_registry.hpp"
#include "ctshard/registry/op_registry.hpp"
#include "ctshard/select/enumerator.hpp"
#include "ctshard/solve/budget.hpp"

namespace ctshard::graph {

/// One planned op node.
struct PlannedNode {
  std::string name;
  std::string op;             ///< aten overload name (or namespace.op.overload)
  std::vector<Spec> inputs;   ///< specs the strategy needs for each tensor input
  std::vector<Spec> outputs;  ///< spec of each output
  double cost_us = 0;         ///< redistribution cost of the inputs (µs)
  bool fallback = false;      ///< no rule applied: inputs replicated
  std::string reason;         ///< why it fell back ("no rule", or the rule's error)
  /// The dead-end repair changed this node: DTensor's choice had an infinite cost here, or left a
  /// later node with no finite row (docs/semantics.md, "Dead ends"); `repair` says which and
  /// what it took instead.
  bool repaired = false;
  std::string repair;
};

/// Specs as the tools print a row's side: "S(0)R, RS(1)" (`separator` between them).
[[nodiscard]] std::string specs_text(const std::vector<Spec>& specs, std::string_view separator = ", ");

/// Each spec's text ("S(0)R"), in order: a row's side in the JSON documents.
[[nodiscard]] std::vector<std::string> spec_texts(const std::vector<Spec>& specs);

/// The value a symbol took in a plan.
struct SymbolValue {
  std::string name;
  std::int64_t value = 0;  ///< the bound value, or the prime hint of an unbound symbol
  bool bound = false;      ///< given in PlanOptions::symbols
};

/// What `--data-parallel` did: the batch size and the inputs it placed.
struct DataParallelInputs {
  std::string batch;                ///< the batch size as written in the graph ("8", or a size expression such as "s77")
  std::int64_t value = 0;           ///< its value (a symbol's bound value or prime hint)
  bool inferred = false;            ///< inferred from the graph, not given (PlanOptions::batch_size)
  std::vector<std::string> inputs;  ///< the inputs placed S(0) on mesh dim 0, in graph order
  std::string note;                 ///< why no input was placed, when none was
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
  std::size_t nodes_repaired = 0;                   ///< nodes the dead-end repair changed (PlannedNode::repaired)
  std::map<std::string, Spec> placements;           ///< every pinned input: PlanOptions::placements and the data-parallel ones
  std::optional<DataParallelInputs> data_parallel;  ///< set when PlanOptions::data_parallel
};

/// Options of `ctshard plan`.
struct PlanOptions {
  std::vector<std::int64_t> mesh{2, 4};
  std::int64_t devices_per_host = 8;
  std::map<std::string, Spec> placements;       ///< placeholder name -> spec; others Replicate
  std::map<std::string, std::int64_t> symbols;  ///< symbol name -> value (`--sym s77=1024`); others get prime hints
  CostModel cost_model = CostModel::dtensor;    ///< how redistributions are priced (`--cost-model`)
  SelectAlgo algo = SelectAlgo::search;         ///< how each node's choice is found (`--algo`)
  /// How the greedy planner fills each rule's placeholders (`--greedy-fill`): set, this fill for
  /// every node — DTensor's by default: a reduce-scatter into a shard (PlaceholderFill::
  /// shard_from_partial) is cheaper at the node, but greedy cannot see the gathers it causes
  /// downstream (gpt_megatron_l1_tp2_r0 on 2x4: 1,576.6 µs with DTensor's fill, 46,482.6 µs with
  /// the rules' own; docs/semantics.md); unset, each rule's own (OpRule::placeholder_fill). The
  /// global planner (`--global`) lists the plain-Shard rows of every op either way.
  std::optional<PlaceholderFill> greedy_fill = PlaceholderFill::dtensor;
  /// Data-parallel inputs (`--data-parallel`): every tensor input whose dim 0 is the batch size
  /// is S(0) on mesh dim 0 (Replicate on the other mesh dims) unless `placements` names it; see
  /// data_parallel_inputs.
  bool data_parallel = false;
  std::optional<std::int64_t> batch_size;  ///< the batch size (`--batch-size`); inferred when absent
  /// Budget of the dead-end repair's exact feasibility checks (ms, all of them together).
  double repair_time_limit_ms = 10000;
  /// The rule set the registry given to plan_graph was built with (`--rule-set`), recorded in
  /// plan_json as `rule_set`; the registry itself decides the rows.
  RuleProfile rule_set = RuleProfile::ctshard;
  /// The request's deadline: once it passes, the greedy pass stops at the next op node with
  /// solve::time_limit_reached (unset: never). The whole-graph plan sets it (GlobalOptions).
  solve::Deadline deadline{};
};

/// Where a tensor input of an op node comes from: the node that defines the value (a placeholder,
/// get_attr or op node; getitem nodes are looked through) and which of its outputs it is.
struct ValueSource {
  std::string node;        ///< defining node; empty when the argument names no known value
  std::size_t output = 0;  ///< output index of the defining node
  TensorMeta meta{};       ///< the value's meta (as the consumer sees it)
  bool known = false;      ///< meta known
};

/// A source value (placeholder or get_attr node) as the greedy plan defined it.
struct SourceRecord {
  std::string name;
  Spec spec;                 ///< pinned by PlanOptions::placements, else Replicate
  TensorMeta meta{};         ///< its global meta
  bool known = false;        ///< meta known
  bool placeholder = false;  ///< a graph input (not a get_attr constant)
};

/// An op node (not getitem, not symbolic) as the greedy plan saw it.
struct OpRecord {
  std::string name;
  OpCall call;                      ///< the call its rule was built for (tensor metas, arguments)
  std::vector<ValueSource> inputs;  ///< where each tensor input comes from
  std::optional<OpRule> rule;       ///< its rule (the rows a whole-graph search may use); unset when it fell back
  PlannedNode planned;              ///< the greedy choice
};

/// What a greedy plan saw, in graph order, for the planners that build on it (the cost-graph
/// builder takes it as input): every source value and every op node with its call, input
/// sources, rule and choice. Each rule factory runs once per distinct call (the greedy pass
/// caches the rule it built the node's table from).
struct GreedyRecord {
  std::vector<SourceRecord> sources;
  std::vector<OpRecord> ops;
};

/// A greedy plan with its record (plan_graph_recorded).
struct RecordedPlan {
  Plan plan;
  GreedyRecord record;
};

/// A row a node must take in a greedy pass (the dead-end repair): the specs of its outputs, then
/// of its tensor inputs; or `fallback` (inputs replicated, as a node without a rule). `why` is
/// the node's PlannedNode::repair text.
struct ForcedRow {
  std::vector<Spec> specs;
  bool fallback = false;
  std::string why;
};

/// One greedy pass: every op node takes DTensor's choice given its inputs' current specs, except
/// the nodes named in `forced`, which take their row; no dead-end repair. `options.placements`
/// must already hold the data-parallel inputs (resolve_inputs). Throws like plan_graph, except
/// for dead ends (an infinite total is returned as is).
/// With `record`, what the pass saw is appended to it.
Plan greedy_pass(const Graph& graph, const PlanOptions& options, const OpRegistry& registry, GreedyRecord* record,
                 const std::map<std::string, ForcedRow>& forced);

/// `options` with the data-parallel inputs added to `placements` when `options.data_parallel`
/// (inputs `placements` names keep their spec), and what was placed in `dp` (set only then).
/// Checks the graph first (check_graph). Throws like check_graph and data_parallel_inputs.
PlanOptions resolve_inputs(const Graph& graph, const PlanOptions& options, std::optional<DataParallelInputs>& dp);

/// The data-parallel inputs of `graph` (docs/semantics.md, "Data-parallel inputs"): the batch
/// size B is `options.batch_size` or, inferred, the most common size of dim 0 among the graph's
/// tensors of rank >= 3 (inputs and op results: activations such as [batch, tokens, hidden],
/// [batch, channels, h, w], [batch, heads, tokens, dim]; the smaller value on a tie, sizes
/// compared as written, so a symbolic "s77" is its own size). Every tensor input (placeholder)
/// of rank >= 1 whose dim 0 is B is listed, unless B's value is below the size of mesh dim 0
/// (then nothing is, and `note` says why). Symbols take their values as in plan_graph. Throws
/// ctshard::error for a batch size below 1 or a size expression that does not evaluate.
DataParallelInputs data_parallel_inputs(const Graph& graph, const PlanOptions& options);

/// The first hint prime of an unbound symbol (the next ones are the following primes).
inline constexpr std::int64_t first_symbol_hint = 8191;

/// Plans `graph`: the greedy pass, repaired where it dead-ends (an op node whose every row costs
/// inf given its inputs): the earliest node from which no finite completion exists takes the
/// cheapest row that has one, over the candidate rows of `plan --global --every-candidate`
/// (docs/semantics.md, "Dead ends": the plan is finite whenever a finite plan exists over those
/// rows). Throws
/// ctshard::error when a `placements` name is not a tensor placeholder of the graph or its spec
/// has the wrong mesh rank, when a `symbols` name is not a symbol of the graph or its value is
/// below 1, when a size expression of the graph does not parse, or when no finite plan exists
/// (naming the node with no finite row and why) or none was found within
/// `repair_time_limit_ms`.
Plan plan_graph(const Graph& graph, const PlanOptions& options, const OpRegistry& registry);
/// The same plan with what it saw (of the final pass when the dead-end repair re-planned).
RecordedPlan plan_graph_recorded(const Graph& graph, const PlanOptions& options, const OpRegistry& registry);

}  // namespace ctshard::graph
