#include <algorithm>
#include <cmath>
#include <iomanip>
#include <optional>
#include <ostream>
#include <span>

#include "ctshard/registry.hpp"
#include "ctshard/report/commands.hpp"
#include "ctshard/report/op_catalog.hpp"

namespace ctshard::report {

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

CostModel parse_cost_model(std::string_view name) {
  if (name == "dtensor") return CostModel::dtensor;
  if (name == "consistent") return CostModel::consistent;
  throw error("ctshard: cost model must be 'dtensor' or 'consistent', got '" + std::string(name) + "'");
}

std::vector<std::int64_t> parse_mesh(std::string_view text) {
  std::size_t ndim = 0;
  const auto sizes = parse_mesh_sizes(text, ndim);
  return {sizes.begin(), sizes.begin() + static_cast<std::ptrdiff_t>(ndim)};
}

std::vector<std::vector<std::int64_t>> parse_shapes(const std::string& text) {
  std::vector<std::vector<std::int64_t>> shapes;
  for (const auto& s : split(text, ',')) {
    const TensorShape shape = parse_shape(s);
    shapes.emplace_back(shape.dims.begin(), shape.dims.begin() + shape.rank);
  }
  return shapes;
}

std::string shape_text(const std::vector<std::int64_t>& shape) { return to_string(TensorShape(std::span<const std::int64_t>(shape))); }

nlohmann::json ops_json() {
  const auto names = builtin_registry().names();
  return {{"ops", names}, {"count", names.size()}};
}

RuleProfile parse_rule_set(std::string_view name) {
  if (name == "ctshard") return RuleProfile::ctshard;
  if (name == "dtensor") return RuleProfile::dtensor;
  throw error("ctshard: rule set must be 'ctshard' or 'dtensor', got '" + std::string(name) + "'");
}

const OpRegistry& registry_for(const std::string& einsum_linearity, const std::string& partial_passthrough, const std::string& rule_set) {
  if (einsum_linearity != "dtensor" && einsum_linearity != "sound")
    throw error("ctshard: einsum linearity must be 'dtensor' or 'sound', got '" + einsum_linearity + "'");
  if (partial_passthrough != "ctshard" && partial_passthrough != "dtensor")
    throw error("ctshard: partial passthrough must be 'ctshard' or 'dtensor', got '" + partial_passthrough + "'");
  if (parse_rule_set(rule_set) == RuleProfile::dtensor) {
    // the profile implies DTensor's einsum linearity and Partial passthrough
    static const OpRegistry dtensor_profile = make_builtin_registry(RegistryOptions{.rule_set = RuleProfile::dtensor});
    return dtensor_profile;
  }
  const auto options = [](EinsumLinearity linearity, PartialPassthrough passthrough) {
    return RegistryOptions{.einsum_linearity = linearity, .partial_passthrough = passthrough};
  };
  const bool sound = einsum_linearity == "sound";
  if (partial_passthrough == "ctshard") {
    if (!sound) return builtin_registry();
    static const OpRegistry sound_ctshard = make_builtin_registry(options(EinsumLinearity::per_input, PartialPassthrough::ctshard));
    return sound_ctshard;
  }
  static const OpRegistry dtensor_dtensor = make_builtin_registry(options(EinsumLinearity::dtensor, PartialPassthrough::dtensor));
  static const OpRegistry sound_dtensor = make_builtin_registry(options(EinsumLinearity::per_input, PartialPassthrough::dtensor));
  return sound ? sound_dtensor : dtensor_dtensor;
}

namespace {
/// "$3" -> 3; nullopt for any other text.
std::optional<std::int64_t> tensor_reference(const std::string& text) {
  if (text.size() < 2 || text[0] != '$' || text.size() > 8) return std::nullopt;
  std::int64_t i = 0;
  for (std::size_t k = 1; k < text.size(); ++k) {
    if (text[k] < '0' || text[k] > '9') return std::nullopt;
    i = i * 10 + (text[k] - '0');
  }
  return i;
}
}  // namespace

namespace {
std::string shown_text(const std::string& text) { return text.size() > 200 ? text.substr(0, 200) + "..." : text; }

OpArg op_arg_from_json_at(const nlohmann::ordered_json& v, std::size_t depth);
}  // namespace

nlohmann::ordered_json parse_arg_json(std::string_view option, const std::string& text) {
  const std::string api = "ctshard table: " + std::string(option);
  if (text.size() > max_arg_text_bytes)
    throw error(api + " is " + std::to_string(text.size()) + " bytes long (at most " + std::to_string(max_arg_text_bytes) + ")");
  std::size_t values = 0;
  try {
    return nlohmann::ordered_json::parse(text, [&](int depth, nlohmann::ordered_json::parse_event_t event, nlohmann::ordered_json&) {
      using event_t = nlohmann::ordered_json::parse_event_t;
      const bool opens = event == event_t::array_start || event == event_t::object_start;
      if (opens && static_cast<std::size_t>(depth) >= max_arg_nesting)
        throw error(api + " nests lists deeper than " + std::to_string(max_arg_nesting) + " levels");
      if ((opens || event == event_t::value) && ++values > max_arg_values)
        throw error(api + " has more than " + std::to_string(max_arg_values) + " values (numbers, strings, lists)");
      return true;
    });
  } catch (const nlohmann::json::exception& e) {
    throw error(api + " is not valid JSON ('" + shown_text(text) + "'): " + shown_text(e.what()));
  }
}

OpArg op_arg_from_json(const nlohmann::ordered_json& v) { return op_arg_from_json_at(v, 0); }

namespace {
OpArg op_arg_from_json_at(const nlohmann::ordered_json& v, std::size_t depth) {
  OpArg a;
  if (v.is_null()) {
    a.kind = OpArg::Kind::none;
  } else if (v.is_boolean()) {
    a.kind = OpArg::Kind::boolean;
    a.integer = v.get<bool>() ? 1 : 0;
  } else if (v.is_number_integer()) {
    if (v.is_number_unsigned() && v.get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX))
      throw error("ctshard table: integer argument " + std::to_string(v.get<std::uint64_t>()) + " does not fit in int64");
    a.kind = OpArg::Kind::integer;
    a.integer = v.get<std::int64_t>();
  } else if (v.is_number()) {
    a.kind = OpArg::Kind::floating;
    a.floating = v.get<double>();
  } else if (v.is_string()) {
    const std::string text = v.get<std::string>();
    if (const auto t = tensor_reference(text)) {
      a.kind = OpArg::Kind::tensor;
      a.integer = *t;
    } else {
      a.kind = OpArg::Kind::string;
      a.text = text;
    }
  } else if (v.is_array()) {
    if (depth + 1 > max_arg_nesting) throw error("ctshard table: arguments nest lists deeper than " + std::to_string(max_arg_nesting) + " levels");
    // a list of integers (or of tensor references) goes straight into `ints`: building an
    // argument record per item first took ~110 bytes per item (2.7 GB for 12 M sizes)
    const bool ints = std::all_of(v.begin(), v.end(), [](const nlohmann::ordered_json& x) { return x.is_number_integer(); });
    const bool refs = !ints && std::all_of(v.begin(), v.end(), [](const nlohmann::ordered_json& x) {
      return x.is_string() && tensor_reference(x.get_ref<const std::string&>()).has_value();
    });
    if (ints || refs) {
      a.kind = ints ? OpArg::Kind::int_list : OpArg::Kind::tensor_list;
      a.ints.reserve(v.size());
      for (const auto& x : v) a.ints.push_back(ints ? op_arg_from_json_at(x, depth + 1).integer : *tensor_reference(x.get_ref<const std::string&>()));
      return a;
    }
    a.items.reserve(v.size());
    for (const auto& x : v) a.items.push_back(op_arg_from_json_at(x, depth + 1));
    const auto all = [&](OpArg::Kind k) { return std::all_of(a.items.begin(), a.items.end(), [&](const OpArg& x) { return x.kind == k; }); };
    if (all(OpArg::Kind::integer)) {
      a.kind = OpArg::Kind::int_list;
    } else if (all(OpArg::Kind::tensor)) {
      a.kind = OpArg::Kind::tensor_list;
    } else {
      a.kind = OpArg::Kind::list;
      return a;
    }
    for (const auto& x : a.items) a.ints.push_back(x.integer);
    a.items.clear();
  } else if (v.is_object()) {
    if (depth + 1 > max_arg_nesting) throw error("ctshard table: arguments nest lists deeper than " + std::to_string(max_arg_nesting) + " levels");
    a.kind = OpArg::Kind::dict;  // flex attention's kernel options: {"BACKEND": "AUTO", ...}
    for (const auto& [k, x] : v.items()) {
      OpArg key;
      key.kind = OpArg::Kind::string;
      key.text = k;
      a.items.push_back(std::move(key));
      a.items.push_back(op_arg_from_json_at(x, depth + 1));
    }
  } else {
    throw error("ctshard table: unsupported argument " + shown_text(v.dump()) +
                " (use numbers, booleans, null, strings, \"$i\" for tensor input i, objects, or lists of these)");
  }
  return a;
}
}  // namespace

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

