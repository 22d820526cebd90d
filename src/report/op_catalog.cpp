#include "ctshard/report/op_catalog.hpp"

#include <map>
#include <optional>

#include "ctshard/core/dtype.hpp"
#include "ctshard/error.hpp"
#include "ctshard/registry/op_args.hpp"

namespace ctshard::report {

namespace {
/// Short name -> aten overload and tensor arity (the reference cases always give every tensor).
struct ShortName {
  std::string aten;
  std::size_t arity;
};
const std::map<std::string, ShortName, std::less<>>& short_names() {
  static const std::map<std::string, ShortName, std::less<>> names = {
      {"mm", {"aten.mm.default", 2}},
      {"bmm", {"aten.bmm.default", 2}},
      {"addmm", {"aten.addmm.default", 3}},
      {"baddbmm", {"aten.baddbmm.default", 3}},
      {"dot", {"aten.dot.default", 2}},
      {"pointwise:abs", {"aten.abs.default", 1}},
      {"pointwise:sin", {"aten.sin.default", 1}},
      {"pointwise:sqrt", {"aten.sqrt.default", 1}},
      {"pointwise:atan2", {"aten.atan2.default", 2}},
      {"pointwise:pow", {"aten.pow.Tensor_Tensor", 2}},
      {"pointwise:addcmul", {"aten.addcmul.default", 3}},
      {"pointwise:where", {"aten.where.self", 3}},
      {"pointwise:lerp", {"aten.lerp.Tensor", 3}},
      {"pointwise:exp", {"aten.exp.default", 1}},
      {"pointwise:relu", {"aten.relu.default", 1}},
      {"pointwise:erfc", {"aten.erfc.default", 1}},
      {"pointwise:mul_scalar", {"aten.mul.Scalar", 1}},
      {"pointwise:div_scalar", {"aten.div.Scalar", 1}},
      {"pointwise:neg", {"aten.neg.default", 1}},
      {"pointwise:positive", {"aten.positive.default", 1}},
      {"pointwise:add", {"aten.add.Tensor", 2}},
      {"pointwise:sub", {"aten.sub.Tensor", 2}},
      {"pointwise:mul", {"aten.mul.Tensor", 2}},
      {"pointwise:div", {"aten.div.Tensor", 2}},
      {"pointwise:maximum", {"aten.maximum.default", 2}},
      {"pointwise:minimum", {"aten.minimum.default", 2}},
      {"pointwise:logaddexp", {"aten.logaddexp.default", 2}},
  };
  return names;
}
}  // namespace

std::vector<std::string> table_op_names() {
  std::vector<std::string> out;
  for (const auto& [k, v] : short_names()) out.push_back(k);
  out.emplace_back("einsum:EQ");
  out.emplace_back("namespace.op.overload (any name `ctshard ops` lists)");
  return out;
}

OpCall make_table_call(std::string_view op, std::vector<TensorMeta> tensors, std::vector<OpArg> args,
                       std::vector<std::pair<std::string, OpArg>> kwargs, TensorArgs layout) {
  OpCall call;
  call.kwargs = std::move(kwargs);
  for (std::size_t i = 0; layout == TensorArgs::first && i < tensors.size(); ++i) {
    OpArg a;
    a.kind = OpArg::Kind::tensor;
    a.integer = static_cast<std::int64_t>(i);
    call.args.push_back(a);
  }
  call.tensors = std::move(tensors);
  call.args.insert(call.args.end(), args.begin(), args.end());
  if (op.substr(0, 7) == "einsum:") {
    call.op = "aten.einsum.default";
    OpArg eq;
    eq.kind = OpArg::Kind::string;
    eq.text = std::string(op.substr(7));
    call.args.insert(call.args.begin(), eq);
    return call;
  }
  if (const auto it = short_names().find(op); it != short_names().end()) {
    call.op = it->second.aten;
    op_args::expect_tensor_inputs(call, it->second.arity, it->second.arity, op);
    return call;
  }
  if (op.find('.') != std::string_view::npos && op.find('.') != 0) {  // namespace.op.overload: any registered name
    call.op = std::string(op);
    return call;
  }
  std::string known;
  for (const auto& n : table_op_names()) {
    if (!known.empty()) known += ", ";
    known += n;
  }
  throw error("ctshard table: unknown op '" + std::string(op) + "' (known: " + known + ")");
}

std::size_t dtype_itemsize(std::string_view dtype) {
  if (const std::optional<std::size_t> size = itemsize_of(dtype)) return *size;
  throw error("ctshard: unknown dtype '" + std::string(dtype) + "'");
}

}  // namespace ctshard::report
