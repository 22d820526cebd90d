#pragma once
/// \file summary_report.hpp
/// A plan read per layer and per parameter (`ctshard plan --summary`, `ctshard.summary`): what each
/// layer communicates, computes and keeps in memory per device, and where its parameters live.

#include <cstdint>
#include <iosfwd>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ctshard/core/spec.hpp"
#include "ctshard/graph/greedy.hpp"
#include "ctshard/registry/op_registry.hpp"

namespace ctshard::report {

/// The device the summary prices compute on (the whole-graph planner's `--device-tflops` /
/// `--device-gbps`, with the same defaults).
struct SummaryOptions {
  double device_tflops = 100;  ///< per-device FLOP rate (10^12 FLOP/s)
  double device_gbps = 1000;   ///< per-device memory bandwidth (10^9 B/s)
  /// The layer of each op node (a module FQN, "" for the root module), when the graph carries its
  /// module structure (a GraphModule's `nn_module_stack`): layers are then modules, in order of
  /// first appearance, an op node not listed in the root's "(root)". Empty: contraction runs.
  std::map<std::string, std::string> node_layers;
};

/// Whether `op` (an aten overload name) ends a layer of the summary: a contraction or an op with
/// weights — mm, addmm, bmm, baddbmm, matmul, linear, einsum, convolution (and their backward),
/// embedding (and its backward), scaled dot-product attention (every variant and backward).
[[nodiscard]] bool is_layer_anchor(const std::string& op);

/// The summary document of `plan` (greedy or global, same node names as `record`, the greedy
/// record of the same graph: plan_graph_recorded) on a mesh of `mesh` sizes:
///
/// - `grouping`: how op nodes were grouped into layers: `"module"` by `options.node_layers`, else
///   `"contraction"` (an FX printout carries no module structure): a layer is a run of op nodes in
///   graph order ending at a layer anchor (is_layer_anchor; named after its node), the op nodes
///   after the last anchor forming `(tail)`.
/// - `layers` (graph order): `name`, `anchor_op` ("" for the tail and for modules), `nodes` (op nodes), `comm_us`
///   (the redistribution cost of its nodes' inputs, µs: the plan's `cost_us`), `compute_us` (per
///   device: each node's registry FLOPs and bytes at the node's planned placements, roofline at
///   `options`' rates, as the whole-graph planner's compute term; a fallback node computes
///   replicated), `parameter_bytes` (per device, its parameters at their placements),
///   `activation_bytes` (per device, the outputs of its nodes that are not views), `memory_bytes`
///   (their sum), `parameters` ({name: placement}).
/// - `parameters` (graph order): every graph input and constant (placeholder, get_attr; a
///   printout does not tell weights from data) with `name`, `layer` (the layer of its first
///   consumer; "" when no op node reads it), `placement` (`input_specs[name]` when given, else
///   the greedy plan's: pinned or Replicate), `shape`, `bytes_per_device`.
/// - totals `comm_us` (= the plan's total_cost_us), `compute_us`, `memory_bytes`, and the rates.
nlohmann::json plan_summary_json(const graph::GreedyRecord& record, const graph::Plan& plan, const std::map<std::string, Spec>& input_specs,
                                 const std::vector<std::int64_t>& mesh, const OpRegistry& registry, const SummaryOptions& options = {});

/// Text rendering of a plan_summary_json() document: the layer table (comm and compute µs,
/// memory MiB, parameter placements), the totals, then the parameter table.
void print_plan_summary(const nlohmann::json& summary, std::ostream& out);

}  // namespace ctshard::report