/// Every tensor reference of an argument, in order of appearance.
void collect_references(const OpArg& a, std::vector<std::int64_t>& refs) {
  if (a.kind == OpArg::Kind::tensor) refs.push_back(a.integer);
  if (a.kind == OpArg::Kind::tensor_list) refs.insert(refs.end(), a.ints.begin(), a.ints.end());
  for (const auto& item : a.items) collect_references(item, refs);
}

/// The OpCall of a table request: "$i" references place the tensors; without any, the tensors
/// come first and `args` follow them.
OpCall table_call(const TableOptions& o, std::vector<TensorMeta> tensors) {
  if (!o.args.is_array()) throw error("ctshard table: args must be a JSON array, got '" + o.args.dump() + "'");
  if (!o.kwargs.is_object()) throw error("ctshard table: kwargs must be a JSON object, got '" + o.kwargs.dump() + "'");
  if (o.args.size() + o.kwargs.size() > max_arg_count)
    throw error("ctshard table: " + std::to_string(o.args.size()) + " positional and " + std::to_string(o.kwargs.size()) +
                " keyword arguments, more than " + std::to_string(max_arg_count) + " in one call");
  std::vector<OpArg> args;
  std::vector<std::pair<std::string, OpArg>> kwargs;
  std::vector<std::int64_t> refs;
  for (const auto& a : o.args) {
    args.push_back(op_arg_from_json(a));
    collect_references(args.back(), refs);
  }
  for (const auto& [k, v] : o.kwargs.items()) {
    kwargs.emplace_back(k, op_arg_from_json(v));
    collect_references(kwargs.back().second, refs);
  }
  if (refs.empty()) return make_table_call(o.op, std::move(tensors), std::move(args), std::move(kwargs));
  for (std::size_t i = 0; i < refs.size(); ++i)
    if (refs[i] != static_cast<std::int64_t>(i))
      throw error("ctshard table: tensor references in args/kwargs must name $0, $1, ... each once, in order; reference " + std::to_string(i) +
                  " is $" + std::to_string(refs[i]));
  if (refs.size() != tensors.size())
    throw error("ctshard table: args/kwargs reference " + std::to_string(refs.size()) + " tensors but " + std::to_string(tensors.size()) +
                " shapes are given");
  return make_table_call(o.op, std::move(tensors), std::move(args), std::move(kwargs), TensorArgs::referenced);
}
}  // namespace

