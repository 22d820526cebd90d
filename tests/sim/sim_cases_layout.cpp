// tests/sim/sim_cases_layout.cpp — sample calls of the view, tensor-op, math (reductions, softmax,
// layer norm) and nn (embedding, dropout) families.
#include "sim_cases.hpp"

namespace ctshard::sim::detail {

namespace {

SimInput R(Shape s) { return {std::move(s), Domain::real, 0}; }
SimInput Pos(Shape s) { return {std::move(s), Domain::positive, 0}; }
SimInput Idx(Shape s, std::int64_t bound) { return {std::move(s), Domain::index, bound}; }

}  // namespace

void add_layout_cases(std::vector<SampleCall>& v) {
  auto view = [&v](std::string op, std::vector<SimInput> in, std::vector<OpArg> extra = {}) {
    v.push_back(make_call("view", std::move(op), std::move(in), std::move(extra)));
  };
  view("aten.view.default", {R({4, 6})}, {ilist({24})});
  view("aten.view.default", {R({6, 4})}, {ilist({2, 3, 4})});
  view("aten.view.default", {R({2, 3, 4})}, {ilist({6, 4})});
  view("aten.view.default", {R({4, 5})}, {ilist({4, 5, 1})});
  view("aten.view.default", {R({4, 1, 5})}, {ilist({4, 5})});
  view("aten.view.default", {R({5, 4})}, {ilist({-1})});
  view("aten.view.default", {R({12})}, {ilist({4, 3})});
  view("aten._unsafe_view.default", {R({2, 3, 4})}, {ilist({2, 12})});
  view("aten.reshape.default", {R({4, 6})}, {ilist({8, 3})});
  view("aten.permute.default", {R({2, 3, 4})}, {ilist({2, 0, 1})});
  view("aten.transpose.int", {R({4, 5})}, {iarg(0), iarg(1)});
  view("aten.transpose.int", {R({2, 3, 4})}, {iarg(-1), iarg(0)});
  view("aten.t.default", {R({4, 5})});
  view("aten.t.default", {R({5})});
  view("aten.unsqueeze.default", {R({4, 5})}, {iarg(1)});
  view("aten.unsqueeze.default", {R({4, 5})}, {iarg(-1)});
  view("aten.squeeze.default", {R({4, 1, 5})});
  view("aten.squeeze.default", {R({3, 1})});
  view("aten.squeeze.dim", {R({4, 1, 5})}, {iarg(1)});
  view("aten.squeeze.dims", {R({4, 1, 5, 1})}, {ilist({1, 3})});
  view("aten.expand.default", {R({4, 1})}, {ilist({4, 5})});
  view("aten.expand.default", {R({5})}, {ilist({3, 5})});
  view("aten.expand.default", {R({2, 1, 5})}, {ilist({2, 4, -1})});
  view("aten.repeat.default", {R({4, 6})}, {ilist({1, 2})});
  view("aten.repeat.default", {R({3, 5})}, {ilist({2, 1, 1})});
  view("aten.repeat.default", {R({4, 1, 3})}, {ilist({1, 4, 1})});
  view("aten.repeat.default", {R({5})}, {ilist({2, 3})});
  // groups split by several mesh dims (the rows the local sizes call for: R11 and its kind)
  view("aten.view.default", {R({2, 2, 3})}, {ilist({4, 3})});
  view("aten.view.default", {R({4, 3})}, {ilist({2, 2, 3})});
  view("aten.view.default", {R({2, 3, 4})}, {ilist({24})});
  view("aten.view.default", {R({24})}, {ilist({2, 3, 4})});
  view("aten.view.default", {R({2, 5})}, {ilist({10})});
  view("aten.view.default", {R({10})}, {ilist({2, 5})});
  view("aten.view.default", {R({6, 4})}, {ilist({4, 6})});
  view("aten.reshape.default", {R({2, 6})}, {ilist({4, 3})});

  auto top = [&v](std::string op, std::vector<SimInput> in, std::vector<OpArg> extra = {}, Kwargs kw = {}) {
    v.push_back(make_call("tensor", std::move(op), std::move(in), std::move(extra), std::move(kw)));
  };
  top("aten.split.Tensor", {R({5, 4})}, {iarg(2), iarg(0)});
  top("aten.split.Tensor", {R({4, 6})}, {iarg(4), iarg(1)});
  top("aten.split_with_sizes.default", {R({5, 4})}, {ilist({2, 3}), iarg(0)});
  top("aten.split_with_sizes.default", {R({4, 6})}, {ilist({1, 2, 3}), iarg(1)});
  top("aten.unbind.int", {R({3, 4})}, {iarg(0)});
  top("aten.unbind.int", {R({4, 3})}, {iarg(1)});
  top("aten.select.int", {R({4, 5})}, {iarg(0), iarg(2)});
  top("aten.select.int", {R({4, 5})}, {iarg(1), iarg(-1)});
  top("aten.select.int", {R({2, 3, 4})}, {iarg(1), iarg(0)});
  top("aten.slice.Tensor", {R({5, 4})}, {iarg(0), iarg(1), iarg(4)});
  top("aten.slice.Tensor", {R({4, 6})}, {iarg(1), iarg(0), none_arg(), iarg(1)});
  top("aten.slice.Tensor", {R({4, 6})}, {iarg(1), none_arg(), none_arg(), iarg(2)});
  top("aten.slice.Tensor", {R({6, 4})}, {iarg(0), iarg(-3)});
  top("aten.slice_scatter.default", {R({5, 4}), R({2, 4})}, {iarg(0), iarg(1), iarg(3)});
  top("aten.slice_scatter.default", {R({4, 6}), R({4, 6})}, {iarg(1)});
  auto list_op = [&v](std::string op, std::vector<SimInput> in, std::int64_t dim) {
    std::vector<std::int64_t> idx;
    for (std::size_t i = 0; i < in.size(); ++i) idx.push_back(static_cast<std::int64_t>(i));
    v.push_back(SampleCall{"tensor", std::move(op), std::move(in), {tlist(idx), iarg(dim)}, {}});
  };
  list_op("aten.cat.default", {R({2, 4}), R({3, 4})}, 0);
  list_op("aten.cat.default", {R({4, 2}), R({4, 3})}, 1);
  list_op("aten.cat.default", {R({4, 5}), R({0})}, 0);
  // equal pieces along the cat dim: [_S(dim, n), S(dim) * n] (uneven chunks on mesh 3, 2x2 nested)
  list_op("aten.cat.default", {R({4, 3}), R({4, 3})}, 0);
  list_op("aten.cat.default", {R({6, 2}), R({6, 2}), R({6, 2})}, 0);
  list_op("aten.cat.default", {R({3, 5}), R({3, 5})}, -1);
  list_op("aten.stack.default", {R({4, 5}), R({4, 5})}, 0);
  list_op("aten.stack.default", {R({3, 4}), R({3, 4}), R({3, 4})}, 2);
  for (const char* op : {"aten.clone.default", "aten.alias.default", "aten.detach.default", "aten.lift_fresh_copy.default", "aten.empty_like.default",
                         "aten.zeros_like.default", "aten.ones_like.default"})
    top(op, {R({4, 5})});
  top("aten.full_like.default", {R({4, 5})}, {farg(3.0)});
  top("aten._to_copy.default", {R({4, 5})}, {}, {{"dtype", sarg("torch.float16")}});
  top("aten._to_copy.default", {R({4, 5})}, {}, {{"dtype", sarg("torch.int32")}});
  top("prims.convert_element_type.default", {R({4, 5})}, {sarg("torch.bool")});
  top("aten.copy.default", {R({4, 5}), R({5})});
  top("aten.copy_.default", {R({4, 5}), R({4, 5})});
  top("aten.copy_.default", {R({3, 1, 6}), R({6})});
  top("prims.device_put.default", {R({4, 5})}, {sarg("cpu")});
  top("tg.log_tensor.default", {R({5, 3})}, {sarg("tokens")});
  top("aten.flip.default", {R({4, 6})}, {ilist({1})});
  top("aten.flip.default", {R({5, 4, 3})}, {ilist({0, -1})});
  top("prims.rev.default", {R({6, 5})}, {ilist({0})});
  top("prims.rev.default", {R({1, 4, 1, 5})}, {ilist({1, 3})});
  top("aten.new_empty.default", {R({4, 5})}, {ilist({4, 5})});
  top("aten.new_zeros.default", {R({4, 5})}, {ilist({3, 6})});
  top("aten.new_ones.default", {R({4, 5})}, {ilist({4, 5})});
  top("aten.new_full.default", {R({4, 5})}, {ilist({2, 5}), farg(2.0)});
  for (const char* op : {"aten.empty.memory_format", "aten.zeros.default", "aten.ones.default"})
    v.push_back(SampleCall{"tensor", op, {}, {ilist({4, 6})}, {}});
  v.push_back(SampleCall{"tensor", "aten.full.default", {}, {ilist({4, 6}), farg(1.5)}, {}});
}

void add_math_cases(std::vector<SampleCall>& v) {
  auto m = [&v](std::string op, std::vector<SimInput> in, std::vector<OpArg> extra = {}, Kwargs kw = {}) {
    v.push_back(make_call("math", std::move(op), std::move(in), std::move(extra), std::move(kw)));
  };
  m("aten.sum.default", {R({4, 5})});
  m("aten.sum.dim_IntList", {R({4, 5})}, {ilist({1}), barg(false)});
  m("aten.sum.dim_IntList", {R({2, 3, 4})}, {ilist({0, 2}), barg(true)});
  m("aten.sum.dim_IntList", {R({4, 5})}, {ilist({})});
  m("aten.sum.dim_IntList", {R({5})}, {ilist({0})});
  m("aten.amax.default", {R({4, 5})}, {ilist({1}), barg(false)});
  m("aten.amax.default", {R({4, 5})}, {ilist({0}), barg(true)});
  m("aten.amax.default", {R({4, 5})}, {ilist({})});
  m("aten.amin.default", {R({2, 3, 4})}, {ilist({1})});
  m("aten.max.default", {R({4, 5})});
  m("aten.min.default", {R({4, 5})});
  m("aten.mean.default", {R({4, 5})});
  m("aten.mean.dim", {R({4, 6})}, {ilist({1}), barg(true)});
  m("aten.mean.dim", {R({4, 5})}, {ilist({0}), barg(false)});
  m("aten.max.dim", {R({4, 5})}, {iarg(1), barg(false)});
  m("aten.min.dim", {R({4, 5})}, {iarg(0), barg(true)});
  m("aten.argmax.default", {R({4, 5})}, {iarg(1), barg(false)});
  m("aten.argmax.default", {R({4, 5})});
  m("aten.argmin.default", {R({4, 5})}, {iarg(0), barg(true)});
  m("aten.logsumexp.default", {R({4, 5})}, {ilist({1}), barg(false)});
  m("aten.var.correction", {R({4, 5})}, {ilist({1})}, {{"correction", iarg(1)}});
  m("aten.std.correction", {R({4, 5})}, {ilist({0})}, {{"keepdim", barg(true)}});
  m("aten.var_mean.correction", {R({4, 5})}, {ilist({1})}, {{"correction", iarg(0)}});
  m("aten._softmax.default", {R({4, 5})}, {iarg(1), barg(false)});
  m("aten._softmax.default", {R({2, 3, 4})}, {iarg(0), barg(false)});
  m("aten._log_softmax.default", {R({4, 5})}, {iarg(-1), barg(false)});
  m("aten._safe_softmax.default", {R({4, 5})}, {iarg(1)});
  m("aten._softmax_backward_data.default", {R({4, 5}), Pos({4, 5})}, {iarg(1), sarg("torch.float32")});
  m("aten._log_softmax_backward_data.default", {R({4, 5}), R({4, 5})}, {iarg(0), sarg("torch.float32")});
  m("aten.native_layer_norm.default", {R({4, 5}), R({5}), R({5})}, {});
  v.back().args = {targ(0), ilist({5}), targ(1), targ(2), farg(1e-5)};
  m("aten.native_layer_norm.default", {R({2, 3, 4}), R({3, 4})}, {});
  v.back().args = {targ(0), ilist({3, 4}), targ(1), none_arg(), farg(1e-5)};
  m("aten.native_layer_norm.default", {R({5, 4})}, {});
  v.back().args = {targ(0), ilist({4}), none_arg(), none_arg(), farg(1e-5)};
  m("aten.native_layer_norm_backward.default", {R({4, 5}), R({4, 5}), R({4, 1}), Pos({4, 1}), R({5}), R({5})}, {});
  v.back().args = {targ(0), targ(1), ilist({5}), targ(2), targ(3), targ(4), targ(5), ilist({1, 1, 1})};
  m("aten.native_layer_norm_backward.default", {R({2, 3, 4}), R({2, 3, 4}), R({2, 1, 1}), Pos({2, 1, 1}), R({3, 4})}, {});
  v.back().args = {targ(0), targ(1), ilist({3, 4}), targ(2), targ(3), targ(4), none_arg(), ilist({1, 0, 1})};

  auto nn = [&v](std::string op, std::vector<SimInput> in, std::vector<OpArg> extra = {}) {
    v.push_back(make_call("nn", std::move(op), std::move(in), std::move(extra)));
  };
  nn("aten.embedding.default", {R({6, 4}), Idx({5}, 6)});
  nn("aten.embedding.default", {R({5, 3}), Idx({2, 3}, 5)});
  nn("aten.embedding_dense_backward.default", {R({5, 4}), Idx({5}, 6)}, {iarg(6), iarg(-1), barg(false)});
  nn("aten.embedding_dense_backward.default", {R({2, 3, 4}), Idx({2, 3}, 5)}, {iarg(5), iarg(1), barg(false)});
  nn("aten.embedding_dense_backward.default", {R({4, 3}), Idx({4}, 3)}, {iarg(3), iarg(-1), barg(true)});
  nn("aten.native_dropout.default", {R({4, 5})}, {farg(0.0), barg(true)});
  nn("aten.native_dropout_backward.default", {R({4, 5}), {{4, 5}, Domain::boolean, 0}}, {farg(2.0)});
}

}  // namespace ctshard::sim::detail
