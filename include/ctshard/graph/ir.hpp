#pragma once
/// \file ir.hpp
/// The graph IR the planners work on: values with a global shape and dtype (TensorType, sizes as
/// size expressions over named symbols, SizeExpr), op nodes with the op name and a structured
/// argument list (Node, Arg), the graph's inputs (placeholder nodes) and outputs (Graph). A
/// program builds one in memory with GraphBuilder; the FX printout reader (ctshard/fx/reader.hpp)
/// produces one from text. Node kinds and argument forms follow torch.fx (`placeholder`,
/// `call_function`, `get_attr`, `output`; operator.getitem for a multi-output op's results).
///
/// Example (a program building `y = relu(x @ w)`):
/// \code
///   ctshard::graph::GraphBuilder b("mlp");
///   b.input("x", "f32[64, 128]");
///   b.input("w", "f32[128, 256]");
///   b.call("mm", "aten.mm.default", {b.ref("x"), b.ref("w")}, "f32[64, 256]");
///   b.call("relu", "aten.relu.default", {b.ref("mm")}, "f32[64, 256]");
///   const ctshard::graph::Graph g = std::move(b).finish({"relu"});
/// \endcode

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ctshard::graph {
/// Size in bytes of one element of a dtype as printed in annotations ("f32" -> 4, "bf16" -> 2,
/// "f8e4m3fnuz" -> 1, "b8" -> 1, ...): the FX names of the dtype table (ctshard/core/dtype.hpp);
/// torch's names ("float32") are not annotation names. Throws std::invalid_argument for an
/// unknown dtype (including "").
std::size_t dtype_itemsize(std::string_view dtype);

/// Whether dtype_itemsize() knows `dtype` (an FX name of the dtype table).
bool is_known_dtype(std::string_view dtype) noexcept;

/// A size expression of a symbolic shape as PyTorch prints it (sympy's `str`): `s77`,
/// `1024*s77`, `s0 + 1`, `(s1//2)`, `s75**2`, `-(((-s75)//4))`, `Mod(s75, 3)`, `Max(1, s0)`.
///
/// Grammar (a small recursive-descent parser; at most 32 levels of nesting, each parenthesis,
/// call, unary operator and `**` counting one):
/// \code
///   logical    := comparison (('&' | '|') comparison)*
///   comparison := expr (('==' | '!=' | '<=' | '>=' | '<' | '>') expr)*
///   expr       := term (('+' | '-') term)*
///   term       := unary (('*' | '//' | '%' | '/') unary)*
///   unary      := '-' unary | '~' unary | primary ['**' unary]
///   primary    := INTEGER | FLOAT | NAME | NAME '(' logical (',' logical)* ')' | '(' logical ')'
/// \endcode
/// NAME is `[A-Za-z_][A-Za-z0-9_]*`; a NAME not followed by `(` is a symbol, except `True` and
/// `False`. `//` and `%` are Python's floor division and modulo; `Mod(a, b)`, `Max(...)` and
/// `Min(...)` are integer functions. Float literals, `True` / `False`, true division `/`,
/// comparisons, `&`, `|`, `~` and any other function (`ToFloat(s0)`, `Eq(s0, 2)`, ...) parse
/// (SymFloat / SymBool printouts) but make the expression non-integer (is_integer() false: it
/// has no integer value). Malformed text throws std::invalid_argument reading
/// `bad size expression '<text>': <problem> at column <n>` (1-based) or `... at the end`.
class SizeExpr {
 public:
  /// Parses `text` (surrounding blanks ignored). Throws std::invalid_argument as above.
  static SizeExpr parse(std::string_view text);

  /// The expression text as given, trimmed.
  const std::string& text() const noexcept { return text_; }
  /// The distinct symbols, in order of first appearance (function names are not symbols).
  const std::vector<std::string>& symbols() const noexcept { return symbols_; }
  /// Whether the value is an integer expression (no float literal, `/` or unknown function).
  bool is_integer() const noexcept { return integer_; }
  /// Whether the expression is a monomial: integer literals and symbols combined only by `*`
  /// and `**` with a literal exponent (`s77`, `1024*s77`, `2*s0*s1`, `s0**2`). Such a value
  /// k*s1*...*sn is divisible by exactly what divides k for arbitrary symbol values.
  bool is_monomial() const noexcept { return monomial_; }
  /// The integer value with every symbol given by `value_of`. Throws std::domain_error naming
  /// the expression when it is not an integer expression, divides by zero, raises to a negative
  /// power, or overflows 64 bits.
  std::int64_t evaluate(const std::function<std::int64_t(const std::string&)>& value_of) const;

  /// Equal when written the same (the text decides the parse).
  friend bool operator==(const SizeExpr& a, const SizeExpr& b) noexcept { return a.text_ == b.text_; }

 private:
  friend class SizeExprParser;
  enum class Op : std::uint8_t { literal, symbol, add, sub, mul, floordiv, mod, pow, neg, max, min, opaque };
  struct Term {
    Op op = Op::literal;
    std::int64_t value = 0;           // literal: the value; symbol: index into symbols_
    std::vector<std::uint32_t> args;  // operands (indices into terms_)
  };
  std::int64_t eval(std::uint32_t term, const std::vector<std::int64_t>& symbol_values) const;

  std::string text_;
  std::vector<std::string> symbols_;
  std::vector<Term> terms_;
  std::uint32_t root_ = 0;
  bool integer_ = true;
  bool monomial_ = true;
};

/// A tensor type as printed in an annotation, e.g. `"f32[8, 197, 768]"`; `"i32[]"` is 0-d;
/// `"f32[s77, 768]"` has a symbolic first dim.
/// A default-constructed TensorType (dtype "") stands for "unknown".
struct TensorType {
  /// dtype as printed ("f32", "bf16", "f16", "f64", "i64", "i32", "i16", "i8", "u8", "b8", ...);
  /// empty when unknown.
  std::string dtype;
  /// Extent of each dimension (-1 for a symbolic dim); empty for a 0-d tensor.
  std::vector<std::int64_t> shape;
  /// Empty when every dim is static; otherwise one entry per dim: the parsed size expression of a
  /// symbolic dim (SizeExpr::text() as printed, e.g. "1024*s77", "(s1//2)"), nullopt for a
  /// static one.
  std::vector<std::optional<SizeExpr>> dim_exprs = {};

  /// Size in bytes of one element; throws std::invalid_argument on an unknown or empty dtype.
  std::size_t itemsize() const;
  /// Whether the type is known (dtype not empty).
  bool known() const noexcept { return !dtype.empty(); }
  /// Whether some dim is symbolic (dim_exprs not empty).
  bool symbolic() const noexcept { return !dim_exprs.empty(); }
  /// Number of elements (1 for a 0-d tensor); meaningful only when !symbolic().
  std::int64_t numel() const noexcept;
  /// numel() * itemsize(); throws like itemsize().
  std::size_t nbytes() const;
  /// The annotation text, e.g. "f32[8, 197, 768]", "f32[s77, 768]"; "?" when unknown.
  std::string to_string() const;

  /// Memberwise equality.
  friend bool operator==(const TensorType&, const TensorType&) = default;
};

/// Parses annotation text such as `f32[8, 197, 768]` or `f32[s0 + 1, 768]` (without the
/// quotes); nullopt when the text is not a tensor type with a known dtype, and then `*problem`
/// (when given) says why, e.g. "unknown dtype 'xx'" or the SizeExpr message of a bad size.
std::optional<TensorType> parse_tensor_type(std::string_view text, std::string* problem = nullptr);

/// What an Arg holds.
enum class ArgKind {
  node,      ///< reference to an earlier node: Arg::text is its name, Arg::index set for `x[i]`
  integer,   ///< Arg::int_value
  floating,  ///< Arg::float_value (also `inf`, `-inf`, `nan`)
  boolean,   ///< Arg::bool_value (`True` / `False`)
  none,      ///< `None`
  string,    ///< Arg::text holds the unquoted, unescaped value of '...' or "..."
  list,      ///< Arg::items; `[a, b]`, `(a, b)` and a set `{a, b}` give a list
  opaque,    ///< anything else, raw text in Arg::text: `torch.float32`, `device(type='cuda')`, ...
  dict,      ///< `{k: v, ...}`: Arg::items holds key, value, key, value, ... in source order
};

/// One call argument (positional or keyword value), an output value, or a list element.
///
/// A bare identifier is a node reference when it names an earlier node or placeholder, and an
/// error otherwise. `torch.*` names and the calls `device(...)`, `slice(...)` and `torch.*(...)`
/// (`torch.float32`, `torch.contiguous_format`, `device(type='cuda', index=0)`) are opaque and
/// keep their text verbatim, except op references such as `torch.ops._C.rms_norm.default` (the
/// first argument of `higher_order.auto_functionalized`), whose text loses the `torch.ops.`
/// prefix ("_C.rms_norm.default"); so are `...` / `Ellipsis` and complex literals (`2j`,
/// `(1+2j)`). Other dotted names or calls make the call unreadable (Node::unreadable); lists,
/// tuples and dicts nested more than max_nesting deep are errors.
struct Arg {
  /// What this Arg holds; only the fields documented for that kind are meaningful.
  ArgKind kind = ArgKind::none;
  /// node: node name; string: value; opaque: raw text.
  std::string text;
  /// node only: the `i` of `x[i]`; empty for a plain reference.
  std::optional<std::int64_t> index;
  /// integer only.
  std::int64_t int_value = 0;
  /// floating only.
  double float_value = 0.0;
  /// boolean only.
  bool bool_value = false;
  /// list: the elements, possibly nested lists; dict: key, value, key, value, ...
  std::vector<Arg> items;

  /// A reference to node `name`, optionally `name[index]`.
  static Arg make_node(std::string name, std::optional<std::int64_t> index = std::nullopt);
  /// An integer literal.
  static Arg make_int(std::int64_t value);
  /// A floating-point literal.
  static Arg make_float(double value);
  /// `True` or `False`.
  static Arg make_bool(bool value);
  /// `None`.
  static Arg make_none();
  /// A string literal with the given (unescaped) value.
  static Arg make_string(std::string value);
  /// A list (or tuple) of elements.
  static Arg make_list(std::vector<Arg> items);
  /// An opaque token with the given raw text.
  static Arg make_opaque(std::string text);
  /// A dict of (key, value) entries in order.
  static Arg make_dict(std::vector<std::pair<Arg, Arg>> entries);

  /// kind == ArgKind::node.
  bool is_node() const noexcept { return kind == ArgKind::node; }
  /// Python-like rendering: `x`, `x[1]`, `3`, `1e-05`, `True`, `None`, `'s'`, `[a, 2]`,
  /// `{'k': 1}`, raw text.
  std::string to_string() const;

  /// Memberwise equality (so a `nan` float never equals itself).
  friend bool operator==(const Arg&, const Arg&) = default;
};

/// One FX node.
struct Node {
  /// Node name, e.g. "mm_3"; the output node is named "output".
  std::string name;
  /// "placeholder", "call_function", "get_attr" or "output".
  std::string kind;
  /// call_function: the callee without the "torch.ops." prefix ("aten.mm.default",
  /// "_c10d_functional.all_reduce.default", "higher_order.auto_functionalized"), or "getitem"
  /// for `x = y[i]` lines, or, for a symbolic-integer line whose right-hand side is not a
  /// `torch.ops.*` call, that right-hand side verbatim ("sym_size_int * 2");
  /// get_attr: the attribute path after `self.` ("_tensor_constant0");
  /// placeholder: the parameter name; output: "output".
  std::string target;
  /// Positional arguments. getitem `y[i]` has {node y, integer i} (as FX's operator.getitem);
  /// output has one Arg, the returned value (a list for `return [a, b]` / `return (a, b)`).
  std::vector<Arg> args;
  /// Keyword arguments (`name = value`) in source order.
  std::vector<std::pair<std::string, Arg>> kwargs;
  /// Result types. A node with an annotation (`x: "f32[8, 197, 768]" = ...`) has exactly that
  /// one type; a getitem has its annotated type. A node without annotation (multi-output ops
  /// such as var_mean, split_with_sizes, native_dropout, auto_functionalized) gets one entry per
  /// index up to the largest `i` of its getitem children `g: "T" = node[i]`, entry i being T,
  /// unknown entries (no getitem for that index, or an un-annotated one) being a TensorType with
  /// dtype ""; it stays empty when it has no getitem children (as do untyped placeholders,
  /// un-annotated get_attr nodes and the output node).
  std::vector<TensorType> outputs;
  /// 1-based line of the node in the source text (for a multi-line signature, its first line;
  /// for a placeholder of the pytree format, its declaration, else the unpacking line).
  std::size_t line = 0;
  /// A symbolic integer (annotation `"Sym(expr)"`, placeholder or body line): the expression
  /// text, e.g. "s77", "2*s75 + 1"; empty for any other node. Such a node has no outputs.
  std::string sym_expr;
  /// call_function whose argument list could not be read: why ("unknown call 'foo(...)' in an
  /// argument near ..."); `args` then holds the node references found in the argument text, in
  /// order of first appearance, and `kwargs` is empty. Empty for every readable node.
  std::string unreadable;

  /// The keyword argument `key`, or nullptr.
  const Arg* kwarg(std::string_view key) const noexcept;
};

struct Submodule;

/// A parsed graph: nodes in source order (placeholders first, output last).
struct Graph {
  /// Name used in error messages (the file path for read_fx_graph_file).
  std::string source_name;
  /// All nodes, in source order.
  std::vector<Node> nodes;
  /// Returned values in order: the node name for a node reference, "" for anything else
  /// (e.g. the `None` gradients of an AOT backward graph).
  std::vector<std::string> outputs;
  /// Nested submodules (print_readable's `class sdpa_score0(torch.nn.Module):` after the
  /// forward; from a GraphModule, the submodules its get_attr nodes name), in source order.
  std::vector<Submodule> submodules;

  /// The node called `name`, or nullptr (linear search).
  const Node* find(std::string_view name) const noexcept;
  /// The submodule called `name`, or nullptr.
  const Submodule* submodule(std::string_view name) const noexcept;
  /// Whether placeholder `position` (0-based, in signature order) is read by some node or
  /// returned; nullopt when the graph has no such placeholder.
  std::optional<bool> uses_placeholder(std::size_t position) const;
  /// The distinct symbols of the graph's size expressions in order of first appearance (nodes in
  /// order; per node its sym_expr, then its output types' dims). Throws std::invalid_argument
  /// for an expression that does not parse (the reader never produces one).
  std::vector<std::string> symbols() const;
};

/// Checks a Graph filled in field by field (GraphBuilder and the FX reader build only such
/// graphs): every node named, no two with one name, every node argument (in lists too) naming a
/// node defined before it (so no cycle), every output naming a node. Every planner calls it on
/// its graph. Throws ctshard::error starting with `api` and naming the node and the graph.
void check_graph(const Graph& graph, std::string_view api);

/// A nested submodule: its attribute name (the class name print_readable gives it) and its
/// graph; `unreadable` says why the graph could not be read (then `graph` is empty).
struct Submodule {
  std::string name;
  Graph graph;
  std::string unreadable;
};

/// Builds a Graph in memory, node by node, in the form the FX reader gives (placeholders, then
/// op nodes in topological order, then one output node). Every name is checked as it is added:
/// a duplicate name, a reference to a name not yet defined, or an unreadable type annotation
/// throws ctshard::error naming it. Shapes are global (the whole tensor, not one rank's part).
class GraphBuilder {
 public:
  /// `source_name` is Graph::source_name (it appears in the planners' messages).
  explicit GraphBuilder(std::string source_name = "<in-memory graph>");
  /// A tensor input (placeholder) `name` of type `type`, e.g. "f32[64, 128]" (an annotation as in
  /// parse_tensor_type: sizes may be size expressions, "bf16[s0, 768]").
  GraphBuilder& input(std::string name, std::string_view type);
  /// A tensor input of a type built by the program (checked as an annotation is: an unknown
  /// dtype or a negative size is a ctshard::error naming the input).
  GraphBuilder& input(std::string name, TensorType type);
  /// An op node `name = op(args..., kwargs...)` with one result of type `type` ("f32[64, 256]");
  /// `op` is the overload name without `torch.ops.` ("aten.mm.default").
  GraphBuilder& call(std::string name, std::string op, std::vector<Arg> args, std::string_view type,
                     std::vector<std::pair<std::string, Arg>> kwargs = {});
  /// An op node with several results (`var_mean`, `split`): `types` one per result; read them with
  /// item().
  GraphBuilder& call(std::string name, std::string op, std::vector<Arg> args, std::vector<TensorType> types,
                     std::vector<std::pair<std::string, Arg>> kwargs = {});
  /// `name = of[index]` (operator.getitem) of type `type`.
  GraphBuilder& item(std::string name, std::string_view of, std::int64_t index, std::string_view type);
  /// A reference to the defined value `name` (Arg::make_node); throws ctshard::error when no node
  /// of that name exists yet.
  [[nodiscard]] Arg ref(std::string_view name) const;
  /// The graph, with `outputs` (defined names) returned in order. Throws ctshard::error for an
  /// unknown name.
  [[nodiscard]] Graph finish(const std::vector<std::string>& outputs) &&;

 private:
  void add(Node node);
  Graph graph_;
};

}  // namespace ctshard::graph