PreparedTable prepare_table(const TableOptions& o) {
  PreparedTable t;
  t.mesh = MeshTopology::build(o.mesh, o.devices_per_host, {}, o.cost_model);
  if (o.dtypes.size() != 1 && o.dtypes.size() != o.shapes.size())
    throw error("ctshard table: " + std::to_string(o.dtypes.size()) + " dtypes for " + std::to_string(o.shapes.size()) +
                " tensors (give one dtype, or one per tensor)");
  for (std::size_t i = 0; i < o.shapes.size(); ++i) {
    t.itemsizes.push_back(dtype_itemsize(o.dtypes[o.dtypes.size() == 1 ? 0 : i]));
    t.tensors.push_back(TensorMeta{TensorShape(std::span<const std::int64_t>(o.shapes[i])), t.itemsizes.back()});
  }
  for (const auto& s : o.inputs) t.specs.push_back(parse_spec(s));
  if (t.specs.size() != t.tensors.size())
    throw error("ctshard table: " + std::to_string(t.tensors.size()) + " shapes but " + std::to_string(t.specs.size()) + " input specs");
  t.call = table_call(o, t.tensors);
  t.call.current = t.specs;  // the dtensor rule set's op-strategy rules follow the current inputs
  t.call.mesh_sizes = o.mesh;
  const OpRegistry& registry = o.registry != nullptr ? *o.registry : registry_for(o.einsum_linearity, o.partial_passthrough, o.rule_set);
  t.factory = registry.find(t.call.op);
  if (t.factory == nullptr) throw error("ctshard table: op '" + o.op + "' (" + t.call.op + ") has no sharding rule");
  t.rule = (*t.factory)(t.call);
  return t;
}

