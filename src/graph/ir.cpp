// The graph IR (ctshard/graph/ir.hpp): size expressions, tensor types, arguments, nodes, graphs,
// and GraphBuilder for graphs built in memory.

#include "ctshard/graph/ir.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <unordered_map>
#include <unordered_set>

#include "../common/text_scan.hpp"
#include "ctshard/core/dtype.hpp"
#include "ctshard/error.hpp"

namespace ctshard::graph {

using text::is_digit;
using text::is_ident_char;
using text::is_ident_start;
using text::is_lower;
using text::is_space;
using text::trim;

namespace {

// ---- tensor types ----------------------------------------------------------------------------

/// Parses a size list `[d, d, ...]` at `s[i]` (each size a non-negative integer or a SizeExpr
/// of symbols); advances `i` past the `]`. Fills `shape` (-1 for a symbolic dim) and `exprs`
/// (one entry per dim, "" for a static one) when given. Returns "" or the problem.
std::string parse_size_list(std::string_view s, std::size_t& i, std::vector<std::int64_t>* shape, std::vector<std::optional<SizeExpr>>* exprs) {
  if (i >= s.size() || s[i] != '[') return "expected '['";
  ++i;
  std::size_t depth = 0;
  std::size_t begin = i;
  bool first = true;
  for (; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '(') {
      ++depth;
      continue;
    }
    if (c == ')') {
      if (depth == 0) return "unbalanced ')' in a size";
      --depth;
      continue;
    }
    if (depth != 0 || (c != ',' && c != ']')) continue;
    const std::string_view item = trim(s.substr(begin, i - begin));
    if (item.empty()) {
      if (c == ']' && first) return ++i, std::string();  // `[]`: a 0-d tensor
      return "empty size";
    }
    std::int64_t value = -1;
    std::optional<SizeExpr> expr;
    if (std::all_of(item.begin(), item.end(), is_digit)) {
      const auto result = std::from_chars(item.data(), item.data() + item.size(), value);
      if (result.ec != std::errc{}) return "size '" + std::string(item) + "' out of range";
    } else {
      try {
        expr = SizeExpr::parse(item);
        if (expr->symbols().empty()) return "size '" + std::string(item) + "' is neither a non-negative integer nor an expression of symbols";
      } catch (const std::invalid_argument& e) {
        return e.what();
      }
    }
    if (shape != nullptr) shape->push_back(value);
    if (exprs != nullptr) exprs->push_back(std::move(expr));
    first = false;
    begin = i + 1;
    if (c == ']') return ++i, std::string();
  }
  return "'[' is never closed";
}

void append_float(std::string& out, double value) {
  if (std::isnan(value)) {
    out += "nan";
    return;
  }
  if (std::isinf(value)) {
    out += value < 0 ? "-inf" : "inf";
    return;
  }
  char buffer[64];
  const auto result = std::to_chars(buffer, buffer + sizeof buffer, value);
  const std::string_view text(buffer, static_cast<std::size_t>(result.ptr - buffer));
  out += text;
  if (text.find_first_of(".e") == std::string_view::npos) out += ".0";
}

}  // namespace

// ---- size expressions -------------------------------------------------------------------

/// Recursive-descent parser of SizeExpr (grammar in fx_graph.hpp).
class SizeExprParser {
 public:
  explicit SizeExprParser(std::string_view text) : s_(trim(text)) { e_.text_ = std::string(s_); }

  SizeExpr run() {
    if (s_.empty()) fail("empty expression");
    e_.root_ = logical();
    skip();
    if (pos_ < s_.size()) fail(std::string("unexpected '") + s_[pos_] + "'");
    e_.monomial_ = monomial(e_.root_);
    return std::move(e_);
  }

 private:
  using Op = SizeExpr::Op;
  static constexpr std::size_t kMaxDepth = 32;

