#pragma once
/// \file registry/op_args.hpp
/// Reading an OpCall's non-tensor arguments (ints, int lists, dtype names) and tensor lists by
/// position or keyword, with errors that name the op and the argument.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ctshard/error.hpp"
#include "ctshard/registry/op_call.hpp"

namespace ctshard::op_args {

/// Throws ctshard::error "ctshard: <op>: argument '<name>' <what>".
[[noreturn]] inline void bad_argument(const OpCall& call, std::string_view name, const std::string& what) {
  throw error("ctshard: " + call.op + ": argument '" + std::string(name) + "' " + what);
}

/// The argument at position `index`, else the keyword argument `name`; nullptr when absent or None.
[[nodiscard]] inline const OpArg* find(const OpCall& call, std::size_t index, std::string_view name) {
  const OpArg* a = call.arg(index);
  if (a == nullptr) a = call.kwarg(std::string(name));
  return a == nullptr || a->kind == OpArg::Kind::none ? nullptr : a;
}

/// An integer argument, or nullopt when absent / None. Throws ctshard::error (naming op and
/// argument) when it is present but not an integer.
[[nodiscard]] inline std::optional<std::int64_t> optional_int(const OpCall& call, std::size_t index, std::string_view name) {
  const OpArg* a = find(call, index, name);
  if (a == nullptr) return std::nullopt;
  if (a->kind != OpArg::Kind::integer) bad_argument(call, name, "must be an integer");
  return a->integer;
}

/// An integer argument, `fallback` when absent / None. Throws like optional_int.
[[nodiscard]] inline std::int64_t int_or(const OpCall& call, std::size_t index, std::string_view name, std::int64_t fallback) {
  return optional_int(call, index, name).value_or(fallback);
}

/// A required integer argument. Throws ctshard::error when absent or not an integer.
[[nodiscard]] inline std::int64_t required_int(const OpCall& call, std::size_t index, std::string_view name) {
  const auto v = optional_int(call, index, name);
  if (!v) bad_argument(call, name, "is missing");
  return *v;
}

/// A required list of integers (`[]` allowed); a single integer counts as a one-element list.
/// Throws ctshard::error when absent or not a list of integers (e.g. symbolic sizes).
[[nodiscard]] inline std::vector<std::int64_t> int_list(const OpCall& call, std::size_t index, std::string_view name) {
  const OpArg* a = find(call, index, name);
  if (a == nullptr) bad_argument(call, name, "is missing");
  if (a->kind == OpArg::Kind::integer) return {a->integer};
  if (a->kind != OpArg::Kind::int_list) bad_argument(call, name, "must be a list of integers");
  return a->ints;
}

/// The text of an argument (a dtype such as "torch.float32"), empty when absent / None.
[[nodiscard]] inline std::string text(const OpCall& call, std::size_t index, std::string_view name) {
  const OpArg* a = find(call, index, name);
  return a == nullptr ? std::string() : a->text;
}

/// Shapes of a tensor-list argument, in list order. Throws ctshard::error when absent, not a
/// list of tensors, or naming a tensor the call does not have.
[[nodiscard]] inline std::vector<TensorShape> tensor_list_shapes(const OpCall& call, std::size_t index, std::string_view name) {
  const OpArg* a = find(call, index, name);
  if (a == nullptr || a->kind != OpArg::Kind::tensor_list) bad_argument(call, name, "must be a list of tensors");
  std::vector<TensorShape> shapes;
  for (auto t : a->ints) {
    if (t < 0 || static_cast<std::size_t>(t) >= call.tensors.size()) bad_argument(call, name, "refers to a missing tensor");
    shapes.push_back(call.tensors[static_cast<std::size_t>(t)].shape);
  }
  return shapes;
}

/// Throws ctshard::error unless the call has `min` to `max` tensor inputs, in the one message
/// shape of every tensor-count check (`check_tensor_count`): "ctshard: <op>: takes 2 tensor
/// inputs, got 3"; `what` names the op when it is not `call.op` (the op an auto_functionalized
/// call wraps, the CLI's short name).
inline void expect_tensor_inputs(const OpCall& call, std::size_t min, std::size_t max, std::string_view what = {}) {
  check_tensor_count("ctshard: " + (what.empty() ? call.op : std::string(what)), min, max, call.tensors.size());
}

/// Throws ctshard::error unless the call has exactly `n` tensor inputs (`expect_tensor_inputs(call, n, n)`).
inline void expect_tensor_inputs(const OpCall& call, std::size_t n) { expect_tensor_inputs(call, n, n); }

/// Runs `build()`; a ctshard::error it raises is re-raised prefixed with "ctshard: <op>: " so the
/// planner's fallback message names the op.
template <class Build>
[[nodiscard]] auto in_op_context(const OpCall& call, Build&& build) -> decltype(build()) {
  try {
    return std::forward<Build>(build)();
  } catch (const error& e) {
    std::string message = e.what();
    if (message.find(call.op) != std::string::npos) throw;
    throw error("ctshard: " + call.op + ": " + message);
  }
}

}  // namespace ctshard::op_args
