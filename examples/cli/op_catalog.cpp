#include "op_catalog.hpp"

#include <map>

#include "ctshard/error.hpp"

namespace ctshard::cli {
namespace {
const std::map<std::string, std::string, std::less<>>& short_names() {
  static const std::map<std::string, std::string, std::less<>> names = {
      {"mm", "aten.mm.default"},
      {"bmm", "aten.bmm.default"},
      {"addmm", "aten.addmm.default"},
      {"baddbmm", "aten.baddbmm.default"},
      {"dot", "aten.dot.default"},
      {"pointwise:abs", "aten.abs.default"},
      {"pointwise:sin", "aten.sin.default"},
      {"pointwise:sqrt", "aten.sqrt.default"},
      {"pointwise:atan2", "aten.atan2.default"},
      {"pointwise:pow", "aten.pow.Tensor_Tensor"},
      {"pointwise:addcmul", "aten.addcmul.default"},
      {"pointwise:where", "aten.where.self"},
      {"pointwise:lerp", "aten.lerp.Tensor"},
      {"pointwise:exp", "aten.exp.default"},
      {"pointwise:relu", "aten.relu.default"},
      {"pointwise:erfc", "aten.erfc.default"},
      {"pointwise:mul_scalar", "aten.mul.Scalar"},
      {"pointwise:div_scalar", "aten.div.Scalar"},
      {"pointwise:neg", "aten.neg.default"},
      {"pointwise:positive", "aten.positive.default"},
      {"pointwise:add", "aten.add.Tensor"},
      {"pointwise:sub", "aten.sub.Tensor"},
      {"pointwise:mul", "aten.mul.Tensor"},
      {"pointwise:div", "aten.div.Tensor"},
      {"pointwise:maximum", "aten.maximum.default"},
      {"pointwise:minimum", "aten.minimum.default"},
      {"pointwise:logaddexp", "aten.logaddexp.default"},
  };
  return names;
}
}  // namespace

std::vector<std::string> table_op_names() {
  std::vector<std::string> out;
  for (const auto& [k, v] : short_names()) out.push_back(k);
  out.emplace_back("einsum:EQ");
  out.emplace_back("aten.<op>.<overload> (any registered aten name)");
  return out;
}

OpCall make_table_call(std::string_view op, std::vector<TensorMeta> tensors) {
  OpCall call;
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    OpArg a;
    a.kind = OpArg::Kind::tensor;
    a.integer = static_cast<std::int64_t>(i);
    call.args.push_back(a);
  }
  call.tensors = std::move(tensors);
  if (op.substr(0, 7) == "einsum:") {
    call.op = "aten.einsum.default";
    OpArg eq;
    eq.kind = OpArg::Kind::string;
    eq.text = std::string(op.substr(7));
    call.args.insert(call.args.begin(), eq);
    return call;
  }
  if (const auto it = short_names().find(op); it != short_names().end()) {
    call.op = it->second;
    return call;
  }
  if (op.substr(0, 5) == "aten.") {
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
  static const std::map<std::string, std::size_t, std::less<>> sizes = {
      {"float32", 4}, {"f32", 4}, {"float", 4},   {"float64", 8}, {"f64", 8},  {"double", 8}, {"float16", 2}, {"f16", 2},
      {"half", 2},    {"bfloat16", 2}, {"bf16", 2}, {"int64", 8},   {"i64", 8},  {"long", 8},   {"int32", 4},   {"i32", 4},
      {"int", 4},     {"int16", 2}, {"i16", 2},   {"int8", 1},    {"i8", 1},   {"uint8", 1},  {"u8", 1},      {"bool", 1},
      {"b8", 1},      {"float8_e4m3fn", 1}, {"f8e4m3fn", 1}, {"complex64", 8}, {"c64", 8}};
  const auto it = sizes.find(dtype);
  if (it == sizes.end()) throw error("ctshard: unknown dtype '" + std::string(dtype) + "'");
  return it->second;
}

}  // namespace ctshard::cli
