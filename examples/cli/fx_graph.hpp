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
///   as `primals_1: "f32[2304, 768]"` or untyped (`x`, `x: torch.Tensor`: empty outputs);
/// - body lines (indented deeper than `def`) are `name[: "type"] = rhs` assignments, where rhs is
///   a call `torch.ops.ns.op.overload(args)`, a getitem `y[i]` or an attribute `self.path`,
///   followed until the end by one `return value` line (`[a, b]`, `(a, b)`, `(a,)`, `a, b`, `a`).
///   A `;  a = b = None` trailer (whose names must be known nodes) and `# ...` comments are
///   dropped; blank lines and comment lines are skipped; text after the return is an error;
/// - only static shapes: a string annotation must read `dtype[d0, d1, ...]` (an optional
///   `[strides]` and device suffix, as in `"f32[4, 8][8, 1]cuda:0"`, is accepted and ignored).
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

 private:
  std::string source_;
  std::size_t line_;
  std::string text_;
};

/// Size in bytes of one element of a dtype as printed in annotations ("f32" -> 4, "bf16" -> 2,
/// "b8" -> 1, ...). Throws std::invalid_argument for an unknown dtype (including "").
std::size_t dtype_itemsize(std::string_view dtype);

/// Whether dtype_itemsize() knows `dtype`.
bool is_known_dtype(std::string_view dtype) noexcept;

/// A tensor type as printed in an annotation, e.g. `"f32[8, 197, 768]"`; `"i32[]"` is 0-d.
/// A default-constructed TensorType (dtype "") stands for "unknown".
struct TensorType {
  /// dtype as printed ("f32", "bf16", "f16", "f64", "i64", "i32", "i16", "i8", "u8", "b8", ...);
  /// empty when unknown.
  std::string dtype;
  /// Static extent of each dimension; empty for a 0-d tensor.
  std::vector<std::int64_t> shape;

  /// Size in bytes of one element; throws std::invalid_argument on an unknown or empty dtype.
  std::size_t itemsize() const;
  /// Whether the type is known (dtype not empty).
  bool known() const noexcept { return !dtype.empty(); }
  /// Number of elements (1 for a 0-d tensor).
  std::int64_t numel() const noexcept;
  /// numel() * itemsize(); throws like itemsize().
  std::size_t nbytes() const;
  /// The annotation text, e.g. "f32[8, 197, 768]"; "?" when unknown.
  std::string to_string() const;

  /// Memberwise equality.
  friend bool operator==(const TensorType&, const TensorType&) = default;
};

/// Parses annotation text such as `f32[8, 197, 768]` (without the quotes); nullopt when the text
/// is not a static tensor type with a known dtype.
std::optional<TensorType> parse_tensor_type(std::string_view text);

/// What an Arg holds.
enum class ArgKind {
  node,      ///< reference to an earlier node: Arg::text is its name, Arg::index set for `x[i]`
  integer,   ///< Arg::int_value
  floating,  ///< Arg::float_value (also `inf`, `-inf`, `nan`)
  boolean,   ///< Arg::bool_value (`True` / `False`)
  none,      ///< `None`
  string,    ///< Arg::text holds the unquoted, unescaped value of '...' or "..."
  list,      ///< Arg::items; both `[a, b]` and `(a, b)` give a list
  opaque,    ///< anything else, raw text in Arg::text: `torch.float32`, `device(type='cuda')`, ...
};

/// One call argument (positional or keyword value), an output value, or a list element.
///
/// A bare identifier is a node reference when it names an earlier node or placeholder, and an
/// error otherwise. `torch.*` names and the calls `device(...)`, `slice(...)` and `torch.*(...)`
/// (`torch.float32`, `torch.contiguous_format`, `device(type='cuda', index=0)`) are opaque and
/// keep their text verbatim, except op references such as `torch.ops._C.rms_norm.default` (the
/// first argument of `higher_order.auto_functionalized`), whose text loses the `torch.ops.`
/// prefix ("_C.rms_norm.default"). Other dotted names or calls are errors, as are lists nested
/// more than 64 deep.
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
  /// list only: the elements, possibly nested lists.
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

  /// kind == ArgKind::node.
  bool is_node() const noexcept { return kind == ArgKind::node; }
  /// Python-like rendering: `x`, `x[1]`, `3`, `1e-05`, `True`, `None`, `'s'`, `[a, 2]`, raw text.
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
  /// for `x = y[i]` lines; get_attr: the attribute path after `self.` ("_tensor_constant0");
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
  /// 1-based line of the node in the source text (for a multi-line signature, its first line).
  std::size_t line = 0;

  /// The keyword argument `key`, or nullptr.
  const Arg* kwarg(std::string_view key) const noexcept;
};

/// A parsed graph: nodes in source order (placeholders first, output last).
struct Graph {
  /// Name used in error messages (the file path for read_fx_graph_file).
  std::string source_name;
  /// All nodes, in source order.
  std::vector<Node> nodes;
  /// Returned values in order: the node name for a node reference, "" for anything else
  /// (e.g. the `None` gradients of an AOT backward graph).
  std::vector<std::string> outputs;

  /// The node called `name`, or nullptr (linear search).
  const Node* find(std::string_view name) const noexcept;
};

/// Parses the text of an FX graph printout. `source_name` only appears in error messages and in
/// Graph::source_name. Throws parse_error on malformed input (unbalanced brackets or quotes, a
/// body line that is neither an assignment nor a return, a reference to an unknown node, a
/// duplicate node name, an unsupported type annotation, no `def forward`, no `return`, ...).
Graph parse_fx_graph(std::string_view text, std::string_view source_name = "<input>");

/// Reads and parses the file at `path` (which becomes Graph::source_name). Throws parse_error
/// when the file cannot be read, or as parse_fx_graph.
Graph read_fx_graph_file(const std::string& path);

}  // namespace ctshard::fx
