#pragma once
/// \file registry/op_call.hpp
/// OpCall: what a rule factory sees of one op call — tensor inputs (global shape, itemsize) and the
/// non-tensor arguments (ints, floats, int lists, None, ...), positionally as aten passes them.

#include <cstddef>
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "ctshard/core/spec.hpp"
#include "ctshard/core/tensor_shape.hpp"

namespace ctshard {

/// A call argument: `tensor` holds the index into OpCall::tensors; the others are literal values.
/// Lists come in three shapes: `int_list` (every item an integer), `tensor_list` (every item a
/// tensor; `ints` holds their indices), and `list` for anything else (`[None, t]`, `[True,
/// False]`, nested lists), whose items are OpArgs in `items`. A `dict` (`{'BACKEND': 'AUTO'}`,
/// flex attention's kernel options) holds key, value, key, value, ... in `items`. `other` is a
/// literal ctshard does not interpret (`torch.float32`, a device); as a higher-order op's argument
/// it is a submodule reference (`text` the submodule's name; `ints` the positions of the
/// submodule's placeholders its body reads, when `integer` is 1: known).
struct OpArg {
  enum class Kind : unsigned char { none, tensor, integer, floating, boolean, int_list, tensor_list, list, string, other, dict };
  Kind kind = Kind::none;
  std::int64_t integer = 0;        ///< integer, boolean (0/1), or tensor index
  double floating = 0;             ///< floating
  std::vector<std::int64_t> ints;  ///< int_list values, or tensor_list indices
  std::string text;                ///< string; other: the raw text (`torch.float32`)
  std::vector<OpArg> items;        ///< list items; dict: key, value, key, value, ...

  /// True for a tensor argument (`integer` is its index in OpCall::tensors).
  [[nodiscard]] bool is_tensor() const noexcept { return kind == Kind::tensor; }
  /// True for an integer, float or bool literal.
  [[nodiscard]] bool is_number() const noexcept { return kind == Kind::integer || kind == Kind::floating || kind == Kind::boolean; }
};

/// One op call: `op` is the aten overload name ("aten.mm.default"), `tensors` the tensor inputs in
/// argument order (tensor lists flattened in place), `args` / `kwargs` every argument as written,
/// `outputs` the output metas when known (graph annotations), `current` the current spec of each
/// tensor input when the caller knows it.
struct OpCall {
  std::string op;
  std::vector<TensorMeta> tensors;
  std::vector<OpArg> args;
  std::vector<std::pair<std::string, OpArg>> kwargs;
  std::vector<TensorMeta> outputs;
  /// The current spec of each tensor input (one per entry of `tensors`), or empty when unknown.
  /// `ctshard table` (its `--inputs`) and the greedy planner (each input's spec when the node is
  /// reached) fill it. Only the rules of the `dtensor` profile (RuleProfile::dtensor) read it: for
  /// the ops DTensor 2.13 implements as op-strategy functions, whose rows follow the current
  /// input (OpRegistry::reads_current_specs names them); every other rule ignores it.
  std::vector<Spec> current;
  /// The sizes of the mesh the `current` specs live on (one per mesh dim), or empty with them.
  std::vector<std::int64_t> mesh_sizes;

  /// Positional argument i, or nullptr.
  [[nodiscard]] const OpArg* arg(std::size_t i) const noexcept { return i < args.size() ? &args[i] : nullptr; }
  /// Keyword argument by name, or nullptr.
  [[nodiscard]] const OpArg* kwarg(const std::string& name) const noexcept {
    for (const auto& [k, v] : kwargs)
      if (k == name) return &v;
    return nullptr;
  }
};

}  // namespace ctshard