SelectAlgo parse_algo(std::string_view name) {
  if (name == "search") return SelectAlgo::search;
  if (name == "enumerate") return SelectAlgo::enumerate;
  throw error("ctshard: algo must be 'search' or 'enumerate', got '" + std::string(name) + "'");
}

namespace {
/// The row of `c` as a strategies entry: out, in, cost (per input, µs), total.
nlohmann::json chosen_row(const StrategyEnumerator& e, const PreparedTable& t, const Choice& c) {
  nlohmann::json j;
  if (e.num_outputs() == 1) {
    j["out"] = to_string(e.spec_of(c, 0));
  } else {
    for (std::size_t k = 0; k < e.num_outputs(); ++k) j["out"].push_back(to_string(e.spec_of(c, k)));
  }
  j["in"] = nlohmann::json::array();
  j["cost"] = nlohmann::json::array();
  for (std::size_t i = 0; i < e.num_inputs(); ++i) {
    const Spec target = e.spec_of(c, e.num_outputs() + i);
    j["in"].push_back(to_string(target));
    j["cost"].push_back(cost_value(redistribute_cost(t.specs[i], target, t.tensors[i], t.mesh)));
  }
  j["total"] = cost_value(c.total_us);
  return j;
}

/// A position as JSON: the number, or null when it was not counted.
nlohmann::json index_value(std::optional<std::uint64_t> index) { return index ? nlohmann::json(*index) : nlohmann::json(nullptr); }
}  // namespace

nlohmann::json choice_json(const TableOptions& o) {
  const PreparedTable t = prepare_table(o);
  const SelectAlgo algo = parse_algo(o.algo);
  StrategyEnumerator enumerator(t.rule.rules, t.mesh, t.rule.uneven_inputs, t.rule.filter, t.rule.placeholder_fill);
  const Choice c = enumerator.choose(t.tensors, t.specs, algo);
  nlohmann::json j = chosen_row(enumerator, t, c);
  j["choice"] = {{"rule", std::string(to_string(c.rule))}};
  std::uint64_t rows = 1;
  for (std::size_t d = 0; d < t.mesh.size(); ++d) rows *= enumerator.filled_rules(t.specs).size();
  if (algo == SelectAlgo::enumerate) j["choice"]["index"] = c.index;
  else if (rows <= max_enumerated_rows) j["choice"]["index"] = index_value(enumerator.index_of(t.tensors, t.specs, c));
  return j;
}