  [[noreturn]] void fail(const std::string& problem) const {
    throw std::invalid_argument("bad size expression '" + std::string(s_) + "': " + problem +
                                (pos_ >= s_.size() ? std::string(" at the end") : " at column " + std::to_string(pos_ + 1)));
  }
  void skip() {
    while (pos_ < s_.size() && is_space(s_[pos_])) ++pos_;
  }
  /// Consumes `token` if it comes next and is not the start of a longer operator.
  bool eat(std::string_view token) {
    skip();
    if (s_.substr(pos_, token.size()) != token) return false;
    const std::size_t after = pos_ + token.size();
    if ((token == "*" || token == "/") && after < s_.size() && s_[after] == token[0]) return false;
    pos_ = after;
    return true;
  }
  std::uint32_t add(Op op, std::vector<std::uint32_t> args = {}, std::int64_t value = 0) {
    if (op == Op::opaque) e_.integer_ = false;
    e_.terms_.push_back(SizeExpr::Term{op, value, std::move(args)});
    return static_cast<std::uint32_t>(e_.terms_.size() - 1);
  }

  /// Comparisons and `&` / `|` (SymBool printouts such as `s0 >= 2`): parsed, never integer.
  std::uint32_t logical() {
    std::uint32_t lhs = comparison();
    while (eat("&") || eat("|")) lhs = add(Op::opaque, {lhs, comparison()});
    return lhs;
  }
  std::uint32_t comparison() {
    std::uint32_t lhs = expr();
    while (eat("==") || eat("!=") || eat("<=") || eat(">=") || eat("<") || eat(">")) lhs = add(Op::opaque, {lhs, expr()});
    return lhs;
  }
  std::uint32_t expr() {
    std::uint32_t lhs = term();
    while (true) {
      const Op op = eat("+") ? Op::add : eat("-") ? Op::sub : Op::literal;
      if (op == Op::literal) return lhs;
      lhs = add(op, {lhs, term()});
    }
  }
  std::uint32_t term() {
    std::uint32_t lhs = unary();
    while (true) {
      const Op op = eat("*") ? Op::mul : eat("//") ? Op::floordiv : eat("%") ? Op::mod : eat("/") ? Op::opaque : Op::literal;
      if (op == Op::literal) return lhs;
      lhs = add(op, {lhs, unary()});
    }
  }
  std::uint32_t unary() {
    if (++depth_ > kMaxDepth) fail("nested too deeply");
    std::uint32_t result = 0;
    if (eat("-")) {
      result = add(Op::neg, {unary()});
    } else if (eat("~")) {
      result = add(Op::opaque, {unary()});
    } else {
      result = primary();
      if (eat("**")) result = add(Op::pow, {result, unary()});
    }
    --depth_;
    return result;
  }
  std::uint32_t primary() {
    skip();
    if (pos_ >= s_.size()) fail("expected a number, a symbol or '('");
    const char c = s_[pos_];
    if (is_digit(c)) return number();
    if (c == '(') {
      ++pos_;
      const std::uint32_t inner = logical();
      if (!eat(")")) fail("expected ')'");
      return inner;
    }
    if (!is_ident_start(c)) fail("expected a number, a symbol or '('");
    const std::size_t start = pos_;
    while (pos_ < s_.size() && is_ident_char(s_[pos_])) ++pos_;
    const std::string name(s_.substr(start, pos_ - start));
    if (eat("(")) return call(name);
    if (name == "True" || name == "False") return add(Op::opaque);
    const auto index = std::find(e_.symbols_.begin(), e_.symbols_.end(), name) - e_.symbols_.begin();
    if (static_cast<std::size_t>(index) == e_.symbols_.size()) e_.symbols_.push_back(name);
    return add(Op::symbol, {}, static_cast<std::int64_t>(index));
  }
  std::uint32_t number() {
    const std::size_t start = pos_;
    while (pos_ < s_.size() && is_digit(s_[pos_])) ++pos_;
    bool is_float = false;
    if (pos_ < s_.size() && s_[pos_] == '.') {
      is_float = true;
      ++pos_;
      while (pos_ < s_.size() && is_digit(s_[pos_])) ++pos_;
    }
    if (pos_ < s_.size() && (s_[pos_] == 'e' || s_[pos_] == 'E')) {
      std::size_t j = pos_ + 1;
      if (j < s_.size() && (s_[j] == '+' || s_[j] == '-')) ++j;
      if (j < s_.size() && is_digit(s_[j])) {
        is_float = true;
        pos_ = j;
        while (pos_ < s_.size() && is_digit(s_[pos_])) ++pos_;
      }
    }
    if (pos_ < s_.size() && is_ident_char(s_[pos_])) fail("malformed number");
    if (is_float) return add(Op::opaque);
    std::int64_t value = 0;
    if (std::from_chars(s_.data() + start, s_.data() + pos_, value).ec != std::errc{}) {
      pos_ = start;
      fail("number out of range");
    }
    return add(Op::literal, {}, value);
  }
  std::uint32_t call(const std::string& name) {
    const std::size_t start = pos_;
    std::vector<std::uint32_t> args;
    if (++depth_ > kMaxDepth) fail("nested too deeply");
    do {
      args.push_back(logical());
    } while (eat(","));
    if (!eat(")")) fail("expected ',' or ')'");
    --depth_;
    if (name == "Max" || name == "Min") return add(name == "Max" ? Op::max : Op::min, std::move(args));
    if (name == "Mod") {
      if (args.size() != 2) {
        pos_ = start;
        fail("Mod takes 2 arguments, got " + std::to_string(args.size()));
      }
      return add(Op::mod, std::move(args));
    }
    return add(Op::opaque, std::move(args));
  }
  bool monomial(std::uint32_t t) const {
    const SizeExpr::Term& term = e_.terms_[t];
    switch (term.op) {
      case Op::literal:
      case Op::symbol: return true;
      case Op::mul: return monomial(term.args[0]) && monomial(term.args[1]);
      case Op::pow: return monomial(term.args[0]) && e_.terms_[term.args[1]].op == Op::literal;
      default: return false;
    }
  }

