// ctshard._ext: the C++ side of the Python package. Each function converts its Python arguments,
// releases the GIL for the C++ work, and returns the same JSON document the command line prints
// as plain Python objects. Every ctshard error (bad spec, unknown op, malformed graph) surfaces as
// ValueError with the library's message.
#include <nanobind/nanobind.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli_main.hpp"
#include "ctshard/fx/reader.hpp"
#include "ctshard/graph/global_plan.hpp"
#include "ctshard/graph/greedy.hpp"
#include "ctshard/graph/option_checks.hpp"
#include "ctshard/registry.hpp"
#include "ctshard/report/commands.hpp"
#include "ctshard/report/global_report.hpp"
#include "ctshard/report/plan_report.hpp"
#include "ctshard/report/rules_file.hpp"
#include "ctshard/report/summary_report.hpp"

namespace nb = nanobind;
using nlohmann::json;

namespace {

using namespace ctshard;

/// ascii(h): the object's repr with every non-ASCII character escaped (a lone surrogate
/// included), at most 200 characters, for messages.
std::string ascii_of(nb::handle h) {
  PyObject* a = PyObject_ASCII(h.ptr());
  if (a == nullptr) {
    PyErr_Clear();
    return "<unprintable object>";
  }
  Py_ssize_t size = 0;
  const char* data = PyUnicode_AsUTF8AndSize(a, &size);
  std::string out = data != nullptr ? std::string(data, static_cast<std::size_t>(size)) : std::string("<unprintable object>");
  if (data == nullptr) PyErr_Clear();
  Py_DECREF(a);
  return out.size() > 200 ? out.substr(0, 200) + "..." : out;
}

/// A Python str as UTF-8 text (`what` names the argument: "ctshard.table: op"). Raises
/// ValueError (ctshard::error) naming the argument for another type, and for text that has no
/// UTF-8 form (a lone surrogate such as "\ud800": nanobind's own conversion raised
/// `RuntimeError: std::bad_cast`).
std::string text_of(nb::handle h, const std::string& what) {
  if (!nb::isinstance<nb::str>(h)) throw error(what + " must be a string, got " + ascii_of(h));
  Py_ssize_t size = 0;
  const char* data = PyUnicode_AsUTF8AndSize(h.ptr(), &size);
  if (data == nullptr) {
    PyErr_Clear();
    throw error(what + " is not valid text (it has no UTF-8 form, e.g. a lone surrogate): " + ascii_of(h));
  }
  return {data, static_cast<std::size_t>(size)};
}

/// A Python int as int64. Raises ValueError (ctshard::error) naming the value when it does not fit.
std::int64_t int64_of(nb::handle h) {
  try {
    return nb::cast<std::int64_t>(h);
  } catch (const std::exception&) {
    throw error("ctshard: integer argument " + ascii_of(h) + " does not fit in int64");
  }
}

/// A Python int argument (`what` names it) as int64: ValueError for another type (bool
/// included) or a value beyond int64.
std::int64_t int_field(nb::handle h, const std::string& what) {
  if (!nb::isinstance<nb::int_>(h) || nb::isinstance<nb::bool_>(h)) throw error(what + " must be an integer, got " + ascii_of(h));
  try {
    return nb::cast<std::int64_t>(h);
  } catch (const std::exception&) {
    throw error(what + " = " + ascii_of(h) + " does not fit in int64");
  }
}

/// A Python number argument (int or float; `what` names it) as a double: ValueError for another
/// type (the range is checked by graph::check_global_options).
double number_field(nb::handle h, const std::string& what) {
  if (nb::isinstance<nb::bool_>(h) || !(nb::isinstance<nb::int_>(h) || nb::isinstance<nb::float_>(h)))
    throw error(what + " must be a number, got " + ascii_of(h));
  const double x = PyFloat_AsDouble(h.ptr());  // an int beyond double's range: OverflowError
  if (x == -1.0 && PyErr_Occurred() != nullptr) {
    PyErr_Clear();
    throw error(what + " = " + ascii_of(h) + " is beyond the range of a double");
  }
  return x;
}

/// Python value -> JSON (None, bool, int, float, str, list/tuple, dict in insertion order; at most
/// report::max_arg_nesting levels of lists, report::max_arg_values values in all, counted in
/// `values`). Raises ValueError naming the value for anything else.
nlohmann::ordered_json to_json(nb::handle h, std::size_t& values, std::size_t depth = 0) {
  if (++values > report::max_arg_values)
    throw error("ctshard: arguments hold more than " + std::to_string(report::max_arg_values) + " values (numbers, strings, lists)");
  if (h.is_none()) return nullptr;
  if (nb::isinstance<nb::bool_>(h)) return nb::cast<bool>(h);
  if (nb::isinstance<nb::int_>(h)) return int64_of(h);
  if (nb::isinstance<nb::float_>(h)) return nb::cast<double>(h);
  if (nb::isinstance<nb::str>(h)) return text_of(h, "ctshard: a string argument");
  if ((nb::isinstance<nb::list>(h) || nb::isinstance<nb::tuple>(h) || nb::isinstance<nb::dict>(h)) && depth >= report::max_arg_nesting)
    throw error("ctshard: arguments nest lists deeper than " + std::to_string(report::max_arg_nesting) + " levels");
  if (nb::isinstance<nb::list>(h) || nb::isinstance<nb::tuple>(h)) {
    nlohmann::ordered_json a = nlohmann::ordered_json::array();
    for (nb::handle item : h) a.push_back(to_json(item, values, depth + 1));
    return a;
  }
  if (nb::isinstance<nb::dict>(h)) {
    nlohmann::ordered_json o = nlohmann::ordered_json::object();
    for (auto [k, v] : nb::borrow<nb::dict>(h)) {
      if (!nb::isinstance<nb::str>(k)) throw error("ctshard: keyword names must be strings, got " + ascii_of(k));
      o[text_of(k, "ctshard: a keyword name")] = to_json(v, values, depth + 1);
    }
    return o;
  }
  throw error("ctshard: unsupported argument " + ascii_of(h) +
              " (use None, bools, numbers, strings, \"$i\" for tensor input i, lists, or a dict of keywords)");
}

/// JSON -> Python value (dicts keep their key order).
nb::object to_python(const json& j) {
  switch (j.type()) {
    case json::value_t::null: return nb::none();
    case json::value_t::boolean: return nb::bool_(j.get<bool>());
    case json::value_t::number_integer: return nb::int_(j.get<std::int64_t>());
    case json::value_t::number_unsigned: return nb::int_(j.get<std::uint64_t>());
    case json::value_t::number_float: return nb::float_(j.get<double>());
    case json::value_t::string: return nb::str(j.get_ref<const std::string&>().c_str());
    case json::value_t::array: {
      nb::list l;
      for (const auto& x : j) l.append(to_python(x));
      return std::move(l);
    }
    case json::value_t::object: {
      nb::dict d;
      for (const auto& [k, v] : j.items()) d[nb::str(k.c_str())] = to_python(v);
      return std::move(d);
    }
    default: return nb::none();
  }
}

/// Runs `work` (which builds a JSON document) without the GIL, then converts the result.
template <class Work>
nb::object without_gil(Work&& work) {
  json result;
  {
    nb::gil_scoped_release released;
    result = work();
  }
  return to_python(result);
}

std::vector<std::int64_t> int_list(nb::handle h, const char* what) {
  if (nb::isinstance<nb::str>(h) || !(nb::isinstance<nb::list>(h) || nb::isinstance<nb::tuple>(h)))
    throw error(std::string("ctshard: ") + what + " must be a list of integers, got " + ascii_of(h));
  std::vector<std::int64_t> out;
  for (nb::handle x : h) {
    if (!nb::isinstance<nb::int_>(x) || nb::isinstance<nb::bool_>(x))
      throw error(std::string("ctshard: ") + what + " must be a list of integers, got " + ascii_of(h));
    out.push_back(int64_of(x));
  }
  return out;
}

std::vector<std::string> string_list(nb::handle h, const char* what) {
  if (nb::isinstance<nb::str>(h) || !(nb::isinstance<nb::list>(h) || nb::isinstance<nb::tuple>(h)))
    throw error(std::string("ctshard: ") + what + " must be a list of strings, got " + ascii_of(h));
  std::vector<std::string> out;
  for (nb::handle x : h) {
    if (!nb::isinstance<nb::str>(x)) throw error(std::string("ctshard: ") + what + " must be a list of strings, got " + ascii_of(h));
    out.push_back(text_of(x, std::string("ctshard: ") + what + " item"));
  }
  return out;
}

// ---- the user's rules (ctshard.register_rule) -------------------------------------------------

/// An OpArg as the JSON of table arguments: a tensor is "$i", lists and dicts as lists (a dict's
/// items key, value, ...), a literal ctshard does not interpret as its text.
json op_arg_json(const OpArg& a) {
  switch (a.kind) {
    case OpArg::Kind::none: return nullptr;
    case OpArg::Kind::tensor: return "$" + std::to_string(a.integer);
    case OpArg::Kind::integer: return a.integer;
    case OpArg::Kind::floating: return a.floating;
    case OpArg::Kind::boolean: return a.integer != 0;
    case OpArg::Kind::int_list: return a.ints;
    case OpArg::Kind::tensor_list: {
      json l = json::array();
      for (auto i : a.ints) l.push_back("$" + std::to_string(i));
      return l;
    }
    case OpArg::Kind::dict: {
      json o = json::object();
      for (std::size_t i = 0; i + 1 < a.items.size(); i += 2)
        o[a.items[i].kind == OpArg::Kind::string ? a.items[i].text : op_arg_json(a.items[i]).dump()] = op_arg_json(a.items[i + 1]);
      return o;
    }
    case OpArg::Kind::list: {
      json l = json::array();
      for (const auto& x : a.items) l.push_back(op_arg_json(x));
      return l;
    }
    case OpArg::Kind::string:
    case OpArg::Kind::other: return a.text;
  }
  return nullptr;
}

/// A Python callable kept by a rule factory: copies share it (no reference counting without the
/// GIL); the last one releases it with the GIL, or leaks it once the interpreter is gone.
using PyCallable = std::shared_ptr<nb::object>;
PyCallable keep_callable(nb::handle fn) {
  return PyCallable(new nb::object(nb::borrow(fn)), [](nb::object* o) {
    if (Py_IsInitialized() == 0) return;  // interpreter finalized: nothing to release
    nb::gil_scoped_acquire gil;
    delete o;
  });
}

/// The factory of a rule given as `fn(shapes, args, kwargs) -> rows`: each call (with the GIL)
/// passes the tensor inputs' shapes, the arguments (tensors as "$i") and keywords, and reads the
/// rows as a rules file's (report::parse_user_rule, `outputs` output columns).
RuleFactory python_rule_factory(const std::string& op, std::size_t outputs, UserRuleOptions options, PyCallable fn) {
  return [op, outputs, options, fn](const OpCall& call) {
    json rows;
    {
      nb::gil_scoped_acquire gil;
      nb::list shapes;
      for (const auto& t : call.tensors) {
        nb::list shape;
        for (std::size_t d = 0; d < t.shape.rank; ++d) shape.append(nb::int_(t.shape[d]));
        shapes.append(shape);
      }
      json args = json::array(), kwargs = json::object();
      for (const auto& a : call.args) args.push_back(op_arg_json(a));
      for (const auto& [k, v] : call.kwargs) kwargs[k] = op_arg_json(v);
      try {
        nb::object result = (*fn)(shapes, to_python(args), to_python(kwargs));
        std::size_t values = 0;
        rows = json(to_json(result, values));
      } catch (const nb::python_error& e) {
        const std::string kind = nb::cast<std::string>(e.type().attr("__name__"));
        throw error("ctshard: rule '" + op + "': fn raised " + kind + ": " + nb::cast<std::string>(nb::str(e.value())));
      } catch (const error& e) {
        throw error("ctshard: rule '" + op + "': fn returned " + e.what());
      }
    }
    UserRule rule = report::parse_user_rule(json{{"op", op}, {"outputs", outputs}, {"rows", rows}}, "ctshard: rule '" + op + "': fn's rows");
    rule.options = options;
    return user_rule_factory(rule)(call);
  };
}

/// The rules registered from Python, and the registries built with them (one per rule-set
/// names, rebuilt when the rules change). Guarded by `mutex`: plans run without the GIL.
struct UserRules {
  std::mutex mutex;
  std::map<std::string, RuleFactory> factories;  // op -> factory
  std::map<std::string, json> described;         // op -> what was registered (registered_rules())
  std::map<std::tuple<std::string, std::string, std::string>, std::shared_ptr<const OpRegistry>> registries;
};
UserRules& user_rules() {
  static UserRules* rules = new UserRules();  // never destroyed: factories may hold Python callables
  return *rules;
}

/// `spec`: {"op", "rows"?, "kind"?, "outputs"?, "uneven"?} as the rules file has; `fn`: a callable
/// or None. Throws ctshard::error (ValueError) naming the rule and the entry.
void register_rule(nb::handle op_h, nb::handle spec, nb::handle fn) {
  const std::string op = text_of(op_h, "ctshard.register_rule: op");
  std::size_t values = 0;
  const json description = json(to_json(spec, values));
  RuleFactory factory;
  if (fn.is_none()) {
    factory = user_rule_factory(report::parse_user_rule(description, "ctshard.register_rule"));
  } else {
    if (PyCallable_Check(fn.ptr()) == 0) throw error("ctshard.register_rule ('" + op + "'): fn must be callable, got " + ascii_of(fn));
    json probe = description;  // outputs / uneven checked as a rules file's, with a stand-in row
    probe.erase("rows");
    probe["kind"] = "replicate";
    const UserRule checked = report::parse_user_rule(probe, "ctshard.register_rule");
    factory = python_rule_factory(op, checked.outputs, checked.options, keep_callable(fn));
  }
  UserRules& u = user_rules();
  std::lock_guard lock(u.mutex);
  u.factories[op] = std::move(factory);
  u.described[op] = description;
  u.registries.clear();
}

/// Removes the rule registered for `op`; False when there was none.
bool unregister_rule(nb::handle op_h) {
  const std::string op = text_of(op_h, "ctshard.unregister_rule: op");
  UserRules& u = user_rules();
  std::lock_guard lock(u.mutex);
  if (u.factories.erase(op) == 0) return false;
  u.described.erase(op);
  u.registries.clear();
  return true;
}

/// The registry for the three rule-set names with the rules registered from Python (nullptr when
/// none are: registry_for's own registry serves). Throws ctshard::error for a bad name.
std::shared_ptr<const OpRegistry> registry_with_user_rules(const std::string& lin, const std::string& pp, const std::string& rs) {
  const OpRegistry& base = report::registry_for(lin, pp, rs);
  UserRules& u = user_rules();
  std::lock_guard lock(u.mutex);
  if (u.factories.empty()) return nullptr;
  auto& slot = u.registries[{lin, pp, rs}];
  if (!slot) {
    auto r = std::make_shared<OpRegistry>(base);
    for (const auto& [op, f] : u.factories) {
      if (r->contains(op)) r->replace(op, f);
      else r->add(op, f);
    }
    slot = std::move(r);
  }
  return slot;
}

/// The ops with a user rule, and what was registered for each.
nb::object registered_rules() {
  UserRules& u = user_rules();
  json out = json::object();
  {
    std::lock_guard lock(u.mutex);
    for (const auto& [op, d] : u.described) out[op] = d;
  }
  return to_python(out);
}

/// Throws ctshard::error naming the node when a node whose op has a user rule fell back because
/// the rule did not fit its call.
void check_python_rule_fallbacks(const graph::Plan& plan) {
  UserRules& u = user_rules();
  std::vector<UserRule> ops;
  {
    std::lock_guard lock(u.mutex);
    for (const auto& [op, f] : u.factories) ops.push_back(UserRule{op, RuleKind::replicate});
  }
  report::check_user_rule_fallbacks(plan, ops);
}

/// The table request of table() / choose() / _bench_choose(): every argument decoded and checked
/// here (strings as text_of, ints as int_field; ValueError naming the argument).
report::TableOptions table_options(nb::handle op, nb::handle shapes, nb::handle mesh, nb::handle inputs, nb::handle args, nb::handle kwargs,
                                   nb::handle dtype, nb::handle devices_per_host, nb::handle einsum_linearity, nb::handle cost_model,
                                   const std::string& algo_default, nb::handle algo, nb::handle partial_passthrough, nb::handle rule_set) {
  report::TableOptions o;
  o.op = text_of(op, "ctshard.table: op");
  if (nb::isinstance<nb::str>(shapes) || !(nb::isinstance<nb::list>(shapes) || nb::isinstance<nb::tuple>(shapes)))
    throw error("ctshard.table: shapes must be a list of shapes (lists of integers; [] for 0-d), got " + ascii_of(shapes));
  for (nb::handle s : shapes) o.shapes.push_back(int_list(s, "table: each shape"));
  o.mesh = int_list(mesh, "table: mesh");
  o.inputs = string_list(inputs, "table: inputs");
  o.dtypes = nb::isinstance<nb::str>(dtype) ? std::vector<std::string>{text_of(dtype, "ctshard.table: dtype")} : string_list(dtype, "table: dtype");
  o.devices_per_host = int_field(devices_per_host, "ctshard.table: devices_per_host");
  o.einsum_linearity = text_of(einsum_linearity, "ctshard.table: einsum_linearity");
  o.partial_passthrough = partial_passthrough.is_none() ? std::string("ctshard") : text_of(partial_passthrough, "ctshard.table: partial_passthrough");
  o.rule_set = rule_set.is_none() ? std::string("ctshard") : text_of(rule_set, "ctshard.table: rule_set");
  (void)report::registry_for(o.einsum_linearity, o.partial_passthrough, o.rule_set);  // a bad name is an error before any work
  o.cost_model = report::parse_cost_model(text_of(cost_model, "ctshard.table: cost_model"));
  o.algo = algo.is_none() ? algo_default : text_of(algo, "ctshard.table: algo");
  (void)report::parse_algo(o.algo);  // a bad name is an error before any work
  std::size_t values = 0;
  o.args = args.is_none() ? nlohmann::ordered_json::array() : to_json(args, values);
  o.kwargs = kwargs.is_none() ? nlohmann::ordered_json::object() : to_json(kwargs, values);
  return o;
}

nb::object table(nb::handle op, nb::handle shapes, nb::handle mesh, nb::handle inputs, nb::handle args, nb::handle kwargs, nb::handle dtype,
                 nb::handle devices_per_host, nb::handle einsum_linearity, nb::handle cost_model, nb::handle algo, nb::handle partial_passthrough,
                 nb::handle rule_set) {
  report::TableOptions o = table_options(op, shapes, mesh, inputs, args, kwargs, dtype, devices_per_host, einsum_linearity, cost_model, "enumerate",
                                         algo, partial_passthrough, rule_set);
  const auto registry = registry_with_user_rules(o.einsum_linearity, o.partial_passthrough, o.rule_set);
  o.registry = registry.get();
  return without_gil([&] { return report::table_json(o); });
}

nb::object choose(nb::handle op, nb::handle shapes, nb::handle mesh, nb::handle inputs, nb::handle args, nb::handle kwargs, nb::handle dtype,
                  nb::handle devices_per_host, nb::handle einsum_linearity, nb::handle cost_model, nb::handle algo, nb::handle partial_passthrough,
                  nb::handle rule_set) {
  report::TableOptions o = table_options(op, shapes, mesh, inputs, args, kwargs, dtype, devices_per_host, einsum_linearity, cost_model, "search",
                                         algo, partial_passthrough, rule_set);
  const auto registry = registry_with_user_rules(o.einsum_linearity, o.partial_passthrough, o.rule_set);
  o.registry = registry.get();
  return without_gil([&] { return report::choice_json(o); });
}

/// Benchmark hook: the C++ API's choice latency for one request, timed inside C++ (no Python in
/// the loop). `cold_ns`: rule built by the op's factory, a new StrategyEnumerator, choose() — what
/// a caller pays with nothing cached; `warm_ns`: choose() on a kept enumerator whose per-input
/// cost memo is cleared by alternating two input metas (DTensor-style repeated calls on new
/// shapes); `repeat_ns`: the same query again (the enumerator's remembered answer).
nb::object bench_choose(nb::handle op, nb::handle shapes, nb::handle mesh, nb::handle inputs, nb::handle args, nb::handle kwargs, nb::handle dtype,
                        nb::handle devices_per_host, nb::handle einsum_linearity, std::int64_t repeat, nb::handle cost_model) {
  const report::TableOptions o = table_options(op, shapes, mesh, inputs, args, kwargs, dtype, devices_per_host, einsum_linearity, cost_model,
                                               "enumerate", nb::none(), nb::none(), nb::none());
  return without_gil([&] {
    const report::PreparedTable t = report::prepare_table(o);
    using clock = std::chrono::steady_clock;
    const auto per_call = [&](auto&& body) {
      const auto start = clock::now();
      for (std::int64_t r = 0; r < repeat; ++r) body(r);
      return static_cast<double>(std::chrono::duration_cast<std::chrono::nanoseconds>(clock::now() - start).count()) / static_cast<double>(repeat);
    };
    std::size_t sink = 0;
    const double cold = per_call([&](std::int64_t) {
      const OpRule rule = (*t.factory)(t.call);
      StrategyEnumerator e(rule.rules, t.mesh, rule.uneven_inputs, rule.filter, rule.placeholder_fill);
      sink += e.choose(t.tensors, t.specs).digits[0];
    });
    // Two metas that differ only in itemsize: every call sees a changed input and reprices.
    std::vector<TensorMeta> other = t.tensors;
    for (auto& m : other) m.itemsize = m.itemsize == 4 ? 2 : 4;
    StrategyEnumerator e(t.rule.rules, t.mesh, t.rule.uneven_inputs, t.rule.filter, t.rule.placeholder_fill);
    const double warm = per_call([&](std::int64_t r) { sink += e.choose(r % 2 == 0 ? t.tensors : other, t.specs).digits[0]; });
    sink += e.choose(other, t.specs).digits[0];  // whatever the parity of `repeat`, the next loop repeats one query
    const double again = per_call([&](std::int64_t) { sink += e.choose(other, t.specs).digits[0]; });
    return json{{"cold_ns", cold}, {"warm_ns", warm}, {"repeat_ns", again}, {"sink", sink}};
  });
}

nb::object cost(nb::handle shape, nb::handle mesh, nb::handle src, nb::handle dst, nb::handle dtype, nb::handle devices_per_host,
                nb::handle cost_model) {
  report::CostOptions o;
  o.shape = int_list(shape, "cost: shape");
  o.mesh = int_list(mesh, "cost: mesh");
  o.from = text_of(src, "ctshard.cost: src");
  o.to = text_of(dst, "ctshard.cost: dst");
  o.dtype = text_of(dtype, "ctshard.cost: dtype");
  o.devices_per_host = int_field(devices_per_host, "ctshard.cost: devices_per_host");
  o.cost_model = report::parse_cost_model(text_of(cost_model, "ctshard.cost: cost_model"));
  return without_gil([&] { return report::cost_json(o); });
}

// ---- plan ------------------------------------------------------------------------------------

/// One argument of a node record built by ctshard/_graph.py: plain values, lists, and the three
/// tagged dicts {"node": name[, "index": i]}, {"opaque": text} and {"dict": [[key, value], ...]}
/// (a Python dict argument, e.g. flex attention's kernel options). Lists and dicts nest at most
/// fx::max_nesting levels, as in graph text; deeper raises ctshard::error.
fx::Arg to_fx_arg(nb::handle h, std::size_t depth = 0) {
  if (h.is_none()) return fx::Arg::make_none();
  if (nb::isinstance<nb::bool_>(h)) return fx::Arg::make_bool(nb::cast<bool>(h));
  if (nb::isinstance<nb::int_>(h)) return fx::Arg::make_int(int64_of(h));
  if (nb::isinstance<nb::float_>(h)) return fx::Arg::make_float(nb::cast<double>(h));
  if (nb::isinstance<nb::str>(h)) return fx::Arg::make_string(text_of(h, "ctshard.plan: a node argument"));
  if (nb::isinstance<nb::list>(h) || nb::isinstance<nb::tuple>(h)) {
    if (depth >= fx::max_nesting) throw error("ctshard.plan: node arguments nest lists deeper than " + std::to_string(fx::max_nesting) + " levels");
    std::vector<fx::Arg> items;
    for (nb::handle x : h) items.push_back(to_fx_arg(x, depth + 1));
    return fx::Arg::make_list(std::move(items));
  }
  if (nb::isinstance<nb::dict>(h)) {
    nb::dict d = nb::borrow<nb::dict>(h);
    if (d.contains("node")) {
      std::optional<std::int64_t> index;
      if (d.contains("index")) index = int64_of(d["index"]);
      return fx::Arg::make_node(text_of(d["node"], "ctshard.plan: a node reference"), index);
    }
    if (d.contains("opaque")) return fx::Arg::make_opaque(text_of(d["opaque"], "ctshard.plan: a node argument"));
    if (d.contains("dict")) {
      if (depth >= fx::max_nesting) throw error("ctshard.plan: node arguments nest lists deeper than " + std::to_string(fx::max_nesting) + " levels");
      std::vector<std::pair<fx::Arg, fx::Arg>> entries;
      for (nb::handle kv : d["dict"]) {
        nb::sequence pair = nb::borrow<nb::sequence>(kv);
        if (nb::len(pair) != 2) throw error("ctshard.plan: a dict argument's entries are [key, value] pairs, got " + ascii_of(kv));
        entries.emplace_back(to_fx_arg(pair[0], depth + 1), to_fx_arg(pair[1], depth + 1));
      }
      return fx::Arg::make_dict(std::move(entries));
    }
  }
  throw error("ctshard.plan: unsupported node argument " + ascii_of(h));
}

/// A size expression of node `node`, parsed as the text reader does (fx::SizeExpr grammar).
/// Throws ctshard::error naming the node for malformed text.
fx::SizeExpr parsed_expression(const std::string& text, const std::string& node) {
  try {
    return fx::SizeExpr::parse(text);
  } catch (const std::invalid_argument& e) {
    throw error("ctshard.plan: node '" + node + "': " + e.what());
  }
}

/// An output shape of a record: ints, and strings for symbolic sizes (`str(SymInt)`), which
/// become the same symbolic dims (TensorType::dim_exprs) as the text reader's.
void shape_from_record(nb::handle h, fx::TensorType& type, const std::string& node) {
  const auto bad = [&] {
    return error("ctshard.plan: node '" + node + "': an output shape must be a list of integers and size expressions, got " + ascii_of(h));
  };
  if (nb::isinstance<nb::str>(h) || !(nb::isinstance<nb::list>(h) || nb::isinstance<nb::tuple>(h))) throw bad();
  std::vector<std::optional<fx::SizeExpr>> exprs;
  bool symbolic = false;
  for (nb::handle x : h) {
    if (nb::isinstance<nb::str>(x)) {
      std::string text = text_of(x, "ctshard.plan: node '" + node + "': a size expression");
      fx::SizeExpr expr = parsed_expression(text, node);
      if (expr.symbols().empty())
        throw error("ctshard.plan: node '" + node + "': size '" + text + "' is neither an integer nor an expression of symbols");
      type.shape.push_back(-1);
      exprs.push_back(std::move(expr));
      symbolic = true;
    } else if (nb::isinstance<nb::int_>(x) && !nb::isinstance<nb::bool_>(x)) {
      const auto value = int64_of(x);
      if (value < 0) throw bad();
      type.shape.push_back(value);
      exprs.emplace_back();
    } else {
      throw bad();
    }
  }
  if (symbolic) type.dim_exprs = std::move(exprs);
}

/// A graph from node records (name, op, target, args, kwargs, outputs, sym[, submodule]); outputs
/// are (dtype short name or "", shape) pairs, sym the expression of a symbolic integer or "". A
/// get_attr record of a submodule (flex attention's score_mod) may carry the submodule's own
/// records as an 8th field, which become Graph::submodules (as the text reader reads
/// print_readable's nested classes); at most fx::max_submodule_depth levels. Node references must
/// name earlier nodes.
fx::Graph graph_from_records(nb::handle records, const std::string& source, std::size_t depth = 0) {
  fx::Graph g;
  g.source_name = source;
  std::size_t line = 0;
  for (nb::handle r : records) {
    nb::tuple t = nb::cast<nb::tuple>(r);
    if (t.size() != 7 && t.size() != 8)
      throw error("ctshard.plan: a node record has 7 fields (name, op, target, args, kwargs, outputs, sym) and optionally the submodule's records");
    fx::Node n;
    n.name = text_of(t[0], "ctshard.plan: a node name");
    n.kind = text_of(t[1], "ctshard.plan: node '" + n.name + "': its op");
    n.target = text_of(t[2], "ctshard.plan: node '" + n.name + "': its target");
    n.line = ++line;
    for (nb::handle a : t[3]) n.args.push_back(to_fx_arg(a));
    for (auto [k, v] : nb::borrow<nb::dict>(t[4]))
      n.kwargs.emplace_back(text_of(k, "ctshard.plan: node '" + n.name + "': a keyword name"), to_fx_arg(v));
    for (nb::handle o : t[5]) {
      nb::tuple ot = nb::cast<nb::tuple>(o);
      fx::TensorType type;
      type.dtype = text_of(ot[0], "ctshard.plan: node '" + n.name + "': a dtype");
      if (!type.dtype.empty() && !fx::is_known_dtype(type.dtype))
        throw error("ctshard.plan: node '" + n.name + "' has an unknown dtype '" + type.dtype + "'");
      shape_from_record(ot[1], type, n.name);
      n.outputs.push_back(std::move(type));
    }
    n.sym_expr = text_of(t[6], "ctshard.plan: node '" + n.name + "': its symbolic expression");
    if (!n.sym_expr.empty()) {
      (void)parsed_expression(n.sym_expr, n.name);  // checked as the text reader checks it
      if (!n.outputs.empty()) throw error("ctshard.plan: node '" + n.name + "' is a symbolic value and has tensor outputs");
    }
    for (const auto& a : n.args)
      if (a.is_node() && g.find(a.text) == nullptr) throw error("ctshard.plan: node '" + n.name + "' refers to unknown node '" + a.text + "'");
    if (t.size() == 8 && !t[7].is_none() && g.submodule(n.target) == nullptr) {
      fx::Submodule sub;
      sub.name = n.target;
      if (depth + 1 > fx::max_submodule_depth) sub.unreadable = "submodules nested more than " + std::to_string(fx::max_submodule_depth) + " deep";
      else sub.graph = graph_from_records(t[7], source + ":" + n.target, depth + 1);
      g.submodules.push_back(std::move(sub));
    }
    if (n.kind == "output" && !n.args.empty()) {
      const fx::Arg& ret = n.args.front();
      const auto add = [&](const fx::Arg& v) { g.outputs.push_back(v.is_node() ? v.text : std::string()); };
      if (ret.kind == fx::ArgKind::list)
        for (const auto& v : ret.items) add(v);
      else add(ret);
    }
    g.nodes.push_back(std::move(n));
  }
  return g;
}

std::map<std::string, std::int64_t> symbols_of(nb::handle sym) {
  std::map<std::string, std::int64_t> out;
  if (sym.is_none()) return out;
  if (!nb::isinstance<nb::dict>(sym)) throw error("ctshard.plan: sym must map symbol names to integers, got " + ascii_of(sym));
  for (auto [k, v] : nb::borrow<nb::dict>(sym)) {
    if (!nb::isinstance<nb::str>(k) || !nb::isinstance<nb::int_>(v) || nb::isinstance<nb::bool_>(v))
      throw error("ctshard.plan: sym must map symbol names to integers, got " + ascii_of(k) + ": " + ascii_of(v));
    const std::string name = text_of(k, "ctshard.plan: a sym name");
    std::int64_t value = 0;
    try {
      value = nb::cast<std::int64_t>(v);
    } catch (const std::exception&) {
      throw error("ctshard.plan: sym " + name + "=" + ascii_of(v) + " does not fit 64 bits");
    }
    out.emplace(name, value);
  }
  return out;
}

std::map<std::string, Spec> placements_of(nb::handle place) {
  std::map<std::string, Spec> out;
  if (place.is_none()) return out;
  if (!nb::isinstance<nb::dict>(place)) throw error("ctshard.plan: place must map input names to spec strings");
  for (auto [k, v] : nb::borrow<nb::dict>(place)) {
    if (!nb::isinstance<nb::str>(k) || !nb::isinstance<nb::str>(v))
      throw error("ctshard.plan: place must map input names to spec strings, got " + ascii_of(k) + ": " + ascii_of(v));
    const std::string name = text_of(k, "ctshard.plan: a place name");
    out.emplace(name, parse_spec(text_of(v, "ctshard.plan: place['" + name + "']")));
  }
  return out;
}

/// What `graph` is: the embedded default (None), graph text, a path, or node records.
enum class GraphSource { embedded_default, text, path, records };

/// The options of algo="global" from a dict (None: the greedy plan): numbers checked by the
/// command line's rules (graph::check_global_options), every value's type too. Raises ValueError
/// naming the option and the value.
std::optional<graph::GlobalOptions> global_options_of(nb::handle global) {
  if (global.is_none()) return std::nullopt;
  if (!nb::isinstance<nb::dict>(global)) throw error("ctshard.plan: global options must be a dict");
  graph::GlobalOptions o;
  const auto flag = [](nb::handle v, const std::string& what) {
    if (!nb::isinstance<nb::bool_>(v)) throw error(what + " must be True or False, got " + ascii_of(v));
    return nb::cast<bool>(v);
  };
  for (auto [k, v] : nb::borrow<nb::dict>(global)) {
    const std::string key = text_of(k, "ctshard.plan: a global option name");
    const std::string what = "ctshard.plan: " + key;
    if (key == "time_limit_ms") o.time_limit_ms = number_field(v, what);
    else if (key == "free_inputs") o.free_inputs = flag(v, what);
    else if (key == "every_candidate") o.every_candidate = flag(v, what);
    else if (key == "device_tflops") o.device_tflops = number_field(v, what);
    else if (key == "device_gbps") o.device_gbps = number_field(v, what);
    else if (key == "memory_budget_gib") o.memory_budget_gib = number_field(v, what);
    else if (key == "max_memory_mib") o.max_memory_mib = number_field(v, what);
    else if (key == "verbose") o.progress = flag(v, what) ? &std::cerr : nullptr;  // the process's stderr
    else if (key == "ties") {
      if (!nb::isinstance<nb::list>(v) && !nb::isinstance<nb::tuple>(v)) throw error("ctshard.plan: ties must be a list of pairs of value names");
      for (nb::handle t : v) {
        if (!(nb::isinstance<nb::list>(t) || nb::isinstance<nb::tuple>(t)) || nb::len(t) != 2)
          throw error("ctshard.plan: ties must be pairs of value names, got " + ascii_of(t));
        o.ties.emplace_back(text_of(t[0], "ctshard.plan: a tie's first name"), text_of(t[1], "ctshard.plan: a tie's second name"));
      }
    } else if (key == "training") {  // None: an AOT joint graph's gradients when free inputs
      if (!v.is_none()) {
        o.training.enabled = flag(v, what);
        o.training.detect = o.training.enabled;
      }
    } else if (key == "hand_plans") {
      o.hand_plans = flag(v, what);
    } else if (key == "optimizer") {
      o.training.optimizer = graph::parse_optimizer(text_of(v, what), "ctshard.plan");
    } else if (key == "gradients") {
      if (!nb::isinstance<nb::dict>(v)) throw error("ctshard.plan: gradients must map gradient value names to parameter input names");
      for (auto [gk, gv] : nb::borrow<nb::dict>(v))
        o.training.gradients.emplace_back(text_of(gk, "ctshard.plan: a gradient name"), text_of(gv, "ctshard.plan: a parameter name"));
    } else {
      throw error("ctshard.plan: unknown global option '" + key + "'");
    }
  }
  graph::check_global_options(o, "ctshard.plan", graph::OptionNames::python);
  return o;
}

/// The greedy plan's options beyond the common ones, from a dict (None: the defaults):
/// data_parallel (bool), batch_size (int or None), repair_time_limit_ms (float >= 0).
void plan_options_of(nb::handle extra, graph::PlanOptions& o, bool& summary, std::map<std::string, std::string>& layers) {
  if (extra.is_none()) return;
  if (!nb::isinstance<nb::dict>(extra)) throw error("ctshard.plan: plan options must be a dict");
  for (auto [k, v] : nb::borrow<nb::dict>(extra)) {
    const std::string key = text_of(k, "ctshard.plan: a plan option name");
    if (key == "data_parallel") {
      o.data_parallel = nb::cast<bool>(v);
    } else if (key == "batch_size") {
      if (v.is_none()) continue;
      if (!nb::isinstance<nb::int_>(v) || nb::isinstance<nb::bool_>(v))
        throw error("ctshard.plan: batch_size must be an integer, got " + ascii_of(v));
      const std::int64_t b = int64_of(v);
      if (b < 1) throw error("ctshard.plan: batch_size " + std::to_string(b) + ": a batch size must be at least 1");
      o.batch_size = b;
    } else if (key == "repair_time_limit_ms") {
      const double ms = nb::cast<double>(v);
      if (!(ms >= 0) || !std::isfinite(ms)) throw error("ctshard.plan: repair_time_limit_ms must be a finite number >= 0");
      o.repair_time_limit_ms = ms;
    } else if (key == "summary") {
      summary = nb::cast<bool>(v);
    } else if (key == "layers") {  // op node -> module FQN (nn_module_stack), for the summary
      if (!nb::isinstance<nb::dict>(v)) throw error("ctshard.plan: layers must map node names to module names");
      for (auto [node, module] : nb::borrow<nb::dict>(v))
        layers[text_of(node, "ctshard.plan: a layers node name")] = text_of(module, "ctshard.plan: a layers module name");
    } else {
      throw error("ctshard.plan: unknown plan option '" + key + "'");
    }
  }
  if (o.batch_size && !o.data_parallel) throw error("ctshard.plan: batch_size needs data_parallel=True");
}

nb::object plan(GraphSource kind, nb::handle graph, const std::string& source, nb::handle mesh, nb::handle place, nb::handle devices_per_host,
                nb::handle einsum_linearity, nb::handle sym, nb::handle cost_model, nb::handle global, nb::handle algo,
                nb::handle partial_passthrough, nb::handle rule_set, nb::handle extra) {
  std::optional<graph::GlobalOptions> global_options = global_options_of(global);
  if (global_options) {  // one deadline for the request, from here (reading the graph included)
    global_options->deadline = solve::Deadline::after(global_options->time_limit_ms / 1000.0);
  }
  graph::PlanOptions options;
  options.algo = report::parse_algo(text_of(algo, "ctshard.plan: algo"));
  options.mesh = int_list(mesh, "plan: mesh");
  options.devices_per_host = int_field(devices_per_host, "ctshard.plan: devices_per_host");
  options.placements = placements_of(place);
  options.symbols = symbols_of(sym);
  options.cost_model = report::parse_cost_model(text_of(cost_model, "ctshard.plan: cost_model"));
  bool summary = false;  // add the per-layer summary (report::plan_summary_json) as "summary"
  report::SummaryOptions summary_options;
  plan_options_of(extra, options, summary, summary_options.node_layers);
  const std::string rule_set_name = text_of(rule_set, "ctshard.plan: rule_set");
  const std::string linearity_name = text_of(einsum_linearity, "ctshard.plan: einsum_linearity");
  const std::string passthrough_name = text_of(partial_passthrough, "ctshard.plan: partial_passthrough");
  const auto user_registry = registry_with_user_rules(linearity_name, passthrough_name, rule_set_name);
  const OpRegistry& registry = user_registry ? *user_registry : report::registry_for(linearity_name, passthrough_name, rule_set_name);
  options.rule_set = report::parse_rule_set(rule_set_name);
  std::optional<fx::Graph> records;
  if (kind == GraphSource::records) records = graph_from_records(graph, source);
  const std::string text = kind == GraphSource::text   ? text_of(graph, "ctshard.plan: graph text")
                           : kind == GraphSource::path ? text_of(graph, "ctshard.plan: graph path")
                                                       : std::string();
  return without_gil([&] {
    fx::Graph g = kind == GraphSource::embedded_default ? report::default_graph()
                  : kind == GraphSource::text           ? fx::parse_fx_graph(text, source)
                  : kind == GraphSource::path           ? fx::read_fx_graph_file(text)
                                                        : std::move(*records);
    if (kind == GraphSource::embedded_default && options.placements.empty()) options.placements = report::default_placements(options.mesh.size());
    if (global_options) {
      const graph::GlobalPlan p = graph::global_plan(g, options, *global_options, registry);
      if (user_registry) check_python_rule_fallbacks(p.greedy);
      json doc = report::global_plan_json(p, options, *global_options);
      if (summary) {
        const graph::RecordedPlan recorded = graph::plan_graph_recorded(g, options, registry);
        summary_options.device_tflops = global_options->device_tflops;
        summary_options.device_gbps = global_options->device_gbps;
        doc["summary"] = report::plan_summary_json(recorded.record, p.plan, p.inputs, options.mesh, registry, summary_options);
      }
      return doc;
    }
    graph::RecordedPlan recorded;  // the record only for the summary (it keeps every node's call)
    if (summary) recorded = graph::plan_graph_recorded(g, options, registry);
    else recorded.plan = graph::plan_graph(g, options, registry);
    if (user_registry) check_python_rule_fallbacks(recorded.plan);
    json doc = report::plan_json(recorded.plan, options);
    if (summary) doc["summary"] = report::plan_summary_json(recorded.record, recorded.plan, {}, options.mesh, registry, summary_options);
    return doc;
  });
}

/// The graph arguments of a plan_* binding as plan() takes them: the graph (None for the embedded
/// default) and its source name ("" where the binding has none).
struct GraphInput {
  nb::object graph = nb::none();
  std::string source;
};
GraphInput graph_input() { return {}; }
GraphInput graph_input(nb::handle graph) { return {nb::borrow(graph), std::string()}; }
GraphInput graph_input(nb::handle graph, nb::handle source) { return {nb::borrow(graph), text_of(source, "ctshard.plan: source")}; }

/// Binds `name` as a plan_* function: its own graph arguments first (C++ types `Graph...`, named
/// by `graph_args`: what differs between the bindings), then the options every plan_* function
/// takes, with their defaults.
template <GraphSource kind, class... Graph, class... GraphArgs>
void def_plan(nb::module_& m, const char* name, GraphArgs... graph_args) {
  static_assert(sizeof...(Graph) == sizeof...(GraphArgs), "one nb::arg per graph argument");
  m.def(
      name,
      [](Graph... graph, nb::handle mesh, nb::handle place, nb::handle dph, nb::handle lin, nb::handle sym, nb::handle cm, nb::handle global,
         nb::handle algo, nb::handle pp, nb::handle rs, nb::handle extra) {
        const GraphInput in = graph_input(graph...);
        return plan(kind, in.graph, in.source, mesh, place, dph, lin, sym, cm, global, algo, pp, rs, extra);
      },
      graph_args..., nb::arg("mesh"), nb::arg("place"), nb::arg("devices_per_host"), nb::arg("einsum_linearity"), nb::arg("sym").none(),
      nb::arg("cost_model") = "dtensor", nb::arg("global_options").none() = nb::none(), nb::arg("algo") = "search",
      nb::arg("partial_passthrough") = "ctshard", nb::arg("rule_set") = "ctshard", nb::arg("plan_options").none() = nb::none());
}

/// Placements of a spec as (kind, dim, split_factor, reduce_op) tuples for ctshard.torch.
nb::list spec_placements(nb::handle text) {
  const Spec spec = parse_spec(text_of(text, "ctshard.torch: spec"));
  nb::list out;
  for (const Placement& p : spec) {
    const std::string kind = p.is_replicate() ? "R" : p.is_strided_shard() ? "_S" : p.is_shard() ? "S" : "P";
    const std::string op = p.is_partial() ? std::string(to_string(p.reduce_op)) : std::string();
    out.append(
        nb::make_tuple(kind, p.is_any_shard() ? static_cast<int>(p.dim) : -1, p.is_strided_shard() ? static_cast<int>(p.split_factor) : 1, op));
  }
  return out;
}

}  // namespace

