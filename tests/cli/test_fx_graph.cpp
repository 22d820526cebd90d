// Tests of the FX graph printout reader used by `ctshard plan` (examples/cli/fx_graph.hpp).

#include "ctshard/fx/reader.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>

#ifndef CTSHARD_SHARED_DIR
#define CTSHARD_SHARED_DIR "../shared"
#endif

namespace {

using Catch::Matchers::Contains;
using Catch::Matchers::EndsWith;
using Catch::Matchers::StartsWith;
using ctshard::fx::Arg;
using ctshard::fx::ArgKind;
using ctshard::fx::Graph;
using ctshard::fx::Node;
using ctshard::fx::parse_error;
using ctshard::fx::parse_fx_graph;
using ctshard::fx::TensorType;

/// A learn_torch.compile-style module: `def forward(<params>):` at column 0, body at 4 spaces.
std::string module(std::string_view params, std::string_view body) {
  return "from __future__ import annotations\n\n\n\ndef forward(self, " + std::string(params) + "):\n" + std::string(body);
}

/// The node called `name`; fails the test if absent.
const Node& node(const Graph& g, std::string_view name) {
  const Node* n = g.find(name);
  INFO("node " << name);
  REQUIRE(n != nullptr);
  return *n;
}

/// what() of the parse_error raised by parsing `text`, or "" if parsing succeeds.
std::string error_of(std::string_view text) {
  try {
    parse_fx_graph(text, "t.fx");
  } catch (const parse_error& e) {
    return e.what();
  }
  return "";
}

TensorType tt(std::string dtype, std::vector<std::int64_t> shape) { return TensorType{std::move(dtype), std::move(shape)}; }

}  // namespace

// ---- well-formed input ----------------------------------------------------------------------

TEST_CASE("fx_graph: parses typed placeholders", "[fx]") {
  const Graph g = parse_fx_graph(R"(
import torch
from torch import device

b8: type
f32: type


class GraphModule(torch.nn.Module):
    def forward(self, primals_1: "f32[2304, 768]", primals_2: "i64[8, 1536]", zero: "i32[]", mask: "b8[8, 1, 4, 4]", untyped, hinted: torch.Tensor):
        return [primals_1]
)",
                                 "gm.fx");
  CHECK(g.source_name == "gm.fx");
  REQUIRE(g.nodes.size() == 7);
  const Node& p1 = g.nodes[0];
  CHECK(p1.name == "primals_1");
  CHECK(p1.kind == "placeholder");
  CHECK(p1.target == "primals_1");
  CHECK(p1.line == 10);
  CHECK(p1.args.empty());
  REQUIRE(p1.outputs.size() == 1);
  CHECK(p1.outputs[0] == tt("f32", {2304, 768}));
  CHECK(node(g, "primals_2").outputs == std::vector{tt("i64", {8, 1536})});
  const TensorType& zero = node(g, "zero").outputs.at(0);
  CHECK(zero.dtype == "i32");
  CHECK(zero.shape.empty());
  CHECK(zero.numel() == 1);
  CHECK(node(g, "mask").outputs == std::vector{tt("b8", {8, 1, 4, 4})});
  CHECK(node(g, "untyped").kind == "placeholder");
  CHECK(node(g, "untyped").outputs.empty());
  CHECK(node(g, "hinted").outputs.empty());
  CHECK(g.find("self") == nullptr);
  CHECK(g.nodes.back().kind == "output");
  CHECK(g.outputs == std::vector<std::string>{"primals_1"});
}

TEST_CASE("fx_graph: lambda class wrapper and multi-line signature", "[fx]") {
  const Graph g = parse_fx_graph(R"(
class <lambda>(torch.nn.Module):
    def forward(self, arg0_1: "bf16[4, 8]",
                arg1_1: "bf16[8]"):
        add: "bf16[4, 8]" = torch.ops.aten.add.Tensor(arg0_1, arg1_1);  arg0_1 = arg1_1 = None
        return (add,)
)");
  REQUIRE(g.nodes.size() == 4);
  CHECK(node(g, "arg1_1").outputs == std::vector{tt("bf16", {8})});
  CHECK(node(g, "arg1_1").line == 3);
  CHECK(node(g, "add").line == 5);
  CHECK(g.outputs == std::vector<std::string>{"add"});
}

