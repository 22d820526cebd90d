// tests/sim/sim_ops_math.cpp — reference reductions (sum / mean / amax / amin / max / min / argmax /
// logsumexp / var / std), the softmax family, layer norm forward and backward, embedding (with the
// row-wise mask DTensor's _MaskPartial applies), embedding backward and dropout at p = 0. Written
// with plain loops over row-major data so empty local shards behave exactly as torch's kernels:
// sum of nothing is 0, mean is NaN, and max / min / argmax of nothing raise, as torch does.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "ctshard/error.hpp"
#include "sim_ops.hpp"

namespace ctshard::sim::detail {

namespace {

using Outs = std::vector<Tensor>;

/// Reduced dims of argument `pos` as a mask: absent / None / [] = every dim.
std::vector<bool> reduced_mask(const ArgPack& a, std::size_t pos, std::size_t rank) {
  std::vector<bool> mask(rank, false);
  const auto dims = a.ints(pos);
  if (dims.empty()) std::fill(mask.begin(), mask.end(), true);
  for (auto d : dims) mask[wrap_dim(d, rank)] = true;
  return mask;
}

/// Input values grouped by output element (row-major order of the reduced coordinates inside a
/// group) and the output shapes without / with keepdim.
struct Groups {
  Shape shape, keep_shape;
  std::vector<std::vector<double>> values;
};

Groups group_by(const Tensor& x, const std::vector<bool>& reduced) {
  Groups g;
  const Shape in = shape_of(x);
  for (std::size_t d = 0; d < in.size(); ++d) {
    g.keep_shape.push_back(reduced[d] ? 1 : in[d]);
    if (!reduced[d]) g.shape.push_back(in[d]);
  }
  std::size_t outputs = 1;
  for (auto s : g.shape) outputs *= s;
  g.values.resize(outputs);
  std::vector<std::size_t> idx(in.size(), 0);
  for (std::size_t e = 0; e < x.size(); ++e) {
    std::size_t o = 0;
    for (std::size_t d = 0; d < in.size(); ++d)
      if (!reduced[d]) o = o * in[d] + idx[d];
    g.values[o].push_back(x.data()[e]);
    for (std::size_t d = in.size(); d-- > 0;) {
      if (++idx[d] < in[d]) break;
      idx[d] = 0;
    }
  }
  return g;
}

/// One value per group, shaped with or without the reduced dims.
template <class F>
Tensor reduce_groups(const Tensor& x, const std::vector<bool>& reduced, bool keepdim, F f) {
  const Groups g = group_by(x, reduced);
  Tensor out = Tensor::from_shape(keepdim ? g.keep_shape : g.shape);
  for (std::size_t o = 0; o < g.values.size(); ++o) out.data()[o] = f(g.values[o]);
  return out;
}

[[noreturn]] void empty_reduction(const char* op) {
  throw error(std::string("sim: ") + op + " over an empty dim (torch raises: the reduction has no identity)");
}

double sum_of(const std::vector<double>& v) { return std::accumulate(v.begin(), v.end(), 0.0); }
double mean_of(const std::vector<double>& v) { return v.empty() ? std::nan("") : sum_of(v) / static_cast<double>(v.size()); }
double max_of(const std::vector<double>& v) {
  if (v.empty()) empty_reduction("max");
  return *std::max_element(v.begin(), v.end());
}
double min_of(const std::vector<double>& v) {
  if (v.empty()) empty_reduction("min");
  return *std::min_element(v.begin(), v.end());
}
double argmax_of(const std::vector<double>& v) {
  if (v.empty()) empty_reduction("argmax");
  return static_cast<double>(std::max_element(v.begin(), v.end()) - v.begin());
}
double argmin_of(const std::vector<double>& v) {
  if (v.empty()) empty_reduction("argmin");
  return static_cast<double>(std::min_element(v.begin(), v.end()) - v.begin());
}
double logsumexp_of(const std::vector<double>& v) {
  if (v.empty()) return -std::numeric_limits<double>::infinity();
  const double m = *std::max_element(v.begin(), v.end());
  double s = 0;
  for (double x : v) s += std::exp(x - m);
  return m + std::log(s);
}
double var_of(const std::vector<double>& v, double correction) {
  const double m = mean_of(v);
  double s = 0;
  for (double x : v) s += (x - m) * (x - m);
  return s / (static_cast<double>(v.size()) - correction);
}

/// Applies `f` to every 1-D lane along `dim` of the tensors in `ts` (same shape); `f` gets the
/// lanes and writes the output lane.
template <class F>
Tensor map_lanes(const std::vector<Tensor>& ts, std::size_t dim, F f) {
  const Shape shape = shape_of(ts.at(0));
  for (std::size_t k = 1; k < ts.size(); ++k) require_shape(ts[k], shape, "lane operand " + std::to_string(k));
  if (!shape.empty()) require_rank(ts[0], dim + 1, "lane operand 0");
  std::size_t outer = 1, inner = 1;
  for (std::size_t d = 0; d < dim; ++d) outer *= shape[d];
  for (std::size_t d = dim + 1; d < shape.size(); ++d) inner *= shape[d];
  const std::size_t n = shape.empty() ? 1 : shape[dim];
  Tensor out = Tensor::from_shape(shape);
  std::vector<std::vector<double>> lanes(ts.size(), std::vector<double>(n));
  std::vector<double> result(n);
  for (std::size_t o = 0; o < outer; ++o)
    for (std::size_t i = 0; i < inner; ++i) {
      for (std::size_t k = 0; k < ts.size(); ++k)
        for (std::size_t j = 0; j < n; ++j) lanes[k][j] = ts[k].data()[(o * n + j) * inner + i];
      f(lanes, result);
      for (std::size_t j = 0; j < n; ++j) out.data()[(o * n + j) * inner + i] = result[j];
    }
  return out;
}

void softmax_lane(const std::vector<std::vector<double>>& in, std::vector<double>& out) {
  const double m = in[0].empty() ? 0.0 : *std::max_element(in[0].begin(), in[0].end());
  double s = 0;
  for (std::size_t j = 0; j < in[0].size(); ++j) s += (out[j] = std::exp(in[0][j] - m));
  for (auto& v : out) v /= s;
}

Tensor zero_scalar() { return Tensor(0.0); }

void add_reductions(RefTable& t) {
  auto all_dims = [](const Tensor& x) { return std::vector<bool>(x.dimension(), true); };
  t["aten.sum.default"] = {[all_dims](const ArgPack& a) {
                             const Tensor x = a.tensor(0);
                             return Outs{reduce_groups(x, all_dims(x), false, sum_of)};
                           },
                           {}};
  auto by_dims = [](auto f) {
    return RefOp{[f](const ArgPack& a) {
                   const Tensor x = a.tensor(0);
                   return Outs{reduce_groups(x, reduced_mask(a, 1, x.dimension()), a.integer(2, 0) != 0, f)};
                 },
                 {}};
  };
  auto all = [all_dims](auto f) {
    return RefOp{[f, all_dims](const ArgPack& a) {
                   const Tensor x = a.tensor(0);
                   return Outs{reduce_groups(x, all_dims(x), false, f)};
                 },
                 {}};
  };
  t["aten.sum.dim_IntList"] = by_dims(sum_of);
  t["aten.amax.default"] = by_dims(max_of);
  t["aten.amin.default"] = by_dims(min_of);
  t["aten.max.default"] = all(max_of);
  t["aten.min.default"] = all(min_of);
  t["aten.mean.default"] = all(mean_of);
  t["aten.mean.dim"] = by_dims(mean_of);
  t["aten.logsumexp.default"] = by_dims(logsumexp_of);
  for (const bool is_max : {true, false}) {
    t[is_max ? "aten.max.dim" : "aten.min.dim"] = {
        [is_max](const ArgPack& a) {
          const Tensor x = a.tensor(0);
          std::vector<bool> mask(x.dimension(), false);
          if (x.dimension()) mask[wrap_dim(a.integer(1, 0), x.dimension())] = true;
          const bool keep = a.integer(2, 0) != 0;
          return Outs{reduce_groups(x, mask, keep, is_max ? max_of : min_of), reduce_groups(x, mask, keep, is_max ? argmax_of : argmin_of)};
        },
        {}};
    t[is_max ? "aten.argmax.default" : "aten.argmin.default"] = {
        [is_max](const ArgPack& a) {
          const Tensor x = a.tensor(0);
          // dim None: the index into the flattened tensor
          std::vector<bool> mask(x.dimension(), !a.has(1));
          if (a.has(1) && x.dimension()) mask[wrap_dim(a.integer(1, 0), x.dimension())] = true;
          return Outs{reduce_groups(x, mask, a.integer(2, 0) != 0, is_max ? argmax_of : argmin_of)};
        },
        {}};
  }
  // var / std / var_mean (self, dim=None, *, correction=1, keepdim=False)
  auto var_like = [](const ArgPack& a, bool take_sqrt) {
    const Tensor x = a.tensor(0);
    const OpArg* c = a.kwarg("correction");
    const double correction = c == nullptr ? 1.0 : (c->kind == OpArg::Kind::floating ? c->floating : static_cast<double>(c->integer));
    const OpArg* k = a.kwarg("keepdim");
    const bool keep = k != nullptr && k->integer != 0;
    return reduce_groups(x, reduced_mask(a, 1, x.dimension()), keep, [correction, take_sqrt](const std::vector<double>& v) {
      const double var = var_of(v, correction);
      return take_sqrt ? std::sqrt(var) : var;
    });
  };
  t["aten.var.correction"] = {[var_like](const ArgPack& a) { return Outs{var_like(a, false)}; }, {}};
  t["aten.std.correction"] = {[var_like](const ArgPack& a) { return Outs{var_like(a, true)}; }, {}};
  t["aten.var_mean.correction"] = {
      [var_like](const ArgPack& a) {
        const Tensor x = a.tensor(0);
        const OpArg* k = a.kwarg("keepdim");
        return Outs{var_like(a, false), reduce_groups(x, reduced_mask(a, 1, x.dimension()), k != nullptr && k->integer != 0, mean_of)};
      },
      {}};
}

void add_softmax(RefTable& t) {
  const RefOp softmax{[](const ArgPack& a) {
                        const Tensor x = a.tensor(0);
                        return Outs{map_lanes({x}, wrap_dim(a.integer(1, 0), x.dimension()), softmax_lane)};
                      },
                      {}};
  t["aten._softmax.default"] = softmax;
  t["aten._safe_softmax.default"] = softmax;
  t["aten._log_softmax.default"] = {[](const ArgPack& a) {
                                      const Tensor x = a.tensor(0);
                                      return Outs{map_lanes({x}, wrap_dim(a.integer(1, 0), x.dimension()), [](const auto& in, auto& out) {
                                        const double lse = logsumexp_of(in[0]);
                                        for (std::size_t j = 0; j < out.size(); ++j) out[j] = in[0][j] - lse;
                                      })};
                                    },
                                    {}};
  // (grad_output, output, dim, input_dtype)
  t["aten._softmax_backward_data.default"] = {
      [](const ArgPack& a) {
        const Tensor g = a.tensor(0), y = a.tensor(1);
        return Outs{map_lanes({g, y}, wrap_dim(a.integer(2, 0), g.dimension()), [](const auto& in, auto& out) {
          double dot = 0;
          for (std::size_t j = 0; j < out.size(); ++j) dot += in[0][j] * in[1][j];
          for (std::size_t j = 0; j < out.size(); ++j) out[j] = in[1][j] * (in[0][j] - dot);
        })};
      },
      {}};
  t["aten._log_softmax_backward_data.default"] = {
      [](const ArgPack& a) {
        const Tensor g = a.tensor(0), y = a.tensor(1);
        return Outs{map_lanes({g, y}, wrap_dim(a.integer(2, 0), g.dimension()), [](const auto& in, auto& out) {
          const double s = sum_of(in[0]);
          for (std::size_t j = 0; j < out.size(); ++j) out[j] = in[0][j] - std::exp(in[1][j]) * s;
        })};
      },
      {}};
}

/// Number of rows (leading elements) and row length (normalized elements) of a layer norm input.
std::pair<std::size_t, std::size_t> rows_cols(const Tensor& x, std::size_t normalized) {
  require_rank(x, normalized, "layer norm input");
  std::size_t cols = 1;
  for (std::size_t d = x.dimension() - normalized; d < x.dimension(); ++d) cols *= x.shape()[d];
  return {cols == 0 ? 0 : x.size() / cols, cols};
}

Shape stats_shape(const Tensor& x, std::size_t normalized) {
  Shape s = shape_of(x);
  for (std::size_t d = x.dimension() - normalized; d < x.dimension(); ++d) s[d] = 1;
  return s;
}

void add_layer_norm(RefTable& t) {
  // (input, normalized_shape, weight?, bias?, eps) -> (out, mean, rstd)
  t["aten.native_layer_norm.default"] = {
      [](const ArgPack& a) {
        const Tensor x = a.tensor(0);
        const std::size_t k = a.ints(1).size();
        const auto [rows, cols] = rows_cols(x, k);
        const double eps = a.number(4, 1e-5);
        Tensor out = Tensor::from_shape(x.shape()), mean = Tensor::from_shape(stats_shape(x, k)), rstd = Tensor::from_shape(stats_shape(x, k));
        const Tensor w = a.has(2) ? a.tensor(2) : Tensor(1.0), b = a.has(3) ? a.tensor(3) : Tensor(0.0);
        require_rank(x, k, "native_layer_norm: input");
        if ((w.size() != 1 && w.size() != cols) || (b.size() != 1 && b.size() != cols))
          throw error("sim: native_layer_norm: weight / bias do not match the normalized shape");
        for (std::size_t r = 0; r < rows; ++r) {
          const double* row = x.data() + r * cols;
          double m = 0, v = 0;
          for (std::size_t c = 0; c < cols; ++c) m += row[c];
          m /= static_cast<double>(cols);
          for (std::size_t c = 0; c < cols; ++c) v += (row[c] - m) * (row[c] - m);
          const double rs = 1.0 / std::sqrt(v / static_cast<double>(cols) + eps);
          mean.data()[r] = m;
          rstd.data()[r] = rs;
          for (std::size_t c = 0; c < cols; ++c)
            out.data()[r * cols + c] = (row[c] - m) * rs * w.data()[w.size() == 1 ? 0 : c] + b.data()[b.size() == 1 ? 0 : c];
        }
        return Outs{out, mean, rstd};
      },
      {}};
  // (grad_out, input, normalized_shape, mean, rstd, weight?, bias?, output_mask) -> (grad_input, grad_weight, grad_bias)
  t["aten.native_layer_norm_backward.default"] = {
      [](const ArgPack& a) {
        const Tensor g = a.tensor(0), x = a.tensor(1), mean = a.tensor(3), rstd = a.tensor(4);
        const std::size_t k = a.ints(2).size();
        const auto [rows, cols] = rows_cols(x, k);
        const auto mask = a.ints(7);
        const bool has_w = a.has(5), has_b = a.has(6);
        Shape wshape(x.shape().end() - static_cast<std::ptrdiff_t>(k), x.shape().end());
        Tensor gi = Tensor::from_shape(x.shape()), gw = Tensor::from_shape(wshape), gb = Tensor::from_shape(wshape);
        gw.fill(0.0);
        gb.fill(0.0);
        const Tensor w = has_w ? a.tensor(5) : Tensor(1.0);
        require_rank(x, k, "native_layer_norm_backward: input");
        require_shape(g, shape_of(x), "native_layer_norm_backward: grad_out");
        if (mean.size() != rows || rstd.size() != rows || (w.size() != 1 && w.size() != cols))
          throw error("sim: native_layer_norm_backward: mean / rstd / weight do not match the input");
        std::vector<double> xhat(cols), gw_row(cols);
        for (std::size_t r = 0; r < rows; ++r) {
          double mg = 0, mgx = 0;
          for (std::size_t c = 0; c < cols; ++c) {
            xhat[c] = (x.data()[r * cols + c] - mean.data()[r]) * rstd.data()[r];
            gw_row[c] = g.data()[r * cols + c] * w.data()[w.size() == 1 ? 0 : c];
            mg += gw_row[c];
            mgx += gw_row[c] * xhat[c];
            gw.data()[c] += g.data()[r * cols + c] * xhat[c];
            gb.data()[c] += g.data()[r * cols + c];
          }
          mg /= static_cast<double>(cols);
          mgx /= static_cast<double>(cols);
          for (std::size_t c = 0; c < cols; ++c) gi.data()[r * cols + c] = rstd.data()[r] * (gw_row[c] - mg - xhat[c] * mgx);
        }
        auto on = [&mask](std::size_t i) { return mask.size() != 3 || mask[i] != 0; };
        return Outs{on(0) ? gi : zero_scalar(), on(1) && has_w ? gw : zero_scalar(), on(2) && has_b ? gb : zero_scalar()};
      },
      {}};
}

/// An index tensor's element as an integer: refuses values that are not whole numbers within
/// ±2^62 (a Partial or corrupted index tensor), so the cast below is always defined.
std::int64_t index_value(double v, const char* what) {
  if (!(std::abs(v) <= 4.611686018427387904e18) || v != std::floor(v))
    throw error(std::string("sim: ") + what + ": index " + std::to_string(v) + " is not an integer");
  return static_cast<std::int64_t>(v);
}

/// Row-wise sharded embedding: DTensor's _MaskPartial shifts the indices by the local block's first
/// row and zeroes rows of indices outside the block; the offset is passed as kwarg "__row_offset".
void embedding_mask(ArgPack& a, const LocalContext& ctx) {
  const Spec& weight = ctx.input_specs.at(0);
  std::size_t start = 0, size = ctx.global_inputs.at(0).at(0);
  bool row_wise = false;
  for (std::size_t d = 0; d < weight.size(); ++d) {
    if (!weight[d].is_shard() || weight[d].dim != 0) continue;
    row_wise = true;
    const auto [b, e] = chunk_bounds(size, ctx.mesh->size(d), ctx.coords[d]);
    start += b;
    size = e - b;
  }
  if (row_wise) a.kwargs.emplace_back("__row_offset", OpArg{OpArg::Kind::integer, static_cast<std::int64_t>(start), 0, {}, {}, {}});
}

void add_nn(RefTable& t) {
  // (weight [V, D], indices [*I], padding_idx, scale_grad_by_freq, sparse) -> [*I, D]
  t["aten.embedding.default"] = {[](const ArgPack& a) {
                                   const Tensor w = a.tensor(0), idx = a.tensor(1);
                                   if (w.dimension() != 2) throw error("sim: embedding: weight must be 2-D");
                                   const OpArg* offset = a.kwarg("__row_offset");
                                   const std::size_t rows = w.shape()[0], dim = w.shape()[1];
                                   Shape shape = shape_of(idx);
                                   shape.push_back(dim);
                                   Tensor out = Tensor::from_shape(shape);
                                   out.fill(0.0);
                                   for (std::size_t p = 0; p < idx.size(); ++p) {
                                     auto row = index_value(idx.data()[p], "embedding") - (offset ? offset->integer : 0);
                                     if (row < 0 || row >= static_cast<std::int64_t>(rows)) {
                                       if (offset) continue;  // masked: another rank holds this row
                                       throw error("sim: embedding index out of range");
                                     }
                                     std::copy_n(w.data() + static_cast<std::size_t>(row) * dim, dim, out.data() + p * dim);
                                   }
                                   return Outs{out};
                                 },
                                 embedding_mask};
  // (grad_output [*I, D], indices [*I], num_weights, padding_idx, scale_grad_by_freq) -> [V, D]
  t["aten.embedding_dense_backward.default"] = {[](const ArgPack& a) {
                                                  const Tensor g = a.tensor(0), idx = a.tensor(1);
                                                  const auto rows = static_cast<std::size_t>(a.integer(2, 0));
                                                  const std::int64_t padding = a.integer(3, -1);
                                                  const bool by_freq = a.integer(4, 0) != 0;
                                                  const std::size_t dim = g.dimension() ? g.shape()[g.dimension() - 1] : 1;
                                                  Shape expected = shape_of(idx);
                                                  expected.push_back(dim);
                                                  require_shape(g, expected, "embedding_dense_backward: grad_output");
                                                  Tensor out = Tensor::from_shape({rows, dim});
                                                  out.fill(0.0);
                                                  std::vector<double> count(rows, 0.0);
                                                  std::vector<std::size_t> row_of(idx.size());
                                                  for (std::size_t p = 0; p < idx.size(); ++p) {
                                                    const std::int64_t r = index_value(idx.data()[p], "embedding_dense_backward");
                                                    if (r < 0 || static_cast<std::size_t>(r) >= rows)
                                                      throw error("sim: embedding_dense_backward: index out of range");
                                                    row_of[p] = static_cast<std::size_t>(r);
                                                    count[row_of[p]] += 1;
                                                  }
                                                  for (std::size_t p = 0; p < idx.size(); ++p) {
                                                    const std::size_t row = row_of[p];
                                                    if (static_cast<std::int64_t>(row) == padding) continue;
                                                    const double scale = by_freq ? 1.0 / count[row] : 1.0;
                                                    for (std::size_t c = 0; c < dim; ++c) out.data()[row * dim + c] += scale * g.data()[p * dim + c];
                                                  }
                                                  return Outs{out};
                                                },
                                                {}};
  // (input, p, train) -> (out, mask); only p = 0 is deterministic
  t["aten.native_dropout.default"] = {[](const ArgPack& a) {
                                        if (a.number(1, 0.0) != 0.0) throw error("sim: native_dropout is simulated with p = 0 only");
                                        const Tensor x = a.tensor(0);
                                        Tensor ones = Tensor::from_shape(x.shape());
                                        ones.fill(1.0);
                                        return Outs{x, ones};
                                      },
                                      {}};
  // (grad_output, mask, scale)
  t["aten.native_dropout_backward.default"] = {[](const ArgPack& a) { return Outs{Tensor(a.tensor(0) * a.tensor(1) * a.number(2, 1.0))}; }, {}};
}

}  // namespace

void add_math_ops(RefTable& table) {
  add_reductions(table);
  add_softmax(table);
  add_layer_norm(table);
  add_nn(table);
}

}  // namespace ctshard::sim::detail
