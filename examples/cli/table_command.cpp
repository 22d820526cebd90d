#include <algorithm>
#include <cmath>
#include <iomanip>
#include <ostream>

#include "commands.hpp"
#include "ctshard/ctshard.hpp"
#include "op_catalog.hpp"

namespace ctshard::cli {

std::vector<std::string> split(const std::string& text, char sep) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  while (true) {
    const std::size_t end = text.find(sep, start);
    parts.push_back(text.substr(start, end == std::string::npos ? std::string::npos : end - start));
    if (end == std::string::npos) return parts;
    start = end + 1;
  }
}

const OpRegistry& registry_for(const std::string& einsum_linearity) {
  if (einsum_linearity == "dtensor") return builtin_registry();
  if (einsum_linearity == "sound") {
    static const OpRegistry sound = make_builtin_registry(EinsumLinearity::per_input);
    return sound;
  }
  throw error("ctshard: einsum linearity must be 'dtensor' or 'sound', got '" + einsum_linearity + "'");
}

OpArg op_arg_from_json(const nlohmann::json& v) {
  OpArg a;
  if (v.is_null()) {
    a.kind = OpArg::Kind::none;
  } else if (v.is_boolean()) {
    a.kind = OpArg::Kind::boolean;
    a.integer = v.get<bool>() ? 1 : 0;
  } else if (v.is_number_integer()) {
    a.kind = OpArg::Kind::integer;
    a.integer = v.get<std::int64_t>();
  } else if (v.is_number()) {
    a.kind = OpArg::Kind::floating;
    a.floating = v.get<double>();
  } else if (v.is_string()) {
    a.kind = OpArg::Kind::string;
    a.text = v.get<std::string>();
  } else if (v.is_array() && std::all_of(v.begin(), v.end(), [](const nlohmann::json& x) { return x.is_number_integer(); })) {
    a.kind = OpArg::Kind::int_list;
    for (const auto& x : v) a.ints.push_back(x.get<std::int64_t>());
  } else {
    throw error("ctshard table: unsupported argument " + v.dump() + " (use numbers, booleans, null, strings or lists of integers)");
  }
  return a;
}

nlohmann::json cost_value(double us) {
  if (std::isinf(us)) return "inf";
  return us;
}

namespace {
nlohmann::json rule_rows(const RuleSet& rules) {
  nlohmann::json rows = nlohmann::json::array();
  for (std::size_t r = 0; r < rules.size(); ++r) {
    nlohmann::json row = nlohmann::json::array();
    for (const auto& p : rules.row(r)) row.push_back(to_string(p));
    rows.push_back(row);
  }
  return rows;
}

MeshTopology mesh_of(const std::string& text, std::int64_t devices_per_host) {
  std::size_t ndim = 0;
  const auto sizes = parse_mesh_sizes(text, ndim);
  return MeshTopology::build(std::span<const std::int64_t>(sizes.data(), ndim), devices_per_host);
}
}  // namespace

