// Symbolic shapes and the AOT joint-graph (pytree) format: the size-expression grammar
// (fx::SizeExpr), symbolic tensor annotations and Sym nodes in the FX reader, binding and prime
// hints in the planner (`--sym`), the R03 / R04 regression cases, and `plan --coverage` with
// unreadable files.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ctshard/fx/reader.hpp"
#include "ctshard/graph/greedy.hpp"
#include "ctshard/report/commands.hpp"
#include "ctshard/report/plan_report.hpp"
#include "ctshard/runtime.hpp"
#include "run_tool.hpp"

using namespace ctshard;
using Catch::Matchers::Contains;
using ctshard::fx::SizeExpr;

namespace {

/// Each dim's size expression text ("" for a static dim).
std::vector<std::string> dim_texts(const fx::TensorType& t) {
  std::vector<std::string> out;
  for (const auto& e : t.dim_exprs) out.push_back(e ? e->text() : std::string());
  return out;
}

const std::string kShared = std::string(CTSHARD_SHARED_DIR) + "/cases/graphs/";
const std::string kData = (std::filesystem::path(__FILE__).parent_path() / "data").string() + "/";

std::string parse_problem(std::string_view text) {
  try {
    SizeExpr::parse(text);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

std::int64_t eval(std::string_view text, std::map<std::string, std::int64_t> values) {
  return SizeExpr::parse(text).evaluate([&](const std::string& name) { return values.at(name); });
}

std::string fx_error(std::string_view text) {
  try {
    fx::parse_fx_graph(text, "t.fx");
  } catch (const fx::parse_error& e) {
    return e.what();
  }
  return "";
}

/// Whether the reference graph `name` exists (warns and skips otherwise).
bool have_shared(const std::string& name) {
  if (std::filesystem::exists(kShared + name)) return true;
  WARN("../shared not found (" << kShared + name << "): skipping");
  return false;
}

graph::PlanOptions options(std::vector<std::int64_t> mesh, const std::map<std::string, std::string>& place = {},
                           std::map<std::string, std::int64_t> symbols = {}) {
  graph::PlanOptions o;
  o.mesh = std::move(mesh);
  for (const auto& [name, spec] : place) o.placements.emplace(name, parse_spec(spec));
  o.symbols = std::move(symbols);
  return o;
}

nlohmann::json plan_of(const fx::Graph& g, const graph::PlanOptions& o) {
  return report::plan_json(graph::plan_graph(g, o, report::registry_for("sound")), o);
}

/// The plans agree node by node (name, op, input and output specs, cost, fallback) and in totals.
void check_same_plan(const nlohmann::json& a, const nlohmann::json& b) {
  REQUIRE(a["nodes"].size() == b["nodes"].size());
  for (std::size_t i = 0; i < a["nodes"].size(); ++i) {
    INFO("node " << a["nodes"][i]["name"]);
    CHECK(a["nodes"][i] == b["nodes"][i]);
  }
  CHECK(a["total_cost_us"] == b["total_cost_us"]);
  CHECK(a["nodes_with_rule"] == b["nodes_with_rule"]);
  CHECK(a["nodes_fallback"] == b["nodes_fallback"]);
}

const nlohmann::json& node_named(const nlohmann::json& plan, const std::string& name) {
  for (const auto& n : plan["nodes"])
    if (n["name"] == name) return n;
  FAIL("no planned node " << name);
  return plan;
}

// The R03 graph written with static sizes (s77 -> `batch`), without the Sym input.
std::string static_r03(std::int64_t batch) {
  const std::string b = std::to_string(batch);
  // one line of the FX program per source line
  // clang-format off
  return "class GraphModule(torch.nn.Module):\n"
         "    def forward(self, tangents_1: \"f32[" + b + ", 768]\"):\n"
         "        mul: \"f32[" + b + ", 768]\" = torch.ops.aten.mul.Tensor(tangents_1, 2.0)\n"
         "        view: \"f32[" + b + ", 16, 48]\" = torch.ops.aten.view.default(mul, [" + b + ", 16, 48])\n"
         "        return (view,)\n";
  // clang-format on
}

// A batch dim flattened with the next one by a view (the sizes through a Sym node).
const char* kFlatten = R"fx(class GraphModule(torch.nn.Module):
    def forward(self, primals_1: "Sym(s77)", tangents_1: "f32[s77, 16, 48]"):
        mul: "Sym(16*s77)" = primals_1 * 16
        view: "f32[16*s77, 48]" = torch.ops.aten.view.default(tangents_1, [mul, 48]);  mul = None
        return (view,)
)fx";

std::string static_flatten(std::int64_t batch) {
  const std::string b = std::to_string(batch), b16 = std::to_string(16 * batch);
  // one line of the FX program per source line
  // clang-format off
  return "def forward(self, tangents_1: \"f32[" + b + ", 16, 48]\"):\n"
         "    view: \"f32[" + b16 + ", 48]\" = torch.ops.aten.view.default(tangents_1, [" + b16 + ", 48])\n"
         "    return (view,)\n";
  // clang-format on
}

}  // namespace

// ---- the size-expression grammar --------------------------------------------------------------

TEST_CASE("SizeExpr: well-formed expressions, symbols, values", "[fx][sym]") {
  const SizeExpr e = SizeExpr::parse(" 1024*s77 ");
  CHECK(e.text() == "1024*s77");
  CHECK(e.symbols() == std::vector<std::string>{"s77"});
  CHECK(e.is_monomial());
  CHECK(e.is_integer());
  CHECK(eval("1024*s77", {{"s77", 3}}) == 3072);
  CHECK(eval("s0 + 1", {{"s0", 7}}) == 8);
  CHECK(eval("(s1//2)", {{"s1", 7}}) == 3);
  CHECK(eval("s0 - 2*s1 + 10", {{"s0", 5}, {"s1", 4}}) == 7);
  CHECK(eval("s75**2", {{"s75", 9}}) == 81);
  CHECK(eval("2**3**2", {}) == 512);  // right-associative, as Python
  CHECK(eval("-s0**2", {{"s0", 3}}) == -9);
  CHECK(eval("-(((-s75)//4))", {{"s75", 9}}) == 3);  // ceil division as sympy prints it
  CHECK(eval("(Mod(s75, 3)) + 1", {{"s75", 8}}) == 3);
  CHECK(eval("Max(1, s0, 3)", {{"s0", 2}}) == 3);
  CHECK(eval("Min(s0, 4)", {{"s0", 2}}) == 2);
  CHECK(eval("s96*((s75//((s75//2))))", {{"s75", 9}, {"s96", 5}}) == 10);
  // Python's floor division and modulo
  CHECK(eval("(-7)//2", {}) == -4);
  CHECK(eval("-7 % 3", {}) == 2);
  CHECK(eval("7 % -3", {}) == -2);
  CHECK(eval("Mod(-7, 3)", {}) == 2);
  // symbols in order of first appearance, each once; function names are not symbols
  CHECK(SizeExpr::parse("s1 + Max(s0, s1)*s2").symbols() == std::vector<std::string>{"s1", "s0", "s2"});
  // monomials: literals and symbols under * and ** with a literal exponent
  for (const char* m : {"s0", "7", "2*s0*s1", "s0**2", "s0*16*s1"}) CHECK(SizeExpr::parse(m).is_monomial());
  for (const char* m : {"s0 + 1", "(s0//2)", "Mod(s0, 4)", "Max(1, s0)", "-s0", "s0**s1", "s0 - 0"}) {
    INFO(m);
    CHECK_FALSE(SizeExpr::parse(m).is_monomial());
  }
}

TEST_CASE("SizeExpr: SymFloat and SymBool printouts parse but have no integer value", "[fx][sym]") {
  for (const char* t : {"ToFloat(s75)", "s0/2", "2.5*s0", "s0 >= 2", "Eq(s0, 2) & (s1 < 4)", "~(s0 == 1)", "True", "1e-05"}) {
    INFO(t);
    const SizeExpr e = SizeExpr::parse(t);
    CHECK_FALSE(e.is_integer());
    CHECK_THROWS_WITH(e.evaluate([](const std::string&) { return 2; }), "size expression '" + std::string(t) + "' is not an integer expression");
  }
  CHECK(SizeExpr::parse("True").symbols().empty());
  CHECK(SizeExpr::parse("ToFloat(s75)").symbols() == std::vector<std::string>{"s75"});
}

TEST_CASE("SizeExpr: evaluation errors name the expression", "[fx][sym]") {
  const auto value_error = [](const char* text, std::int64_t s0) {
    try {
      eval(text, {{"s0", s0}});
    } catch (const std::domain_error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  CHECK(value_error("s0 // 0", 3) == "size expression 's0 // 0' divides by zero");
  CHECK(value_error("Mod(s0, s0 - 3)", 3) == "size expression 'Mod(s0, s0 - 3)' divides by zero");
  CHECK(value_error("s0*s0*s0*s0", std::int64_t{1} << 20) == "size expression 's0*s0*s0*s0' overflows 64 bits");
  CHECK(value_error("s0**64", 2) == "size expression 's0**64' overflows 64 bits");
  CHECK(value_error("2**-s0", 1) == "size expression '2**-s0' raises to a negative power");
}

TEST_CASE("SizeExpr: malformed expressions, exact messages", "[fx][sym]") {
  const std::pair<std::string, std::string> cases[] = {
      {"", "bad size expression '': empty expression at the end"},
      {"   ", "bad size expression '': empty expression at the end"},
      {"s0 +", "bad size expression 's0 +': expected a number, a symbol or '(' at the end"},
      {"(s0", "bad size expression '(s0': expected ')' at the end"},
      {"s0)", "bad size expression 's0)': unexpected ')' at column 3"},
      {"s0 s1", "bad size expression 's0 s1': unexpected 's' at column 4"},
      {"2s0", "bad size expression '2s0': malformed number at column 2"},
      {"s0 +* 2", "bad size expression 's0 +* 2': expected a number, a symbol or '(' at column 5"},
      {"99999999999999999999", "bad size expression '99999999999999999999': number out of range at column 1"},
      {"Mod(s0)", "bad size expression 'Mod(s0)': Mod takes 2 arguments, got 1 at column 5"},
      {"Max(s0,", "bad size expression 'Max(s0,': expected a number, a symbol or '(' at the end"},
      {"Max(s0 s1)", "bad size expression 'Max(s0 s1)': expected ',' or ')' at column 8"},
      {"s0 @ 1", "bad size expression 's0 @ 1': unexpected '@' at column 4"},
      {"s0 = 1", "bad size expression 's0 = 1': unexpected '=' at column 4"},
      {"s0 **", "bad size expression 's0 **': expected a number, a symbol or '(' at the end"},
      {std::string(40, '(') + "s0" + std::string(40, ')'),
       "bad size expression '" + std::string(40, '(') + "s0" + std::string(40, ')') + "': nested too deeply at column 33"},
      {std::string(40, '-') + "s0", "bad size expression '" + std::string(40, '-') + "s0': nested too deeply at column 33"},
  };
  for (const auto& [text, message] : cases) {
    INFO(text);
    CHECK(parse_problem(text) == message);
  }
  CHECK(parse_problem(std::string(31, '(') + "s0" + std::string(31, ')')).empty());  // within the bound
}

// ---- symbolic annotations in the reader -------------------------------------------------------

TEST_CASE("fx_graph: symbolic tensor types", "[fx][sym]") {
  using fx::parse_tensor_type;
  const auto t = parse_tensor_type("f32[s77, 768]");
  REQUIRE(t);
  CHECK(t->shape == std::vector<std::int64_t>{-1, 768});
  CHECK(dim_texts(*t) == std::vector<std::string>{"s77", ""});
  CHECK(t->symbolic());
  CHECK(t->to_string() == "f32[s77, 768]");
  const auto u = parse_tensor_type("f16[1024*s77, 768]");
  REQUIRE(u);
  CHECK(dim_texts(*u) == std::vector<std::string>{"1024*s77", ""});
  CHECK(u->itemsize() == 2);
  const auto v = parse_tensor_type("f32[s0 + 1, (s1//2)]");
  REQUIRE(v);
  CHECK(dim_texts(*v) == std::vector<std::string>{"s0 + 1", "(s1//2)"});
  CHECK(v->to_string() == "f32[s0 + 1, (s1//2)]");
  const auto w = parse_tensor_type("f32[Max(1, s0), (Mod(s75, 3)) + 1][s1, 1]cuda:0");  // commas inside calls; symbolic strides
  REQUIRE(w);
  CHECK(dim_texts(*w) == std::vector<std::string>{"Max(1, s0)", "(Mod(s75, 3)) + 1"});
  const auto s = parse_tensor_type("f32[8, 4]");
  REQUIRE(s);
  CHECK_FALSE(s->symbolic());
  CHECK(s->dim_exprs.empty());

  const std::pair<const char*, const char*> bad[] = {
      {"f32[s0 +, 4]", "bad size expression 's0 +': expected a number, a symbol or '(' at the end"},
      {"f32[-1]", "size '-1' is neither a non-negative integer nor an expression of symbols"},
      {"f32[2*3]", "size '2*3' is neither a non-negative integer nor an expression of symbols"},
      {"xx[4]", "unknown dtype 'xx'"},
      {"[4]", "expected a dtype such as f32"},
      {"f32[4", "'[' is never closed"},
      {"f32[(s0]", "'[' is never closed"},
      {"f32[s0)]", "unbalanced ')' in a size"},
      {"f32[4, ]", "empty size"},
      {"f32[99999999999999999999]", "size '99999999999999999999' out of range"},
      {"f32[s0][s0 +]", "strides: bad size expression 's0 +': expected a number, a symbol or '(' at the end"},
      {"f32[4]cuda:", "expected a device index after ':'"},
      {"f32[4]junk!", "unexpected text after the sizes"},
  };
  for (const auto& [text, problem] : bad) {
    INFO(text);
    std::string why;
    CHECK_FALSE(parse_tensor_type(text, &why));
    CHECK(why == problem);
  }
}

TEST_CASE("fx_graph: R03 graph: Sym input, symbolic sizes, a symbol in a list argument", "[fx][sym][real]") {
  if (!have_shared("symbolic_batch.fx.txt")) return;
  const fx::Graph g = fx::read_fx_graph_file(kShared + "symbolic_batch.fx.txt");
  REQUIRE(g.nodes.size() == 5);
  const fx::Node& p = g.nodes[0];
  CHECK(p.name == "primals_1");
  CHECK(p.kind == "placeholder");
  CHECK(p.sym_expr == "s77");
  CHECK(p.outputs.empty());
  const fx::Node& t = g.nodes[1];
  CHECK(t.sym_expr.empty());
  REQUIRE(t.outputs.size() == 1);
  CHECK(t.outputs[0].to_string() == "f32[s77, 768]");
  const fx::Node& view = *g.find("view");
  REQUIRE(view.args.size() == 2);
  CHECK(view.args[1].to_string() == "[primals_1, 16, 48]");
  CHECK(view.args[1].items[0].is_node());
  CHECK(g.symbols() == std::vector<std::string>{"s77"});
}

TEST_CASE("fx_graph: Sym body lines keep any right-hand side", "[fx][sym]") {
  // make_fx(f, tracing_mode="symbolic") printout (torch 2.13)
  const fx::Graph g = fx::parse_fx_graph(R"fx(class f(torch.nn.Module):
    def forward(self, x_1: "f32[s75, s96]"):
        # No stacktrace found for following nodes
        sym_size_int: "Sym(s75)" = torch.ops.aten.sym_size.int(x_1, 0)
        sym_float: "Sym(ToFloat(s75))" = torch.sym_float(sym_size_int)
        mul: "f32[s75, s96]" = torch.ops.aten.mul.Tensor(x_1, sym_float);  sym_float = None
        floordiv: "Sym((s75//2))" = sym_size_int // 2
        view: "f32[(s75//2), s96*((s75//((s75//2))))]" = torch.ops.aten.view.default(x_1, [floordiv, -1]);  x_1 = floordiv = None
        sym_max: "Sym(Max(3, s75))" = torch.sym_max(sym_size_int, 3);  sym_size_int = None
        ge: "Sym(s96 >= 2)" = sym_max >= 2
        return (mul, view, sym_max)
)fx");
  const fx::Node& size = *g.find("sym_size_int");
  CHECK(size.kind == "call_function");
  CHECK(size.target == "aten.sym_size.int");  // a torch.ops call is read as usual
  CHECK(size.args.size() == 2);
  CHECK(size.sym_expr == "s75");
  CHECK(size.outputs.empty());
  const fx::Node& f = *g.find("sym_float");
  CHECK(f.target == "torch.sym_float(sym_size_int)");
  CHECK(f.args.empty());
  CHECK(f.sym_expr == "ToFloat(s75)");
  CHECK(g.find("floordiv")->target == "sym_size_int // 2");
  CHECK(g.find("ge")->sym_expr == "s96 >= 2");
  CHECK(g.find("view")->args[1].to_string() == "[floordiv, -1]");
  CHECK(g.outputs == std::vector<std::string>{"mul", "view", "sym_max"});
  CHECK(g.symbols() == std::vector<std::string>{"s75", "s96"});
}

TEST_CASE("fx_graph: malformed symbolic annotations name the problem", "[fx][sym]") {
  CHECK(fx_error("def forward(self, s0: \"Sym(s0 +)\"):\n    return [s0]\n") ==
        "t.fx:1: unsupported type annotation \"Sym(s0 +)\" of parameter 's0': bad size expression 's0 +': expected a number, a "
        "symbol or '(' at the end in: def forward(self, s0: \"Sym(s0 +)\"):");
  CHECK(fx_error("def forward(self, x: \"f32[s0, 4]\"):\n    y: \"Sym(s0 // )\" = x * 2\n    return [y]\n") ==
        "t.fx:2: unsupported type annotation \"Sym(s0 // )\": bad size expression 's0 //': expected a number, a symbol or '(' at the "
        "end in: y: \"Sym(s0 // )\" = x * 2");
  CHECK(fx_error("def forward(self, x: \"f32[s0 + , 4]\"):\n    return [x]\n") ==
        "t.fx:1: unsupported type annotation \"f32[s0 + , 4]\" of parameter 'x': bad size expression 's0 +': expected a number, a "
        "symbol or '(' at the end in: def forward(self, x: \"f32[s0 + , 4]\"):");
  CHECK(fx_error("def forward(self, x: \"f32[4]\"):\n    y: \"Sym(s0)\" =\n    return [y]\n") ==
        "t.fx:2: expected a value at end of statement in: y: \"Sym(s0)\" =");
  CHECK_THAT(fx_error("def forward(self, x: \"f32[4]\"):\n    y: \"Sym(s0)\" = torch.ops.aten.sym_size.int(q, 0)\n    return [y]\n"),
             Contains("unknown node reference 'q'"));
}

// ---- the pytree (AOT joint-graph) format ------------------------------------------------------

TEST_CASE("fx_graph: R04 joint-graph format", "[fx][sym][real]") {
  if (!have_shared("joint_graph_format.fx.txt")) return;
  const fx::Graph g = fx::read_fx_graph_file(kShared + "joint_graph_format.fx.txt");
  REQUIRE(g.nodes.size() == 4);
  CHECK(g.nodes[0].name == "primals_1");
  CHECK(g.nodes[0].kind == "placeholder");
  CHECK(g.nodes[0].outputs[0].to_string() == "f32[8, 4]");
  CHECK(g.nodes[0].line == 3);  // its declaration
  CHECK(g.nodes[1].name == "tangents_1");
  CHECK(g.find("primals") == nullptr);
  CHECK(g.find("tangents") == nullptr);
  CHECK(g.nodes[2].target == "aten.mul.Tensor");
  CHECK(g.nodes[3].kind == "output");
  CHECK(g.nodes[3].args[0].to_string() == "[mul]");
  CHECK(g.outputs == std::vector<std::string>{"mul"});
}

TEST_CASE("fx_graph: pytree format variants", "[fx][sym]") {
  // expanded_def=True: the signature over several lines, one declaration per line, Sym inputs,
  // symbolic sizes, an undeclared (untyped) input, a keyword dict in tree_flatten_spec
  const fx::Graph g = fx::parse_fx_graph(R"fx(class joint_helper(torch.nn.Module):
    def forward(
        self,
        primals,
        tangents,
    ):
        primals_1: "Sym(s75)"  # a size
        primals_2: "f32[s75, s96]"
        tangents_1: "f32[s75, s96]"
        primals_1, primals_2, extra, tangents_1, = fx_pytree.tree_flatten_spec(([primals, tangents], {'k':extra}), self._in_spec)
        mul: "f32[s75, s96]" = torch.ops.aten.mul.Tensor(primals_2, tangents_1);  primals_2 = tangents_1 = None
        return pytree.tree_unflatten([mul, None], self._out_spec)
)fx");
  REQUIRE(g.nodes.size() == 6);
  CHECK(g.nodes[0].sym_expr == "s75");
  CHECK(g.nodes[1].outputs[0].to_string() == "f32[s75, s96]");
  CHECK(g.nodes[2].name == "extra");
  CHECK(g.nodes[2].outputs.empty());
  CHECK(g.nodes[2].line == 10);
  CHECK(g.nodes[3].name == "tangents_1");
  CHECK(g.outputs == std::vector<std::string>{"mul", ""});

  const std::string head = "def forward(self, primals, tangents):\n";
  const std::string unpack = "    primals_1, = fx_pytree.tree_flatten_spec([primals, tangents], self._in_spec)\n";
  const std::string relu = "    y = torch.ops.aten.relu.default(primals_1)\n";
  const std::string ret = "    return [y]\n";
  CHECK(fx_error(head + "    primals_1: \"f32[8]\"; \n" + relu + ret) ==
        "t.fx:3: 'primals_1' is declared, but no 'a, b, = fx_pytree.tree_flatten_spec(...)' line unpacks the inputs in: " +
            relu.substr(4, relu.size() - 5));
  CHECK(fx_error(head + "    primals_1: \"f32[8]\"; tangents_9: \"f32[8]\"; \n" + unpack + relu + ret) ==
        "t.fx:3: 'tangents_9' is declared but not unpacked by fx_pytree.tree_flatten_spec in: " + unpack.substr(4, unpack.size() - 5));
  CHECK(fx_error(head + "    primals_1: \"f32[8]\"; \n" + unpack + "    tangents_1: \"f32[8]\"\n" + relu + ret) ==
        "t.fx:4: declaration of 'tangents_1' after the fx_pytree.tree_flatten_spec line in: tangents_1: \"f32[8]\"");
  CHECK(fx_error(head + unpack + unpack + relu + ret) ==
        "t.fx:3: a second fx_pytree.tree_flatten_spec line in: " + unpack.substr(4, unpack.size() - 5));
  CHECK(fx_error("def forward(self, x):\n    y = torch.ops.aten.relu.default(x)\n" + unpack + ret) ==
        "t.fx:3: the fx_pytree.tree_flatten_spec line must come before the first node in: " + unpack.substr(4, unpack.size() - 5));
  CHECK(fx_error(head + "    a, b, = foo(primals)\n" + ret) ==
        "t.fx:2: expected 'fx_pytree.tree_flatten_spec(...)' (the only tuple assignment of a graph) near '(primals)' in: a, b, = foo(primals)");
  CHECK(fx_error(head + "    primals_1: \"f32[8\"; \n" + unpack + relu + ret) ==
        "t.fx:2: unsupported type annotation \"f32[8\" of 'primals_1': '[' is never closed in: primals_1: \"f32[8\";");
  CHECK(fx_error(head + "    primals_1: \"f32[8]\"; x = None\n" + unpack + relu + ret) ==
        "t.fx:2: unexpected statement 'x = None' (a declaration line holds only 'name: \"type\"' items) in: primals_1: \"f32[8]\"; x = None");
  CHECK(fx_error(head + "    primals_1: \"f32[8]\"; primals_1: \"f32[4]\"\n" + unpack + relu + ret) ==
        "t.fx:2: duplicate declaration of 'primals_1' in: primals_1: \"f32[8]\"; primals_1: \"f32[4]\"");
  CHECK_THAT(fx_error(head + "    a, a, = fx_pytree.tree_flatten_spec([primals], self._in_spec)\n" + ret),
             Contains("t.fx:2: duplicate node name 'a'"));
  CHECK_THAT(fx_error(head + unpack + "    return pytree.tree_unflatten([primals_1], _out_spec)\n"), Contains("expected 'self._out_spec'"));
}

// ---- the planner: binding, hints, equality with static graphs ---------------------------------

TEST_CASE("plan: R03 plans with no fallback, bound or not, and bound equals the static graph", "[plan][sym][real]") {
  if (!have_shared("symbolic_batch.fx.txt")) return;
  const fx::Graph g = fx::read_fx_graph_file(kShared + "symbolic_batch.fx.txt");
  // the case's run: `ctshard plan graphs/symbolic_batch.fx.txt --mesh 2`
  const auto unbound = plan_of(g, options({2}));
  CHECK(unbound["nodes_fallback"] == 0);
  CHECK(unbound["nodes_with_rule"] == 2);
  CHECK(unbound["symbols"] == nlohmann::json::parse(R"fx([{"name": "s77", "value": 8191, "bound": false}])fx"));
  CHECK(unbound["total_cost_us"] == 0.0);
  // batch-sharded: kept through the mul and the view (which splits only the 768 dim)
  const auto sharded = plan_of(g, options({2}, {{"tangents_1", "S(0)"}}));
  CHECK(sharded["nodes_fallback"] == 0);
  CHECK(node_named(sharded, "mul")["outputs"] == nlohmann::json::array({"S(0)"}));
  CHECK(node_named(sharded, "view")["inputs"] == nlohmann::json::array({"S(0)"}));
  CHECK(node_named(sharded, "view")["outputs"] == nlohmann::json::array({"S(0)"}));
  CHECK(node_named(sharded, "view")["cost_us"] == 0.0);
  // sharding the 768 dim on 8 devices: the view's split keeps it on the 16 heads
  const auto feature = plan_of(g, options({8}, {{"tangents_1", "S(1)"}}));
  CHECK(node_named(feature, "view")["outputs"] == nlohmann::json::array({"S(1)"}));

  const std::vector<std::pair<std::vector<std::int64_t>, std::map<std::string, std::string>>> setups = {{{2}, {}},
                                                                                                        {{2}, {{"tangents_1", "S(0)"}}},
                                                                                                        {{2, 4}, {{"tangents_1", "S(0)S(1)"}}},
                                                                                                        {{8}, {{"tangents_1", "S(1)"}}},
                                                                                                        {{2, 2, 2}, {{"tangents_1", "S(1)RS(0)"}}}};
  for (const std::int64_t batch : {1024, 6, 7}) {
    const fx::Graph fixed = fx::parse_fx_graph(static_r03(batch), "static");
    for (const auto& [mesh, place] : setups) {
      INFO("s77=" << batch << " on a " << mesh.size() << "-dim mesh");
      const auto bound = plan_of(g, options(mesh, place, {{"s77", batch}}));
      CHECK(bound["symbols"][0]["bound"] == true);
      check_same_plan(bound, plan_of(fixed, options(mesh, place)));
    }
  }
  // unbound, the plan is that of the graph written with the hint
  check_same_plan(plan_of(g, options({2, 4}, {{"tangents_1", "S(0)S(1)"}})),
                  plan_of(fx::parse_fx_graph(static_r03(8191), "static"), options({2, 4}, {{"tangents_1", "S(0)S(1)"}})));
}

TEST_CASE("plan: a symbolic copy of the default block equals the default block when bound", "[plan][sym]") {
  const fx::Graph symbolic = fx::read_fx_graph_file(kData + "default_block_symbolic.fx.txt");
  CHECK(symbolic.symbols() == std::vector<std::string>{"s0"});
  const fx::Graph original = report::default_graph();
  for (const auto& mesh : {std::vector<std::int64_t>{2, 4}, std::vector<std::int64_t>{8}, std::vector<std::int64_t>{2, 2, 2}}) {
    INFO("mesh of " << mesh.size() << " dims");
    graph::PlanOptions o = options(mesh);
    o.placements = report::default_placements(mesh.size());
    const auto want = plan_of(original, o);
    o.symbols = {{"s0", 8}};
    const auto got = plan_of(symbolic, o);
    CHECK(got["nodes_fallback"] == 0);
    check_same_plan(got, want);
  }
  // unbound: still planned everywhere, but the batch (8191 sequences) never stays sharded
  // through the view that splits the 128*s0 rows into (s0, 128)
  graph::PlanOptions o = options({2, 4});
  o.placements = report::default_placements(2);
  const auto unbound = plan_of(symbolic, o);
  CHECK(unbound["nodes_fallback"] == 0);
  CHECK(node_named(unbound, "addmm")["outputs"] == nlohmann::json::array({"S(0)S(1)"}));  // 128*8191 rows divide by 2
  CHECK(node_named(unbound, "view")["outputs"][0].get<std::string>().substr(0, 4) != "S(0)");
}

TEST_CASE("plan: an unbound batch dim is never kept sharded through a flattening view", "[plan][sym]") {
  const fx::Graph g = fx::parse_fx_graph(kFlatten, "flatten");
  const auto unbound = plan_of(g, options({2}, {{"tangents_1", "S(0)"}}));
  const auto& view = node_named(unbound, "view");
  CHECK(view["fallback"] == false);
  CHECK(view["inputs"] != nlohmann::json::array({"S(0)"}));  // the uneven-flatten check refuses S(0) -> S(0)
  CHECK(view["outputs"] != nlohmann::json::array({"S(0)"}));
  CHECK(view["inputs"] == nlohmann::json::array({"S(2)"}));
  CHECK(view["outputs"] == nlohmann::json::array({"S(1)"}));
  // the cost is that of the hinted size: an all-to-all of f32[8191, 16, 48] from S(0) to S(2)
  const std::int64_t sizes[] = {2};
  const MeshTopology mesh = MeshTopology::build(sizes, 8);
  TensorMeta meta;
  const std::int64_t shape[] = {8191, 16, 48};
  meta.shape = TensorShape(std::span<const std::int64_t>(shape));
  meta.itemsize = 4;
  CHECK(view["cost_us"].get<double>() == Approx(redistribute_cost(parse_spec("S(0)"), parse_spec("S(2)"), meta, mesh)).epsilon(1e-12));
  check_same_plan(unbound, plan_of(fx::parse_fx_graph(static_flatten(8191), "static"), options({2}, {{"tangents_1", "S(0)"}})));
  // bound to a divisible value, the shard is kept for free
  const auto bound = plan_of(g, options({2}, {{"tangents_1", "S(0)"}}, {{"s77", 1024}}));
  CHECK(node_named(bound, "view")["inputs"] == nlohmann::json::array({"S(0)"}));
  CHECK(node_named(bound, "view")["outputs"] == nlohmann::json::array({"S(0)"}));
  CHECK(node_named(bound, "view")["cost_us"] == 0.0);
  check_same_plan(bound, plan_of(fx::parse_fx_graph(static_flatten(1024), "static"), options({2}, {{"tangents_1", "S(0)"}})));
  // bound to an odd value, it is not
  const auto odd = plan_of(g, options({2}, {{"tangents_1", "S(0)"}}, {{"s77", 1023}}));
  CHECK(node_named(odd, "view")["outputs"] != nlohmann::json::array({"S(0)"}));
}

TEST_CASE("plan: prime hints per unbound symbol, non-monomials move to a fresh prime", "[plan][sym]") {
  // s0, s1, s2 take 8191, 8209, 8219; s1 + 1 = 8210 -> 8221 (8219 is s2's hint); (s2//2) =
  // 4109 -> 4111; 4*s1 stays 32836 (divisible by 4, not by 8)
  const char* text = R"fx(def forward(self, a: "f32[s0, s1 + 1]", b: "f32[(s2//2), 4*s1]"):
    x = torch.ops.aten.relu.default(a)
    y = torch.ops.aten.relu.default(b)
    return (x, y)
)fx";
  const char* fixed = R"fx(def forward(self, a: "f32[8191, 8221]", b: "f32[4111, 32836]"):
    x = torch.ops.aten.relu.default(a)
    y = torch.ops.aten.relu.default(b)
    return (x, y)
)fx";
  const fx::Graph g = fx::parse_fx_graph(text, "hints");
  const std::map<std::string, std::string> place = {{"a", "S(1)R"}, {"b", "RS(1)"}};
  const auto p = plan_of(g, options({2, 4}, place));
  CHECK(p["symbols"] == nlohmann::json::parse(R"fx([{"name": "s0", "value": 8191, "bound": false},
      {"name": "s1", "value": 8209, "bound": false}, {"name": "s2", "value": 8219, "bound": false}])fx"));
  check_same_plan(p, plan_of(fx::parse_fx_graph(fixed, "fixed"), options({2, 4}, place)));
  // binding s1 gives the unbound ones the first hints in order; s1 + 1 is then exact
  const auto q = plan_of(g, options({2, 4}, place, {{"s1", 10}}));
  CHECK(q["symbols"] == nlohmann::json::parse(R"fx([{"name": "s0", "value": 8191, "bound": false},
      {"name": "s1", "value": 10, "bound": true}, {"name": "s2", "value": 8209, "bound": false}])fx"));
  const char* fixed_q = R"fx(def forward(self, a: "f32[8191, 11]", b: "f32[4111, 40]"):
    x = torch.ops.aten.relu.default(a)
    y = torch.ops.aten.relu.default(b)
    return (x, y)
)fx";  // (s2//2) = 4104 -> 4111 (the next prime)
  check_same_plan(q, plan_of(fx::parse_fx_graph(fixed_q, "fixed"), options({2, 4}, place)));
}

TEST_CASE("plan: sizes without an integer value fall back visibly, naming the expression", "[plan][sym]") {
  const fx::Graph g = fx::parse_fx_graph(R"fx(def forward(self, x: "f32[s0, 4]"):
    f: "Sym(ToFloat(s0))" = torch.sym_float(x)
    y: "f32[FloorToInt(s0), 4]" = torch.ops.aten.relu.default(x)
    z = torch.ops.aten.relu.default(y)
    w: "f32[s0 - 9000, 4]" = torch.ops.aten.relu.default(x)
    v = torch.ops.aten.relu.default(w)
    return (z, v)
)fx");
  const auto p = plan_of(g, options({2}, {}, {{"s0", 100}}));
  CHECK(node_named(p, "y")["fallback"] == false);
  CHECK(node_named(p, "z")["fallback"] == true);
  CHECK(node_named(p, "z")["reason"] == "size expression 'FloorToInt(s0)' is not an integer expression");
  CHECK(node_named(p, "v")["reason"] == "size 's0 - 9000' evaluates to -8900");
  CHECK(p["nodes"].size() == 4);  // the Sym node is not an op to plan
  // unbound, a non-monomial size takes a prime hint, never a negative value
  CHECK(node_named(plan_of(g, options({2})), "v")["fallback"] == false);
}

TEST_CASE("plan: --sym and --place errors", "[plan][sym]") {
  const fx::Graph g = fx::parse_fx_graph(kFlatten, "flatten");
  CHECK_THROWS_WITH(plan_of(g, options({2}, {}, {{"s7", 3}})), "ctshard plan: --sym names 's7', which is not a symbol of flatten (its symbols: s77)");
  CHECK_THROWS_WITH(plan_of(g, options({2}, {}, {{"s77", 0}})), "ctshard plan: --sym s77=0: a symbol's value must be a positive integer");
  CHECK_THROWS_WITH(plan_of(report::default_graph(), options({2}, {}, {{"s0", 4}})),
                    Contains("--sym names 's0', which is not a symbol of <embedded default") && Contains("(it has no symbolic sizes)"));
  CHECK_THROWS_WITH(plan_of(g, options({2}, {{"primals_1", "S(0)"}})),
                    "ctshard plan: --place names 'primals_1', a symbolic integer input (Sym(s77)), not a tensor");

  if (!have_shared("symbolic_batch.fx.txt")) return;
  const std::string r03 = kShared + "symbolic_batch.fx.txt";
  CHECK_THAT(run_tool("plan " + r03 + " --mesh 2 --sym s9=4"),
             Contains("error: ctshard plan: --sym names 's9', which is not a symbol of") && Contains("(its symbols: s77)"));
  CHECK_THAT(run_tool("plan " + r03 + " --sym s77=0"), Contains("error: ctshard plan: --sym s77=0: the value of 's77' must be a positive integer"));
  CHECK_THAT(run_tool("plan " + r03 + " --sym s77=abc"),
             Contains("error: ctshard plan: --sym s77=abc: the value of 's77' must be a positive integer"));
  CHECK_THAT(run_tool("plan " + r03 + " --sym s77=12x"), Contains("--sym s77=12x: the value of 's77' must be a positive integer"));
  CHECK_THAT(run_tool("plan " + r03 + " --sym s77=-4"), Contains("--sym s77=-4: the value of 's77' must be a positive integer"));
  CHECK_THAT(run_tool("plan " + r03 + " --sym s77=99999999999999999999"), Contains("the value of 's77' must be a positive integer"));
  CHECK_THAT(run_tool("plan " + r03 + " --sym s77"), Contains("error: ctshard plan: --sym expects NAME=VALUE, got 's77'"));
  CHECK_THAT(run_tool("plan " + r03 + " --sym =4"), Contains("--sym expects NAME=VALUE, got '=4'"));
  CHECK_THAT(run_tool("plan " + r03 + " --sym s77=4 --sym s77=8"), Contains("--sym names 's77' twice"));
  CHECK_THAT(run_tool("plan --sym s0=4"), Contains("(it has no symbolic sizes)"));
  // the tool's JSON and text
  const auto j = nlohmann::json::parse(run_tool("plan " + r03 + " --mesh 2 --sym s77=1024 --place 'tangents_1=S(0)' --json"));
  CHECK(j["symbols"] == nlohmann::json::parse(R"fx([{"name": "s77", "value": 1024, "bound": true}])fx"));
  CHECK(j["nodes_fallback"] == 0);
  CHECK_THAT(run_tool("plan " + r03 + " --mesh 2"), Contains("symbols: s77=8191 (unbound: prime hint)"));
  CHECK_THAT(run_tool("plan --help"), Contains("8191, 8209, 8219") && Contains("--sym") && Contains("8192"));
}

TEST_CASE("plan: R04 joint-graph format plans as the GraphModule format", "[plan][sym][real]") {
  if (!have_shared("joint_graph_format.fx.txt")) return;
  const fx::Graph joint = fx::read_fx_graph_file(kShared + "joint_graph_format.fx.txt");
  const fx::Graph module = fx::parse_fx_graph(R"fx(class GraphModule(torch.nn.Module):
    def forward(self, primals_1: "f32[8, 4]", tangents_1: "f32[8, 4]"):
        mul: "f32[8, 4]" = torch.ops.aten.mul.Tensor(tangents_1, primals_1)
        return (mul,)
)fx",
                                              "module");
  // the case's run: `ctshard plan graphs/joint_graph_format.fx.txt --mesh 2`
  const auto plain = plan_of(joint, options({2}));
  CHECK(plain["nodes_with_rule"] == 1);
  CHECK(plain["nodes_fallback"] == 0);
  const auto placed = plan_of(joint, options({2}, {{"primals_1", "S(0)"}}));
  CHECK(node_named(placed, "mul")["inputs"] == nlohmann::json::array({"S(0)", "S(0)"}));
  CHECK(node_named(placed, "mul")["outputs"] == nlohmann::json::array({"S(0)"}));
  CHECK(node_named(placed, "mul")["cost_us"] == 0.0);
  const std::vector<std::pair<std::vector<std::int64_t>, std::map<std::string, std::string>>> setups = {
      {{2}, {}},
      {{2}, {{"primals_1", "S(0)"}}},
      {{2}, {{"primals_1", "S(0)"}, {"tangents_1", "S(1)"}}},
      {{2, 2}, {{"primals_1", "S(0)S(1)"}, {"tangents_1", "P(sum)R"}}},
      {{8}, {{"tangents_1", "S(0)"}}}};
  for (const auto& [mesh, place] : setups) check_same_plan(plan_of(joint, options(mesh, place)), plan_of(module, options(mesh, place)));
  const auto cli = nlohmann::json::parse(run_tool("plan " + kShared + "joint_graph_format.fx.txt --mesh 2 --place 'tangents_1=S(1)' --json"));
  CHECK(cli["placements"]["tangents_1"] == "S(1)");
  CHECK(node_named(cli, "mul")["outputs"] == nlohmann::json::array({"S(1)"}));
  CHECK_THAT(run_tool("plan " + kShared + "joint_graph_format.fx.txt --place 'primals=S(0)'"), Contains("'primals', which is not an input"));
}

// ---- plan --coverage with unreadable files ----------------------------------------------------

TEST_CASE("plan --coverage: an unreadable file is an error line; exit 1 only when none is read", "[plan][cli]") {
  const auto dir = std::filesystem::temp_directory_path() / ("ctshard_coverage_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const auto write = [&](const std::string& name, const std::string& text) { std::ofstream(dir / name) << text; };
  write("bad.fx.txt", "def forward(self, x: \"f32[4\"):\n    return [x]\n");
  write("good.fx.txt", kFlatten);
  int status = 0;
  std::string out = run_tool_status("plan --coverage " + dir.string() + " --mesh 2", status);
  CHECK(status == 0);
  CHECK_THAT(out, Contains("bad.fx.txt: error: ") && Contains("unsupported type annotation") && Contains("good.fx.txt: 1 with a rule, 0 fallback"));
  out = run_tool_status("plan --coverage " + dir.string() + " --mesh 2 --json", status);
  CHECK(status == 0);
  const auto j = nlohmann::json::parse(out);
  REQUIRE(j["files"].size() == 2);
  CHECK(j["files"][0]["file"] == "bad.fx.txt");
  CHECK_THAT(j["files"][0]["error"].get<std::string>(), Contains("bad.fx.txt:1: unsupported type annotation \"f32[4\""));
  CHECK(j["files"][1]["file"] == "good.fx.txt");
  CHECK(j["files"][1]["nodes_with_rule"] == 1);
  std::filesystem::remove(dir / "good.fx.txt");
  write("also_bad.fx.txt", "no graph here\n");
  out = run_tool_status("plan --coverage " + dir.string(), status);
  CHECK(status == 1);
  CHECK_THAT(out, Contains("also_bad.fx.txt: error: ") && Contains("no 'def forward") && Contains("bad.fx.txt: error: "));
  out = run_tool_status("plan --coverage " + dir.string() + " --json", status);
  CHECK(status == 1);
  CHECK(nlohmann::json::parse(out)["files"].size() == 2);
  std::filesystem::remove_all(dir);
}