  std::string_view s_;
  std::size_t pos_ = 0;
  std::size_t depth_ = 0;
  SizeExpr e_;
};

SizeExpr SizeExpr::parse(std::string_view text) { return SizeExprParser(text).run(); }

std::int64_t SizeExpr::evaluate(const std::function<std::int64_t(const std::string&)>& value_of) const {
  if (!integer_) throw std::domain_error("size expression '" + text_ + "' is not an integer expression");
  std::vector<std::int64_t> values;
  values.reserve(symbols_.size());
  for (const std::string& name : symbols_) values.push_back(value_of(name));
  return eval(root_, values);
}

std::int64_t SizeExpr::eval(std::uint32_t t, const std::vector<std::int64_t>& symbol_values) const {
  const Term& term = terms_[t];
  const auto fail = [&](const char* problem) -> std::int64_t { throw std::domain_error("size expression '" + text_ + "' " + problem); };
  const auto arg = [&](std::size_t k) { return eval(term.args[k], symbol_values); };
  std::int64_t r = 0;
  switch (term.op) {
    case Op::literal: return term.value;
    case Op::symbol: return symbol_values[static_cast<std::size_t>(term.value)];
    case Op::add: return __builtin_add_overflow(arg(0), arg(1), &r) ? fail("overflows 64 bits") : r;
    case Op::sub: return __builtin_sub_overflow(arg(0), arg(1), &r) ? fail("overflows 64 bits") : r;
    case Op::mul: return __builtin_mul_overflow(arg(0), arg(1), &r) ? fail("overflows 64 bits") : r;
    case Op::neg: return __builtin_sub_overflow(std::int64_t{0}, arg(0), &r) ? fail("overflows 64 bits") : r;
    case Op::floordiv:
    case Op::mod: {
      const std::int64_t a = arg(0), b = arg(1);
      if (b == 0) return fail("divides by zero");
      if (b == -1) {  // a / -1 overflows for the smallest value; a % -1 is 0
        if (term.op == Op::mod) return 0;
        return __builtin_sub_overflow(std::int64_t{0}, a, &r) ? fail("overflows 64 bits") : r;
      }
      std::int64_t q = a / b, m = a % b;
      if (m != 0 && ((m < 0) != (b < 0))) {  // Python rounds toward negative infinity
        --q;
        m += b;
      }
      return term.op == Op::floordiv ? q : m;
    }
    case Op::pow: {
      std::int64_t base = arg(0), exponent = arg(1);
      if (exponent < 0) return fail("raises to a negative power");
      std::int64_t result = 1;
      while (exponent > 0) {
        if ((exponent & 1) != 0 && __builtin_mul_overflow(result, base, &result)) return fail("overflows 64 bits");
        exponent >>= 1;
        if (exponent > 0 && __builtin_mul_overflow(base, base, &base)) return fail("overflows 64 bits");
      }
      return result;
    }
    case Op::max:
    case Op::min: {
      std::int64_t best = arg(0);
      for (std::size_t k = 1; k < term.args.size(); ++k) best = term.op == Op::max ? std::max(best, arg(k)) : std::min(best, arg(k));
      return best;
    }
    case Op::opaque: break;
  }
  return fail("is not an integer expression");
}

