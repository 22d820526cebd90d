// tests/sim/sim_ops_layout.cpp — reference view and tensor ops (view / reshape / permute /
// transpose / t / (un)squeeze / expand; split / unbind / select / slice / slice_scatter / cat /
// stack / copies / casts / *_like / new_* / factories). Shape-valued arguments (view / expand /
// new_* sizes) are localised the way DTensor does: replaced by the local output shape the output
// placement gives this device.
#include <algorithm>
#include <cmath>
#include <optional>

#include "ctshard/error.hpp"
#include "sim_ops.hpp"

namespace ctshard::sim::detail {

namespace {

using Outs = std::vector<Tensor>;

/// Sizes with one -1 inferred from the element count.
Shape infer_sizes(const std::vector<std::int64_t>& sizes, std::size_t numel) {
  Shape out;
  std::size_t known = 1;
  std::optional<std::size_t> infer;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] == -1) infer = i;
    else known *= static_cast<std::size_t>(sizes[i]);
    out.push_back(sizes[i] < 0 ? 0 : static_cast<std::size_t>(sizes[i]));
  }
  if (infer) out[*infer] = known == 0 ? 0 : numel / known;
  return out;
}

/// DTensor localises a shape argument to the local shape of the output on this device.
std::function<void(ArgPack&, const LocalContext&)> local_output_shape_at(std::size_t pos) {
  return [pos](ArgPack& a, const LocalContext& ctx) {
    std::vector<std::int64_t> sizes;
    for (auto s : ctx.local_outputs.at(0)) sizes.push_back(static_cast<std::int64_t>(s));
    a.args.at(pos) = OpArg{OpArg::Kind::int_list, 0, 0, sizes, {}, {}};
  };
}

Tensor permuted(const Tensor& x, const std::vector<std::size_t>& perm) { return xt::transpose(x, perm); }

/// Slice bounds of PyTorch: None = open, negatives wrap, clamped to [0, size].
std::vector<std::size_t> slice_indices(std::size_t size, const ArgPack& a, std::size_t start_pos, std::size_t end_pos, std::size_t step_pos) {
  const auto n = static_cast<std::int64_t>(size);
  auto bound = [n](std::int64_t v) { return std::clamp(v < 0 ? v + n : v, std::int64_t{0}, n); };
  const std::int64_t start = bound(a.integer(start_pos, 0)), end = bound(a.integer(end_pos, n)), step = a.integer(step_pos, 1);
  std::vector<std::size_t> idx;
  for (std::int64_t i = start; i < end; i += step) idx.push_back(static_cast<std::size_t>(i));
  return idx;
}

/// Splits along `dim` into consecutive pieces of the given sizes.
Outs split_pieces(const Tensor& x, std::size_t dim, const std::vector<std::int64_t>& sizes) {
  Outs out;
  std::size_t at = 0;
  for (auto s : sizes) {
    std::vector<std::size_t> idx(static_cast<std::size_t>(s));
    for (auto& i : idx) i = at++;
    out.push_back(take_along(x, dim, idx));
  }
  return out;
}

Tensor unsqueezed(const Tensor& x, std::size_t at) {
  Shape s = shape_of(x);
  s.insert(s.begin() + static_cast<std::ptrdiff_t>(at), 1);
  return reshaped(x, s);
}

Tensor cast_to(const Tensor& x, const std::string& dtype) {
  if (dtype.find("bool") != std::string::npos) return xt::cast<double>(xt::not_equal(x, 0.0));
  if (dtype.find("int") != std::string::npos || dtype.find("long") != std::string::npos) return xt::trunc(x);
  return x;  // floating casts: the simulator keeps doubles
}

Tensor filled(const Shape& shape, double v) {
  Tensor t = Tensor::from_shape(shape);
  t.fill(v);
  return t;
}

Shape sizes_arg(const ArgPack& a, std::size_t pos) {
  Shape s;
  for (auto v : a.ints(pos)) s.push_back(static_cast<std::size_t>(v));
  return s;
}

