// tests/sim/sim_ops.cpp — reference aten ops on xt::xarray<double> (see sim_ops.hpp). Each op is a
// few lines of plain math; bool results are 0/1 doubles.
#include "sim_ops.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <numbers>
#include <utility>

#include <xtensor/xmath.hpp>
#include <xtensor/xoperation.hpp>

#include "ctshard/error.hpp"

namespace ctshard::sim {

// ---- ArgPack -----------------------------------------------------------------------------------

Tensor ArgPack::tensor(std::size_t i) const {
  if (i >= args.size()) throw error("sim: missing argument " + std::to_string(i));
  const OpArg& a = args[i];
  if (a.kind == OpArg::Kind::tensor) return tensors.at(static_cast<std::size_t>(a.integer));
  if (a.kind == OpArg::Kind::floating) return Tensor(a.floating);
  if (a.kind == OpArg::Kind::integer || a.kind == OpArg::Kind::boolean) return Tensor(static_cast<double>(a.integer));
  throw error("sim: argument " + std::to_string(i) + " is not a tensor or number");
}

std::vector<Tensor> ArgPack::tensor_list(std::size_t i) const {
  if (i >= args.size() || args[i].kind != OpArg::Kind::tensor_list) throw error("sim: argument " + std::to_string(i) + " is not a tensor list");
  std::vector<Tensor> out;
  for (auto k : args[i].ints) out.push_back(tensors.at(static_cast<std::size_t>(k)));
  return out;
}

double ArgPack::number(std::size_t i, double fallback) const {
  if (!has(i)) return fallback;
  const OpArg& a = args[i];
  if (a.kind == OpArg::Kind::floating) return a.floating;
  if (a.kind == OpArg::Kind::integer || a.kind == OpArg::Kind::boolean) return static_cast<double>(a.integer);
  throw error("sim: argument " + std::to_string(i) + " is not a number");
}

std::int64_t ArgPack::integer(std::size_t i, std::int64_t fallback) const {
  if (!has(i)) return fallback;
  const OpArg& a = args[i];
  if (a.kind == OpArg::Kind::integer || a.kind == OpArg::Kind::boolean) return a.integer;
  throw error("sim: argument " + std::to_string(i) + " is not an integer");
}

std::vector<std::int64_t> ArgPack::ints(std::size_t i) const {
  if (!has(i)) return {};
  if (args[i].kind == OpArg::Kind::int_list) return args[i].ints;
  if (args[i].kind == OpArg::Kind::integer) return {args[i].integer};
  throw error("sim: argument " + std::to_string(i) + " is not an int list");
}

std::string ArgPack::text(std::size_t i, std::string fallback) const {
  if (!has(i)) return fallback;
  return args[i].text;
}

const OpArg* ArgPack::kwarg(std::string_view name) const noexcept {
  for (const auto& [k, v] : kwargs)
    if (k == name) return &v;
  return nullptr;
}

double ArgPack::number_or_kw(std::size_t i, std::string_view name, double fallback) const {
  if (has(i)) return number(i, fallback);
  const OpArg* a = kwarg(name);
  if (a == nullptr) return fallback;
  return a->kind == OpArg::Kind::floating ? a->floating : static_cast<double>(a->integer);
}

// ---- einsum --------------------------------------------------------------------------------------

Tensor einsum2(std::string_view equation, const Tensor& lhs, const Tensor& rhs) {
  const auto arrow = equation.find("->");
  const auto comma = equation.find(',');
  if (arrow == std::string_view::npos || comma == std::string_view::npos || comma > arrow) throw error("sim::einsum2: bad equation");
  const std::string_view labels[3] = {equation.substr(0, comma), equation.substr(comma + 1, arrow - comma - 1), equation.substr(arrow + 2)};
  const Tensor* operands[2] = {&lhs, &rhs};
  // Every label gets a slot: output labels first, then the summed ones.
  std::array<std::size_t, 128> slot{};
  std::vector<std::size_t> size;
  auto slot_of = [&](char c) -> std::size_t& { return slot[static_cast<unsigned char>(c) & 127u]; };
  for (auto lab : {labels[2], labels[0], labels[1]})
    for (char c : lab)
      if (slot_of(c) == 0) {
        size.push_back(0);
        slot_of(c) = size.size();  // 1-based while building
      }
  std::vector<bool> sized(size.size(), false);
  for (int k = 0; k < 2; ++k) {
    if (labels[k].size() != operands[k]->dimension()) throw error("sim::einsum2: operand rank does not match the equation");
    for (std::size_t i = 0; i < labels[k].size(); ++i) {
      const std::size_t j = slot_of(labels[k][i]) - 1;
      const std::size_t n = operands[k]->shape()[i];
      if (sized[j] && size[j] != n)
        throw error(std::string("sim::einsum2: label '") + labels[k][i] + "' has sizes " + std::to_string(size[j]) + " and " + std::to_string(n));
      size[j] = n;
      sized[j] = true;
    }
  }
  for (char c : labels[2])
    if (!sized[slot_of(c) - 1]) throw error(std::string("sim::einsum2: output label '") + c + "' is in no operand");
  // Row-major strides of each operand and of the output per slot; 0 where the label is absent.
  auto strides_for = [&](std::string_view lab) {
    std::vector<std::size_t> st(size.size(), 0);
    std::size_t s = 1;
    for (std::size_t i = lab.size(); i-- > 0;) {
      const std::size_t j = slot_of(lab[i]) - 1;
      st[j] = s;
      s *= size[j];
    }
    return st;
  };
  const auto sl = strides_for(labels[0]), sr = strides_for(labels[1]), so = strides_for(labels[2]);
  Shape out_shape;
  for (char c : labels[2]) out_shape.push_back(size[slot_of(c) - 1]);
  Tensor out = Tensor::from_shape(out_shape);
  out.fill(0.0);
  std::size_t total = 1;
  for (auto s : size) total *= s;
  std::vector<std::size_t> idx(size.size(), 0);
  for (std::size_t n = 0; n < total; ++n) {
    std::size_t ol = 0, orr = 0, oo = 0;
    for (std::size_t i = 0; i < size.size(); ++i) ol += idx[i] * sl[i], orr += idx[i] * sr[i], oo += idx[i] * so[i];
    out.data()[oo] += lhs.data()[ol] * rhs.data()[orr];
    for (std::size_t i = size.size(); i-- > 0;) {
      if (++idx[i] < size[i]) break;
      idx[i] = 0;
    }
  }
  return out;
}

// ---- helpers ---------------------------------------------------------------------------------------

std::size_t wrap_dim(std::int64_t dim, std::size_t rank) {
  const auto r = static_cast<std::int64_t>(rank == 0 ? 1 : rank);
  const std::int64_t d = dim < 0 ? dim + r : dim;
  if (d < 0 || d >= r) throw error("sim: dim " + std::to_string(dim) + " out of range for rank " + std::to_string(rank));
  return static_cast<std::size_t>(d);
}

Tensor take_along(const Tensor& t, std::size_t dim, const std::vector<std::size_t>& indices) {
  require_rank(t, dim + 1, "take_along");
  Shape shape = shape_of(t);
  std::size_t outer = 1, inner = 1;
  for (std::size_t d = 0; d < dim; ++d) outer *= shape[d];
  for (std::size_t d = dim + 1; d < shape.size(); ++d) inner *= shape[d];
  const std::size_t n = shape[dim];
  shape[dim] = indices.size();
  Tensor out = Tensor::from_shape(shape);
  double* dst = out.data();
  for (std::size_t o = 0; o < outer; ++o)
    for (auto i : indices) {
      if (i >= n) throw error("sim: index " + std::to_string(i) + " out of range " + std::to_string(n));
      dst = std::copy_n(t.data() + (o * n + i) * inner, inner, dst);
    }
  return out;
}

void require_shape(const Tensor& t, const Shape& expected, std::string_view what) {
  const Shape got = shape_of(t);
  if (got == expected) return;
  const auto text = [](const Shape& s) {
    std::string out = "[";
    for (std::size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
    return out + "]";
  };
  throw error("sim: " + std::string(what) + ": shape " + text(got) + ", expected " + text(expected));
}

void require_rank(const Tensor& t, std::size_t rank, std::string_view what) {
  if (t.dimension() < rank)
    throw error("sim: " + std::string(what) + ": rank " + std::to_string(t.dimension()) + ", expected at least " + std::to_string(rank));
}

Tensor reshaped(const Tensor& t, const Shape& shape) {
  Tensor out = t;
  out.reshape(shape);
  return out;
}

// ---- registry of reference ops ---------------------------------------------------------------------

namespace {

using Table = detail::RefTable;
using Outs = std::vector<Tensor>;

Tensor as_bool(const Tensor& t) { return xt::cast<double>(xt::not_equal(t, 0.0)); }
Tensor bitwise(const Tensor& a, const Tensor& b, char op) {
  auto ia = xt::cast<std::int64_t>(a);
  auto ib = xt::cast<std::int64_t>(b);
  if (op == '&') return xt::cast<double>(ia & ib);
  if (op == '|') return xt::cast<double>(ia | ib);
  return xt::cast<double>(ia ^ ib);
}
Tensor normal_cdf(const Tensor& x) { return 0.5 * (1.0 + xt::erf(x / std::numbers::sqrt2)); }
Tensor gelu(const Tensor& x, const std::string& approximate) {
  if (approximate == "tanh") {
    const double k = std::sqrt(2.0 / std::numbers::pi);
    return 0.5 * x * (1.0 + xt::tanh(k * (x + 0.044715 * x * x * x)));
  }
  return x * normal_cdf(x);
}
Tensor sigmoid(const Tensor& x) { return 1.0 / (1.0 + xt::exp(-x)); }

template <class F>
RefOp unary(F f) {
  return {[f](const ArgPack& a) { return Outs{Tensor(f(a.tensor(0)))}; }, {}};
}
template <class F>
RefOp binary(F f) {
  return {[f](const ArgPack& a) { return Outs{Tensor(f(a.tensor(0), a.tensor(1)))}; }, {}};
}

void add_pointwise(Table& t) {
  auto& T = t;
  T["aten.abs.default"] = unary([](const Tensor& x) { return xt::abs(x); });
  T["aten.sin.default"] = unary([](const Tensor& x) { return xt::sin(x); });
  T["aten.cos.default"] = unary([](const Tensor& x) { return xt::cos(x); });
  T["aten.sqrt.default"] = unary([](const Tensor& x) { return xt::sqrt(x); });
  T["aten.rsqrt.default"] = unary([](const Tensor& x) { return 1.0 / xt::sqrt(x); });
  T["aten.reciprocal.default"] = unary([](const Tensor& x) { return 1.0 / x; });
  T["aten.gelu.default"] = {[](const ArgPack& a) {
                              const OpArg* k = a.kwarg("approximate");
                              return Outs{gelu(a.tensor(0), k ? k->text : a.text(1, "none"))};
                            },
                            {}};
  T["aten.silu.default"] = unary([](const Tensor& x) { return x * sigmoid(x); });
  T["aten.atan2.default"] = binary([](const Tensor& x, const Tensor& y) { return xt::atan2(x, y); });
  T["aten.pow.Tensor_Tensor"] = binary([](const Tensor& x, const Tensor& y) { return xt::pow(x, y); });
  T["aten.pow.Tensor_Scalar"] = binary([](const Tensor& x, const Tensor& y) { return xt::pow(x, y); });
  T["aten.addcmul.default"] = {[](const ArgPack& a) { return Outs{a.tensor(0) + a.number_or_kw(3, "value", 1.0) * a.tensor(1) * a.tensor(2)}; }, {}};
  T["aten.addcdiv.default"] = {[](const ArgPack& a) { return Outs{a.tensor(0) + a.number_or_kw(3, "value", 1.0) * a.tensor(1) / a.tensor(2)}; }, {}};
  T["aten.where.self"] = {[](const ArgPack& a) { return Outs{xt::where(xt::not_equal(a.tensor(0), 0.0), a.tensor(1), a.tensor(2))}; }, {}};
  T["aten.lerp.Tensor"] = {[](const ArgPack& a) { return Outs{a.tensor(0) + a.tensor(2) * (a.tensor(1) - a.tensor(0))}; }, {}};
  for (const char* kind : {"Tensor", "Scalar"}) {
    const std::string k = kind;
    T["aten.eq." + k] = binary([](const Tensor& x, const Tensor& y) { return xt::cast<double>(xt::equal(x, y)); });
    T["aten.ne." + k] = binary([](const Tensor& x, const Tensor& y) { return xt::cast<double>(xt::not_equal(x, y)); });
    T["aten.lt." + k] = binary([](const Tensor& x, const Tensor& y) { return xt::cast<double>(xt::less(x, y)); });
    T["aten.le." + k] = binary([](const Tensor& x, const Tensor& y) { return xt::cast<double>(xt::less_equal(x, y)); });
    T["aten.gt." + k] = binary([](const Tensor& x, const Tensor& y) { return xt::cast<double>(xt::greater(x, y)); });
    T["aten.ge." + k] = binary([](const Tensor& x, const Tensor& y) { return xt::cast<double>(xt::greater_equal(x, y)); });
  }
  T["aten.bitwise_and.Tensor"] = binary([](const Tensor& x, const Tensor& y) { return bitwise(x, y, '&'); });
  T["aten.bitwise_or.Tensor"] = binary([](const Tensor& x, const Tensor& y) { return bitwise(x, y, '|'); });
  T["aten.bitwise_xor.Tensor"] = binary([](const Tensor& x, const Tensor& y) { return bitwise(x, y, '^'); });
  T["aten.bitwise_not.default"] = unary([](const Tensor& x) { return xt::cast<double>(~xt::cast<std::int64_t>(x)); });
  T["aten.logical_not.default"] = unary([](const Tensor& x) { return xt::cast<double>(xt::equal(x, 0.0)); });
  T["aten.logical_and.default"] = binary([](const Tensor& x, const Tensor& y) { return as_bool(x) * as_bool(y); });
  T["aten.logical_or.default"] = binary([](const Tensor& x, const Tensor& y) { return xt::maximum(as_bool(x), as_bool(y)); });
  T["aten.isnan.default"] = unary([](const Tensor& x) { return xt::cast<double>(xt::isnan(x)); });
  T["aten.sign.default"] = unary([](const Tensor& x) { return xt::sign(x); });
  T["aten.square.default"] = unary([](const Tensor& x) { return x * x; });
  T["aten.sigmoid_backward.default"] = binary([](const Tensor& g, const Tensor& y) { return g * (1.0 - y) * y; });
  T["aten.tanh_backward.default"] = binary([](const Tensor& g, const Tensor& y) { return g * (1.0 - y * y); });
  T["aten.gelu_backward.default"] =
      binary([](const Tensor& g, const Tensor& x) { return g * (normal_cdf(x) + x * xt::exp(-0.5 * x * x) / std::sqrt(2.0 * std::numbers::pi)); });
  T["aten.threshold_backward.default"] = {
      [](const ArgPack& a) { return Outs{xt::where(xt::less_equal(a.tensor(1), a.number(2, 0.0)), 0.0, a.tensor(0))}; }, {}};
  for (const char* name : {"aten.rsub.Scalar", "aten.rsub.Tensor"})
    T[name] = {[](const ArgPack& a) { return Outs{a.tensor(1) - a.number_or_kw(2, "alpha", 1.0) * a.tensor(0)}; }, {}};
  T["aten.add.Scalar"] = {[](const ArgPack& a) { return Outs{a.tensor(0) + a.number_or_kw(2, "alpha", 1.0) * a.tensor(1)}; }, {}};
  T["aten.sub.Scalar"] = {[](const ArgPack& a) { return Outs{a.tensor(0) - a.number_or_kw(2, "alpha", 1.0) * a.tensor(1)}; }, {}};
  T["aten.fill.Scalar"] = {[](const ArgPack& a) {
                             Tensor out = Tensor::from_shape(a.tensor(0).shape());
                             out.fill(a.number(1, 0.0));
                             return Outs{out};
                           },
                           {}};
  for (const char* name : {"aten.masked_fill.Scalar", "aten.masked_fill.Tensor"})
    T[name] = {[](const ArgPack& a) {
                 Tensor self = a.tensor(0);
                 return Outs{Tensor(xt::where(xt::not_equal(a.tensor(1), 0.0), a.tensor(2), self) + 0.0 * self)};
               },
               {}};
  // Partial-preserving unary ops.
  T["aten.exp.default"] = unary([](const Tensor& x) { return xt::exp(x); });
  T["aten.relu.default"] = unary([](const Tensor& x) { return xt::maximum(x, 0.0); });
  T["aten.tanh.default"] = unary([](const Tensor& x) { return xt::tanh(x); });
  T["aten.sigmoid.default"] = unary([](const Tensor& x) { return sigmoid(x); });
  T["aten.erf.default"] = unary([](const Tensor& x) { return xt::erf(x); });
  T["aten.floor.default"] = unary([](const Tensor& x) { return xt::floor(x); });
  T["aten.ceil.default"] = unary([](const Tensor& x) { return xt::ceil(x); });
  T["aten.log.default"] = unary([](const Tensor& x) { return xt::log(x); });
  T["aten.log1p.default"] = unary([](const Tensor& x) { return xt::log1p(x); });
  T["aten.expm1.default"] = unary([](const Tensor& x) { return xt::expm1(x); });
  T["aten.erfc.default"] = unary([](const Tensor& x) { return xt::erfc(x); });
  T["aten.neg.default"] = unary([](const Tensor& x) { return -x; });
  T["aten.positive.default"] = unary([](const Tensor& x) { return x; });
  T["aten.mul.Scalar"] = binary([](const Tensor& x, const Tensor& y) { return x * y; });
  T["aten.div.Scalar"] = binary([](const Tensor& x, const Tensor& y) { return x / y; });
  T["aten.add.Tensor"] = {[](const ArgPack& a) { return Outs{a.tensor(0) + a.number_or_kw(2, "alpha", 1.0) * a.tensor(1)}; }, {}};
  T["aten.sub.Tensor"] = {[](const ArgPack& a) { return Outs{a.tensor(0) - a.number_or_kw(2, "alpha", 1.0) * a.tensor(1)}; }, {}};
  T["aten.mul.Tensor"] = binary([](const Tensor& x, const Tensor& y) { return x * y; });
  T["aten.div.Tensor"] = binary([](const Tensor& x, const Tensor& y) { return x / y; });
  for (const char* name : {"aten.maximum.default", "aten.clamp_min.Tensor"})
    T[name] = binary([](const Tensor& x, const Tensor& y) { return xt::maximum(x, y); });
  T["aten.fmax.default"] = binary([](const Tensor& x, const Tensor& y) { return xt::fmax(x, y); });
  for (const char* name : {"aten.minimum.default", "aten.clamp_max.Tensor"})
    T[name] = binary([](const Tensor& x, const Tensor& y) { return xt::minimum(x, y); });
  T["aten.fmin.default"] = binary([](const Tensor& x, const Tensor& y) { return xt::fmin(x, y); });
  T["aten.logaddexp.default"] = binary([](const Tensor& x, const Tensor& y) { return xt::maximum(x, y) + xt::log1p(xt::exp(-xt::abs(x - y))); });
  // prims.fma(a, b, c) = a * b + c; clamp with Python-scalar bounds; pow.Scalar(base, exponent)
  T["prims.fma.default"] = {[](const ArgPack& a) { return Outs{a.tensor(0) * a.tensor(1) + a.tensor(2)}; }, {}};
  T["aten.clamp_min.default"] = binary([](const Tensor& x, const Tensor& lo) { return xt::maximum(x, lo); });
  T["aten.clamp_max.default"] = binary([](const Tensor& x, const Tensor& hi) { return xt::minimum(x, hi); });
  T["aten.clamp.default"] = {[](const ArgPack& a) {
                               Tensor x = a.tensor(0);
                               if (a.has(1)) x = xt::maximum(x, a.tensor(1));
                               if (a.has(2)) x = xt::minimum(x, a.tensor(2));
                               return Outs{x};
                             },
                             {}};
  T["aten.pow.Scalar"] = binary([](const Tensor& base, const Tensor& x) { return xt::pow(base, x); });
}

void add_einsum(Table& t) {
  auto eq = [](std::string equation) {
    return RefOp{[equation = std::move(equation)](const ArgPack& a) { return Outs{einsum2(equation, a.tensor(0), a.tensor(1))}; }, {}};
  };
  t["aten.mm.default"] = eq("mk,kn->mn");
  t["aten.bmm.default"] = eq("bmk,bkn->bmn");
  t["aten.dot.default"] = eq("i,i->");
  auto with_bias = [](std::string equation) {
    return RefOp{[equation = std::move(equation)](const ArgPack& a) {
                   const double beta = a.number_or_kw(3, "beta", 1.0), alpha = a.number_or_kw(4, "alpha", 1.0);
                   return Outs{Tensor(beta * a.tensor(0) + alpha * einsum2(equation, a.tensor(1), a.tensor(2)))};
                 },
                 {}};
  };
  t["aten.addmm.default"] = with_bias("mk,kn->mn");
  t["aten.baddbmm.default"] = with_bias("bmk,bkn->bmn");
  t["aten.einsum.default"] = {[](const ArgPack& a) {
                                const auto ops = a.tensor_list(1);
                                if (ops.size() != 2) throw error("sim: einsum needs two operands");
                                return Outs{einsum2(a.text(0, ""), ops[0], ops[1])};
                              },
                              {}};
}

const Table& table() {
  static const Table t = [] {
    Table tab;
    add_pointwise(tab);
    add_einsum(tab);
    detail::add_layout_ops(tab);
    detail::add_math_ops(tab);
    return tab;
  }();
  return t;
}

}  // namespace

const RefOp* find_ref_op(std::string_view name) {
  const auto it = table().find(name);
  return it == table().end() ? nullptr : &it->second;
}

const GroupRefOp* find_group_ref_op(std::string_view name) {
  static const detail::GroupRefTable t = [] {
    detail::GroupRefTable tab;
    detail::add_collective_ops(tab);
    return tab;
  }();
  const auto it = t.find(name);
  return it == t.end() ? nullptr : &it->second;
}

std::vector<std::string> ref_op_names() {
  std::vector<std::string> names;
  for (const auto& [k, v] : table()) names.push_back(k);
  return names;
}

}  // namespace ctshard::sim