nlohmann::json table_json(const TableOptions& o) {
  const PreparedTable t = prepare_table(o);
  const SelectAlgo algo = parse_algo(o.algo);
  const MeshTopology& mesh = t.mesh;
  const std::vector<TensorMeta>& tensors = t.tensors;
  const std::vector<std::size_t>& itemsizes = t.itemsizes;
  const std::vector<Spec>& specs = t.specs;
  const OpCall& call = t.call;
  const OpRule& rule = t.rule;
  StrategyEnumerator enumerator(rule.rules, mesh, rule.uneven_inputs, rule.filter, rule.placeholder_fill);

  nlohmann::json j;
  j["op"] = o.op;
  j["aten_op"] = call.op;
  j["shapes"] = o.shapes;
  j["mesh"] = o.mesh;
  j["devices_per_host"] = o.devices_per_host;
  j["cost_model"] = to_string(o.cost_model);
  if (std::all_of(itemsizes.begin(), itemsizes.end(), [&](std::size_t s) { return s == itemsizes.front(); }))
    j["itemsize"] = itemsizes.empty() ? dtype_itemsize(o.dtypes.front()) : itemsizes.front();
  else j["itemsize"] = itemsizes;
  j["inputs"] = nlohmann::json::array();
  for (const auto& s : specs) j["inputs"].push_back(to_string(s));
  j["allow_uneven"] = rule.uneven_inputs != UnevenInputs::reject;
  j["uneven_inputs"] = to_string(rule.uneven_inputs);
  j["placeholder_fill"] = std::string(to_string(rule.placeholder_fill));
  j["algo"] = o.algo;
  j["rule_set"] = std::string(to_string(parse_rule_set(o.rule_set)));
  j["rules_raw"] = rule_rows(rule.rules);
  const RuleSet& filled = enumerator.filled_rules(specs);
  j["rules"] = rule_rows(filled);
  std::uint64_t combos = 1;
  for (std::size_t d = 0; d < mesh.size(); ++d) combos *= filled.size();
  j["num_combinations"] = combos;
  if (algo == SelectAlgo::search) {
    const Choice choice = enumerator.choose(tensors, specs);
    const RowCounts counts = enumerator.count(tensors, specs);
    j["filtered"] = {{"mixed_partial", counts.mixed_partial}, {"unshardable", counts.unshardable}};
    if (counts.op_filter_counted && counts.op_filter > 0) j["filtered"]["op_filter"] = counts.op_filter;
    j["strategies"] = nlohmann::json::array({chosen_row(enumerator, t, choice)});
    j["choice"] = {{"index", index_value(enumerator.index_of(tensors, specs, choice))}, {"rule", std::string(to_string(choice.rule))}};
    // the first row of minimum total: the choice unless the no-redistribute row or the only row won
    const Choice first =
        choice.rule == ChoiceRule::min_cost || choice.rule == ChoiceRule::zero_cost ? choice : enumerator.first_minimum(tensors, specs);
    j["plain_min_index"] = index_value(enumerator.index_of(tensors, specs, first));
    return j;
  }
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
  const bool search = t.value("algo", "enumerate") == "search";
  const std::size_t chosen = t["choice"]["index"].is_null() ? 0 : t["choice"]["index"].get<std::size_t>();
  std::size_t i = search ? chosen : 0;
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
      {
        ins += (k ? ", " : "");
        ins += s["in"][k].get<std::string>();
      }
      {
        costs += (k ? " + " : "");
        costs += cost_text(s["cost"][k]);
      }
    }
    out << (i == chosen ? "* " : "  ") << std::setw(4) << i << "  (" << ins << ") -> " << join_specs(s["out"]) << "   cost " << costs << " = "
        << cost_text(s["total"]) << " us\n";
    ++i;
  }
  if (search) out << "(--algo search: only the chosen row; row numbers count surviving rows)\n";
  out << "chosen: row " << (t["choice"]["index"].is_null() ? std::string("?") : std::to_string(chosen)) << " ("
      << t["choice"]["rule"].get<std::string>() << ")\n";
}

}  // namespace ctshard::report