void add_views(RefTable& t) {
  const RefOp view{[](const ArgPack& a) {
                     const Tensor x = a.tensor(0);
                     return Outs{reshaped(x, infer_sizes(a.ints(1), x.size()))};
                   },
                   local_output_shape_at(1)};
  for (const char* name : {"aten.view.default", "aten._unsafe_view.default", "aten.reshape.default"}) t[name] = view;
  t["aten.t.default"] = {[](const ArgPack& a) {
                           const Tensor x = a.tensor(0);
                           return Outs{x.dimension() == 2 ? permuted(x, {1, 0}) : x};
                         },
                         {}};
  t["aten.transpose.int"] = {[](const ArgPack& a) {
                               const Tensor x = a.tensor(0);
                               std::vector<std::size_t> perm(x.dimension());
                               for (std::size_t i = 0; i < perm.size(); ++i) perm[i] = i;
                               if (x.dimension() > 0)
                                 std::swap(perm[wrap_dim(a.integer(1, 0), x.dimension())], perm[wrap_dim(a.integer(2, 0), x.dimension())]);
                               return Outs{permuted(x, perm)};
                             },
                             {}};
  t["aten.permute.default"] = {[](const ArgPack& a) {
                                 const Tensor x = a.tensor(0);
                                 std::vector<std::size_t> perm;
                                 for (auto d : a.ints(1)) perm.push_back(wrap_dim(d, x.dimension()));
                                 return Outs{permuted(x, perm)};
                               },
                               {}};
  t["aten.unsqueeze.default"] = {[](const ArgPack& a) {
                                   const Tensor x = a.tensor(0);
                                   return Outs{unsqueezed(x, wrap_dim(a.integer(1, 0), x.dimension() + 1))};
                                 },
                                 {}};
  // squeeze runs on the local tensor as DTensor dispatches it: it sees local sizes.
  auto squeeze = [](const Tensor& x, const std::vector<std::size_t>& dims, bool all) {
    Shape s;
    for (std::size_t d = 0; d < x.dimension(); ++d) {
      const bool named = all || std::find(dims.begin(), dims.end(), d) != dims.end();
      if (!(named && x.shape()[d] == 1)) s.push_back(x.shape()[d]);
    }
    return reshaped(x, s);
  };
  // squeeze.default would drop a sharded dim whose LOCAL size is 1 (pytorch #166124); newest DTensor
  // canonicalises it to squeeze.dims over the GLOBAL size-1 dims (PR #173563), and so does this localiser.
  t["aten.squeeze.default"] = {[squeeze](const ArgPack& a) {
                                 const OpArg* dims = a.kwarg("__global_singletons");
                                 if (dims == nullptr) return Outs{squeeze(a.tensor(0), {}, true)};
                                 return Outs{squeeze(a.tensor(0), std::vector<std::size_t>(dims->ints.begin(), dims->ints.end()), false)};
                               },
                               [](ArgPack& a, const LocalContext& ctx) {
                                 std::vector<std::int64_t> dims;
                                 for (std::size_t d = 0; d < ctx.global_inputs.at(0).size(); ++d)
                                   if (ctx.global_inputs[0][d] == 1) dims.push_back(static_cast<std::int64_t>(d));
                                 a.kwargs.emplace_back("__global_singletons", OpArg{OpArg::Kind::int_list, 0, 0, dims, {}, {}});
                               }};
  t["aten.squeeze.dim"] = {[squeeze](const ArgPack& a) {
                             const Tensor x = a.tensor(0);
                             return Outs{squeeze(x, {wrap_dim(a.integer(1, 0), x.dimension())}, false)};
                           },
                           {}};
  t["aten.squeeze.dims"] = {[squeeze](const ArgPack& a) {
                              const Tensor x = a.tensor(0);
                              std::vector<std::size_t> dims;
                              for (auto d : a.ints(1)) dims.push_back(wrap_dim(d, x.dimension()));
                              return Outs{squeeze(x, dims, false)};
                            },
                            {}};
  // repeat(x, repeats): new leading dims of size 1 first, then each dim concatenated repeats[o] times
  t["aten.repeat.default"] = {[](const ArgPack& a) {
                                Tensor x = a.tensor(0);
                                const auto reps = a.ints(1);
                                while (x.dimension() < reps.size()) x = unsqueezed(x, 0);
                                for (std::size_t d = 0; d < reps.size(); ++d) {
                                  if (reps[d] == 0) {
                                    Shape s = shape_of(x);
                                    s[d] = 0;
                                    x = Tensor::from_shape(s);
                                    continue;
                                  }
                                  x = concat(std::vector<Tensor>(static_cast<std::size_t>(reps[d]), x), d);
                                }
                                return Outs{x};
                              },
                              {}};
  t["aten.expand.default"] = {[](const ArgPack& a) {
                                const Tensor x = a.tensor(0);
                                const auto sizes = a.ints(1);
                                Shape s;
                                for (std::size_t i = 0; i < sizes.size(); ++i) {
                                  const std::size_t pad = sizes.size() - x.dimension();
                                  s.push_back(sizes[i] == -1 ? x.shape()[i - pad] : static_cast<std::size_t>(sizes[i]));
                                }
                                return Outs{Tensor(xt::broadcast(x, s))};
                              },
                              local_output_shape_at(1)};
}

