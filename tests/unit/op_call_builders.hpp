#pragma once
// Test helpers shared by the rule tests: OpCall builders that mimic what `ctshard plan`
// passes for an FX node, the text of a RuleSet's rows, and the rules the built-in registry gives.

#include <cstdint>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "ctshard/registry.hpp"

namespace ctshard::test {

inline OpArg tensor_arg(std::int64_t index) {
  OpArg a;
  a.kind = OpArg::Kind::tensor;
  a.integer = index;
  return a;
}
inline OpArg int_arg(std::int64_t v) {
  OpArg a;
  a.kind = OpArg::Kind::integer;
  a.integer = v;
  return a;
}
inline OpArg ints_arg(std::vector<std::int64_t> v) {
  OpArg a;
  a.kind = OpArg::Kind::int_list;
  a.ints = std::move(v);
  return a;
}
inline OpArg bool_arg(bool v) {
  OpArg a;
  a.kind = OpArg::Kind::boolean;
  a.integer = v ? 1 : 0;
  return a;
}
inline OpArg float_arg(double v) {
  OpArg a;
  a.kind = OpArg::Kind::floating;
  a.floating = v;
  return a;
}
inline OpArg str_arg(std::string s) {
  OpArg a;
  a.kind = OpArg::Kind::string;
  a.text = std::move(s);
  return a;
}

inline OpArg none_arg() { return OpArg{}; }
/// A list of tensors (indices into OpCall::tensors), as the FX reader gives `[a, b]`.
inline OpArg tensors_arg(std::vector<std::int64_t> indices) {
  OpArg a;
  a.kind = OpArg::Kind::tensor_list;
  a.ints = std::move(indices);
  return a;
}
/// A mixed list (`[None, x]`, `[True, False, True]`), as the FX reader gives it.
inline OpArg list_arg(std::vector<OpArg> items) {
  OpArg a;
  a.kind = OpArg::Kind::list;
  a.items = std::move(items);
  return a;
}
/// A list of bools (`output_mask`).
inline OpArg bools_arg(std::initializer_list<bool> values) {
  std::vector<OpArg> items;
  for (bool v : values) items.push_back(bool_arg(v));
  return list_arg(std::move(items));
}

/// A tensor meta of `shape` with `itemsize` bytes per element (4: f32, 8: i64, 1: bool).
inline TensorMeta meta(std::initializer_list<std::int64_t> shape, std::size_t itemsize = 4) { return TensorMeta{TensorShape(shape), itemsize}; }

inline OpCall make_call(std::string op, std::vector<TensorMeta> tensors, std::vector<OpArg> args,
                        std::vector<std::pair<std::string, OpArg>> kwargs = {}) {
  OpCall c;
  c.op = std::move(op);
  c.tensors = std::move(tensors);
  c.args = std::move(args);
  c.kwargs = std::move(kwargs);
  return c;
}

/// The built-in registry's rule for `call` (throws what the factory throws).
inline OpRule rule_for(const OpCall& call) {
  const RuleFactory* f = builtin_registry().find(call.op);
  if (f == nullptr) throw error("test: no rule for " + call.op);
  return (*f)(call);
}

/// Each row as the `to_string` of its placements joined by `sep` between `open` and `close`:
/// "a,b,c" by default, "[a, b, c]" with (", ", "[", "]").
inline std::vector<std::string> rows_text(const RuleSet& r, const char* sep = ",", const char* open = "", const char* close = "") {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < r.size(); ++i) {
    std::string row = open;
    for (std::size_t k = 0; k < r.width(); ++k) {
      if (k > 0) row += sep;
      row += to_string(r.at(i, k));
    }
    row += close;
    out.push_back(row);
  }
  return out;
}

/// Each row as "[a, b, c]".
inline std::vector<std::string> rows(const RuleSet& r) { return rows_text(r, ", ", "[", "]"); }

/// The message of the ctshard::error `f` throws, or "" when it does not throw.
template <class F>
std::string error_of(F&& f) {
  try {
    (void)f();
  } catch (const error& e) {
    return e.what();
  }
  return "";
}

/// Every surviving full-mesh candidate of `rule` for these inputs: "out specs | input specs".
inline std::vector<std::string> candidates(const OpRule& rule, const MeshTopology& mesh, const std::vector<TensorMeta>& inputs,
                                           const std::vector<Spec>& specs, FilterCounts* counts = nullptr) {
  StrategyEnumerator e(rule.rules, mesh, rule.uneven_inputs, rule.filter, rule.placeholder_fill);
  std::vector<std::string> out;
  const FilterCounts c = e.for_each(inputs, specs, [&](const CandidateView& v) {
    std::string s;
    for (std::size_t k = 0; k < e.num_outputs() + e.num_inputs(); ++k) {
      if (k == e.num_outputs()) s += " |";
      s += ' ';
      s += to_string(e.spec_of(v.digits, k));
    }
    out.push_back(s.substr(1));
  });
  if (counts != nullptr) *counts = c;
  return out;
}

/// The chosen candidate (DTensor's choice) as in `candidates`, with its total cost.
inline std::pair<std::string, double> chosen(const OpRule& rule, const MeshTopology& mesh, const std::vector<TensorMeta>& inputs,
                                             const std::vector<Spec>& specs) {
  const auto all = candidates(rule, mesh, inputs, specs);
  StrategyEnumerator e(rule.rules, mesh, rule.uneven_inputs, rule.filter, rule.placeholder_fill);
  const Choice c = e.choose(inputs, specs);
  return {all.at(static_cast<std::size_t>(e.index_of(inputs, specs, c).value())), c.total_us};
}

inline MeshTopology mesh_of(std::initializer_list<std::int64_t> sizes) {
  const std::vector<std::int64_t> v(sizes);
  return MeshTopology::build(std::span<const std::int64_t>(v.data(), v.size()));
}

}  // namespace ctshard::test