TEST_CASE("fx_graph: bare def forward wrapper and annotated call_function", "[fx]") {
  const Graph g = parse_fx_graph(module(R"(primals_1: "f32[1024, 1024]", primals_17: "f32[1, 1024, 1024]")",
                                        R"(    view: "f32[1024, 1024]" = torch.ops.aten.view.default(primals_17, [1024, 1024])
    permute: "f32[1024, 1024]" = torch.ops.aten.permute.default(primals_1, [1, 0]);  primals_1 = None
    view_4: "f32[1, 1024, 16, 64]" = torch.ops.aten.view.default(view, [1, -1, 16, 64]);  view = primals_17 = None
    return [view_4, permute]
)"));
  REQUIRE(g.nodes.size() == 6);
  const Node& view = node(g, "view");
  CHECK(view.kind == "call_function");
  CHECK(view.target == "aten.view.default");
  CHECK(view.line == 6);
  CHECK(view.outputs == std::vector{tt("f32", {1024, 1024})});
  REQUIRE(view.args.size() == 2);
  CHECK(view.args[0] == Arg::make_node("primals_17"));
  CHECK(view.args[1] == Arg::make_list({Arg::make_int(1024), Arg::make_int(1024)}));
  CHECK(view.kwargs.empty());

  const Node& v4 = node(g, "view_4");
  CHECK(v4.args[1].kind == ArgKind::list);
  REQUIRE(v4.args[1].items.size() == 4);
  CHECK(v4.args[1].items[1].kind == ArgKind::integer);
  CHECK(v4.args[1].items[1].int_value == -1);
  CHECK(v4.outputs == std::vector{tt("f32", {1, 1024, 16, 64})});

  const Node& out = g.nodes.back();
  CHECK(out.name == "output");
  CHECK(out.kind == "output");
  CHECK(out.line == 9);
  REQUIRE(out.args.size() == 1);
  CHECK(out.args[0] == Arg::make_list({Arg::make_node("view_4"), Arg::make_node("permute")}));
  CHECK(g.outputs == std::vector<std::string>{"view_4", "permute"});
}

TEST_CASE("fx_graph: ops in all namespaces keep their qualified name", "[fx]") {
  const Graph g = parse_fx_graph(module(R"(x: "f32[8, 768]", w: "f32[768]")",
                                        R"(    a: "f32[8, 768]" = torch.ops._c10d_functional.all_reduce.default(x, 'sum', '7')
    b: "f32[8, 768]" = torch.ops._c10d_functional.wait_tensor.default(a)
    c: "f32[8, 768]" = torch.ops.vllm.all_reduce.default(b, 'tp:0')
    d = torch.ops.apex.fused_layer_norm_affine_fwd.default(c, w, w, [768], 1e-05)
    e: "f32[8, 768]" = torch.ops.prims.convert_element_type.default(c, torch.float32)
    return (e,)
)"));
  CHECK(node(g, "a").target == "_c10d_functional.all_reduce.default");
  CHECK(node(g, "a").args[1] == Arg::make_string("sum"));
  CHECK(node(g, "a").args[2] == Arg::make_string("7"));
  CHECK(node(g, "b").target == "_c10d_functional.wait_tensor.default");
  CHECK(node(g, "c").target == "vllm.all_reduce.default");
  CHECK(node(g, "c").args[1] == Arg::make_string("tp:0"));
  CHECK(node(g, "d").target == "apex.fused_layer_norm_affine_fwd.default");
  CHECK(node(g, "d").args[4].kind == ArgKind::floating);
  CHECK(node(g, "d").args[4].float_value == 1e-05);
  CHECK(node(g, "e").target == "prims.convert_element_type.default");
  CHECK(node(g, "e").args[1] == Arg::make_opaque("torch.float32"));
}

TEST_CASE("fx_graph: keyword arguments and opaque tokens", "[fx]") {
  const Graph g = parse_fx_graph(
      module(R"(p: "i64[8, 1536]")",
             R"(    zeros: "i32[]" = torch.ops.aten.zeros.default([], dtype = torch.int32, device = device(type='cuda'), pin_memory = False)
    c: "i64[8, 1536]" = torch.ops.aten._to_copy.default(p, dtype = torch.int64, layout = torch.strided, device = device(type='cuda', index=0));  p = None
    e: "f32[8, 4]" = torch.ops.aten.empty.memory_format([8, 4], dtype = torch.float32, device = device(type='cuda', index=1), pin_memory = False, memory_format = torch.contiguous_format)
    return [zeros, c, e]
)"));
  const Node& zeros = node(g, "zeros");
  CHECK(zeros.outputs == std::vector{tt("i32", {})});
  REQUIRE(zeros.args.size() == 1);
  CHECK(zeros.args[0] == Arg::make_list({}));
  REQUIRE(zeros.kwargs.size() == 3);
  CHECK(zeros.kwargs[0].first == "dtype");
  CHECK(zeros.kwargs[0].second == Arg::make_opaque("torch.int32"));
  CHECK(zeros.kwargs[1].first == "device");
  CHECK(zeros.kwargs[1].second == Arg::make_opaque("device(type='cuda')"));
  CHECK(zeros.kwargs[2].second == Arg::make_bool(false));

  const Node& c = node(g, "c");
  REQUIRE(c.kwarg("layout") != nullptr);
  CHECK(*c.kwarg("layout") == Arg::make_opaque("torch.strided"));
  CHECK(*c.kwarg("device") == Arg::make_opaque("device(type='cuda', index=0)"));
  CHECK(c.kwarg("absent") == nullptr);

  const Node& e = node(g, "e");
  CHECK(e.kwargs.size() == 4);
  CHECK(*e.kwarg("memory_format") == Arg::make_opaque("torch.contiguous_format"));
  CHECK(*e.kwarg("device") == Arg::make_opaque("device(type='cuda', index=1)"));
}

TEST_CASE("fx_graph: literal arguments", "[fx]") {
  const Graph g =
      parse_fx_graph(module(R"(x: "f32[4, 4]")",
                            R"(    a: "f32[4, 4]" = torch.ops.aten.f.default(x, 1e-05, -inf, inf, 0.7071067811865476, -2, 9223372036854775807)
    b: "f32[4, 4]" = torch.ops.aten.g.default(True, False, None, 'single', "double", 'it\'s', [[1, 2], [3], []], (4, 5))
    c: "f32[4, 4]" = torch.ops.aten.h.default(x, -1.5e+3, nan, [x, a])
    return [c]
)"));
  const Node& a = node(g, "a");
  REQUIRE(a.args.size() == 7);
  CHECK(a.args[1].kind == ArgKind::floating);
  CHECK(a.args[1].float_value == 1e-05);
  CHECK(a.args[2].kind == ArgKind::floating);
  CHECK(std::isinf(a.args[2].float_value));
  CHECK(a.args[2].float_value < 0);
  CHECK(a.args[3].float_value > 0);
  CHECK(std::isinf(a.args[3].float_value));
  CHECK(a.args[4] == Arg::make_float(0.7071067811865476));
  CHECK(a.args[5] == Arg::make_int(-2));
  CHECK(a.args[6] == Arg::make_int(9223372036854775807));

  const Node& b = node(g, "b");
  REQUIRE(b.args.size() == 8);
  CHECK(b.args[0] == Arg::make_bool(true));
  CHECK(b.args[1] == Arg::make_bool(false));
  CHECK(b.args[2].kind == ArgKind::none);
  CHECK(b.args[3] == Arg::make_string("single"));
  CHECK(b.args[4] == Arg::make_string("double"));
  CHECK(b.args[5] == Arg::make_string("it's"));
  CHECK(b.args[6] == Arg::make_list({Arg::make_list({Arg::make_int(1), Arg::make_int(2)}), Arg::make_list({Arg::make_int(3)}), Arg::make_list({})}));
  CHECK(b.args[7] == Arg::make_list({Arg::make_int(4), Arg::make_int(5)}));

  const Node& c = node(g, "c");
  CHECK(c.args[1] == Arg::make_float(-1500.0));
  CHECK(std::isnan(c.args[2].float_value));
  CHECK(c.args[3] == Arg::make_list({Arg::make_node("x"), Arg::make_node("a")}));
}

TEST_CASE("fx_graph: multi-output nodes are typed from their getitem children", "[fx]") {
  const Graph g = parse_fx_graph(module(R"(clone: "f32[8, 197, 768]", qkv: "f32[3, 8, 64]")",
                                        R"(    var_mean = torch.ops.aten.var_mean.correction(clone, [2], correction = 0, keepdim = True)
    getitem: "f32[8, 197, 1]" = var_mean[0]
    getitem_1: "f32[8, 197, 1]" = var_mean[1];  var_mean = None
    split = torch.ops.aten.split_with_sizes.default(qkv, [1, 1, 1])
    getitem_4: "f32[1, 8, 64]" = split[2];  split = None
    lonely = torch.ops.aten.unbind.int(qkv)
    return [getitem, getitem_1, getitem_4]
)"));
  const Node& vm = node(g, "var_mean");
  CHECK(vm.kind == "call_function");
  CHECK(vm.target == "aten.var_mean.correction");
  CHECK(vm.outputs == std::vector{tt("f32", {8, 197, 1}), tt("f32", {8, 197, 1})});
  CHECK(vm.kwargs.size() == 2);
  CHECK(*vm.kwarg("correction") == Arg::make_int(0));
  CHECK(*vm.kwarg("keepdim") == Arg::make_bool(true));

  const Node& g1 = node(g, "getitem_1");
  CHECK(g1.kind == "call_function");
  CHECK(g1.target == "getitem");
  CHECK(g1.line == 8);
  CHECK(g1.args == std::vector{Arg::make_node("var_mean"), Arg::make_int(1)});
  CHECK(g1.outputs == std::vector{tt("f32", {8, 197, 1})});

  // Only index 2 has a getitem: entries 0 and 1 stay unknown.
  const Node& split = node(g, "split");
  REQUIRE(split.outputs.size() == 3);
  CHECK_FALSE(split.outputs[0].known());
  CHECK(split.outputs[0].dtype.empty());
  CHECK_FALSE(split.outputs[1].known());
  CHECK(split.outputs[2] == tt("f32", {1, 8, 64}));

  CHECK(node(g, "lonely").outputs.empty());
}

TEST_CASE("fx_graph: get_attr nodes", "[fx]") {
  const Graph g = parse_fx_graph(R"(
class GraphModule(torch.nn.Module):
    def forward(self, x: "i64[4]"):
        _tensor_constant0 = self._tensor_constant0
        lift_fresh_copy: "i64[]" = torch.ops.aten.lift_fresh_copy.default(_tensor_constant0);  _tensor_constant0 = None
        _param: "f32[2]" = self.sub.weight
        return [lift_fresh_copy, _param]
)");
  const Node& c = node(g, "_tensor_constant0");
  CHECK(c.kind == "get_attr");
  CHECK(c.target == "_tensor_constant0");
  CHECK(c.args.empty());
  CHECK(c.outputs.empty());
  CHECK(c.line == 4);
  CHECK(node(g, "lift_fresh_copy").args == std::vector{Arg::make_node("_tensor_constant0")});
  CHECK(node(g, "_param").target == "sub.weight");
  CHECK(node(g, "_param").outputs == std::vector{tt("f32", {2})});
}

TEST_CASE("fx_graph: auto_functionalized keeps the wrapped op as an opaque argument", "[fx]") {
  const Graph g = parse_fx_graph(R"(
class <lambda>(torch.nn.Module):
    def forward(self, embedding: "bf16[32768, 1536]", arg2_1: "bf16[1536]"):
        empty_like: "bf16[32768, 1536]" = torch.ops.aten.empty_like.default(embedding, pin_memory = False)
        auto_functionalized = torch.ops.higher_order.auto_functionalized(torch.ops._C.rms_norm.default, result = empty_like, input = embedding, weight = arg2_1, epsilon = 1e-06);  empty_like = None
        getitem_1: "bf16[32768, 1536]" = auto_functionalized[1];  auto_functionalized = None
        return (getitem_1, embedding)
)");
  const Node& af = node(g, "auto_functionalized");
  CHECK(af.target == "higher_order.auto_functionalized");
  REQUIRE(af.args.size() == 1);
  CHECK(af.args[0] == Arg::make_opaque("_C.rms_norm.default"));
  REQUIRE(af.kwargs.size() == 4);
  CHECK(af.kwargs[0].first == "result");
  CHECK(af.kwargs[0].second == Arg::make_node("empty_like"));
  CHECK(af.kwargs[1] == std::pair<std::string, Arg>{"input", Arg::make_node("embedding")});
  CHECK(*af.kwarg("epsilon") == Arg::make_float(1e-06));
  REQUIRE(af.outputs.size() == 2);
  CHECK_FALSE(af.outputs[0].known());
  CHECK(af.outputs[1] == tt("bf16", {32768, 1536}));
  CHECK(g.outputs == std::vector<std::string>{"getitem_1", "embedding"});
}

TEST_CASE("fx_graph: return forms", "[fx]") {
  const std::string params = R"(a: "f32[2]", b: "f32[2]")";
  SECTION("list with None") {
    const Graph g = parse_fx_graph(module(params, "    return [a, None, b]\n"));
    CHECK(g.outputs == std::vector<std::string>{"a", "", "b"});
    CHECK(g.nodes.back().args[0].items[1].kind == ArgKind::none);
  }
  SECTION("tuple") { CHECK(parse_fx_graph(module(params, "    return (b, a)\n")).outputs == std::vector<std::string>{"b", "a"}); }
  SECTION("single value") {
    const Graph g = parse_fx_graph(module(params, "    return a\n"));
    CHECK(g.outputs == std::vector<std::string>{"a"});
    CHECK(g.nodes.back().args == std::vector{Arg::make_node("a")});
  }
  SECTION("bare tuple") { CHECK(parse_fx_graph(module(params, "    return a, b\n")).outputs == std::vector<std::string>{"a", "b"}); }
  SECTION("empty") { CHECK(parse_fx_graph(module(params, "    return ()\n")).outputs.empty()); }
  SECTION("a node called output") {
    const Graph g = parse_fx_graph(module(params, R"(    output: "f32[2]" = torch.ops.aten.add.Tensor(a, b)
    return [output]
)"));
    CHECK(g.nodes.back().name == "output_1");
    CHECK(g.nodes.back().kind == "output");
    CHECK(g.outputs == std::vector<std::string>{"output"});
  }
}

TEST_CASE("fx_graph: indexed node references in arguments", "[fx]") {
  const Graph g = parse_fx_graph(module(R"(x: "f32[4]")", R"(    s = torch.ops.aten.split.Tensor(x, 2)
    c: "f32[4]" = torch.ops.aten.cat.default([s[0], s[1]])
    return [c]
)"));
  CHECK(node(g, "c").args[0] == Arg::make_list({Arg::make_node("s", 0), Arg::make_node("s", 1)}));
  CHECK(node(g, "c").args[0].items[1].index == 1);
  CHECK(node(g, "s").outputs.empty());
}

TEST_CASE("fx_graph: blank lines, comments and whitespace-only lines are skipped", "[fx]") {
  const Graph g = parse_fx_graph(
      "def forward(self, x: \"f32[2]\"):\n"
      "    # File: model.py:12, code: y = x.relu()\n"
      "    \n"
      "\n"
      "    relu: \"f32[2]\" = torch.ops.aten.relu.default(x);  x = None  # trailing comment\n"
      "    neg: \"f32[2]\" = torch.ops.aten.neg.default(relu);\n"
      "\t\n"
      "    return [neg]\n"
      "    \n");
  REQUIRE(g.nodes.size() == 4);
  CHECK(node(g, "relu").line == 5);
  CHECK(node(g, "neg").line == 6);
  CHECK(g.nodes.back().line == 8);
}

TEST_CASE("fx_graph: CRLF line endings", "[fx]") {
  const Graph g = parse_fx_graph("def forward(self, x: \"f32[2]\"):\r\n    return [x]\r\n");
  CHECK(g.nodes.size() == 2);
  CHECK(node(g, "x").outputs == std::vector{tt("f32", {2})});
}

// ---- types and values -----------------------------------------------------------------------

TEST_CASE("fx_graph: TensorType sizes", "[fx]") {
  CHECK(tt("f32", {8, 197, 768}).itemsize() == 4);
  CHECK(tt("bf16", {2}).itemsize() == 2);
  CHECK(tt("f16", {}).itemsize() == 2);
  CHECK(tt("f64", {}).itemsize() == 8);
  CHECK(tt("i64", {}).itemsize() == 8);
  CHECK(tt("i32", {}).itemsize() == 4);
  CHECK(tt("i16", {}).itemsize() == 2);
  CHECK(tt("i8", {}).itemsize() == 1);
  CHECK(tt("u8", {}).itemsize() == 1);
  CHECK(tt("b8", {}).itemsize() == 1);
  CHECK(tt("f32", {8, 197, 768}).numel() == std::int64_t{8} * 197 * 768);
  CHECK(tt("f32", {8, 197, 768}).nbytes() == std::size_t{8} * 197 * 768 * 4);
  CHECK(tt("i32", {}).nbytes() == 4);
  CHECK(tt("f32", {8, 197, 768}).to_string() == "f32[8, 197, 768]");
  CHECK(tt("i32", {}).to_string() == "i32[]");
  CHECK(TensorType{}.to_string() == "?");
  CHECK_THROWS_AS(TensorType{}.itemsize(), std::invalid_argument);
  CHECK_THROWS_AS(tt("q4", {1}).itemsize(), std::invalid_argument);
  CHECK(ctshard::fx::dtype_itemsize("bf16") == 2);
  CHECK(ctshard::fx::is_known_dtype("b8"));
  CHECK_FALSE(ctshard::fx::is_known_dtype("float32"));
}

TEST_CASE("fx_graph: parse_tensor_type", "[fx]") {
  using ctshard::fx::parse_tensor_type;
  CHECK(parse_tensor_type("f32[8, 197, 768]") == tt("f32", {8, 197, 768}));
  CHECK(parse_tensor_type("i32[]") == tt("i32", {}));
  CHECK(parse_tensor_type("f32[4, 8][8, 1]cuda:0") == tt("f32", {4, 8}));
  CHECK(parse_tensor_type("f32[4][1]cpu") == tt("f32", {4}));
  CHECK_FALSE(parse_tensor_type("Sym(s0)"));  // a symbolic integer, not a tensor type
  CHECK(parse_tensor_type("f32[s0, 4]") ==
        TensorType{"f32", {-1, 4}, {ctshard::fx::SizeExpr::parse("s0"), std::nullopt}});  // more in test_symbolic.cpp
  CHECK_FALSE(parse_tensor_type("f32[4"));
  CHECK_FALSE(parse_tensor_type("f32[-1]"));
  CHECK_FALSE(parse_tensor_type("xx[4]"));
  CHECK_FALSE(parse_tensor_type("f32[4]junk!"));
  CHECK_FALSE(parse_tensor_type(""));
}

TEST_CASE("fx_graph: Arg::to_string", "[fx]") {
  CHECK(Arg::make_node("x").to_string() == "x");
  CHECK(Arg::make_node("x", 2).to_string() == "x[2]");
  CHECK(Arg::make_int(-3).to_string() == "-3");
  CHECK(Arg::make_float(1e-05).to_string() == "1e-05");
  CHECK(Arg::make_float(2.0).to_string() == "2.0");
  CHECK(Arg::make_float(-std::numeric_limits<double>::infinity()).to_string() == "-inf");
  CHECK(Arg::make_bool(true).to_string() == "True");
  CHECK(Arg::make_none().to_string() == "None");
  CHECK(Arg::make_string("tp:0").to_string() == "'tp:0'");
  CHECK(Arg::make_list({Arg::make_node("a"), Arg::make_list({Arg::make_int(1)})}).to_string() == "[a, [1]]");
  CHECK(Arg::make_opaque("torch.float32").to_string() == "torch.float32");
}

TEST_CASE("fx_graph: every literal print_readable emits reads, dicts and sets included", "[fx]") {
  const Graph g =
      parse_fx_graph(module(R"(x: "f32[4, 4]")",
                            R"(    a: "f32[4, 4]" = torch.ops.aten.f.default(x, {'BACKEND': 'AUTO', 'PRESCALE_QK': False, 'N': 3, 'S': 1e-05}, {})
    b: "f32[4, 4]" = torch.ops.aten.g.default(x, {0: x, 1: [x, None], 'k': (1, (2, (3,)))}, {1, 2, 3}, {'a'})
    c: "f32[4, 4]" = torch.ops.aten.h.default(x, .5, 5., 1E10, -0.0, 1.7976931348623157e+308, 2j, (1+2j), (-0.5-1e-3j), ..., Ellipsis)
    d: "f32[4, 4]" = torch.ops.aten.i.default(x, (), ((),), [[[]]], "a'b", 'q"r', 'tab\tx', torch.float64, torch.strided, device(type='cpu'))
    return (a, b, c, d)
)"));
  const Node& a = node(g, "a");
  REQUIRE(a.args.size() == 3);
  CHECK(a.unreadable.empty());
  CHECK(a.args[1] == Arg::make_dict({{Arg::make_string("BACKEND"), Arg::make_string("AUTO")},
                                     {Arg::make_string("PRESCALE_QK"), Arg::make_bool(false)},
                                     {Arg::make_string("N"), Arg::make_int(3)},
                                     {Arg::make_string("S"), Arg::make_float(1e-05)}}));
  CHECK(a.args[1].to_string() == "{'BACKEND': 'AUTO', 'PRESCALE_QK': False, 'N': 3, 'S': 1e-05}");
  CHECK(a.args[2] == Arg::make_dict({}));
  const Node& b = node(g, "b");
  REQUIRE(b.args.size() == 4);
  CHECK(b.args[1] == Arg::make_dict({{Arg::make_int(0), Arg::make_node("x")},
                                     {Arg::make_int(1), Arg::make_list({Arg::make_node("x"), Arg::make_none()})},
                                     {Arg::make_string("k"),
                                      Arg::make_list({Arg::make_int(1), Arg::make_list({Arg::make_int(2), Arg::make_list({Arg::make_int(3)})})})}}));
  CHECK(b.args[2] == Arg::make_list({Arg::make_int(1), Arg::make_int(2), Arg::make_int(3)}));  // a set reads as a list
  CHECK(b.args[3] == Arg::make_list({Arg::make_string("a")}));
  const Node& c = node(g, "c");
  REQUIRE(c.args.size() == 11);
  CHECK(c.args[1] == Arg::make_float(0.5));
  CHECK(c.args[2] == Arg::make_float(5.0));
  CHECK(c.args[3] == Arg::make_float(1e10));
  CHECK(c.args[4].kind == ArgKind::floating);
  CHECK(std::signbit(c.args[4].float_value));
  CHECK(c.args[5] == Arg::make_float(1.7976931348623157e+308));
  CHECK(c.args[6] == Arg::make_opaque("2j"));
  CHECK(c.args[7] == Arg::make_opaque("(1+2j)"));
  CHECK(c.args[8] == Arg::make_opaque("(-0.5-1e-3j)"));
  CHECK(c.args[9] == Arg::make_opaque("..."));
  CHECK(c.args[10] == Arg::make_opaque("..."));
  const Node& d = node(g, "d");
  REQUIRE(d.args.size() == 10);
  CHECK(d.args[1] == Arg::make_list({}));
  CHECK(d.args[2] == Arg::make_list({Arg::make_list({})}));
  CHECK(d.args[3] == Arg::make_list({Arg::make_list({Arg::make_list({})})}));
  CHECK(d.args[4] == Arg::make_string("a'b"));
  CHECK(d.args[5] == Arg::make_string("q\"r"));
  CHECK(d.args[6] == Arg::make_string("tab\tx"));
  CHECK(d.args[7] == Arg::make_opaque("torch.float64"));
  CHECK(d.args[8] == Arg::make_opaque("torch.strided"));
  CHECK(d.args[9] == Arg::make_opaque("device(type='cpu')"));
  // a tuple of a node and an int (a block-mask tuple) is a list like any other
  const Graph t = parse_fx_graph(module(R"(x: "f32[4]")", "    y: \"f32[4]\" = torch.ops.higher_order.h(x, (128, x, None, 1.0))\n    return (y,)\n"));
  CHECK(node(t, "y").args[1] == Arg::make_list({Arg::make_int(128), Arg::make_node("x"), Arg::make_none(), Arg::make_float(1.0)}));
}

TEST_CASE("fx_graph: a call whose arguments cannot be read is kept as an unreadable node, not an error", "[fx]") {
  struct Case {
    const char* call;     // the argument list of torch.ops.aten.f.default
    const char* problem;  // expected in Node::unreadable
  };
  const Case cases[] = {
      {"(x, dim = 1, x)", "positional argument after keyword"},
      {"(x, dim = 1, dim = 2)", "duplicate keyword argument 'dim'"},
      {"(x, 1.2.3)", "malformed number"},
      {"(x, 99999999999999999999)", "out of range"},
      {"(x, @)", "expected a value"},
      {"(x.w)", "unknown name 'x.w'"},
      {"(x, devce(type='cuda'))", "unknown call 'devce(...)'"},
      {"(x, {'a' 1})", "expected '}'"},
      {"(x, {'a': })", "expected a value"},
      {"(x, lambda q: q, 'x')", "unknown node reference"},
  };
  for (const Case& c : cases) {
    const std::string text = module(R"(x: "f32[2]", w: "f32[2]")", std::string("    y = torch.ops.aten.f.default") + c.call +
                                                                       "\n    z = torch.ops.aten.g.default(y, w)\n    return [z]\n");
    INFO(text);
    if (std::string_view(c.problem) == "unknown node reference") {
      // an unknown name stays a file error (the data flow cannot be followed)
      CHECK_THAT(error_of(text), Contains("unknown node reference 'lambda'"));
      continue;
    }
    const Graph g = parse_fx_graph(text, "t.fx");
    const Node& y = node(g, "y");
    CHECK_THAT(y.unreadable, Contains(c.problem));
    CHECK(y.target == "aten.f.default");
    CHECK(y.kwargs.empty());
    // the node references in the text are its arguments (once each), not names inside strings
    CHECK(y.args == std::vector<Arg>{Arg::make_node("x")});
    CHECK(node(g, "z").unreadable.empty());
  }
  // references inside an unreadable call: in order, each once, never from a string or after a dot
  const Graph g =
      parse_fx_graph(module(R"(x: "f32[2]", w: "f32[2]")", "    y = torch.ops.aten.f.default(w, 'x', x.w, bad(w, x), 1e5)\n    return [y]\n"));
  CHECK(node(g, "y").args == std::vector<Arg>{Arg::make_node("w"), Arg::make_node("x")});
  // the reader's bounds still reject the file
  CHECK_THAT(error_of(module(R"(x: "f32[2]")",
                             "    y = torch.ops.aten.f.default(x, " + std::string(70, '{') + std::string(70, '}') + ")\n    return [y]\n")),
             Contains("nested too deeply"));
}

TEST_CASE("fx_graph: nested submodules after the forward are read as graphs", "[fx]") {
  const std::string text = R"(class GraphModule(torch.nn.Module):
    def forward(self, q: "f32[2, 4, 8, 4]"):
        sdpa_score0 = self.sdpa_score0
        y = torch.ops.higher_order.h(q, sdpa_score0, {'K': 1})
        getitem: "f32[2, 4, 8, 4]" = y[0]
        return (getitem,)

    class sdpa_score0(torch.nn.Module):
        def forward(self, arg0_1: "f32[]", arg1_1: "i32[]", arg2_1: "i32[]", arg3_1: "i32[]", arg4_1: "i32[]"):
            # File: x.py:5 in forward, code: return score + h
            add: "f32[]" = torch.ops.aten.add.Tensor(arg0_1, arg2_1);  arg0_1 = arg2_1 = None
            return add

        class inner(torch.nn.Module):
            def forward(self, a: "f32[]"):
                return (a,)

    class broken(torch.nn.Module):
        def forward(self, a: "f32[]"):
            b = torch.ops.aten.neg.default(nope)
            return (b,)
)";
  const Graph g = parse_fx_graph(text, "t.fx");
  REQUIRE(g.submodules.size() == 2);
  const ctshard::fx::Submodule* score = g.submodule("sdpa_score0");
  REQUIRE(score != nullptr);
  CHECK(score->unreadable.empty());
  CHECK(score->graph.find("add") != nullptr);
  CHECK(score->graph.find("add")->line == 11);  // lines count from the file's start
  CHECK(score->graph.uses_placeholder(0) == true);
  CHECK(score->graph.uses_placeholder(1) == false);
  CHECK(score->graph.uses_placeholder(2) == true);
  CHECK(score->graph.uses_placeholder(4) == false);
  CHECK_FALSE(score->graph.uses_placeholder(5).has_value());
  REQUIRE(score->graph.submodules.size() == 1);
  CHECK(score->graph.submodules[0].name == "inner");
  CHECK(score->graph.submodules[0].graph.uses_placeholder(0) == true);  // returned
  const ctshard::fx::Submodule* broken = g.submodule("broken");
  REQUIRE(broken != nullptr);
  CHECK_THAT(broken->unreadable, Contains("t.fx:20: unknown node reference 'nope'"));
  CHECK(g.submodule("absent") == nullptr);
  // anything but a class after the return is still an error
  CHECK_THAT(error_of(text + "    x = 1\n"), Contains("unexpected text after 'return'"));
}

// ---- malformed input --------------------------------------------------------------------------

TEST_CASE("fx_graph: malformed body lines raise parse_error with line and text", "[fx]") {
  struct Case {
    std::string body;     // body lines; module() puts the first one on line 6
    const char* problem;  // expected in what()
    const char* where;    // expected "t.fx:<line>: ...in: <text>" parts
  };
  const Case cases[] = {
      {"    y = torch.ops.aten.relu.default(x\n", "unbalanced brackets: '(' is never closed", "t.fx:6: "},
      {"    y = torch.ops.aten.cat.default([x, x)]\n", "unbalanced brackets: unexpected ')'", "t.fx:6: "},
      {"    y = torch.ops.aten.relu.default(x))\n", "unbalanced brackets: unexpected ')'", "t.fx:6: "},
      {"    torch.ops.aten.relu.default(x)\n", "expected '='", "t.fx:6: "},
      {"    y = x + x\n", "expected a call", "t.fx:6: "},
      {"    y = torch.ops.aten.relu.default(z)\n", "unknown node reference 'z'", "t.fx:6: "},
      {"    y = torch.ops.aten.relu.default(y)\n", "unknown node reference 'y'", "t.fx:6: "},
      {"    y = torch.ops.aten.sum.dim_IntList(x, dim = w)\n", "unknown node reference 'w'", "t.fx:6: "},
      {"    y = w[0]\n", "unknown node reference 'w'", "t.fx:6: "},
      {"    x = torch.ops.aten.relu.default(x)\n", "duplicate node name 'x'", "t.fx:6: "},
      {"    y: \"Sym(s0 +)\" = torch.ops.aten.sym_size.int(x, 0)\n",
       "unsupported type annotation \"Sym(s0 +)\": bad size expression 's0 +': expected a number, "
       "a symbol or '(' at the end",
       "t.fx:6: "},
      {"    y: \"f32[s0 +]\" = torch.ops.aten.relu.default(x)\n", "unsupported type annotation \"f32[s0 +]\": bad size expression 's0 +'",
       "t.fx:6: "},
      {"    y: f32[2] = torch.ops.aten.relu.default(x)\n", "expected a string literal", "t.fx:6: "},
      {"    y = torch.ops.aten.relu.default('x)\n", "unterminated string", "t.fx:6: "},
      {"    y = torch.ops.aten.relu.default(x);  z = torch.ops.aten.neg.default(x)\n", "unexpected statement", "t.fx:6: "},
      {"    y = torch.ops.aten.relu.default(x) extra\n", "unexpected text", "t.fx:6: "},
      {"    y = x[1.5]\n", "expected an integer index", "t.fx:6: "},
      {"    y = torch.nn.functional.relu(x)\n", "unknown callee 'torch.nn.functional.relu'", "t.fx:6: "},
      {"    y = torch.ops.aten.f.default(x);  ;  x = None\n", "unexpected statement", "t.fx:6: "},
      {"    y = torch.ops.aten.f.default(x);  x = q = None\n", "unknown node 'q' in 'x = q = None'", "t.fx:6: "},
      {"    y = torch.ops.aten.f.default(" + std::string(70, '[') + std::string(70, ']') + ")\n", "nested too deeply", "t.fx:6: "},
      {"\n    # comment\n    y = torch.ops.aten.f.default(q)\n", "unknown node reference 'q'", "t.fx:8: "},
      {"    return [x]\n    y = torch.ops.aten.relu.default(x)\n", "unexpected text after 'return'", "t.fx:7: "},
      {"    y = torch.ops.aten.relu.default(x)\nreturn [y]\n", "indented body line", "t.fx:7: "},
  };
  for (const Case& c : cases) {
    const std::string text = module(R"(x: "f32[2]")", c.body);
    INFO(text);
    const std::string message = error_of(text);
    // The offending line is the last non-blank line of the body.
    std::string_view body = c.body;
    body.remove_suffix(1);
    body = body.substr(body.rfind('\n') + 1);
    const std::string offending(body.substr(body.find_first_not_of(' ')));
    CHECK_THAT(message, StartsWith(c.where) && Contains(c.problem) && EndsWith(" in: " + offending));
  }
  CHECK(error_of(module(R"(x: "f32[2]")", "    y = torch.ops.aten.relu.default(x)\n")) == "t.fx:6: missing 'return' at the end of forward");
}

TEST_CASE("fx_graph: malformed signatures and wrappers", "[fx]") {
  CHECK_THAT(error_of("b8: type\nclass GraphModule(torch.nn.Module):\n    pass\n"), Contains("t.fx:0: no 'def forward"));
  CHECK_THAT(error_of("def forward(self, x: \"f32[2]\"\n    return [x]\n"), Contains("t.fx:1: unterminated 'def forward(' signature"));
  CHECK_THAT(error_of("def forward(self, s0: \"Sym(s0 s1)\"):\n    return [s0]\n"),
             Contains("t.fx:1: unsupported type annotation \"Sym(s0 s1)\" of parameter 's0': bad size "
                      "expression 's0 s1': unexpected 's' at column 4"));
  CHECK_THAT(error_of("def forward(self, x: \"f32[2]\", x: \"f32[2]\"):\n    return [x]\n"), Contains("t.fx:1: duplicate node name 'x'"));
  CHECK_THAT(error_of("def forward(self, x):\n    return [x]\n    \n    def g(self):\n"),
             Contains("t.fx:4: unexpected text after 'return'") && Contains("def g(self):"));
  CHECK_THAT(error_of(""), Contains("no 'def forward"));
}

TEST_CASE("fx_graph: parse_error carries source, line and text", "[fx]") {
  try {
    parse_fx_graph(module(R"(x: "f32[2]")", "\n    y = torch.ops.aten.relu.default(q)\n"), "m.py");
    FAIL("no exception");
  } catch (const std::runtime_error& e) {
    const auto* pe = dynamic_cast<const parse_error*>(&e);
    REQUIRE(pe != nullptr);
    CHECK(pe->source() == "m.py");
    CHECK(pe->line() == 7);
    CHECK(pe->text() == "y = torch.ops.aten.relu.default(q)");
    CHECK_THAT(std::string(e.what()), StartsWith("m.py:7: unknown node reference 'q'") && EndsWith("in: y = torch.ops.aten.relu.default(q)"));
  }
}

TEST_CASE("fx_graph: errors in a very long signature name the parameter", "[fx]") {
  std::string params;
  for (int i = 1; i <= 60; ++i) params += "primals_" + std::to_string(i) + ": \"f32[768]\", ";
  const std::string message = error_of(module(params + "bad: \"f32[768\"", "    return []\n"));
  CHECK_THAT(message, StartsWith("t.fx:5: unsupported type annotation \"f32[768\" of parameter "
                                 "'bad'") &&
                          Contains(" in: def forward(self, primals_1: \"f32[768]\"") && EndsWith("..."));
  CHECK(message.size() < 400);
}

TEST_CASE("fx_graph: read_fx_graph_file reports unreadable files", "[fx]") {
  const std::string missing = "/nonexistent/dir/graph.fx.txt";
  CHECK_THROWS_AS(ctshard::fx::read_fx_graph_file(missing), parse_error);
  CHECK_THROWS_WITH(ctshard::fx::read_fx_graph_file(missing), StartsWith(missing + ":0: cannot open file"));
  const std::string dir = std::filesystem::temp_directory_path().string();
  CHECK_THROWS_WITH(ctshard::fx::read_fx_graph_file(dir), Contains("is a directory"));
}

// ---- the real graphs in ../shared/graphs --------------------------------------------------------

namespace {

struct Expected {
  const char* file;
  std::size_t placeholders, op_calls, getitems, get_attrs, nodes, distinct_aten, distinct_all;
  std::size_t outputs;
};

// From /work/shared/graphs/README.md (the `outputs` column counts the returned values).
constexpr Expected kExpected[] = {
    {"gpt_megatron_l1_fw.fx.txt", 22, 122, 21, 2, 168, 35, 38, 47},
    {"qwen2_vllm_l1_fw.fx.txt", 12, 35, 14, 0, 62, 10, 16, 2},
    {"vit_b16_fw.fx.txt", 153, 571, 98, 0, 823, 17, 17, 1},
    {"bart_layer_fw.fx.txt", 18, 89, 8, 0, 116, 17, 17, 27},
    {"bart_layer_bw.fx.txt", 27, 131, 0, 0, 159, 11, 12, 18},
    {"gpt_megatron_l1_tp2_r0.fx.txt", 22, 147, 21, 4, 195, 37, 42, 45},
    {"gpt_megatron_l1_tp2_r1.fx.txt", 22, 147, 21, 4, 195, 37, 42, 45},
    {"qwen2_vllm_l1_tp2_r0.fx.txt", 12, 53, 14, 0, 80, 20, 27, 2},
};

bool is_getitem(const Node& n) { return n.kind == "call_function" && n.target == "getitem"; }

}  // namespace

TEST_CASE("fx_graph: parses the real graphs", "[fx][real]") {
  const std::filesystem::path dir = std::filesystem::path(CTSHARD_SHARED_DIR) / "graphs";
  if (!std::filesystem::is_directory(dir)) {
    WARN("../shared not found: skipping real-graph tests");
    return;
  }
  for (const Expected& e : kExpected) {
    const std::string path = (dir / e.file).string();
    INFO(path);
    const Graph g = ctshard::fx::read_fx_graph_file(path);
    CHECK(g.source_name == path);
    std::size_t placeholders = 0, op_calls = 0, getitems = 0, get_attrs = 0, output_nodes = 0;
    std::set<std::string> aten, all;
    for (const Node& n : g.nodes) {
      if (n.kind == "placeholder") ++placeholders;
      if (n.kind == "get_attr") ++get_attrs;
      if (n.kind == "output") ++output_nodes;
      if (is_getitem(n)) ++getitems;
      if (n.kind != "call_function" || is_getitem(n)) continue;
      ++op_calls;
      all.insert(n.target);
      if (n.target.starts_with("aten.")) aten.insert(n.target);
      if (n.target == "higher_order.auto_functionalized") {
        REQUIRE_FALSE(n.args.empty());
        CHECK(n.args[0].kind == ArgKind::opaque);
        all.insert(n.args[0].text);
      }
    }
    CHECK(placeholders == e.placeholders);
    CHECK(op_calls == e.op_calls);
    CHECK(getitems == e.getitems);
    CHECK(get_attrs == e.get_attrs);
    CHECK(output_nodes == 1);
    CHECK(g.nodes.size() == e.nodes);
    CHECK(aten.size() == e.distinct_aten);
    CHECK(all.size() == e.distinct_all);
    CHECK(g.outputs.size() == e.outputs);
    CHECK(g.nodes.back().kind == "output");
    for (const std::string& out : g.outputs)
      if (!out.empty()) CHECK(g.find(out) != nullptr);
  }
}

TEST_CASE("fx_graph: real graph spot checks", "[fx][real]") {
  const std::filesystem::path dir = std::filesystem::path(CTSHARD_SHARED_DIR) / "graphs";
  if (!std::filesystem::is_directory(dir)) {
    WARN("../shared not found: skipping real-graph tests");
    return;
  }
  const auto read = [&](const char* file) { return ctshard::fx::read_fx_graph_file((dir / file).string()); };
  SECTION("vit_b16_fw") {
    const Graph g = read("vit_b16_fw.fx.txt");
    CHECK(node(g, "arg2_1").outputs == std::vector{tt("f32", {768, 3, 16, 16})});
    const Node& vm = node(g, "var_mean");
    CHECK(vm.target == "aten.var_mean.correction");
    CHECK(vm.outputs == std::vector{tt("f32", {8, 197, 1}), tt("f32", {8, 197, 1})});
    CHECK(node(g, "unbind").outputs.size() == 3);
    const Node& sl = node(g, "slice_1");
    CHECK(sl.args[3] == Arg::make_int(9223372036854775807));
    CHECK(g.outputs == std::vector<std::string>{"addmm_48"});
  }
  SECTION("bart_layer_bw returns a None gradient") {
    const Graph g = read("bart_layer_bw.fx.txt");
    CHECK(g.outputs.back().empty());
    CHECK(node(g, "getitem_1").kind == "placeholder");  // a saved activation
    CHECK(node(g, "getitem_1").outputs == std::vector{tt("b8", {1, 1024, 1024})});
  }
  SECTION("gpt_megatron_l1_tp2 ranks differ in device index") {
    const Graph r0 = read("gpt_megatron_l1_tp2_r0.fx.txt");
    const Graph r1 = read("gpt_megatron_l1_tp2_r1.fx.txt");
    CHECK(*node(r0, "_to_copy").kwarg("device") == Arg::make_opaque("device(type='cuda', index=0)"));
    CHECK(*node(r1, "_to_copy").kwarg("device") == Arg::make_opaque("device(type='cuda', index=1)"));
    CHECK(node(r0, "primals_4").outputs == std::vector{tt("f32", {1152, 768})});
    CHECK(node(r0, "_tensor_constant3").kind == "get_attr");
  }
  SECTION("qwen2_vllm_l1_tp2_r0 all_reduce and auto_functionalized") {
    const Graph g = read("qwen2_vllm_l1_tp2_r0.fx.txt");
    const Node& ar = node(g, "all_reduce_2");
    CHECK(ar.target == "vllm.all_reduce.default");
    CHECK(ar.args == std::vector{Arg::make_node("mm_2"), Arg::make_string("tp:0")});
    const Node& af = node(g, "auto_functionalized_2");
    CHECK(af.args[0] == Arg::make_opaque("vllm.unified_attention_with_output.default"));
    CHECK(*af.kwarg("layer_name") == Arg::make_string("model.layers.0.self_attn.attn"));
  }
}
