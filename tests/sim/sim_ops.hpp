// tests/sim/sim_ops.hpp — reference implementations of aten ops on xt::xarray<double>, used both on
// global inputs (the truth) and on each simulated device's local inputs; plus the hook that
// localises shape-like arguments the way DTensor does at run time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ctshard/registry/op_call.hpp"
#include "sim_tensor.hpp"

namespace ctshard::sim {

/// An op's arguments: positional `args` as in ctshard::OpCall (a tensor argument holds its index
/// into `tensors`, a tensor list its indices) and the tensors themselves (global or local).
struct ArgPack {
  std::vector<Tensor> tensors;
  std::vector<OpArg> args;
  std::vector<std::pair<std::string, OpArg>> kwargs;

  [[nodiscard]] bool has(std::size_t i) const noexcept { return i < args.size() && args[i].kind != OpArg::Kind::none; }
  /// The tensor of argument i; a number argument becomes a 0-d tensor. Throws when absent.
  [[nodiscard]] Tensor tensor(std::size_t i) const;
  [[nodiscard]] std::vector<Tensor> tensor_list(std::size_t i) const;
  [[nodiscard]] double number(std::size_t i, double fallback) const;
  [[nodiscard]] std::int64_t integer(std::size_t i, std::int64_t fallback) const;
  [[nodiscard]] std::vector<std::int64_t> ints(std::size_t i) const;
  [[nodiscard]] std::string text(std::size_t i, std::string fallback) const;
  /// Keyword argument `name`, or nullptr.
  [[nodiscard]] const OpArg* kwarg(std::string_view name) const noexcept;
  /// A number given positionally at `i` or as keyword `name`, else `fallback` (aten's `*, alpha=1`).
  [[nodiscard]] double number_or_kw(std::size_t i, std::string_view name, double fallback) const;
};

/// What a device knows when it localises arguments: its coordinates, the row's specs, and the
/// global / local shapes of inputs and outputs (local = the chunk the spec gives this device).
struct LocalContext {
  const Mesh* mesh = nullptr;
  std::vector<std::size_t> coords;
  std::vector<Spec> input_specs, output_specs;
  std::vector<Shape> global_inputs, local_inputs, global_outputs, local_outputs;
};

/// A reference op: `run` computes the outputs (flattened if the op returns a list);
/// `localise` (optional) rewrites shape-like arguments for one device.
struct RefOp {
  std::function<std::vector<Tensor>(const ArgPack&)> run;
  std::function<void(ArgPack&, const LocalContext&)> localise;
};

/// A collective's reference over the g ranks of a program-level process group
/// (docs/semantics.md "Collectives in graphs"): `run` takes one ArgPack per program rank (that
/// rank's tensors: its global tensors, or the pieces one mesh device holds of them) and returns
/// each rank's outputs. The number of packs is the group size.
struct GroupRefOp {
  std::function<std::vector<std::vector<Tensor>>(const std::vector<ArgPack>&)> run;
};

/// The reference op registered under an aten overload name, or nullptr.
[[nodiscard]] const RefOp* find_ref_op(std::string_view name);
/// The collective reference registered under an op name, or nullptr.
[[nodiscard]] const GroupRefOp* find_group_ref_op(std::string_view name);
/// Names of all reference ops, sorted.
[[nodiscard]] std::vector<std::string> ref_op_names();

/// Two-operand einsum by loops over every label (no BLAS).
[[nodiscard]] Tensor einsum2(std::string_view equation, const Tensor& lhs, const Tensor& rhs);

// Small tensor helpers shared by the reference ops (row-major, any rank).
/// `dim` wrapped into [0, rank) (negative dims count from the end).
[[nodiscard]] std::size_t wrap_dim(std::int64_t dim, std::size_t rank);
/// The elements at `indices` along `dim` (a gather of whole slices; repeats allowed).
[[nodiscard]] Tensor take_along(const Tensor& t, std::size_t dim, const std::vector<std::size_t>& indices);
/// Throws ctshard::error "sim: <what>: shape A, expected B" unless `t` has shape `expected`:
/// reference ops that index raw element arrays check their local shards with it first, so a
/// row that hands a device mismatched shards fails cleanly instead of reading out of bounds.
void require_shape(const Tensor& t, const Shape& expected, std::string_view what);
/// Throws ctshard::error unless `t` has at least `rank` dims (`what` names the operand).
void require_rank(const Tensor& t, std::size_t rank, std::string_view what);
/// A copy of `t` reshaped to `shape` (same element count).
[[nodiscard]] Tensor reshaped(const Tensor& t, const Shape& shape);

namespace detail {
using RefTable = std::map<std::string, RefOp, std::less<>>;
void add_layout_ops(RefTable& table);  ///< views and tensor ops (sim_ops_layout.cpp)
void add_math_ops(RefTable& table);    ///< reductions, softmax, layer norm, embedding, dropout (sim_ops_math.cpp)
using GroupRefTable = std::map<std::string, GroupRefOp, std::less<>>;
void add_collective_ops(GroupRefTable& table);  ///< collectives over program ranks (sim_ops_collective.cpp)
}  // namespace detail

}  // namespace ctshard::sim
