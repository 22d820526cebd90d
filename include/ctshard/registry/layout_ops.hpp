#pragma once
/// \file registry/layout_ops.hpp
/// Registers the ops that move elements within a layout (rules/layout_rules.hpp): `as_strided`,
/// `as_strided_scatter`, `constant_pad_nd`, `roll`, `flip` / `prims.rev`, `select_scatter`, the FFT kernels,
/// `view_as_real` and `view_as_complex`.

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "ctshard/registry/op_args.hpp"
#include "ctshard/registry/op_args_ext.hpp"
#include "ctshard/registry/op_registry.hpp"
#include "ctshard/registry/view_ops.hpp"
#include "ctshard/rules/layout_rules.hpp"
#include "ctshard/rules/mesh_filters.hpp"
#include "ctshard/rules/reduction_rules.hpp"

namespace ctshard {

namespace detail {
/// `size` and `stride` of an as_strided-like call (positions `at`, `at + 1`) and its storage
/// offset (`at + 2`, None = 0). Throws ctshard::error naming the op and the argument when they
/// are missing, of different lengths, negative, or longer than max_tensor_dims.
struct StridedArgs {
  std::vector<std::int64_t> size, stride;
  std::int64_t offset = 0;
};
inline StridedArgs strided_args(const OpCall& call, std::size_t at) {
  StridedArgs a{op_args::int_list(call, at, "size"), op_args::int_list(call, at + 1, "stride"), op_args::int_or(call, at + 2, "storage_offset", 0)};
  if (a.size.size() != a.stride.size())
    op_args::bad_argument(call, "stride", "has " + std::to_string(a.stride.size()) + " entries for " + std::to_string(a.size.size()) + " sizes");
  if (a.size.size() > max_tensor_dims) op_args::bad_argument(call, "size", "has more than max_tensor_dims entries");
  for (auto s : a.size)
    if (s < 0) op_args::bad_argument(call, "size", "has a negative size " + std::to_string(s));
  if (a.offset < 0) op_args::bad_argument(call, "storage_offset", "is negative");
  return a;
}
}  // namespace detail

/// Registers (arguments positional or by keyword, as aten names them):
/// - `aten.as_strided.default` (self, size, stride, storage_offset=None): as_strided_single_dim_strategy;
///   a plain view keeps the view's rules and full-mesh filter (UnevenInputs::keep_existing_shards,
///   like DTensor 2.13's views; 2.13 has no rule for as_strided);
/// - `aten.as_strided_scatter.default` (self, src, size, stride, storage_offset=None):
///   as_strided_scatter_single_dim_strategy, the view's filter on src (keep_existing_shards, as
///   DTensor 2.13's slice_scatter; 2.13 has no rule);
/// - `aten.constant_pad_nd.default` (self, pad, value=0): constant_pad_nd_single_dim_strategy
///   (UnevenInputs::reject: DTensor 2.13 `allow_uneven_sharding=False`);
/// - `aten.roll.default` (self, shifts, dims=[]): roll_single_dim_strategy (reject, as 2.13);
/// - `aten.flip.default` (self, dims), `prims.rev.default` (a, dims): flip_single_dim_strategy
///   (reject, as 2.13 registers flip);
/// - `aten.select_scatter.default` (self, src, dim, index): select_scatter_single_dim_strategy
///   (reject, as 2.13);
/// - `aten._fft_c2c.default` (self, dim, normalization, forward), `aten._fft_r2c.default` (self,
///   dim, normalization, onesided), `aten._fft_c2r.default` (self, dim, normalization,
///   last_dim_size): fft_single_dim_strategy (reject, as 2.13), with a full-mesh filter that drops
///   candidates leaving a rank an empty shard of the input (`nonempty_reduction_filter` over every
///   dim: torch.chunk gives 4 rows over 3 ranks as 2, 2, 0, and the local transform of an empty
///   tensor raises; DTensor keeps those rows);
/// - `aten.view_as_real.default` (self): view_as_real_single_dim_strategy (keep_existing_shards:
///   2.13 registers it as a view op-strategy); `aten.view_as_complex.default` (self):
///   view_as_complex_single_dim_strategy (reject, as 2.13).
/// Bad arguments throw ctshard::error naming the op and the argument.
inline void register_layout_ops(OpRegistry& r) {
  using namespace op_args;
  r.add({"aten.as_strided.default"}, [](const OpCall& call) {
    expect_tensor_inputs(call, 1);
    const TensorShape& in = call.tensors[tensor(call, 0, "self")].shape;
    const detail::StridedArgs a = detail::strided_args(call, 1);
    const TensorShape out(std::span<const std::int64_t>(a.size));
    std::optional<ViewDimMap> view;
    if (as_strided_is_view(in.numel(), a.size, a.stride, a.offset)) view = view_dim_map(in, a.size, "ctshard: " + call.op);
    OpRule rule{as_strided_single_dim_strategy(in, out, view), UnevenInputs::keep_existing_shards};
    if (view) rule.filter = view_full_mesh_filter(*view);
    return rule;
  });
  r.add({"aten.as_strided_scatter.default"}, [](const OpCall& call) {
    expect_tensor_inputs(call, 2);
    const TensorShape& in = call.tensors[tensor(call, 0, "self")].shape;
    const TensorShape& src = call.tensors[tensor(call, 1, "src")].shape;
    const detail::StridedArgs a = detail::strided_args(call, 2);
    if (TensorShape(std::span<const std::int64_t>(a.size)) != src)
      bad_argument(call, "src",
                   "has shape " + to_string(src) + ", the size argument says " + to_string(TensorShape(std::span<const std::int64_t>(a.size))));
    std::optional<ViewDimMap> view;
    if (as_strided_is_view(in.numel(), a.size, a.stride, a.offset))
      view = view_dim_map(src, std::span<const std::int64_t>(in.dims.data(), in.rank), "ctshard: " + call.op);
    OpRule rule{as_strided_scatter_single_dim_strategy(in, src, view), UnevenInputs::keep_existing_shards};
    if (view) rule.filter = view_full_mesh_filter(*view, 2);
    return rule;
  });
  r.add({"aten.constant_pad_nd.default"}, [](const OpCall& call) {
    expect_tensor_inputs(call, 1);
    const TensorShape& in = call.tensors[tensor(call, 0, "self")].shape;
    const PadValue value = number_or(call, 2, "value", 0.0) == 0.0 ? PadValue::zero : PadValue::nonzero;
    return OpRule{in_op_context(call, [&] { return constant_pad_nd_single_dim_strategy(in, int_list(call, 1, "pad"), value); }),
                  UnevenInputs::reject};
  });
  r.add({"aten.roll.default"}, [](const OpCall& call) {
    expect_tensor_inputs(call, 1);
    const TensorShape& in = call.tensors[tensor(call, 0, "self")].shape;
    const OpArg* dims = find(call, 2, "dims");
    const std::vector<std::int64_t> dim_list = dims == nullptr ? std::vector<std::int64_t>{} : int_list(call, 2, "dims");
    return OpRule{in_op_context(call, [&] { return roll_single_dim_strategy(in, int_list(call, 1, "shifts"), dim_list); }), UnevenInputs::reject};
  });
  r.add({"aten.flip.default", "prims.rev.default"}, [](const OpCall& call) {
    expect_tensor_inputs(call, 1);
    const TensorShape& in = call.tensors[tensor(call, 0, "self")].shape;
    return OpRule{in_op_context(call, [&] { return flip_single_dim_strategy(in, int_list(call, 1, "dims")); }), UnevenInputs::reject};
  });
  r.add({"aten.select_scatter.default"}, [](const OpCall& call) {
    expect_tensor_inputs(call, 2);
    const TensorShape& in = call.tensors[tensor(call, 0, "self")].shape;
    const TensorShape& src = call.tensors[tensor(call, 1, "src")].shape;
    (void)required_int(call, 3, "index");
    return OpRule{in_op_context(call, [&] { return select_scatter_single_dim_strategy(in, src, required_int(call, 2, "dim")); }),
                  UnevenInputs::reject};
  });
  r.add({"aten._fft_c2c.default", "aten._fft_r2c.default", "aten._fft_c2r.default"}, [](const OpCall& call) {
    expect_tensor_inputs(call, 1);
    const TensorShape& in = call.tensors[tensor(call, 0, "self")].shape;
    (void)required_int(call, 2, "normalization");
    OpRule rule{in_op_context(call, [&] { return fft_single_dim_strategy(in.rank, int_list(call, 1, "dim")); }), UnevenInputs::reject};
    const std::uint64_t all_dims = in.rank == 0 ? 0 : ~std::uint64_t{0} >> (64 - in.rank);
    rule.filter = nonempty_reduction_filter(all_dims);  // the local transform of an empty shard raises
    return rule;
  });
  r.add({"aten.view_as_real.default"}, [](const OpCall& call) {
    expect_tensor_inputs(call, 1);
    return OpRule{view_as_real_single_dim_strategy(call.tensors[tensor(call, 0, "self")].shape), UnevenInputs::keep_existing_shards};
  });
  r.add({"aten.view_as_complex.default"}, [](const OpCall& call) {
    expect_tensor_inputs(call, 1);
    const TensorShape& in = call.tensors[tensor(call, 0, "self")].shape;
    return OpRule{in_op_context(call, [&] { return view_as_complex_single_dim_strategy(in); }), UnevenInputs::reject};
  });
}

}  // namespace ctshard
