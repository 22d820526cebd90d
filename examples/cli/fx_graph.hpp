#pragma once
/// \file fx_graph.hpp
/// Reader for PyTorch aten-level FX graph printouts (`GraphModule.print_readable()` and the
/// AOT-autograd / depyf dump format), used by the `ctshard plan` command-line tool.
///
/// Accepted input, in short:
/// - anything before the first `def forward(` line is ignored (imports, `b8: type` stubs, the
///   `class GraphModule(torch.nn.Module):` or `class <lambda>(...)` line); `def forward` may sit
///   at any indentation, its signature may span several lines;
/// - signature parameters after `self` become placeholders, typed by a string annotation such
///   as `primals_1: "f32[2304, 768]"`, a symbolic integer `primals_1: "Sym(s77)"`, or untyped
///   (`x`, `x: torch.Tensor`: empty outputs);
/// - AOT autograd's pytree (joint-graph) format: `def forward(self, primals, tangents):`, then
///   declarations `primals_1: "f32[8, 4]"; tangents_1: "f32[8, 4]"; ` (several per line separated
///   by `;`, or one per line), then the unpacking line
///   `primals_1, tangents_1, = fx_pytree.tree_flatten_spec([primals, tangents], self._in_spec)`.
///   The unpacked names (typed by their declarations, untyped when undeclared) are then the
///   graph's placeholders, in unpacking order, and the signature's parameters are not nodes; a
///   declaration of a name the unpacking line does not list, a declaration after it, or
///   declarations without one are errors. `return pytree.tree_unflatten([a, b], self._out_spec)`
///   returns `[a, b]`;
/// - body lines (indented deeper than `def`) are `name[: "type"] = rhs` assignments, where rhs is
///   a call `torch.ops.ns.op.overload(args)`, a getitem `y[i]` or an attribute `self.path`,
///   followed until the end by one `return value` line (`[a, b]`, `(a, b)`, `(a,)`, `a, b`, `a`).
///   A `;  a = b = None` trailer (whose names must be known nodes) and `# ...` comments are
///   dropped; blank lines and comment lines are skipped; text after the return is an error;
/// - a body line annotated `"Sym(expr)"` is a symbolic integer (Node::sym_expr = expr): its
///   right-hand side may be any balanced Python-like expression (`primals_1 * 16`,
///   `torch.sym_float(x)`, `torch.ops.aten.sym_size.int(x, 0)`); a `torch.ops.*` call is read as
///   usual (target and arguments), anything else is kept verbatim in Node::target with no
///   arguments and is not checked further. Such nodes may be used as arguments anywhere a node
///   may (`view(mul, [primals_1, 16, 48])`);
/// - arguments are any Python literal `print_readable` emits: numbers in any notation (`1e-05`,
///   `-1.5e+3`, `.5`, `inf`, `-inf`, `nan`), strings, `True` / `False` / `None`, lists and tuples
///   nested to any depth up to max_nesting, dicts (`{'BACKEND': 'AUTO', 0: x}`), sets (read as
///   lists), `...`, complex numbers (`2j`, `(1+2j)`: opaque), dtypes, devices, layouts, memory
///   formats and op references (opaque), and node references. A call whose argument list is
///   balanced but cannot be read (an unknown name or call, a malformed number, a syntax the reader
///   does not know) is kept as a node with Node::unreadable saying why, its arguments being the
///   node references found in the text: the planner falls back for that node only. The reader's
///   bounds (nesting, argument count, line length) and references to unknown nodes still reject
///   the file;
/// - after the forward's return, nested submodules as print_readable prints them
///   (`class sdpa_score0(torch.nn.Module):` at the indentation of `def forward`, its own
///   `def forward` deeper): each is read as a graph of its own (Graph::submodules; one that does
///   not read is kept with Submodule::unreadable set). Anything else after the return is an error;
/// - a tensor annotation reads `dtype[d0, d1, ...]` (an optional `[strides]` and device suffix,
///   as in `"f32[4, 8][8, 1]cuda:0"`, is accepted and ignored), each size a non-negative integer
///   or a size expression of symbols (`f32[s77, 768]`, `f16[1024*s77, 768]`,
///   `f32[s0 + 1, (s1//2)]`; grammar at SizeExpr), kept as text in TensorType::dim_exprs.
/// Anything else raises parse_error; a malformed body line is never skipped.
///
/// Example:
/// \code
///   const ctshard::fx::Graph g = ctshard::fx::read_fx_graph_file("vit_b16_fw.fx.txt");
///   for (const ctshard::fx::Node& n : g.nodes)
///     if (n.kind == "call_function" && n.target == "aten.mm.default") { /* ... */ }
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