nlohmann::json table_json(const TableOptions& o) {
  const MeshTopology mesh = mesh_of(o.mesh, o.devices_per_host);
  const std::size_t itemsize = dtype_itemsize(o.dtype);
  std::vector<TensorMeta> tensors;
  for (const auto& s : split(o.shapes, ',')) tensors.push_back(TensorMeta{parse_shape(s), itemsize});
  std::vector<Spec> specs;
  for (const auto& s : split(o.inputs, ';')) specs.push_back(parse_spec(s));
  if (specs.size() != tensors.size())
    throw error("ctshard table: " + std::to_string(tensors.size()) + " shapes ('" + o.shapes + "') but " + std::to_string(specs.size()) +
                " input specs ('" + o.inputs + "')");
  std::vector<OpArg> extra;
  std::vector<std::pair<std::string, OpArg>> kwargs;
  try {
    const auto args = nlohmann::json::parse(o.args);
    const auto kw = nlohmann::json::parse(o.kwargs);
    if (!args.is_array()) throw error("--args must be a JSON array, got '" + o.args + "'");
    if (!kw.is_object()) throw error("--kwargs must be a JSON object, got '" + o.kwargs + "'");
    for (const auto& a : args) extra.push_back(op_arg_from_json(a));
    for (const auto& [k, v] : kw.items()) kwargs.emplace_back(k, op_arg_from_json(v));
  } catch (const nlohmann::json::exception& e) {
    throw error(std::string("ctshard table: --args / --kwargs are not valid JSON: ") + e.what());
  }
  const OpCall call = make_table_call(o.op, tensors, extra, kwargs);
  const OpRegistry& registry = registry_for(o.einsum_linearity);
  const RuleFactory* factory = registry.find(call.op);
  if (factory == nullptr) throw error("ctshard table: op '" + o.op + "' (" + call.op + ") has no sharding rule");
  const OpRule rule = (*factory)(call);
  StrategyEnumerator enumerator(rule.rules, mesh, rule.allow_uneven_sharding, rule.filter);

  nlohmann::json j;
  j["op"] = o.op;
  j["aten_op"] = call.op;
  j["shapes"] = nlohmann::json::array();
  for (const auto& t : tensors) j["shapes"].push_back(std::vector<std::int64_t>(t.shape.dims.begin(), t.shape.dims.begin() + t.shape.rank));
  j["mesh"] = std::vector<std::int64_t>(mesh.sizes.begin(), mesh.sizes.begin() + mesh.ndim);
  j["devices_per_host"] = o.devices_per_host;
  j["itemsize"] = itemsize;
  j["inputs"] = nlohmann::json::array();
  for (const auto& s : specs) j["inputs"].push_back(to_string(s));
  j["allow_uneven"] = rule.allow_uneven_sharding;
  j["rules_raw"] = rule_rows(rule.rules);
  const RuleSet& filled = enumerator.filled_rules(specs);
  j["rules"] = rule_rows(filled);
  double combos = std::pow(static_cast<double>(filled.size()), static_cast<double>(mesh.size()));
  j["num_combinations"] = static_cast<std::uint64_t>(combos);
  nlohmann::json strategies = nlohmann::json::array();
  ChoiceAccumulator acc;
  const FilterCounts counts = enumerator.for_each(tensors, specs, [&](const CandidateView& c) {
    acc.offer(c.index, c.total_us, c.inputs_match);
    nlohmann::json s;
    if (enumerator.num_outputs() == 1) {
      s["out"] = to_string(enumerator.spec_of(c.digits, 0));
    } else {
      for (std::size_t k = 0; k < enumerator.num_outputs(); ++k) s["out"].push_back(to_string(enumerator.spec_of(c.digits, k)));
    }
    s["in"] = nlohmann::json::array();
    s["cost"] = nlohmann::json::array();
    for (std::size_t i = 0; i < enumerator.num_inputs(); ++i) {
      s["in"].push_back(to_string(enumerator.spec_of(c.digits, enumerator.num_outputs() + i)));
      s["cost"].push_back(cost_value(c.costs[i]));
    }
    s["total"] = cost_value(c.total_us);
    strategies.push_back(std::move(s));
  });
  j["filtered"] = {{"mixed_partial", counts.mixed_partial}, {"unshardable", counts.unshardable}};
  if (counts.op_filter > 0) j["filtered"]["op_filter"] = counts.op_filter;
  j["strategies"] = std::move(strategies);
  const Choice choice = acc.choice();
  j["choice"] = {{"index", choice.index}, {"rule", std::string(to_string(choice.rule))}};
  j["plain_min_index"] = acc.plain_min_index();
  return j;
}

namespace {
/// "S(0)R" for one output, "S(0)R, RR" for several.
std::string join_specs(const nlohmann::json& out) {
  if (out.is_string()) return out.get<std::string>();
  std::string text;
  for (const auto& o : out) {
    if (!text.empty()) text += ", ";
    text += o.get<std::string>();
  }
  return text;
}
}  // namespace

void print_table(const nlohmann::json& t, std::ostream& out) {
  out << t["op"].get<std::string>() << " (" << t["aten_op"].get<std::string>() << ") on mesh " << t["mesh"].dump() << ", inputs";
  for (const auto& s : t["inputs"]) out << ' ' << s.get<std::string>();
  out << "\nsingle-dim rules: " << t["rules"].size() << " after filling placeholders; " << t["num_combinations"].get<std::uint64_t>()
      << " combinations, " << t["filtered"]["mixed_partial"].get<std::size_t>() << " mixed-partial and "
      << t["filtered"]["unshardable"].get<std::size_t>() << " unshardable removed\n";
  const std::size_t chosen = t["choice"]["index"].get<std::size_t>();
  std::size_t i = 0;
  auto cost_text = [](const nlohmann::json& c) {
    if (c.is_string()) return c.get<std::string>();
    std::ostringstream s;
    s << std::fixed << std::setprecision(3) << c.get<double>();
    return s.str();
  };
  for (const auto& s : t["strategies"]) {
    std::string ins;
    std::string costs;
    for (std::size_t k = 0; k < s["in"].size(); ++k) {
      { ins += (k ? ", " : ""); ins += s["in"][k].get<std::string>(); }
      { costs += (k ? " + " : ""); costs += cost_text(s["cost"][k]); }
    }
    out << (i == chosen ? "* " : "  ") << std::setw(4) << i << "  (" << ins << ") -> " << join_specs(s["out"])
        << "   cost " << costs << " = " << cost_text(s["total"]) << " us\n";
    ++i;
  }
  out << "chosen: row " << chosen << " (" << t["choice"]["rule"].get<std::string>() << ")\n";
}

}  // namespace ctshard::cli
