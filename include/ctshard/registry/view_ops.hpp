#pragma once
/// \file registry/view_ops.hpp
/// Registers the view ops (view, _unsafe_view, reshape, t, transpose, permute, unsqueeze,
/// squeeze, expand, and repeat) with their dim-map rules (DTensor `_view_ops.py`; DTensor 2.13 registers
/// them as op-strategy functions that follow the input: UnevenInputs::keep_existing_shards).

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "ctshard/registry/op_args.hpp"
#include "ctshard/registry/op_registry.hpp"
#include "ctshard/rules/full_mesh_filter.hpp"
#include "ctshard/rules/view_rules.hpp"

namespace ctshard {

/// The full-mesh filter of a view (DTensor's `reject_redistribution` re-check with the real mesh):
/// keeps a candidate only when its output spec (operand 0) is exactly what the local view computes
/// from its input spec (operand `input_operand`): `view_output_spec`, which drops shards kept
/// through a flatten or split whose torch.chunk pieces differ on the two sides, and, of the rows
/// the fill lists per placement a regrouped shard can take on a mesh of several dims, every one
/// but the placement the local sizes left by the mesh dims before it call for. Empty (no filter)
/// when the map has no flatten and no split, so such views keep the planner's enumerator cache.
[[nodiscard]] inline FullMeshFilter view_full_mesh_filter(const ViewDimMap& map, std::size_t input_operand = 1) {
  bool needed = false;
  for (std::size_t o = 0; o < map.rank(); ++o) needed = needed || map[o].kind == ViewDimKind::flatten || map[o].kind == ViewDimKind::split;
  if (!needed) return {};
  return [map, input_operand](std::span<const Spec> operands, std::span<const TensorMeta>, MeshSizes mesh) {
    const std::optional<Spec> out = view_output_spec(map, operands[input_operand], mesh);
    return out.has_value() && *out == operands[0];
  };
}

namespace detail {
/// A rule factory for a one-input view: `map_of(call, input shape, api)` builds the dim map.
template <class MapOf>
RuleFactory view_factory(MapOf map_of) {
  return [map_of](const OpCall& call) {
    op_args::expect_tensor_inputs(call, 1);
    const std::string api = "ctshard: " + call.op;
    const ViewDimMap map = map_of(call, call.tensors[0].shape, std::string_view(api));
    return OpRule{view_single_dim_strategy(map), UnevenInputs::keep_existing_shards, view_full_mesh_filter(map)};
  };
}
}  // namespace detail

/// Registers, with one output and one input each (arguments read positionally or by keyword):
/// - `aten.view.default`, `aten._unsafe_view.default`, `aten.reshape.default` (self, size): view_dim_map;
/// - `aten.t.default` (self; rank <= 2), `aten.transpose.int` (self, dim0, dim1): transpose_dim_map;
/// - `aten.permute.default` (self, dims); `aten.unsqueeze.default` (self, dim);
/// - `aten.squeeze.default` (self), `aten.squeeze.dim` (self, dim), `aten.squeeze.dims` (self, dim list);
/// - `aten.expand.default` (self, size); `aten.repeat.default` (self, repeats): repeat_dim_map (a
///   copy, not a view, but DTensor 2.13 propagates it through the same dim maps).
/// Rules: view_single_dim_strategy. Bad arguments throw ctshard::error naming the op and the
/// argument or the problem (the planner falls back to Replicate and shows the message).
/// Views with a flatten or split carry view_full_mesh_filter (uneven kept shards are dropped).
inline void register_view_ops(OpRegistry& registry) {
  using op_args::int_list;
  using op_args::required_int;
  registry.add({"aten.view.default", "aten._unsafe_view.default", "aten.reshape.default"},
               detail::view_factory(
                   [](const OpCall& call, const TensorShape& in, std::string_view api) { return view_dim_map(in, int_list(call, 1, "size"), api); }));
  registry.add({"aten.t.default"}, detail::view_factory([](const OpCall& call, const TensorShape& in, std::string_view api) {
                 if (in.rank > 2) op_args::bad_argument(call, "self", "must have rank <= 2, got rank " + std::to_string(in.rank));
                 if (in.rank == 2) return transpose_dim_map(in, 0, 1, api);
                 const std::array<std::int64_t, 1> identity{0};  // 0-d and 1-d: t is the identity
                 return permute_dim_map(in, std::span<const std::int64_t>(identity.data(), in.rank), api);
               }));
  registry.add({"aten.transpose.int"}, detail::view_factory([](const OpCall& call, const TensorShape& in, std::string_view api) {
                 return transpose_dim_map(in, required_int(call, 1, "dim0"), required_int(call, 2, "dim1"), api);
               }));
  registry.add({"aten.permute.default"}, detail::view_factory([](const OpCall& call, const TensorShape& in, std::string_view api) {
                 return permute_dim_map(in, int_list(call, 1, "dims"), api);
               }));
  registry.add({"aten.unsqueeze.default"}, detail::view_factory([](const OpCall& call, const TensorShape& in, std::string_view api) {
                 return unsqueeze_dim_map(in, required_int(call, 1, "dim"), api);
               }));
  registry.add({"aten.squeeze.default"}, detail::view_factory([](const OpCall&, const TensorShape& in, std::string_view api) {
                 return squeeze_dim_map(in, {}, SqueezeDims::every_singleton, api);
               }));
  registry.add({"aten.squeeze.dim"}, detail::view_factory([](const OpCall& call, const TensorShape& in, std::string_view api) {
                 const std::array<std::int64_t, 1> dim{required_int(call, 1, "dim")};
                 return squeeze_dim_map(in, dim, SqueezeDims::listed, api);
               }));
  registry.add({"aten.squeeze.dims"}, detail::view_factory([](const OpCall& call, const TensorShape& in, std::string_view api) {
                 return squeeze_dim_map(in, int_list(call, 1, "dim"), SqueezeDims::listed, api);
               }));
  registry.add({"aten.expand.default"}, detail::view_factory([](const OpCall& call, const TensorShape& in, std::string_view api) {
                 return expand_dim_map(in, int_list(call, 1, "size"), api);
               }));
  registry.add({"aten.repeat.default"}, detail::view_factory([](const OpCall& call, const TensorShape& in, std::string_view api) {
                 return repeat_dim_map(in, int_list(call, 1, "repeats"), api);
               }));
}

}  // namespace ctshard