void add_tensor_ops(RefTable& t) {
  t["aten.split.Tensor"] = {[](const ArgPack& a) {
                              const Tensor x = a.tensor(0);
                              const std::size_t dim = wrap_dim(a.integer(2, 0), x.dimension());
                              const auto n = static_cast<std::int64_t>(x.shape()[dim]), size = a.integer(1, 1);
                              std::vector<std::int64_t> sizes;
                              for (std::int64_t at = 0; at < n; at += size) sizes.push_back(std::min(size, n - at));
                              return split_pieces(x, dim, sizes);
                            },
                            {}};
  t["aten.split_with_sizes.default"] = {[](const ArgPack& a) {
                                          const Tensor x = a.tensor(0);
                                          return split_pieces(x, wrap_dim(a.integer(2, 0), x.dimension()), a.ints(1));
                                        },
                                        {}};
  t["aten.unbind.int"] = {[](const ArgPack& a) {
                            const Tensor x = a.tensor(0);
                            const std::size_t dim = wrap_dim(a.integer(1, 0), x.dimension());
                            Outs out;
                            Shape s = shape_of(x);
                            s.erase(s.begin() + static_cast<std::ptrdiff_t>(dim));
                            for (std::size_t i = 0; i < x.shape()[dim]; ++i) out.push_back(reshaped(take_along(x, dim, {i}), s));
                            return out;
                          },
                          {}};
  t["aten.select.int"] = {[](const ArgPack& a) {
                            const Tensor x = a.tensor(0);
                            const std::size_t dim = wrap_dim(a.integer(1, 0), x.dimension());
                            const auto n = static_cast<std::int64_t>(x.shape()[dim]);
                            const std::int64_t index = a.integer(2, 0) < 0 ? a.integer(2, 0) + n : a.integer(2, 0);
                            Shape s = shape_of(x);
                            s.erase(s.begin() + static_cast<std::ptrdiff_t>(dim));
                            return Outs{reshaped(take_along(x, dim, {static_cast<std::size_t>(index)}), s)};
                          },
                          {}};
  t["aten.slice.Tensor"] = {[](const ArgPack& a) {
                              const Tensor x = a.tensor(0);
                              const std::size_t dim = wrap_dim(a.integer(1, 0), x.dimension());
                              return Outs{take_along(x, dim, slice_indices(x.shape()[dim], a, 2, 3, 4))};
                            },
                            {}};
  t["aten.slice_scatter.default"] = {[](const ArgPack& a) {
                                       Tensor out = a.tensor(0);
                                       const Tensor src = a.tensor(1);
                                       const std::size_t dim = wrap_dim(a.integer(2, 0), out.dimension());
                                       const auto idx = slice_indices(out.shape()[dim], a, 3, 4, 5);
                                       Shape fits = shape_of(out);
                                       fits[dim] = idx.size();
                                       require_shape(src, fits, "slice_scatter: src");
                                       std::size_t outer = 1, inner = 1;
                                       for (std::size_t d = 0; d < dim; ++d) outer *= out.shape()[d];
                                       for (std::size_t d = dim + 1; d < out.dimension(); ++d) inner *= out.shape()[d];
                                       for (std::size_t o = 0; o < outer; ++o)
                                         for (std::size_t k = 0; k < idx.size(); ++k)
                                           std::copy_n(src.data() + (o * idx.size() + k) * inner, inner,
                                                       out.data() + (o * out.shape()[dim] + idx[k]) * inner);
                                       return Outs{out};
                                     },
                                     {}};
  t["aten.cat.default"] = {[](const ArgPack& a) {
                             std::vector<Tensor> parts;
                             for (auto& p : a.tensor_list(0))
                               if (!(p.dimension() == 1 && p.size() == 0)) parts.push_back(p);  // legacy empty 1-D inputs
                             if (parts.empty()) return Outs{Tensor::from_shape({0})};
                             return Outs{concat(parts, wrap_dim(a.integer(1, 0), parts[0].dimension()))};
                           },
                           {}};
  t["aten.stack.default"] = {[](const ArgPack& a) {
                               std::vector<Tensor> parts;
                               const auto list = a.tensor_list(0);
                               const std::size_t dim = wrap_dim(a.integer(1, 0), list.at(0).dimension() + 1);
                               parts.reserve(list.size());
                               for (auto& p : list) parts.push_back(unsqueezed(p, dim));
                               return Outs{concat(parts, dim)};
                             },
                             {}};
  const RefOp identity{[](const ArgPack& a) { return Outs{a.tensor(0)}; }, {}};
  for (const char* name : {"aten.clone.default", "aten.alias.default", "aten.detach.default", "aten.lift_fresh_copy.default",
                           "prims.device_put.default", "tg.log_tensor.default"})
    t[name] = identity;
  // empty_like's values are unspecified; zeros stand for "anything", equal on every rank.
  t["aten.empty_like.default"] = {[](const ArgPack& a) { return Outs{filled(shape_of(a.tensor(0)), 0.0)}; }, {}};
  t["aten._to_copy.default"] = {[](const ArgPack& a) {
                                  const OpArg* dtype = a.kwarg("dtype");
                                  return Outs{cast_to(a.tensor(0), dtype ? dtype->text : "")};
                                },
                                {}};
  t["prims.convert_element_type.default"] = {[](const ArgPack& a) { return Outs{cast_to(a.tensor(0), a.text(1, ""))}; }, {}};
  t["aten.copy.default"] = {[](const ArgPack& a) {
                              const Tensor dst = a.tensor(0);
                              return Outs{Tensor(xt::broadcast(a.tensor(1), dst.shape()))};
                            },
                            {}};
  t["aten.copy_.default"] = t["aten.copy.default"];
  // flip / prims.rev(x, dims): reversed along each listed dim
  const RefOp flip{[](const ArgPack& a) {
                     Tensor x = a.tensor(0);
                     for (auto d : a.ints(1)) {
                       const std::size_t dim = wrap_dim(d, x.dimension());
                       std::vector<std::size_t> idx(x.shape()[dim]);
                       for (std::size_t i = 0; i < idx.size(); ++i) idx[i] = idx.size() - 1 - i;
                       x = take_along(x, dim, idx);
                     }
                     return Outs{x};
                   },
                   {}};
  t["aten.flip.default"] = flip;
  t["prims.rev.default"] = flip;
  t["aten.zeros_like.default"] = {[](const ArgPack& a) { return Outs{filled(shape_of(a.tensor(0)), 0.0)}; }, {}};
  t["aten.ones_like.default"] = {[](const ArgPack& a) { return Outs{filled(shape_of(a.tensor(0)), 1.0)}; }, {}};
  t["aten.full_like.default"] = {[](const ArgPack& a) { return Outs{filled(shape_of(a.tensor(0)), a.number(1, 0.0))}; }, {}};
  t["aten.new_empty.default"] = {[](const ArgPack& a) { return Outs{filled(sizes_arg(a, 1), 0.0)}; }, local_output_shape_at(1)};
  t["aten.new_zeros.default"] = {[](const ArgPack& a) { return Outs{filled(sizes_arg(a, 1), 0.0)}; }, local_output_shape_at(1)};
  t["aten.new_ones.default"] = {[](const ArgPack& a) { return Outs{filled(sizes_arg(a, 1), 1.0)}; }, local_output_shape_at(1)};
  t["aten.new_full.default"] = {[](const ArgPack& a) { return Outs{filled(sizes_arg(a, 1), a.number(2, 0.0))}; }, local_output_shape_at(1)};
  t["aten.empty.memory_format"] = {[](const ArgPack& a) { return Outs{filled(sizes_arg(a, 0), 0.0)}; }, local_output_shape_at(0)};
  t["aten.zeros.default"] = {[](const ArgPack& a) { return Outs{filled(sizes_arg(a, 0), 0.0)}; }, local_output_shape_at(0)};
  t["aten.ones.default"] = {[](const ArgPack& a) { return Outs{filled(sizes_arg(a, 0), 1.0)}; }, local_output_shape_at(0)};
  t["aten.full.default"] = {[](const ArgPack& a) { return Outs{filled(sizes_arg(a, 0), a.number(1, 0.0))}; }, local_output_shape_at(0)};
}

}  // namespace

void add_layout_ops(RefTable& table) {
  add_views(table);
  add_tensor_ops(table);
}

}  // namespace ctshard::sim::detail