// ---- dtypes and TensorType --------------------------------------------------------------

bool is_known_dtype(std::string_view dtype) noexcept { return find_fx_dtype(dtype) != nullptr; }

std::size_t dtype_itemsize(std::string_view dtype) {
  if (const std::optional<std::size_t> size = fx_itemsize_of(dtype)) return *size;
  throw std::invalid_argument("ctshard::fx: unknown dtype '" + std::string(dtype) + "'");
}

std::size_t TensorType::itemsize() const { return dtype_itemsize(dtype); }

std::int64_t TensorType::numel() const noexcept {
  std::int64_t n = 1;
  for (std::int64_t d : shape) n *= d;
  return n;
}

std::size_t TensorType::nbytes() const { return static_cast<std::size_t>(numel()) * itemsize(); }

std::string TensorType::to_string() const {
  if (!known()) return "?";
  std::string out = dtype + "[";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i != 0) out += ", ";
    out += i < dim_exprs.size() && dim_exprs[i] ? dim_exprs[i]->text() : std::to_string(shape[i]);
  }
  return out + "]";
}

std::optional<TensorType> parse_tensor_type(std::string_view text, std::string* problem) {
  const auto fail = [&](std::string why) -> std::optional<TensorType> {
    if (problem != nullptr) *problem = std::move(why);
    return std::nullopt;
  };
  text = trim(text);
  std::size_t i = 0;
  while (i < text.size() && (is_ident_char(text[i]))) ++i;
  TensorType type;
  type.dtype = std::string(text.substr(0, i));
  if (type.dtype.empty()) return fail("expected a dtype such as f32");
  if (!is_known_dtype(type.dtype)) return fail("unknown dtype '" + type.dtype + "'");
  std::vector<std::optional<SizeExpr>> exprs;
  if (std::string why = parse_size_list(text, i, &type.shape, &exprs); !why.empty()) return fail(why);
  if (std::any_of(exprs.begin(), exprs.end(), [](const std::optional<SizeExpr>& e) { return e.has_value(); })) type.dim_exprs = std::move(exprs);
  if (i < text.size() && text[i] == '[') {  // strides
    if (std::string why = parse_size_list(text, i, nullptr, nullptr); !why.empty()) return fail("strides: " + why);
  }
  // Optional device suffix: `cpu`, `cuda:0`, `meta`, ...
  const std::size_t device = i;
  while (i < text.size() && is_lower(text[i])) ++i;
  if (i > device && i < text.size() && text[i] == ':') {
    const std::size_t digits = ++i;
    while (i < text.size() && is_digit(text[i])) ++i;
    if (i == digits) return fail("expected a device index after ':'");
  }
  if (i != text.size()) return fail("unexpected text after the sizes");
  return type;
}