NB_MODULE(_ext, m) {
  m.doc() = "ctshard C++ core (use the ctshard package's functions)";
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const ctshard::error& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    } catch (const ctshard::fx::parse_error& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    } catch (const json::exception& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    } catch (const std::out_of_range& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    }
  });
  m.def("table", &table, nb::arg("op"), nb::arg("shapes"), nb::arg("mesh"), nb::arg("inputs"), nb::arg("args").none(), nb::arg("kwargs").none(),
        nb::arg("dtype"), nb::arg("devices_per_host"), nb::arg("einsum_linearity"), nb::arg("cost_model") = "dtensor", nb::arg("algo") = "enumerate",
        nb::arg("partial_passthrough") = "ctshard", nb::arg("rule_set") = "ctshard");
  m.def("choose", &choose, nb::arg("op"), nb::arg("shapes"), nb::arg("mesh"), nb::arg("inputs"), nb::arg("args").none(), nb::arg("kwargs").none(),
        nb::arg("dtype"), nb::arg("devices_per_host"), nb::arg("einsum_linearity"), nb::arg("cost_model") = "dtensor", nb::arg("algo") = "search",
        nb::arg("partial_passthrough") = "ctshard", nb::arg("rule_set") = "ctshard");
  m.def("_bench_choose", &bench_choose, nb::arg("op"), nb::arg("shapes"), nb::arg("mesh"), nb::arg("inputs"), nb::arg("args").none(),
        nb::arg("kwargs").none(), nb::arg("dtype"), nb::arg("devices_per_host"), nb::arg("einsum_linearity"), nb::arg("repeat"),
        nb::arg("cost_model") = "dtensor");
  m.def("cost", &cost, nb::arg("shape"), nb::arg("mesh"), nb::arg("src"), nb::arg("dst"), nb::arg("dtype"), nb::arg("devices_per_host"),
        nb::arg("cost_model") = "dtensor");
  def_plan<GraphSource::embedded_default>(m, "plan_default");
  def_plan<GraphSource::text, nb::handle, nb::handle>(m, "plan_text", nb::arg("text"), nb::arg("source"));
  def_plan<GraphSource::path, nb::handle>(m, "plan_file", nb::arg("path"));
  def_plan<GraphSource::records, nb::handle, nb::handle>(m, "plan_records", nb::arg("records"), nb::arg("source"));
  m.def("register_rule", &register_rule, nb::arg("op"), nb::arg("spec"), nb::arg("fn").none());
  m.def("unregister_rule", &unregister_rule, nb::arg("op"));
  m.def("registered_rules", &registered_rules);
  m.def("ops", [] { return to_python(report::ops_json()); });
  m.attr("__version__") = CTSHARD_VERSION;  // the CMake project version
  m.def(
      "fallback_warning",
      [](std::size_t with_rule, std::size_t fallback, const std::map<std::string, std::size_t>& ops) {
        return report::fallback_warning(with_rule, fallback, ops);
      },
      nb::arg("nodes_with_rule"), nb::arg("nodes_fallback"), nb::arg("fallback_ops"));
  // The `ctshard` command line (the tool's own code, examples/cli): argv[0] is the program name;
  // returns the exit status. Output goes to the process's standard output and error (file
  // descriptors 1 and 2), as the tool's. The GIL is released while it runs.
  m.def(
      "cli",
      [](const std::vector<std::string>& args) {
        std::vector<std::string> owned = args;
        if (owned.empty()) owned.emplace_back("ctshard");
        std::vector<char*> argv;
        argv.reserve(owned.size() + 1);
        for (std::string& a : owned) argv.push_back(a.data());
        argv.push_back(nullptr);
        nb::gil_scoped_release release;
        return ctshard::tool::run_tool(static_cast<int>(owned.size()), argv.data());
      },
      nb::arg("argv"));
  m.def("spec_placements", &spec_placements, nb::arg("spec"));
  // Test hook: whether the GIL is held inside the region where the functions above do their work.
  m.def("_gil_held_during_work", [] { return without_gil([] { return json(PyGILState_Check() != 0); }); });
  m.def(
      "format_spec", [](nb::handle text) { return to_string(parse_spec(text_of(text, "ctshard.format_spec: spec"))); }, nb::arg("spec"));
}
