// tests/sim/sim_cases.cpp — the sample calls the simulated-mesh check runs (see sim_cases.hpp).
// Sizes are small (4-6, some not divisible by 2 or 3, some size 1, some 0-d) so a whole family runs
// in well under a second per mesh.
#include "sim_cases.hpp"

#include <sstream>

namespace ctshard::sim {

OpArg targ(std::int64_t index) { return {OpArg::Kind::tensor, index, 0, {}, {}, {}}; }
OpArg tlist(std::vector<std::int64_t> indices) { return {OpArg::Kind::tensor_list, 0, 0, std::move(indices), {}, {}}; }
OpArg farg(double value) { return {OpArg::Kind::floating, 0, value, {}, {}, {}}; }
OpArg iarg(std::int64_t value) { return {OpArg::Kind::integer, value, 0, {}, {}, {}}; }
OpArg barg(bool value) { return {OpArg::Kind::boolean, value ? 1 : 0, 0, {}, {}, {}}; }
OpArg ilist(std::vector<std::int64_t> values) { return {OpArg::Kind::int_list, 0, 0, std::move(values), {}, {}}; }
OpArg sarg(std::string text) { return {OpArg::Kind::string, 0, 0, {}, std::move(text), {}}; }
OpArg none_arg() { return {}; }

namespace {

std::string arg_text(const OpArg& a, const SampleCall& call) {
  std::ostringstream os;
  switch (a.kind) {
    case OpArg::Kind::tensor: return to_string(call.inputs.at(static_cast<std::size_t>(a.integer)).shape);
    case OpArg::Kind::tensor_list: {
      os << "[";
      for (std::size_t i = 0; i < a.ints.size(); ++i) os << (i ? ", " : "") << to_string(call.inputs.at(static_cast<std::size_t>(a.ints[i])).shape);
      os << "]";
      return os.str();
    }
    case OpArg::Kind::floating: os << a.floating; return os.str();
    case OpArg::Kind::integer: return std::to_string(a.integer);
    case OpArg::Kind::boolean: return a.integer ? "True" : "False";
    case OpArg::Kind::int_list: {
      os << "[";
      for (std::size_t i = 0; i < a.ints.size(); ++i) os << (i ? ", " : "") << a.ints[i];
      os << "]";
      return os.str();
    }
    case OpArg::Kind::string: return "'" + a.text + "'";
    case OpArg::Kind::none: return "None";
    case OpArg::Kind::list: {
      os << "[";
      for (std::size_t i = 0; i < a.items.size(); ++i) os << (i ? ", " : "") << arg_text(a.items[i], call);
      os << "]";
      return os.str();
    }
    case OpArg::Kind::other: return a.text;
    case OpArg::Kind::dict: {
      os << "{";
      for (std::size_t i = 0; i + 1 < a.items.size(); i += 2)
        os << (i ? ", " : "") << arg_text(a.items[i], call) << ": " << arg_text(a.items[i + 1], call);
      os << "}";
      return os.str();
    }
  }
  return "?";
}

}  // namespace

std::string describe(const SampleCall& call) {
  std::string s = call.op + "(";
  for (std::size_t i = 0; i < call.args.size(); ++i) {
    if (i) s += ", ";
    s += arg_text(call.args[i], call);
  }
  for (std::size_t i = 0; i < call.kwargs.size(); ++i) {
    if (i || !call.args.empty()) s += ", ";
    s += call.kwargs[i].first + "=" + arg_text(call.kwargs[i].second, call);
  }
  return s + ")";
}

OpCall to_op_call(const SampleCall& call) {
  OpCall c;
  c.op = call.op;
  for (const auto& in : call.inputs) c.tensors.push_back(TensorMeta{to_tensor_shape(in.shape), 4});
  c.args = call.args;
  c.kwargs = call.kwargs;
  for (const auto& o : call.outputs) c.outputs.push_back(TensorMeta{to_tensor_shape(o), 4});
  return c;
}

Tensor random_input(const SimInput& input, Rng& rng) {
  Tensor t = Tensor::from_shape(input.shape);
  std::uniform_real_distribution<double> real(-2.0, 2.0), positive(0.5, 2.0);
  std::uniform_int_distribution<std::int64_t> small(0, 3), index(0, input.bound > 0 ? input.bound - 1 : 0), coin(0, 1);
  for (std::size_t e = 0; e < t.size(); ++e) {
    switch (input.domain) {
      case Domain::real: t.data()[e] = real(rng); break;
      case Domain::positive: t.data()[e] = positive(rng); break;
      case Domain::boolean: t.data()[e] = static_cast<double>(coin(rng)); break;
      case Domain::small_int: t.data()[e] = static_cast<double>(small(rng)); break;
      case Domain::index: t.data()[e] = static_cast<double>(index(rng)); break;
    }
  }
  return t;
}

namespace {

SimInput R(Shape s) { return {std::move(s), Domain::real, 0}; }
SimInput Pos(Shape s) { return {std::move(s), Domain::positive, 0}; }
SimInput B(Shape s) { return {std::move(s), Domain::boolean, 0}; }
SimInput I(Shape s) { return {std::move(s), Domain::small_int, 0}; }
const Shape scalar{};

using detail::make_call;
void add_pointwise(std::vector<SampleCall>& v) {
  auto pw = [&v](std::string op, std::vector<SimInput> in, std::vector<OpArg> extra = {}, std::vector<std::pair<std::string, OpArg>> kw = {}) {
    v.push_back(make_call("pointwise", std::move(op), std::move(in), std::move(extra), std::move(kw)));
  };
  // Unary ops without Partial rows.
  for (const char* op : {"aten.abs.default", "aten.sin.default", "aten.cos.default", "aten.gelu.default", "aten.silu.default", "aten.sign.default",
                         "aten.square.default", "aten.isnan.default"})
    pw(op, {R({4, 5})});
  pw("aten.gelu.default", {R({5})}, {}, {{"approximate", sarg("tanh")}});
  for (const char* op : {"aten.sqrt.default", "aten.rsqrt.default", "aten.reciprocal.default"}) pw(op, {Pos({4, 5})});
  pw("aten.bitwise_not.default", {I({4, 5})});
  pw("aten.logical_not.default", {B({4, 5})});
  pw("aten.pow.Tensor_Scalar", {Pos({4, 5})}, {farg(2.5)});
  // Unary ops with Partial rows (monotone, linear).
  for (const char* op :
       {"aten.exp.default", "aten.relu.default", "aten.tanh.default", "aten.sigmoid.default", "aten.erf.default", "aten.floor.default",
        "aten.ceil.default", "aten.expm1.default", "aten.erfc.default", "aten.neg.default", "aten.positive.default"})
    pw(op, {R({4, 5})});
  for (const char* op : {"aten.log.default", "aten.log1p.default"}) pw(op, {Pos({4, 5})});
  pw("aten.exp.default", {R({3, 1, 5})});
  pw("aten.relu.default", {R({5})});
  pw("aten.neg.default", {R(scalar)});
  pw("aten.neg.default", {R({6})});
  pw("aten.positive.default", {R({2, 3, 4})});
  pw("aten.mul.Scalar", {R({4, 5})}, {farg(2.5)});
  pw("aten.div.Scalar", {R({5})}, {farg(-1.5)});
  // Binary ops without Partial rows.
  pw("aten.atan2.default", {R({4, 5}), R({5})});
  pw("aten.pow.Tensor_Tensor", {Pos({4, 5}), R({4, 1})});
  for (const char* op : {"aten.eq.Tensor", "aten.ne.Tensor", "aten.lt.Tensor", "aten.le.Tensor", "aten.gt.Tensor", "aten.ge.Tensor"})
    pw(op, {I({4, 5}), I({1, 5})});
  for (const char* op : {"aten.eq.Scalar", "aten.ne.Scalar", "aten.lt.Scalar", "aten.le.Scalar", "aten.gt.Scalar", "aten.ge.Scalar"})
    pw(op, {I({4, 5})}, {iarg(1)});
  for (const char* op : {"aten.bitwise_and.Tensor", "aten.bitwise_or.Tensor", "aten.bitwise_xor.Tensor"}) pw(op, {I({4, 5}), I({4, 5})});
  for (const char* op : {"aten.logical_and.default", "aten.logical_or.default"}) pw(op, {B({4, 5}), B({5})});
  for (const char* op : {"aten.sigmoid_backward.default", "aten.tanh_backward.default", "aten.gelu_backward.default"}) pw(op, {R({4, 5}), R({4, 5})});
  pw("aten.threshold_backward.default", {R({4, 5}), R({4, 5})}, {farg(0.0)});
  pw("aten.rsub.Scalar", {R({4, 5})}, {farg(2.0), farg(1.5)});
  pw("aten.rsub.Tensor", {R({4, 5}), R({5})}, {}, {{"alpha", farg(2.0)}});
  pw("aten.add.Scalar", {R({4, 5})}, {farg(3.0), farg(2.0)});
  pw("aten.sub.Scalar", {R({5})}, {farg(3.0)});
  pw("aten.fill.Scalar", {R({4, 5})}, {farg(7.0)});
  pw("aten.masked_fill.Scalar", {R({4, 5}), B({1, 5})}, {farg(2.0)});
  pw("aten.masked_fill.Tensor", {R({4, 5}), B({4, 5}), R(scalar)});
  // Binary ops with Partial rows, with broadcasting, size-1 dims, 0-d tensors and Python scalars.
  pw("aten.add.Tensor", {R({4, 5}), R({4, 5})});
  pw("aten.add.Tensor", {R({4, 5}), R({5})});
  pw("aten.add.Tensor", {R({4, 1}), R({1, 5})});
  pw("aten.add.Tensor", {R({3, 4}), R(scalar)});
  pw("aten.add.Tensor", {R({2, 3, 4}), R({3, 4})});
  pw("aten.add.Tensor", {R({4, 5})}, {farg(10.0)});  // B02: a Python scalar is not an input
  pw("aten.add.Tensor", {R({4, 5}), R({4, 5})}, {}, {{"alpha", farg(-2.0)}});
  pw("aten.sub.Tensor", {R({4, 5}), R({4, 5})});
  pw("aten.sub.Tensor", {R({5}), R({4, 5})});
  pw("aten.sub.Tensor", {R({4, 5})}, {farg(10.0)});
  pw("aten.mul.Tensor", {R({4, 5}), R({4, 5})});
  pw("aten.mul.Tensor", {R({4, 5}), R({5})});
  pw("aten.mul.Tensor", {R({2, 3, 4}), R({3, 1})});
  pw("aten.mul.Tensor", {R({4, 5})}, {farg(3.0)});
  pw("aten.mul.Tensor", {R({4, 5}), R(scalar)});
  pw("aten.div.Tensor", {R({4, 5}), Pos({4, 5})});
  pw("aten.div.Tensor", {R({4, 5}), Pos({1, 5})});
  pw("aten.div.Tensor", {R({4, 5})}, {farg(2.0)});
  for (const char* op : {"aten.maximum.default", "aten.fmax.default", "aten.clamp_min.Tensor", "aten.minimum.default", "aten.fmin.default",
                         "aten.clamp_max.Tensor", "aten.logaddexp.default"})
    pw(op, {R({4, 5}), R({4, 5})});
  pw("aten.maximum.default", {R({4, 5}), R({5})});
  pw("aten.minimum.default", {R({4, 1}), R({4, 5})});
  // Ternary ops.
  pw("aten.addcmul.default", {R({4, 5}), R({4, 5}), R({5})}, {}, {{"value", farg(0.5)}});
  pw("aten.addcdiv.default", {R({4, 5}), R({4, 1}), Pos({5})});
  pw("aten.where.self", {B({4, 5}), R({4, 5}), R({5})});
  pw("aten.where.self", {B({4, 1}), R({1, 5}), R(scalar)});
  pw("aten.lerp.Tensor", {R({4, 5}), R({4, 5}), R({4, 5})});
  pw("prims.fma.default", {R({4, 5}), R({4, 5}), R({4, 5})});
  pw("prims.fma.default", {R({3, 1, 4}), R({4}), R({3, 5, 4})});
  pw("prims.fma.default", {R({6}), R(scalar), R({6})});
  // scalar bounds and bases
  pw("aten.clamp_min.default", {R({4, 5})}, {farg(0.3)});
  pw("aten.clamp_max.default", {R({3, 1, 5})}, {farg(-0.2)});
  pw("aten.clamp.default", {R({4, 5})}, {farg(-0.5), farg(0.5)});
  pw("aten.clamp.default", {R({5})}, {none_arg(), farg(0.1)});
  v.push_back(SampleCall{"pointwise", "aten.pow.Scalar", {R({4, 5})}, {farg(2.0), targ(0)}, {}});
  v.push_back(SampleCall{"pointwise", "aten.pow.Scalar", {R({3, 1, 5})}, {farg(0.5), targ(0)}, {}});
  v.push_back(SampleCall{"pointwise", "aten.pow.Scalar", {I({4, 5})}, {farg(-2.0), targ(0)}, {}});
}

void add_einsum(std::vector<SampleCall>& v) {
  auto es = [&v](std::string op, std::vector<SimInput> in, std::vector<OpArg> extra = {}, std::vector<std::pair<std::string, OpArg>> kw = {}) {
    v.push_back(make_call("einsum", std::move(op), std::move(in), std::move(extra), std::move(kw)));
  };
  es("aten.mm.default", {R({4, 5}), R({5, 3})});
  es("aten.mm.default", {R({5, 3}), R({3, 4})});
  es("aten.mm.default", {R({6, 1}), R({1, 5})});
  es("aten.bmm.default", {R({2, 3, 4}), R({2, 4, 5})});
  es("aten.bmm.default", {R({3, 5, 2}), R({3, 2, 4})});
  es("aten.dot.default", {R({5}), R({5})});
  es("aten.dot.default", {R({6}), R({6})});
  es("aten.addmm.default", {R({3}), R({4, 5}), R({5, 3})});
  es("aten.addmm.default", {R({1, 3}), R({4, 5}), R({5, 3})}, {}, {{"beta", farg(0.5)}, {"alpha", farg(2.0)}});
  es("aten.addmm.default", {R({4, 3}), R({4, 5}), R({5, 3})});
  es("aten.addmm.default", {R({4, 1}), R({4, 6}), R({6, 5})});
  es("aten.addmm.default", {R(scalar), R({4, 5}), R({5, 3})});
  es("aten.baddbmm.default", {R({2, 3, 5}), R({2, 3, 4}), R({2, 4, 5})});
  es("aten.baddbmm.default", {R({5}), R({3, 4, 2}), R({3, 2, 5})}, {}, {{"beta", farg(-1.0)}});
  es("aten.baddbmm.default", {R({1, 4, 1}), R({2, 4, 3}), R({2, 3, 5})});
  auto ein = [&v](std::string eq, std::vector<SimInput> in) {
    v.push_back(SampleCall{"einsum", "aten.einsum.default", std::move(in), {sarg(std::move(eq)), tlist({0, 1})}, {}});
  };
  ein("ab,ab->ab", {R({4, 5}), R({4, 5})});  // batch-only: DTensor's all-Partial rows are unsound here
  ein("abc,abc->abc", {R({2, 3, 4}), R({2, 3, 4})});
  ein("bmk,kn->bmn", {R({2, 3, 4}), R({4, 5})});
  ein("abc,ab->abc", {R({3, 4, 2}), R({3, 4})});
  ein("abd,bf->abfd", {R({3, 4, 2}), R({4, 5})});
  ein("ji,j->i", {R({4, 5}), R({4})});
  ein("i,j->ij", {R({4}), R({5})});
  ein("bij,bjk->bik", {R({2, 3, 4}), R({2, 4, 3})});
  ein("ij,ij->", {R({4, 5}), R({4, 5})});
  ein("ab,bc->ca", {R({4, 5}), R({5, 3})});
}

/// Collectives over g = 2 and 3 program ranks (docs/semantics.md "Collectives in graphs"): every
/// collective, namespace and variant; dim-0 sizes chosen so that _S(0, sf) fills for several sf.
void add_collectives(std::vector<SampleCall>& v) {
  const auto c = [&v](std::string op, std::int64_t g, std::vector<SimInput> in, std::vector<OpArg> extra = {}, detail::Kwargs kw = {},
                      std::vector<Shape> outputs = {}) {
    SampleCall call = make_call("collective", std::move(op), std::move(in), std::move(extra), std::move(kw));
    call.program_ranks = g;
    call.outputs = std::move(outputs);
    v.push_back(std::move(call));
  };
  const std::string ns = "_c10d_functional.";
  // all_reduce(input, reduce_op, group_name)
  c(ns + "all_reduce.default", 2, {R({4, 5})}, {sarg("sum"), sarg("0")});
  c(ns + "all_reduce.default", 3, {R({4, 5})}, {sarg("sum"), sarg("0")});
  c(ns + "all_reduce.default", 2, {R({4, 5})}, {sarg("max"), sarg("0")});
  c(ns + "all_reduce.default", 3, {R({6, 2})}, {sarg("avg"), sarg("0")});
  c(ns + "all_reduce.default", 2, {R({3})}, {sarg("min"), sarg("0")});
  c(ns + "all_reduce.default", 2, {R({4, 3})}, {sarg("product"), sarg("0")});
  c(ns + "all_reduce_.default", 3, {R({4, 5})}, {sarg("sum"), sarg("0")});
  c("c10d_functional.all_reduce.default", 3, {R({4, 5})}, {sarg("avg"), sarg(""), ilist({0, 1, 2}), iarg(3)});
  c("_c10d_functional_autograd.all_reduce.default", 2, {R({4, 5})}, {sarg("min"), sarg("0")});
  c(ns + "all_reduce_coalesced.default", 2, {R({4, 5}), R({6})}, {});
  v.back().args = {tlist({0, 1}), sarg("sum"), sarg("0")};
  c(ns + "all_reduce_coalesced_.default", 3, {R({3, 4}), R({6})}, {});
  v.back().args = {tlist({0, 1}), sarg("max"), sarg("0")};
  c("vllm.all_reduce.default", 2, {R({4, 6})}, {sarg("tp:0")});
  c("vllm.all_reduce.default", 3, {R({8, 1})}, {sarg("tp:0")});
  // identity: wait_tensor(tensor), broadcast(input, src, group_name)
  for (const std::string w : {"_c10d_functional.", "c10d_functional.", "_c10d_functional_autograd."}) c(w + "wait_tensor.default", 2, {R({5, 3})});
  c(ns + "broadcast.default", 2, {R({4, 5})}, {iarg(1), sarg("0")});
  c(ns + "broadcast.default", 3, {R({6, 3})}, {iarg(0), sarg("0")});
  c(ns + "broadcast_.default", 3, {R({4, 2})}, {iarg(2), sarg("0")});
  c("c10d_functional.broadcast.default", 2, {R({5})}, {iarg(0), sarg(""), ilist({0, 1}), iarg(2)});
  // all_gather_into_tensor(input, group_size, group_name)
  c(ns + "all_gather_into_tensor.default", 2, {R({4, 5})}, {iarg(2), sarg("0")});
  c(ns + "all_gather_into_tensor.default", 3, {R({6, 4})}, {iarg(3), sarg("0")});
  c(ns + "all_gather_into_tensor.default", 2, {R({5, 3})}, {iarg(2), sarg("0")}, {}, {{10, 3}});
  c(ns + "all_gather_into_tensor.default", 3, {R({4})}, {iarg(3), sarg("0")});
  c("_c10d_functional_autograd.all_gather_into_tensor.default", 2, {R({6, 2})}, {iarg(2), sarg("0")});
  c("c10d_functional.all_gather_into_tensor.default", 3, {R({4, 3})}, {sarg(""), ilist({0, 1, 2}), iarg(3)});
  c(ns + "all_gather_into_tensor_out.default", 2, {R({4, 5}), R({8, 5})}, {}, {});
  v.back().args = {targ(0), iarg(2), sarg("0")};
  v.back().kwargs = {{"out", targ(1)}};
  c(ns + "all_gather_into_tensor_coalesced.default", 2, {R({4, 5}), R({6})}, {});
  v.back().args = {tlist({0, 1}), iarg(2), sarg("0")};
  // reduce_scatter_tensor(input, reduce_op, group_size, group_name)
  c(ns + "reduce_scatter_tensor.default", 2, {R({8, 5})}, {sarg("sum"), iarg(2), sarg("0")});
  c(ns + "reduce_scatter_tensor.default", 3, {R({12, 2})}, {sarg("max"), iarg(3), sarg("0")});
  c(ns + "reduce_scatter_tensor.default", 2, {R({12, 3})}, {sarg("avg"), iarg(2), sarg("0")});
  c(ns + "reduce_scatter_tensor.default", 3, {R({6, 4})}, {sarg("sum"), iarg(3), sarg("0")}, {}, {{2, 4}});
  c(ns + "reduce_scatter_tensor.default", 2, {R({4, 3})}, {sarg("product"), iarg(2), sarg("0")});
  c("_c10d_functional_autograd.reduce_scatter_tensor.default", 2, {R({8, 3})}, {sarg("min"), iarg(2), sarg("0")});
  c("c10d_functional.reduce_scatter_tensor.default", 3, {R({12, 2})}, {sarg("sum"), sarg(""), ilist({0, 1, 2}), iarg(3)});
  c(ns + "reduce_scatter_tensor_out.default", 2, {R({8, 5}), R({4, 5})}, {});
  v.back().args = {targ(0), sarg("sum"), iarg(2), sarg("0")};
  v.back().kwargs = {{"out", targ(1)}};
  c(ns + "reduce_scatter_tensor_coalesced.default", 2, {R({8, 5}), R({4})}, {});
  v.back().args = {tlist({0, 1}), sarg("sum"), iarg(2), sarg("0")};
  // legacy coalesced forms: (inputs, [reduceOp,] tag, ranks, group_size)
  c("c10d_functional.all_reduce_coalesced.default", 2, {R({4, 5}), R({3})}, {});
  v.back().args = {tlist({0, 1}), sarg("avg"), sarg(""), ilist({0, 1}), iarg(2)};
  c("c10d_functional.all_reduce_coalesced_.default", 3, {R({3, 4}), R({2})}, {});
  v.back().args = {tlist({0, 1}), sarg("sum"), sarg(""), ilist({0, 1, 2}), iarg(3)};
  c("c10d_functional.all_gather_into_tensor_coalesced.default", 3, {R({3, 2}), R({6})}, {});
  v.back().args = {tlist({0, 1}), sarg(""), ilist({0, 1, 2}), iarg(3)};
  c("c10d_functional.reduce_scatter_tensor_coalesced.default", 2, {R({8, 2}), R({4})}, {});
  v.back().args = {tlist({0, 1}), sarg("max"), sarg(""), ilist({0, 1}), iarg(2)};
  // all_to_all_single(input, output_split_sizes, input_split_sizes, group_name)
  c(ns + "all_to_all_single.default", 2, {R({4, 5})}, {ilist({2, 2}), ilist({2, 2}), sarg("0")});
  c(ns + "all_to_all_single.default", 3, {R({6, 2})}, {ilist({2, 2, 2}), ilist({2, 2, 2}), sarg("0")});
  c(ns + "all_to_all_single.default", 2, {R({8, 3})}, {ilist({4, 4}), ilist({4, 4}), sarg("0")});
  c(ns + "all_to_all_single.default", 2, {R({4, 3})}, {ilist({1, 3}), ilist({1, 3}), sarg("0")});
  c(ns + "all_to_all_single.default", 2, {R({4, 3})}, {none_arg(), none_arg(), sarg("0")});
  c("_c10d_functional_autograd.all_to_all_single.default", 3, {R({6, 4})}, {ilist({2, 2, 2}), ilist({2, 2, 2}), sarg("0")});
  c("c10d_functional.all_to_all_single.default", 2, {R({4, 3})}, {ilist({2, 2}), ilist({2, 2}), sarg(""), ilist({0, 1}), iarg(2)});
  // vLLM: all_gather / reduce_scatter (tensor, dim, world_size, group_name)
  c("vllm.all_gather.default", 2, {R({3, 4})}, {iarg(-1), iarg(2), sarg("tp:0")});
  c("vllm.all_gather.default", 3, {R({6, 2})}, {iarg(0), iarg(3), sarg("tp:0")});
  c("vllm.reduce_scatter.default", 2, {R({3, 8})}, {iarg(1), iarg(2), sarg("tp:0")});
  c("vllm.reduce_scatter.default", 3, {R({12, 2})}, {iarg(0), iarg(3), sarg("tp:0")});
  // DTensor: shard_dim_alltoall(input, gather_dim, shard_dim, group_name); g from the annotation
  c("_dtensor.shard_dim_alltoall.default", 2, {R({4, 6})}, {iarg(0), iarg(1), sarg("0")}, {}, {{8, 3}});
  c("_dtensor.shard_dim_alltoall.default", 2, {R({6, 8})}, {iarg(1), iarg(0), sarg("0")}, {}, {{3, 16}});
}

}  // namespace

SampleCall detail::make_call(std::string family, std::string op, std::vector<SimInput> inputs, std::vector<OpArg> extra, Kwargs kwargs) {
  SampleCall c{std::move(family), std::move(op), std::move(inputs), {}, std::move(kwargs)};
  for (std::size_t i = 0; i < c.inputs.size(); ++i) c.args.push_back(targ(static_cast<std::int64_t>(i)));
  for (auto& a : extra) c.args.push_back(std::move(a));
  return c;
}

const std::vector<SampleCall>& sample_calls() {
  static const std::vector<SampleCall> calls = [] {
    std::vector<SampleCall> v;
    add_pointwise(v);
    add_einsum(v);
    add_collectives(v);
    detail::add_layout_cases(v);
    detail::add_math_cases(v);
    return v;
  }();
  return calls;
}

}  // namespace ctshard::sim