// ---- Arg ----------------------------------------------------------------------------------

Arg Arg::make_node(std::string name, std::optional<std::int64_t> index) {
  Arg a;
  a.kind = ArgKind::node;
  a.text = std::move(name);
  a.index = index;
  return a;
}

Arg Arg::make_int(std::int64_t value) {
  Arg a;
  a.kind = ArgKind::integer;
  a.int_value = value;
  return a;
}

Arg Arg::make_float(double value) {
  Arg a;
  a.kind = ArgKind::floating;
  a.float_value = value;
  return a;
}

Arg Arg::make_bool(bool value) {
  Arg a;
  a.kind = ArgKind::boolean;
  a.bool_value = value;
  return a;
}

Arg Arg::make_none() { return Arg{}; }

Arg Arg::make_string(std::string value) {
  Arg a;
  a.kind = ArgKind::string;
  a.text = std::move(value);
  return a;
}

Arg Arg::make_list(std::vector<Arg> items) {
  Arg a;
  a.kind = ArgKind::list;
  a.items = std::move(items);
  return a;
}

Arg Arg::make_dict(std::vector<std::pair<Arg, Arg>> entries) {
  Arg a;
  a.kind = ArgKind::dict;
  for (auto& [k, v] : entries) {
    a.items.push_back(std::move(k));
    a.items.push_back(std::move(v));
  }
  return a;
}

Arg Arg::make_opaque(std::string text) {
  Arg a;
  a.kind = ArgKind::opaque;
  a.text = std::move(text);
  return a;
}

std::string Arg::to_string() const {
  std::string out;
  switch (kind) {
    case ArgKind::node:
      out = text;
      if (index) out += "[" + std::to_string(*index) + "]";
      break;
    case ArgKind::integer: out = std::to_string(int_value); break;
    case ArgKind::floating: append_float(out, float_value); break;
    case ArgKind::boolean: out = bool_value ? "True" : "False"; break;
    case ArgKind::none: out = "None"; break;
    case ArgKind::string:
      out = "'";
      for (char c : text) {
        if (c == '\'' || c == '\\') out += '\\';
        out += c;
      }
      out += "'";
      break;
    case ArgKind::list:
      out = "[";
      for (std::size_t i = 0; i < items.size(); ++i) out += (i ? ", " : "") + items[i].to_string();
      out += "]";
      break;
    case ArgKind::opaque: out = text; break;
    case ArgKind::dict:
      out = "{";
      for (std::size_t i = 0; i + 1 < items.size(); i += 2) out += (i ? ", " : "") + items[i].to_string() + ": " + items[i + 1].to_string();
      out += "}";
      break;
  }
  return out;
}

// ---- Node and Graph -----------------------------------------------------------------------

const Arg* Node::kwarg(std::string_view key) const noexcept {
  for (const auto& [k, value] : kwargs)
    if (k == key) return &value;
  return nullptr;
}

const Node* Graph::find(std::string_view name) const noexcept {
  for (const Node& node : nodes)
    if (node.name == name) return &node;
  return nullptr;
}

namespace {
/// The first node reference among `node`'s arguments (lists and keyword values included) that
/// `defined(name)` rejects, or nullptr: the one reference rule of GraphBuilder and check_graph.
template <class Defined>
const Arg* first_undefined_reference(const Node& node, const Defined& defined) {
  const auto walk = [&](const auto& self, const Arg& a) -> const Arg* {
    if (a.is_node() && !defined(a.text)) return &a;
    for (const Arg& item : a.items)
      if (const Arg* bad = self(self, item)) return bad;
    return nullptr;
  };
  for (const Arg& a : node.args)
    if (const Arg* bad = walk(walk, a)) return bad;
  for (const auto& kv : node.kwargs)
    if (const Arg* bad = walk(walk, kv.second)) return bad;
  return nullptr;
}
}  // namespace

