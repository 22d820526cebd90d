// report/summary_report.hpp: a plan per layer and per parameter.
#include "ctshard/report/summary_report.hpp"

#include <algorithm>
#include <array>
#include <cstdio>
#include <ostream>
#include <string_view>
#include <utility>

#include "ctshard/registry/op_compute.hpp"

namespace ctshard::report {
namespace {

/// The op's base name: "aten.addmm.default" -> "addmm" (the text between the first two dots, or
/// the whole text without one).
std::string_view base_name(std::string_view op) {
  const auto first = op.find('.');
  if (first == std::string_view::npos) return op;
  const auto rest = op.substr(first + 1);
  return rest.substr(0, rest.find('.'));
}

/// Ops whose outputs alias their input (no new memory).
bool is_view_op(std::string_view op) {
  static constexpr std::array<std::string_view, 17> views{
      "view",  "_unsafe_view", "t",      "transpose",  "permute", "expand",           "alias",  "squeeze", "unsqueeze",
      "slice", "select",       "detach", "as_strided", "split",   "split_with_sizes", "unbind", "narrow"};
  const auto b = base_name(op);
  return std::find(views.begin(), views.end(), b) != views.end();
}

double local_bytes(const TensorMeta& m, const Spec* spec, const std::vector<std::int64_t>& mesh) {
  if (spec == nullptr || spec->size() != mesh.size()) return m.bytes();
  return m.bytes() / static_cast<double>(num_shards(*spec, mesh));
}

/// Per-device compute time (µs) of one node at its planned specs: the registry's FLOPs divided
/// among the devices sharing the work (mesh dims where an operand is not Replicate), bytes of the
/// operands at their local sizes plus the call's other bytes divided likewise; roofline.
double compute_us(const graph::OpRecord& op, const graph::PlannedNode& planned, const std::vector<std::int64_t>& mesh, const OpRegistry& registry,
                  const SummaryOptions& options) {
  const auto& ins = op.call.tensors;
  const auto& outs = op.call.outputs;
  const OpCompute c = registry.compute(planned.op, ins, outs);
  double share = 1;
  if (!planned.fallback) {
    for (std::size_t d = 0; d < mesh.size(); ++d) {
      bool split = false;
      for (const auto* side : {&planned.inputs, &planned.outputs})
        for (const Spec& s : *side) split = split || (s.size() == mesh.size() && !s[d].is_replicate());
      if (split) share *= static_cast<double>(mesh[d]);
    }
  }
  double bytes = 0;
  for (std::size_t k = 0; k < outs.size(); ++k)
    bytes += local_bytes(outs[k], k < planned.outputs.size() && !planned.fallback ? &planned.outputs[k] : nullptr, mesh);
  for (std::size_t k = 0; k < ins.size(); ++k)
    bytes += local_bytes(ins[k], k < planned.inputs.size() && !planned.fallback ? &planned.inputs[k] : nullptr, mesh);
  const double extra = std::max(0.0, c.bytes - op_compute::operand_bytes(ins, outs));
  bytes += extra / share;
  return std::max(c.flops / share / (options.device_tflops * 1e6), bytes / (options.device_gbps * 1e3));
}

struct Layer {
  std::string name, anchor_op;
  std::size_t nodes = 0;
  double comm_us = 0, compute_us = 0, parameter_bytes = 0, activation_bytes = 0;
  nlohmann::json parameters = nlohmann::json::object();
};

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

}  // namespace

bool is_layer_anchor(const std::string& op) {
  static constexpr std::array<std::string_view, 9> exact{
      "mm", "addmm", "bmm", "baddbmm", "matmul", "linear", "einsum", "embedding", "embedding_dense_backward"};
  static constexpr std::array<std::string_view, 3> prefixes{"convolution", "_convolution", "_scaled_dot_product"};
  const auto b = base_name(op);
  if (std::find(exact.begin(), exact.end(), b) != exact.end()) return true;
  if (b == "scaled_dot_product_attention") return true;  // (a cast, convert_element_type, is no layer's end)
  return std::any_of(prefixes.begin(), prefixes.end(), [&](std::string_view p) { return b.starts_with(p); });
}

nlohmann::json plan_summary_json(const graph::GreedyRecord& record, const graph::Plan& plan, const std::map<std::string, Spec>& input_specs,
                                 const std::vector<std::int64_t>& mesh, const OpRegistry& registry, const SummaryOptions& options) {
  std::map<std::string, const graph::PlannedNode*> planned;
  for (const auto& n : plan.nodes) planned.emplace(n.name, &n);

  std::vector<std::size_t> layer_of(record.ops.size());
  std::vector<Layer> layers;
  const bool by_module = !options.node_layers.empty();
  if (by_module) {  // the module of each op node, layers in order of first appearance
    std::map<std::string, std::size_t> index;
    for (std::size_t i = 0; i < record.ops.size(); ++i) {
      const auto it = options.node_layers.find(record.ops[i].name);
      const std::string name = it == options.node_layers.end() || it->second.empty() ? "(root)" : it->second;
      const auto [at, added] = index.emplace(name, layers.size());
      if (added) {
        layers.emplace_back();
        layers.back().name = name;
      }
      layer_of[i] = at->second;
    }
  } else {  // runs ending at an anchor, the rest in a final "(tail)"
    std::size_t current = 0;
    bool open = false;
    for (std::size_t i = 0; i < record.ops.size(); ++i) {
      if (!open) {
        layers.emplace_back();
        current = layers.size() - 1;
        open = true;
      }
      layer_of[i] = current;
      const auto it = planned.find(record.ops[i].name);
      const std::string& op = it != planned.end() ? it->second->op : record.ops[i].call.op;
      if (is_layer_anchor(op)) {
        layers[current].name = record.ops[i].name;
        layers[current].anchor_op = op;
        open = false;
      }
    }
    if (open) layers[current].name = "(tail)";
  }

  std::map<std::string, std::size_t> first_use;  // source name -> layer of its first consumer
  for (std::size_t i = 0; i < record.ops.size(); ++i) {
    const graph::OpRecord& op = record.ops[i];
    Layer& layer = layers[layer_of[i]];
    ++layer.nodes;
    for (const auto& src : op.inputs)
      if (!src.node.empty()) first_use.emplace(src.node, layer_of[i]);
    const auto it = planned.find(op.name);
    if (it == planned.end()) continue;
    const graph::PlannedNode& p = *it->second;
    layer.comm_us += p.cost_us;
    layer.compute_us += compute_us(op, p, mesh, registry, options);
    if (!is_view_op(p.op))
      for (std::size_t k = 0; k < op.call.outputs.size(); ++k)
        layer.activation_bytes += local_bytes(op.call.outputs[k], k < p.outputs.size() ? &p.outputs[k] : nullptr, mesh);
  }

  nlohmann::json params = nlohmann::json::array();
  for (const auto& s : record.sources) {
    if (!s.known) continue;
    const auto given = input_specs.find(s.name);
    const Spec& spec = given != input_specs.end() ? given->second : s.spec;
    const double bytes = local_bytes(s.meta, &spec, mesh);
    const auto use = first_use.find(s.name);
    std::string layer_name;
    if (use != first_use.end()) {
      Layer& layer = layers[use->second];
      layer.parameter_bytes += bytes;
      layer.parameters[s.name] = to_string(spec);
      layer_name = layer.name;
    }
    nlohmann::json shape = nlohmann::json::array();
    for (std::size_t d = 0; d < s.meta.shape.rank; ++d) shape.push_back(s.meta.shape[d]);
    params.push_back({{"name", s.name}, {"layer", layer_name}, {"placement", to_string(spec)}, {"shape", shape}, {"bytes_per_device", bytes}});
  }

  nlohmann::json out_layers = nlohmann::json::array();
  double comm = 0, compute = 0, memory = 0;
  for (const Layer& l : layers) {
    comm += l.comm_us;
    compute += l.compute_us;
    memory += l.parameter_bytes + l.activation_bytes;
    out_layers.push_back({{"name", l.name},
                          {"anchor_op", l.anchor_op},
                          {"nodes", l.nodes},
                          {"comm_us", l.comm_us},
                          {"compute_us", l.compute_us},
                          {"parameter_bytes", l.parameter_bytes},
                          {"activation_bytes", l.activation_bytes},
                          {"memory_bytes", l.parameter_bytes + l.activation_bytes},
                          {"parameters", l.parameters}});
  }
  return {{"grouping", by_module ? "module" : "contraction"},
          {"device_tflops", options.device_tflops},
          {"device_gbps", options.device_gbps},
          {"layers", out_layers},
          {"parameters", params},
          {"comm_us", comm},
          {"compute_us", compute},
          {"memory_bytes", memory}};
}

void print_plan_summary(const nlohmann::json& summary, std::ostream& out) {
  constexpr double mib = 1024.0 * 1024.0;
  std::vector<std::array<std::string, 6>> rows{{"layer", "nodes", "comm us", "compute us", "memory MiB", "parameters"}};
  for (const auto& l : summary.at("layers")) {
    std::string params;
    for (const auto& [name, spec] : l.at("parameters").items()) params += (params.empty() ? "" : " ") + name + "=" + spec.get<std::string>();
    rows.push_back({l.at("name").get<std::string>(), std::to_string(l.at("nodes").get<std::size_t>()), fixed(l.at("comm_us").get<double>(), 3),
                    fixed(l.at("compute_us").get<double>(), 3), fixed(l.at("memory_bytes").get<double>() / mib, 3), params});
  }
  std::size_t nodes = 0;
  for (const auto& l : summary.at("layers")) nodes += l.at("nodes").get<std::size_t>();
  rows.push_back({"total", std::to_string(nodes), fixed(summary.at("comm_us").get<double>(), 3), fixed(summary.at("compute_us").get<double>(), 3),
                  fixed(summary.at("memory_bytes").get<double>() / mib, 3), ""});
  const auto print_rows = [&out](const auto& table) {
    std::vector<std::size_t> width(table.front().size(), 0);
    for (const auto& r : table)
      for (std::size_t i = 0; i < r.size(); ++i) width[i] = std::max(width[i], r[i].size());
    for (const auto& r : table) {
      std::string line;
      for (std::size_t i = 0; i < r.size(); ++i) line += (i ? "  " : "") + r[i] + std::string(width[i] - r[i].size(), ' ');
      line.erase(line.find_last_not_of(' ') + 1);
      out << line << '\n';
    }
  };
  out << (summary.at("grouping") == "module"
              ? "layers: modules (the innermost module of each op node); compute at "
              : "layers: runs of op nodes ending at a contraction or weighted op (the graph has no module structure); compute at ")
      << fixed(summary.at("device_tflops").get<double>(), 0) << " TFLOP/s, " << fixed(summary.at("device_gbps").get<double>(), 0)
      << " GB/s per device; memory MiB per device: parameters and every value produced (none freed: not a peak):\n";
  print_rows(rows);
  std::vector<std::array<std::string, 5>> prows{{"parameter", "layer", "shape", "placement", "MiB/device"}};
  for (const auto& p : summary.at("parameters")) {
    std::string shape = "[";
    for (const auto& d : p.at("shape")) shape += (shape.size() > 1 ? ", " : "") + std::to_string(d.get<std::int64_t>());
    prows.push_back({p.at("name").get<std::string>(), p.at("layer").get<std::string>(), shape + "]", p.at("placement").get<std::string>(),
                     fixed(p.at("bytes_per_device").get<double>() / mib, 3)});
  }
  out << "parameters (graph inputs and constants):\n";
  print_rows(prows);
}

}  // namespace ctshard::report