namespace ctshard::fx {

/// Raised for unreadable or malformed graph text. `what()` reads
/// `<source>:<line>: <problem> in: <offending line>` (the line trimmed, cut after 200
/// characters); problems not tied to a line (unreadable file, no `def forward`) read
/// `<source>:0: <problem>`.
class parse_error : public std::runtime_error {
 public:
  /// Builds the message from its parts; `line` is 1-based (0 when no line applies).
  parse_error(std::string source, std::size_t line, const std::string& problem, std::string text);
  /// Name of the input (file path or the name given to parse_fx_graph).
  const std::string& source() const noexcept { return source_; }
  /// 1-based line number of the offending text (0 if the problem is not tied to a line).
  std::size_t line() const noexcept { return line_; }
  /// The offending source line, trimmed.
  const std::string& text() const noexcept { return text_; }
  /// The problem alone, without source, line and text ("malformed number near '1.2.3)'").
  const std::string& problem() const noexcept { return problem_; }

 private:
  std::string source_;
  std::size_t line_;
  std::string text_;
  std::string problem_;
};

/// Size in bytes of one element of a dtype as printed in annotations ("f32" -> 4, "bf16" -> 2,
/// "b8" -> 1, ...). Throws std::invalid_argument for an unknown dtype (including "").
std::size_t dtype_itemsize(std::string_view dtype);

/// Whether dtype_itemsize() knows `dtype`.
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
  /// Empty when every dim is static; otherwise one entry per dim: the size expression text of a
  /// symbolic dim (as printed, e.g. "1024*s77", "(s1//2)"), "" for a static one.
  std::vector<std::string> dim_exprs = {};

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

/// A nested submodule: its attribute name (the class name print_readable gives it) and its
/// graph; `unreadable` says why the graph could not be read (then `graph` is empty).
struct Submodule {
  std::string name;
  Graph graph;
  std::string unreadable;
};

/// Deepest nesting of lists, tuples, dicts and `node[index]` subscripts in one argument (`[[a[0]]]` is 3
/// levels); deeper input raises parse_error (the reader is recursive-descent).
inline constexpr std::size_t max_nesting = 64;
/// Deepest nesting of submodule classes (a submodule's own submodules count one more); a deeper
/// one is kept unread (Submodule::unreadable).
inline constexpr std::size_t max_submodule_depth = 16;
/// Longest line of graph text, in bytes (1 MiB); a longer line raises parse_error.
inline constexpr std::size_t max_line_bytes = std::size_t{1} << 20;
/// Most lines one statement (the `def forward(` signature) may span; more raise parse_error.
inline constexpr std::size_t max_statement_lines = 100000;
/// Most arguments (positional + keyword) of one call; more raise parse_error.
inline constexpr std::size_t max_call_arguments = 4096;
/// `y[k]` with k >= max_getitem_index does not type slot k of y's outputs (its own output type is
/// still read); a node's output list grows through getitem at most to this size.
inline constexpr std::int64_t max_getitem_index = 1 << 16;
/// Total output-list entries all getitem nodes of a graph may create, beyond one per node: the
/// slots filled in by `y[k]` lines make at most max_getitem_slots + (number of nodes) entries;
/// past that parse_error is raised (a few sparse huge indices would otherwise cost memory
/// quadratic in the text).
inline constexpr std::size_t max_getitem_slots = std::size_t{1} << 20;

/// Parses the text of an FX graph printout. `source_name` only appears in error messages and in
/// Graph::source_name. Throws parse_error on malformed input (unbalanced brackets or quotes, a
/// body line that is neither an assignment nor a return, a reference to an unknown node, a
/// duplicate node name, an unsupported type annotation, no `def forward`, no `return`, ...).
Graph parse_fx_graph(std::string_view text, std::string_view source_name = "<input>");

/// Reads and parses the file at `path` (which becomes Graph::source_name). Throws parse_error
/// when the file cannot be read, or as parse_fx_graph.
Graph read_fx_graph_file(const std::string& path);

}  // namespace ctshard::fx
