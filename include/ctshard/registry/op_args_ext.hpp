#pragma once
/// \file registry/op_args_ext.hpp
/// More OpCall argument readers in `ctshard::op_args` (on top of registry/op_args.hpp) for the
/// reduction, norm and nn rule families: dims with negative wrap-around, reduction dim lists where
/// None / [] mean "every dim", bools, bool lists (`output_mask`), numbers, optional tensors and
/// `Tensor?[]` lists with None holes (`index.Tensor`). Every failure throws ctshard::error naming
/// the op and the argument, so the planner falls back visibly.

#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ctshard/error.hpp"
#include "ctshard/registry/op_args.hpp"
#include "ctshard/registry/op_call.hpp"
#include "ctshard/rules/tensor_dims.hpp"

namespace ctshard::op_args {

/// Position of a keyword-only argument (no positional slot): readers look up the keyword only.
inline constexpr std::size_t keyword_only = std::numeric_limits<std::size_t>::max();

/// `dim` wrapped into [0, rank) (`normalize_dim`; a 0-d tensor accepts 0 and -1, giving 0).
/// Throws ctshard::error naming the op and argument when out of range.
[[nodiscard]] inline int wrap_dim(const OpCall& call, std::string_view name, std::int64_t dim, std::size_t rank) {
  std::string api = "ctshard: " + call.op + ": argument '";
  api += name;
  api += "'";
  return static_cast<int>(normalize_dim(dim, rank, api));
}

/// A bool argument, `fallback` when absent / None; integers 0 / 1 are accepted. Throws
/// ctshard::error for any other value.
[[nodiscard]] inline bool bool_or(const OpCall& call, std::size_t index, std::string_view name, bool fallback) {
  const OpArg* a = find(call, index, name);
  if (a == nullptr) return fallback;
  if (a->kind == OpArg::Kind::boolean || (a->kind == OpArg::Kind::integer && (a->integer == 0 || a->integer == 1))) return a->integer != 0;
  bad_argument(call, name, "must be a bool");
}

/// A boolean flag whose schema default is False (`keepdim`, `transposed`, `scale_grad_by_freq`,
/// `compute_log_sumexp`, `return_debug_mask`): `bool_or(call, index, name, false)`, so that call
/// sites name the flag instead of passing a bare default.
[[nodiscard]] inline bool flag(const OpCall& call, std::size_t index, std::string_view name) { return bool_or(call, index, name, false); }

/// A number argument (integer, float or bool), `fallback` when absent / None. Throws
/// ctshard::error for any other value.
[[nodiscard]] inline double number_or(const OpCall& call, std::size_t index, std::string_view name, double fallback) {
  const OpArg* a = find(call, index, name);
  if (a == nullptr) return fallback;
  if (a->kind == OpArg::Kind::floating) return a->floating;
  if (a->kind == OpArg::Kind::integer || a->kind == OpArg::Kind::boolean) return static_cast<double>(a->integer);
  bad_argument(call, name, "must be a number");
}

/// A string argument (`rounding_mode='floor'`), nullopt when absent / None. Throws
/// ctshard::error for any other value.
[[nodiscard]] inline std::optional<std::string> optional_string(const OpCall& call, std::size_t index, std::string_view name) {
  const OpArg* a = find(call, index, name);
  if (a == nullptr) return std::nullopt;
  if (a->kind != OpArg::Kind::string) bad_argument(call, name, "must be a string");
  return a->text;
}

/// An `output_mask` asking for all `n` outputs (the schema default of the backward ops).
[[nodiscard]] inline std::vector<bool> every_output(std::size_t n) { return std::vector<bool>(n, true); }

/// A bool list such as `output_mask = [True, True, False]`, `fallback` when absent / None.
/// Throws ctshard::error for other values.
[[nodiscard]] inline std::vector<bool> bool_list_or(const OpCall& call, std::size_t index, std::string_view name, std::vector<bool> fallback) {
  const OpArg* a = find(call, index, name);
  if (a == nullptr) return fallback;
  std::vector<bool> out;
  if (a->kind == OpArg::Kind::int_list) {
    for (auto v : a->ints) out.push_back(v != 0);
    return out;
  }
  if (a->kind != OpArg::Kind::list) bad_argument(call, name, "must be a list of bools");
  for (std::size_t i = 0; i < a->items.size(); ++i) {
    if (a->items[i].kind != OpArg::Kind::boolean) bad_argument(call, name, "must be a list of bools (item " + std::to_string(i) + " is not)");
    out.push_back(a->items[i].integer != 0);
  }
  return out;
}

/// A number argument (integer, float or bool) as a double, nullopt when absent / None. Throws
/// ctshard::error naming the op and argument for anything else (a symbolic size, a string).
[[nodiscard]] inline std::optional<double> optional_number(const OpCall& call, std::size_t index, std::string_view name) {
  const OpArg* a = find(call, index, name);
  if (a == nullptr) return std::nullopt;
  if (a->kind == OpArg::Kind::floating) return a->floating;
  if (a->kind == OpArg::Kind::integer || a->kind == OpArg::Kind::boolean) return static_cast<double>(a->integer);
  bad_argument(call, name, "must be a number");
}

/// Reduction dims as a bit mask over [0, rank): absent, None or `[]` mean every dim (PyTorch
/// reduces all dims for `dim=[]`); an integer or int list is wrapped against `rank` (a 0-d tensor
/// accepts 0 / -1 and has no dim to reduce). Throws ctshard::error naming the op and argument for
/// an out-of-range or repeated dim, or a rank above 64.
[[nodiscard]] inline std::uint64_t reduction_dims(const OpCall& call, std::size_t index, std::string_view name, std::size_t rank) {
  if (rank > 64) bad_argument(call, name, "belongs to a tensor of rank above 64");
  const std::uint64_t all = rank == 0 ? 0 : ~std::uint64_t{0} >> (64 - rank);
  const OpArg* a = find(call, index, name);
  if (a == nullptr) return all;
  if (a->kind != OpArg::Kind::integer && a->kind != OpArg::Kind::int_list) bad_argument(call, name, "must be an integer, a list of integers or None");
  const std::vector<std::int64_t> dims = a->kind == OpArg::Kind::integer ? std::vector<std::int64_t>{a->integer} : a->ints;
  if (dims.empty()) return all;
  std::uint64_t mask = 0;
  for (auto d : dims) {
    const int w = wrap_dim(call, name, d, rank);
    if (rank == 0) continue;
    const std::uint64_t bit = std::uint64_t{1} << w;
    if ((mask & bit) != 0) bad_argument(call, name, "repeats dim " + std::to_string(d));
    mask |= bit;
  }
  return mask;
}

/// The tensor-input index (into OpCall::tensors) of an optional tensor argument, nullopt when
/// absent / None. Throws ctshard::error when it is something else.
[[nodiscard]] inline std::optional<std::size_t> optional_tensor(const OpCall& call, std::size_t index, std::string_view name) {
  const OpArg* a = find(call, index, name);
  if (a == nullptr) return std::nullopt;
  if (a->kind != OpArg::Kind::tensor || static_cast<std::size_t>(a->integer) >= call.tensors.size())
    bad_argument(call, name, "must be a tensor or None");
  return static_cast<std::size_t>(a->integer);
}

/// The tensor-input index of a required tensor argument. Throws ctshard::error when absent.
[[nodiscard]] inline std::size_t tensor(const OpCall& call, std::size_t index, std::string_view name) {
  const auto t = optional_tensor(call, index, name);
  if (!t) bad_argument(call, name, "must be a tensor");
  return *t;
}

/// A `Tensor?[]` argument: per list item the tensor-input index, or nullopt for a `None` hole.
/// Throws ctshard::error when absent or not such a list.
[[nodiscard]] inline std::vector<std::optional<std::size_t>> optional_tensor_list(const OpCall& call, std::size_t index, std::string_view name) {
  const OpArg* a = find(call, index, name);
  if (a == nullptr) bad_argument(call, name, "is missing");
  std::vector<std::optional<std::size_t>> out;
  if (a->kind == OpArg::Kind::tensor) {
    out.emplace_back(static_cast<std::size_t>(a->integer));
  } else if (a->kind == OpArg::Kind::tensor_list) {
    for (auto i : a->ints) out.emplace_back(static_cast<std::size_t>(i));
  } else if (a->kind == OpArg::Kind::list) {
    for (std::size_t i = 0; i < a->items.size(); ++i) {
      const OpArg& item = a->items[i];
      if (item.kind == OpArg::Kind::none) out.emplace_back(std::nullopt);
      else if (item.kind == OpArg::Kind::tensor) out.emplace_back(static_cast<std::size_t>(item.integer));
      else bad_argument(call, name, "has an item (" + std::to_string(i) + ") that is neither a tensor nor None");
    }
  } else {
    bad_argument(call, name, "must be a list of tensors (or None)");
  }
  for (const auto& t : out)
    if (t && *t >= call.tensors.size()) bad_argument(call, name, "refers to a missing tensor");
  return out;
}

}  // namespace ctshard::op_args
