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
  const OpCall call = make_table_call(o.op, tensors);
  const OpRegistry& registry = o.sound ? [] () -> const OpRegistry& { static const OpRegistry r = make_builtin_registry(EinsumLinearity::per_input); return r; }()
                                       : builtin_registry();
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
    out << (i == chosen ? "* " : "  ") << std::setw(4) << i << "  (" << ins << ") -> " << (s["out"].is_string() ? s["out"].get<std::string>() : s["out"].dump())
        << "   cost " << costs << " = " << cost_text(s["total"]) << " us\n";
    ++i;
  }
  out << "chosen: row " << chosen << " (" << t["choice"]["rule"].get<std::string>() << ")\n";
}

}  // namespace ctshard::cli