void check_graph(const Graph& graph, std::string_view api) {
  std::unordered_set<std::string_view> defined;
  const auto is_defined = [&](std::string_view name) { return defined.count(name) != 0; };
  const std::string where = " of " + graph.source_name;
  for (const Node& node : graph.nodes) {
    if (node.name.empty()) throw error(std::string(api) + ": a node" + where + " has no name");
    if (const Arg* bad = first_undefined_reference(node, is_defined))
      throw error(std::string(api) + ": node '" + node.name + "'" + where + " reads '" + bad->text + "', which is not defined before it");
    if (!defined.insert(node.name).second) throw error(std::string(api) + ": two nodes" + where + " are named '" + node.name + "'");
  }
  for (const std::string& out : graph.outputs)
    if (!out.empty() && !is_defined(out)) throw error(std::string(api) + ": the output '" + out + "'" + where + " is not a node");
}

const Submodule* Graph::submodule(std::string_view name) const noexcept {
  for (const Submodule& s : submodules)
    if (s.name == name) return &s;
  return nullptr;
}

std::optional<bool> Graph::uses_placeholder(std::size_t position) const {
  const Node* placeholder = nullptr;
  std::size_t k = 0;
  for (const Node& n : nodes)
    if (n.kind == "placeholder" && k++ == position) placeholder = &n;
  if (placeholder == nullptr) return std::nullopt;
  const std::string& name = placeholder->name;
  // iterative walk over nested lists / dicts (Arg nesting is bounded, but no recursion is needed)
  std::vector<const Arg*> stack;
  for (const Node& n : nodes) {
    if (&n == placeholder) continue;
    for (const Arg& a : n.args) stack.push_back(&a);
    for (const auto& kv : n.kwargs) stack.push_back(&kv.second);
    while (!stack.empty()) {
      const Arg* a = stack.back();
      stack.pop_back();
      if (a->is_node() && a->text == name) return true;
      for (const Arg& item : a->items) stack.push_back(&item);
    }
  }
  return std::find(outputs.begin(), outputs.end(), name) != outputs.end();
}

std::vector<std::string> Graph::symbols() const {
  std::vector<std::string> out;
  std::unordered_set<std::string> seen;  // linear in the number of symbols, not quadratic
  const auto add = [&](const SizeExpr& expr) {
    for (const std::string& name : expr.symbols())
      if (seen.insert(name).second) out.push_back(name);
  };
  for (const Node& node : nodes) {
    if (!node.sym_expr.empty()) add(SizeExpr::parse(node.sym_expr));
    for (const TensorType& t : node.outputs)
      for (const std::optional<SizeExpr>& e : t.dim_exprs)
        if (e) add(*e);
  }
  return out;
}

// ---- GraphBuilder ---------------------------------------------------------------------------

GraphBuilder::GraphBuilder(std::string source_name) { graph_.source_name = std::move(source_name); }

void GraphBuilder::add(Node node) {
  if (node.name.empty()) throw error("graph builder: a node needs a name (" + graph_.source_name + ")");
  if (graph_.find(node.name) != nullptr) throw error("graph builder: a node named '" + node.name + "' already exists in " + graph_.source_name);
  if (const Arg* bad = first_undefined_reference(node, [&](std::string_view name) { return graph_.find(name) != nullptr; }))
    throw error("graph builder: node '" + node.name + "' reads '" + bad->text + "', which is not defined before it");
  node.line = graph_.nodes.size() + 1;
  graph_.nodes.push_back(std::move(node));
}

namespace {
TensorType type_of(std::string_view text, std::string_view name) {
  std::string problem;
  std::optional<TensorType> type = parse_tensor_type(text, &problem);
  if (!type) throw error("graph builder: the type '" + std::string(text) + "' of '" + std::string(name) + "' does not read: " + problem);
  return *std::move(type);
}

/// A type built by the program, checked as the text reader checks an annotation: a known (or
/// empty: unknown) dtype, sizes >= 0 (-1 only for a symbolic dim, with its expression).
void check_type(const TensorType& t, std::string_view name) {
  if (!t.dtype.empty() && !is_known_dtype(t.dtype))
    throw error("graph builder: the type of '" + std::string(name) + "' has an unknown dtype '" + t.dtype + "'");
  if (!t.dim_exprs.empty() && t.dim_exprs.size() != t.shape.size())
    throw error("graph builder: the type of '" + std::string(name) + "' has " + std::to_string(t.dim_exprs.size()) + " size expressions for " +
                std::to_string(t.shape.size()) + " dims");
  for (std::size_t d = 0; d < t.shape.size(); ++d)
    if (t.shape[d] < 0 && (t.shape[d] != -1 || t.dim_exprs.empty() || !t.dim_exprs[d]))
      throw error("graph builder: the type of '" + std::string(name) + "' has size " + std::to_string(t.shape[d]) + " at dim " + std::to_string(d));
}
}  // namespace

GraphBuilder& GraphBuilder::input(std::string name, std::string_view type) {
  TensorType t = type_of(type, name);
  return input(std::move(name), std::move(t));
}

GraphBuilder& GraphBuilder::input(std::string name, TensorType type) {
  check_type(type, name);
  Node node;
  node.kind = "placeholder";
  node.target = name;
  node.name = std::move(name);
  node.outputs.push_back(std::move(type));
  add(std::move(node));
  return *this;
}

GraphBuilder& GraphBuilder::call(std::string name, std::string op, std::vector<Arg> args, std::string_view type,
                                 std::vector<std::pair<std::string, Arg>> kwargs) {
  TensorType t = type_of(type, name);
  return call(std::move(name), std::move(op), std::move(args), std::vector<TensorType>{std::move(t)}, std::move(kwargs));
}

GraphBuilder& GraphBuilder::call(std::string name, std::string op, std::vector<Arg> args, std::vector<TensorType> types,
                                 std::vector<std::pair<std::string, Arg>> kwargs) {
  if (op.empty()) throw error("graph builder: node '" + name + "' needs an op name");
  for (const TensorType& t : types) check_type(t, name);
  Node node;
  node.kind = "call_function";
  node.name = std::move(name);
  node.target = std::move(op);
  node.args = std::move(args);
  node.kwargs = std::move(kwargs);
  node.outputs = std::move(types);
  add(std::move(node));
  return *this;
}

GraphBuilder& GraphBuilder::item(std::string name, std::string_view of, std::int64_t index, std::string_view type) {
  TensorType t = type_of(type, name);
  Node* source = nullptr;
  for (Node& n : graph_.nodes)
    if (n.name == of) source = &n;
  if (source == nullptr) throw error("graph builder: '" + name + "' reads '" + std::string(of) + "', which is not defined before it");
  if (index < 0 || index >= static_cast<std::int64_t>(source->outputs.size()))
    throw error("graph builder: '" + name + "' reads result " + std::to_string(index) + " of '" + std::string(of) + "', which has " +
                std::to_string(source->outputs.size()));
  Node node;
  node.kind = "call_function";
  node.target = "getitem";
  node.name = std::move(name);
  node.args = {Arg::make_node(std::string(of)), Arg::make_int(index)};
  node.outputs.push_back(std::move(t));
  add(std::move(node));
  return *this;
}

Arg GraphBuilder::ref(std::string_view name) const {
  if (graph_.find(name) == nullptr) throw error("graph builder: no node named '" + std::string(name) + "' in " + graph_.source_name);
  return Arg::make_node(std::string(name));
}

Graph GraphBuilder::finish(const std::vector<std::string>& outputs) && {
  std::vector<Arg> items;
  for (const std::string& name : outputs) items.push_back(ref(name));
  Node node;
  node.kind = "output";
  node.target = "output";
  node.name = "output";
  node.args.push_back(Arg::make_list(std::move(items)));
  add(std::move(node));
  graph_.outputs = outputs;
  return std::move(graph_);
}

}  // namespace ctshard::graph
